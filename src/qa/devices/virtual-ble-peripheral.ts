/**
 * The kiosk's `BlePeripheral` port on the virtual radio: one GATT service built from the mode's
 * characteristic specs, advertised until a phone connects, one phone per session. Stands where the bleno
 * adapter stands.
 *
 * - operations → properties (read → read, write_without_response → writeWithoutResponse, notify →
 *   notify); the radio refuses operations the properties lack, this port refuses a read without
 *   `readable` (0x02) and a write without `writeable` (0x03), as the specs' permissions say;
 * - reads are reported with their offset; `respond(value)` takes the whole value and the port sends it
 *   from the offset (an offset past the end is 0x07 Invalid Offset); `fail()` is 0x0E Unlikely Error;
 * - advertising stops when the phone connects and resumes if it leaves while the session is open (a
 *   phone may come back before its first GATT event); other centrals are refused meanwhile.
 */
import type { CharacteristicSpec } from '../../common/protocol/messages.js';
import { uuidKey } from '../../common/protocol/uuid.js';
import {
  AttError,
  AttErrorCode,
  type AttRequest,
  type GattCharacteristicDefinition,
  type GattServerHandlers,
  type ReadRequest,
  type RadioDevice,
  type ServerConnection,
  type SubscribeRequest,
  type WriteRequest,
} from '../sim/radio/virtual-radio.js';
import {
  BleSetupError,
  BleValueTooLargeError,
  type Availability,
  type BlePeripheral,
  type BlePeripheralSession,
  type GattProfile,
  type PeripheralEvent,
} from '../../devices/ports.js';
import { safeCall } from '../../devices/shared/safe-call.js';
import { PROPERTY_OF, VirtualPort, abortable, abortedError, errorMessage, isAborted, profileCharacteristics } from './support.js';

export interface VirtualBlePeripheralOptions {
  readonly availability?: Availability;
  /** Local name in the advertisement (default `mdl-kiosk`). */
  readonly localName?: string;
}

/** The session whose service is installed on each port: one at a time, as with one bleno instance. */
const installed = new WeakMap<VirtualBlePeripheral, VirtualPeripheralSession>();

export class VirtualBlePeripheral extends VirtualPort implements BlePeripheral {
  constructor(
    device: RadioDevice,
    private readonly options: VirtualBlePeripheralOptions = {},
  ) {
    super(device, options.availability);
  }

  async advertise(profile: GattProfile, onEvent: (event: PeripheralEvent) => void, signal: AbortSignal): Promise<BlePeripheralSession> {
    const availability = this.availability();
    if (!availability.usable) throw new BleSetupError(availability.reason ?? 'unavailable');
    if (signal.aborted) throw abortedError('BLE advertising');
    const characteristics = profileCharacteristics(profile);
    const keys = new Set(characteristics.map((c) => uuidKey(c.spec.uuid)));
    if (keys.size !== characteristics.length) throw new BleSetupError('the profile names one characteristic UUID twice');
    // A session left open (should not happen: the core closes each one) is taken over, as a stack reset would.
    await installed.get(this)?.close();
    if (isAborted(signal)) throw abortedError('BLE advertising');
    const session = new VirtualPeripheralSession(this, profile, onEvent, this.options.localName ?? 'mdl-kiosk');
    installed.set(this, session);
    try {
      session.install();
      await abortable(session.startAdvertising(), signal, 'BLE advertising');
    } catch (e) {
      await session.close();
      if (isAborted(signal)) throw abortedError('BLE advertising');
      throw new BleSetupError(e instanceof BleSetupError ? e.reason : `advertising failed: ${errorMessage(e)}`);
    }
    return session;
  }
}

interface ServedCharacteristic {
  readonly uuid: string;
  readonly spec: CharacteristicSpec;
}

class VirtualPeripheralSession implements BlePeripheralSession {
  private closed = false;
  private closing: Promise<void> | undefined;
  private phone: ServerConnection | undefined;
  private readonly characteristics = new Map<string, ServedCharacteristic>();
  private readonly subscribed = new Set<string>();
  private readonly subscriptionWaiters = new Set<{
    readonly key: string;
    readonly resolve: () => void;
    readonly reject: (e: Error) => void;
  }>();
  private readonly pendingReads = new Set<() => void>();
  private readonly device: RadioDevice;

  constructor(
    private readonly owner: VirtualBlePeripheral,
    private readonly profile: GattProfile,
    private readonly onEvent: (event: PeripheralEvent) => void,
    private readonly localName: string,
  ) {
    this.device = owner.device;
    for (const { spec } of profileCharacteristics(profile)) this.characteristics.set(uuidKey(spec.uuid), { uuid: spec.uuid, spec });
  }

  install(): void {
    const definitions: GattCharacteristicDefinition[] = [...this.characteristics.values()].map(({ uuid, spec }) => ({
      uuid,
      properties: spec.operations.map((op) => PROPERTY_OF[op]),
    }));
    this.device.peripheral.setServices([{ uuid: this.profile.serviceUuid, characteristics: definitions }], this.handlers());
  }

  startAdvertising(): Promise<void> {
    return this.device.peripheral.startAdvertising({ localName: this.localName, serviceUuids: [this.profile.serviceUuid] });
  }

  /** Read afresh after an await. */
  private get isClosed(): boolean {
    return this.closed;
  }

  private get isCurrent(): boolean {
    return installed.get(this.owner) === this;
  }

  private handlers(): GattServerHandlers {
    return {
      accept: () => !this.closed && this.phone === undefined,
      onConnect: (connection) => this.onConnect(connection),
      onDisconnect: (connection, info) => this.onDisconnect(connection, info.reason),
      onRead: (request) => this.onRead(request),
      onWrite: (request) => this.onWrite(request),
      onSubscribe: (request) => this.onSubscription(request, true),
      onUnsubscribe: (request) => this.onSubscription(request, false),
    };
  }

  private emit(event: PeripheralEvent): void {
    if (this.closed) return;
    // the consumer's failure is not the phone's: never turn it into an ATT error
    safeCall(() => {
      this.onEvent(event);
    });
  }

  private onConnect(connection: ServerConnection): void {
    if (this.closed || this.phone) {
      void this.device.peripheral.disconnect(connection.handle, 'the kiosk serves one phone at a time');
      return;
    }
    this.phone = connection;
    // One phone per session: nobody else should find the service while it is connected.
    void this.device.peripheral.stopAdvertising();
    this.emit({ kind: 'connect' });
  }

  private onDisconnect(connection: ServerConnection, reason: string): void {
    if (connection.handle !== this.phone?.handle) return;
    this.phone = undefined;
    this.subscribed.clear();
    this.emit({ kind: 'disconnect', reason });
    // The phone may come back (the core's setup timer decides), so the service is found again.
    if (!this.closed && this.isCurrent) this.startAdvertising().catch(() => undefined);
  }

  /** The characteristic of a request from the phone, or an ATT error. */
  private served(request: AttRequest): ServedCharacteristic {
    const served = this.characteristics.get(uuidKey(request.characteristicUuid));
    if (this.closed || request.connection.handle !== this.phone?.handle || !served) throw new AttError(AttErrorCode.UNLIKELY_ERROR);
    return served;
  }

  private onRead(request: ReadRequest): Promise<Uint8Array> {
    const served = this.served(request);
    if (!served.spec.permissions.includes('readable')) throw new AttError(AttErrorCode.READ_NOT_PERMITTED);
    const { offset } = request;
    return new Promise<Uint8Array>((resolve, reject) => {
      let answered = false;
      const answer = (): boolean => {
        if (answered) return false;
        answered = true;
        this.pendingReads.delete(abandon);
        return true;
      };
      const abandon = (): void => {
        if (answer()) reject(new AttError(AttErrorCode.UNLIKELY_ERROR));
      };
      this.pendingReads.add(abandon);
      this.emit({
        kind: 'read',
        characteristicUuid: request.characteristicUuid,
        offset,
        respond: (value) => {
          if (!answer()) return;
          if (offset > value.length) reject(new AttError(AttErrorCode.INVALID_OFFSET));
          else resolve(value.subarray(offset));
        },
        fail: abandon,
      });
    });
  }

  private onWrite(request: WriteRequest): void {
    const served = this.served(request);
    if (!served.spec.permissions.includes('writeable')) throw new AttError(AttErrorCode.WRITE_NOT_PERMITTED);
    this.emit({ kind: 'write', characteristicUuid: request.characteristicUuid, data: request.data });
  }

  private onSubscription(request: SubscribeRequest | AttRequest, on: boolean): void {
    const key = uuidKey(this.served(request).uuid);
    if (on) this.subscribed.add(key);
    else this.subscribed.delete(key);
    this.emit({ kind: on ? 'subscribe' : 'unsubscribe', characteristicUuid: request.characteristicUuid });
    if (!on) return;
    for (const waiter of [...this.subscriptionWaiters]) {
      if (waiter.key !== key) continue;
      this.subscriptionWaiters.delete(waiter);
      waiter.resolve();
    }
  }

  private subscription(key: string): Promise<void> {
    if (this.subscribed.has(key)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.subscriptionWaiters.add({ key, resolve, reject }));
  }

  async notify(characteristicUuid: string, data: Uint8Array): Promise<void> {
    if (this.closed) throw new Error('BLE peripheral session closed');
    const key = uuidKey(characteristicUuid);
    const served = this.characteristics.get(key);
    if (!served) throw new Error(`${characteristicUuid} is not a characteristic of the service`);
    if (!served.spec.operations.includes('notify')) throw new Error(`${characteristicUuid}: its operations do not include notify`);
    await this.subscription(key);
    const phone = this.phone;
    if (this.isClosed || !phone) throw new Error('BLE peripheral session closed');
    const tooLarge = BleValueTooLargeError.check('notification', data.length, phone.mtu);
    if (tooLarge) throw tooLarge;
    await this.device.peripheral.notify(phone.handle, this.profile.serviceUuid, served.uuid, data);
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.closed = true;
    const closedError = new Error('BLE peripheral session closed');
    for (const waiter of this.subscriptionWaiters) waiter.reject(closedError);
    this.subscriptionWaiters.clear();
    for (const abandon of [...this.pendingReads]) abandon();
    const peripheral = this.device.peripheral;
    try {
      if (this.isCurrent) await peripheral.stopAdvertising();
      const phone = this.phone;
      this.phone = undefined;
      if (phone) await peripheral.disconnect(phone.handle, 'closed by the kiosk');
      if (this.isCurrent) {
        peripheral.setServices([]);
        installed.delete(this.owner);
      }
    } catch {
      // close() never rejects; the radio's own calls do not throw here
    }
  }
}
