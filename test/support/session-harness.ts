/**
 * Helpers for the session-lifecycle conformance tests:
 *
 * - `startClockedHarness`: the kiosk of `harness.ts` with a controllable wall clock shared by the session
 *   client (session `createdAt`) and the kiosk (remaining lifetime). Advancing it ages the sessions without waiting, while real timers and sockets keep running.
 * - `TcpGate`: a TCP forwarder in front of the fake backend that can be closed (connection refused, live
 *   connections cut) and reopened on the same port, to take the backend "offline" and back.
 * - `viewAfter`: waits for a view published after a given point.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { KioskView } from '../../src/common/kiosk-view.js';
import type { FakeBackend } from './fake-backend.js';
import { startHarness, type Harness } from './harness.js';

// ---------------------------------------------------------------- views

/** Resolves with the first view published at or after index `from` of `h.views` that matches. */
export function viewAfter(
  h: Pick<Harness, 'views' | 'view'>,
  from: number,
  predicate: (v: KioskView) => boolean,
  timeoutMs?: number,
): Promise<KioskView> {
  return h.view((v) => {
    const index = h.views.indexOf(v);
    return index >= from && predicate(v);
  }, timeoutMs);
}

// ---------------------------------------------------------------- clocked harness

export class TestClock {
  private offset = 0;
  readonly now = (): number => Date.now() + this.offset;
  /** Moves the wall clock forward (timers are not affected). */
  advance(ms: number): void {
    this.offset += ms;
  }
}

export interface ClockedHarness extends Harness {
  readonly clock: TestClock;
}

export async function startClockedHarness(
  options: { config?: Record<string, unknown>; backend?: FakeBackend } = {},
): Promise<ClockedHarness> {
  const clock = new TestClock();
  const harness = await startHarness({ ...options, now: clock.now });
  return { ...harness, clock };
}

// ---------------------------------------------------------------- TCP gate

/** A TCP forwarder on 127.0.0.1 that can refuse connections and cut live ones, then accept again on the same port. */
export class TcpGate {
  private server: Server | undefined;
  private readonly pairs = new Set<Socket>();

  private constructor(
    readonly port: number,
    private readonly targetPort: number,
  ) {}

  /** Opens a gate on a free port forwarding to `targetPort`. */
  static async open(targetPort: number): Promise<TcpGate> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const gate = new TcpGate(port, targetPort);
    await gate.reopen();
    return gate;
  }

  get isOpen(): boolean {
    return this.server !== undefined;
  }

  /** Base URL of the fake backend behind the gate. */
  baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  async reopen(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      this.pairs.add(client);
      this.pairs.add(upstream);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.pairs.delete(client);
        this.pairs.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  /** Stops listening (new connections are refused) and cuts every live connection. */
  async shut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.pairs) socket.destroy();
    this.pairs.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

// ---------------------------------------------------------------- polling

/**
 * Waits until `condition` holds, checking every few milliseconds; rejects after `timeoutMs` with `what`.
 * For state that has no event of its own (log lines, request records).
 */
export async function until(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
