/**
 * bleno bindings on a virtual radio device's peripheral facet, so the bleno adapter runs against the
 * virtual phone with bleno's real object model. The bindings replace only HCI/GAP: they keep bleno's
 * own `lib/hci-socket/gatt.js` and translate each radio operation into the ATT PDU it stands for on a
 * fake ACL stream per connection (ble.md §2.5), so the attribute table, property checks, CCCD handling,
 * MTU capping and notification framing are the library's code:
 *
 * - radio connect → `accept(address, handle)`, then the central's Exchange MTU with the link's MTU
 *   (→ `mtuChange`) and an ATT discovery of the table (Read By Group Type, Read By Type, Find
 *   Information) to learn the handles the radio's (UUID-addressed) operations map to;
 * - radio read at offset → Read / Read Blob; write → Write Request / Write Command; subscribe and
 *   unsubscribe → a Write Request of `01 00` / `00 00` on the CCCD; gatt's responses (possibly async,
 *   e.g. a read answered later by the app) resolve the radio's handler; gatt's Handle Value
 *   Notifications go out as radio notifications;
 * - radio disconnect → the ACL stream ends (gatt drops the subscriptions), then `disconnect(address,
 *   handle)`;
 * - hci's habits kept: advertising restarts after an accept and after a disconnect while the app has not
 *   stopped it (ble.md §3.2); `servicesSet` is emitted synchronously; state changes follow the device's
 *   power. The radio negotiated the MTU already (both devices' preferences), so gatt's 256 cap is raised
 *   to the link's value when a link asks for more: both ends then frame with one MTU.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Bleno, BlenoBindings, BlenoConnection, BlenoConstructor, BlenoPrimaryService } from '../ble/bleno-types.js';
import {
  AttError,
  AttErrorCode,
  RadioError,
  uuidKey,
  type AdvertisingData,
  type AttRequest,
  type GattProperty,
  type GattServerHandlers,
  type GattServiceDefinition,
  type RadioDevice,
  type ServerConnection,
} from '../../sim/radio/virtual-radio.js';

/** bleno's GATT server (`lib/hci-socket/gatt.js`), the part used here. */
interface BlenoGatt extends EventEmitter {
  maxMtu: number;
  setServices(services: readonly BlenoPrimaryService[]): void;
  updateName(name: string): void;
  registerAclStream(aclStream: EventEmitter, connection: number): void;
}
type BlenoGattConstructor = new () => BlenoGatt;

const requireCjs = createRequire(import.meta.url);

const ATT_CID = 0x0004;
const OP_ERROR = 0x01;
const OP_MTU_REQ = 0x02;
const OP_FIND_INFO_REQ = 0x04;
const OP_FIND_INFO_RESP = 0x05;
const OP_READ_BY_TYPE_REQ = 0x08;
const OP_READ_BY_TYPE_RESP = 0x09;
const OP_READ_REQ = 0x0a;
const OP_READ_RESP = 0x0b;
const OP_READ_BLOB_REQ = 0x0c;
const OP_READ_BLOB_RESP = 0x0d;
const OP_READ_BY_GROUP_REQ = 0x10;
const OP_READ_BY_GROUP_RESP = 0x11;
const OP_WRITE_REQ = 0x12;
const OP_WRITE_RESP = 0x13;
const OP_HANDLE_NOTIFY = 0x1b;
const OP_WRITE_CMD = 0x52;
const UUID_PRIMARY_SERVICE = 0x2800;
const UUID_CHARACTERISTIC = 0x2803;
const UUID_CCCD = 0x2902;
const RADIO_PROPERTIES: readonly GattProperty[] = ['read', 'write', 'writeWithoutResponse', 'notify'];

/** A little-endian UUID field as bleno spells UUIDs (lower-case hex, most significant byte first). */
const uuidOf = (bytes: Buffer): string => Buffer.from(bytes).reverse().toString('hex');

const pdu = (opcode: number, ...fields: readonly (readonly [value: number, bytes: 1 | 2])[]): Buffer => {
  const out = Buffer.alloc(1 + fields.reduce((n, [, bytes]) => n + bytes, 0));
  out[0] = opcode;
  let at = 1;
  for (const [value, bytes] of fields) {
    if (bytes === 1) out.writeUInt8(value, at);
    else out.writeUInt16LE(value, at);
    at += bytes;
  }
  return out;
};

const attErrorOf = (response: Buffer | undefined): AttError | undefined => {
  if (!response) return new AttError(AttErrorCode.UNLIKELY_ERROR, 'no ATT response from bleno');
  return response[0] === OP_ERROR ? new AttError(response[4] ?? AttErrorCode.UNLIKELY_ERROR) : undefined;
};

interface CharacteristicHandles {
  readonly service: string;
  readonly characteristic: string;
  readonly valueHandle: number;
  readonly cccdHandle: number | undefined;
}

/** The fake ACL stream gatt registers for one connection (it emits `data(handle, cid, pdu)` and `end`). */
class FakeAclStream extends EventEmitter {
  /** gatt checks it for `secure` properties; the virtual links are never encrypted. */
  readonly encrypted = false;

  constructor(
    private readonly handle: number,
    private readonly onSend: (response: Buffer) => void,
  ) {
    super();
  }

  /** gatt → central. */
  write(cid: number, data: Buffer): void {
    if (cid === ATT_CID) this.onSend(data);
  }

  /** central → gatt. */
  push(data: Buffer): void {
    this.emit('data', this.handle, ATT_CID, data);
  }

  close(): void {
    this.emit('end', this.handle);
  }
}

/** One connection's ATT bearer: the central's side of the conversation with gatt. */
class AttBearer {
  readonly acl: FakeAclStream;
  private readonly handles = new Map<string, CharacteristicHandles>();
  private readonly byValueHandle = new Map<number, CharacteristicHandles>();
  /** Requests waiting for their response, oldest first (ATT: one at a time per bearer). */
  private readonly pending: ((response: Buffer) => void)[] = [];
  /** Set while a synchronous exchange runs: gatt answers discovery, CCCD writes and errors in the same call. */
  private capture: Buffer[] | undefined;
  private open = true;

  constructor(
    readonly connection: ServerConnection,
    private readonly onNotification: (target: CharacteristicHandles, value: Buffer) => void,
  ) {
    this.acl = new FakeAclStream(connection.handle, (response) => this.fromGatt(response));
  }

  private fromGatt(response: Buffer): void {
    if (!this.open) return;
    if (response[0] === OP_HANDLE_NOTIFY) {
      const target = this.byValueHandle.get(response.readUInt16LE(1));
      if (target) this.onNotification(target, response.subarray(3));
      return;
    }
    if (this.capture) {
      this.capture.push(response);
      return;
    }
    this.pending.shift()?.(response);
  }

  /** Sends a PDU gatt answers within the call (or not at all). */
  exchange(request: Buffer): Buffer | undefined {
    const captured: Buffer[] = [];
    this.capture = captured;
    try {
      this.acl.push(request);
    } finally {
      this.capture = undefined;
    }
    return captured[0];
  }

  /** Sends a request whose response may come later (a read the app answers asynchronously). */
  request(request: Buffer): Promise<Buffer> {
    if (!this.open) return Promise.reject(new RadioError('disconnected', 'connection closed'));
    return new Promise<Buffer>((resolve) => {
      this.pending.push(resolve);
      this.acl.push(request);
    });
  }

  exchangeMtu(mtu: number): void {
    this.exchange(pdu(OP_MTU_REQ, [mtu, 2]));
  }

  /** Learns the handles of the table gatt serves now, as a client's discovery would. */
  discover(): void {
    this.handles.clear();
    this.byValueHandle.clear();
    const services: { start: number; end: number; uuid: string }[] = [];
    for (let start = 1; start <= 0xffff; ) {
      const response = this.exchange(pdu(OP_READ_BY_GROUP_REQ, [start, 2], [0xffff, 2], [UUID_PRIMARY_SERVICE, 2]));
      if (response?.[0] !== OP_READ_BY_GROUP_RESP) break;
      const length = response.readUInt8(1);
      let end = start;
      for (let i = 2; i + length <= response.length; i += length) {
        end = response.readUInt16LE(i + 2);
        services.push({ start: response.readUInt16LE(i), end, uuid: uuidOf(response.subarray(i + 4, i + length)) });
      }
      start = end + 1;
    }
    for (const service of services) {
      for (let start = service.start; start <= service.end; ) {
        const response = this.exchange(pdu(OP_READ_BY_TYPE_REQ, [start, 2], [service.end, 2], [UUID_CHARACTERISTIC, 2]));
        if (response?.[0] !== OP_READ_BY_TYPE_RESP) break;
        const length = response.readUInt8(1);
        let declaration = start;
        for (let i = 2; i + length <= response.length; i += length) {
          declaration = response.readUInt16LE(i);
          const properties = response.readUInt8(i + 2);
          const valueHandle = response.readUInt16LE(i + 3);
          const characteristic = uuidOf(response.subarray(i + 5, i + length));
          const cccdHandle = properties & 0x30 ? this.findCccd(valueHandle, service.end) : undefined;
          const entry: CharacteristicHandles = { service: service.uuid, characteristic, valueHandle, cccdHandle };
          this.handles.set(`${uuidKey(service.uuid)}/${uuidKey(characteristic)}`, entry);
          this.byValueHandle.set(valueHandle, entry);
        }
        start = declaration + 1;
      }
    }
  }

  /** The CCCD among the descriptors after a value handle (before the next characteristic declaration). */
  private findCccd(valueHandle: number, end: number): number | undefined {
    if (valueHandle >= end) return undefined;
    const response = this.exchange(pdu(OP_FIND_INFO_REQ, [valueHandle + 1, 2], [end, 2]));
    // Format 0x01: 16-bit UUIDs, 4 bytes per entry.
    if (response?.[0] !== OP_FIND_INFO_RESP || response[1] !== 0x01) return undefined;
    for (let i = 2; i + 4 <= response.length; i += 4) {
      const type = response.readUInt16LE(i + 2);
      if (type === UUID_CHARACTERISTIC) return undefined;
      if (type === UUID_CCCD) return response.readUInt16LE(i);
    }
    return undefined;
  }

  private lookup(request: AttRequest): CharacteristicHandles {
    const entry = this.handles.get(`${uuidKey(request.serviceUuid)}/${uuidKey(request.characteristicUuid)}`);
    if (!entry) throw new AttError(AttErrorCode.ATTRIBUTE_NOT_FOUND);
    return entry;
  }

  async read(request: AttRequest, offset: number): Promise<Uint8Array> {
    const { valueHandle } = this.lookup(request);
    const response = await this.request(offset === 0 ? pdu(OP_READ_REQ, [valueHandle, 2]) : pdu(OP_READ_BLOB_REQ, [valueHandle, 2], [offset, 2]));
    const error = attErrorOf(response);
    if (error) throw error;
    if (response[0] !== OP_READ_RESP && response[0] !== OP_READ_BLOB_RESP) throw new AttError(AttErrorCode.UNLIKELY_ERROR, 'unexpected ATT response');
    return new Uint8Array(response.subarray(1));
  }

  async write(request: AttRequest, data: Uint8Array, withoutResponse: boolean): Promise<void> {
    const { valueHandle } = this.lookup(request);
    const message = Buffer.concat([pdu(withoutResponse ? OP_WRITE_CMD : OP_WRITE_REQ, [valueHandle, 2]), data]);
    if (withoutResponse) {
      // No response to a command; bleno may still send an Error Response (the radio reports it).
      const response = this.exchange(message);
      if (response) throw attErrorOf(response) ?? new AttError(AttErrorCode.UNLIKELY_ERROR, 'unexpected ATT response');
      return;
    }
    const response = await this.request(message);
    const error = attErrorOf(response);
    if (error) throw error;
    if (response[0] !== OP_WRITE_RESP) throw new AttError(AttErrorCode.UNLIKELY_ERROR, 'unexpected ATT response');
  }

  /** CCCD write; gatt answers it within the call, as the radio's subscribe handlers need. */
  writeCccd(request: AttRequest, enable: boolean): void {
    const { cccdHandle } = this.lookup(request);
    if (cccdHandle === undefined) throw new AttError(AttErrorCode.ATTRIBUTE_NOT_FOUND);
    const error = attErrorOf(this.exchange(pdu(OP_WRITE_REQ, [cccdHandle, 2], [enable ? 0x0001 : 0x0000, 2])));
    if (error) throw error;
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    this.pending.length = 0; // the radio drops answers to a closed link; nothing waits on these
    this.acl.close();
  }
}

const toRadioServices = (services: readonly BlenoPrimaryService[]): GattServiceDefinition[] =>
  services.map((service) => ({
    uuid: service.uuid,
    characteristics: service.characteristics.map((c) => ({
      uuid: c.uuid,
      // The radio has no indications; bleno's own table keeps the property.
      properties: c.properties.filter((p): p is GattProperty => (RADIO_PROPERTIES as readonly string[]).includes(p)),
    })),
  }));

export class BlenoRadioBindings extends EventEmitter implements BlenoBindings {
  private readonly gatt: BlenoGatt;
  private readonly bearers = new Map<number, AttBearer>();
  private advertising: AdvertisingData | undefined;
  private initialized = false;
  private lastState: string | undefined;
  private stopPowerListener: (() => void) | undefined;
  private initTimer: NodeJS.Immediate | undefined;

  constructor(private readonly device: RadioDevice) {
    super();
    const Gatt = requireCjs('@stoprocent/bleno/lib/hci-socket/gatt') as BlenoGattConstructor;
    this.gatt = new Gatt();
    this.gatt.on('mtuChange', (mtu: number) => this.emit('mtuChange', mtu));
  }

  init(): void {
    if (this.initialized) return;
    this.initialized = true;
    this.device.peripheral.setServices([], this.handlers());
    this.stopPowerListener = this.device.onPowerChange((on) => {
      if (!on) this.advertising = undefined; // the radio stopped it
      this.emitState();
    });
    // bleno calls init() from its `newListener` hook, before the listener is attached: report later.
    this.initTimer = setImmediate(() => {
      this.initTimer = undefined;
      this.emit('platform', 'virtual');
      this.emit('addressChange', this.device.address);
      this.emitState();
    });
  }

  private emitState(): void {
    const state = this.device.powered ? 'poweredOn' : 'poweredOff';
    if (state === this.lastState) return;
    this.lastState = state;
    this.emit('stateChange', state);
  }

  startAdvertising(name: string, serviceUuids: readonly string[]): void {
    const data: AdvertisingData = { localName: name, serviceUuids: [...serviceUuids] };
    this.advertising = data;
    this.gatt.updateName(name);
    this.device.peripheral.startAdvertising(data).then(
      () => this.emit('advertisingStart', null),
      (error: unknown) => {
        if (this.advertising === data) this.advertising = undefined;
        this.emit('advertisingStart', error instanceof Error ? error : new Error(String(error)));
      },
    );
  }

  stopAdvertising(): void {
    this.advertising = undefined;
    void this.device.peripheral.stopAdvertising().then(() => this.emit('advertisingStop'));
  }

  /** hci's `restartAdvertising` after an accept or a disconnect while advertising is wanted. */
  private restartAdvertising(): void {
    const data = this.advertising;
    if (data) this.device.peripheral.startAdvertising(data).catch(() => undefined);
  }

  setServices(services: readonly BlenoPrimaryService[]): void {
    try {
      this.gatt.setServices(services);
      this.device.peripheral.setServices(toRadioServices(services), this.handlers());
    } catch (e) {
      this.emit('servicesSet', e instanceof Error ? e : new Error(String(e)));
      return;
    }
    // Handles moved: open connections learn the new table, as after a Service Changed indication.
    for (const bearer of this.bearers.values()) bearer.discover();
    this.emit('servicesSet');
  }

  disconnect(handle?: BlenoConnection | null): void {
    const handles = handle === undefined || handle === null ? [...this.bearers.keys()] : typeof handle === 'number' ? [handle] : [];
    for (const h of handles) void this.device.peripheral.disconnect(h, 'disconnected by the peripheral');
  }

  updateRssi(): void {
    void Promise.resolve().then(() => this.emit('rssiUpdate', -50));
  }

  stop(): void {
    this.stopAdvertising();
    this.disconnect();
    this.stopPowerListener?.();
    this.stopPowerListener = undefined;
    if (this.initTimer) clearImmediate(this.initTimer);
    this.initTimer = undefined;
    this.initialized = false;
    this.lastState = undefined;
  }

  private handlers(): GattServerHandlers {
    const bearer = (request: AttRequest): AttBearer => {
      const found = this.bearers.get(request.connection.handle);
      if (!found) throw new AttError(AttErrorCode.UNLIKELY_ERROR);
      return found;
    };
    return {
      onConnect: (connection) => this.onConnect(connection),
      onDisconnect: (connection) => this.onDisconnect(connection),
      onRead: (request) => bearer(request).read(request, request.offset),
      onWrite: (request) => bearer(request).write(request, request.data, request.withoutResponse),
      onSubscribe: (request) => bearer(request).writeCccd(request, true),
      onUnsubscribe: (request) => bearer(request).writeCccd(request, false),
    };
  }

  private onConnect(connection: ServerConnection): void {
    const { handle } = connection;
    const bearer = new AttBearer(connection, (target, value) => {
      // gatt framed it to ATT_MTU − 3 already; a refusal (link gone) has nobody to tell.
      this.device.peripheral.notify(handle, target.service, target.characteristic, new Uint8Array(value)).catch(() => undefined);
    });
    this.bearers.set(handle, bearer);
    this.gatt.registerAclStream(bearer.acl, handle);
    this.emit('accept', connection.central.address, handle);
    this.restartAdvertising();
    if (connection.mtu > this.gatt.maxMtu) this.gatt.maxMtu = connection.mtu;
    bearer.exchangeMtu(connection.mtu);
    bearer.discover();
  }

  private onDisconnect(connection: ServerConnection): void {
    const bearer = this.bearers.get(connection.handle);
    if (!bearer) return;
    this.bearers.delete(connection.handle);
    bearer.close();
    this.emit('disconnect', connection.central.address, connection.handle);
    this.restartAdvertising();
  }
}

/** A bleno instance on the device's peripheral facet (bleno's object model and GATT, no native code). */
export function createVirtualBleno(device: RadioDevice): Bleno {
  const BlenoClass = requireCjs('@stoprocent/bleno/lib/bleno') as BlenoConstructor;
  return new BlenoClass(new BlenoRadioBindings(device));
}
