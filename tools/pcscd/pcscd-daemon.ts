/**
 * A private pcscd for tests and QA: its own socket, its own vpcd virtual readers on free loopback
 * ports, the NODELAY/loopback shim preloaded, run as `nobody` when we are root, stopped by pid.
 * Parallel-safe: several processes (or CI jobs) each get their own daemon; the system pcscd, if any,
 * is not touched. Facts from pcsc-lite's `pcscdaemon.c` (socket activation, the pid file) and vsmartcard's `vpcd.c`.
 *
 * Client side: libpcsclite (loaded by the `pcsclite` addon) reads PCSCLITE_CSOCK_NAME once, on the
 * first PC/SC call of the process, and keeps that path for the life of the process (observed). So
 * the socket path is fixed per process (pcscSocketPathForProcess()), startPrivatePcscd() sets
 * process.env.PCSCLITE_CSOCK_NAME to it, and this must happen before the first PC/SC call (the first binding context).
 * It must run in a process's main thread: a worker thread's process.env is a copy that libpcsclite
 * never sees (observed), so startPrivatePcscd() refuses to run in one (use Vitest's default `forks`
 * pool, not `threads`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { chmod, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isMainThread } from 'node:worker_threads';
import { ensurePcscdTools, PCSCD_PATH, type PcscdTools } from './build-tools.js';
import { fileSize, LogFollower, readFrom, tail } from './log-file.js';
import { freePortPairs, listeningSocketsOf } from './net.js';
import type { PcscdReader } from './pcscd-reader.js';
import {
  assertReachableByOthers,
  installCopy,
  pcscSocketPathForProcess,
  readerConfEntryName,
  removeStaleDirs,
  writeConfig,
  type Layout,
} from './private-dir.js';

export { ensurePcscdTools, type PcscdTools } from './build-tools.js';
export { pcscSocketPathForProcess } from './private-dir.js';

export interface PrivatePcscdOptions {
  /**
   * Number of PC/SC readers. vpcd makes two readers (slots) per reader.conf entry, on `port` and
   * `port + 1`, so an odd count is rounded up; `readers` of the result lists them all. Default 2,
   * at most 16 (pcscd's limit).
   */
  readonly readers?: number;
  /** First vpcd port; the readers then use consecutive ports. Default: free random pairs. */
  readonly basePort?: number;
  /**
   * reader.conf FRIENDLYNAME. Default 'Virtual PCD': readers 'Virtual PCD 00 00' and '… 00 01';
   * further pairs are named '<name> 2 00 00', '<name> 2 00 01', '<name> 3 00 00'…
   */
  readonly friendlyName?: string;
  /** Directory for the socket, config, log and driver copies. Default: dirname(pcscSocketPathForProcess()). */
  readonly dir?: string;
  /** pcscd -d -a: debug log including APDUs (default: -i, info). */
  readonly debug?: boolean;
  /** Receives each line pcscd logs. */
  readonly log?: (line: string) => void;
  /**
   * User pcscd runs as when this process is root. Default 'nobody'; null keeps root, which is unsafe
   * next to a system pcscd (it would overwrite and then remove /run/pcscd/pcscd.pid, pcsc-lite `pcscdaemon.c`).
   */
  readonly user?: string | null;
  /** Let pcscd outlive this process (the CLI). Default false: killed with it. */
  readonly detached?: boolean;
  /** Bound on each start, ms. Default 10 000. */
  readonly startTimeoutMs?: number;
}

export interface PrivatePcscd {
  /** The socket to put in PCSCLITE_CSOCK_NAME (already set in process.env). */
  readonly socketPath: string;
  readonly readers: readonly PcscdReader[];
  /** pid of the current (or last) pcscd. */
  readonly pid: number;
  readonly running: boolean;
  readonly logFile: string;
  /** SIGTERM by pid and wait for the exit (SIGKILL after a bound). Idempotent; removes the socket. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash: clients get 0x80100013 and the stale socket stays until restart(). */
  kill(): Promise<void>;
  /** Stop if running, then start again with the same socket path, readers and ports. */
  restart(): Promise<void>;
  /**
   * The reader taken off the machine, as far as pcscd can tell: pcscd restarts without the reader.conf
   * entry of `readerName` (vpcd's readers come in pairs, so its sibling goes too). vpcd readers are static
   * while pcscd runs — vpcd never reports a communication error, and pcscd's rescan neither removes a
   * serial reader that answers nor accepts a changed configuration — so a restart is the only way.
   */
  unplug(readerName: string): Promise<void>;
  /** Every unplugged reader back (pcscd restarts with the whole configuration). */
  replug(): Promise<void>;
  /** The readers pcscd serves now (all of `readers` but the unplugged ones). */
  readonly pluggedReaders: readonly PcscdReader[];
}

const DEFAULT_NAME = 'Virtual PCD';
const MAX_READERS = 16; // PCSCLITE_MAX_READERS_CONTEXTS
const STOP_GRACE_MS = 3_000;
const KILL_WAIT_MS = 3_000;
const SUN_PATH_MAX = 107;

interface Registered {
  readonly running: boolean;
  readonly pid: number;
  killNow(): void;
}
interface Registry {
  readonly active: Map<string, Registered>; // by socket path
  exitHook: boolean;
}
// Process-wide, not per module instance: Vitest re-evaluates modules for each test file in a worker.
const REGISTRY = Symbol.for('mdl-kiosk.private-pcscd');
const globals = globalThis as { [REGISTRY]?: Registry };
const registry: Registry = (globals[REGISTRY] ??= { active: new Map<string, Registered>(), exitHook: false });

class Daemon implements PrivatePcscd {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopping: Promise<void> | undefined;
  private follower: LogFollower | undefined;
  private lastPid = 0;
  /** reader.conf entries (one per pair of readers) moved out of the configuration by unplug(). */
  private readonly unplugged = new Set<number>();

  constructor(
    private readonly tools: PcscdTools,
    private readonly layout: Layout,
    readonly readers: readonly PcscdReader[],
    private readonly options: PrivatePcscdOptions,
    readonly ownsDir: boolean,
  ) {}

  get socketPath(): string {
    return this.layout.socketPath;
  }
  get logFile(): string {
    return this.layout.logFile;
  }
  get pid(): number {
    return this.lastPid;
  }
  get running(): boolean {
    return this.child !== undefined;
  }
  get detached(): boolean {
    return this.options.detached === true;
  }
  get dir(): string {
    return this.layout.dir;
  }
  get pluggedReaders(): readonly PcscdReader[] {
    return this.readers.filter((_, i) => !this.unplugged.has(Math.floor(i / 2)));
  }

  /** Spawns pcscd and waits until every vpcd port listens on loopback. */
  async start(): Promise<void> {
    const { launcher } = this.tools;
    const { socketPath, confDir, logFile, shim } = this.layout;
    const user = this.options.user === undefined ? 'nobody' : this.options.user;
    const logOffset = fileSize(logFile);
    const log = await open(logFile, 'a', 0o644);
    await log.write(`--- mdl-kiosk private pcscd, ${new Date().toISOString()}\n`);
    const args = [
      socketPath,
      ...(user !== null && process.getuid?.() === 0 ? ['--user', user] : []),
      ...(this.detached ? [] : ['--die-with-parent']),
      '--',
      PCSCD_PATH,
      '--foreground',
      ...(this.options.debug === true ? ['--debug', '--apdu'] : ['--info']),
      '--config',
      confDir,
    ];
    const preload = [shim, process.env.LD_PRELOAD].filter((p) => p !== undefined && p !== '').join(':');
    let child: ChildProcess;
    try {
      // Own process group (detached) so a Ctrl-C on the test runner's group does not race our stop().
      child = spawn(launcher, args, {
        detached: true,
        stdio: ['ignore', log.fd, log.fd],
        env: { ...process.env, LD_PRELOAD: preload },
      });
    } finally {
      await log.close();
    }
    const pid = child.pid;
    if (pid === undefined) {
      await new Promise((resolve) => child.once('error', resolve));
      throw new Error(`private pcscd: cannot spawn ${launcher}`);
    }
    this.child = child;
    this.lastPid = pid;
    this.exited = new Promise((resolve) => {
      child.once('exit', () => {
        if (this.child === child) this.child = undefined;
        resolve();
      });
    });
    child.unref(); // never hold the event loop: the exit hook (or --die-with-parent) ends it
    if (this.options.log !== undefined) {
      this.follower?.close();
      this.follower = new LogFollower(logFile, this.options.log, logOffset);
    }
    try {
      await this.waitReady(pid, logOffset);
    } catch (error) {
      await this.signalAndWait('SIGKILL', KILL_WAIT_MS).catch(() => undefined);
      throw error;
    }
  }

  private async waitReady(pid: number, logOffset: number): Promise<void> {
    const deadline = Date.now() + (this.options.startTimeoutMs ?? 10_000);
    const ports = this.pluggedReaders.map((r) => r.port);
    const failure = (why: string): Error =>
      new Error(`private pcscd (pid ${pid}): ${why}\n--- ${this.logFile}:\n${tail(this.logFile, logOffset)}`);
    for (;;) {
      if (this.child?.pid !== pid) throw failure('exited during start');
      // Read the log before the sockets: pcscd logs "daemon ready" after its readers listen.
      const ready = readFrom(this.logFile, logOffset).includes('daemon ready');
      const sockets = await listeningSocketsOf(pid);
      const missing = ports.filter((p) => !sockets.some((s) => s.port === p));
      const exposed = sockets.filter((s) => s.address !== '127.0.0.1');
      if (exposed.length > 0) {
        throw failure(`listens on ${exposed.map((s) => `${s.address}:${s.port}`).join(', ')}: shim not preloaded?`);
      }
      if (missing.length === 0 && existsSync(this.socketPath)) return;
      if (ready) throw new PortConflict(failure(`vpcd ports not listening: ${missing.join(', ')} (in use?)`).message);
      if (Date.now() > deadline) throw failure(`not ready after ${this.options.startTimeoutMs ?? 10_000} ms`);
      await sleep(5);
    }
  }

  private async signalAndWait(signal: NodeJS.Signals, boundMs: number): Promise<boolean> {
    if (this.child === undefined) return true;
    try {
      process.kill(this.lastPid, signal);
    } catch {
      // already gone; the exit event follows
    }
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(resolve, boundMs, false);
    });
    try {
      return await Promise.race([this.exited.then(() => true), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const ended = (await this.signalAndWait('SIGTERM', STOP_GRACE_MS)) || (await this.signalAndWait('SIGKILL', KILL_WAIT_MS));
      if (!ended) throw new Error(`private pcscd: pid ${this.lastPid} survived SIGKILL`);
      this.follower?.close();
      this.follower = undefined;
      // Socket activation: pcscd leaves the socket file; remove it so the path reads as "no service".
      await rm(this.socketPath, { force: true });
    })().finally(() => {
      this.stopping = undefined;
    });
    return this.stopping;
  }

  async kill(): Promise<void> {
    if (!(await this.signalAndWait('SIGKILL', KILL_WAIT_MS))) {
      throw new Error(`private pcscd: pid ${this.lastPid} survived SIGKILL`);
    }
    this.follower?.close();
    this.follower = undefined;
  }

  async restart(): Promise<void> {
    if (this.running) await this.stop();
    claim(this);
    await this.start();
  }

  async unplug(readerName: string): Promise<void> {
    const index = this.readers.findIndex((r) => r.name === readerName);
    if (index < 0) throw new Error(`private pcscd: no reader named ${JSON.stringify(readerName)}`);
    const entry = Math.floor(index / 2);
    if (this.unplugged.has(entry)) return;
    if (this.running) await this.stop();
    await rename(this.entryFile(entry), this.parkedFile(entry));
    this.unplugged.add(entry);
    claim(this);
    await this.start();
  }

  async replug(): Promise<void> {
    if (this.unplugged.size === 0) return;
    if (this.running) await this.stop();
    for (const entry of [...this.unplugged]) {
      await rename(this.parkedFile(entry), this.entryFile(entry));
      this.unplugged.delete(entry);
    }
    claim(this);
    await this.start();
  }

  /** The reader.conf file of entry `entry` (writeConfig's naming). */
  private entryFile(entry: number): string {
    return path.join(this.layout.confDir, readerConfEntryName(entry));
  }

  /** Where an unplugged entry waits, outside the directory pcscd reads. */
  private parkedFile(entry: number): string {
    return path.join(this.layout.dir, `unplugged-${readerConfEntryName(entry)}`);
  }

  /** process 'exit' hook: synchronous, best effort. */
  killNow(): void {
    if (this.child !== undefined && !this.detached) {
      try {
        process.kill(this.lastPid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    if (this.ownsDir && !this.detached) rmSync(this.layout.dir, { recursive: true, force: true });
  }
}

class PortConflict extends Error {}

function assertUnclaimed(socketPath: string, self?: Daemon): void {
  const other = registry.active.get(socketPath);
  if (other !== undefined && other !== self && other.running) {
    throw new Error(
      `private pcscd: this process (maybe an earlier test file) already runs one on ${socketPath} ` +
        `(pid ${other.pid}); stop() it first, e.g. in afterAll`,
    );
  }
}

function claim(daemon: Daemon): void {
  assertUnclaimed(daemon.socketPath, daemon);
  registry.active.set(daemon.socketPath, daemon);
  if (registry.exitHook) return;
  registry.exitHook = true;
  process.on('exit', () => {
    for (const daemon of registry.active.values()) daemon.killNow();
  });
}

function validate(options: PrivatePcscdOptions): { pairs: number; name: string } {
  const readers = options.readers ?? 2;
  if (!Number.isInteger(readers) || readers < 1 || readers > MAX_READERS) {
    throw new RangeError(`private pcscd: readers must be 1..${MAX_READERS}, got ${readers}`);
  }
  const name = options.friendlyName ?? DEFAULT_NAME;
  if (!/^[\w .()-]{1,64}$/.test(name)) {
    throw new RangeError(`private pcscd: unusable friendlyName ${JSON.stringify(name)}`);
  }
  const pairs = Math.ceil(readers / 2);
  const base = options.basePort;
  if (base !== undefined && (!Number.isInteger(base) || base < 1024 || base + pairs * 2 - 1 > 65535)) {
    throw new RangeError(`private pcscd: basePort ${base} out of range`);
  }
  return { pairs, name };
}

/**
 * Starts a private pcscd with vpcd readers and sets process.env.PCSCLITE_CSOCK_NAME to its socket.
 * Stop it with stop() (e.g. in afterAll); a process exit kills it too unless `detached`.
 */
export async function startPrivatePcscd(options: PrivatePcscdOptions = {}): Promise<PrivatePcscd> {
  if (!isMainThread) {
    throw new Error('private pcscd: call from a main thread; libpcsclite never sees a worker thread’s process.env');
  }
  const { pairs, name } = validate(options);
  const tools = await ensurePcscdTools();
  const dir = path.resolve(options.dir ?? path.dirname(pcscSocketPathForProcess()));
  const socketPath = path.join(dir, 'pcscd.comm');
  if (Buffer.byteLength(`${socketPath}.${process.pid}.tmp`) > SUN_PATH_MAX) {
    throw new Error(`private pcscd: socket path too long for a unix socket: ${socketPath}`);
  }
  const layout: Layout = {
    dir,
    socketPath,
    confDir: path.join(dir, 'reader.conf.d'),
    logFile: path.join(dir, 'pcscd.log'),
    shim: path.join(dir, 'libnodelay-loopback.so'),
  };
  const root = process.getuid?.() === 0;
  const user = options.user === undefined ? 'nobody' : options.user;
  if (!root && !existsSync('/run/pcscd')) {
    throw new Error('private pcscd: /run/pcscd is missing and pcscd exits without it; run: sudo mkdir -p /run/pcscd');
  }
  assertUnclaimed(socketPath);
  await removeStaleDirs().catch(() => undefined);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  if (root && user !== null) await assertReachableByOthers(dir, user);
  // A copy in our dir: the shim must be readable by the unprivileged pcscd, wherever the cache is.
  await installCopy(tools.shim, layout.shim);

  const attempts = options.basePort === undefined ? 3 : 1;
  for (let attempt = 1; ; attempt++) {
    const ports =
      options.basePort === undefined
        ? await freePortPairs(pairs)
        : Array.from({ length: pairs }, (_, i) => (options.basePort ?? 0) + 2 * i);
    const readers = await writeConfig(layout, name, ports);
    const daemon = new Daemon(tools, layout, readers, options, options.dir === undefined);
    claim(daemon);
    process.env.PCSCLITE_CSOCK_NAME = socketPath;
    try {
      await daemon.start();
      return daemon;
    } catch (error) {
      if (!(error instanceof PortConflict) || attempt >= attempts) throw error;
    }
  }
}
