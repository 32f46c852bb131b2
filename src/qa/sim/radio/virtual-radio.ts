/**
 * Virtual radio: an in-memory BLE "air" shared by the virtual phone and the kiosk's virtual device ports
 * (and, later, by the noble/bleno injected bindings). It models GATT at the level of ATT operations, not
 * bytes: advertising, scanning, connections with a negotiated ATT MTU, service discovery, Read/Read Blob,
 * Write Request/Command, CCCD subscriptions and notifications, disconnections.
 *
 * Semantics
 * - Devices get deterministic identities in creation order: address `c0:de:SS:00:HH:LL` (SS = the radio's
 *   seed), id = the address without colons (noble's peripheral id), label `name@address` in logs.
 * - A device has a central and a peripheral facet; either may be used (a phone plays both roles).
 * - Every event reaches the other side asynchronously, in its own macrotask, never within the caller's
 *   call. Each link has one ordered pipe per direction: packets (and the final disconnect) arrive in the
 *   order sent, after the latency fault if any.
 * - The central's ATT bearer runs one operation at a time, in call order (as noble's hci GATT queue
 *   does): a request (read, write with response, subscribe, discover) holds the queue until its response;
 *   a Write Command resolves once it is on the air.
 * - MTU = min(central's requested, peripheral's preferred), default 247, clamped to 23…517. Writes and
 *   notifications above ATT_MTU − 3 are refused (`payload_too_large`), nothing is truncated. A read
 *   response carries at most ATT_MTU − 1 bytes; a full one makes the client continue with Read Blob at
 *   the next offset, so servers see every offset (values are capped at 512 bytes, as in ATT).
 * - The radio enforces characteristic properties (read → 0x02 Read Not Permitted, write → 0x03 Write Not
 *   Permitted, subscribe without notify → 0x0A); a server's handlers enforce anything else by throwing
 *   `AttError`. Errors for Write Commands come back as `onCommandError` events, as bleno sends them.
 * - Disconnection: the side that disconnects is told at once (next macrotask) and loses what is queued
 *   towards it; the other side gets the disconnect after every packet sent to it before. A radio drop
 *   (fault, power off, `dropLinks`) ends both sides at once and loses everything in flight.
 *
 * How the issue-5 bindings sit on top (one binding object per RadioDevice facet):
 * - noble binding → `device.central`: `start()/init()` → `stateChange` from `device.powered` (and
 *   `onPowerChange`); `startScanning(uuids, dup)` → `startScan({})`, filtering `report.serviceUuids`
 *   (stack spelling) with hci's exact string match, emitting `discover(report.peripheral.id, address,
 *   'random', connectable, {localName, serviceUuids, serviceData: []}, rssi)`; `connect(id, {mtu})` →
 *   `connect(id, {mtu})` then `connect(id, null)` and, a tick later, `onMtu(id, link.mtu)`;
 *   `discoverServices`/`discoverCharacteristics` → `link.discover()` (properties already carry noble's
 *   names); `read` → `link.read()` → `read(…, data, false)`; `write(…, withoutResponse)` →
 *   `link.write()` → `write(id, svc, chr)` in both modes; `notify(…, on)` → `subscribe`/`unsubscribe` →
 *   `notify(…, on)`; `link.onNotification` → `read(…, data, true)`; `disconnect(id)` → `link.disconnect()`;
 *   `link.onDisconnect` → `disconnect(id, info.hciCode)`.
 * - bleno binding → `device.peripheral`: `setServices(blenoServices)` → `setServices(definitions,
 *   handlers)` where the handlers call the bleno Characteristic objects (`onRead` → `readRequest(offset,
 *   cb)` as a promise, `onWrite` → `writeRequest(data, 0, withoutResponse, cb)`, `onSubscribe` →
 *   `subscribe(maxValueSize, data => peripheral.notify(handle, …))`, `onUnsubscribe`), or, to keep bleno's
 *   own `hci-socket/gatt.js`, translate each radio operation into the ATT PDU it stands for (Read,
 *   Read Blob at `offset`, Write Request/Command, CCCD write) on a fake ACL stream per connection;
 *   `startAdvertising(name, uuids)` / `stopAdvertising()` → the same here, then `advertisingStart(err)`;
 *   `onConnect` → `accept(address, handle)` + `mtuChange(mtu)`; `onDisconnect` → `disconnect(address,
 *   handle)`; `disconnect(handle)` → `peripheral.disconnect(handle)`.
 * - Across processes, the radio stays in one process and a loopback socket carries these calls and
 *   events as messages; nothing here depends on sharing memory with the far side except the handlers.
 */
import { AttError, AttErrorCode, RadioError, attErrorName } from './errors.js';
import { Pipe } from './pipe.js';
import type {
  AdvertisementReport,
  AdvertisingData,
  AttRequest,
  CommandErrorEvent,
  ConnectOptions,
  DeviceInfo,
  DisconnectInfo,
  DiscoveredService,
  GattProperty,
  GattServerHandlers,
  GattServiceDefinition,
  NotificationEvent,
  RadioFaults,
  RadioLogEntry,
  RadioLogEvent,
  ScanFilter,
  ScanHandle,
  ServerConnection,
  WriteOptions,
} from './types.js';
import { stackUuid, uuidKey } from './uuid.js';
import { errorText } from '../../../common/error-text.js';

/** Both UUIDs in the stack's spelling, or the error a bad one gives (a GATT call rejects, it never throws). */
function stackUuidPair(serviceUuid: string, characteristicUuid: string): [string, string] | Error {
  try {
    return [stackUuid(serviceUuid), stackUuid(characteristicUuid)];
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

export * from './errors.js';
export type * from './types.js';
export { sameUuid, stackUuid, uuidKey } from './uuid.js';

export const DEFAULT_MTU = 247;
export const MIN_MTU = 23;
export const MAX_MTU = 517;
/** ATT caps attribute values at 512 bytes; long reads stop there. */
export const MAX_ATTRIBUTE_LENGTH = 512;

const HCI_REMOTE_USER_TERMINATED = 0x13;
const HCI_CONNECTION_TIMEOUT = 0x08;
const HCI_POWER_OFF = 0x15;
const PROPERTIES: readonly GattProperty[] = ['read', 'write', 'writeWithoutResponse', 'notify'];

export interface RadioOptions {
  /** Third address byte of every device, so two radios in one process never share addresses. */
  readonly seed?: number;
  /** Millisecond clock for latencies and log timestamps (default `performance.now`). */
  readonly now?: () => number;
  /** Also log every read, write and notification (one entry per packet), not just link events. */
  readonly logPackets?: boolean;
}

export interface DeviceOptions {
  readonly name?: string;
  /** ATT MTU this device asks for as a central and accepts as a peripheral (default 247). */
  readonly mtu?: number;
}

export interface RadioDevice {
  readonly name: string;
  readonly address: string;
  readonly id: string;
  readonly info: DeviceInfo;
  readonly preferredMtu: number;
  readonly powered: boolean;
  /** Off: advertising and scans stop, every link drops (HCI 0x15). */
  setPowered(on: boolean): void;
  onPowerChange(listener: (powered: boolean) => void): () => void;
  readonly faults: RadioFaults;
  /** Replaces the device's faults; new links take them (latency applies at once). */
  setFaults(faults: RadioFaults): void;
  /** Radio loss: every link of the device drops at once, both ends told, packets in flight lost. */
  dropLinks(reason?: string): void;
  readonly central: RadioCentral;
  readonly peripheral: RadioPeripheral;
}

export interface RadioCentral {
  readonly device: RadioDevice;
  /** Reports each advertising set once per scan, current ones first. `onEnd` hears a power-off. */
  startScan(filter: ScanFilter, onReport: (report: AdvertisementReport) => void, onEnd?: (error: RadioError) => void): ScanHandle;
  /** The first advertiser of the service, now or later; rejects on abort (`aborted`) or power-off. */
  scanFor(serviceUuid: string, options?: { readonly signal?: AbortSignal }): Promise<AdvertisementReport>;
  /** Connects to an advertising peripheral (by id or address). */
  connect(peripheral: string, options?: ConnectOptions): Promise<RadioLink>;
  readonly links: readonly RadioLink[];
}

/** The central's end of a link. */
export interface RadioLink {
  readonly id: string;
  readonly peripheral: DeviceInfo;
  /** ATT MTU as reported (the enforced one unless the `reportedMtu` fault says otherwise). */
  readonly mtu: number;
  readonly connected: boolean;
  readonly disconnectInfo: DisconnectInfo | undefined;
  /** The services (all, or those listed) with their characteristics. */
  discover(serviceUuids?: readonly string[]): Promise<DiscoveredService[]>;
  /** Whole value, read with Read then Read Blob while responses come back full. */
  read(serviceUuid: string, characteristicUuid: string): Promise<Uint8Array>;
  write(serviceUuid: string, characteristicUuid: string, data: Uint8Array, options?: WriteOptions): Promise<void>;
  subscribe(serviceUuid: string, characteristicUuid: string): Promise<void>;
  unsubscribe(serviceUuid: string, characteristicUuid: string): Promise<void>;
  /** Idempotent; resolves once this end is down (its `onDisconnect` listeners have run). */
  disconnect(reason?: string): Promise<void>;
  onNotification(listener: (event: NotificationEvent) => void): () => void;
  /** Called once; at once (asynchronously) when the link is already down. */
  onDisconnect(listener: (info: DisconnectInfo) => void): () => void;
  onCommandError(listener: (event: CommandErrorEvent) => void): () => void;
}

export interface RadioPeripheral {
  readonly device: RadioDevice;
  /** Replaces the GATT table and its handlers (bleno's `setServices`). */
  setServices(services: readonly GattServiceDefinition[], handlers?: GattServerHandlers): void;
  readonly services: readonly GattServiceDefinition[];
  /** Starts (or replaces) connectable advertising; discoverable at once, resolves on the next turn. */
  startAdvertising(data: AdvertisingData): Promise<void>;
  stopAdvertising(): Promise<void>;
  readonly advertising: AdvertisingData | undefined;
  readonly connections: readonly ServerConnection[];
  isSubscribed(handle: number, serviceUuid: string, characteristicUuid: string): boolean;
  /** Resolves once the notification is on the air; rejects unless the central subscribed. */
  notify(handle: number, serviceUuid: string, characteristicUuid: string, data: Uint8Array): Promise<void>;
  /** Idempotent; resolves once this end is down. */
  disconnect(handle: number, reason?: string): Promise<void>;
}

// ---------------------------------------------------------------- the radio

export class VirtualRadio {
  private readonly air: Air;

  constructor(options: RadioOptions = {}) {
    this.air = new Air(options);
  }

  addDevice(options: DeviceOptions = {}): RadioDevice {
    return this.air.addDevice(options);
  }

  get devices(): readonly RadioDevice[] {
    return [...this.air.devices];
  }

  /** A device by id or address (any case, colons or not). */
  findDevice(idOrAddress: string): RadioDevice | undefined {
    return this.air.find(idOrAddress);
  }

  /**
   * Takes a device off the air for good (a phone that left the counter): it is powered off — its links
   * drop, its scans and advertising stop — and forgotten, so a long QA session that keeps bringing new
   * phones does not keep every old one. Its address is never given to another device.
   */
  removeDevice(device: RadioDevice): void {
    this.air.removeDevice(device);
  }

  onLog(listener: (entry: RadioLogEntry) => void): () => void {
    this.air.logListeners.add(listener);
    return () => this.air.logListeners.delete(listener);
  }

  /** Powers every device off: links drop, advertising and scans stop, no packet stays scheduled. */
  shutdown(): void {
    for (const device of this.air.devices) device.setPowered(false);
  }
}

type LogFields = Omit<RadioLogEntry, 'seq' | 'atMs' | 'event'>;

const hex2 = (n: number): string => (n & 0xff).toString(16).padStart(2, '0');
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const abortError = (): RadioError => new RadioError('aborted', 'aborted');
const EMPTY = new Uint8Array(0);

function validMtu(mtu: number, what: string): number {
  if (!Number.isInteger(mtu) || mtu < MIN_MTU || mtu > MAX_MTU) {
    throw new RadioError('invalid_argument', `${what}: MTU must be an integer in ${MIN_MTU}…${MAX_MTU}, got ${mtu}`);
  }
  return mtu;
}

function attCodeOf(error: unknown): number {
  return error instanceof AttError ? error.code : AttErrorCode.UNLIKELY_ERROR;
}

class Air {
  readonly devices: DeviceImpl[] = [];
  readonly scans = new Set<ScanState>();
  readonly logListeners = new Set<(entry: RadioLogEntry) => void>();
  readonly now: () => number;
  readonly logPackets: boolean;
  private readonly seed: number;
  private readonly started: number;
  private seq = 0;
  /** Devices ever added: addresses come from it, so a removed device's address is never reused. */
  private deviceCounter = 0;
  private linkCounter = 0;
  private adSetCounter = 0;

  constructor(options: RadioOptions) {
    this.now = options.now ?? ((): number => performance.now());
    this.logPackets = options.logPackets ?? false;
    this.seed = (options.seed ?? 0) & 0xff;
    this.started = this.now();
  }

  get packetLogging(): boolean {
    return this.logPackets && this.logListeners.size > 0;
  }

  log(event: RadioLogEvent, fields: LogFields = {}): void {
    if (this.logListeners.size === 0) return;
    const entry: RadioLogEntry = { seq: ++this.seq, atMs: Math.round((this.now() - this.started) * 1000) / 1000, event, ...fields };
    for (const listener of [...this.logListeners]) {
      try {
        listener(entry);
      } catch {
        // a failing log sink must not break the air
      }
    }
  }

  /** Runs a user callback; an exception is logged, never thrown into the radio. */
  safely(what: string, device: DeviceImpl, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.log('handler_error', { device: device.label, detail: `${what}: ${errorText(e)}` });
    }
  }

  addDevice(options: DeviceOptions): DeviceImpl {
    const n = this.deviceCounter + 1;
    if (n > 0xffffff) throw new RadioError('invalid_argument', 'too many devices on one radio');
    this.deviceCounter = n;
    const address = `c0:de:${hex2(this.seed)}:${hex2(n >> 16)}:${hex2(n >> 8)}:${hex2(n)}`;
    const device = new DeviceImpl(this, options.name ?? `device-${n}`, address, validMtu(options.mtu ?? DEFAULT_MTU, 'device'));
    this.devices.push(device);
    this.log('device_added', { device: device.label, mtu: device.preferredMtu });
    return device;
  }

  removeDevice(device: RadioDevice): void {
    const index = this.devices.findIndex((d) => d === device);
    if (index < 0) return;
    const impl = this.devices[index] as DeviceImpl;
    impl.setPowered(false);
    this.devices.splice(index, 1);
    this.log('device_removed', { device: impl.label });
  }

  find(idOrAddress: string): DeviceImpl | undefined {
    const id = idOrAddress.replaceAll(':', '').toLowerCase();
    return this.devices.find((d) => d.id === id);
  }

  nextLinkId(): string {
    return `link-${++this.linkCounter}`;
  }

  nextAdSet(): number {
    return ++this.adSetCounter;
  }

  /** A peripheral started advertising: scans that want it hear it. */
  advertisementStarted(device: DeviceImpl): void {
    for (const scan of this.scans) scan.offer(device);
  }

  /** The connection request reached the peripheral: accept or refuse, then set the link up. */
  establish(central: DeviceImpl, peripheral: DeviceImpl, requestedMtu: number): LinkImpl {
    if (!central.powered) throw new RadioError('powered_off', `${central.label} is powered off`);
    if (!peripheral.powered || !peripheral.peripheralImpl.advertisement) {
      throw new RadioError('unreachable', `${peripheral.label} is not advertising`);
    }
    for (const link of central.links) {
      if (link.centralDevice === central && link.peripheralDevice === peripheral && link.centralOpen) {
        throw new RadioError('already_connected', `${central.label} is already connected to ${peripheral.label}`);
      }
    }
    if (peripheral.refusalsLeft > 0) {
      peripheral.refusalsLeft--;
      throw new RadioError('connection_refused', `${peripheral.label} refused the connection (fault)`);
    }
    const handlers = peripheral.peripheralImpl.handlers;
    if (handlers.accept) {
      let accepted = false;
      try {
        accepted = handlers.accept(central.info);
      } catch {
        accepted = false;
      }
      if (!accepted) throw new RadioError('connection_refused', `${peripheral.label} refused the connection`);
    }
    const link = new LinkImpl(this, central, peripheral, requestedMtu);
    central.links.add(link);
    peripheral.links.add(link);
    this.log('connect', { device: central.label, peer: peripheral.label, link: link.id, mtu: link.attMtu });
    this.safely('onConnect', peripheral, () => handlers.onConnect?.(link.serverConnection));
    link.armImmediateDrop();
    return link;
  }
}

// ---------------------------------------------------------------- devices

class DeviceImpl implements RadioDevice {
  readonly id: string;
  readonly info: DeviceInfo;
  readonly label: string;
  readonly links = new Set<LinkImpl>();
  readonly centralImpl: CentralImpl;
  readonly peripheralImpl: PeripheralImpl;
  refusalsLeft = 0;
  private isPowered = true;
  private faultSet: RadioFaults = {};
  private readonly powerListeners = new Set<(powered: boolean) => void>();

  constructor(
    readonly air: Air,
    readonly name: string,
    readonly address: string,
    readonly preferredMtu: number,
  ) {
    this.id = address.replaceAll(':', '');
    this.info = Object.freeze({ name, address, id: this.id });
    this.label = `${name}@${address}`;
    this.centralImpl = new CentralImpl(this);
    this.peripheralImpl = new PeripheralImpl(this);
  }

  get central(): RadioCentral {
    return this.centralImpl;
  }

  get peripheral(): RadioPeripheral {
    return this.peripheralImpl;
  }

  get powered(): boolean {
    return this.isPowered;
  }

  get faults(): RadioFaults {
    return this.faultSet;
  }

  setPowered(on: boolean): void {
    if (on === this.isPowered) return;
    this.isPowered = on;
    this.air.log('power', { device: this.label, detail: on ? 'on' : 'off' });
    if (!on) {
      this.peripheralImpl.powerOff();
      this.centralImpl.powerOff();
      for (const link of [...this.links]) link.lose(`${this.name} powered off`, HCI_POWER_OFF);
    }
    for (const listener of [...this.powerListeners]) setImmediate(() => this.air.safely('onPowerChange', this, () => listener(on)));
  }

  onPowerChange(listener: (powered: boolean) => void): () => void {
    this.powerListeners.add(listener);
    return () => this.powerListeners.delete(listener);
  }

  setFaults(faults: RadioFaults): void {
    if (faults.mtu !== undefined) validMtu(faults.mtu, 'faults.mtu');
    if (faults.reportedMtu !== undefined && (!Number.isInteger(faults.reportedMtu) || faults.reportedMtu < 0)) {
      throw new RadioError('invalid_argument', 'faults.reportedMtu must be a non-negative integer');
    }
    this.faultSet = { ...faults };
    this.refusalsLeft = faults.refuseConnections ?? 0;
  }

  dropLinks(reason = 'connection timeout'): void {
    for (const link of [...this.links]) link.lose(reason, HCI_CONNECTION_TIMEOUT);
  }
}

function latencyBetween(a: DeviceImpl, b: DeviceImpl): number {
  return Math.max(0, (a.faults.latencyMs ?? 0) + (b.faults.latencyMs ?? 0));
}

// ---------------------------------------------------------------- scanning

class ScanState {
  active = true;
  private readonly seen = new Set<number>();

  constructor(
    private readonly owner: DeviceImpl,
    private readonly keys: ReadonlySet<string>,
    private readonly onReport: (report: AdvertisementReport) => void,
    private readonly onEnd: ((error: RadioError) => void) | undefined,
  ) {}

  offer(device: DeviceImpl): void {
    const ad = device.peripheralImpl.advertisement;
    if (!this.active || !ad || device === this.owner) return;
    if (this.keys.size > 0 && !ad.keys.some((k) => this.keys.has(k))) return;
    const setId = ad.setId;
    setImmediate(() => {
      // Still scanning, still the same advertising set, not reported yet.
      if (!this.active || device.peripheralImpl.advertisement?.setId !== setId || this.seen.has(setId)) return;
      this.seen.add(setId);
      const report: AdvertisementReport = {
        peripheral: device.info,
        localName: ad.data.localName,
        serviceUuids: [...ad.data.serviceUuids],
        rssi: -50,
        connectable: true,
      };
      if (this.owner.air.packetLogging) this.owner.air.log('discovered', { device: this.owner.label, peer: device.label });
      this.owner.air.safely('onReport', this.owner, () => this.onReport(report));
    });
  }

  end(error?: RadioError): void {
    if (!this.active) return;
    this.active = false;
    this.owner.air.scans.delete(this);
    this.owner.centralImpl.scans.delete(this);
    this.owner.air.log('scan_stop', { device: this.owner.label, ...(error ? { reason: error.message } : {}) });
    const onEnd = this.onEnd;
    if (error && onEnd) this.owner.air.safely('onEnd', this.owner, () => onEnd(error));
  }
}

// ---------------------------------------------------------------- central facet

class CentralImpl implements RadioCentral {
  readonly scans = new Set<ScanState>();

  constructor(private readonly owner: DeviceImpl) {}

  get device(): RadioDevice {
    return this.owner;
  }

  get links(): readonly RadioLink[] {
    return [...this.owner.links].filter((l) => l.centralDevice === this.owner && l.centralOpen);
  }

  startScan(filter: ScanFilter, onReport: (report: AdvertisementReport) => void, onEnd?: (error: RadioError) => void): ScanHandle {
    if (!this.owner.powered) throw new RadioError('powered_off', `${this.owner.label} is powered off`);
    const keys = new Set((filter.serviceUuids ?? []).map(uuidKey));
    const scan = new ScanState(this.owner, keys, onReport, onEnd);
    this.owner.air.scans.add(scan);
    this.scans.add(scan);
    this.owner.air.log('scan_start', { device: this.owner.label, ...(keys.size > 0 ? { service: [...keys].join(',') } : {}) });
    for (const device of this.owner.air.devices) scan.offer(device);
    return { stop: () => scan.end() };
  }

  scanFor(serviceUuid: string, options: { readonly signal?: AbortSignal } = {}): Promise<AdvertisementReport> {
    const { signal } = options;
    return new Promise<AdvertisementReport>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError());
        return;
      }
      let handle: ScanHandle | undefined;
      let done = false;
      const finish = (): void => {
        done = true;
        signal?.removeEventListener('abort', onAbort);
        handle?.stop();
      };
      const onAbort = (): void => {
        finish();
        reject(abortError());
      };
      try {
        handle = this.startScan(
          { serviceUuids: [serviceUuid] },
          (report) => {
            if (done) return;
            finish();
            resolve(report);
          },
          (error) => {
            if (done) return;
            finish();
            reject(error);
          },
        );
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  connect(target: string, options: ConnectOptions = {}): Promise<RadioLink> {
    const { signal } = options;
    const air = this.owner.air;
    if (signal?.aborted) return Promise.reject(abortError());
    if (!this.owner.powered) return Promise.reject(new RadioError('powered_off', `${this.owner.label} is powered off`));
    const peripheral = air.find(target);
    if (!peripheral) return Promise.reject(new RadioError('not_found', `no device ${target} on the air`));
    if (peripheral === this.owner) return Promise.reject(new RadioError('invalid_argument', 'a device cannot connect to itself'));
    let requested: number;
    try {
      requested = validMtu(options.mtu ?? this.owner.preferredMtu, 'connect');
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    return new Promise<RadioLink>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let immediate: NodeJS.Immediate | undefined;
      const onAbort = (): void => {
        if (timer) clearTimeout(timer);
        if (immediate) clearImmediate(immediate);
        air.log('connect_failed', { device: this.owner.label, peer: peripheral.label, reason: 'aborted' });
        reject(abortError());
      };
      // The connection request travels to the peripheral like any packet.
      const arrive = (): void => {
        signal?.removeEventListener('abort', onAbort);
        try {
          resolve(air.establish(this.owner, peripheral, requested));
        } catch (e) {
          air.log('connect_failed', {
            device: this.owner.label,
            peer: peripheral.label,
            reason: errorText(e),
          });
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      };
      const delay = latencyBetween(this.owner, peripheral);
      if (delay > 0) timer = setTimeout(arrive, delay);
      else immediate = setImmediate(arrive);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  powerOff(): void {
    for (const scan of [...this.scans]) scan.end(new RadioError('powered_off', `${this.owner.label} powered off`));
  }
}

// ---------------------------------------------------------------- peripheral facet

interface CharacteristicEntry {
  readonly uuid: string;
  readonly key: string;
  readonly properties: readonly GattProperty[];
}

interface ServiceEntry {
  readonly uuid: string;
  readonly key: string;
  readonly characteristics: readonly CharacteristicEntry[];
}

interface Advertisement {
  readonly setId: number;
  readonly data: AdvertisingData;
  readonly keys: readonly string[];
}

class PeripheralImpl implements RadioPeripheral {
  handlers: GattServerHandlers = {};
  advertisement: Advertisement | undefined;
  private table: readonly ServiceEntry[] = [];
  private nextHandle = 0x40;

  constructor(private readonly owner: DeviceImpl) {}

  get device(): RadioDevice {
    return this.owner;
  }

  get services(): readonly GattServiceDefinition[] {
    return this.table.map((s) => ({
      uuid: s.uuid,
      characteristics: s.characteristics.map((c) => ({ uuid: c.uuid, properties: [...c.properties] })),
    }));
  }

  setServices(services: readonly GattServiceDefinition[], handlers: GattServerHandlers = {}): void {
    const table: ServiceEntry[] = [];
    const serviceKeys = new Set<string>();
    for (const service of services) {
      const key = uuidKey(service.uuid);
      if (serviceKeys.has(key)) throw new RadioError('invalid_argument', `service ${service.uuid} defined twice`);
      serviceKeys.add(key);
      const characteristicKeys = new Set<string>();
      const characteristics: CharacteristicEntry[] = [];
      for (const c of service.characteristics) {
        const ckey = uuidKey(c.uuid);
        if (characteristicKeys.has(ckey))
          throw new RadioError('invalid_argument', `characteristic ${c.uuid} defined twice in ${service.uuid}`);
        characteristicKeys.add(ckey);
        const unknown = c.properties.filter((p) => !PROPERTIES.includes(p));
        if (unknown.length > 0) throw new RadioError('invalid_argument', `unknown properties ${unknown.join(', ')} on ${c.uuid}`);
        characteristics.push({ uuid: stackUuid(c.uuid), key: ckey, properties: PROPERTIES.filter((p) => c.properties.includes(p)) });
      }
      table.push({ uuid: stackUuid(service.uuid), key, characteristics });
    }
    this.table = table;
    this.handlers = handlers;
    this.owner.air.log('services_set', { device: this.owner.label, service: table.map((s) => s.uuid).join(',') });
  }

  find(service: string, characteristic: string): { service: ServiceEntry; characteristic: CharacteristicEntry } | undefined {
    const skey = uuidKey(service);
    const ckey = uuidKey(characteristic);
    const s = this.table.find((entry) => entry.key === skey);
    const c = s?.characteristics.find((entry) => entry.key === ckey);
    return s && c ? { service: s, characteristic: c } : undefined;
  }

  discover(keys: readonly string[]): DiscoveredService[] {
    return this.table
      .filter((s) => keys.length === 0 || keys.includes(s.key))
      .map((s) => ({ uuid: s.uuid, characteristics: s.characteristics.map((c) => ({ uuid: c.uuid, properties: [...c.properties] })) }));
  }

  startAdvertising(data: AdvertisingData): Promise<void> {
    if (!this.owner.powered) return Promise.reject(new RadioError('powered_off', `${this.owner.label} is powered off`));
    let serviceUuids: string[];
    try {
      serviceUuids = data.serviceUuids.map(stackUuid);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    const keys = serviceUuids.map(uuidKey);
    const ad: Advertisement = {
      setId: this.owner.air.nextAdSet(),
      data: Object.freeze({ ...(data.localName !== undefined ? { localName: data.localName } : {}), serviceUuids }),
      keys,
    };
    this.advertisement = ad;
    this.owner.air.log('advertising_start', {
      device: this.owner.label,
      service: serviceUuids.join(','),
      ...(data.localName ? { detail: data.localName } : {}),
    });
    this.owner.air.advertisementStarted(this.owner);
    return nextTurn();
  }

  stopAdvertising(): Promise<void> {
    if (this.advertisement) {
      this.advertisement = undefined;
      this.owner.air.log('advertising_stop', { device: this.owner.label });
    }
    return nextTurn();
  }

  get advertising(): AdvertisingData | undefined {
    return this.advertisement?.data;
  }

  get connections(): readonly ServerConnection[] {
    return [...this.owner.links].filter((l) => l.peripheralDevice === this.owner && l.peripheralOpen).map((l) => l.serverConnection);
  }

  private link(handle: number): LinkImpl | undefined {
    for (const l of this.owner.links) if (l.peripheralDevice === this.owner && l.handle === handle && l.peripheralOpen) return l;
    return undefined;
  }

  allocateHandle(): number {
    return this.nextHandle++;
  }

  isSubscribed(handle: number, serviceUuid: string, characteristicUuid: string): boolean {
    const found = this.find(serviceUuid, characteristicUuid);
    return found !== undefined && (this.link(handle)?.subscriptions.has(`${found.service.key}/${found.characteristic.key}`) ?? false);
  }

  notify(handle: number, serviceUuid: string, characteristicUuid: string, data: Uint8Array): Promise<void> {
    const link = this.link(handle);
    if (!link) return Promise.reject(new RadioError('not_connected', `${this.owner.label} has no connection ${handle}`));
    try {
      link.serverNotify(serviceUuid, characteristicUuid, data);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    return Promise.resolve();
  }

  disconnect(handle: number, reason = 'remote user terminated connection'): Promise<void> {
    const link = this.link(handle);
    if (!link) return Promise.resolve();
    link.peripheralDisconnect(reason);
    return nextTurn();
  }

  powerOff(): void {
    if (this.advertisement) {
      this.advertisement = undefined;
      this.owner.air.log('advertising_stop', { device: this.owner.label, reason: 'power off' });
    }
  }
}

// ---------------------------------------------------------------- links

/** Packets towards the peripheral (ATT requests and commands, and the central's disconnect). */
type ToPeripheral =
  | { readonly kind: 'discover'; readonly serviceKeys: readonly string[] }
  | { readonly kind: 'read'; readonly service: string; readonly characteristic: string; readonly offset: number }
  | {
      readonly kind: 'write';
      readonly service: string;
      readonly characteristic: string;
      readonly data: Uint8Array;
      readonly withoutResponse: boolean;
    }
  | { readonly kind: 'cccd'; readonly service: string; readonly characteristic: string; readonly enable: boolean }
  | { readonly kind: 'terminate'; readonly info: DisconnectInfo };

interface Response {
  readonly kind: 'response';
  readonly error?: number;
  readonly value?: Uint8Array;
  readonly services?: DiscoveredService[];
}

/** Packets towards the central (responses, notifications, and the peripheral's disconnect). */
type ToCentral =
  | Response
  | { readonly kind: 'notification'; readonly service: string; readonly characteristic: string; readonly data: Uint8Array }
  | { readonly kind: 'command_error'; readonly service: string; readonly characteristic: string; readonly code: number }
  | { readonly kind: 'terminate'; readonly info: DisconnectInfo };

class LinkImpl implements RadioLink {
  readonly id: string;
  readonly handle: number;
  /** The ATT MTU enforced on payloads. */
  readonly attMtu: number;
  readonly mtu: number;
  readonly serverConnection: ServerConnection;
  readonly subscriptions = new Set<string>();
  centralOpen = true;
  peripheralOpen = true;
  private info: DisconnectInfo | undefined;
  private readonly toPeripheral: Pipe<ToPeripheral>;
  private readonly toCentral: Pipe<ToCentral>;
  private readonly dropLimits: {
    readonly toPeripheral: number | undefined;
    readonly toCentral: number | undefined;
    readonly reason: string;
  };
  private deliveredToPeripheral = 0;
  private deliveredToCentral = 0;
  private pending: { resolve: (response: Response) => void; reject: (error: Error) => void } | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly notificationListeners = new Set<(event: NotificationEvent) => void>();
  private readonly disconnectListeners = new Set<(info: DisconnectInfo) => void>();
  private readonly commandErrorListeners = new Set<(event: CommandErrorEvent) => void>();

  constructor(
    private readonly air: Air,
    readonly centralDevice: DeviceImpl,
    readonly peripheralDevice: DeviceImpl,
    requestedMtu: number,
  ) {
    this.id = air.nextLinkId();
    this.handle = peripheralDevice.peripheralImpl.allocateHandle();
    const cf = centralDevice.faults;
    const pf = peripheralDevice.faults;
    const minOf = (a: number | undefined, b: number | undefined): number | undefined =>
      a === undefined ? b : b === undefined ? a : Math.min(a, b);
    this.attMtu = minOf(cf.mtu, pf.mtu) ?? Math.min(requestedMtu, peripheralDevice.preferredMtu);
    this.mtu = cf.reportedMtu ?? pf.reportedMtu ?? this.attMtu;
    this.dropLimits = {
      toPeripheral: minOf(cf.dropAfterPackets?.toPeripheral, pf.dropAfterPackets?.toPeripheral),
      toCentral: minOf(cf.dropAfterPackets?.toCentral, pf.dropAfterPackets?.toCentral),
      reason: cf.dropAfterPackets?.reason ?? pf.dropAfterPackets?.reason ?? 'connection timeout',
    };
    this.serverConnection = Object.freeze({ handle: this.handle, linkId: this.id, central: centralDevice.info, mtu: this.mtu });
    const latency = (): number => latencyBetween(centralDevice, peripheralDevice);
    this.toPeripheral = new Pipe((p) => this.atPeripheral(p), latency, air.now);
    this.toCentral = new Pipe((p) => this.atCentral(p), latency, air.now);
  }

  get peripheral(): DeviceInfo {
    return this.peripheralDevice.info;
  }

  get connected(): boolean {
    return this.centralOpen;
  }

  get disconnectInfo(): DisconnectInfo | undefined {
    return this.info;
  }

  /** A drop-after-0 fault: the link goes down right after it came up. */
  armImmediateDrop(): void {
    if (this.dropLimits.toPeripheral === 0 || this.dropLimits.toCentral === 0) {
      setImmediate(() => this.lose(this.dropLimits.reason, HCI_CONNECTION_TIMEOUT));
    }
  }

  // ------------------------------------------------ central side: ATT client

  discover(serviceUuids: readonly string[] = []): Promise<DiscoveredService[]> {
    let keys: string[];
    try {
      keys = serviceUuids.map(uuidKey);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    return this.enqueue(async () => {
      const response = await this.request({ kind: 'discover', serviceKeys: keys });
      return response.services ?? [];
    });
  }

  read(serviceUuid: string, characteristicUuid: string): Promise<Uint8Array> {
    const uuids = stackUuidPair(serviceUuid, characteristicUuid);
    if (uuids instanceof Error) return Promise.reject(uuids);
    const [service, characteristic] = uuids;
    return this.enqueue(async () => {
      const parts: Uint8Array[] = [];
      let total = 0;
      for (;;) {
        const response = await this.request({ kind: 'read', service, characteristic, offset: total });
        if (response.error !== undefined)
          throw new AttError(response.error, `read ${characteristic} at offset ${total}: ${attErrorName(response.error)}`);
        const part = response.value ?? EMPTY;
        parts.push(part);
        total += part.length;
        // A response shorter than ATT_MTU − 1 is the last one (ATT long read).
        if (part.length < this.attMtu - 1 || total >= MAX_ATTRIBUTE_LENGTH) break;
      }
      if (total > MAX_ATTRIBUTE_LENGTH)
        throw new AttError(
          AttErrorCode.INVALID_ATTRIBUTE_VALUE_LENGTH,
          `read ${characteristic}: value longer than ${MAX_ATTRIBUTE_LENGTH} bytes`,
        );
      const value = new Uint8Array(total);
      let at = 0;
      for (const part of parts) {
        value.set(part, at);
        at += part.length;
      }
      return value;
    });
  }

  write(serviceUuid: string, characteristicUuid: string, data: Uint8Array, options: WriteOptions = {}): Promise<void> {
    const withoutResponse = options.withoutResponse ?? false;
    const uuids = stackUuidPair(serviceUuid, characteristicUuid);
    if (uuids instanceof Error) return Promise.reject(uuids);
    const [service, characteristic] = uuids;
    if (!this.centralOpen) return Promise.reject(this.lostError());
    const max = this.attMtu - 3;
    if (data.length > max) {
      return Promise.reject(
        new RadioError('payload_too_large', `write of ${data.length} bytes to ${characteristic}: ATT_MTU ${this.attMtu} allows ${max}`),
      );
    }
    const copy = new Uint8Array(data); // the caller may reuse its buffer once the call returns
    return this.enqueue(async () => {
      if (this.air.packetLogging) this.logPacket('write', characteristic, copy.length, withoutResponse ? 'command' : 'request');
      if (withoutResponse) {
        this.toPeripheral.send({ kind: 'write', service, characteristic, data: copy, withoutResponse: true });
        return;
      }
      const response = await this.request({ kind: 'write', service, characteristic, data: copy, withoutResponse: false });
      if (response.error !== undefined) throw new AttError(response.error, `write ${characteristic}: ${attErrorName(response.error)}`);
    });
  }

  subscribe(serviceUuid: string, characteristicUuid: string): Promise<void> {
    return this.writeCccd(serviceUuid, characteristicUuid, true);
  }

  unsubscribe(serviceUuid: string, characteristicUuid: string): Promise<void> {
    return this.writeCccd(serviceUuid, characteristicUuid, false);
  }

  private writeCccd(serviceUuid: string, characteristicUuid: string, enable: boolean): Promise<void> {
    const uuids = stackUuidPair(serviceUuid, characteristicUuid);
    if (uuids instanceof Error) return Promise.reject(uuids);
    const [service, characteristic] = uuids;
    return this.enqueue(async () => {
      const response = await this.request({ kind: 'cccd', service, characteristic, enable });
      if (response.error !== undefined) {
        throw new AttError(
          response.error,
          `${enable ? 'subscribe to' : 'unsubscribe from'} ${characteristic}: ${attErrorName(response.error)}`,
        );
      }
    });
  }

  disconnect(reason = 'remote user terminated connection'): Promise<void> {
    if (!this.centralOpen) return Promise.resolve();
    const info: DisconnectInfo = { reason, hciCode: HCI_REMOTE_USER_TERMINATED, by: 'central' };
    this.air.log('disconnect', { device: this.centralDevice.label, peer: this.peripheralDevice.label, link: this.id, reason });
    this.closeCentral(info, false);
    this.toPeripheral.send({ kind: 'terminate', info });
    return nextTurn(); // queued after the local listeners that closeCentral scheduled
  }

  onNotification(listener: (event: NotificationEvent) => void): () => void {
    this.notificationListeners.add(listener);
    return () => this.notificationListeners.delete(listener);
  }

  onDisconnect(listener: (info: DisconnectInfo) => void): () => void {
    const info = this.info;
    if (info && !this.centralOpen) {
      let cancelled = false;
      setImmediate(() => {
        if (!cancelled) this.air.safely('onDisconnect', this.centralDevice, () => listener(info));
      });
      return () => (cancelled = true);
    }
    this.disconnectListeners.add(listener);
    return () => this.disconnectListeners.delete(listener);
  }

  onCommandError(listener: (event: CommandErrorEvent) => void): () => void {
    this.commandErrorListeners.add(listener);
    return () => this.commandErrorListeners.delete(listener);
  }

  /** One ATT operation at a time, in call order. */
  private enqueue<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.chain.then(() => {
      if (!this.centralOpen) throw this.lostError();
      return operation();
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private request(packet: ToPeripheral): Promise<Response> {
    if (!this.centralOpen) return Promise.reject(this.lostError());
    return new Promise<Response>((resolve, reject) => {
      this.pending = { resolve, reject };
      this.toPeripheral.send(packet);
    });
  }

  private lostError(): RadioError {
    return new RadioError('disconnected', `${this.id} is down${this.info ? `: ${this.info.reason}` : ''}`);
  }

  private logPacket(event: RadioLogEvent, characteristic: string, bytes: number, detail?: string, offset?: number): void {
    this.air.log(event, {
      device: this.centralDevice.label,
      peer: this.peripheralDevice.label,
      link: this.id,
      characteristic,
      bytes,
      ...(offset !== undefined ? { offset } : {}),
      ...(detail !== undefined ? { detail } : {}),
    });
  }

  /** A packet reached the central. */
  private atCentral(packet: ToCentral): void {
    if (!this.centralOpen) return;
    switch (packet.kind) {
      case 'terminate':
        this.closeCentral(packet.info, true);
        return;
      case 'response': {
        const pending = this.pending;
        this.pending = undefined;
        pending?.resolve(packet);
        if (packet.value) this.countDelivered('toCentral');
        return;
      }
      case 'notification': {
        const event: NotificationEvent = { serviceUuid: packet.service, characteristicUuid: packet.characteristic, data: packet.data };
        for (const listener of [...this.notificationListeners])
          this.air.safely('onNotification', this.centralDevice, () => listener(event));
        this.countDelivered('toCentral');
        return;
      }
      case 'command_error': {
        const event: CommandErrorEvent = { serviceUuid: packet.service, characteristicUuid: packet.characteristic, code: packet.code };
        for (const listener of [...this.commandErrorListeners])
          this.air.safely('onCommandError', this.centralDevice, () => listener(event));
        return;
      }
    }
  }

  /** Ends the central's side; `now`: in this task (a delivered disconnect), else on the next turn. */
  private closeCentral(info: DisconnectInfo, now: boolean): void {
    if (!this.centralOpen) return;
    this.centralOpen = false;
    this.info = info;
    this.toCentral.close();
    const pending = this.pending;
    this.pending = undefined;
    pending?.reject(this.lostError());
    const listeners = [...this.disconnectListeners];
    this.disconnectListeners.clear();
    const fire = (): void => {
      for (const listener of listeners) this.air.safely('onDisconnect', this.centralDevice, () => listener(info));
    };
    if (now) fire();
    else setImmediate(fire);
    this.release();
  }

  // ------------------------------------------------ peripheral side: ATT server

  serverNotify(serviceUuid: string, characteristicUuid: string, data: Uint8Array): void {
    const found = this.peripheralDevice.peripheralImpl.find(serviceUuid, characteristicUuid);
    if (!found) throw new RadioError('invalid_argument', `no characteristic ${characteristicUuid} in service ${serviceUuid}`);
    const { service, characteristic } = found;
    if (!this.subscriptions.has(`${service.key}/${characteristic.key}`)) {
      throw new RadioError('not_subscribed', `${this.centralDevice.label} has not subscribed to ${characteristic.uuid}`);
    }
    const max = this.attMtu - 3;
    if (data.length > max) {
      throw new RadioError(
        'payload_too_large',
        `notification of ${data.length} bytes on ${characteristic.uuid}: ATT_MTU ${this.attMtu} allows ${max}`,
      );
    }
    if (this.air.packetLogging)
      this.air.log('notify', {
        device: this.peripheralDevice.label,
        peer: this.centralDevice.label,
        link: this.id,
        characteristic: characteristic.uuid,
        bytes: data.length,
      });
    this.toCentral.send({ kind: 'notification', service: service.uuid, characteristic: characteristic.uuid, data: new Uint8Array(data) });
  }

  peripheralDisconnect(reason: string): void {
    if (!this.peripheralOpen) return;
    const info: DisconnectInfo = { reason, hciCode: HCI_REMOTE_USER_TERMINATED, by: 'peripheral' };
    this.air.log('disconnect', { device: this.peripheralDevice.label, peer: this.centralDevice.label, link: this.id, reason });
    this.closePeripheral(info, false);
    this.toCentral.send({ kind: 'terminate', info });
  }

  private respond(response: Response): void {
    if (this.peripheralOpen) this.toCentral.send(response);
  }

  private refuse(code: number, characteristic: string, withoutResponse = false, service = ''): void {
    this.air.log('att_error', { device: this.peripheralDevice.label, peer: this.centralDevice.label, link: this.id, characteristic, code });
    if (!withoutResponse) this.respond({ kind: 'response', error: code });
    else if (this.peripheralOpen) this.toCentral.send({ kind: 'command_error', service, characteristic, code });
  }

  /** A packet reached the peripheral. */
  private atPeripheral(packet: ToPeripheral): void {
    if (!this.peripheralOpen) return;
    const server = this.peripheralDevice.peripheralImpl;
    switch (packet.kind) {
      case 'terminate':
        this.closePeripheral(packet.info, true);
        return;
      case 'discover':
        this.air.log('discover_services', { device: this.centralDevice.label, peer: this.peripheralDevice.label, link: this.id });
        this.respond({ kind: 'response', services: server.discover(packet.serviceKeys) });
        return;
      case 'read':
        this.serveRead(packet);
        return;
      case 'write':
        this.serveWrite(packet);
        this.countDelivered('toPeripheral');
        return;
      case 'cccd':
        this.serveCccd(packet);
        return;
    }
  }

  private serveRead(packet: Extract<ToPeripheral, { kind: 'read' }>): void {
    const server = this.peripheralDevice.peripheralImpl;
    const found = server.find(packet.service, packet.characteristic);
    if (!found) {
      this.refuse(AttErrorCode.ATTRIBUTE_NOT_FOUND, packet.characteristic);
      return;
    }
    if (!found.characteristic.properties.includes('read')) {
      this.refuse(AttErrorCode.READ_NOT_PERMITTED, packet.characteristic);
      return;
    }
    const handlers = server.handlers;
    if (!handlers.onRead) {
      this.refuse(AttErrorCode.UNLIKELY_ERROR, packet.characteristic);
      return;
    }
    if (this.air.packetLogging)
      this.air.log('read', {
        device: this.centralDevice.label,
        peer: this.peripheralDevice.label,
        link: this.id,
        characteristic: found.characteristic.uuid,
        offset: packet.offset,
      });
    const request = {
      connection: this.serverConnection,
      serviceUuid: found.service.uuid,
      characteristicUuid: found.characteristic.uuid,
      offset: packet.offset,
    };
    new Promise<Uint8Array>((resolve) => resolve(handlers.onRead?.(request) ?? EMPTY)).then(
      (value) => this.respond({ kind: 'response', value: new Uint8Array(value.subarray(0, this.attMtu - 1)) }),
      (e: unknown) => {
        if (!(e instanceof AttError)) this.handlerError('onRead', e);
        this.refuse(attCodeOf(e), packet.characteristic);
      },
    );
  }

  private serveWrite(packet: Extract<ToPeripheral, { kind: 'write' }>): void {
    const { withoutResponse } = packet;
    const server = this.peripheralDevice.peripheralImpl;
    const found = server.find(packet.service, packet.characteristic);
    const refuse = (code: number): void => this.refuse(code, packet.characteristic, withoutResponse, packet.service);
    if (!found) {
      refuse(AttErrorCode.ATTRIBUTE_NOT_FOUND);
      return;
    }
    if (!found.characteristic.properties.includes(withoutResponse ? 'writeWithoutResponse' : 'write')) {
      refuse(AttErrorCode.WRITE_NOT_PERMITTED);
      return;
    }
    const handlers = server.handlers;
    if (!handlers.onWrite) {
      refuse(AttErrorCode.UNLIKELY_ERROR);
      return;
    }
    const request = {
      connection: this.serverConnection,
      serviceUuid: found.service.uuid,
      characteristicUuid: found.characteristic.uuid,
      data: packet.data,
      withoutResponse,
    };
    new Promise<void>((resolve) => {
      resolve(handlers.onWrite?.(request));
    }).then(
      () => {
        if (!withoutResponse) this.respond({ kind: 'response' });
      },
      (e: unknown) => {
        if (!(e instanceof AttError)) this.handlerError('onWrite', e);
        refuse(attCodeOf(e));
      },
    );
  }

  private serveCccd(packet: Extract<ToPeripheral, { kind: 'cccd' }>): void {
    const server = this.peripheralDevice.peripheralImpl;
    const found = server.find(packet.service, packet.characteristic);
    // No notify property: no CCCD descriptor to write.
    if (!found?.characteristic.properties.includes('notify')) {
      this.refuse(AttErrorCode.ATTRIBUTE_NOT_FOUND, packet.characteristic);
      return;
    }
    const key = `${found.service.key}/${found.characteristic.key}`;
    const request: AttRequest = {
      connection: this.serverConnection,
      serviceUuid: found.service.uuid,
      characteristicUuid: found.characteristic.uuid,
    };
    const handlers = server.handlers;
    const changed = packet.enable !== this.subscriptions.has(key);
    this.air.log(packet.enable ? 'subscribe' : 'unsubscribe', {
      device: this.centralDevice.label,
      peer: this.peripheralDevice.label,
      link: this.id,
      characteristic: found.characteristic.uuid,
    });
    if (changed) {
      try {
        if (packet.enable) {
          this.subscriptions.add(key);
          handlers.onSubscribe?.({ ...request, maxValueSize: this.attMtu - 3 });
        } else {
          this.subscriptions.delete(key);
          handlers.onUnsubscribe?.(request);
        }
      } catch (e) {
        // The server refused the CCCD write: the subscription state stays as it was.
        if (packet.enable) this.subscriptions.delete(key);
        else this.subscriptions.add(key);
        if (!(e instanceof AttError)) this.handlerError(packet.enable ? 'onSubscribe' : 'onUnsubscribe', e);
        this.refuse(attCodeOf(e), packet.characteristic);
        return;
      }
    }
    this.respond({ kind: 'response' });
  }

  private handlerError(what: string, e: unknown): void {
    this.air.log('handler_error', {
      device: this.peripheralDevice.label,
      link: this.id,
      detail: `${what}: ${errorText(e)}`,
    });
  }

  private closePeripheral(info: DisconnectInfo, now: boolean): void {
    if (!this.peripheralOpen) return;
    this.peripheralOpen = false;
    this.toPeripheral.close();
    this.subscriptions.clear();
    const handlers = this.peripheralDevice.peripheralImpl.handlers;
    const fire = (): void =>
      this.air.safely('onDisconnect', this.peripheralDevice, () => handlers.onDisconnect?.(this.serverConnection, info));
    if (now) fire();
    else setImmediate(fire);
    this.release();
  }

  // ------------------------------------------------ both

  /** Radio loss: both ends down at once, everything in flight lost. */
  lose(reason: string, hciCode: number): void {
    if (!this.centralOpen && !this.peripheralOpen) return;
    const info: DisconnectInfo = { reason, hciCode, by: 'radio' };
    this.air.log('link_lost', {
      device: this.centralDevice.label,
      peer: this.peripheralDevice.label,
      link: this.id,
      reason,
      code: hciCode,
    });
    this.toPeripheral.close();
    this.toCentral.close();
    this.closeCentral(info, false);
    this.closePeripheral(info, false);
  }

  private countDelivered(direction: 'toPeripheral' | 'toCentral'): void {
    const limit = this.dropLimits[direction];
    if (limit === undefined) return;
    const count = direction === 'toPeripheral' ? ++this.deliveredToPeripheral : ++this.deliveredToCentral;
    if (count >= limit) this.lose(this.dropLimits.reason, HCI_CONNECTION_TIMEOUT);
  }

  /** Forgets the link once both ends are down. */
  private release(): void {
    if (this.centralOpen || this.peripheralOpen) return;
    this.toPeripheral.close();
    this.toCentral.close();
    this.centralDevice.links.delete(this);
    this.peripheralDevice.links.delete(this);
  }
}
