/**
 * A scripted double of the adapter's binding port, modelled on the `pcsclite` binding as it behaves against pcscd + vpcd
 * against pcscd (the shape the port keeps; `smartcard-binding.ts` gives the same events and error format):
 * errors are plain `Error`s whose message ends in `(0x8010xxxx)`, status words carry the insertion counter
 * in their upper half, `connect` on a reader that still holds a handle answers `(undefined, undefined)`,
 * a killed service makes every reader emit an error and `end` and the context emit an error, and `close()`
 * emits "Command cancelled" afterwards.
 */
import { EventEmitter } from 'node:events';
import type { BindingCallbackError, BindingContext, BindingReader } from '../../src/devices/pcsc/pcsc-binding.js';

export const scardError = (fn: string, text: string, code: number): Error =>
  new Error(`${fn} error: ${text}(0x${code.toString(16).padStart(8, '0')})`);

const CONSTANTS = {
  SCARD_SHARE_SHARED: 2,
  SCARD_SHARE_EXCLUSIVE: 1,
  SCARD_PROTOCOL_T0: 1,
  SCARD_PROTOCOL_T1: 2,
  SCARD_LEAVE_CARD: 0,
} as const;

/** What the card does with a command APDU: answer, fail with an SCARD error, or never answer. */
export type CardBehaviour = (command: Buffer) => Buffer | Error | 'mute';

export interface ConnectCall {
  readonly shareMode: number;
  readonly protocol: number;
}

/** A reader slot of the fake service; survives service restarts like a USB reader does. */
export class FakeSlot {
  card: CardBehaviour | undefined;
  counter = 0;
  readonly connects: ConnectCall[] = [];
  disconnects = 0;
  readonly transmits: { readonly length: number; readonly responseLength: number; readonly protocol: number }[] = [];
  /** Connect fails with this error (once) when set. */
  connectError: Error | undefined;
  /** Answers a transmit that is in flight when the card leaves with an empty buffer (vpcd), else with RemovedCard. */
  emptyOnRemoval = true;
  /** Makes `transmit` throw synchronously (as the binding does for a bad protocol argument). */
  transmitThrows: Error | undefined;
  readonly pendingTransmits = new Set<(error: BindingCallbackError, response?: Buffer) => void>();
  readonly readers = new Set<FakeReader>();

  constructor(readonly name: string) {}

  get state(): number {
    const base = this.card ? 0x20 : 0x10;
    return (this.counter << 16) | base | 0x2;
  }

  insert(card: CardBehaviour): void {
    this.card = card;
    this.counter++;
    for (const reader of this.readers) reader.report();
  }

  remove(): void {
    this.card = undefined;
    this.counter++;
    for (const done of [...this.pendingTransmits]) {
      this.pendingTransmits.delete(done);
      if (this.emptyOnRemoval) done(undefined, Buffer.alloc(0));
      else done(scardError('SCardTransmit', 'Card was removed.', 0x80100069));
    }
    for (const reader of this.readers) reader.report();
  }

  /** Removed and inserted again between two status reports (only the counter shows it). */
  swapUnseen(card: CardBehaviour): void {
    this.card = card;
    this.counter += 2;
    for (const reader of this.readers) reader.report();
  }
}

export class FakeReader extends EventEmitter implements BindingReader {
  readonly SCARD_SHARE_SHARED = CONSTANTS.SCARD_SHARE_SHARED;
  readonly SCARD_SHARE_EXCLUSIVE = CONSTANTS.SCARD_SHARE_EXCLUSIVE;
  readonly SCARD_PROTOCOL_T0 = CONSTANTS.SCARD_PROTOCOL_T0;
  readonly SCARD_PROTOCOL_T1 = CONSTANTS.SCARD_PROTOCOL_T1;
  readonly SCARD_LEAVE_CARD = CONSTANTS.SCARD_LEAVE_CARD;
  state = 0;
  connected = false;
  closed = false;
  private handleCounter = -1;

  constructor(readonly slot: FakeSlot) {
    super();
    slot.readers.add(this);
    setImmediate(() => this.report());
  }

  get name(): string {
    return this.slot.name;
  }

  report(): void {
    if (this.closed) return;
    const state = this.slot.state;
    setImmediate(() => {
      if (this.closed) return;
      this.emit('status', { state });
      this.state = state;
    });
  }

  connect(options: { share_mode: number; protocol: number }, callback: (error: BindingCallbackError, protocol?: number) => void): void {
    this.slot.connects.push({ shareMode: options.share_mode, protocol: options.protocol });
    setImmediate(() => {
      if (this.connected) {
        callback(undefined, undefined);
        return;
      } // a stale handle: neither error nor protocol, as the smartcard binding does
      const error = this.slot.connectError;
      if (error) {
        this.slot.connectError = undefined;
        callback(error);
        return;
      }
      if (!this.slot.card) {
        callback(scardError('SCardConnect', 'No smart card inserted.', 0x8010000c));
        return;
      }
      this.connected = true;
      this.handleCounter = this.slot.counter;
      callback(undefined, options.protocol & CONSTANTS.SCARD_PROTOCOL_T1 ? CONSTANTS.SCARD_PROTOCOL_T1 : CONSTANTS.SCARD_PROTOCOL_T0);
    });
  }

  disconnect(_disposition: number, callback: (error: BindingCallbackError) => void): void {
    setImmediate(() => {
      if (this.connected) this.slot.disconnects++;
      this.connected = false;
      callback(undefined);
    });
  }

  transmit(
    data: Buffer,
    responseLength: number,
    protocol: number,
    callback: (error: BindingCallbackError, response?: Buffer) => void,
  ): void {
    if (this.slot.transmitThrows) throw this.slot.transmitThrows;
    this.slot.transmits.push({ length: data.length, responseLength, protocol });
    if (!this.connected) {
      callback(new Error('Card Reader not connected'));
      return;
    }
    const card = this.slot.card;
    setImmediate(() => {
      if (!card || this.handleCounter !== this.slot.counter) {
        callback(scardError('SCardTransmit', 'Card was removed.', 0x80100069));
        return;
      }
      const answer = card(data);
      if (answer === 'mute') {
        this.slot.pendingTransmits.add(callback);
        return;
      }
      if (answer instanceof Error) callback(answer);
      else callback(undefined, answer);
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.slot.readers.delete(this);
    setImmediate(() => this.emit('error', scardError('SCardGetStatusChange', 'Command cancelled.', 0x80100002)));
  }

  /** The service went away under this reader. */
  lose(): void {
    if (this.closed) return;
    this.closed = true;
    this.slot.readers.delete(this);
    this.emit('error', scardError('SCardGetStatusChange', 'RPC transport error.', 0x80100013));
    this.emit('end');
  }
}

export class FakeContext extends EventEmitter implements BindingContext {
  closed = false;
  readonly readers = new Map<string, FakeReader>();

  constructor(private readonly service: FakePcscService) {
    super();
    process.nextTick(() => {
      for (const slot of service.slots.values()) this.announce(slot);
    });
  }

  announce(slot: FakeSlot): void {
    if (this.closed || this.readers.has(slot.name)) return;
    const reader = new FakeReader(slot);
    this.readers.set(slot.name, reader);
    this.emit('reader', reader);
  }

  withdraw(name: string): void {
    const reader = this.readers.get(name);
    if (!reader) return;
    this.readers.delete(name);
    reader.closed = true;
    reader.slot.readers.delete(reader);
    reader.emit('end');
  }

  close(): void {
    if (this.service.closeThrows) throw new Error('close failed');
    if (this.closed) return;
    this.closed = true;
    this.service.contexts.delete(this);
    setImmediate(() => this.emit('error', scardError('SCardGetStatusChange', 'Command cancelled.', 0x80100002)));
  }

  lose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const reader of this.readers.values()) reader.lose();
    this.readers.clear();
    this.emit('error', scardError('SCardGetStatusChange', 'RPC transport error.', 0x80100013));
  }
}

/** The PC/SC service (pcscd): running or not, with reader slots that can come and go. */
export class FakePcscService {
  running = true;
  closeThrows = false;
  establishCalls = 0;
  readonly slots = new Map<string, FakeSlot>();
  readonly contexts = new Set<FakeContext>();

  constructor(readerNames: readonly string[] = ['Fake Reader PICC 0']) {
    for (const name of readerNames) this.slots.set(name, new FakeSlot(name));
  }

  readonly factory = (): BindingContext => {
    this.establishCalls++;
    if (!this.running) throw scardError('SCardEstablishContext', 'Service not available.', 0x8010001d);
    const context = new FakeContext(this);
    this.contexts.add(context);
    return context;
  };

  slot(name?: string): FakeSlot {
    const slot = name === undefined ? this.slots.values().next().value : this.slots.get(name);
    if (!slot) throw new Error(`no slot ${name ?? '(first)'}`);
    return slot;
  }

  plug(name: string): FakeSlot {
    const slot = new FakeSlot(name);
    this.slots.set(name, slot);
    for (const context of this.contexts) context.announce(slot);
    return slot;
  }

  unplug(name: string): void {
    this.slots.delete(name);
    for (const context of this.contexts) context.withdraw(name);
  }

  kill(): void {
    this.running = false;
    for (const context of [...this.contexts]) context.lose();
    this.contexts.clear();
  }

  start(): void {
    this.running = true;
  }
}

/** A card that answers every command with `9000` after echoing its first byte, for order checks. */
export const echoCard: CardBehaviour = (command) => Buffer.from([command[0] ?? 0, 0x90, 0x00]);
