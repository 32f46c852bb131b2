/**
 * The kiosk's `NfcReader` port wired to virtual phones: stands where the PC/SC adapter stands, so the
 * relay runs NFC engagement end to end with no hardware. A test or QA "taps" a phone's tag on it and lifts
 * it again; the kiosk sees card presences and exchanges APDUs with the tag's `processApdu`.
 *
 * Port contract (src/devices/ports.ts) and how it is met:
 * - each tap is one presence, handed out by `nextCard` once, connected with a fresh handle (a counter);
 *   a presence that began before the call and was not handed out yet is offered at once;
 *   `ignoreCurrentCard()` marks the phone lying on the reader as handed out;
 * - `transmit` answers asynchronously (next macrotask, or after `latencyMs`), like a reader; it honours
 *   `timeoutMs` (→ `Timeout`) and `signal` (→ an abort error); a released handle → `InvalidHandle`, a
 *   phone no longer on the reader → `RemovedCard`; a response shorter than SW1 SW2 → `UnresponsiveCard`;
 * - a field drop (the tag throws `NfcFieldLostError`, behaviour "NFC field drop at APDU n") rejects with
 *   `fieldDropReason` (`RemovedCard` by default, or `NotTransacted`) and ends that presence: the phone has
 *   left the field and must be tapped again (`tap(tag)` anew) for the kiosk to get a new card;
 * - `waitForRemoval` resolves once the presence ended (lift, re-tap of another phone, field drop).
 * Any other exception from the tag surfaces as `CommError`.
 */
import { NfcFieldLostError, type VirtualNfcTag } from '../sim/virtual-wallet/nfc-tag.js';
import {
  MAX_RAPDU_BYTES,
  NfcTransmitError,
  type Availability,
  type NfcCard,
  type NfcReader,
  type TransmitOptions,
} from '../../devices/ports.js';
import { AvailabilityNotifier } from '../../devices/shared/availability.js';
import { abortedError } from './support.js';
import { errorText } from '../../common/error-text.js';

export type FieldDropReason = 'RemovedCard' | 'NotTransacted';

export interface VirtualNfcReaderOptions {
  readonly availability?: Availability;
  /** The PC/SC variant a field drop surfaces as (spec §7.3: both are recoverable). Default `RemovedCard`. */
  readonly fieldDropReason?: FieldDropReason;
  /** Time the reader takes per APDU exchange, ms (default 0: the next macrotask). */
  readonly latencyMs?: number;
}

class Presence {
  present = true;
  handedOut = false;
  private readonly removalListeners = new Set<() => void>();

  constructor(
    readonly id: number,
    readonly tag: VirtualNfcTag,
  ) {}

  remove(): void {
    if (!this.present) return;
    this.present = false;
    try {
      this.tag.fieldOff();
    } finally {
      for (const listener of [...this.removalListeners]) listener();
      this.removalListeners.clear();
    }
  }

  onRemoval(listener: () => void): () => void {
    this.removalListeners.add(listener);
    return () => this.removalListeners.delete(listener);
  }
}

export class VirtualNfcReader implements NfcReader {
  private current: Presence | undefined;
  private readonly waiters: ((presence: Presence) => void)[] = [];
  private readonly availabilityState: AvailabilityNotifier;
  private nextPresenceId = 1;
  private handles = 0;
  private closed = false;

  constructor(private readonly options: VirtualNfcReaderOptions = {}) {
    this.availabilityState = new AvailabilityNotifier(options.availability ?? { usable: true });
    const latency = options.latencyMs ?? 0;
    if (!Number.isFinite(latency) || latency < 0) throw new RangeError(`latencyMs must be ≥ 0, got ${latency}`);
  }

  availability(): Availability {
    return this.availabilityState.current;
  }

  onAvailabilityChange(listener: (availability: Availability) => void): () => void {
    return this.availabilityState.onChange(listener);
  }

  /** Sets what `availability()` reports (QA: "reader unplugged"). */
  setAvailability(availability: Availability): void {
    this.availabilityState.set(availability);
  }

  /** Puts a phone on the reader: a new presence (a phone already there is lifted first). */
  tap(tag: VirtualNfcTag): void {
    if (this.closed) throw new Error('the virtual NFC reader is closed');
    this.current?.remove();
    const presence = new Presence(this.nextPresenceId++, tag);
    this.current = presence;
    tag.fieldOn();
    const waiter = this.waiters.shift();
    if (waiter !== undefined) waiter(presence);
  }

  /** Takes the phone off the reader. */
  lift(): void {
    this.current?.remove();
  }

  /** Whether a phone is on the reader now. */
  get phonePresent(): boolean {
    return this.current?.present === true;
  }

  /** Card handles handed out so far. */
  get handlesIssued(): number {
    return this.handles;
  }

  nextCard(signal: AbortSignal): Promise<NfcCard> {
    if (this.closed) return Promise.reject(new Error('the virtual NFC reader is closed'));
    if (signal.aborted) return Promise.reject(abortedError('NFC nextCard'));
    const current = this.current;
    if (current?.present === true && !current.handedOut) return Promise.resolve(this.connect(current));
    return new Promise<NfcCard>((resolve, reject) => {
      const waiter = (presence: Presence): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(this.connect(presence));
      };
      const onAbort = (): void => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(abortedError('NFC nextCard'));
      };
      this.waiters.push(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  ignoreCurrentCard(): void {
    if (this.current?.present === true) this.current.handedOut = true;
  }

  /** Lifts any phone; pending `nextCard` calls stay pending until their signals abort. */
  close(): Promise<void> {
    this.closed = true;
    this.current?.remove();
    return Promise.resolve();
  }

  private connect(presence: Presence): NfcCard {
    presence.handedOut = true;
    return new VirtualNfcCard(presence, ++this.handles, this.options.fieldDropReason ?? 'RemovedCard', this.options.latencyMs ?? 0);
  }
}

class VirtualNfcCard implements NfcCard {
  private released = false;

  constructor(
    private readonly presence: Presence,
    /** The PC/SC-like handle of this connection (fresh per presence). */
    readonly handle: number,
    private readonly fieldDropReason: FieldDropReason,
    private readonly latencyMs: number,
  ) {}

  get present(): boolean {
    return this.presence.present;
  }

  transmit(command: Uint8Array, options: TransmitOptions): Promise<Uint8Array> {
    if (this.released) return Promise.reject(new NfcTransmitError('InvalidHandle', 'the card handle was released'));
    if (!this.presence.present) return Promise.reject(new NfcTransmitError('RemovedCard', 'the phone is no longer on the reader'));
    if (options.signal.aborted) return Promise.reject(abortedError('NFC transmit'));
    const copy = Uint8Array.from(command);
    return new Promise<Uint8Array>((resolve, reject) => {
      let immediate: NodeJS.Immediate | undefined;
      let timer: NodeJS.Timeout | undefined;
      let deadline: NodeJS.Timeout | undefined;
      const cleanup = (): void => {
        if (immediate !== undefined) clearImmediate(immediate);
        if (timer !== undefined) clearTimeout(timer);
        if (deadline !== undefined) clearTimeout(deadline);
        options.signal.removeEventListener('abort', onAbort);
        stopRemoval();
      };
      const fail = (error: Error): void => {
        cleanup();
        reject(error);
      };
      const onAbort = (): void => fail(abortedError('NFC transmit'));
      const stopRemoval = this.presence.onRemoval(() =>
        fail(new NfcTransmitError('RemovedCard', 'the phone left the reader during the exchange')),
      );
      const exchange = (): void => {
        cleanup();
        if (this.released) {
          reject(new NfcTransmitError('InvalidHandle', 'the card handle was released'));
          return;
        }
        let response: Uint8Array;
        try {
          response = this.presence.tag.processApdu(copy);
        } catch (error) {
          if (error instanceof NfcFieldLostError) {
            this.presence.remove();
            reject(new NfcTransmitError(this.fieldDropReason, error.message));
          } else {
            reject(new NfcTransmitError('CommError', `the phone failed to answer: ${errorText(error)}`));
          }
          return;
        }
        if (response.length < 2) {
          reject(new NfcTransmitError('UnresponsiveCard', `response of ${response.length} byte(s) without a status word`));
          return;
        }
        if (response.length > MAX_RAPDU_BYTES) {
          reject(
            new NfcTransmitError('InsufficientBuffer', `response of ${response.length} bytes, above the ${MAX_RAPDU_BYTES} of an R-APDU`),
          );
          return;
        }
        resolve(Uint8Array.from(response));
      };
      options.signal.addEventListener('abort', onAbort, { once: true });
      if (this.latencyMs > 0) timer = setTimeout(exchange, this.latencyMs);
      else immediate = setImmediate(exchange);
      if (Number.isFinite(options.timeoutMs) && options.timeoutMs <= this.latencyMs) {
        deadline = setTimeout(
          () => fail(new NfcTransmitError('Timeout', `no answer within ${options.timeoutMs} ms`)),
          Math.max(0, options.timeoutMs),
        );
      }
    });
  }

  waitForRemoval(signal: AbortSignal): Promise<void> {
    if (!this.presence.present) return Promise.resolve();
    if (signal.aborted) return Promise.reject(abortedError('NFC waitForRemoval'));
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        stop();
        reject(abortedError('NFC waitForRemoval'));
      };
      const stop = this.presence.onRemoval(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  release(): Promise<void> {
    this.released = true;
    return Promise.resolve();
  }
}
