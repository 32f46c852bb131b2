/** Runs one of the project's TypeScript CLIs as a process (through tsx) and collects what it printed. */
import { spawn, type ChildProcess } from 'node:child_process';

export interface CliRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliRunOptions {
  /** Added to this process's environment. */
  readonly env?: Record<string, string | undefined>;
  /** Written to stdin, which is then closed; stdin stays open when absent. */
  readonly stdin?: string;
  /** A process still running after this long is killed (the test then fails on its exit). */
  readonly killAfterMs?: number;
  /** Sees the child as soon as it is spawned (e.g. to kill it in an afterEach). */
  readonly onSpawn?: (child: ChildProcess) => void;
}

export function runCli(script: string, args: readonly string[], options: CliRunOptions = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    options.onSpawn?.(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    if (options.stdin !== undefined) child.stdin.end(options.stdin);
    const guard = setTimeout(() => child.kill('SIGKILL'), options.killAfterMs ?? 60_000);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
