/**
 * An emulated Bluetooth LE radio for tests and QA: BlueZ's btvirt with the AF_ALG shim preloaded, and one
 * socat per controller turning it into a tty that noble's and bleno's UART HCI driver opens
 * (`bindParams: { uart: { port } }`, or BLUETOOTH_HCI_SOCKET_UART_PORT).
 *
 * Facts it rests on (BlueZ 5.66, emulator/): `btvirt -s -l0` listens on fixed unix sockets
 * (/tmp/bt-server-le, …); every connection to /tmp/bt-server-le is a new LE controller speaking H4, all in
 * one process and so on one air; controllers are numbered in connection order and their address is
 * 00:AA:01:<index>:00:42 (btdev.c get_bdaddr). The paths are fixed, so there is one btvirt per machine:
 * a second start is refused with the pid of the one running.
 *
 * Everything is stopped by pid (socat first, then btvirt). With `detached: false` (tests) btvirt ends with
 * this process (the shim's PR_SET_PDEATHSIG), and each socat ends when btvirt closes its socket.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, openSync, closeSync } from 'node:fs';
import { mkdir, readlink, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureBtvirtTools } from './build.js';

/** btvirt's fixed socket paths (emulator/main.c). */
export const BT_SERVER_LE = '/tmp/bt-server-le';
const BT_SERVER_PATHS = ['le', 'bredrle', 'bredr', 'amp', 'mon'].map((kind) => `/tmp/bt-server-${kind}`);

export interface EmulatedController {
  /** The name given at start (the tty's file name). */
  readonly name: string;
  /** The tty (a symlink to the pty) noble or bleno opens. */
  readonly tty: string;
  /** The controller's public address, as the peer sees it. */
  readonly address: string;
  readonly socatPid: number;
}

export interface EmulatedRadioOptions {
  /** One controller per name, connected in this order (so with these addresses). */
  readonly controllers: readonly string[];
  /** Where the tty links go (default /tmp/mdl-kiosk-btvirt). */
  readonly dir?: string;
  /** Let btvirt and socat outlive this process (the CLI's `start`). Default false. */
  readonly detached?: boolean;
  /** A file for btvirt's and socat's output (default: dropped, or kept in memory for errors when attached). */
  readonly logFile?: string;
  /** Bound on start, ms (default 10 000). */
  readonly startTimeoutMs?: number;
}

export interface EmulatedRadioState {
  readonly btvirtPid: number;
  readonly dir: string;
  readonly controllers: readonly EmulatedController[];
}

export interface EmulatedRadio extends EmulatedRadioState {
  /** Stops socat and btvirt by pid and removes the ttys and btvirt's sockets. Idempotent. */
  stop(): Promise<void>;
  /**
   * Switches a controller off as the hci bindings see it: its adapter vanishes. The socat of its tty is
   * stopped, so btvirt drops the controller and the library's UART driver reads the tty closing: noble and
   * bleno report `poweredOff` at once (bluetooth-hci-socket lib/uart.js, the serial port's `close` →
   * `state` false). Resolves once the tty is gone.
   */
  switchOff(name: string): Promise<void>;
  /**
   * Switches it on again: a new controller (btvirt's next address) behind the same tty path. A library
   * instance that had the old tty open does NOT come back by itself: the UART driver's reconnection
   * (lib/uart.js `_handleReconnection`) looks for the path in `SerialPort.list()`, which lists udev's
   * serial devices only (ttyS, ttyUSB, ttyACM, …; @serialport/bindings-cpp linux-list.js), never a pty — and
   * even on a real USB-UART dongle it gives up after 10 tries a second apart. A new instance (a devices
   * rebuild for noble, a new process for bleno) opens it. Resolves with the controller once its tty exists.
   */
  switchOn(name: string): Promise<EmulatedController>;
}

export function defaultRadioDir(): string {
  return path.join(os.tmpdir(), 'mdl-kiosk-btvirt');
}

/** The address of the controller made by the `index`-th connection (0-based). */
export function controllerAddress(index: number): string {
  return `00:AA:01:${index.toString(16).padStart(2, '0').toUpperCase()}:00:42`;
}

/** Pids of running btvirt processes (zombies excluded). */
export function runningBtvirtPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (name === 'btvirt' && state !== 'Z') pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function waitFor(test: () => boolean | Promise<boolean>, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`emulated radio: ${what()}`);
    await sleep(5);
  }
}

/** SIGTERM, then SIGKILL after a bound; resolves once the pid is gone. Never throws for a pid already gone. */
export async function stopPid(pid: number, boundMs = 2_000): Promise<void> {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    if (!alive(pid)) return;
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    const deadline = Date.now() + boundMs;
    while (alive(pid) && Date.now() < deadline) await sleep(10);
  }
  if (alive(pid)) throw new Error(`emulated radio: pid ${pid} survived SIGKILL`);
}

/** Stops what a state names (socat first, so no controller outlives its tty), then removes files. */
export async function stopEmulatedRadio(state: EmulatedRadioState): Promise<void> {
  for (const controller of state.controllers) await stopPid(controller.socatPid);
  await stopPid(state.btvirtPid);
  for (const controller of state.controllers) await rm(controller.tty, { force: true });
  // btvirt unlinks its sockets before it binds, never after: ours to remove once it is gone.
  if (runningBtvirtPids().length === 0) for (const socket of BT_SERVER_PATHS) await rm(socket, { force: true });
}

/**
 * Starts btvirt and one socat per controller; resolves when every tty exists and its controller is
 * connected. Rejects (with everything it started stopped again) when a piece is missing, the shim fails
 * its vectors, another btvirt runs, or a controller's connection is closed at once.
 */
export async function startEmulatedRadio(options: EmulatedRadioOptions): Promise<EmulatedRadio> {
  if (options.controllers.length === 0) throw new Error('emulated radio: no controller asked for');
  if (new Set(options.controllers).size !== options.controllers.length || options.controllers.some((n) => !/^[\w.-]{1,64}$/.test(n))) {
    throw new Error('emulated radio: controller names must be distinct file names (letters, digits, . _ -)');
  }
  const tools = await ensureBtvirtTools();
  const others = runningBtvirtPids();
  if (others.length > 0) {
    throw new Error(
      `emulated radio: btvirt is already running (pid ${others.join(', ')}); its socket paths are fixed, so only one runs per machine. ` +
        'Stop it first (npm run btvirt -- stop, or kill that pid if it is yours)',
    );
  }
  const dir = options.dir ?? defaultRadioDir();
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const detached = options.detached ?? false;
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;
  const output: string[] = [];
  const logFd = options.logFile === undefined ? undefined : openSync(options.logFile, 'a');
  const stdio = (): ['ignore', 'ignore' | 'pipe' | number, 'ignore' | 'pipe' | number] =>
    logFd !== undefined ? ['ignore', logFd, logFd] : detached ? ['ignore', 'ignore', 'ignore'] : ['ignore', 'pipe', 'pipe'];
  const keep = (child: ChildProcess, label: string): void => {
    const take = (chunk: Buffer): void => {
      if (output.length < 200) output.push(`${label}: ${chunk.toString('utf8').trimEnd()}`);
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
  };
  const started: { btvirtPid: number; controllers: EmulatedController[] } = { btvirtPid: 0, controllers: [] };
  const what = (text: string) => () => `${text}${output.length > 0 ? ` (${output.slice(-5).join(' | ')})` : ''}`;
  /** One socat: a new controller (the `index`-th connection) behind the tty `name`. */
  const connect = async (name: string, index: number, record: (controller: EmulatedController) => void): Promise<EmulatedController> => {
    const tty = path.join(dir, name);
    await rm(tty, { force: true });
    // UNIX-CONNECT first: the tty link appears only once btvirt has taken the connection, so the
    // controllers are numbered (and addressed) in this order.
    const socat = spawn(tools.socat, [`UNIX-CONNECT:${BT_SERVER_LE}`, `PTY,link=${tty},raw,echo=0`], { detached, stdio: stdio() });
    keep(socat, `socat ${name}`);
    if (socat.pid === undefined) throw new Error(`emulated radio: socat for ${name} could not be started`);
    const socatPid = socat.pid;
    if (detached) socat.unref();
    const controller = { name, tty, address: controllerAddress(index), socatPid };
    record(controller);
    await waitFor(
      async () =>
        (await readlink(tty).then(
          () => true,
          () => false,
        )) || !alive(socatPid),
      startTimeoutMs,
      what(`the tty ${tty} did not appear within ${startTimeoutMs} ms`),
    );
    if (!alive(socatPid)) throw new Error(what(`socat for ${name} exited at start`)());
    return controller;
  };
  try {
    for (const socket of BT_SERVER_PATHS) await rm(socket, { force: true });
    const btvirt = spawn(tools.btvirt, ['-s', '-l0'], {
      detached,
      stdio: stdio(),
      env: { ...process.env, LD_PRELOAD: tools.shim, MDL_BTVIRT_DIE_WITH_PARENT: detached ? '0' : '1' },
    });
    keep(btvirt, 'btvirt');
    if (btvirt.pid === undefined) throw new Error('emulated radio: btvirt could not be started');
    started.btvirtPid = btvirt.pid;
    if (detached) btvirt.unref();
    await waitFor(
      () => existsSync(BT_SERVER_LE) || !alive(started.btvirtPid),
      startTimeoutMs,
      what(`btvirt did not open ${BT_SERVER_LE} within ${startTimeoutMs} ms`),
    );
    if (!alive(started.btvirtPid)) throw new Error(what('btvirt exited at start')());
    for (const [index, name] of options.controllers.entries()) {
      await connect(name, index, (controller) => started.controllers.push(controller));
    }
    // An LE controller whose crypto could not be set up is closed by btvirt at once: socat then exits.
    await sleep(30);
    const closed = started.controllers.filter((c) => !alive(c.socatPid));
    if (closed.length > 0 || !alive(started.btvirtPid)) {
      throw new Error(
        what(
          `btvirt closed the controller connection of ${closed.map((c) => c.name).join(', ') || 'every controller'} (is the AF_ALG shim loaded?)`,
        )(),
      );
    }
  } catch (error) {
    await stopEmulatedRadio({ btvirtPid: started.btvirtPid, dir, controllers: started.controllers }).catch(() => undefined);
    throw error;
  } finally {
    if (logFd !== undefined) closeSync(logFd);
  }
  // The controllers now (switchOn replaces one); stop() ends whichever socat runs then.
  const controllers = started.controllers;
  let connections = controllers.length;
  const named = (name: string): number => {
    const at = controllers.findIndex((c) => c.name === name);
    if (at < 0) throw new Error(`emulated radio: no controller named ${name}`);
    return at;
  };
  const state: EmulatedRadioState = { btvirtPid: started.btvirtPid, dir, controllers };
  let stopping: Promise<void> | undefined;
  return {
    ...state,
    stop: () => (stopping ??= stopEmulatedRadio(state)),
    async switchOff(name) {
      const controller = controllers[named(name)];
      if (!controller) return;
      await stopPid(controller.socatPid);
      await rm(controller.tty, { force: true });
    },
    async switchOn(name) {
      const at = named(name);
      const old = controllers[at];
      if (old && alive(old.socatPid)) throw new Error(`emulated radio: ${name} is on`);
      if (stopping) throw new Error('emulated radio: stopped');
      return connect(name, connections++, (controller) => controllers.splice(at, 1, controller));
    },
  };
}
