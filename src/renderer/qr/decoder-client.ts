/**
 * The screen's handle on the decode worker: one frame in flight at a time (a frame that arrives while the
 * worker is busy is skipped, so a slow machine decodes less often instead of queueing frames), replies
 * checked, pixels transferred instead of copied.
 */
import { parseDecodeReply, type DecodeReply } from './decode-protocol.js';

export interface DecodeOutcome {
  /** Exactly what the decoder produced, or null when the frame holds no QR code. */
  readonly text: string | null;
  /** Decode time inside the worker (zxing only, without the transfer). */
  readonly ms: number;
}

/** What the client needs of a Worker (a real one in the browser; tests may pass their own). */
export interface WorkerLike {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message', listener: (event: MessageEvent<unknown>) => void): void;
  addEventListener(type: 'error', listener: (event: ErrorEvent) => void): void;
  terminate(): void;
}

/** A worker that has not answered a frame within this time is treated as failed. */
const DECODE_TIMEOUT_MS = 5_000;

export function createDecodeWorker(): WorkerLike {
  return new Worker(new URL('./decode-worker.ts', import.meta.url), { type: 'module', name: 'qr-decode' });
}

interface Pending {
  readonly id: number;
  readonly resolve: (outcome: DecodeOutcome) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

export class QrDecoder {
  readonly #worker: WorkerLike;
  readonly #onFailure: (message: string) => void;
  #nextId = 0;
  #pending: Pending | undefined;
  #ready = false;
  #closed = false;
  #failed = false;
  #failure: string | undefined;
  readonly #readyWaiters: (() => void)[] = [];

  /** `onFailure` hears about a worker that failed to load or crashed (detail for staff, no frame data). */
  constructor(options: { worker?: WorkerLike; onFailure?: (message: string) => void } = {}) {
    this.#worker = options.worker ?? createDecodeWorker();
    this.#onFailure = options.onFailure ?? (() => undefined);
    this.#worker.addEventListener('message', (event) => {
      this.#onReply(event.data);
    });
    this.#worker.addEventListener('error', (event) => {
      this.#fail(`the QR decode worker failed: ${event.message || 'no detail'}`);
    });
  }

  /** The wasm decoder is compiled and waiting for frames. */
  get ready(): boolean {
    return this.#ready;
  }

  /** The worker failed to load or crashed: make a new decoder. */
  get failed(): boolean {
    return this.#failed || this.#closed;
  }

  /** Why the decoder failed (for staff), if it did. */
  get failure(): string | undefined {
    return this.#failure;
  }

  /** A frame is being decoded; `decode` returns null until it is done. */
  get busy(): boolean {
    return this.#pending !== undefined;
  }

  /** Resolves once the worker has loaded its decoder. */
  whenReady(): Promise<void> {
    if (this.#ready) return Promise.resolve();
    return new Promise((resolve) => this.#readyWaiters.push(resolve));
  }

  /**
   * Decodes one RGBA frame. Its buffer is transferred to the worker (the caller's `pixels` is detached
   * afterwards). Returns null without sending anything when a frame is already in flight or the decoder
   * was closed.
   */
  decode(pixels: ArrayBuffer, width: number, height: number): Promise<DecodeOutcome> | null {
    if (this.#pending !== undefined || this.#closed) return null;
    const id = this.#nextId++;
    const promise = new Promise<DecodeOutcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.#pending?.id !== id) return;
        this.#pending = undefined;
        this.#failed = true; // a worker that hangs on a frame is replaced, not waited for
        this.#failure ??= 'the QR decode worker stopped answering';
        reject(new Error(`the QR decode worker did not answer within ${DECODE_TIMEOUT_MS} ms`));
      }, DECODE_TIMEOUT_MS);
      this.#pending = { id, resolve, reject, timer };
    });
    this.#worker.postMessage({ type: 'decode', id, width, height, pixels }, [pixels]);
    return promise;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#worker.terminate();
    this.#settle((p) => p.reject(new Error('the QR decoder was closed')));
    this.#readyWaiters.length = 0;
  }

  #onReply(raw: unknown): void {
    const parsed = parseDecodeReply(raw);
    if (!parsed.ok) {
      this.#settle((p) => p.reject(new Error(`invalid reply from the QR decode worker: ${parsed.error}`)));
      return;
    }
    const reply: DecodeReply = parsed.value;
    switch (reply.type) {
      case 'ready':
        this.#ready = true;
        for (const wake of this.#readyWaiters.splice(0)) wake();
        return;
      case 'result':
        if (this.#pending?.id === reply.id) this.#settle((p) => p.resolve({ text: reply.text, ms: reply.ms }));
        return;
      case 'error':
        if (reply.id === null) this.#fail(reply.message);
        else if (this.#pending?.id === reply.id) this.#settle((p) => p.reject(new Error(reply.message)));
        return;
    }
  }

  #fail(message: string): void {
    this.#failed = true;
    this.#failure ??= message;
    this.#settle((p) => p.reject(new Error(message)));
    this.#onFailure(message);
  }

  #settle(action: (pending: Pending) => void): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    clearTimeout(pending.timer);
    action(pending);
  }
}

let shared: QrDecoder | undefined;

/**
 * The page's decoder: one worker for the page's life, so the wasm is compiled once and the next customer's
 * camera decodes from its first frame. Replaced when it failed. Call early (at startup) to warm it up.
 */
export function sharedQrDecoder(): QrDecoder {
  if (shared === undefined || shared.failed) {
    shared?.close();
    shared = new QrDecoder();
  }
  return shared;
}
