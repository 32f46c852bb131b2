/**
 * Scripted test doubles of the device ports, for conformance tests of the relay core. They implement the
 * port contracts (presence handed out once, fresh handle per presence, ordered GATT events) and record
 * what the kiosk did with them.
 */
import {
  BleSetupError,
  NfcTransmitError,
  type Availability,
  type BleCentral,
  type BleCentralHandlers,
  type BleCentralLink,
  type BlePeripheral,
  type BlePeripheralSession,
  type GattProfile,
  type NfcCard,
  type NfcReader,
  type PeripheralEvent,
  type TransmitOptions,
} from '../../src/devices/ports.js';
import { uuidKey } from '../../src/common/protocol/uuid.js';

const abortError = (): Error => new Error('aborted');

function waitAbortable<T>(signal: AbortSignal, register: (resolve: (value: T) => void) => () => void): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError());
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      unregister();
      reject(abortError());
    };
    const unregister = register((value) => {
      signal.removeEventListener('abort', onAbort);
      unregister();
      resolve(value);
    });
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

// ---------------------------------------------------------------- NFC

/** What the phone answers to one APDU: bytes, a PC/SC failure, or silence (a mute card). */
export type ApduAnswer = Uint8Array | NfcTransmitError | 'mute';
export type ApduResponder = (command: Uint8Array, index: number) => ApduAnswer | Promise<ApduAnswer>;

/** The phone on the reader: one presence. */
export class FakePresence {
  present = true;
  private removalWaiters = new Set<() => void>();
  constructor(
    readonly id: number,
    readonly responder: ApduResponder,
  ) {}

  remove(): void {
    if (!this.present) return;
    this.present = false;
    for (const waiter of [...this.removalWaiters]) waiter();
  }

  onRemoval(waiter: () => void): () => void {
    this.removalWaiters.add(waiter);
    return () => this.removalWaiters.delete(waiter);
  }
}

export class FakeCard implements NfcCard {
  released = false;
  readonly commands: Uint8Array[] = [];

  constructor(
    readonly presence: FakePresence,
    readonly handle: number,
    private readonly reader: FakeNfcReader,
  ) {}

  get present(): boolean {
    return this.presence.present;
  }

  transmit(command: Uint8Array, options: TransmitOptions): Promise<Uint8Array> {
    if (this.released) return Promise.reject(new NfcTransmitError('InvalidHandle'));
    if (!this.presence.present) return Promise.reject(new NfcTransmitError('RemovedCard'));
    const index = this.reader.apduCount++;
    if (this.reader.recordCommands) this.commands.push(Uint8Array.from(command));
    const answer = this.presence.responder(command, index);
    // A synchronous responder answers without an extra await, like an instant card.
    return answer instanceof Promise ? answer.then((a) => this.settle(a, options)) : this.settle(answer, options);
  }

  private settle(answer: ApduAnswer, options: TransmitOptions): Promise<Uint8Array> {
    if (answer === 'mute') {
      // A mute card: nothing until the caller gives up (the adapter's own timeout would fire here).
      return waitAbortable<Uint8Array>(options.signal, () => () => undefined);
    }
    if (answer instanceof NfcTransmitError) return Promise.reject(answer);
    return Promise.resolve(answer);
  }

  waitForRemoval(signal: AbortSignal): Promise<void> {
    if (!this.presence.present) return Promise.resolve();
    return waitAbortable<undefined>(signal, (resolve) => this.presence.onRemoval(() => resolve(undefined)));
  }

  release(): Promise<void> {
    this.released = true;
    return Promise.resolve();
  }
}

export class FakeNfcReader implements NfcReader {
  usable = true;
  apduCount = 0;
  /** Keep a copy of every command on the card (tests read them; the benchmark turns it off). */
  recordCommands = true;
  readonly cards: FakeCard[] = [];
  private current: FakePresence | undefined;
  private handedOut = new WeakSet<FakePresence>();
  private waiter: ((presence: FakePresence) => void) | undefined;
  private nextId = 1;
  private handles = 0;

  availability(): Availability {
    return this.usable ? { usable: true } : { usable: false, reason: 'no_reader' };
  }

  /** A phone is tapped; returns the presence (call `remove()` to lift it). */
  tap(responder: ApduResponder): FakePresence {
    this.current?.remove();
    const presence = new FakePresence(this.nextId++, responder);
    this.current = presence;
    const waiter = this.waiter;
    if (waiter) {
      this.waiter = undefined;
      waiter(presence);
    }
    return presence;
  }

  /** The phone is lifted. */
  lift(): void {
    this.current?.remove();
  }

  get presence(): FakePresence | undefined {
    return this.current;
  }

  nextCard(signal: AbortSignal): Promise<NfcCard> {
    const connect = (presence: FakePresence): NfcCard => {
      this.handedOut.add(presence);
      const card = new FakeCard(presence, ++this.handles, this);
      this.cards.push(card);
      return card;
    };
    const current = this.current;
    if (current?.present && !this.handedOut.has(current)) return Promise.resolve(connect(current));
    return waitAbortable<FakePresence>(signal, (resolve) => {
      this.waiter = resolve;
      return () => {
        if (this.waiter === resolve) this.waiter = undefined;
      };
    }).then(connect);
  }

  ignoreCurrentCard(): void {
    if (this.current?.present) this.handedOut.add(this.current);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

// ---------------------------------------------------------------- BLE central

export interface CentralBehaviour {
  /** Reject `connect` with this setup failure. */
  failWith?: BleSetupError;
  /** Never finish connecting (until aborted). */
  hang?: boolean;
  /** Delay before `connect` resolves. */
  delayMs?: number;
  /** Per-write hook (e.g. delay, throw); `signal` is the one the kiosk gave the write, to see it abandoned. */
  onWrite?: (uuid: string, data: Uint8Array, signal: AbortSignal | undefined) => Promise<void> | void;
  /** Runs just before `connect` resolves, with the handlers: the phone may notify during the setup. */
  duringSetup?: (handlers: BleCentralHandlers) => void;
}

export class FakeCentralLink implements BleCentralLink {
  readonly writes: { uuid: string; data: Uint8Array }[] = [];
  closed = false;
  mtu = 247;
  constructor(
    readonly profile: GattProfile,
    readonly handlers: BleCentralHandlers,
    private readonly behaviour: CentralBehaviour,
  ) {}

  async write(uuid: string, data: Uint8Array, signal?: AbortSignal): Promise<void> {
    if (this.closed) throw new Error('link closed');
    await this.behaviour.onWrite?.(uuid, data, signal);
    this.writes.push({ uuid, data: Uint8Array.from(data) });
  }

  /** The phone notifies on a characteristic. */
  notify(uuid: string, data: Uint8Array): void {
    this.handlers.onNotification(uuid, data);
  }

  /** The phone drops the link. */
  drop(reason = 'remote user terminated connection'): void {
    this.handlers.onDisconnect(reason);
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

export class FakeBleCentral implements BleCentral {
  usable = true;
  reason = 'powered_off';
  behaviour: CentralBehaviour = {};
  readonly links: FakeCentralLink[] = [];
  private linkWaiters: ((link: FakeCentralLink) => void)[] = [];
  /** Signals handed to connect(), to check that the kiosk aborts abandoned setups. */
  readonly connectSignals: AbortSignal[] = [];

  availability(): Availability {
    return this.usable ? { usable: true } : { usable: false, reason: this.reason };
  }

  async connect(profile: GattProfile, handlers: BleCentralHandlers, signal: AbortSignal): Promise<BleCentralLink> {
    this.connectSignals.push(signal);
    const behaviour = this.behaviour;
    if (behaviour.hang) await waitAbortable<never>(signal, () => () => undefined);
    if (behaviour.delayMs) await new Promise((r) => setTimeout(r, behaviour.delayMs));
    if (behaviour.failWith) throw behaviour.failWith;
    behaviour.duringSetup?.(handlers);
    const link = new FakeCentralLink(profile, handlers, behaviour);
    this.links.push(link);
    for (const waiter of this.linkWaiters.splice(0)) waiter(link);
    return link;
  }

  /** The next link the kiosk opens. */
  nextLink(): Promise<FakeCentralLink> {
    const existing = this.links.at(-1);
    if (existing && !existing.closed) return Promise.resolve(existing);
    return new Promise((resolve) => this.linkWaiters.push(resolve));
  }
}

// ---------------------------------------------------------------- BLE peripheral

export interface PeripheralBehaviour {
  failWith?: BleSetupError;
  /** Notifications wait until the phone subscribed to the characteristic (as bleno would). */
  notifyNeedsSubscription?: boolean;
  /** Per-notification hook, with the signal the kiosk gave the notification (as `onWrite`). */
  onNotify?: (uuid: string, data: Uint8Array, signal: AbortSignal | undefined) => Promise<void> | void;
}

export class FakePeripheralSession implements BlePeripheralSession {
  readonly notifications: { uuid: string; data: Uint8Array }[] = [];
  closed = false;
  private readonly subscribed = new Set<string>();
  private subscriptionWaiters: (() => void)[] = [];

  constructor(
    readonly profile: GattProfile,
    private readonly onEvent: (event: PeripheralEvent) => void,
    private readonly behaviour: PeripheralBehaviour,
  ) {}

  connect(): void {
    this.onEvent({ kind: 'connect' });
  }

  subscribe(uuid: string): void {
    this.subscribed.add(uuidKey(uuid));
    this.onEvent({ kind: 'subscribe', characteristicUuid: uuid });
    for (const waiter of this.subscriptionWaiters.splice(0)) waiter();
  }

  write(uuid: string, data: Uint8Array): void {
    this.onEvent({ kind: 'write', characteristicUuid: uuid, data });
  }

  /** The phone reads; resolves with what the kiosk answered (or rejects when it failed the read). */
  read(uuid: string, offset = 0): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.onEvent({
        kind: 'read',
        characteristicUuid: uuid,
        offset,
        respond: (value) => resolve(value.subarray(offset)),
        fail: () => reject(new Error('read failed')),
      });
    });
  }

  drop(reason = 'remote user terminated connection'): void {
    this.onEvent({ kind: 'disconnect', reason });
  }

  async notify(uuid: string, data: Uint8Array, signal?: AbortSignal): Promise<void> {
    if (this.closed) throw new Error('session closed');
    if (this.behaviour.notifyNeedsSubscription) {
      while (!this.subscribed.has(uuidKey(uuid))) {
        await new Promise<void>((resolve) => this.subscriptionWaiters.push(resolve));
      }
    }
    await this.behaviour.onNotify?.(uuid, data, signal);
    this.notifications.push({ uuid, data: Uint8Array.from(data) });
  }

  close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.subscriptionWaiters.splice(0)) waiter();
    return Promise.resolve();
  }
}

export class FakeBlePeripheral implements BlePeripheral {
  usable = true;
  reason = 'unsupported_platform';
  behaviour: PeripheralBehaviour = {};
  readonly sessions: FakePeripheralSession[] = [];
  private waiters: ((session: FakePeripheralSession) => void)[] = [];

  availability(): Availability {
    return this.usable ? { usable: true } : { usable: false, reason: this.reason };
  }

  advertise(profile: GattProfile, onEvent: (event: PeripheralEvent) => void): Promise<BlePeripheralSession> {
    if (this.behaviour.failWith) return Promise.reject(this.behaviour.failWith);
    const session = new FakePeripheralSession(profile, onEvent, this.behaviour);
    this.sessions.push(session);
    for (const waiter of this.waiters.splice(0)) waiter(session);
    return Promise.resolve(session);
  }

  nextSession(): Promise<FakePeripheralSession> {
    const existing = this.sessions.at(-1);
    if (existing && !existing.closed) return Promise.resolve(existing);
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

export { BleSetupError, NfcTransmitError };
