/**
 * Shared scaffolding of the radio-link tests (test/unit/sim/radio-link*.test.ts): "process A" in a
 * child process (test/support/radio-host-child.ts), the describe block's teardown of it and of the kiosk's
 * e2e stack, and a hand on a bindings object's socket.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach } from 'vitest';
import type { E2eStack } from './e2e-stack.js';
import { until } from './radio-phone.js';

/** What the child prints once its RadioLinkServer listens. */
export interface RadioHostReady {
  readonly port: number;
  readonly qr: string;
  readonly iaca: string;
}

/** radio-host-child.ts with a virtual `phone` ('android': GATT server, for noble; 'iphone': GATT client, for bleno). */
export class RadioHostChild {
  /** The child's stdout, one JSON object a line. */
  readonly lines: Record<string, unknown>[] = [];
  private readonly proc: ChildProcessWithoutNullStreams;
  private stderr = '';

  constructor(phone: 'android' | 'iphone') {
    this.proc = spawn(process.execPath, ['--import', 'tsx', path.resolve('test/support/radio-host-child.ts'), phone], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.proc.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    createInterface({ input: this.proc.stdout }).on('line', (line) => this.lines.push(JSON.parse(line) as Record<string, unknown>));
  }

  /** Waits for the child to listen (its stderr in the error otherwise). */
  async ready(): Promise<RadioHostReady> {
    await until(() => this.lines.some((l) => l.ready === true) || this.proc.exitCode !== null, 30_000, 'the child to listen').catch(
      (e: unknown) => {
        throw new Error(`${String(e)}; child stderr: ${this.stderr}`);
      },
    );
    return this.lines.find((l) => l.ready === true) as unknown as RadioHostReady;
  }

  /** SIGTERM, if still running, and wait for the exit. */
  async stop(): Promise<void> {
    const proc = this.proc;
    if (proc.pid !== undefined && proc.exitCode === null && proc.signalCode === null) {
      const exited = once(proc, 'exit');
      process.kill(proc.pid, 'SIGTERM');
      await exited;
    }
  }
}

/**
 * For a describe block whose tests run process A in a child: registers the afterEach that stops the
 * test's e2e stack, then the child.
 */
export function acrossProcesses(): {
  /** Spawns the child and waits for it to listen. */
  start(phone: 'android' | 'iphone'): Promise<{ host: RadioHostChild; ready: RadioHostReady }>;
  /** The kiosk's stack, stopped after the test (before the child). */
  track(e2e: E2eStack): E2eStack;
} {
  let child: RadioHostChild | undefined;
  let stack: E2eStack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
    await child?.stop();
    child = undefined;
  });
  return {
    async start(phone) {
      const host = new RadioHostChild(phone);
      child = host;
      return { host, ready: await host.ready() };
    },
    track(e2e) {
      stack = e2e;
      return e2e;
    },
  };
}

/** Destroys the socket under remote bindings, as a vanished process would (no bye). */
export function destroyLinkSocket(bindings: object): void {
  (bindings as { link: { socket: Socket } }).link.socket.destroy();
}
