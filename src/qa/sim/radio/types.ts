/** Public data shapes of the virtual radio (see virtual-radio.ts for the model and the semantics). */

/** Characteristic properties, named as noble and bleno name them. */
export type GattProperty = 'read' | 'write' | 'writeWithoutResponse' | 'notify';

export interface GattCharacteristicDefinition {
  readonly uuid: string;
  readonly properties: readonly GattProperty[];
}

export interface GattServiceDefinition {
  readonly uuid: string;
  readonly characteristics: readonly GattCharacteristicDefinition[];
}

/** A device as others on the air see it; `id` is noble's peripheral id (the address without colons). */
export interface DeviceInfo {
  readonly name: string;
  readonly address: string;
  readonly id: string;
}

export interface AdvertisingData {
  readonly localName?: string;
  readonly serviceUuids: readonly string[];
}

/** What a scanning central hears: one report per advertising set and scan. UUIDs in stack spelling. */
export interface AdvertisementReport {
  readonly peripheral: DeviceInfo;
  readonly localName: string | undefined;
  readonly serviceUuids: readonly string[];
  readonly rssi: number;
  readonly connectable: boolean;
}

export interface ScanFilter {
  /** Report only advertisers of one of these services (compared by value); all when absent or empty. */
  readonly serviceUuids?: readonly string[];
}

export interface ScanHandle {
  stop(): void;
}

/** Why a link ended. `by` tells who ended it: a side, or the radio (fault, power, range). */
export interface DisconnectInfo {
  readonly reason: string;
  /** HCI reason: 0x13 a side disconnected, 0x08 link loss (supervision timeout), 0x15 power off. */
  readonly hciCode: number;
  readonly by: 'central' | 'peripheral' | 'radio';
}

export interface ConnectOptions {
  /** ATT MTU the central asks for (default: the device's preferred MTU). */
  readonly mtu?: number;
  readonly signal?: AbortSignal;
}

export interface DiscoveredCharacteristic {
  readonly uuid: string;
  readonly properties: readonly GattProperty[];
}

export interface DiscoveredService {
  readonly uuid: string;
  readonly characteristics: readonly DiscoveredCharacteristic[];
}

export interface NotificationEvent {
  readonly serviceUuid: string;
  readonly characteristicUuid: string;
  readonly data: Uint8Array;
}

/** An ATT Error Response to a Write Command (bleno sends one; ATT clients usually ignore it). */
export interface CommandErrorEvent {
  readonly serviceUuid: string;
  readonly characteristicUuid: string;
  readonly code: number;
}

export interface WriteOptions {
  /** Write Command (no response) instead of Write Request. */
  readonly withoutResponse?: boolean;
}

// ---------------------------------------------------------------- server side

/** The peripheral's view of one link. `mtu` is the value reported (see RadioFaults.reportedMtu). */
export interface ServerConnection {
  readonly handle: number;
  readonly linkId: string;
  readonly central: DeviceInfo;
  readonly mtu: number;
}

export interface AttRequest {
  readonly connection: ServerConnection;
  readonly serviceUuid: string;
  readonly characteristicUuid: string;
}

export interface ReadRequest extends AttRequest {
  /** 0 for Read, the blob offset for Read Blob. */
  readonly offset: number;
}

export interface WriteRequest extends AttRequest {
  readonly data: Uint8Array;
  readonly withoutResponse: boolean;
}

export interface SubscribeRequest extends AttRequest {
  /** ATT_MTU − 3: the largest notification payload. */
  readonly maxValueSize: number;
}

/**
 * The GATT server's callbacks, each called in the order the central's packets arrive on its link.
 * `onRead` answers with the value *from the request's offset* (as bleno's `onReadRequest` does; the radio
 * sends at most ATT_MTU − 1 bytes of it). Throwing (or rejecting with) an `AttError` sends that ATT
 * error; any other exception becomes Unlikely Error (0x0E).
 */
export interface GattServerHandlers {
  /** Accept or refuse an incoming connection (default: accept). */
  accept?(central: DeviceInfo): boolean;
  onConnect?(connection: ServerConnection): void;
  onDisconnect?(connection: ServerConnection, info: DisconnectInfo): void;
  onRead?(request: ReadRequest): Uint8Array | Promise<Uint8Array>;
  onWrite?(request: WriteRequest): void | Promise<void>;
  onSubscribe?(request: SubscribeRequest): void;
  onUnsubscribe?(request: AttRequest): void;
}

// ---------------------------------------------------------------- faults and logs

/**
 * Faults for QA and tests, set per device. A link takes them from both its devices when it is set up
 * (latency is read per packet, so it can change mid-link): the smaller drop count and forced MTU win,
 * latencies add up.
 */
export interface RadioFaults {
  /** Extra one-way delay for every packet and connection attempt involving this device. */
  readonly latencyMs?: number;
  /**
   * Link loss after this many value packets in a direction have been delivered (to_peripheral: writes;
   * to_central: notifications and read responses). 0 drops the link right after it is set up.
   */
  readonly dropAfterPackets?: {
    readonly toPeripheral?: number;
    readonly toCentral?: number;
    /** Default 'connection timeout'. */
    readonly reason?: string;
  };
  /** As a peripheral: refuse the next n incoming connections (`Infinity`: all). */
  readonly refuseConnections?: number;
  /** Force the negotiated ATT MTU of new links (enforced on payloads). */
  readonly mtu?: number;
  /** The MTU new links report to both sides when it should differ from the one enforced. */
  readonly reportedMtu?: number;
}

export type RadioLogEvent =
  | 'device_added'
  | 'device_removed'
  | 'power'
  | 'advertising_start'
  | 'advertising_stop'
  | 'services_set'
  | 'scan_start'
  | 'scan_stop'
  | 'discovered'
  | 'connect'
  | 'connect_failed'
  | 'disconnect'
  | 'link_lost'
  | 'discover_services'
  | 'read'
  | 'write'
  | 'subscribe'
  | 'unsubscribe'
  | 'notify'
  | 'att_error'
  | 'handler_error';

/** One structured log entry; never carries payload bytes, only their length. */
export interface RadioLogEntry {
  readonly seq: number;
  /** Milliseconds since the radio was created. */
  readonly atMs: number;
  readonly event: RadioLogEvent;
  /** `name@address` of the device the entry is about, and of its peer on the link. */
  readonly device?: string;
  readonly peer?: string;
  readonly link?: string;
  readonly service?: string;
  readonly characteristic?: string;
  readonly bytes?: number;
  readonly offset?: number;
  readonly mtu?: number;
  readonly code?: number;
  readonly reason?: string;
  readonly detail?: string;
}
