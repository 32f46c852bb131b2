/**
 * What the virtual phone's BLE transport (ble-holder.ts) needs from a radio: the slice of a virtual radio
 * device it uses, so the same wallet runs on the in-memory radio (a `RadioDevice` is one) or on a real
 * Bluetooth stack over HCI (src/qa/hci/hci-phone-radio.ts: noble for central client mode, bleno for
 * peripheral server mode).
 */
import type {
  AdvertisementReport,
  AdvertisingData,
  ConnectOptions,
  DiscoveredService,
  DisconnectInfo,
  GattServerHandlers,
  GattServiceDefinition,
  NotificationEvent,
  ServerConnection,
  WriteOptions,
} from '../radio/virtual-radio.js';

/** The central's end of a link (mdoc central client mode). */
export interface PhoneLink {
  /** ATT MTU of the link. */
  readonly mtu: number;
  discover(serviceUuids?: readonly string[]): Promise<DiscoveredService[]>;
  /** The whole value (Read, then Read Blob while responses come back full). */
  read(serviceUuid: string, characteristicUuid: string): Promise<Uint8Array>;
  write(serviceUuid: string, characteristicUuid: string, data: Uint8Array, options?: WriteOptions): Promise<void>;
  subscribe(serviceUuid: string, characteristicUuid: string): Promise<void>;
  disconnect(reason?: string): Promise<void>;
  onNotification(listener: (event: NotificationEvent) => void): () => void;
  onDisconnect(listener: (info: DisconnectInfo) => void): () => void;
}

export interface PhoneCentral {
  scanFor(serviceUuid: string, options?: { readonly signal?: AbortSignal }): Promise<AdvertisementReport>;
  connect(peripheral: string, options?: ConnectOptions): Promise<PhoneLink>;
}

/** The phone's GATT server and advertiser (mdoc peripheral server mode). */
export interface PhonePeripheral {
  setServices(services: readonly GattServiceDefinition[], handlers?: GattServerHandlers): void;
  startAdvertising(data: AdvertisingData): Promise<void>;
  stopAdvertising(): Promise<void>;
  readonly connections: readonly ServerConnection[];
  notify(handle: number, serviceUuid: string, characteristicUuid: string, data: Uint8Array): Promise<void>;
  disconnect(handle: number, reason?: string): Promise<void>;
}

export interface PhoneRadio {
  readonly central: PhoneCentral;
  readonly peripheral: PhonePeripheral;
}
