/**
 * bleno bindings on a virtual radio device's peripheral facet, so the bleno adapter runs against the
 * virtual phone with bleno's real object model. The bindings replace only HCI/GAP: they keep bleno's
 * own `lib/hci-socket/gatt.js` and translate each radio operation into the ATT PDU it stands for on a
 * fake ACL stream per connection (docs/ble-libraries.md §2), so the attribute table, property checks, CCCD handling,
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
 *   stopped it (docs/ble-libraries.md §4); `servicesSet` is emitted synchronously; state changes follow the device's
 *   power. The radio negotiated the MTU already (both devices' preferences), so gatt's 256 cap is raised
 *   to the link's value when a link asks for more: both ends then frame with one MTU;
 * - the mac binding's lifecycle: between `init()` and `stop()` only; every other call then throws "BLEManager has
 *   already been cleaned up" (bleno_mac.mm `CHECK_MANAGER`, binding-lifecycle.ts), and the next `init()` starts
 *   afresh (bleno's `stop()` lets its next `stateChange` listener call it again).
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { blenoMacManager, type BindingManager } from './binding-lifecycle.js';
import type { Bleno, BlenoBindings, BlenoConnection, BlenoConstructor, BlenoPrimaryService } from '../../devices/ble/bleno-types.js';
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
} from '../sim/radio/virtual-radio.js';

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

// ================================================================ the bleno (GATT) side

/**
 * bleno's half of the split: bleno's own `gatt.js` with one fake ACL stream per connection. It receives
 * the central's ATT PDUs (`deliver`) and hands gatt's PDUs (responses, notifications, errors) to `onPdu`.
 * In process, the radio side calls it directly; over the radio link (docs/radio-link.md) the messages
 * between the two halves travel on a socket.
 */
export class BlenoGattSide {
  private readonly gatt: BlenoGatt;
  private readonly streams = new Map<number, FakeAclStream>();

  constructor(
    private readonly onPdu: (handle: number, pdu: Buffer) => void,
    onMtu: (mtu: number) => void,
  ) {
    const Gatt = requireCjs('@stoprocent/bleno/lib/hci-socket/gatt') as BlenoGattConstructor;
    this.gatt = new Gatt();
    this.gatt.on('mtuChange', onMtu);
  }

  setServices(services: readonly BlenoPrimaryService[]): void {
    this.gatt.setServices(services);
  }

  updateName(name: string): void {
    this.gatt.updateName(name);
  }

  /** A central connected: gatt gets a stream for it; the radio negotiated `mtu` already, so gatt's cap follows. */
  open(handle: number, mtu: number): void {
    this.close(handle);
    const stream = new FakeAclStream(handle, (data) => this.onPdu(handle, data));
    this.streams.set(handle, stream);
    this.gatt.registerAclStream(stream, handle);
    if (mtu > this.gatt.maxMtu) this.gatt.maxMtu = mtu;
  }

  deliver(handle: number, data: Buffer): void {
    this.streams.get(handle)?.push(data);
  }

  /** The link ended: gatt drops its subscriptions. */
  close(handle: number): void {
    const stream = this.streams.get(handle);
    if (!stream) return;
    this.streams.delete(handle);
    stream.close();
  }

  closeAll(): void {
    for (const handle of [...this.streams.keys()]) this.close(handle);
  }
}

// ================================================================ the radio (central's ATT) side

/** How the radio side reaches bleno's GATT side (directly in process, or over the radio link). */
export interface GattSideLink {
  open(handle: number, address: string, mtu: number): void;
  toGatt(handle: number, pdu: Buffer): void;
  close(handle: number): void;
}

interface Job {
  /** Built when sent: handles are looked up then (a rediscovery may run before). */
  readonly build: () => Buffer;
  /** Whether gatt answers it (a Write Command gets an answer only when refused). */
  readonly expectsResponse: boolean;
  readonly done: (response: Buffer | undefined, error?: Error) => void;
  /** A step of a discovery: may be sent while the discovery holds other requests back. */
  readonly discovery?: boolean;
  response?: Buffer;
  answered?: boolean;
}

/**
 * One connection's ATT bearer: the central's side of the conversation with gatt. PDUs go out through
 * `send`; gatt's PDUs come in through `fromGatt`. In process gatt answers synchronous requests (discovery,
 * CCCD writes, refused commands) within `send`, so those complete within the call; over a socket
 * (`serialize`) one request is outstanding at a time and the rest wait in order, as ATT requires.
 */
class AttBearer {
  private readonly handles = new Map<string, CharacteristicHandles>();
  private readonly byValueHandle = new Map<number, CharacteristicHandles>();
  /** Requests waiting for their response, oldest first. */
  private readonly pending: Job[] = [];
  /** Jobs not sent yet (serialize mode, or while a discovery runs). */
  private readonly queue: Job[] = [];
  /** Set while a PDU is being sent: a response arriving within the call is its own. */
  private sending: Job | undefined;
  private discovering = false;
  private open = true;

  constructor(
    readonly connection: ServerConnection,
    private readonly send: (pdu: Buffer) => void,
    private readonly serialize: boolean,
    private readonly onNotification: (target: CharacteristicHandles, value: Buffer) => void,
    private readonly onLateError: (error: AttError) => void,
  ) {}

  fromGatt(response: Buffer): void {
    if (!this.open) return;
    if (response[0] === OP_HANDLE_NOTIFY) {
      const target = this.byValueHandle.get(response.readUInt16LE(1));
      if (target) this.onNotification(target, response.subarray(3));
      return;
    }
    const sending = this.sending;
    if (sending && !sending.answered) {
      sending.answered = true;
      sending.response = response;
      return;
    }
    if (response[0] === OP_ERROR && response[1] === OP_WRITE_CMD) {
      // A refused command answered later (over the link): nobody waits for it.
      this.onLateError(attErrorOf(response) ?? new AttError(AttErrorCode.UNLIKELY_ERROR));
      return;
    }
    const job = this.pending.shift();
    if (!job) return;
    job.done(response);
    this.pump();
  }

  /** Queues or sends a PDU; `done` gets gatt's answer (undefined: none). Returns the job (answered in the call?). */
  private post(job: Job, front = false): Job {
    if (!this.open) {
      job.done(undefined, new RadioError('disconnected', 'connection closed'));
      return job;
    }
    const outstanding = this.serialize && this.pending.length > 0;
    if (front) {
      if (outstanding) this.queue.unshift(job);
      else this.transmit(job);
    } else if (this.discovering || outstanding || (this.serialize && this.queue.length > 0)) this.queue.push(job);
    else this.transmit(job);
    return job;
  }

  private transmit(job: Job): void {
    let data: Buffer;
    try {
      data = job.build();
    } catch (e) {
      job.done(undefined, e instanceof Error ? e : new Error(String(e)));
      return;
    }
    if (job.expectsResponse && this.serialize) this.pending.push(job);
    const previous = this.sending;
    this.sending = job;
    try {
      this.send(data);
    } finally {
      this.sending = previous;
    }
    if (job.answered) {
      if (job.expectsResponse && this.serialize) this.pending.splice(this.pending.indexOf(job), 1);
      job.done(job.response);
    } else if (!job.expectsResponse) job.done(undefined);
    else if (!this.serialize) this.pending.push(job);
  }

  /** Sends what waits while nothing is outstanding (serialize mode) and no discovery runs. */
  private pump(): void {
    for (let job = this.queue[0]; job && this.open; job = this.queue[0]) {
      if ((this.discovering && !job.discovery) || (this.serialize && this.pending.length > 0)) return;
      this.queue.shift();
      this.transmit(job);
    }
  }

  private request(build: () => Buffer): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      this.post({
        build,
        expectsResponse: true,
        done: (response, error) => (error === undefined ? resolve(response ?? Buffer.alloc(0)) : reject(error)),
      });
    });
  }

  exchangeMtu(mtu: number): void {
    this.post({ build: () => pdu(OP_MTU_REQ, [mtu, 2]), expectsResponse: true, done: () => undefined });
  }

  /** Learns the handles of the table gatt serves now, as a client's discovery would; other requests wait. */
  discover(): void {
    this.discovering = true;
    this.handles.clear();
    this.byValueHandle.clear();
    const steps = this.discovery();
    const step = (response: Buffer | undefined): void => {
      let next = steps.next(response);
      while (!next.done) {
        const data = next.value;
        let inCall = true;
        const job: Job = { build: () => data, expectsResponse: true, discovery: true, done: (r) => (inCall ? undefined : step(r)) };
        this.post(job, true);
        inCall = false;
        // In process gatt answered within the call: go on without returning through fromGatt.
        if (!job.answered) return;
        next = steps.next(job.response);
      }
      this.discovering = false;
      this.pump();
    };
    step(undefined);
  }

  /** The discovery as a sequence of requests, each resumed with gatt's answer. */
  private *discovery(): Generator<Buffer, void, Buffer | undefined> {
    const services: { start: number; end: number; uuid: string }[] = [];
    for (let start = 1; start <= 0xffff; ) {
      const response = yield pdu(OP_READ_BY_GROUP_REQ, [start, 2], [0xffff, 2], [UUID_PRIMARY_SERVICE, 2]);
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
        const response = yield pdu(OP_READ_BY_TYPE_REQ, [start, 2], [service.end, 2], [UUID_CHARACTERISTIC, 2]);
        if (response?.[0] !== OP_READ_BY_TYPE_RESP) break;
        const length = response.readUInt8(1);
        let declaration = start;
        for (let i = 2; i + length <= response.length; i += length) {
          declaration = response.readUInt16LE(i);
          const properties = response.readUInt8(i + 2);
          const valueHandle = response.readUInt16LE(i + 3);
          const characteristic = uuidOf(response.subarray(i + 5, i + length));
          let cccdHandle: number | undefined;
          if (properties & 0x30 && valueHandle < service.end) {
            // The CCCD among the descriptors after the value handle (before the next declaration).
            const info = yield pdu(OP_FIND_INFO_REQ, [valueHandle + 1, 2], [service.end, 2]);
            cccdHandle = cccdOf(info);
          }
          const entry: CharacteristicHandles = { service: service.uuid, characteristic, valueHandle, cccdHandle };
          this.handles.set(`${uuidKey(service.uuid)}/${uuidKey(characteristic)}`, entry);
          this.byValueHandle.set(valueHandle, entry);
        }
        start = declaration + 1;
      }
    }
  }

  private lookup(request: AttRequest): CharacteristicHandles {
    const entry = this.handles.get(`${uuidKey(request.serviceUuid)}/${uuidKey(request.characteristicUuid)}`);
    if (!entry) throw new AttError(AttErrorCode.ATTRIBUTE_NOT_FOUND);
    return entry;
  }

  async read(request: AttRequest, offset: number): Promise<Uint8Array> {
    const response = await this.request(() => {
      const { valueHandle } = this.lookup(request);
      return offset === 0 ? pdu(OP_READ_REQ, [valueHandle, 2]) : pdu(OP_READ_BLOB_REQ, [valueHandle, 2], [offset, 2]);
    });
    const error = attErrorOf(response);
    if (error) throw error;
    if (response[0] !== OP_READ_RESP && response[0] !== OP_READ_BLOB_RESP)
      throw new AttError(AttErrorCode.UNLIKELY_ERROR, 'unexpected ATT response');
    return new Uint8Array(response.subarray(1));
  }

  async write(request: AttRequest, data: Uint8Array, withoutResponse: boolean): Promise<void> {
    const build = (): Buffer =>
      Buffer.concat([pdu(withoutResponse ? OP_WRITE_CMD : OP_WRITE_REQ, [this.lookup(request).valueHandle, 2]), data]);
    if (withoutResponse) {
      // No response to a command; bleno may still send an Error Response (the radio reports it when it
      // comes within the call; over the link it arrives later and goes to onLateError).
      const job = await new Promise<Job>((resolve, reject) => {
        const posted: Job = { build, expectsResponse: false, done: (_r, error) => (error === undefined ? resolve(posted) : reject(error)) };
        this.post(posted);
      });
      if (job.response) throw attErrorOf(job.response) ?? new AttError(AttErrorCode.UNLIKELY_ERROR, 'unexpected ATT response');
      return;
    }
    const response = await this.request(build);
    const error = attErrorOf(response);
    if (error) throw error;
    if (response[0] !== OP_WRITE_RESP) throw new AttError(AttErrorCode.UNLIKELY_ERROR, 'unexpected ATT response');
  }

  /**
   * CCCD write. The radio's subscribe handlers are synchronous: in process gatt answers within the call
   * (a refusal throws); over the link the write is sent in order and a late refusal goes to onLateError.
   */
  writeCccd(request: AttRequest, enable: boolean): void {
    if (!this.discovering) this.lookup(request); // unknown characteristic: refuse now
    const build = (): Buffer => {
      const { cccdHandle } = this.lookup(request);
      if (cccdHandle === undefined) throw new AttError(AttErrorCode.ATTRIBUTE_NOT_FOUND);
      return pdu(OP_WRITE_REQ, [cccdHandle, 2], [enable ? 0x0001 : 0x0000, 2]);
    };
    let failure: Error | undefined;
    let inCall = true;
    this.post({
      build,
      expectsResponse: true,
      done: (response, error) => {
        const refused = error ?? attErrorOf(response);
        if (refused === undefined) return;
        if (inCall) failure = refused;
        else this.onLateError(refused instanceof AttError ? refused : new AttError(AttErrorCode.UNLIKELY_ERROR));
      },
    });
    inCall = false;
    if (failure !== undefined) throw failure;
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    this.queue.length = 0;
    this.pending.length = 0; // the radio drops answers to a closed link; nothing waits on these
  }
}

function cccdOf(response: Buffer | undefined): number | undefined {
  // Format 0x01: 16-bit UUIDs, 4 bytes per entry.
  if (response?.[0] !== OP_FIND_INFO_RESP || response[1] !== 0x01) return undefined;
  for (let i = 2; i + 4 <= response.length; i += 4) {
    const type = response.readUInt16LE(i + 2);
    if (type === UUID_CHARACTERISTIC) return undefined;
    if (type === UUID_CCCD) return response.readUInt16LE(i);
  }
  return undefined;
}

/** bleno's services as the radio knows them: UUIDs and the properties the radio has. */
export const toRadioServices = (services: readonly BlenoPrimaryService[]): GattServiceDefinition[] =>
  services.map((service) => ({
    uuid: service.uuid,
    characteristics: service.characteristics.map((c) => ({
      uuid: c.uuid,
      // The radio has no indications; bleno's own table keeps the property.
      properties: c.properties.filter((p): p is GattProperty => (RADIO_PROPERTIES as readonly string[]).includes(p)),
    })),
  }));

export interface RadioPeripheralSideOptions {
  /** One ATT request outstanding at a time (the GATT side answers asynchronously, over a socket). */
  readonly serialize?: boolean;
  /** A refusal that arrived after the radio's handler returned (over the link only). */
  readonly onLateError?: (handle: number, error: AttError) => void;
}

/**
 * The radio's half of the split: GAP on the device's peripheral facet (advertising, services as the radio
 * knows them, disconnect, power state) and, per connection, the central's ATT bearer that turns radio
 * operations into PDUs for the GATT side. Emits bleno's binding events except `servicesSet` and
 * `mtuChange`, which the GATT side owns: `platform`, `addressChange`, `stateChange`, `advertisingStart`,
 * `advertisingStop`, `accept`, `disconnect`, `rssiUpdate`.
 */
export class RadioPeripheralSide extends EventEmitter {
  private readonly bearers = new Map<number, AttBearer>();
  private advertising: AdvertisingData | undefined;
  private initialized = false;
  private lastState: string | undefined;
  private stopPowerListener: (() => void) | undefined;
  private initTimer: NodeJS.Immediate | undefined;

  constructor(
    readonly device: RadioDevice,
    private readonly gattSide: GattSideLink,
    private readonly options: RadioPeripheralSideOptions = {},
  ) {
    super();
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

  /** The table as the radio knows it; open connections then learn gatt's new handles (throws on a bad table). */
  setServices(services: readonly GattServiceDefinition[]): void {
    this.device.peripheral.setServices(services, this.handlers());
    // Handles moved: open connections learn the new table, as after a Service Changed indication.
    for (const bearer of this.bearers.values()) bearer.discover();
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

  /** A PDU from the GATT side for one connection. */
  fromGatt(handle: number, data: Buffer): void {
    this.bearers.get(handle)?.fromGatt(data);
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
    const bearer = new AttBearer(
      connection,
      (data) => this.gattSide.toGatt(handle, data),
      this.options.serialize ?? false,
      (target, value) => {
        // gatt framed it to ATT_MTU − 3 already; a refusal (link gone) has nobody to tell.
        this.device.peripheral.notify(handle, target.service, target.characteristic, new Uint8Array(value)).catch(() => undefined);
      },
      (error) => this.options.onLateError?.(handle, error),
    );
    this.bearers.set(handle, bearer);
    this.gattSide.open(handle, connection.central.address, connection.mtu);
    this.emit('accept', connection.central.address, handle);
    this.restartAdvertising();
    bearer.exchangeMtu(connection.mtu);
    bearer.discover();
  }

  private onDisconnect(connection: ServerConnection): void {
    const bearer = this.bearers.get(connection.handle);
    if (!bearer) return;
    this.bearers.delete(connection.handle);
    bearer.close();
    this.gattSide.close(connection.handle);
    this.emit('disconnect', connection.central.address, connection.handle);
    this.restartAdvertising();
  }
}

/** Events the radio side emits that are bleno's binding events as they are. */
export const RADIO_SIDE_EVENTS = [
  'platform',
  'addressChange',
  'stateChange',
  'advertisingStart',
  'advertisingStop',
  'accept',
  'disconnect',
  'rssiUpdate',
] as const;

/** Both halves in one process, called directly: bleno bindings on a radio device. */
export class BlenoRadioBindings extends EventEmitter implements BlenoBindings {
  private readonly gatt: BlenoGattSide;
  private readonly radio: RadioPeripheralSide;

  constructor(
    device: RadioDevice,
    private readonly manager: BindingManager = blenoMacManager(),
  ) {
    super();
    this.gatt = new BlenoGattSide(
      (handle, data) => this.radio.fromGatt(handle, data),
      (mtu) => this.emit('mtuChange', mtu),
    );
    this.radio = new RadioPeripheralSide(device, {
      open: (handle, _address, mtu) => this.gatt.open(handle, mtu),
      toGatt: (handle, data) => this.gatt.deliver(handle, data),
      close: (handle) => this.gatt.close(handle),
    });
    for (const name of RADIO_SIDE_EVENTS) this.radio.on(name, (...args: unknown[]) => this.emit(name, ...args));
  }

  init(): void {
    if (this.manager.start()) this.radio.init();
  }

  startAdvertising(name: string, serviceUuids: readonly string[]): void {
    this.manager.check('startAdvertising');
    this.gatt.updateName(name);
    this.radio.startAdvertising(name, serviceUuids);
  }

  stopAdvertising(): void {
    this.manager.check('stopAdvertising');
    this.radio.stopAdvertising();
  }

  setServices(services: readonly BlenoPrimaryService[]): void {
    this.manager.check('setServices');
    try {
      this.gatt.setServices(services);
      this.radio.setServices(toRadioServices(services));
    } catch (e) {
      this.emit('servicesSet', e instanceof Error ? e : new Error(String(e)));
      return;
    }
    this.emit('servicesSet');
  }

  disconnect(handle?: BlenoConnection | null): void {
    this.manager.check('disconnect');
    this.radio.disconnect(handle);
  }

  updateRssi(): void {
    this.manager.check('updateRssi');
    this.radio.updateRssi();
  }

  stop(): void {
    this.manager.stop();
    this.radio.stop();
  }
}

/** A bleno instance on the device's peripheral facet (bleno's object model and GATT, no native code). */
export function createVirtualBleno(device: RadioDevice): Bleno {
  const BlenoClass = requireCjs('@stoprocent/bleno/lib/bleno') as BlenoConstructor;
  return new BlenoClass(new BlenoRadioBindings(device));
}
