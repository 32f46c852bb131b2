/**
 * The adapter's binding port (`pcsc-binding.ts`) on the `smartcard` addon (tomkp/smartcard 3.x): an N-API
 * addon, so the build `npm ci` makes for Node is the very file the Electron package ships and loads
 * (docs/packaging.md, "PC/SC binding"). The addon offers a promise API — a context that lists readers and
 * waits for status changes, readers that connect, cards that transmit — which this module turns into the
 * port's events:
 *
 * - One monitor context per binding context: a loop of `waitForChange` over the known readers plus pcsc's
 *   `\\?PnP?\Notification` pseudo-reader, bounded (`waitMs`), so reader arrivals, departures and status words
 *   (insertion counter included) are reported as they happen. After every bounded wait that saw no change
 *   the reader list and states are read afresh: Windows' SCardGetStatusChange does not always flag a change
 *   (tomkp/smartcard#111), and a platform without PnP notification still sees readers come and go.
 * - A failure of the monitor (the service stopped or restarted: every handle of the old service is dead) is
 *   the context's `error`; the loop ends, and the adapter builds a new context.
 * - Card handles live on a context of their own per reader: pcsc-lite's client serialises the calls of one
 *   context, so a card that never answers must not hold up the monitor or another reader.
 * - `disconnect` and `close` of the addon are synchronous native calls; a card handle is dropped only when
 *   no transmit runs on it (the adapter waits for that too), so they never wait on a stuck card. A card
 *   object is kept referenced while it is connected: the addon disconnects a collected card on the JS thread.
 *
 * Errors: the addon's texts become SCARD codes (`smartcard-errors.ts`).
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { z } from 'zod';
import {
  PcscBindingUnavailableError,
  pcscAddonLoadFailureMessage,
  ReaderState,
  type BindingCallbackError,
  type BindingContext,
  type BindingReader,
  type SyncBindingFactory,
} from './pcsc-binding.js';
import { PcscBindingError } from './smartcard-errors.js';

export const SMARTCARD_PACKAGE = 'smartcard';

/** The pseudo-reader whose state changes when readers are added or removed (pcsc-lite and WinSCard). */
export const PNP_NOTIFICATION = '\\\\?PnP?\\Notification';

/** The parts of the addon this module uses (smartcard 3.x, `dist/lib/types.d.ts`). */
export interface SmartcardCard {
  readonly protocol: number;
  readonly connected: boolean;
  transmit(command: Buffer, options: { maxRecvLength: number }): Promise<Buffer>;
  disconnect(disposition: number): void;
}
export interface SmartcardReader {
  readonly name: string;
  readonly state: number;
  connect(shareMode: number, protocol: number): Promise<SmartcardCard>;
}
export interface SmartcardContext {
  listReaders(): SmartcardReader[];
  waitForChange(readers: readonly { readonly name: string; readonly state: number }[], timeoutMs: number): Promise<unknown>;
  cancel(): void;
  close(): void;
}
export interface SmartcardAddon {
  readonly Context: new () => SmartcardContext;
  readonly SCARD_SHARE_SHARED: number;
  readonly SCARD_SHARE_EXCLUSIVE: number;
  readonly SCARD_PROTOCOL_T0: number;
  readonly SCARD_PROTOCOL_T1: number;
  readonly SCARD_LEAVE_CARD: number;
}

const AddonShape = z.looseObject({
  Context: z.custom<new () => SmartcardContext>((v) => typeof v === 'function'),
  SCARD_SHARE_SHARED: z.number(),
  SCARD_SHARE_EXCLUSIVE: z.number(),
  SCARD_PROTOCOL_T0: z.number(),
  SCARD_PROTOCOL_T1: z.number(),
  SCARD_LEAVE_CARD: z.number(),
});

/** What `waitForChange` resolves with: `null` when cancelled, `[]` on timeout, else one entry per reader asked about. */
const WaitResult = z.union([
  z.null(),
  z.array(z.looseObject({ name: z.string(), state: z.number().int().nonnegative(), changed: z.boolean() })),
]);

export interface SmartcardBindingOptions {
  /** Bound of one wait for a status change (and so the period of the fresh reads), ms. Default 1000. */
  readonly waitMs?: number;
}

const DEFAULT_WAIT_MS = 1_000;
const UNKNOWN_READER = 0x80100009;

/** A status word as compared between reports: the "changed" flag is the service's, not the state's. */
const comparable = (state: number): number => (state & ~ReaderState.CHANGED) >>> 0;

function establish(addon: SmartcardAddon, what: string): SmartcardContext {
  try {
    return new addon.Context();
  } catch (e) {
    throw new PcscBindingError(`SCardEstablishContext (${what})`, e);
  }
}

/** One reader as the port sees it. Status words come from the owning context's monitor. */
class SmartcardBindingReader extends EventEmitter implements BindingReader {
  readonly SCARD_SHARE_SHARED: number;
  readonly SCARD_SHARE_EXCLUSIVE: number;
  readonly SCARD_PROTOCOL_T0: number;
  readonly SCARD_PROTOCOL_T1: number;
  readonly SCARD_LEAVE_CARD: number;
  state: number | undefined;
  /** Set once the reader is closed or gone: no more events, no new handles. */
  private ended = false;
  private card: SmartcardCard | undefined;
  private cardContext: SmartcardContext | undefined;
  private transmits = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly addon: SmartcardAddon,
    readonly name: string,
  ) {
    super();
    this.SCARD_SHARE_SHARED = addon.SCARD_SHARE_SHARED;
    this.SCARD_SHARE_EXCLUSIVE = addon.SCARD_SHARE_EXCLUSIVE;
    this.SCARD_PROTOCOL_T0 = addon.SCARD_PROTOCOL_T0;
    this.SCARD_PROTOCOL_T1 = addon.SCARD_PROTOCOL_T1;
    this.SCARD_LEAVE_CARD = addon.SCARD_LEAVE_CARD;
  }

  get connected(): boolean {
    return this.card !== undefined;
  }

  /** From the monitor: a new status word. */
  report(state: number): void {
    if (this.ended) return;
    this.emit('status', { state });
    this.state = state;
  }

  /** From the monitor: the reader left the service's list. */
  gone(): void {
    if (this.ended) return;
    this.emit('end');
    this.close();
  }

  connect(options: { share_mode: number; protocol: number }, callback: (error: BindingCallbackError, protocol?: number) => void): void {
    if (this.ended) {
      setImmediate(() => callback(new Error('the card reader is closed')));
      return;
    }
    if (this.card !== undefined) {
      setImmediate(() => callback(new Error('the card reader already holds a card handle')));
      return;
    }
    let reader: SmartcardReader | undefined;
    try {
      this.cardContext ??= establish(this.addon, 'card');
      reader = this.cardContext.listReaders().find((r) => r.name === this.name);
    } catch (e) {
      setImmediate(() => callback(e instanceof PcscBindingError ? e : new PcscBindingError('SCardListReaders', e)));
      return;
    }
    if (reader === undefined) {
      setImmediate(() => callback(new PcscBindingError('SCardConnect', new Error('Unknown reader'))));
      return;
    }
    reader.connect(options.share_mode, options.protocol).then(
      (card) => {
        if (this.ended || this.card !== undefined) {
          // Closed meanwhile, or a handle appeared from elsewhere: this one is not wanted.
          disconnectQuietly(card, this.SCARD_LEAVE_CARD);
          callback(new Error(this.ended ? 'the card reader is closed' : 'the card reader already holds a card handle'));
          return;
        }
        this.card = card;
        callback(undefined, card.protocol);
      },
      (e: unknown) => callback(new PcscBindingError('SCardConnect', e)),
    );
  }

  disconnect(disposition: number, callback: (error: BindingCallbackError) => void): void {
    const card = this.card;
    this.card = undefined;
    let error: Error | undefined;
    if (card !== undefined) {
      try {
        card.disconnect(disposition);
      } catch (e) {
        error = new PcscBindingError('SCardDisconnect', e);
      }
    }
    setImmediate(() => callback(error));
  }

  transmit(
    data: Buffer,
    responseLength: number,
    _protocol: number,
    callback: (error: BindingCallbackError, response?: Buffer) => void,
  ): void {
    const card = this.card;
    if (card === undefined) {
      callback(new Error('Card Reader not connected'));
      return;
    }
    this.transmits++;
    const done = (): void => {
      this.transmits--;
      if (this.transmits === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    };
    card.transmit(data, { maxRecvLength: responseLength }).then(
      (response) => {
        done();
        callback(undefined, response);
      },
      (e: unknown) => {
        done();
        callback(new PcscBindingError('SCardTransmit', e));
      },
    );
  }

  close(): void {
    if (this.ended && this.cardContext === undefined && this.card === undefined) return;
    this.ended = true;
    // SCardDisconnect and SCardReleaseContext would wait for a transmit still running on this context.
    const release = (): void => {
      const card = this.card;
      this.card = undefined;
      if (card !== undefined) disconnectQuietly(card, this.SCARD_LEAVE_CARD);
      const context = this.cardContext;
      this.cardContext = undefined;
      if (context !== undefined) closeQuietly(context);
    };
    if (this.transmits === 0) release();
    else this.idleWaiters.push(release);
  }
}

function disconnectQuietly(card: SmartcardCard, disposition: number): void {
  try {
    card.disconnect(disposition);
  } catch {
    // The handle is gone with the card or the service; nothing to release.
  }
}

function closeQuietly(context: SmartcardContext): void {
  try {
    context.close();
  } catch {
    // Already invalid (service gone).
  }
}

/** A binding context: the monitor loop and the readers it announced. */
class SmartcardBindingContext extends EventEmitter implements BindingContext {
  private readonly readers = new Map<string, SmartcardBindingReader>();
  /** Last status word per reader as told to the service (0 = not yet known). */
  private readonly known = new Map<string, number>();
  private pnpState = 0;
  private closed = false;
  private pending: Promise<unknown> | undefined;
  private markReleased: () => void = () => undefined;
  private readonly released = new Promise<void>((resolve) => (this.markReleased = resolve));

  constructor(
    private readonly addon: SmartcardAddon,
    private readonly monitor: SmartcardContext,
    private readonly waitMs: number,
  ) {
    super();
    // Listeners are attached by whoever received this context, after the factory returned.
    setImmediate(() => void this.run());
  }

  /** Resolves once the monitor context is released (after close(), or after the monitor failed). */
  whenClosed(): Promise<void> {
    return this.released;
  }

  private release(): void {
    closeQuietly(this.monitor);
    this.markReleased();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.monitor.cancel();
    } catch {
      // The context may already be invalid; the pending wait then ends by itself.
    }
    const pending = this.pending ?? Promise.resolve();
    void pending.then(
      () => this.release(),
      () => this.release(),
    );
  }

  /** Reads the flag afresh: close() may have run during an await (TypeScript keeps the loop's narrowing). */
  private isClosed(): boolean {
    return this.closed;
  }

  private async run(): Promise<void> {
    try {
      this.sync();
      while (!this.closed) {
        const query = [...this.known].map(([name, state]) => ({ name, state }));
        query.push({ name: PNP_NOTIFICATION, state: this.pnpState });
        this.pending = this.monitor.waitForChange(query, this.waitMs);
        let raw: unknown;
        try {
          raw = await this.pending;
        } catch (e) {
          if (this.isClosed()) return;
          // A reader left between the last list and this wait: not a failure of the service.
          if (new PcscBindingError('SCardGetStatusChange', e).code !== UNKNOWN_READER)
            throw new PcscBindingError('SCardGetStatusChange', e);
          this.sync();
          continue;
        }
        if (this.isClosed()) return;
        const result = WaitResult.parse(raw);
        if (result === null) return; // cancelled: only close() cancels
        if (result.length === 0) {
          this.sync(); // a bounded wait that saw nothing: read the readers and their states afresh
          continue;
        }
        let listChanged = false;
        for (const entry of result) {
          if (entry.name === PNP_NOTIFICATION) {
            this.pnpState = comparable(entry.state);
            if (entry.changed) listChanged = true;
            continue;
          }
          if ((entry.state & ReaderState.UNKNOWN) !== 0) {
            listChanged = true; // the reader is gone; the fresh list says so
            continue;
          }
          this.update(entry.name, entry.state);
        }
        if (listChanged) this.sync();
      }
    } catch (e) {
      if (this.closed) return;
      const error =
        e instanceof PcscBindingError
          ? e
          : e instanceof z.ZodError
            ? new Error(`the smartcard addon answered a status wait with an unexpected value: ${e.issues[0]?.message ?? ''}`)
            : new PcscBindingError('SCardGetStatusChange', e);
      // The monitor is unusable now (a lost service ends every handle of it): the owner builds a new context.
      this.closed = true;
      this.release();
      this.emit('error', error);
    }
  }

  /** Reads the reader list and states now: announces new readers, ends vanished ones, reports changed states. */
  private sync(): void {
    let listed: SmartcardReader[];
    try {
      listed = this.monitor.listReaders();
    } catch (e) {
      throw new PcscBindingError('SCardListReaders', e);
    }
    const present = new Map(listed.map((r) => [r.name, r.state] as const));
    for (const [name, reader] of this.readers) {
      if (present.has(name)) continue;
      this.readers.delete(name);
      this.known.delete(name);
      reader.gone();
    }
    for (const [name, state] of present) {
      if (!this.readers.has(name)) {
        const reader = new SmartcardBindingReader(this.addon, name);
        this.readers.set(name, reader);
        this.known.set(name, 0);
        this.emit('reader', reader);
        if (this.closed) return;
      }
      this.update(name, state);
    }
  }

  private update(name: string, state: number): void {
    const reader = this.readers.get(name);
    if (reader === undefined || state === 0) return;
    const next = comparable(state);
    if (this.known.get(name) === next) return;
    this.known.set(name, next);
    reader.report(state);
  }
}

/** The port's factory over a loaded addon: each call establishes a monitor context (throws when the service is down). */
export function smartcardBindingFactory(addon: SmartcardAddon, options: SmartcardBindingOptions = {}): SyncBindingFactory {
  const waitMs = options.waitMs ?? DEFAULT_WAIT_MS;
  if (!(Number.isFinite(waitMs) && waitMs > 0)) throw new RangeError(`waitMs must be a positive number, got ${waitMs}`);
  return () => new SmartcardBindingContext(addon, establish(addon, 'monitor'), waitMs);
}

/**
 * Loads the `smartcard` addon. It is an optional dependency (a machine without the PC/SC headers still
 * installs and runs the kiosk with other devices), so a missing or unusable addon is a clear error here
 * (`load` is replaceable for tests).
 */
export function loadSmartcardBinding(
  load: (id: string) => unknown = createRequire(import.meta.url),
  options: SmartcardBindingOptions = {},
): SyncBindingFactory {
  let loaded: unknown;
  try {
    loaded = load(SMARTCARD_PACKAGE);
  } catch (e) {
    throw new PcscBindingUnavailableError(pcscAddonLoadFailureMessage(SMARTCARD_PACKAGE, e));
  }
  const addon = AddonShape.safeParse(loaded);
  if (!addon.success) {
    throw new PcscBindingUnavailableError(
      `the ${SMARTCARD_PACKAGE} module does not have the API this kiosk uses (Context and the SCARD constants): expected smartcard 3.x`,
    );
  }
  return smartcardBindingFactory(addon.data, options);
}
