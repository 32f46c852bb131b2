/**
 * BLE UUIDs for ISO 18013-5 data retrieval: the service UUID's byte forms and the fixed GATT
 * characteristics of both modes (ISO/IEC 18013-5 §8.3.3.1.1.4, Tables 11 and 12; as Multipaz BleTransport* and
 * spruceid MDocBLEUtils.swift define them), plus the State values (Table 13, per Multipaz BleTransportConstants.kt).
 *
 * UUID strings here are canonical: lower-case, dashed (8-4-4-4-12).
 */

export type GattProperty = 'read' | 'writeWithoutResponse' | 'notify';

export interface IsoCharacteristic {
  readonly uuid: string;
  readonly properties: readonly GattProperty[];
}

const isoUuid = (n: number): string => `0000000${n.toString(16)}-a123-48ce-896b-4c76973373e6`;

/** mdoc peripheral server mode: the mdoc is the GATT server (Multipaz `BleTransportPeripheralMdoc.kt`). */
export const PERIPHERAL_SERVER_MODE = {
  state: { uuid: isoUuid(1), properties: ['notify', 'writeWithoutResponse'] },
  client2Server: { uuid: isoUuid(2), properties: ['writeWithoutResponse'] },
  server2Client: { uuid: isoUuid(3), properties: ['notify'] },
} as const satisfies Record<string, IsoCharacteristic>;

/**
 * mdoc central client mode: the reader is the GATT server and also serves Ident (Multipaz
 * `BleTransportCentralMdocReader.kt`).
 */
export const CENTRAL_CLIENT_MODE = {
  state: { uuid: isoUuid(5), properties: ['notify', 'writeWithoutResponse'] },
  client2Server: { uuid: isoUuid(6), properties: ['writeWithoutResponse'] },
  server2Client: { uuid: isoUuid(7), properties: ['notify'] },
  ident: { uuid: isoUuid(8), properties: ['read'] },
} as const satisfies Record<string, IsoCharacteristic>;

/** L2CAP PSM characteristics (Multipaz `BleTransport*.kt`); L2CAP stays off in our simulators. */
export const L2CAP_PSM_PERIPHERAL_SERVER_MODE = isoUuid(0xa);
export const L2CAP_PSM_CENTRAL_CLIENT_MODE = isoUuid(0xb);

/** Client Characteristic Configuration Descriptor, present on every notify characteristic. */
export const CCCD_UUID = '00002902-0000-1000-8000-00805f9b34fb';

/** State characteristic values (ISO/IEC 18013-5 Table 13, per Multipaz `BleTransportConstants.kt`). */
export const BLE_STATE_START = 0x01;
export const BLE_STATE_END = 0x02;

const DASHED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UNDASHED = /^[0-9a-f]{32}$/i;

/** Canonical form of a 128-bit UUID given dashed or undashed, any case; throws on anything else. */
export function canonicalUuid(text: string): string {
  let hex: string;
  if (DASHED.test(text)) hex = text.replaceAll('-', '');
  else if (UNDASHED.test(text)) hex = text;
  else throw new TypeError(`not a 128-bit UUID: ${JSON.stringify(text)}`);
  hex = hex.toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** 16 bytes in RFC 4122 (big-endian) order: the form used inside CBOR (Annex D BLE option 11; see ble.test.ts). */
export function uuidToBytes(uuid: string): Uint8Array {
  return Uint8Array.from(Buffer.from(canonicalUuid(uuid).replaceAll('-', ''), 'hex'));
}

/** Canonical string from 16 big-endian bytes. */
export function uuidFromBytes(bytes: Uint8Array): string {
  if (bytes.length !== 16) throw new TypeError(`a UUID is 16 bytes, got ${bytes.length}`);
  return canonicalUuid(Buffer.from(bytes).toString('hex'));
}

/** 16 bytes little-endian (reversed): the form inside the BLE OOB NDEF record's AD structure (see ble.test.ts). */
export function uuidToLittleEndianBytes(uuid: string): Uint8Array {
  return uuidToBytes(uuid).reverse();
}

export function uuidFromLittleEndianBytes(bytes: Uint8Array): string {
  return uuidFromBytes(Uint8Array.from(bytes).reverse());
}
