/**
 * The kiosk's `BlePeripheral` port on `@stoprocent/bleno` 0.12.x. The bleno instance is injected
 * (`new (require('@stoprocent/bleno/lib/bleno'))(bindings)`, docs/ble-libraries.md §2): this module never imports the
 * library index, which would construct the platform binding.
 *
 * Behaviour (the same as the virtual port at the `BlePeripheral` boundary):
 * - one primary service per session, built from the characteristic specs: operations → properties
 *   (read → read, write_without_response → writeWithoutResponse, notify → notify; bleno adds the CCCD);
 *   bleno has no attribute permissions (docs/ble-libraries.md §4), so the specs' permissions are enforced in the
 *   callbacks: a read without `readable` is 0x02, a write without `writeable` is 0x03 (a Write Command
 *   gets no answer, as in ATT, but is not reported);
 * - one phone per session: the first central accepted is the phone, advertising stops then (stoprocent
 *   hci restarts advertising after every accept, docs/ble-libraries.md §4); any other central is disconnected, and
 *   requests on other connections are answered 0x0E. If the phone leaves, advertising resumes while the
 *   session is open;
 * - events are reported synchronously from bleno's callbacks, so in the order the phone's packets came;
 *   a disconnect reports the subscriptions bleno drops first (its GATT emits `unsubscribe` before the
 *   binding's `disconnect`);
 * - reads: the offset-0 read is reported; `respond(value)` takes the whole value, which is kept until the
 *   next offset-0 read of that characteristic so the Read Blobs of the same long read are answered from
 *   it without being reported again (the value cannot change halfway). A blob with nothing kept is
 *   reported with its offset. Once the phone is gone a late answer is dropped: bleno's GATT callback
 *   throws for a connection it has forgotten;
 * - notify waits for the subscription, refuses a value above ATT_MTU − 3 with `BleValueTooLargeError`
 *   (hci truncates silently, docs/ble-libraries.md §4; the backend chunks, docs/ble-limits.md), hands the value to
 *   the stack through the subscription's own update callback (`Characteristic.notify(data, 0)` would go
 *   to every connection: handle 0 is falsy) and resolves on the next turn; calls run one at a time, in
 *   call order;
 * - flush: resolves once every notification handed to bleno has left its hci ACL queue and the controller
 *   completed it (hci-acl.ts); the core calls it after `complete`, before teardown, so the end byte is not
 *   overtaken by the disconnect;
 * - teardown: stop advertising, disconnect the phone, `setServices([])`, remove every listener; each
 *   step bounded, so a dead adapter cannot hang `close()`. The next session re-advertises on the same
 *   bleno instance.
 * - on hci bleno's `stop()` is never called: it leaves the 1 s `pollIsDevUp` timer running, which throws
 *   once the socket is gone (docs/ble-libraries.md §1). One bleno lives as long as the process; `close()` here only
 *   tears the session down and drops the adapter's own listener.
 *
 * On macOS (bleno's mac binding, node_modules/@stoprocent/bleno/lib/mac/src) four things differ, each from
 * the binding's source:
 * - `accept` comes only the first time the binding's manager sees a central's identifier
 *   (ble_peripheral_manager.mm:200-272; the set is cleared only in dealloc, :36-43), and it travels on
 *   another thread-safe function than the request it came with (callbacks.mm), so it may even arrive after
 *   it. So the first GATT event (subscribe, read, write) of the open session is the phone;
 * - no `disconnect` ever (BlenoMac::Disconnect does nothing, bleno_mac.mm:129-131); CoreBluetooth's only sign
 *   that a central left is an unsubscribe from each characteristic it had subscribed to. So an unsubscribe
 *   of the phone means it left: the rest of its subscriptions, then `disconnect`, are reported;
 * - the kiosk cannot disconnect a central: the teardown has no disconnect step, and flush() waits for the
 *   phone to leave on its own (after the end byte it does; the core bounds the wait);
 * - `setServices` only adds services (ble_peripheral_manager.mm:137-145) and emits nothing for `[]`; the one
 *   path to `removeAllServices` is `stop()` (bleno_mac.mm:55-62). So the teardown stops bleno and starts it
 *   again (`init()` makes a new manager, bleno_mac.mm:47-53): the service is gone from the GATT database and
 *   the new manager knows no central, so the same phone is accepted in the next session.
 * Read callbacks always get a Buffer, an empty one with an error (bleno-types.ts `BlenoReadCallback`).
 */
import { uuidKey } from '../../common/protocol/uuid.js';
import type { CharacteristicSpec, GattOperation } from '../../common/protocol/messages.js';
import {
  BleSetupError,
  BleValueTooLargeError,
  type Availability,
  type BlePeripheral,
  type BlePeripheralSession,
  type GattProfile,
  type PeripheralEvent,
} from '../ports.js';
import { abortable, abortedError, errorMessage, isAborted } from '../shared/abort.js';
import { safeCall } from '../shared/safe-call.js';
import { ADAPTER_SETTLE_MS, AdapterAvailability, macPermissionWait } from './adapter-state.js';
import { awaitEvent, blenoAvailability, blenoBindingKind, blenoUuid, type BlenoBindingKind } from './bleno-support.js';
import { hciOf, MAX_UNSENT_ACL_PACKETS, whenAclBelow, whenAclDrained } from './hci-acl.js';
import type {
  Bleno,
  BlenoCharacteristic,
  BlenoConnection,
  BlenoProperty,
  BlenoReadCallback,
  BlenoUpdateValueCallback,
  BlenoWriteCallback,
} from './bleno-types.js';

/** ATT error codes (Core Vol 3 Part F §3.4.1.1) the adapter answers with. */
const ATT_SUCCESS = 0x00;
const ATT_READ_NOT_PERMITTED = 0x02;
const ATT_WRITE_NOT_PERMITTED = 0x03;
const ATT_INVALID_OFFSET = 0x07;
const ATT_UNLIKELY_ERROR = 0x0e;
/** Reason key of a `disconnect` the adapter's own power-off caused (src/kiosk/run-report.ts tells it apart). */
const ADAPTER_OFF = 'adapter_off';
/** The data of a refused read (bleno-types.ts `BlenoReadCallback`). */
const NO_DATA = Buffer.alloc(0);

const PROPERTY_OF: Readonly<Record<GattOperation, BlenoProperty>> = {
  read: 'read',
  write_without_response: 'writeWithoutResponse',
  notify: 'notify',
};

export interface BlenoPeripheralOptions {
  /** Local name in the advertisement (default `mdl-kiosk`; hci allows 26 bytes with one 128-bit UUID). */
  readonly localName?: string;
  /** Bound for setting the service and starting to advertise (default 10 s; the caller's signal also ends it). */
  readonly setupTimeoutMs?: number;
  /** Bound for each teardown step (default 2 s). */
  readonly teardownStepMs?: number;
  /** The binding bleno runs on (default: the one bleno's index picks on this OS, `blenoBindingKind`). */
  readonly binding?: BlenoBindingKind;
}

export class BlenoPeripheral implements BlePeripheral {
  private readonly state: AdapterAvailability;
  private readonly binding: BlenoBindingKind;
  private session: BlenoSession | undefined;
  private closed = false;
  /** macOS: bleno being stopped and started again to empty the GATT database (see header). */
  private restarting: Promise<void> | undefined;
  private readonly onStateChange = (): void => this.state.update();

  constructor(
    private readonly bleno: Bleno,
    private readonly options: BlenoPeripheralOptions = {},
  ) {
    this.binding = options.binding ?? blenoBindingKind();
    this.state = new AdapterAvailability(() => this.current(), ADAPTER_SETTLE_MS, Date.now, macPermissionWait(this.binding, () => bleno.state === 'unknown'));
    // Adding the first `stateChange` listener is what makes bleno call its bindings' init().
    bleno.on('stateChange', this.onStateChange);
  }

  private current(): Availability {
    return blenoAvailability(this.bleno.state, this.binding);
  }

  availability(): Availability {
    return this.state.current;
  }

  onAvailabilityChange(listener: (availability: Availability) => void): () => void {
    return this.state.onChange(listener);
  }

  async advertise(profile: GattProfile, onEvent: (event: PeripheralEvent) => void, signal: AbortSignal): Promise<BlePeripheralSession> {
    await this.restarting;
    if (this.closed) throw new BleSetupError('the BLE peripheral adapter is closed');
    const availability = this.availability();
    if (!availability.usable) throw new BleSetupError(availability.reason ?? 'unavailable');
    // After a restart bleno reads 'unknown' until the new manager reports (bleno.js stop() says nothing).
    if (this.binding === 'mac' && this.bleno.state !== 'poweredOn') throw new BleSetupError(this.current().reason ?? 'starting');
    if (signal.aborted) throw abortedError('BLE advertising');
    const served = servedCharacteristics(profile);
    // A session left open (the core closes each one) is taken over: one service per bleno at a time.
    await this.session?.close();
    if (isAborted(signal)) throw abortedError('BLE advertising');
    const session = new BlenoSession(this.bleno, profile, served, onEvent, {
      localName: this.options.localName ?? 'mdl-kiosk',
      setupTimeoutMs: this.options.setupTimeoutMs ?? 10_000,
      teardownStepMs: this.options.teardownStepMs ?? 2_000,
      mac: this.binding === 'mac',
      removeServices: () => this.restartMac(),
      onClosed: () => {
        if (this.session === session) this.session = undefined;
      },
    });
    this.session = session;
    try {
      await session.start(signal);
    } catch (e) {
      await session.close();
      if (isAborted(signal)) throw abortedError('BLE advertising');
      throw new BleSetupError(e instanceof BleSetupError ? e.reason : `advertising failed: ${errorMessage(e)}`);
    }
    return session;
  }

  /**
   * macOS: `stop()` is the mac binding's only way to `removeAllServices` (bleno_mac.mm:55-62); the next
   * `stateChange` listener makes bleno call `init()`, a new manager (bleno.js `newListener`, bleno_mac.mm:47-53).
   * Resolves once the new manager reports its state, or after the teardown bound. A closed adapter leaves
   * bleno stopped: whoever adds the next listener starts it.
   */
  private restartMac(): Promise<void> {
    const restart = (async (): Promise<void> => {
      this.bleno.removeListener('stateChange', this.onStateChange);
      try {
        this.bleno.stop();
      } catch {
        // no manager (CHECK_MANAGER throws): nothing in the database either
      }
      if (this.closed) return;
      await awaitEvent(this.bleno, 'stateChange', undefined, () => this.bleno.on('stateChange', this.onStateChange), {
        timeoutMs: this.options.teardownStepMs ?? 2_000,
        what: 'BLE restart',
      }).catch(() => undefined); // still starting: advertise() says so
    })();
    const done = restart.finally(() => {
      if (this.restarting === done) this.restarting = undefined;
    });
    this.restarting = done;
    return done;
  }

  /** Closes the open session and drops the adapter's listener; bleno itself keeps running (see header). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.bleno.removeListener('stateChange', this.onStateChange);
    this.state.dispose();
    await this.session?.close();
    await this.restarting;
  }
}

interface Served {
  /** As the profile spells it (reported back in events). */
  readonly uuid: string;
  readonly key: string;
  readonly blenoUuid: string;
  readonly spec: CharacteristicSpec;
}

function servedCharacteristics(profile: GattProfile): Served[] {
  const { state, c2s, s2c, ident } = profile.characteristics;
  const out: Served[] = [];
  const keys = new Set<string>();
  for (const spec of ident ? [state, c2s, s2c, ident] : [state, c2s, s2c]) {
    let stack: string;
    try {
      stack = blenoUuid(spec.uuid);
      blenoUuid(profile.serviceUuid);
    } catch (e) {
      throw new BleSetupError(`invalid UUID in the profile: ${errorMessage(e)}`);
    }
    const key = uuidKey(stack);
    if (keys.has(key)) throw new BleSetupError('the profile names one characteristic UUID twice');
    keys.add(key);
    out.push({ uuid: spec.uuid, key, blenoUuid: stack, spec });
  }
  return out;
}

interface SessionOptions {
  readonly localName: string;
  readonly setupTimeoutMs: number;
  readonly teardownStepMs: number;
  /** bleno's mac binding underneath (see header). */
  readonly mac: boolean;
  /** macOS: empties the GATT database (the teardown's last step there). */
  readonly removeServices: () => Promise<void>;
  readonly onClosed: () => void;
}

interface Subscription {
  readonly maxValueSize: number;
  readonly update: BlenoUpdateValueCallback;
}

interface SubscriptionWaiter {
  readonly key: string;
  resolve(): void;
  reject(error: Error): void;
}

interface PendingRead {
  /** Ends the read without an answer to bleno unless the link is still up (then 0x0E). */
  abandon(linkUp: boolean): void;
}

class BlenoSession implements BlePeripheralSession {
  private closed = false;
  private closing: Promise<void> | undefined;
  private phone: BlenoConnection | undefined;
  private readonly byKey = new Map<string, Served>();
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly waiters = new Set<SubscriptionWaiter>();
  private readonly pendingReads = new Set<PendingRead>();
  /** flush() calls waiting for the phone to leave (macOS). */
  private readonly departures = new Set<() => void>();
  /** The value answered for the last offset-0 read of each characteristic, for its Read Blobs. */
  private readonly readCache = new Map<string, Uint8Array>();
  private notifyChain: Promise<unknown> = Promise.resolve();
  private readonly serviceUuid: string;

  constructor(
    private readonly bleno: Bleno,
    profile: GattProfile,
    served: readonly Served[],
    private readonly onEvent: (event: PeripheralEvent) => void,
    private readonly options: SessionOptions,
  ) {
    this.serviceUuid = blenoUuid(profile.serviceUuid);
    for (const s of served) this.byKey.set(s.key, s);
  }

  /** Read afresh after an await (TypeScript keeps an earlier narrowing). */
  private get isClosed(): boolean {
    return this.closed;
  }

  /** Closed (a method: a check after an await must not be narrowed away). */
  private stoppedSince(): boolean {
    return this.closed;
  }

  private get currentPhone(): BlenoConnection | undefined {
    return this.phone;
  }

  async start(signal: AbortSignal): Promise<void> {
    this.bleno.on('accept', this.onAccept);
    this.bleno.on('disconnect', this.onDisconnect);
    this.bleno.on('stateChange', this.onAdapterState);
    const characteristics = [...this.byKey.values()].map((s) => this.characteristic(s));
    const service = new this.bleno.PrimaryService({ uuid: this.serviceUuid, characteristics });
    const bounded = { signal, timeoutMs: this.options.setupTimeoutMs };
    await awaitEvent(this.bleno, 'servicesSet', 'servicesSetError', () => this.bleno.setServices([service]), { ...bounded, what: 'BLE setServices' });
    if (this.isClosed) throw new Error('closed while setting the service');
    const [error] = await awaitEvent(this.bleno, 'advertisingStart', 'advertisingStartError', () => this.startAdvertising(), {
      ...bounded,
      what: 'BLE advertising',
    });
    if (error) throw error instanceof Error ? error : new Error(`advertising failed: ${errorMessage(error)}`);
  }

  private startAdvertising(): void {
    // Throws when bleno is not poweredOn (no callback given).
    this.bleno.startAdvertising(this.options.localName, [this.serviceUuid]);
  }

  private characteristic(served: Served): BlenoCharacteristic {
    return new this.bleno.Characteristic({
      uuid: served.blenoUuid,
      properties: served.spec.operations.map((op) => PROPERTY_OF[op]),
      onReadRequest: (connection, offset, callback) => this.onRead(served, connection, offset, callback),
      onWriteRequest: (connection, data, offset, withoutResponse, callback) => this.onWrite(served, connection, data, offset, callback),
      onSubscribe: (connection, maxValueSize, update) => this.onSubscribe(served, connection, maxValueSize, update),
      onUnsubscribe: (connection) => this.onUnsubscribe(served, connection),
    });
  }

  private emit(event: PeripheralEvent): void {
    if (this.closed) return;
    // the consumer's failure is not the phone's: never turn it into an ATT error
    safeCall(() => {
      this.onEvent(event);
    });
  }

  private readonly onAccept = (_address: unknown, handle: BlenoConnection): void => {
    if (this.options.mac) {
      // An accept of the phone may follow its first request; another central cannot be disconnected on a Mac.
      if (!this.closed && this.phone === undefined) this.claim(handle);
      return;
    }
    if (this.closed || this.phone !== undefined) {
      this.bleno.disconnect(handle);
      return;
    }
    this.claim(handle);
  };

  private claim(handle: BlenoConnection): void {
    this.phone = handle;
    // One phone per session; stoprocent's hci binding re-advertises after every accept (docs/ble-libraries.md §4).
    this.bleno.stopAdvertising();
    this.emit({ kind: 'connect' });
  }

  private readonly onDisconnect = (_address: unknown, handle: BlenoConnection): void => {
    if (this.phone === undefined || handle !== this.phone) return;
    this.phoneLeft('the phone disconnected');
  };

  /**
   * The adapter left poweredOn with the phone on it: the link is gone. macOS says nothing else (the binding
   * has no disconnect, and CoreBluetooth sends no unsubscribe for it: ble_peripheral_manager.mm
   * `peripheralManagerDidUpdateState` emits only `stateChange`), so without this the kiosk would wait out its
   * idle bound. On hci a `disconnect` may follow (or come first): the phone is reported gone once.
   */
  private readonly onAdapterState = (state: unknown): void => {
    if (this.closed || state === 'poweredOn' || this.phone === undefined) return;
    this.phoneLeft(`${ADAPTER_OFF}: the Bluetooth adapter was switched off (${String(state)}), the link to the phone is gone`);
  };

  /** The phone is gone: the subscriptions bleno did not report dropped, then `disconnect`; advertising resumes. */
  private phoneLeft(reason: string): void {
    this.phone = undefined;
    this.readCache.clear();
    // bleno's GATT has forgotten the connection: a late read callback would throw inside it.
    for (const read of [...this.pendingReads]) read.abandon(false);
    const dropped = [...this.subscriptions.keys()];
    this.subscriptions.clear();
    for (const key of dropped) {
      const served = this.byKey.get(key);
      if (served) this.emit({ kind: 'unsubscribe', characteristicUuid: served.uuid });
    }
    this.emit({ kind: 'disconnect', reason });
    for (const departed of [...this.departures]) departed();
    if (this.closed) return;
    // The phone may come back before its first GATT event (the core's setup timer decides).
    try {
      this.startAdvertising();
    } catch {
      // not poweredOn: nothing to advertise on; the availability change tells the kiosk
    }
  }

  /** Whether a GATT request on `connection` is the phone's; on macOS the first one of the open session claims it. */
  private isPhone(connection: BlenoConnection): boolean {
    if (this.closed) return false;
    if (this.options.mac && this.phone === undefined) this.claim(connection);
    return this.phone !== undefined && connection === this.phone;
  }

  private onRead(served: Served, connection: BlenoConnection, offset: number, callback: BlenoReadCallback): void {
    if (!this.isPhone(connection)) {
      callback(ATT_UNLIKELY_ERROR, NO_DATA);
      return;
    }
    if (!served.spec.permissions.includes('readable')) {
      callback(ATT_READ_NOT_PERMITTED, NO_DATA);
      return;
    }
    const answerFrom = (value: Uint8Array): void => {
      if (offset > value.length) callback(ATT_INVALID_OFFSET, NO_DATA);
      else callback(ATT_SUCCESS, Buffer.from(value.subarray(offset)));
    };
    if (offset > 0) {
      const cached = this.readCache.get(served.key);
      if (cached) {
        answerFrom(cached);
        return;
      }
    } else {
      this.readCache.delete(served.key);
    }
    let done = false;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      this.pendingReads.delete(pending);
      return true;
    };
    const pending: PendingRead = {
      abandon: (linkUp) => {
        if (finish() && linkUp) callback(ATT_UNLIKELY_ERROR, NO_DATA);
      },
    };
    this.pendingReads.add(pending);
    this.emit({
      kind: 'read',
      characteristicUuid: served.uuid,
      offset,
      respond: (value) => {
        if (!finish()) return;
        const copy = new Uint8Array(value);
        if (offset === 0) this.readCache.set(served.key, copy);
        answerFrom(copy);
      },
      fail: () => {
        if (finish()) callback(ATT_UNLIKELY_ERROR, NO_DATA);
      },
    });
  }

  private onWrite(served: Served, connection: BlenoConnection, data: Buffer, offset: number, callback: BlenoWriteCallback): void {
    if (!this.isPhone(connection)) {
      callback(ATT_UNLIKELY_ERROR);
      return;
    }
    if (!served.spec.permissions.includes('writeable')) {
      callback(ATT_WRITE_NOT_PERMITTED);
      return;
    }
    // Only prepared writes carry an offset, and they need the `write` property no spec names.
    if (offset !== 0) {
      callback(ATT_INVALID_OFFSET);
      return;
    }
    this.emit({ kind: 'write', characteristicUuid: served.uuid, data: new Uint8Array(data) });
    callback(ATT_SUCCESS);
  }

  private onSubscribe(served: Served, connection: BlenoConnection, maxValueSize: number, update: BlenoUpdateValueCallback): void {
    if (!this.isPhone(connection)) return;
    const already = this.subscriptions.has(served.key);
    this.subscriptions.set(served.key, { maxValueSize, update });
    if (already) return; // a repeated CCCD write changes nothing for the phone
    this.emit({ kind: 'subscribe', characteristicUuid: served.uuid });
    for (const waiter of [...this.waiters]) if (waiter.key === served.key) waiter.resolve();
  }

  private onUnsubscribe(served: Served, connection: BlenoConnection): void {
    if (this.phone === undefined || connection !== this.phone) return;
    if (!this.subscriptions.delete(served.key)) return;
    this.emit({ kind: 'unsubscribe', characteristicUuid: served.uuid });
    // macOS reports a central that left only as unsubscribes (see header); an mdoc keeps both subscriptions while it stays.
    if (this.options.mac) this.phoneLeft(`the phone left: it unsubscribed from ${served.uuid} (macOS reports no disconnect)`);
  }

  private subscription(key: string, signal: AbortSignal | undefined): Promise<void> {
    if (this.subscriptions.has(key)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const cleanUp = (): void => {
        this.waiters.delete(waiter);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: SubscriptionWaiter = {
        key,
        resolve: () => {
          cleanUp();
          resolve();
        },
        reject: (error) => {
          cleanUp();
          reject(error);
        },
      };
      const onAbort = (): void => waiter.reject(abortedError('BLE notify'));
      this.waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  notify(characteristicUuid: string, data: Uint8Array, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new Error('BLE peripheral session closed'));
    const served = this.byKey.get(uuidKey(characteristicUuid));
    if (!served) return Promise.reject(new Error(`${characteristicUuid} is not a characteristic of the service`));
    if (!served.spec.operations.includes('notify')) return Promise.reject(new Error(`${characteristicUuid}: its operations do not include notify`));
    const copy = new Uint8Array(data); // the caller may reuse its buffer once the call returns
    const run = this.notifyChain.then(() => this.sendNotification(served, copy, signal));
    this.notifyChain = run.catch(() => undefined);
    return signal ? abortable(run, signal, 'BLE notify') : run;
  }

  private async sendNotification(served: Served, data: Uint8Array, signal: AbortSignal | undefined): Promise<void> {
    // Checked here too: an aborted call queued behind another must not send later.
    if (signal?.aborted) throw abortedError('BLE notify');
    if (this.closed) throw new Error('BLE peripheral session closed');
    await this.subscription(served.key, signal);
    const subscription = this.subscriptions.get(served.key);
    if (this.isClosed || this.phone === undefined || !subscription) throw new Error('BLE peripheral session closed');
    // bleno's subscription gives ATT_MTU − 3; hci would truncate a longer value silently (docs/ble-libraries.md §4).
    const tooLarge = BleValueTooLargeError.check('notification', data.length, subscription.maxValueSize + 3);
    if (tooLarge) throw tooLarge;
    // Room in the stack first (hci: a few packets queued for the phone at most, hci-acl.ts).
    const phone = this.phone;
    if (typeof phone === 'number') await whenAclBelow(hciOf(this.bleno), phone, MAX_UNSENT_ACL_PACKETS, signal);
    if (this.stoppedSince() || this.currentPhone === undefined || !this.subscriptions.has(served.key)) throw new Error('BLE peripheral session closed');
    try {
      subscription.update(Buffer.from(data));
    } catch (e) {
      throw new Error(`notification on ${served.uuid} failed: ${errorMessage(e)}`);
    }
    // Handed to the stack (hci queues it for the controller; there is no completion to wait for).
    // The next turn lets the phone's packets in between two notifications of a long message.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /**
   * Everything notified so far has left bleno: its `update` call only queues (hci's ACL queue waits for
   * the controller's buffers), and a disconnect would overtake that queue.
   */
  async flush(signal: AbortSignal): Promise<void> {
    await this.notifyChain;
    const phone = this.phone;
    if (this.closed || phone === undefined) return;
    // macOS: the binding's own queue says nothing, and removing the service would drop what it still holds.
    if (this.options.mac) await this.departure(signal);
    else if (typeof phone === 'number') await whenAclDrained(hciOf(this.bleno), phone, signal);
  }

  /** Resolves when the phone leaves or the session closes; rejects on abort. */
  private departure(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(abortedError('BLE flush'));
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        this.departures.delete(done);
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.departures.delete(done);
        reject(abortedError('BLE flush'));
      };
      this.departures.add(done);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.closed = true;
    this.bleno.removeListener('stateChange', this.onAdapterState);
    const closedError = new Error('BLE peripheral session closed');
    for (const waiter of [...this.waiters]) waiter.reject(closedError);
    for (const departed of [...this.departures]) departed();
    const phone = this.phone;
    for (const read of [...this.pendingReads]) read.abandon(phone !== undefined);
    const step = (event: string, errorEvent: string | undefined, trigger: () => void, what: string, filter?: (args: unknown[]) => boolean): Promise<unknown> =>
      awaitEvent(this.bleno, event, errorEvent, trigger, { timeoutMs: this.options.teardownStepMs, what, ...(filter ? { filter } : {}) }).catch(
        () => undefined, // close() never rejects; a step that gets no answer is given up after its bound
      );
    await step('advertisingStop', undefined, () => this.bleno.stopAdvertising(), 'BLE stop advertising');
    // macOS: no disconnect (a no-op there, and no event would come) and no setServices([]) (it removes nothing).
    if (!this.options.mac && phone !== undefined && this.phone !== undefined) {
      await step('disconnect', undefined, () => this.bleno.disconnect(phone), 'BLE disconnect', (args) => args[1] === phone);
    }
    this.phone = undefined;
    if (this.options.mac) await this.options.removeServices();
    else await step('servicesSet', 'servicesSetError', () => this.bleno.setServices([]), 'BLE remove service');
    this.bleno.removeListener('accept', this.onAccept);
    this.bleno.removeListener('disconnect', this.onDisconnect);
    this.subscriptions.clear();
    this.readCache.clear();
    this.options.onClosed();
  }
}
