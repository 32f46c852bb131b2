/**
 * The virtual phone's Bluetooth on real stacks over HCI: mdoc peripheral server mode on bleno (its GATT
 * server, advertising, notifications), mdoc central client mode on noble (scan, connect, discovery, long
 * read, subscriptions, Write Commands). The wallet (ble-holder.ts) drives it through `PhoneRadio`, exactly
 * as it drives a device of the in-memory radio, so its ISO 18013-5 GATT service and session crypto run over
 * real ATT, L2CAP and ACL — against the kiosk's adapters on another controller of the same emulated air.
 *
 * What the stacks decide here, not the wallet's profile: the ATT MTU (noble asks for the profile's value,
 * bleno caps at 256), timing, and the order of packets on the link. `trace` records every value the phone
 * sends and receives, per characteristic, for byte-exact checks.
 */
import type { Characteristic, DisconnectReason, Noble, Peripheral } from '@stoprocent/noble';
import { awaitEvent, blenoUuid } from '../../devices/ble/bleno-support.js';
import type { Bleno, BlenoCharacteristic, BlenoProperty, BlenoUpdateValueCallback } from '../../devices/ble/bleno-types.js';
import { forgetPeripheral } from '../../devices/ble/noble-cache.js';
import { disconnectReasonText } from '../../devices/ble/noble-support.js';
import { nobleUuid, uuidKey } from '../../devices/ble/uuid.js';
import type { PhoneCentral, PhoneLink, PhonePeripheral, PhoneRadio } from '../sim/virtual-wallet/phone-radio.js';
import {
  AttError,
  AttErrorCode,
  RadioError,
  type AdvertisementReport,
  type AdvertisingData,
  type ConnectOptions,
  type DiscoveredService,
  type DisconnectInfo,
  type GattProperty,
  type GattServerHandlers,
  type GattServiceDefinition,
  type NotificationEvent,
  type ServerConnection,
  type WriteOptions,
} from '../sim/radio/virtual-radio.js';
import { whenPoweredOn } from './hci-libraries.js';

/** One value on the air, as the phone saw it. */
export interface TracedValue {
  readonly direction: 'sent' | 'received';
  /** The characteristic's comparison key (128-bit, lower case, no dashes). */
  readonly characteristic: string;
  readonly data: Uint8Array;
}

export interface HciPhoneRadioOptions {
  /** noble on the phone's central controller (mdoc central client mode); absent: that mode is unavailable. */
  readonly noble?: Noble;
  /** bleno on the phone's peripheral controller (mdoc peripheral server mode). */
  readonly bleno?: Bleno;
  /** ATT MTU noble asks for when connecting (default 517; the profile's for a given wallet). */
  readonly mtu?: number;
  /** Bound on each stack operation (power-on, connect, discovery, a read, a disconnect), ms. Default 10 000. */
  readonly operationMs?: number;
}

const GATT_PROPERTIES: readonly GattProperty[] = ['read', 'write', 'writeWithoutResponse', 'notify'];
const HCI_REMOTE_USER_TERMINATED = 0x13;
const HCI_LOCAL_HOST_TERMINATED = 0x16;

function unavailable(mode: string): RadioError {
  return new RadioError('invalid_argument', `this HCI phone has no ${mode} controller`);
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class HciPhoneRadio implements PhoneRadio {
  readonly central: PhoneCentral;
  readonly peripheral: PhonePeripheral;
  /** Every value sent and received, in order (bounded: the oldest go first past 100,000). */
  readonly trace: TracedValue[] = [];

  constructor(private readonly options: HciPhoneRadioOptions) {
    const ms = options.operationMs ?? 10_000;
    const record = (value: TracedValue): void => {
      if (this.trace.length >= 100_000) this.trace.shift();
      this.trace.push(value);
    };
    // Its two controllers share the air: its own scan must not find its own advertisement (the in-memory
    // radio never reports a device's advertisement to itself; here they are two controllers).
    const ownAddress = (): string | undefined => {
      const address: unknown = options.bleno ? Reflect.get(options.bleno, 'address') : undefined;
      return typeof address === 'string' ? address.toLowerCase() : undefined;
    };
    this.central = options.noble ? new NobleCentralSide(options.noble, options.mtu ?? 517, ms, record, ownAddress) : unavailableCentral();
    this.peripheral = options.bleno ? new BlenoPeripheralSide(options.bleno, ms, record) : unavailablePeripheral();
  }

  /** Removes its listeners from noble and bleno; the libraries stay up for the next phone on them. */
  dispose(): void {
    for (const side of [this.central, this.peripheral])
      if (side instanceof BlenoPeripheralSide || side instanceof NobleCentralSide) side.dispose();
  }
}

function unavailableCentral(): PhoneCentral {
  return { scanFor: () => Promise.reject(unavailable('central')), connect: () => Promise.reject(unavailable('central')) };
}

function unavailablePeripheral(): PhonePeripheral {
  const fail = (): Promise<never> => Promise.reject(unavailable('peripheral'));
  return {
    setServices: () => {
      throw unavailable('peripheral');
    },
    startAdvertising: fail,
    stopAdvertising: () => Promise.resolve(),
    connections: [],
    notify: fail,
    disconnect: () => Promise.resolve(),
  };
}

// ---------------------------------------------------------------- peripheral server mode on bleno

interface Connection extends ServerConnection {
  mtu: number;
  readonly updates: Map<string, BlenoUpdateValueCallback>;
  closedByUs: boolean;
}

class BlenoPeripheralSide implements PhonePeripheral {
  private handlers: GattServerHandlers = {};
  private servicesSet: Promise<unknown> = Promise.resolve();
  private readonly byHandle = new Map<number, Connection>();
  /** bleno reports an MTU exchange without its connection: the phone serves one reader at a time. */
  private lastMtu = 23;

  constructor(
    private readonly bleno: Bleno,
    private readonly ms: number,
    private readonly record: (value: TracedValue) => void,
  ) {
    bleno.on('accept', this.acceptListener);
    bleno.on('disconnect', this.disconnectListener);
    bleno.on('mtuChange', this.mtuListener);
    bleno.on('stateChange', this.stateListener); // the first one starts bleno's bindings
  }

  private readonly acceptListener = (address: string, handle: number): void => this.onAccept(address, handle);
  private readonly disconnectListener = (_address: string, handle: number): void => this.onDisconnect(handle);
  private readonly mtuListener = (mtu: number): void => {
    this.lastMtu = mtu;
    for (const connection of this.byHandle.values()) connection.mtu = mtu;
  };
  private readonly stateListener = (): void => undefined;

  dispose(): void {
    this.bleno.removeListener('accept', this.acceptListener);
    this.bleno.removeListener('disconnect', this.disconnectListener);
    this.bleno.removeListener('mtuChange', this.mtuListener);
    this.bleno.removeListener('stateChange', this.stateListener);
  }

  get connections(): readonly ServerConnection[] {
    return [...this.byHandle.values()];
  }

  private onAccept(address: string, handle: number): void {
    const id = address.replaceAll(':', '').toLowerCase();
    const central = { name: '', address, id };
    if (this.handlers.accept?.(central) === false) {
      this.bleno.disconnect(handle);
      return;
    }
    const connection: Connection = { handle, linkId: `hci-${handle}`, central, mtu: this.lastMtu, updates: new Map(), closedByUs: false };
    this.byHandle.set(handle, connection);
    this.handlers.onConnect?.(connection);
  }

  private onDisconnect(handle: number): void {
    const connection = this.byHandle.get(handle);
    if (!connection) return;
    this.byHandle.delete(handle);
    const info: DisconnectInfo = connection.closedByUs
      ? { reason: 'connection terminated by local host', hciCode: HCI_LOCAL_HOST_TERMINATED, by: 'peripheral' }
      : { reason: 'the reader disconnected', hciCode: HCI_REMOTE_USER_TERMINATED, by: 'central' };
    this.handlers.onDisconnect?.(connection, info);
  }

  setServices(services: readonly GattServiceDefinition[], handlers: GattServerHandlers = {}): void {
    this.handlers = handlers;
    const built = services.map(
      (service) =>
        new this.bleno.PrimaryService({
          uuid: blenoUuid(service.uuid),
          characteristics: service.characteristics.map((c) => this.characteristic(service.uuid, c.uuid, c.properties)),
        }),
    );
    const set = whenPoweredOn(this.bleno, this.ms, 'phone bleno').then(() =>
      awaitEvent(this.bleno, 'servicesSet', 'servicesSetError', () => this.bleno.setServices(built), {
        timeoutMs: this.ms,
        what: 'phone setServices',
      }),
    );
    set.catch(() => undefined); // reported by startAdvertising
    this.servicesSet = set;
  }

  private characteristic(serviceUuid: string, uuid: string, properties: readonly GattProperty[]): BlenoCharacteristic {
    const key = uuidKey(uuid);
    const request = (handle: number): { connection: ServerConnection; serviceUuid: string; characteristicUuid: string } | undefined => {
      const connection = this.byHandle.get(handle);
      return connection ? { connection, serviceUuid, characteristicUuid: uuid } : undefined;
    };
    const attCode = (error: unknown): number => (error instanceof AttError ? error.code : AttErrorCode.UNLIKELY_ERROR);
    return new this.bleno.Characteristic({
      uuid: blenoUuid(uuid),
      properties: properties.filter((p): p is GattProperty & BlenoProperty => GATT_PROPERTIES.includes(p)),
      onReadRequest: (handle, offset, callback) => {
        const base = request(Number(handle));
        const { handlers } = this;
        if (!base || !handlers.onRead) {
          callback(base ? AttErrorCode.READ_NOT_PERMITTED : AttErrorCode.UNLIKELY_ERROR, Buffer.alloc(0));
          return;
        }
        Promise.resolve()
          .then(() => handlers.onRead?.({ ...base, offset }) ?? new Uint8Array())
          .then(
            (value) => callback(0, Buffer.from(value)),
            (error: unknown) => callback(attCode(error), Buffer.alloc(0)),
          );
      },
      onWriteRequest: (handle, data, _offset, withoutResponse, callback) => {
        const base = request(Number(handle));
        if (!base) {
          callback(AttErrorCode.UNLIKELY_ERROR);
          return;
        }
        const bytes = new Uint8Array(data);
        this.record({ direction: 'received', characteristic: key, data: bytes });
        Promise.resolve()
          .then(() => this.handlers.onWrite?.({ ...base, data: bytes, withoutResponse }))
          .then(
            () => callback(0),
            (error: unknown) => callback(attCode(error)),
          );
      },
      onSubscribe: (handle, maxValueSize, update) => {
        const connection = this.byHandle.get(Number(handle));
        if (!connection) return;
        connection.updates.set(key, update);
        connection.mtu = maxValueSize + 3;
        this.handlers.onSubscribe?.({ connection, serviceUuid, characteristicUuid: uuid, maxValueSize });
      },
      onUnsubscribe: (handle) => {
        const connection = this.byHandle.get(Number(handle));
        if (!connection?.updates.delete(key)) return;
        this.handlers.onUnsubscribe?.({ connection, serviceUuid, characteristicUuid: uuid });
      },
    });
  }

  async startAdvertising(data: AdvertisingData): Promise<void> {
    await this.servicesSet;
    const [error] = await awaitEvent(
      this.bleno,
      'advertisingStart',
      'advertisingStartError',
      () => this.bleno.startAdvertising(data.localName ?? 'phone', data.serviceUuids.map(blenoUuid)),
      {
        timeoutMs: this.ms,
        what: 'phone advertising',
      },
    );
    if (error) throw error instanceof Error ? error : new Error('phone advertising failed');
  }

  async stopAdvertising(): Promise<void> {
    await awaitEvent(this.bleno, 'advertisingStop', undefined, () => this.bleno.stopAdvertising(), {
      timeoutMs: this.ms,
      what: 'phone stop advertising',
    }).catch(() => undefined);
  }

  notify(handle: number, _serviceUuid: string, characteristicUuid: string, data: Uint8Array): Promise<void> {
    const connection = this.byHandle.get(handle);
    if (!connection) return Promise.reject(new RadioError('disconnected', `no connection ${handle}`));
    const key = uuidKey(characteristicUuid);
    const update = connection.updates.get(key);
    if (!update) return Promise.reject(new RadioError('not_subscribed', `the reader has not subscribed to ${characteristicUuid}`));
    if (data.length > connection.mtu - 3)
      return Promise.reject(new RadioError('payload_too_large', `${data.length} bytes above ATT_MTU ${connection.mtu} − 3`));
    this.record({ direction: 'sent', characteristic: key, data: new Uint8Array(data) });
    update(Buffer.from(data));
    // Queued in bleno's ACL queue; the next turn lets the reader's packets in between two chunks.
    return new Promise((resolve) => setImmediate(resolve));
  }

  async disconnect(handle: number): Promise<void> {
    const connection = this.byHandle.get(handle);
    if (!connection) return;
    connection.closedByUs = true;
    await awaitEvent(this.bleno, 'disconnect', undefined, () => this.bleno.disconnect(handle), {
      timeoutMs: this.ms,
      what: 'phone disconnect',
      filter: (args) => args[1] === handle,
    }).catch(() => undefined);
  }
}

// ---------------------------------------------------------------- central client mode on noble

class NobleCentralSide implements PhoneCentral {
  private readonly seen = new Map<string, Peripheral>();

  constructor(
    private readonly noble: Noble,
    private readonly mtu: number,
    private readonly ms: number,
    private readonly record: (value: TracedValue) => void,
    private readonly ownAddress: () => string | undefined,
  ) {
    noble.on('stateChange', this.stateListener); // the first one starts noble's bindings
  }

  private readonly stateListener = (): void => undefined;

  dispose(): void {
    this.noble.removeListener('stateChange', this.stateListener);
  }

  async scanFor(serviceUuid: string, options: { readonly signal?: AbortSignal } = {}): Promise<AdvertisementReport> {
    const { signal } = options;
    await whenPoweredOn(this.noble, this.ms, 'phone noble');
    const wanted = nobleUuid(serviceUuid);
    return new Promise<AdvertisementReport>((resolve, reject) => {
      const finish = (): void => {
        this.noble.removeListener('discover', onDiscover);
        signal?.removeEventListener('abort', onAbort);
        this.noble.stopScanning();
      };
      const onDiscover = (peripheral: Peripheral): void => {
        if ((peripheral.connectable as boolean | undefined) === false) return;
        if (peripheral.address.toLowerCase() === this.ownAddress()) return;
        finish();
        this.seen.set(peripheral.id, peripheral);
        const ad = peripheral.advertisement;
        resolve({
          peripheral: { name: ad.localName, address: peripheral.address, id: peripheral.id },
          localName: ad.localName,
          serviceUuids: ad.serviceUuids,
          rssi: peripheral.rssi,
          connectable: true,
        });
      };
      const onAbort = (): void => {
        finish();
        reject(new RadioError('aborted', 'scan aborted'));
      };
      if (signal?.aborted) {
        reject(new RadioError('aborted', 'scan aborted'));
        return;
      }
      this.noble.on('discover', onDiscover);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.noble.startScanningAsync([wanted], false).catch((error: unknown) => {
        finish();
        reject(error instanceof Error ? error : new Error(String(error)));
      });
    });
  }

  async connect(id: string, options: ConnectOptions = {}): Promise<PhoneLink> {
    const peripheral = this.seen.get(id);
    if (!peripheral) throw new RadioError('not_found', `the phone has not seen ${id}`);
    if (options.signal?.aborted) throw new RadioError('aborted', 'connect aborted');
    const connecting = (peripheral as Peripheral & { connectAsync(o: { mtu: number }): Promise<void> }).connectAsync({
      mtu: options.mtu ?? this.mtu,
    });
    try {
      await withTimeout(connecting, this.ms, 'phone connect');
    } catch (error) {
      if (peripheral.state === 'connecting') peripheral.cancelConnect();
      throw error;
    }
    // noble learns the MTU from the exchange it starts at connect; the link reports it once known.
    return new NobleLink(peripheral, this.ms, this.record, () => {
      this.seen.delete(id);
      forgetPeripheral(this.noble, id);
    });
  }
}

class NobleLink implements PhoneLink {
  private readonly characteristics = new Map<string, Characteristic>();
  private readonly notificationListeners = new Set<(event: NotificationEvent) => void>();
  private readonly disconnectListeners = new Set<(info: DisconnectInfo) => void>();
  private down: DisconnectInfo | undefined;
  private closingByUs = false;

  constructor(
    private readonly peripheral: Peripheral,
    private readonly ms: number,
    private readonly record: (value: TracedValue) => void,
    private readonly forget: () => void,
  ) {
    peripheral.once('disconnect', (reason: DisconnectReason) => {
      const code = typeof reason === 'number' ? reason : HCI_REMOTE_USER_TERMINATED;
      this.down = this.closingByUs
        ? { reason: 'connection terminated by local host', hciCode: HCI_LOCAL_HOST_TERMINATED, by: 'central' }
        : { reason: disconnectReasonText(reason), hciCode: code, by: 'peripheral' };
      for (const characteristic of this.characteristics.values()) characteristic.removeAllListeners('data');
      const info = this.down;
      for (const listener of [...this.disconnectListeners]) listener(info);
      this.disconnectListeners.clear();
      this.forget();
    });
  }

  get mtu(): number {
    return typeof this.peripheral.mtu === 'number' && this.peripheral.mtu >= 23 ? this.peripheral.mtu : 23;
  }

  private live(): void {
    if (this.down) throw new RadioError('disconnected', `the link is down: ${this.down.reason}`);
  }

  async discover(serviceUuids: readonly string[] = []): Promise<DiscoveredService[]> {
    this.live();
    const services = await withTimeout(
      this.peripheral.discoverServicesAsync(serviceUuids.map(nobleUuid)),
      this.ms,
      'phone service discovery',
    );
    const out: DiscoveredService[] = [];
    for (const service of services) {
      const characteristics = await withTimeout(service.discoverCharacteristicsAsync([]), this.ms, 'phone characteristic discovery');
      for (const c of characteristics) this.characteristics.set(`${uuidKey(service.uuid)}/${uuidKey(c.uuid)}`, c);
      out.push({
        uuid: service.uuid,
        characteristics: characteristics.map((c) => ({
          uuid: c.uuid,
          properties: c.properties.filter((p): p is GattProperty => GATT_PROPERTIES.includes(p as GattProperty)),
        })),
      });
    }
    return out;
  }

  private target(serviceUuid: string, characteristicUuid: string): Characteristic {
    this.live();
    const c = this.characteristics.get(`${uuidKey(serviceUuid)}/${uuidKey(characteristicUuid)}`);
    if (!c) throw new AttError(AttErrorCode.ATTRIBUTE_NOT_FOUND);
    return c;
  }

  async read(serviceUuid: string, characteristicUuid: string): Promise<Uint8Array> {
    const value = await withTimeout(this.target(serviceUuid, characteristicUuid).readAsync(), this.ms, 'phone read');
    return new Uint8Array(value);
  }

  async write(serviceUuid: string, characteristicUuid: string, data: Uint8Array, options: WriteOptions = {}): Promise<void> {
    const c = this.target(serviceUuid, characteristicUuid);
    this.record({ direction: 'sent', characteristic: uuidKey(characteristicUuid), data: new Uint8Array(data) });
    await withTimeout(c.writeAsync(Buffer.from(data), options.withoutResponse ?? false), this.ms, 'phone write');
    this.live();
  }

  async subscribe(serviceUuid: string, characteristicUuid: string): Promise<void> {
    const c = this.target(serviceUuid, characteristicUuid);
    const key = uuidKey(characteristicUuid);
    // Listening first: the first notification may follow the CCCD write at once.
    c.on('data', (data: Buffer, isNotification: boolean) => {
      if (!isNotification) return;
      const bytes = new Uint8Array(data);
      this.record({ direction: 'received', characteristic: key, data: bytes });
      for (const listener of [...this.notificationListeners]) listener({ serviceUuid, characteristicUuid, data: bytes });
    });
    await withTimeout(c.subscribeAsync(), this.ms, 'phone subscribe');
  }

  async disconnect(): Promise<void> {
    if (this.down) return;
    this.closingByUs = true;
    const gone = new Promise<void>((resolve) => this.disconnectListeners.add(() => resolve()));
    this.peripheral.disconnect();
    await withTimeout(gone, this.ms, 'phone disconnect').catch(() => undefined);
  }

  onNotification(listener: (event: NotificationEvent) => void): () => void {
    this.notificationListeners.add(listener);
    return () => this.notificationListeners.delete(listener);
  }

  onDisconnect(listener: (info: DisconnectInfo) => void): () => void {
    const info = this.down;
    if (info) {
      setImmediate(() => listener(info));
      return () => undefined;
    }
    this.disconnectListeners.add(listener);
    return () => this.disconnectListeners.delete(listener);
  }
}
