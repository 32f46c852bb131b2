/**
 * The kiosk's `NfcReader` port on PC/SC (pcscd on Linux, the Smart Card service on Windows, CryptoTokenKit
 * on macOS) through a binding behind the port of `pcsc-binding.ts` — by default the N-API `smartcard` addon
 * (`smartcard-binding.ts`). PC/SC behaviour it is built on: docs/nfc-readers.md.
 *
 * - Context: established at start and re-established with exponential backoff while the service is
 *   absent (0x8010001D) or after it was lost (0x80100013: a pcscd restart ends every reader of the old
 *   instance for good: the old context and its readers never work again, a new context must be made). The old instance is closed; its late "Command cancelled" is swallowed.
 * - Readers: announced and withdrawn by the binding while running; the one used is chosen by
 *   `reader-selection.ts` (configured name or pattern; otherwise contactless first, SAM slots never).
 *   Names come from drivers: logged and shown escaped and cut (`readerLabel`); a name no real reader has
 *   (longer than `MAX_READER_NAME_CHARS`) is not used at all.
 * - Presence: a card (phone) is present from a status change to PRESENT until EMPTY — or until the
 *   insertion counter in the status word's upper half shows a removal and insertion that came in between.
 *   Each presence is handed out once (`nextCard`), so a phone left on the reader after its verification
 *   is not engaged again until it has been removed ("remove your phone").
 * - Handles: `connect` with the configured share mode (default shared) and protocols (default T=0|T=1);
 *   the handle is dropped on EMPTY and after any failed exchange (a stale handle keeps `connected` true and
 *   breaks the next connect: the `smartcard` binding then answers a connect with neither error nor protocol); `nfc_await_card` therefore always gets a fresh handle.
 * - Transmit: receive buffer 65,538 bytes (extended APDUs: 65,536 data bytes + SW1 SW2), a per-APDU
 *   timeout of our own (vpcd and some drivers never time out), failures mapped to the canonical variant:
 *   - a response longer than the receive buffer → `InsufficientBuffer` (never handed on);
 *   - a binding error carrying an SCARD code → that code's variant (`scard-errors.ts`);
 *   - no answer within the timeout → `Timeout` (SCARD_E_TIMEOUT's variant; the backend ends the session,
 *     a re-tap does not cure a phone that has stopped answering while lying still on the reader);
 *   - a response shorter than SW1 SW2 → `UnresponsiveCard` (vpcd reports a card that left mid-APDU as an
 *     empty success rather than an error — vpcd's own behaviour, and a reply without a status word is no reply from any reader; recoverable, so the customer is asked to tap again);
 *   - the binding's own "not connected" error (no code) → `RemovedCard` when the card has left, else
 *     `InvalidHandle`; any other error without a code → `UnknownError`, as the `pcsc` crate masks codes.
 *
 * - A phone lying on the reader while the service restarts keeps its presence (it is not engaged again);
 *   it counts as lifted if the new context reports the reader empty, or not at all within 5 s.
 * - A native transmit a mute card never answers holds the binding's reader mutex: nothing else is issued
 *   on that reader (no connect, disconnect or close, which would block a worker thread or the JS thread)
 *   until it returns, which it does when the card leaves.
 *
 * No JS-side wait on the binding is unbounded, and no timer outlives its wait; the retry timers are
 * unref'd so an idle adapter never keeps a process alive.
 */
import { MAX_RAPDU_BYTES, NfcTransmitError, type Availability, type NfcCard, type NfcReader, type TransmitOptions } from '../ports.js';
import { abortable, abortedError, errorMessage, isAborted } from '../shared/abort.js';
import { AvailabilityNotifier } from '../shared/availability.js';
import { nativeCall, NativeCallTimeout } from './native-call.js';
import { eventCounter, PcscBindingUnavailableError, ReaderState, type BindingContext, type BindingFactory, type BindingReader } from './pcsc-binding.js';
import { PcscCard, withDeadline } from './pcsc-card.js';
import { workerBindingFactory } from './worker-binding.js';
import { MAX_READER_NAME_CHARS, chooseReader, readerSelector, type ReaderSelector } from './reader-selection.js';
import { Connection, Presence, ReaderEntry } from './reader-state.js';
import { CONTEXT_LOST_CODES, currentScardPlatform, formatScardCode, parseScardCode, Scard, scardVariant, type ScardPlatform } from './scard-errors.js';

/** Extended APDU response: up to 65,536 data bytes plus SW1 SW2 (ISO/IEC 7816-4 §5.1, Le up to 65,536). */
export const RECEIVE_BUFFER_BYTES = MAX_RAPDU_BYTES;

/**
 * A response longer than any R-APDU can be. The native layer caps what it copies at the receive
 * buffer, but a binding or driver that does not is not trusted with it: refused as SCARD_E_INSUFFICIENT_BUFFER's
 * variant, the error SCardTransmit gives for a response that does not fit, which the backend treats as fatal
 * (docs/protocol.md §7.3).
 */
function oversizeResponse(length: number): NfcTransmitError {
  return new NfcTransmitError(
    'InsufficientBuffer',
    `the card answered ${length} bytes; an R-APDU is at most ${RECEIVE_BUFFER_BYTES} (65,536 data bytes + SW1 SW2, ISO/IEC 7816-4 extended length)`,
  );
}

export type ShareMode = 'shared' | 'exclusive';
export type ProtocolPreference = 'any' | 'T0' | 'T1';

/** Structured log sink (pino's Logger fits). Never given APDU contents. */
export interface PcscLog {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface PcscNfcReaderOptions {
  /** Reader name, part of a name, or `/regex/flags`; automatic choice when absent. */
  readonly reader?: string;
  readonly shareMode?: ShareMode;
  readonly protocol?: ProtocolPreference;
  /** First delay before re-establishing a lost or absent PC/SC service; doubles up to the maximum. */
  readonly serviceRetryMinMs?: number;
  readonly serviceRetryMaxMs?: number;
  /** Bound on SCardConnect. */
  readonly connectTimeoutMs?: number;
  /** Bound on SCardDisconnect (the handle is considered dropped after it). */
  readonly disconnectTimeoutMs?: number;
  readonly log?: PcscLog;
  /** The binding (tests inject a double); default: the `smartcard` addon (`smartcard-binding.ts`). */
  readonly binding?: BindingFactory;
  readonly platform?: ScardPlatform;
}

const DEFAULTS = {
  shareMode: 'shared' as ShareMode,
  protocol: 'any' as ProtocolPreference,
  serviceRetryMinMs: 500,
  serviceRetryMaxMs: 10_000,
  connectTimeoutMs: 5_000,
  disconnectTimeoutMs: 1_000,
};

/** How long a phone's presence waits for its reader to come back after the service restarted. */
const ORPHAN_CLAIM_MS = 5_000;

const silentLog: PcscLog = { debug: () => undefined, info: () => undefined, warn: () => undefined };

interface PresenceWaiter {
  readonly resolve: (presence: Presence) => void;
  readonly reject: (error: Error) => void;
}

export class PcscNfcReader implements NfcReader {
  private readonly selector: ReaderSelector;
  private readonly opts: typeof DEFAULTS;
  private readonly log: PcscLog;
  private readonly platform: ScardPlatform;
  private readonly notifier = new AvailabilityNotifier({ usable: false, reason: 'starting', detail: 'connecting to the PC/SC service' });
  private factory: BindingFactory | undefined;
  private context: BindingContext | undefined;
  /** A context is being made on the binding's thread (one at a time). */
  private establishing = false;
  private readonly readers = new Map<string, ReaderEntry>();
  private readonly waiters = new Set<PresenceWaiter>();
  private retryTimer: NodeJS.Timeout | undefined;
  private retryAttempts = 0;
  private nextPresenceId = 1;
  private nextConnectionId = 1;
  private activeName: string | undefined;
  private closed = false;
  /** Presences of readers whose context was lost, by reader name (see `ReaderEntry.orphan`). */
  private readonly orphans = new Map<string, Presence>();
  private orphanTimer: NodeJS.Timeout | undefined;

  constructor(options: PcscNfcReaderOptions = {}) {
    this.selector = readerSelector(options.reader);
    this.opts = {
      shareMode: options.shareMode ?? DEFAULTS.shareMode,
      protocol: options.protocol ?? DEFAULTS.protocol,
      serviceRetryMinMs: options.serviceRetryMinMs ?? DEFAULTS.serviceRetryMinMs,
      serviceRetryMaxMs: options.serviceRetryMaxMs ?? DEFAULTS.serviceRetryMaxMs,
      connectTimeoutMs: options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
      disconnectTimeoutMs: options.disconnectTimeoutMs ?? DEFAULTS.disconnectTimeoutMs,
    };
    for (const [key, value] of Object.entries(this.opts)) {
      if (typeof value === 'number' && !(Number.isFinite(value) && value > 0)) throw new RangeError(`${key} must be a positive number, got ${value}`);
    }
    this.log = options.log ?? silentLog;
    this.platform = options.platform ?? currentScardPlatform();
    this.factory = options.binding;
    this.establish();
  }

  availability(): Availability {
    return this.notifier.current;
  }

  onAvailabilityChange(listener: (availability: Availability) => void): () => void {
    return this.notifier.onChange(listener);
  }

  /** The reader in use now, if any (diagnostics): its name escaped and cut (`readerLabel`). */
  get readerName(): string | undefined {
    return this.activeEntry()?.label;
  }

  /**
   * Whether a card (phone) lies on the reader in use now, as far as the service has noticed; undefined
   * before the reader's first status report (or with no reader).
   */
  get cardPresent(): boolean | undefined {
    const entry = this.activeEntry();
    if (entry === undefined || entry.state === 0) return undefined;
    return entry.presence !== undefined && !entry.presence.removed;
  }

  /** Names of every reader the service lists now (diagnostics), escaped and cut (`readerLabel`). */
  get readerNames(): string[] {
    return [...this.readers.values()].map((entry) => entry.label);
  }

  async nextCard(signal: AbortSignal): Promise<NfcCard> {
    for (;;) {
      const presence = await this.waitForPresence(signal);
      try {
        return await this.connectUnlessAborted(presence, signal);
      } catch (e) {
        if (isAborted(signal) || this.closed) throw e;
        // The presence stays handed out: a card that cannot be connected is not retried in a loop; the
        // customer lifts it and taps again, which is a new presence. A card lifted meanwhile is routine.
        const reason = this.variantOf(e);
        const fields = { event: 'pcsc_connect_failed', reader: presence.reader.label, reason };
        if (reason === 'RemovedCard' || reason === 'NoSmartcard') this.log.debug(fields, 'the card left before it was connected');
        else this.log.warn(fields, 'could not connect to the card');
      }
    }
  }

  /** `connect`, abandoned when `signal` aborts; a handle that arrives after that is released. */
  private connectUnlessAborted(presence: Presence, signal: AbortSignal): Promise<PcscCard> {
    const connecting = this.connect(presence);
    return abortable(connecting, signal, 'NFC nextCard').catch((e: unknown) => {
      if (isAborted(signal)) connecting.then((card) => void card.release(), () => undefined);
      throw e;
    });
  }

  ignoreCurrentCard(): void {
    const presence = this.activeEntry()?.presence;
    if (presence && !presence.removed) presence.handedOut = true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.orphanTimer);
    for (const waiter of [...this.waiters]) waiter.reject(new Error('the PC/SC reader is closed'));
    this.waiters.clear();
    await this.dropContext('Cancelled');
    await this.factory?.dispose?.();
    this.sweepOrphans();
    this.notifier.set({ usable: false, reason: 'closed' });
  }

  // ------------------------------------------------------------------ context

  private establish(): void {
    if (this.closed || this.establishing) return;
    try {
      this.factory ??= workerBindingFactory();
    } catch (e) {
      const detail = errorMessage(e);
      this.log.warn({ event: 'pcsc_binding_unavailable' }, detail);
      this.notifier.set({ usable: false, reason: 'not_installed', detail });
      return;
    }
    let made: BindingContext | Promise<BindingContext>;
    try {
      made = this.factory();
    } catch (e) {
      this.establishFailed(e);
      return;
    }
    if (!(made instanceof Promise)) {
      this.adopt(made);
      return;
    }
    this.establishing = true;
    made.then(
      (context) => {
        this.establishing = false;
        // Closed while the context was being made: it is not wanted.
        if (this.closed) context.close();
        else this.adopt(context);
      },
      (e: unknown) => {
        this.establishing = false;
        if (!this.closed) this.establishFailed(e);
      },
    );
  }

  private establishFailed(e: unknown): void {
    if (e instanceof PcscBindingUnavailableError) {
      this.log.warn({ event: 'pcsc_binding_unavailable' }, e.message);
      this.notifier.set({ usable: false, reason: 'not_installed', detail: e.message });
      return;
    }
    const code = parseScardCode(e);
    const variant = code === undefined ? 'UnknownError' : scardVariant(code, this.platform);
    this.notifier.set({ usable: false, reason: 'service_down', detail: `the PC/SC service is not available (${variant})` });
    this.log.warn({ event: 'pcsc_service_unavailable', code: code === undefined ? undefined : formatScardCode(code), variant }, 'PC/SC service not available; retrying');
    this.scheduleRetry();
  }

  private adopt(context: BindingContext): void {
    this.context = context;
    // A phone that lay on a reader when the service went away counts as lifted unless that reader is back
    // and reports it within this time.
    clearTimeout(this.orphanTimer);
    if (this.orphans.size > 0) {
      this.orphanTimer = setTimeout(() => this.sweepOrphans(), ORPHAN_CLAIM_MS);
      this.orphanTimer.unref();
    }
    context.on('error', (error) => this.onContextError(context, error));
    context.on('reader', (reader) => this.onReader(context, reader));
    this.notifier.set({ usable: false, reason: 'no_reader', detail: `waiting for ${this.selector.description}` });
    this.log.info({ event: 'pcsc_context_established' }, 'PC/SC service connected');
  }

  private scheduleRetry(): void {
    if (this.closed || this.retryTimer !== undefined) return;
    const delay = Math.min(this.opts.serviceRetryMaxMs, this.opts.serviceRetryMinMs * 2 ** Math.min(this.retryAttempts, 20));
    this.retryAttempts++;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.establish();
    }, delay);
    this.retryTimer.unref();
  }

  private onContextError(context: BindingContext, error: unknown): void {
    const code = parseScardCode(error);
    if (context !== this.context || code === Scard.CANCELLED) return; // a closed instance, or our own close()
    const variant = code === undefined ? 'UnknownError' : scardVariant(code, this.platform);
    this.log.warn({ event: 'pcsc_context_lost', code: code === undefined ? undefined : formatScardCode(code), variant }, 'PC/SC service lost; reconnecting');
    // Any failure of the monitor ends it for good in this binding, so the context is rebuilt either way.
    void this.dropContext(variant).then(() => {
      if (this.closed) return;
      this.notifier.set({ usable: false, reason: 'service_down', detail: `the PC/SC service was lost (${variant})` });
      this.scheduleRetry();
    });
  }

  /** Forgets the context and its readers: presences end, handles are dropped, the binding is closed. */
  private async dropContext(reason: string): Promise<void> {
    const context = this.context;
    this.context = undefined;
    const entries = [...this.readers.values()];
    this.readers.clear();
    this.activeName = undefined;
    await Promise.all(entries.map((entry) => this.retireReader(entry, entry.failure ?? reason, !this.closed)));
    if (context) await this.closeLater('PC/SC context', context);
  }

  // ------------------------------------------------------------------ readers

  private onReader(context: BindingContext, reader: BindingReader): void {
    // Without an error listener a late binding error would crash the process (node's EventEmitter throws an unhandled `error` event).
    const entry = new ReaderEntry(reader);
    reader.on('error', (error) => this.onReaderError(entry, error));
    if (context !== this.context || this.closed) {
      void this.closeBindingReader(entry);
      return;
    }
    if (reader.name.length > MAX_READER_NAME_CHARS) {
      // No PC/SC reader is named like this: a broken or hostile driver. Never chosen, never matched.
      this.log.warn({ event: 'pcsc_reader_ignored', reader: entry.label, nameLength: reader.name.length }, 'card reader with an implausible name ignored');
      void this.closeBindingReader(entry);
      return;
    }
    entry.orphan = this.orphans.get(reader.name);
    this.orphans.delete(reader.name);
    this.readers.set(reader.name, entry);
    this.retryAttempts = 0;
    reader.on('status', (status) => this.onStatus(entry, status.state));
    reader.on('end', () => this.onReaderEnd(entry));
    this.log.info({ event: 'pcsc_reader_added', reader: entry.label }, 'card reader added');
    this.reselect();
  }

  private onReaderError(entry: ReaderEntry, error: unknown): void {
    const code = parseScardCode(error);
    if (code === Scard.CANCELLED) return;
    const variant = code === undefined ? 'UnknownError' : scardVariant(code, this.platform);
    // A lost service is reported on the context too and handled there; remembered for the exchange it ends.
    if (code !== undefined && CONTEXT_LOST_CODES.has(code)) {
      entry.failure = variant;
      return;
    }
    this.log.warn({ event: 'pcsc_reader_error', reader: entry.label, variant }, 'card reader error');
  }

  private onReaderEnd(entry: ReaderEntry): void {
    if (this.readers.get(entry.name) !== entry) return;
    this.readers.delete(entry.name);
    this.log.info({ event: 'pcsc_reader_removed', reader: entry.label }, 'card reader removed');
    // Unplugged (SCARD_E_READER_UNAVAILABLE's variant), unless the service went away under it.
    void this.retireReader(entry, entry.failure ?? 'ReaderUnavailable', entry.failure !== undefined);
    this.reselect();
  }

  /**
   * Forgets a reader: an exchange in flight fails with `variant`; its presence ends, or with `keepPresence`
   * (the service went away, the phone may well still lie there) waits for the next context's first report.
   */
  private async retireReader(entry: ReaderEntry, variant: string, keepPresence = false): Promise<void> {
    const presence = entry.presence;
    entry.presence = undefined;
    if (presence && keepPresence) this.orphans.set(entry.name, presence);
    else presence?.remove();
    entry.connection?.lose(variant, `the card reader went away (${variant})`);
    await this.dropHandle(entry);
    await this.closeBindingReader(entry);
  }

  /**
   * Closes a binding object on a later macrotask, never from inside one of its own events: a binding may hold
   * a native lock while it emits them (pcsclite 1.0.1 did, and `close()` under it deadlocked the JS thread).
   * `setImmediate` runs after any such lock was released.
   */
  private closeLater(what: string, target: { close(): void }): Promise<void> {
    return new Promise((resolve) => {
      setImmediate(() => {
        try {
          target.close();
        } catch (e) {
          this.log.debug({ event: 'pcsc_close_failed', what, detail: errorMessage(e) }, `closing the ${what} failed`);
        }
        resolve();
      });
    });
  }

  /**
   * Closes a reader's binding object. `close()` takes the binding's reader mutex on the JS thread, which a
   * stuck transmit holds until the card leaves: then the close happens once the transmit has returned.
   */
  private closeBindingReader(entry: ReaderEntry): Promise<void> {
    if (entry.transmits === 0) return this.closeLater('reader', entry.binding);
    this.log.warn({ event: 'pcsc_reader_close_deferred', reader: entry.label }, 'an exchange with the card has not returned; the reader is closed once it does');
    void entry.idle().then(() => this.closeLater('reader', entry.binding));
    return Promise.resolve();
  }

  private reselect(): void {
    const name = chooseReader(this.readers.keys(), this.selector);
    const label = name === undefined ? undefined : this.readers.get(name)?.label;
    if (name !== this.activeName) {
      this.activeName = name;
      if (label !== undefined) this.log.info({ event: 'pcsc_reader_selected', reader: label }, 'using card reader');
    }
    if (this.closed) return;
    if (this.context === undefined) return; // availability is set by whoever dropped the context
    this.notifier.set(
      label === undefined
        ? { usable: false, reason: 'no_reader', detail: `waiting for ${this.selector.description}` }
        : { usable: true, detail: `reader ${label}` },
    );
    this.offerPresence();
  }

  private sweepOrphans(): void {
    for (const orphan of this.orphans.values()) orphan.remove();
    this.orphans.clear();
    for (const entry of this.readers.values()) {
      entry.orphan?.remove();
      entry.orphan = undefined;
    }
  }

  private activeEntry(): ReaderEntry | undefined {
    return this.activeName === undefined ? undefined : this.readers.get(this.activeName);
  }

  // ------------------------------------------------------------------ presence

  private onStatus(entry: ReaderEntry, state: number): void {
    if (this.readers.get(entry.name) !== entry) return;
    entry.state = state;
    const present = (state & ReaderState.PRESENT) !== 0 && (state & ReaderState.MUTE) === 0;
    const orphan = entry.orphan;
    entry.orphan = undefined;
    if (orphan && !orphan.removed) {
      if (present) {
        // The phone that lay there before the service restarted: the same presence (handed out or not).
        orphan.counter = eventCounter(state); // a restarted pcscd counts from zero again
        entry.presence = orphan;
        this.offerPresence();
        return;
      }
      orphan.remove();
    }
    const current = entry.presence;
    if (!present) {
      if (current) {
        current.remove();
        entry.presence = undefined;
        this.log.debug({ event: 'pcsc_card_removed', reader: entry.label, presence: current.id }, 'card left the reader');
      }
      entry.connection?.lose('RemovedCard', 'the card left the reader');
      if ((state & ReaderState.EMPTY) !== 0) void this.dropHandle(entry);
      return;
    }
    // INUSE/EXCLUSIVE toggles keep the presence; a jump of two or more in the insertion counter means the
    // card was removed and inserted again between two reports.
    if (current && ((eventCounter(state) - current.counter) & 0xffff) < 2) return;
    if (current) {
      current.remove();
      entry.connection?.lose('RemovedCard', 'the card was replaced');
    }
    const presence = new Presence(this.nextPresenceId++, entry, eventCounter(state));
    entry.presence = presence;
    this.log.debug({ event: 'pcsc_card_present', reader: entry.label, presence: presence.id }, 'card on the reader');
    this.offerPresence();
  }

  private waitForPresence(signal: AbortSignal): Promise<Presence> {
    if (this.closed) return Promise.reject(new Error('the PC/SC reader is closed'));
    if (signal.aborted) return Promise.reject(abortedError('NFC nextCard'));
    const ready = this.offerablePresence();
    if (ready) {
      ready.handedOut = true; // at once: a concurrent call must not get the same presence
      return Promise.resolve(ready);
    }
    return new Promise<Presence>((resolve, reject) => {
      const onAbort = (): void => {
        this.waiters.delete(waiter);
        reject(abortedError('NFC nextCard'));
      };
      const waiter: PresenceWaiter = {
        resolve: (presence) => {
          signal.removeEventListener('abort', onAbort);
          resolve(presence);
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      this.waiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private offerablePresence(): Presence | undefined {
    const presence = this.activeEntry()?.presence;
    return presence && !presence.removed && !presence.handedOut ? presence : undefined;
  }

  /** Hands a new presence to one waiting `nextCard`. */
  private offerPresence(): void {
    const presence = this.offerablePresence();
    if (!presence) return;
    const [waiter] = this.waiters;
    if (!waiter) return;
    this.waiters.delete(waiter);
    presence.handedOut = true;
    waiter.resolve(presence);
  }

  // ------------------------------------------------------------------ handles

  private connect(presence: Presence): Promise<PcscCard> {
    const entry = presence.reader;
    return entry.serialise(async () => {
      if (presence.removed) throw new NfcTransmitError('RemovedCard', 'the card left before it was connected');
      // A transmit still stuck on this reader (a mute card) holds the binding's reader mutex; SCardConnect
      // would queue behind it.
      await withDeadline(entry.idle(), this.opts.connectTimeoutMs, undefined, 'an earlier exchange on the reader has not returned');
      await this.dropHandle(entry, true);
      const reader = entry.binding;
      const shareMode = this.opts.shareMode === 'exclusive' ? reader.SCARD_SHARE_EXCLUSIVE : reader.SCARD_SHARE_SHARED;
      const protocols =
        this.opts.protocol === 'T0' ? reader.SCARD_PROTOCOL_T0 : this.opts.protocol === 'T1' ? reader.SCARD_PROTOCOL_T1 : reader.SCARD_PROTOCOL_T0 | reader.SCARD_PROTOCOL_T1;
      const protocol = await nativeCall<number>((done) => reader.connect({ share_mode: shareMode, protocol: protocols }, done), {
        timeoutMs: this.opts.connectTimeoutMs,
        what: 'SCardConnect',
        // A handle that arrives after we gave up is dropped, or it would block the next connect; but not
        // once a newer connect holds the reader (the binding keeps one handle per reader: dropping would
        // end the newer card's).
        onLateSuccess: () =>
          void entry.serialise(async () => {
            if (entry.connection === undefined) await this.dropHandle(entry, true);
          }),
      });
      if (typeof protocol !== 'number') {
        // The binding answers (undefined, undefined) while it still holds a stale handle of this reader
        await this.dropHandle(entry, true);
        throw new NfcTransmitError('InvalidHandle', 'the binding returned no protocol');
      }
      if (presence.hasLeft() || this.closed) {
        await this.dropHandle(entry, true);
        throw new NfcTransmitError('RemovedCard', 'the card left while being connected');
      }
      const connection = new Connection(this.nextConnectionId++, entry, presence, protocol);
      entry.connection = connection;
      this.log.debug({ event: 'pcsc_card_connected', reader: entry.label, presence: presence.id, handle: connection.id, protocol }, 'card connected');
      return new PcscCard(connection, {
        transmit: (command, options) => this.transmit(connection, command, options),
        release: () => this.release(connection),
      });
    });
  }

  /** Drops the reader's handle (LEAVE_CARD), bounded; never rejects. `serialised` = already inside `serialise`. */
  private dropHandle(entry: ReaderEntry, serialised = false): Promise<void> {
    const drop = async (): Promise<void> => {
      entry.connection?.lose('InvalidHandle', 'the card handle was released');
      entry.connection = undefined;
      const reader = entry.binding;
      if (!reader.connected) return;
      if (entry.transmits > 0) {
        // SCardDisconnect would wait for the stuck transmit on the binding's reader mutex (holding a second
        // worker thread): drop the handle once the transmit has returned, unless a newer one exists by then.
        void entry.idle().then(() =>
          entry.serialise(async () => {
            if (entry.connection === undefined) await this.dropHandle(entry, true);
          }),
        );
        return;
      }
      try {
        await nativeCall<undefined>((done) => reader.disconnect(reader.SCARD_LEAVE_CARD, done), { timeoutMs: this.opts.disconnectTimeoutMs, what: 'SCardDisconnect' });
      } catch (e) {
        this.log.debug({ event: 'pcsc_disconnect_failed', reader: entry.label, variant: this.variantOf(e) }, 'dropping the card handle failed');
      }
    };
    return serialised ? drop() : entry.serialise(drop);
  }

  /** Releases one card's handle if it is still the reader's current one. */
  private release(connection: Connection): Promise<void> {
    const entry = connection.entry;
    return entry.serialise(async () => {
      connection.lose('InvalidHandle', 'the card handle was released');
      if (entry.connection === connection) await this.dropHandle(entry, true);
    });
  }

  /** Exchanges on one handle run one after another (the relay sends one at a time anyway). */
  private transmit(connection: Connection, command: Uint8Array, options: TransmitOptions): Promise<Uint8Array> {
    const run = connection.queue.then(() => this.exchange(connection, command, options));
    connection.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async exchange(connection: Connection, command: Uint8Array, options: TransmitOptions): Promise<Uint8Array> {
    const entry = connection.entry;
    const started = performance.now();
    try {
      this.checkUsable(connection, options.signal);
      // A native transmit still running after an earlier timeout holds the reader: wait for it, bounded.
      await withDeadline(entry.idle(), options.timeoutMs, options.signal, 'the previous exchange with the card has not returned');
      // Checked again: the card may have left, or a newer card taken the reader, while this one waited.
      this.checkUsable(connection, options.signal);
      const remaining = Math.max(1, options.timeoutMs - (performance.now() - started));
      return await this.nativeTransmit(connection, command, options, remaining);
    } catch (e) {
      if (e instanceof NfcTransmitError) {
        // After a failed exchange the handle is not trusted again; a re-tap gets a fresh one.
        connection.lose(e.reason, e.message);
        void this.release(connection);
      }
      throw e;
    }
  }

  private checkUsable(connection: Connection, signal: AbortSignal): void {
    if (connection.lost !== undefined) {
      throw connection.presence.removed
        ? new NfcTransmitError('RemovedCard', 'the card is no longer on the reader')
        : new NfcTransmitError('InvalidHandle', `the card handle is no longer valid (${connection.lost})`);
    }
    if (signal.aborted) throw abortedError('NFC transmit');
  }

  private nativeTransmit(connection: Connection, command: Uint8Array, options: TransmitOptions, timeoutMs: number): Promise<Uint8Array> {
    const entry = connection.entry;
    const reader = entry.binding;
    return new Promise<Uint8Array>((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        options.signal.removeEventListener('abort', onAbort);
        connection.failInFlight = undefined;
      };
      const onAbort = (): void => {
        finish();
        reject(abortedError('NFC transmit'));
      };
      connection.failInFlight = (error) => {
        finish();
        reject(error);
      };
      const timer = setTimeout(() => {
        finish();
        reject(new NfcTransmitError('Timeout', `the card did not answer within ${options.timeoutMs} ms`));
      }, timeoutMs);
      options.signal.addEventListener('abort', onAbort, { once: true });
      let returned = false;
      const nativeReturned = (): boolean => {
        if (returned) return false;
        returned = true;
        entry.transmitEnded();
        return connection.failInFlight !== undefined; // false: already settled (timeout, abort, removal)
      };
      entry.transmitStarted();
      try {
        reader.transmit(Buffer.from(command.buffer, command.byteOffset, command.byteLength), RECEIVE_BUFFER_BYTES, connection.protocol, (error, data) => {
          if (!nativeReturned()) return;
          finish();
          if (error) reject(this.transmitError(connection, error));
          else if (!data || data.length < 2) reject(new NfcTransmitError('UnresponsiveCard', 'the response has no status word'));
          else if (data.length > RECEIVE_BUFFER_BYTES) reject(oversizeResponse(data.length));
          else resolve(data);
        });
      } catch (e) {
        nativeReturned();
        finish();
        reject(this.transmitError(connection, e));
      }
    });
  }

  private transmitError(connection: Connection, error: unknown): NfcTransmitError {
    const code = parseScardCode(error);
    if (code !== undefined) return new NfcTransmitError(scardVariant(code, this.platform), `SCardTransmit failed (${formatScardCode(code)})`);
    if (/not connected/i.test(errorMessage(error))) {
      return connection.presence.removed
        ? new NfcTransmitError('RemovedCard', 'the card is no longer on the reader')
        : new NfcTransmitError('InvalidHandle', 'the reader holds no handle for the card');
    }
    return new NfcTransmitError('UnknownError', `SCardTransmit failed: ${errorMessage(error)}`);
  }

  private variantOf(e: unknown): string {
    if (e instanceof NfcTransmitError) return e.reason;
    if (e instanceof NativeCallTimeout) return 'Timeout';
    const code = parseScardCode(e);
    return code === undefined ? 'UnknownError' : scardVariant(code, this.platform);
  }
}
