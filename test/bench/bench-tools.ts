/**
 * Helpers for the relay benchmark: sample statistics, a small awaitable queue, and `BackendPeer`, the
 * benchmark's lean view of one fake-backend WebSocket connection (frames timestamped on arrival, optional
 * synchronous hooks so hot loops run without a promise or a timer per message).
 */
import { performance } from 'node:perf_hooks';
import type WebSocket from 'ws';
import type { FakeConnection } from '../support/fake-backend.js';

// ---------------------------------------------------------------- command line

/** `--name=N` on the command line (positive integer), else the default. */
export function intArg(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (!arg) return fallback;
  const value = Number(arg.slice(name.length + 3));
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer`);
  return value;
}

// ---------------------------------------------------------------- statistics

export interface Summary {
  readonly n: number;
  readonly min: number;
  readonly median: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((s, v) => s + v, 0);
  return {
    n: sorted.length,
    min: sorted[0] ?? Number.NaN,
    median: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
    mean: sorted.length > 0 ? sum / sorted.length : Number.NaN,
  };
}

export function ms(value: number, digits = 3): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'NaN';
}

export function describeSummary(s: Summary, digits = 3): string {
  return `n=${s.n} median=${ms(s.median, digits)} p90=${ms(s.p90, digits)} p99=${ms(s.p99, digits)} min=${ms(s.min, digits)} max=${ms(s.max, digits)} mean=${ms(s.mean, digits)}`;
}

// ---------------------------------------------------------------- async plumbing

/** First-in first-out queue; `take` waits (bounded) for the next item. */
export class Mailbox<T> {
  private readonly items: T[] = [];
  private waiters: ((item: T) => void)[] = [];

  put(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(item);
    else this.items.push(item);
  }

  get size(): number {
    return this.items.length;
  }

  take(timeoutMs: number, what: string): Promise<T> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift() as T);
    return new Promise<T>((resolve, reject) => {
      const waiter = (item: T): void => {
        clearTimeout(timer);
        resolve(item);
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`bench: no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }
}

export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export function delay(msValue: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, msValue));
}

// ---------------------------------------------------------------- JSON access without `any`

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function rawText(data: WebSocket.RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

// ---------------------------------------------------------------- backend side of one connection

/** One frame from the client, with the time it reached the backend's `message` listener. */
export interface Inbound {
  /** `performance.now()` on entry to the listener, before parsing. */
  readonly at: number;
  /** `op` of the message, or '' when absent or not a string. */
  readonly op: string;
  readonly message: JsonObject;
}

/** Sees each frame before it is queued; returns true when it consumed it. Runs synchronously. */
export type InboundHook = (inbound: Inbound) => boolean;

/**
 * The backend side of one fake-backend connection, as the benchmark drives it. The fake's own listener
 * parses every frame and queues it for its `receive()`/`expect()` (each with a 5 s timer); the benchmark
 * replaces it with this one so that every frame is timestamped on arrival and hot loops can answer from a
 * synchronous hook. Kiosk and floor connections go through exactly the same code.
 */
export class BackendPeer {
  hook: InboundHook | undefined;
  private readonly inbox: Inbound[] = [];
  private waiter: ((inbound: Inbound) => void) | undefined;

  constructor(readonly connection: FakeConnection) {
    const socket = connection.socket;
    socket.removeAllListeners('message');
    socket.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
      const at = performance.now();
      let parsed: unknown;
      try {
        parsed = isBinary ? { op: '<binary>' } : JSON.parse(rawText(data));
      } catch {
        parsed = { op: '<invalid json>' };
      }
      const message = isJsonObject(parsed) ? parsed : { op: '<not an object>' };
      const inbound: Inbound = { at, op: typeof message.op === 'string' ? message.op : '', message };
      if (this.hook?.(inbound)) return;
      const waiter = this.waiter;
      if (waiter) {
        this.waiter = undefined;
        waiter(inbound);
      } else {
        this.inbox.push(inbound);
      }
    });
  }

  get sessionId(): string {
    return this.connection.session.id;
  }

  get isClosed(): boolean {
    return this.connection.isClosed;
  }

  next(timeoutMs = 5_000): Promise<Inbound> {
    const queued = this.inbox.shift();
    if (queued) return Promise.resolve(queued);
    if (this.waiter) return Promise.reject(new Error('bench: BackendPeer.next already waiting'));
    return new Promise<Inbound>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        reject(new Error(`bench: no message from the client within ${timeoutMs} ms (session ${this.sessionId})`));
      }, timeoutMs);
      this.waiter = (inbound) => {
        clearTimeout(timer);
        resolve(inbound);
      };
    });
  }

  async expect(op: string, timeoutMs?: number): Promise<Inbound> {
    const inbound = await this.next(timeoutMs);
    if (inbound.op !== op) {
      throw new Error(`bench: expected ${op}, got ${JSON.stringify(inbound.message).slice(0, 200)}`);
    }
    return inbound;
  }

  /** Sends a prepared text frame; returns `performance.now()` taken just before handing it to the socket. */
  sendText(text: string): number {
    const at = performance.now();
    this.connection.socket.send(text);
    return at;
  }

  send(message: unknown): number {
    return this.sendText(JSON.stringify(message));
  }
}

/**
 * The end of a benchmark run: total time, failures or the correctness line, the RESULT line last, exit
 * code 1 only on a correctness failure, and a guard that ends the process should a handle stay open.
 */
export function finishBench(name: string, startedMs: number, failures: readonly string[], correctness: string, result: string): void {
  console.log(`\ntotal ${ms((performance.now() - startedMs) / 1000, 1)} s`);
  if (failures.length > 0) {
    for (const failure of failures) console.log(`FAILURE: ${failure}`);
  } else {
    console.log(`correctness: ${correctness}`);
  }
  console.log(result);
  process.exitCode = failures.length > 0 ? 1 : 0;
  setTimeout(() => {
    console.error(`${name}: handles still open 5 s after the end; exiting`);
    process.exit(process.exitCode ?? 1);
  }, 5_000).unref();
}

/**
 * `count` request/response round trips on one connection, driven from a synchronous hook: on each response
 * the backend takes the arrival time, checks the response (`check` throws on a wrong one) and sends the
 * next request at once. The benchmarks' kiosk and floor sides all run this same code.
 */
export function roundTrips(
  peer: BackendPeer,
  count: number,
  request: (i: number) => string,
  check: (inbound: Inbound, i: number) => void,
  samples: number[] | undefined,
  stallMs = 20_000,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let done = 0;
    let sentAt = 0;
    const stop = (error?: Error): void => {
      clearTimeout(timer);
      peer.hook = undefined;
      if (error) reject(error);
      else resolve();
    };
    const timer = setTimeout(() => stop(new Error(`bench: round trips stalled after ${done} of ${count}`)), stallMs);
    peer.hook = (inbound) => {
      const rtt = inbound.at - sentAt;
      try {
        check(inbound, done);
      } catch (e) {
        stop(e instanceof Error ? e : new Error(String(e)));
        return true;
      }
      samples?.push(rtt);
      done++;
      if (done === count) stop();
      else sentAt = peer.sendText(request(done));
      return true;
    };
    sentAt = peer.sendText(request(0));
  });
}

/** A bench child's message to its parent over IPC; `sent` runs once it is handed over (or could not be). */
export function sendToParent(message: unknown, sent?: () => void): void {
  if (!process.connected || !process.send) {
    sent?.();
    return;
  }
  process.send(message, undefined, undefined, () => sent?.());
}
