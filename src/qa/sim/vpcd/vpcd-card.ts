/**
 * A virtual contactless card on a vpcd reader (vsmartcard's virtual reader driver loaded by pcscd): puts a
 * virtual phone's NFC tag behind a real PC/SC stack, so the kiosk's PC/SC adapter can be tested with no reader
 * hardware. The card is vpcd's TCP client: connected = card inserted, socket closed = card removed.
 *
 *   const card = new VpcdCard({ ...parseHostPort('127.0.0.1:35963'), log: console.log });
 *   await card.insert(phone.tag());     // tap
 *   await card.reinsert(tag);           // lift, wait ≥ 600 ms, lay it down again (same presentation)
 *   await card.remove();                // take the phone away
 *
 * Decisions:
 * - Power off / power on / reset from vpcd are logged and otherwise ignored. A phone's HCE session is tied
 *   to the RF field, which here is the connection: pcscd powers the card up when it first sees it and may
 *   power it down when idle, and neither means the phone left the reader. Only remove/insert restart the
 *   tag (`fieldOff()` / `fieldOn()`).
 * - A tag throwing NfcFieldLostError makes the card leave the reader without answering that APDU, as a
 *   real field drop looks to the reader (the binding then gets an empty response or "card removed"). Any
 *   other exception is answered with SW 6F00 and reported.
 * - GET ATR is always answered, muted or not: pcscd polls it for presence about every 400 ms.
 * - pcscd misses a removal followed by an insert within its poll interval, so an insert waits until
 *   `minAwayMs` (default 600) have passed since the last removal, whatever removed the card.
 * - Events and log lines show at most CLA INS P1 P2, lengths and the status word (see vpcd-events.ts).
 * - Socket errors never throw: they are reported and the card counts as removed.
 */
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { NfcFieldLostError, type VirtualNfcTag } from '../virtual-wallet/nfc-tag.js';
import { formatHostPort } from './vpcd-address.js';
import { apduHeader, describeVpcdEvent, statusWord, type VpcdCardEvent, type VpcdRemovalCause } from './vpcd-events.js';
import { CONTACTLESS_ATR, VPCD_MAX_PAYLOAD, VpcdControl, VpcdFrameDecoder, encodeVpcdFrame } from './vpcd-framing.js';

export {
  parseHostPort,
  formatHostPort,
  VpcdAddressError,
  VPCD_DEFAULT_HOST,
  VPCD_DEFAULT_PORT,
  type VpcdReaderAddress,
} from './vpcd-address.js';
export { describeVpcdEvent, type VpcdCardEvent, type VpcdRemovalCause } from './vpcd-events.js';
export { CONTACTLESS_ATR } from './vpcd-framing.js';

export interface VpcdCardOptions {
  readonly host: string;
  readonly port: number;
  /** Default 3B80800101 (ISO 14443-4 contactless card). */
  readonly atr?: Uint8Array;
  /** Default 5000 ms. */
  readonly connectTimeoutMs?: number;
  /** Least time between a removal and the next insert, so pcscd notices the removal (default 600 ms). */
  readonly minAwayMs?: number;
  /** Every event (QA output, tests). */
  readonly onEvent?: (event: VpcdCardEvent) => void;
  /** One line per event (`describeVpcdEvent`). */
  readonly log?: (line: string) => void;
}

/** Why an insert could not connect; `code` tells refused, timeout, cancelled (by remove) or other. */
export class VpcdConnectError extends Error {
  override readonly name = 'VpcdConnectError';
  constructor(
    message: string,
    readonly code: 'refused' | 'timeout' | 'cancelled' | 'other',
  ) {
    super(message);
  }
}

const SW_NO_PRECISE_DIAGNOSIS = Uint8Array.of(0x6f, 0x00);
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_MIN_AWAY_MS = 600;
/** After a removal the socket is ended gracefully (earlier answers still go out); this bounds the wait. */
const CLOSE_GRACE_MS = 1_000;

/** One insertion: a connection and the tag on it. */
interface Insertion {
  readonly socket: Socket;
  readonly tag: VirtualNfcTag;
  readonly decoder: VpcdFrameDecoder;
  readonly closed: Promise<void>;
  apdus: number;
  error: Error | undefined;
}

/** An insert under way (waiting out `minAwayMs`, or connecting), which `remove()` can cancel. */
interface PendingInsert {
  cancelled: boolean;
  cancel: () => void;
  settled: Promise<unknown>;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a number ≥ 0, got ${value}`);
  return value;
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a number > 0, got ${value}`);
  return value;
}

function errorText(e: unknown): string {
  const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

export class VpcdCard {
  readonly host: string;
  readonly port: number;
  readonly atr: Uint8Array;
  readonly #connectTimeoutMs: number;
  readonly #minAwayMs: number;
  readonly #onEvent: ((event: VpcdCardEvent) => void) | undefined;
  readonly #log: ((line: string) => void) | undefined;
  #current: Insertion | undefined;
  #pending: PendingInsert | undefined;
  #lastClosed: Promise<void> = Promise.resolve();
  #removedAt = Number.NEGATIVE_INFINITY;
  #muted = false;
  #apdus = 0;
  #atrRequests = 0;

  constructor(options: VpcdCardOptions) {
    if (options.host === '') throw new RangeError('VpcdCard needs a host');
    if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65535)
      throw new RangeError(`VpcdCard port must be 1..65535, got ${options.port}`);
    const atr = options.atr ?? CONTACTLESS_ATR;
    // ISO 7816-3: an ATR is TS T0 and at most 31 more bytes.
    if (atr.length < 2 || atr.length > 33) throw new RangeError(`an ATR has 2 to 33 bytes, got ${atr.length}`);
    this.host = options.host;
    this.port = options.port;
    this.atr = Uint8Array.from(atr);
    this.#connectTimeoutMs = positive('connectTimeoutMs', options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
    this.#minAwayMs = nonNegative('minAwayMs', options.minAwayMs ?? DEFAULT_MIN_AWAY_MS);
    this.#onEvent = options.onEvent;
    this.#log = options.log;
  }

  /** `host:port` of the vpcd reader. */
  get address(): string {
    return formatHostPort(this);
  }

  /** Whether the card is on the reader (connected to vpcd). */
  get inserted(): boolean {
    return this.#current !== undefined;
  }

  /** C-APDUs received over the card's life (muted and field-lost ones included). */
  get apdus(): number {
    return this.#apdus;
  }

  /** GET ATR requests answered (pcscd's presence polls). */
  get atrRequests(): number {
    return this.#atrRequests;
  }

  get muted(): boolean {
    return this.#muted;
  }

  /** Muted, the card leaves C-APDUs unanswered (still answering GET ATR, so it stays present). */
  setMute(muted: boolean): void {
    this.#muted = muted;
  }

  /**
   * Lays the tag on the reader: waits out `minAwayMs` since the last removal, connects, then calls
   * `tag.fieldOn()`. Rejects with VpcdConnectError when vpcd cannot be reached or `remove()` cancels it.
   */
  insert(tag: VirtualNfcTag): Promise<void> {
    return this.#insert(tag, undefined);
  }

  /** Takes the card off the reader (closes the connection, `tag.fieldOff()`); idempotent. */
  async remove(): Promise<void> {
    const pending = this.#pending;
    if (pending !== undefined) {
      pending.cancel();
      await pending.settled;
    }
    const current = this.#current;
    if (current !== undefined) this.#detach(current, 'removed');
    await this.#lastClosed;
  }

  /** A re-tap: remove, keep the card away `awayMs` (default `minAwayMs`), insert `tag` again. */
  async reinsert(tag: VirtualNfcTag, options: { readonly awayMs?: number } = {}): Promise<void> {
    const awayMs = nonNegative('awayMs', options.awayMs ?? this.#minAwayMs);
    await this.remove();
    await this.#insert(tag, awayMs);
  }

  async #insert(tag: VirtualNfcTag, awayMs: number | undefined): Promise<void> {
    if (this.#current !== undefined || this.#pending !== undefined) {
      throw new Error(`a card is already on (or going on) the vpcd reader at ${this.address}: remove() it first, or reinsert()`);
    }
    let finish: () => void = () => undefined;
    const pending: PendingInsert = {
      cancelled: false,
      cancel: () => undefined,
      settled: new Promise<void>((resolve) => (finish = resolve)),
    };
    pending.cancel = () => {
      pending.cancelled = true;
    };
    this.#pending = pending;
    try {
      const wait = awayMs ?? this.#removedAt + this.#minAwayMs - performance.now();
      if (wait > 0) await this.#sleep(wait, pending);
      if (pending.cancelled) throw new VpcdConnectError('insert cancelled by remove()', 'cancelled');
      await this.#connect(pending, tag);
    } finally {
      this.#pending = undefined;
      finish();
    }
  }

  #sleep(ms: number, pending: PendingInsert): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      pending.cancel = () => {
        pending.cancelled = true;
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Connects and attaches the tag in the same tick, so no socket event can come in between. */
  #connect(pending: PendingInsert, tag: VirtualNfcTag): Promise<void> {
    const address = this.address;
    return new Promise<void>((resolve, reject) => {
      const socket = connect({ host: this.host, port: this.port, noDelay: true });
      const fail = (error: VpcdConnectError): void => {
        clearTimeout(timer);
        socket.removeAllListeners();
        socket.on('error', () => undefined);
        socket.destroy();
        reject(error);
      };
      const timer = setTimeout(() => {
        fail(new VpcdConnectError(`no answer from vpcd at ${address} within ${this.#connectTimeoutMs} ms`, 'timeout'));
      }, this.#connectTimeoutMs);
      pending.cancel = () => {
        pending.cancelled = true;
        fail(new VpcdConnectError('insert cancelled by remove()', 'cancelled'));
      };
      socket.once('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'ECONNREFUSED')
          fail(new VpcdConnectError(`no vpcd reader listening on ${address} — is pcscd with vsmartcard-vpcd running?`, 'refused'));
        else fail(new VpcdConnectError(`cannot connect to vpcd at ${address}: ${e.message}`, 'other'));
      });
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        pending.cancel = () => {
          pending.cancelled = true;
        };
        try {
          this.#attach(socket, tag);
          resolve();
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      });
    });
  }

  #attach(socket: Socket, tag: VirtualNfcTag): void {
    let closed: () => void = () => undefined;
    const insertion: Insertion = {
      socket,
      tag,
      decoder: new VpcdFrameDecoder(),
      closed: new Promise<void>((resolve) => (closed = resolve)),
      apdus: 0,
      error: undefined,
    };
    // Listeners first: a socket without an 'error' listener would crash the process.
    socket.on('error', (e) => {
      insertion.error ??= e;
      this.#emit({ type: 'socket_error', error: e.message });
    });
    socket.on('close', () => {
      if (this.#current === insertion)
        this.#detach(insertion, insertion.error ? 'socket_error' : 'reader_closed', insertion.error?.message);
      closed();
    });
    socket.on('data', (chunk: Buffer) => {
      this.#onData(insertion, chunk);
    });
    this.#current = insertion;
    this.#lastClosed = insertion.closed;
    try {
      tag.fieldOn();
    } catch (e) {
      this.#detach(insertion, 'removed', `tag.fieldOn() failed: ${errorText(e)}`);
      throw e;
    }
    this.#emit({ type: 'connected', address: this.address });
  }

  /** The card leaves the reader: no more answers, the tag's field goes off, the socket is closed. */
  #detach(insertion: Insertion, cause: VpcdRemovalCause, detail?: string): void {
    if (this.#current !== insertion) return;
    this.#current = undefined;
    this.#removedAt = performance.now();
    const { socket } = insertion;
    if (!socket.destroyed) {
      // end() rather than destroy(): answers already written still reach vpcd before the FIN.
      const force = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
      force.unref();
      socket.end(() => {
        clearTimeout(force);
        socket.destroy();
      });
    }
    try {
      insertion.tag.fieldOff();
    } catch (e) {
      this.#emit({ type: 'tag_error', error: `tag.fieldOff() failed: ${errorText(e)}` });
    }
    this.#emit({ type: 'removed', cause, address: this.address, apdus: insertion.apdus, ...(detail === undefined ? {} : { detail }) });
  }

  #onData(insertion: Insertion, chunk: Uint8Array): void {
    if (this.#current !== insertion) return;
    for (const frame of insertion.decoder.push(chunk)) {
      // A field drop earlier in this chunk removed the card: the rest is for nobody.
      if (this.#current !== insertion) return;
      this.#onFrame(insertion, frame);
    }
  }

  #onFrame(insertion: Insertion, frame: Uint8Array): void {
    // An empty frame carries nothing to answer.
    if (frame.length === 0) return;
    if (frame.length === 1) {
      this.#onControl(insertion, frame[0] ?? 0);
      return;
    }
    this.#onApdu(insertion, frame);
  }

  #onControl(insertion: Insertion, byte: number): void {
    switch (byte) {
      case VpcdControl.GET_ATR:
        this.#atrRequests++;
        this.#send(insertion, this.atr);
        return;
      case VpcdControl.POWER_OFF:
        this.#emit({ type: 'power', control: 'power_off' });
        return;
      case VpcdControl.POWER_ON:
        this.#emit({ type: 'power', control: 'power_on' });
        return;
      case VpcdControl.RESET:
        this.#emit({ type: 'power', control: 'reset' });
        return;
      default:
        this.#emit({ type: 'unknown_control', byte });
    }
  }

  #onApdu(insertion: Insertion, command: Uint8Array): void {
    const number = ++this.#apdus;
    insertion.apdus++;
    const header = apduHeader(command);
    if (this.#muted) {
      this.#emit({ type: 'apdu_muted', number, header, commandLength: command.length });
      return;
    }
    let response: Uint8Array;
    try {
      response = insertion.tag.processApdu(command);
    } catch (e) {
      if (e instanceof NfcFieldLostError) {
        this.#emit({ type: 'field_lost', number, header, commandLength: command.length });
        this.#detach(insertion, 'field_lost', `at APDU #${number}`);
        return;
      }
      this.#emit({ type: 'tag_error', number, header, error: errorText(e) });
      response = SW_NO_PRECISE_DIAGNOSIS;
    }
    if (response.length < 2 || response.length > VPCD_MAX_PAYLOAD) {
      this.#emit({ type: 'tag_error', number, header, error: `the tag answered ${response.length} bytes (need 2..${VPCD_MAX_PAYLOAD})` });
      response = SW_NO_PRECISE_DIAGNOSIS;
    }
    this.#send(insertion, response);
    this.#emit({ type: 'apdu', number, header, commandLength: command.length, responseLength: response.length, sw: statusWord(response) });
  }

  #send(insertion: Insertion, payload: Uint8Array): void {
    const { socket } = insertion;
    if (socket.destroyed || !socket.writable) return;
    socket.write(encodeVpcdFrame(payload));
  }

  #emit(event: VpcdCardEvent): void {
    // A failing observer must not break the card.
    try {
      this.#onEvent?.(event);
    } catch {
      /* ignored */
    }
    try {
      this.#log?.(describeVpcdEvent(event));
    } catch {
      /* ignored */
    }
  }
}
