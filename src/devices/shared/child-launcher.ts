/**
 * The launcher port: how the kiosk starts a process of its own (the radio process, the built-in voice).
 * The supervisors (ble/radio-process/radio-process.ts, speech/voice-process.ts) know only this; the edges
 * fill it — `forkLauncher` (Node's child_process.fork: the relay CLI, the browser host) here, Electron's
 * `utilityProcess.fork` in src/main. Messages are structured-cloned both ways.
 */
import { fork } from 'node:child_process';

export interface ChildExit {
  readonly code: number | null;
  readonly signal: string | null;
}

/** One started child. Listeners are the supervisor's only; it sets them once, right after launch. */
export interface LaunchedChild {
  readonly pid: number | undefined;
  postMessage(message: unknown): void;
  onMessage(listener: (message: unknown) => void): void;
  /** Called once, when the process has gone (exit or failure to start). */
  onExit(listener: (exit: ChildExit) => void): void;
  /** What the child writes to its stdout / stderr (piped, never inherited). */
  readonly stdout: NodeJS.ReadableStream | null;
  readonly stderr: NodeJS.ReadableStream | null;
  /** SIGKILL (or the platform's equivalent); idempotent. */
  kill(): void;
}

export type ChildLauncher = () => LaunchedChild;

/** A child's exit as its launchers report it: to every listener, once, however often the process says so. */
export class ExitReport {
  private exit: ChildExit | undefined;
  private readonly listeners: ((exit: ChildExit) => void)[] = [];

  get exited(): boolean {
    return this.exit !== undefined;
  }

  report(exit: ChildExit): void {
    if (this.exit) return;
    this.exit = exit;
    for (const listener of this.listeners) listener(exit);
  }

  onExit(listener: (exit: ChildExit) => void): void {
    this.listeners.push(listener);
  }
}

export interface ForkLauncherOptions {
  /** The child's entry module (`.ts` runs under tsx, `.js` as it is). */
  readonly entry: string;
  /** Extra environment for the child (e.g. BLUETOOTH_HCI_SOCKET_UART_PORT for btvirt). */
  readonly env?: Readonly<Record<string, string>>;
  /** Extra Node flags for the child (the benches pass their own `--cpu-prof…` on, so the child is profiled too). */
  readonly execArgv?: readonly string[];
}

/** `child_process.fork` with an IPC channel that structured-clones and stdout/stderr piped to the parent. */
export function forkLauncher(options: ForkLauncherOptions): ChildLauncher {
  const { entry } = options;
  const execArgv = [...(entry.endsWith('.ts') ? ['--import', 'tsx'] : []), ...(options.execArgv ?? [])];
  return () => {
    const child = fork(entry, [], {
      serialization: 'advanced',
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      execArgv,
      env: { ...process.env, ...options.env },
    });
    const exit = new ExitReport();
    child.once('exit', (code, signal) => exit.report({ code, signal }));
    // A spawn failure ('error' without 'exit'), or a send after the channel closed: the process is gone.
    child.on('error', () => {
      if (child.exitCode === null && child.signalCode === null && child.pid === undefined) exit.report({ code: null, signal: null });
    });
    return {
      pid: child.pid,
      postMessage(message) {
        if (child.connected) child.send(message as object, () => undefined); // a closed channel shows as the exit
      },
      onMessage(listener) {
        child.on('message', listener);
      },
      onExit(listener) {
        exit.onExit(listener);
      },
      stdout: child.stdout,
      stderr: child.stderr,
      kill() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      },
    };
  };
}
