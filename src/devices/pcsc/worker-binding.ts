/**
 * The PC/SC binding port (`pcsc-binding.ts`) with the `smartcard` addon on a thread of its own
 * (`pcsc-worker.ts`). Why: the addon's SCardDisconnect, SCardListReaders, SCardCancel and
 * SCardReleaseContext are synchronous, and pcsc-lite's client waits for pcscd without a bound. While pcscd
 * holds the reader — a slow card, a stuck reader driver, or vpcd waiting for a virtual card that lives in
 * the kiosk's own process, which then can never answer — the calling thread stands still. On the kiosk's
 * thread that froze everything: timers, the backend socket, the screen (the soak found a kiosk stopped in
 * SCardDisconnect for good). On this thread only the PC/SC calls wait; the adapter's own time bounds
 * (`native-call.ts`) fire on time and the kiosk tells the customer.
 *
 * One worker per process, shared by every factory (and so by the adapters of successive device rebuilds):
 * the addon keeps its JavaScript constructors in C++ statics, so a second thread that loads it breaks the
 * first (V8 aborts: "Cannot create a handle without a HandleScope" in `PCSCReader::NewInstance`). Nothing
 * else in the process may load `smartcard` either. The worker holds the process open while a context is
 * open — as the addon's pending status wait did on the kiosk's own thread — and not when idle; a factory's
 * `dispose()` closes its contexts and waits (bounded) until the worker has released them, because a process
 * that exits under a running addon call aborts (the addon throws into a torn-down environment). A worker
 * that dies takes its contexts with it: each reports an error, which the adapter treats as a lost service
 * (rebuilt with backoff), and the next context starts a new worker. Electron runs worker threads from
 * inside app.asar since 17.3 (electron/electron#33216); the build puts `pcsc-worker.js` beside the main
 * bundle.
 */
import { EventEmitter } from 'node:events';
import { Worker } from 'node:worker_threads';
import {
  PcscBindingUnavailableError,
  type BindingCallbackError,
  type BindingContext,
  type BindingFactory,
  type BindingReader,
} from './pcsc-binding.js';
import { parseFromWorker, type FromWorker, type ReaderConstants, type ToWorker, type WireError } from './pcsc-worker-protocol.js';

export interface WorkerBindingOptions {
  /** The addon's module id or path inside the worker (tests name a stand-in); default `smartcard`. */
  readonly addonModule?: string;
  /** The binding's bounded status wait, ms (`smartcard-binding.ts`). */
  readonly waitMs?: number;
}

/** An error the worker relayed: its text keeps the `(0x8010xxxx)` code the adapter classifies by. */
export class RelayedPcscError extends Error {
  override readonly name = 'RelayedPcscError';
}

function fromWire(error: WireError): Error {
  return error.kind === 'unavailable' ? new PcscBindingUnavailableError(error.message) : new RelayedPcscError(error.message);
}

type Reply = Extract<FromWorker, { ev: 'reply' }>;

/** Starts the worker: the built file beside this module, or its TypeScript source through tsx in development and tests. */
function startWorker(options: WorkerBindingOptions): Worker {
  const workerData = {
    ...(options.addonModule === undefined ? {} : { addonModule: options.addonModule }),
    ...(options.waitMs === undefined ? {} : { waitMs: options.waitMs }),
  };
  const built = new URL('./pcsc-worker.js', import.meta.url);
  if (!import.meta.url.endsWith('.ts')) return new Worker(built, { workerData });
  const source = built.href.replace(/\.js$/, '.ts');
  const code = `import('tsx/esm/api').then(({ tsImport }) => tsImport(${JSON.stringify(source)}, ${JSON.stringify(import.meta.url)}));`;
  return new Worker(code, { eval: true, workerData });
}

class WorkerReader extends EventEmitter implements BindingReader {
  readonly SCARD_SHARE_SHARED: number;
  readonly SCARD_SHARE_EXCLUSIVE: number;
  readonly SCARD_PROTOCOL_T0: number;
  readonly SCARD_PROTOCOL_T1: number;
  readonly SCARD_LEAVE_CARD: number;
  state: number | undefined;
  /** Mirrors the binding's: true from a connect's success until disconnect or close is asked for. */
  connected = false;
  closed = false;

  constructor(
    private readonly host: PcscWorkerHost,
    readonly id: number,
    readonly name: string,
    constants: ReaderConstants,
  ) {
    super();
    this.SCARD_SHARE_SHARED = constants.SCARD_SHARE_SHARED;
    this.SCARD_SHARE_EXCLUSIVE = constants.SCARD_SHARE_EXCLUSIVE;
    this.SCARD_PROTOCOL_T0 = constants.SCARD_PROTOCOL_T0;
    this.SCARD_PROTOCOL_T1 = constants.SCARD_PROTOCOL_T1;
    this.SCARD_LEAVE_CARD = constants.SCARD_LEAVE_CARD;
  }

  connect(options: { share_mode: number; protocol: number }, callback: (error: BindingCallbackError, protocol?: number) => void): void {
    if (this.closed) {
      setImmediate(() => callback(new Error('the card reader is closed')));
      return;
    }
    this.host.call({ op: 'connect', reader: this.id, shareMode: options.share_mode, protocol: options.protocol }, [], (reply) => {
      if (!reply.error && !this.closed) this.connected = true;
      callback(reply.error ? fromWire(reply.error) : undefined, reply.protocol);
    });
  }

  disconnect(disposition: number, callback: (error: BindingCallbackError) => void): void {
    this.connected = false;
    this.host.call({ op: 'disconnect', reader: this.id, disposition }, [], (reply) =>
      callback(reply.error ? fromWire(reply.error) : undefined),
    );
  }

  transmit(
    data: Buffer,
    responseLength: number,
    protocol: number,
    callback: (error: BindingCallbackError, response?: Buffer) => void,
  ): void {
    // A copy of its own, moved to the worker rather than cloned a second time on the way.
    const command = Uint8Array.from(data);
    this.host.call({ op: 'transmit', reader: this.id, data: command, responseLength, protocol }, [command.buffer], (reply) => {
      if (reply.error) callback(fromWire(reply.error));
      else
        callback(
          undefined,
          reply.response ? Buffer.from(reply.response.buffer, reply.response.byteOffset, reply.response.byteLength) : Buffer.alloc(0),
        );
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.connected = false;
    this.host.closeReader(this);
  }
}

class WorkerContext extends EventEmitter implements BindingContext {
  closed = false;
  private released: Promise<void> = Promise.resolve();

  constructor(
    private readonly host: PcscWorkerHost,
    readonly id: number,
  ) {
    super();
  }

  close(): void {
    void this.closeAndWait();
  }

  /** Closes the context; resolves once the worker has released it. */
  closeAndWait(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.released = this.host.closeContext(this);
    }
    return this.released;
  }

  whenClosed(): Promise<void> {
    return this.released;
  }
}

/** The adapter's side of the worker: ids, pending calls, and what happens when the worker ends. */
class PcscWorkerHost {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly contexts = new Map<number, WorkerContext>();
  private readonly establishing = new Map<number, { resolve: (context: WorkerContext) => void; reject: (error: Error) => void }>();
  private readonly closing = new Map<number, () => void>();
  private readonly readers = new Map<number, WorkerReader>();
  private readonly calls = new Map<number, (reply: Reply) => void>();
  /** Whether each worker is referenced now (a new worker starts referenced, as Node starts it). */
  private readonly held = new WeakMap<Worker, boolean>();

  constructor(private readonly options: WorkerBindingOptions) {}

  establish(): Promise<WorkerContext> {
    const id = this.nextId++;
    return new Promise<WorkerContext>((resolve, reject) => {
      this.establishing.set(id, { resolve, reject });
      this.post({ op: 'establish', context: id });
    });
  }

  call(
    message: DistributiveOmit<Extract<ToWorker, { call: number }>, 'call'>,
    transfer: readonly ArrayBuffer[],
    onReply: (reply: Reply) => void,
  ): void {
    const call = this.nextId++;
    this.calls.set(call, onReply);
    this.post({ ...message, call }, transfer);
  }

  closeReader(reader: WorkerReader): void {
    this.readers.delete(reader.id);
    this.post({ op: 'close_reader', reader: reader.id });
  }

  /** Resolves when the worker has released the context (or is gone). */
  closeContext(context: WorkerContext): Promise<void> {
    this.contexts.delete(context.id);
    if (!this.worker) return Promise.resolve();
    const released = new Promise<void>((resolve) => this.closing.set(context.id, resolve));
    this.post({ op: 'close_context', context: context.id });
    return released;
  }

  private post(message: ToWorker, transfer: readonly ArrayBuffer[] = []): void {
    this.ensureWorker().postMessage(message, transfer);
    this.holdProcess();
  }

  /**
   * Referenced while it has open contexts or work in flight; an idle worker never keeps the process alive.
   * Only a change is passed on: this runs twice per APDU.
   */
  private holdProcess(): void {
    const worker = this.worker;
    if (!worker) return;
    const busy = this.contexts.size + this.establishing.size + this.closing.size + this.calls.size > 0;
    if (this.held.get(worker) === busy) return;
    this.held.set(worker, busy);
    if (busy) worker.ref();
    else worker.unref();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker(this.options);
    worker.on('message', (raw: unknown) => this.onMessage(raw));
    worker.on('error', (e: Error) => this.onEnd(worker, `the PC/SC thread failed: ${e.message}`));
    worker.on('exit', (code: number) => this.onEnd(worker, `the PC/SC thread stopped (exit code ${code})`));
    this.worker = worker;
    return worker;
  }

  private onEnd(worker: Worker, why: string): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.failAll(why);
  }

  /** Every context, reader and call of a worker that is gone ends now, with why. */
  private failAll(why: string): void {
    for (const [, pending] of this.establishing) pending.reject(new RelayedPcscError(why));
    this.establishing.clear();
    for (const [, onReply] of this.calls) onReply({ ev: 'reply', call: -1, error: { kind: 'other', message: why } });
    this.calls.clear();
    for (const [, released] of this.closing) released();
    this.closing.clear();
    const contexts = [...this.contexts.values()];
    this.contexts.clear();
    this.readers.clear();
    for (const context of contexts) if (!context.closed) context.emit('error', new RelayedPcscError(why));
  }

  private onMessage(raw: unknown): void {
    const parsed = parseFromWorker(raw);
    if (!parsed.success) {
      this.failAll(`the PC/SC thread sent a message that does not fit: ${parsed.error.issues[0]?.message ?? ''}`);
    } else {
      this.dispatch(parsed.data);
    }
    this.holdProcess();
  }

  private dispatch(message: FromWorker): void {
    switch (message.ev) {
      case 'established': {
        const pending = this.establishing.get(message.context);
        this.establishing.delete(message.context);
        const context = new WorkerContext(this, message.context);
        if (!pending) {
          void context.closeAndWait();
          return;
        }
        this.contexts.set(message.context, context);
        pending.resolve(context);
        return;
      }
      case 'establish_failed': {
        const pending = this.establishing.get(message.context);
        this.establishing.delete(message.context);
        pending?.reject(fromWire(message.error));
        return;
      }
      case 'context_error': {
        const context = this.contexts.get(message.context);
        if (context && !context.closed) context.emit('error', fromWire(message.error));
        return;
      }
      case 'context_closed': {
        const released = this.closing.get(message.context);
        this.closing.delete(message.context);
        released?.();
        return;
      }
      case 'reader': {
        const context = this.contexts.get(message.context);
        const reader = new WorkerReader(this, message.reader, message.name, message.constants);
        if (!context || context.closed) {
          reader.close();
          return;
        }
        this.readers.set(message.reader, reader);
        context.emit('reader', reader);
        return;
      }
      case 'status': {
        const reader = this.readers.get(message.reader);
        if (!reader || reader.closed) return;
        reader.emit('status', { state: message.state, ...(message.atr ? { atr: message.atr } : {}) });
        reader.state = message.state;
        return;
      }
      case 'reader_error': {
        const reader = this.readers.get(message.reader);
        if (reader && !reader.closed) reader.emit('error', fromWire(message.error));
        return;
      }
      case 'end': {
        const reader = this.readers.get(message.reader);
        if (reader && !reader.closed) reader.emit('end');
        return;
      }
      case 'reply': {
        const onReply = this.calls.get(message.call);
        this.calls.delete(message.call);
        onReply?.(message);
        return;
      }
    }
  }
}

/** How long a closing worker may hold the process open for its last native calls to return. */
const SHUTDOWN_BOUND_MS = 3_000;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** One host (one worker) per process and per stand-in addon: see the file's comment. */
const hosts = new Map<string, PcscWorkerHost>();

/**
 * The binding port on the `smartcard` addon in the process's PC/SC worker thread. `dispose()` closes the
 * contexts this factory made and resolves once the worker has released them (at most `SHUTDOWN_BOUND_MS`);
 * the factory refuses new contexts after it.
 */
export function workerBindingFactory(options: WorkerBindingOptions = {}): BindingFactory & { dispose(): Promise<void> } {
  const key = JSON.stringify([options.addonModule ?? null, options.waitMs ?? null]);
  let host = hosts.get(key);
  if (!host) {
    host = new PcscWorkerHost(options);
    hosts.set(key, host);
  }
  const shared = host;
  const mine = new Set<WorkerContext>();
  const state = { disposed: false };
  // Read through a call: the flag changes while `establish` awaits the worker.
  const isDisposed = (): boolean => state.disposed;
  const establish = async (): Promise<BindingContext> => {
    if (isDisposed()) throw new Error('the PC/SC binding is closed');
    const context = await shared.establish();
    if (isDisposed()) {
      await context.closeAndWait();
      throw new Error('the PC/SC binding is closed');
    }
    mine.add(context);
    return context;
  };
  const dispose = async (): Promise<void> => {
    state.disposed = true;
    const releases = [...mine].map((context) => context.closeAndWait());
    mine.clear();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SHUTDOWN_BOUND_MS);
      timer.unref();
    });
    await Promise.race([Promise.all(releases), bound]);
    clearTimeout(timer);
  };
  return Object.assign(establish, { dispose });
}
