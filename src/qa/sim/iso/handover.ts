/**
 * NFC Forum Connection Handover 1.5 as profiled by ISO 18013-5 NFC engagement
 * (NFC Forum Connection Handover 1.5 and ISO/IEC 18013-5 §8.2.2.1; record payloads as Multipaz `nfc/HandoverSelectRecord.kt`, `HandoverRequestRecord.kt` and isomdl `ndef_handover.rs` build them).
 *
 * DeviceEngagement and ReaderEngagement payloads are opaque bytes here: the parsers hand back the record payload
 * verbatim because the SessionTranscript must hash exactly those bytes (ISO 18013-5 §8.1; isomdl commit 3ad4471).
 */
import { uuidFromBytes, uuidToBytes } from './ble-uuids.js';
import { ByteCursor, concatBytes, decodeUtf8, isUint, uintBytes, utf8 } from './byte-cursor.js';
import { Tnf, encodeNdefMessage, findRecord, isRecordType, ndefRecord, parseNdefMessage, recordIdText } from './ndef.js';
import type { NdefRecord, ParsedNdefRecord } from './ndef.js';

export class HandoverFormatError extends Error {
  override readonly name = 'HandoverFormatError';
}

const fail = (message: string): Error => new HandoverFormatError(message);

// ---------------------------------------------------------------------------------------------------------------
// Constants (Multipaz `nfc/Nfc.kt`; ISO/IEC 18013-5 §8.2.2.1, §8.2.2.2)

export const RTD_HANDOVER_SELECT = 'Hs';
export const RTD_HANDOVER_REQUEST = 'Hr';
export const RTD_ALTERNATIVE_CARRIER = 'ac';
export const RTD_COLLISION_RESOLUTION = 'cr';
/**
 * Connection Handover 1.5; Multipaz rejects any other version byte (`mdocReaderNfcHandover.kt`,
 * `MdocNfcEngagementHelper.kt`).
 */
export const CONNECTION_HANDOVER_VERSION = 0x15;

export const BLE_OOB_MIME_TYPE = 'application/vnd.bluetooth.le.oob';
export const NFC_CARRIER_TYPE = 'iso.org:18013:nfc';
export const DEVICE_ENGAGEMENT_TYPE = 'iso.org:18013:deviceengagement';
export const READER_ENGAGEMENT_TYPE = 'iso.org:18013:readerengagement';

/** Record IDs = carrier data references / auxiliary references (as Multipaz and isomdl write them). */
export const BLE_CARRIER_ID = '0';
export const NFC_CARRIER_ID = 'nfc';
export const DEVICE_ENGAGEMENT_ID = 'mdoc';
export const READER_ENGAGEMENT_ID = 'mdocreader';

/** ReaderEngagement CBOR `{0: "1.0"}` (Multipaz `mdocReaderNfcHandover.kt`, isomdl `generate_hr_ndef()`). */
export const READER_ENGAGEMENT_1_0: Uint8Array = Uint8Array.of(0xa1, 0x00, 0x63, 0x31, 0x2e, 0x30);

/** Bluetooth AD types in the LE OOB record (Multipaz `MdocConnectionMethodBle.kt`). */
export const AdType = {
  COMPLETE_128_BIT_UUIDS: 0x07,
  LE_BLUETOOTH_DEVICE_ADDRESS: 0x1b,
  LE_ROLE: 0x1c,
  /** Bluetooth Appearance and Complete Local Name (Samsung Wallet's HS carries both). */
  APPEARANCE: 0x19,
  COMPLETE_LOCAL_NAME: 0x09,
  /** Multipaz-only, "not yet allocated": L2CAP PSM as u32 BE (`MdocConnectionMethodBle.kt`). */
  MULTIPAZ_L2CAP_PSM: 0x77,
} as const;

/** Carrier Power State of an `ac` record (CH 1.5; 01 = active is what every HS in test/fixtures/captures uses). */
export const CarrierPowerState = { INACTIVE: 0, ACTIVE: 1, ACTIVATING: 2, UNKNOWN: 3 } as const;

// ---------------------------------------------------------------------------------------------------------------
// LE role (Bluetooth CSS §1.17; isomdl `ndef_handover.rs` `LeRole`), always from the point of view of the record's
// sender.

export const LeRole = {
  PERIPHERAL_ONLY: 0x00,
  CENTRAL_ONLY: 0x01,
  BOTH_PERIPHERAL_PREFERRED: 0x02,
  BOTH_CENTRAL_PREFERRED: 0x03,
} as const;
export type LeRole = (typeof LeRole)[keyof typeof LeRole];

export type HandoverSender = 'mdoc' | 'reader';

/** ISO 18013-5 BLE modes are named after the mdoc's role: peripheral server (mdoc advertises) or central client. */
export type MdocBleMode = 'peripheralServer' | 'centralClient';

export interface MdocBleModes {
  readonly peripheralServer: boolean;
  readonly centralClient: boolean;
  /** The mode the sender prefers, for roles 02/03. */
  readonly preferred?: MdocBleMode;
}

export function isLeRole(value: number): value is LeRole {
  return value === 0 || value === 1 || value === 2 || value === 3;
}

/**
 * Which mdoc BLE modes an LE role offers. In an HS the sender is the mdoc: 00 (mdoc only peripheral) = mdoc
 * peripheral server mode, 01 = mdoc central client mode. In an HR the sender is the reader, so the roles
 * invert: 00 (reader only peripheral) = mdoc central client mode, 01 (reader only central) = mdoc peripheral
 * server mode (Multipaz `MdocConnectionMethodBle.fromNdefRecord()` does the same by role).
 */
export function leRoleToMdocModes(role: LeRole, sender: HandoverSender): MdocBleModes {
  const senderPeripheral: MdocBleMode = sender === 'mdoc' ? 'peripheralServer' : 'centralClient';
  const senderCentral: MdocBleMode = sender === 'mdoc' ? 'centralClient' : 'peripheralServer';
  const only = (mode: MdocBleMode): MdocBleModes => ({
    peripheralServer: mode === 'peripheralServer',
    centralClient: mode === 'centralClient',
  });
  switch (role) {
    case LeRole.PERIPHERAL_ONLY:
      return only(senderPeripheral);
    case LeRole.CENTRAL_ONLY:
      return only(senderCentral);
    case LeRole.BOTH_PERIPHERAL_PREFERRED:
      return { peripheralServer: true, centralClient: true, preferred: senderPeripheral };
    case LeRole.BOTH_CENTRAL_PREFERRED:
      return { peripheralServer: true, centralClient: true, preferred: senderCentral };
  }
}

/**
 * The LE role a sender writes for the mdoc modes it offers. Both modes without a preference give 03, which is
 * what Multipaz writes in both its HS and its HR (test/unit/sim/iso/nfc-fixtures.ts).
 */
export function mdocModesToLeRole(modes: MdocBleModes, sender: HandoverSender): LeRole {
  if (modes.peripheralServer && modes.centralClient) {
    const senderPeripheral: MdocBleMode = sender === 'mdoc' ? 'peripheralServer' : 'centralClient';
    return modes.preferred === senderPeripheral ? LeRole.BOTH_PERIPHERAL_PREFERRED : LeRole.BOTH_CENTRAL_PREFERRED;
  }
  if (modes.peripheralServer) return sender === 'mdoc' ? LeRole.PERIPHERAL_ONLY : LeRole.CENTRAL_ONLY;
  if (modes.centralClient) return sender === 'mdoc' ? LeRole.CENTRAL_ONLY : LeRole.PERIPHERAL_ONLY;
  throw fail('at least one mdoc BLE mode must be offered');
}

// ---------------------------------------------------------------------------------------------------------------
// UUIDs: RFC 4122 big-endian in CBOR, reversed (little-endian) in the LE OOB record (test/unit/sim/iso/ble.test.ts).

// ---------------------------------------------------------------------------------------------------------------
// Alternative Carrier `ac` and Handover `Hs`/`Hr` payloads (NFC Forum Connection Handover 1.5)

export interface AlternativeCarrier {
  readonly carrierPowerState: number;
  /** ID of the carrier configuration record ("0" BLE, "nfc" NFC). */
  readonly carrierDataReference: string;
  /** IDs of auxiliary records: the mdoc uses "mdoc" (DeviceEngagement) in an HS; the reader none in an HR. */
  readonly auxiliaryDataReferences: readonly string[];
}

function referenceBytes(ref: string, what: string): Uint8Array {
  const bytes = utf8(ref);
  if (bytes.length > 0xff) throw fail(`${what} "${ref}" is ${bytes.length} bytes; at most 255 fit its length byte`);
  return bytes;
}

/** `ac` payload: CPS, len, carrier_data_ref, aux_count, then len+ref per auxiliary reference (Connection Handover). */
export function encodeAlternativeCarrierPayload(ac: AlternativeCarrier): Uint8Array {
  if (!isUint(ac.carrierPowerState, 3)) throw fail(`carrier power state ${String(ac.carrierPowerState)} is not 0..3`);
  if (ac.auxiliaryDataReferences.length > 0xff) throw fail('at most 255 auxiliary data references fit');
  const cdr = referenceBytes(ac.carrierDataReference, 'carrier data reference');
  const parts: Uint8Array[] = [Uint8Array.of(ac.carrierPowerState, cdr.length), cdr, Uint8Array.of(ac.auxiliaryDataReferences.length)];
  for (const aux of ac.auxiliaryDataReferences) {
    const bytes = referenceBytes(aux, 'auxiliary data reference');
    parts.push(Uint8Array.of(bytes.length), bytes);
  }
  return concatBytes(parts);
}

export function parseAlternativeCarrierPayload(payload: Uint8Array): AlternativeCarrier {
  const cursor = new ByteCursor(payload, fail, 'ac payload');
  // CPS is the low 2 bits; the upper 6 are reserved (CH 1.5).
  const carrierPowerState = cursor.u8('carrier power state') & 0x03;
  const reference = (field: string): string => decodeUtf8(cursor.take(cursor.u8(`${field} length`), field), fail, `ac ${field}`);
  const carrierDataReference = reference('carrier data reference');
  const count = cursor.u8('auxiliary data reference count');
  const auxiliaryDataReferences: string[] = [];
  for (let i = 0; i < count; i += 1) auxiliaryDataReferences.push(reference(`auxiliary reference ${i}`));
  if (!cursor.atEnd()) throw cursor.error(`${cursor.remaining} unexpected trailing byte(s)`);
  return { carrierPowerState, carrierDataReference, auxiliaryDataReferences };
}

export function alternativeCarrierRecord(ac: AlternativeCarrier): NdefRecord {
  return ndefRecord(Tnf.WELL_KNOWN, RTD_ALTERNATIVE_CARRIER, encodeAlternativeCarrierPayload(ac));
}

/** `cr` record: 2-byte big-endian random number (Annex D's HR uses 0x0102: `ANNEX_D_HR_HEX` in nfc-fixtures.ts). */
export function collisionResolutionRecord(random: number): NdefRecord {
  if (!isUint(random, 0xffff)) throw fail(`collision resolution random ${String(random)} does not fit 2 bytes`);
  return ndefRecord(Tnf.WELL_KNOWN, RTD_COLLISION_RESOLUTION, uintBytes(random, 2));
}

export interface HandoverPayload {
  readonly version: number;
  /** From a `cr` record in the embedded message (Hr only in practice). */
  readonly collisionRandom?: number;
  readonly alternativeCarriers: readonly AlternativeCarrier[];
  /** Embedded records other than `ac` and `cr` (e.g. an `err` record), kept for the caller. */
  readonly otherRecords: readonly NdefRecord[];
}

/** `Hs`/`Hr` payload: version byte, then an embedded NDEF message (`cr` first when present, then `ac`s). */
export function encodeHandoverPayload(payload: {
  readonly version?: number;
  readonly collisionRandom?: number;
  readonly alternativeCarriers: readonly AlternativeCarrier[];
}): Uint8Array {
  const version = payload.version ?? CONNECTION_HANDOVER_VERSION;
  if (!isUint(version, 0xff)) throw fail(`handover version ${String(version)} is not a byte`);
  const records: NdefRecord[] = [];
  if (payload.collisionRandom !== undefined) records.push(collisionResolutionRecord(payload.collisionRandom));
  for (const ac of payload.alternativeCarriers) records.push(alternativeCarrierRecord(ac));
  // An Hs selecting no carrier is the version byte alone (CH 1.5).
  if (records.length === 0) return Uint8Array.of(version);
  return concatBytes([Uint8Array.of(version), encodeNdefMessage(records)]);
}

export function parseHandoverPayload(payload: Uint8Array, what: string): HandoverPayload {
  if (payload.length === 0) throw fail(`${what} payload is empty; expected the version byte`);
  const version = payload[0] ?? 0;
  if (version !== CONNECTION_HANDOVER_VERSION) {
    throw fail(`${what} version 0x${version.toString(16)} is not Connection Handover 1.5 (0x15)`);
  }
  if (payload.length === 1) return { version, alternativeCarriers: [], otherRecords: [] };
  const embedded = parseNdefMessage(payload.subarray(1));
  let collisionRandom: number | undefined;
  const alternativeCarriers: AlternativeCarrier[] = [];
  const otherRecords: NdefRecord[] = [];
  for (const record of embedded) {
    if (isRecordType(record, Tnf.WELL_KNOWN, RTD_ALTERNATIVE_CARRIER)) {
      alternativeCarriers.push(parseAlternativeCarrierPayload(record.payload));
    } else if (isRecordType(record, Tnf.WELL_KNOWN, RTD_COLLISION_RESOLUTION)) {
      if (record.payload.length !== 2) {
        throw fail(`${what} cr record payload must be 2 bytes, got ${record.payload.length}`);
      }
      collisionRandom = ((record.payload[0] ?? 0) << 8) | (record.payload[1] ?? 0);
    } else {
      otherRecords.push(record);
    }
  }
  return collisionRandom === undefined
    ? { version, alternativeCarriers, otherRecords }
    : { version, collisionRandom, alternativeCarriers, otherRecords };
}

// ---------------------------------------------------------------------------------------------------------------
// BLE carrier configuration record (MIME application/vnd.bluetooth.le.oob, id "0"), Multipaz `MdocConnectionMethodBle`

export interface AdStructure {
  readonly type: number;
  readonly data: Uint8Array;
}

/** Bluetooth AD structures `len, type, data` where len counts type + data (Bluetooth Core Vol 3 Part C §11). */
export function encodeAdStructures(structures: readonly AdStructure[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const ad of structures) {
    if (!isUint(ad.type, 0xff)) throw fail(`AD type ${String(ad.type)} is not a byte`);
    if (ad.data.length > 0xfe) throw fail(`AD data of ${ad.data.length} bytes do not fit one AD structure`);
    parts.push(Uint8Array.of(ad.data.length + 1, ad.type), ad.data);
  }
  return concatBytes(parts);
}

/** Parses AD structures; a zero length byte ends the significant part (Bluetooth Core Vol 3 Part C §11). */
export function parseAdStructures(bytes: Uint8Array): AdStructure[] {
  const cursor = new ByteCursor(bytes, fail, 'BLE OOB AD data');
  const structures: AdStructure[] = [];
  while (!cursor.atEnd()) {
    const length = cursor.u8(`AD structure ${structures.length} length`);
    if (length === 0) break;
    const type = cursor.u8(`AD structure ${structures.length} type`);
    const data = cursor.take(length - 1, `AD structure type 0x${type.toString(16)} data (${length - 1} bytes)`);
    structures.push({ type, data });
  }
  return structures;
}

export interface BleMacAddress {
  /** 6 address bytes, as carried in the record. */
  readonly address: Uint8Array;
  /**
   * Bluetooth CSS address-type byte (Annex D writes it: AD length 8). Multipaz omits it (AD length 7);
   * leave undefined to reproduce Multipaz.
   */
  readonly addressType?: number;
}

export interface BleCarrierConfig {
  readonly leRole: LeRole;
  /** Dashed UUID; written as AD 0x07 with the bytes reversed. */
  readonly uuid?: string;
  readonly macAddress?: BleMacAddress;
  /** Multipaz-only L2CAP PSM (AD 0x77, u32 BE). L2CAP stays off by default. */
  readonly psm?: number;
  /**
   * AD structures written after the ones above, verbatim (Samsung Wallet's static HS adds Appearance 0x19
   * and Complete Local Name 0x09: isomdl `apdu_handover_reader.rs` test `samsung_wallet`).
   */
  readonly extraAdStructures?: readonly AdStructure[];
}

export interface ParsedBleCarrier {
  readonly leRole: LeRole;
  /** The UUID to use; when the AD lists several, the last one, as Multipaz does. */
  readonly uuid?: string;
  readonly uuids: readonly string[];
  readonly macAddress?: BleMacAddress;
  readonly psm?: number;
  /** Every AD structure in order, including ones not interpreted here. */
  readonly adStructures: readonly AdStructure[];
}

/** AD structures in Multipaz's order (`MdocConnectionMethodBle.kt`): LE role, UUID, MAC, PSM, then any extras. */
export function encodeBleCarrierPayload(config: BleCarrierConfig): Uint8Array {
  if (!isLeRole(config.leRole)) throw fail(`LE role ${String(config.leRole)} is not 0..3`);
  const structures: AdStructure[] = [{ type: AdType.LE_ROLE, data: Uint8Array.of(config.leRole) }];
  if (config.uuid !== undefined) {
    structures.push({ type: AdType.COMPLETE_128_BIT_UUIDS, data: uuidToBytes(config.uuid).reverse() });
  }
  if (config.macAddress !== undefined) {
    const { address, addressType } = config.macAddress;
    if (address.length !== 6) throw fail(`BLE MAC address must be 6 bytes, got ${address.length}`);
    if (addressType !== undefined && !isUint(addressType, 0xff)) throw fail('BLE address type is not a byte');
    const data = addressType === undefined ? address : concatBytes([address, Uint8Array.of(addressType)]);
    structures.push({ type: AdType.LE_BLUETOOTH_DEVICE_ADDRESS, data });
  }
  if (config.psm !== undefined) {
    if (!isUint(config.psm, 0xffff_ffff)) throw fail(`L2CAP PSM ${String(config.psm)} does not fit 4 bytes`);
    structures.push({ type: AdType.MULTIPAZ_L2CAP_PSM, data: uintBytes(config.psm, 4) });
  }
  structures.push(...(config.extraAdStructures ?? []));
  return encodeAdStructures(structures);
}

export function parseBleCarrierPayload(payload: Uint8Array): ParsedBleCarrier {
  const adStructures = parseAdStructures(payload);
  let leRole: LeRole | undefined;
  const uuids: string[] = [];
  let macAddress: BleMacAddress | undefined;
  let psm: number | undefined;
  for (const ad of adStructures) {
    switch (ad.type) {
      case AdType.LE_ROLE: {
        const value = ad.data[0];
        if (ad.data.length !== 1 || value === undefined) {
          throw fail(`LE Role AD must carry 1 byte, got ${ad.data.length}`);
        }
        if (!isLeRole(value)) throw fail(`LE Role value 0x${value.toString(16)} is not 00..03`);
        leRole = value;
        break;
      }
      case AdType.COMPLETE_128_BIT_UUIDS: {
        if (ad.data.length === 0 || ad.data.length % 16 !== 0) {
          throw fail(`128-bit UUID list AD has ${ad.data.length} bytes, not a multiple of 16`);
        }
        for (let at = 0; at < ad.data.length; at += 16) uuids.push(uuidFromBytes(ad.data.slice(at, at + 16).reverse()));
        break;
      }
      case AdType.LE_BLUETOOTH_DEVICE_ADDRESS: {
        if (ad.data.length === 6) macAddress = { address: ad.data };
        else if (ad.data.length === 7) macAddress = { address: ad.data.slice(0, 6), addressType: ad.data[6] ?? 0 };
        else throw fail(`LE Bluetooth Device Address AD must carry 6 or 7 bytes, got ${ad.data.length}`);
        break;
      }
      case AdType.MULTIPAZ_L2CAP_PSM: {
        if (ad.data.length !== 4) throw fail(`L2CAP PSM AD must carry 4 bytes, got ${ad.data.length}`);
        psm = new ByteCursor(ad.data, fail, 'PSM').uint(4, 'PSM');
        break;
      }
      default:
        break;
    }
  }
  if (leRole === undefined) throw fail('BLE carrier record lacks the LE Role AD structure (type 0x1C)');
  const uuid = uuids.at(-1);
  return {
    leRole,
    uuids,
    adStructures,
    ...(uuid === undefined ? {} : { uuid }),
    ...(macAddress === undefined ? {} : { macAddress }),
    ...(psm === undefined ? {} : { psm }),
  };
}

export function bleCarrierRecord(config: BleCarrierConfig): NdefRecord {
  return ndefRecord(Tnf.MIME_MEDIA, BLE_OOB_MIME_TYPE, encodeBleCarrierPayload(config), BLE_CARRIER_ID);
}

// ---------------------------------------------------------------------------------------------------------------
// NFC carrier configuration record (external iso.org:18013:nfc, id "nfc"), ISO 18013-5 §8.2.2.2 Table 6

/**
 * `typed`: version, then `len, type, value` per field with len counting type + value, type 01 = max command
 * data length, 02 = max response data length (Multipaz `MdocConnectionMethodNfc.kt`: `01 | 03 01 ffff | 04 02 010000`).
 * `untyped`: version, then `len, value` per field with no type byte — isomdl's HR bytes `01 01FF 02FFFF`.
 * Multipaz's parser rejects the untyped form (it expects type 01 where isomdl puts FF), so build typed.
 */
export type NfcCarrierLayout = 'typed' | 'untyped';

export interface NfcCarrierConfig {
  /** Default 1. */
  readonly version?: number;
  readonly maxCommandDataLength: number;
  readonly maxResponseDataLength: number;
  /** Default 'typed'. */
  readonly layout?: NfcCarrierLayout;
}

export interface ParsedNfcCarrier {
  readonly version: number;
  /** 'versionOnly' is the 1-byte form (Annex D's HR); both lengths are then absent. */
  readonly layout: NfcCarrierLayout | 'versionOnly';
  readonly maxCommandDataLength?: number;
  readonly maxResponseDataLength?: number;
}

export const NfcCarrierDataType = { MAX_COMMAND_DATA_LENGTH: 0x01, MAX_RESPONSE_DATA_LENGTH: 0x02 } as const;

/** Multipaz's values: command 0xFFFF, response 0x10000 (its HS and HR in test/unit/sim/iso/nfc-fixtures.ts). */
export const MULTIPAZ_NFC_CARRIER: NfcCarrierConfig = {
  maxCommandDataLength: 0xffff,
  maxResponseDataLength: 0x10000,
};

/** Minimal big-endian bytes, at least one (Multipaz: <0x100 → 1, <0x10000 → 2, else 3). */
function minimalUint(value: number, field: string): Uint8Array {
  if (!isUint(value, 0xffff_ffff)) throw fail(`${field} ${String(value)} is not a 32-bit unsigned value`);
  const size = value < 0x100 ? 1 : value < 0x10000 ? 2 : value < 0x1000000 ? 3 : 4;
  return uintBytes(value, size);
}

export function encodeNfcCarrierPayload(config: NfcCarrierConfig): Uint8Array {
  const version = config.version ?? 1;
  if (!isUint(version, 0xff)) throw fail(`NFC carrier version ${String(version)} is not a byte`);
  const command = minimalUint(config.maxCommandDataLength, 'max command data length');
  const response = minimalUint(config.maxResponseDataLength, 'max response data length');
  if ((config.layout ?? 'typed') === 'untyped') {
    return concatBytes([Uint8Array.of(version, command.length), command, Uint8Array.of(response.length), response]);
  }
  return concatBytes([
    Uint8Array.of(version, command.length + 1, NfcCarrierDataType.MAX_COMMAND_DATA_LENGTH),
    command,
    Uint8Array.of(response.length + 1, NfcCarrierDataType.MAX_RESPONSE_DATA_LENGTH),
    response,
  ]);
}

function tryParseNfcFields(rest: Uint8Array, layout: NfcCarrierLayout): [number, number] | undefined {
  const cursor = new ByteCursor(rest, fail, 'NFC carrier');
  const field = (type: number): number | undefined => {
    if (cursor.atEnd()) return undefined;
    const length = cursor.u8('length');
    const typeBytes = layout === 'typed' ? 1 : 0;
    const valueLength = length - typeBytes;
    if (valueLength < 1 || valueLength > 4 || valueLength + typeBytes > cursor.remaining) return undefined;
    if (layout === 'typed' && cursor.u8('type') !== type) return undefined;
    return cursor.uint(valueLength, 'value');
  };
  const command = field(NfcCarrierDataType.MAX_COMMAND_DATA_LENGTH);
  const response = field(NfcCarrierDataType.MAX_RESPONSE_DATA_LENGTH);
  if (command === undefined || response === undefined || !cursor.atEnd()) return undefined;
  return [command, response];
}

/** Accepts the typed (Multipaz), untyped (isomdl) and version-only (Annex D) forms; anything else is an error. */
export function parseNfcCarrierPayload(payload: Uint8Array): ParsedNfcCarrier {
  const version = payload[0];
  if (version === undefined) throw fail('NFC carrier record payload is empty; expected the version byte');
  if (payload.length === 1) return { version, layout: 'versionOnly' };
  const rest = payload.subarray(1);
  for (const layout of ['typed', 'untyped'] as const) {
    const fields = tryParseNfcFields(rest, layout);
    if (fields !== undefined) {
      return { version, layout, maxCommandDataLength: fields[0], maxResponseDataLength: fields[1] };
    }
  }
  throw fail(
    `NFC carrier record payload ${Array.from(payload, (b) => b.toString(16).padStart(2, '0')).join('')} ` +
      'is neither version-only, typed (len,01,cmd,len,02,rsp) nor untyped (len,cmd,len,rsp)',
  );
}

export function nfcCarrierRecord(config: NfcCarrierConfig): NdefRecord {
  return ndefRecord(Tnf.EXTERNAL, NFC_CARRIER_TYPE, encodeNfcCarrierPayload(config), NFC_CARRIER_ID);
}

// ---------------------------------------------------------------------------------------------------------------
// Engagement records

/** DeviceEngagement record; `deviceEngagement` is the CBOR DeviceEngagement, written verbatim (it is hashed). */
export function deviceEngagementRecord(deviceEngagement: Uint8Array): NdefRecord {
  return ndefRecord(Tnf.EXTERNAL, DEVICE_ENGAGEMENT_TYPE, deviceEngagement, DEVICE_ENGAGEMENT_ID);
}

export function readerEngagementRecord(readerEngagement: Uint8Array = READER_ENGAGEMENT_1_0): NdefRecord {
  return ndefRecord(Tnf.EXTERNAL, READER_ENGAGEMENT_TYPE, readerEngagement, READER_ENGAGEMENT_ID);
}

// ---------------------------------------------------------------------------------------------------------------
// Handover Select (mdoc → reader)

export type HandoverSelectRecordKind = 'deviceEngagement' | 'ble' | 'nfc';
export type CarrierKind = 'ble' | 'nfc';

export interface BuildHandoverSelectOptions {
  /** CBOR DeviceEngagement bytes (opaque here). */
  readonly deviceEngagement: Uint8Array;
  readonly ble?: BleCarrierConfig;
  readonly nfc?: NfcCarrierConfig;
  /**
   * Order of the records after `Hs`. Default Multipaz's: deviceEngagement, ble, nfc (`MULTIPAZ_STATIC_HS_HEX`).
   * Apple Wallet writes ble, deviceEngagement. Kinds not configured may be listed and are skipped; configured ones
   * must appear once.
   */
  readonly recordOrder?: readonly HandoverSelectRecordKind[];
  /** Order of the `ac` records inside `Hs`. Default ble, nfc (Multipaz's static HS). */
  readonly carrierOrder?: readonly CarrierKind[];
  readonly carrierPowerState?: number;
}

function orderPresent<K extends string>(order: readonly K[], present: ReadonlySet<K>, what: string): K[] {
  const seen = new Set<K>();
  const result: K[] = [];
  for (const kind of order) {
    if (seen.has(kind)) throw fail(`${what} lists "${kind}" twice`);
    seen.add(kind);
    if (present.has(kind)) result.push(kind);
  }
  for (const kind of present) if (!seen.has(kind)) throw fail(`${what} does not place the "${kind}" record`);
  return result;
}

/**
 * Builds the HS NDEF message of the mdoc. Every `ac` names the DeviceEngagement record ("mdoc") as its
 * auxiliary reference, as Multipaz and Apple Wallet do. With Multipaz's inputs this reproduces its static HS
 * (254 bytes) and negotiated HS (186 bytes) byte-exact; with Apple's inputs and record order Apple's HS
 * (194 bytes): test/unit/sim/iso/handover.test.ts.
 */
export function buildHandoverSelect(options: BuildHandoverSelectOptions): Uint8Array {
  const present = new Set<HandoverSelectRecordKind>(['deviceEngagement']);
  if (options.ble !== undefined) present.add('ble');
  if (options.nfc !== undefined) present.add('nfc');
  const carriers = orderPresent(
    options.carrierOrder ?? ['ble', 'nfc'],
    new Set<CarrierKind>([...present].filter((k): k is CarrierKind => k !== 'deviceEngagement')),
    'carrierOrder',
  );
  if (carriers.length === 0) throw fail('a Handover Select needs at least one carrier (ble or nfc)');
  const order = orderPresent(options.recordOrder ?? ['deviceEngagement', 'ble', 'nfc'], present, 'recordOrder');
  const cps = options.carrierPowerState ?? CarrierPowerState.ACTIVE;
  const hs = ndefRecord(
    Tnf.WELL_KNOWN,
    RTD_HANDOVER_SELECT,
    encodeHandoverPayload({
      alternativeCarriers: carriers.map((kind) => ({
        carrierPowerState: cps,
        carrierDataReference: kind === 'ble' ? BLE_CARRIER_ID : NFC_CARRIER_ID,
        auxiliaryDataReferences: [DEVICE_ENGAGEMENT_ID],
      })),
    }),
  );
  const records: NdefRecord[] = [hs];
  for (const kind of order) {
    if (kind === 'deviceEngagement') records.push(deviceEngagementRecord(options.deviceEngagement));
    else if (kind === 'ble' && options.ble !== undefined) records.push(bleCarrierRecord(options.ble));
    else if (kind === 'nfc' && options.nfc !== undefined) records.push(nfcCarrierRecord(options.nfc));
  }
  return encodeNdefMessage(records);
}

export interface SelectedBleCarrier extends ParsedBleCarrier {
  /** The mdoc BLE modes this carrier offers, read with the right sender (Bluetooth CSS LE Role). */
  readonly modes: MdocBleModes;
  /** The `ac` record that references this carrier, if any. */
  readonly alternativeCarrier?: AlternativeCarrier;
}

export interface SelectedNfcCarrier extends ParsedNfcCarrier {
  readonly alternativeCarrier?: AlternativeCarrier;
}

export interface ParsedHandoverSelect {
  readonly version: number;
  readonly alternativeCarriers: readonly AlternativeCarrier[];
  /** DeviceEngagement record payload, verbatim: DeviceEngagementBytes = #6.24(bstr this) (ISO 18013-5 §9.1.5.1). */
  readonly deviceEngagement: Uint8Array;
  readonly ble?: SelectedBleCarrier;
  readonly nfc?: SelectedNfcCarrier;
  readonly records: readonly ParsedNdefRecord[];
}

function acFor(record: NdefRecord, carriers: readonly AlternativeCarrier[]): AlternativeCarrier | undefined {
  const id = recordIdText(record);
  return id === undefined ? undefined : carriers.find((ac) => ac.carrierDataReference === id);
}

function requireHandoverRecord(records: readonly ParsedNdefRecord[], type: string, what: string): ParsedNdefRecord {
  const record = findRecord(records, Tnf.WELL_KNOWN, type);
  if (record === undefined) throw fail(`NDEF message has no ${what} ("${type}") record`);
  return record;
}

function parseCarriers(
  records: readonly ParsedNdefRecord[],
  carriers: readonly AlternativeCarrier[],
  sender: HandoverSender,
): { ble?: SelectedBleCarrier; nfc?: SelectedNfcCarrier } {
  const bleRecord = findRecord(records, Tnf.MIME_MEDIA, BLE_OOB_MIME_TYPE);
  const nfcRecord = findRecord(records, Tnf.EXTERNAL, NFC_CARRIER_TYPE);
  const out: { ble?: SelectedBleCarrier; nfc?: SelectedNfcCarrier } = {};
  if (bleRecord !== undefined) {
    const parsed = parseBleCarrierPayload(bleRecord.payload);
    const ac = acFor(bleRecord, carriers);
    const modes = leRoleToMdocModes(parsed.leRole, sender);
    out.ble = { ...parsed, modes, ...(ac === undefined ? {} : { alternativeCarrier: ac }) };
  }
  if (nfcRecord !== undefined) {
    const parsed = parseNfcCarrierPayload(nfcRecord.payload);
    const ac = acFor(nfcRecord, carriers);
    out.nfc = ac === undefined ? parsed : { ...parsed, alternativeCarrier: ac };
  }
  return out;
}

/**
 * Parses an HS NDEF message, finding every record by type rather than position (record order varies between
 * wallets: test/fixtures/captures/samsung-wallet-static.json; isomdl commit cc3fb5a). The DeviceEngagement is
 * required and returned verbatim.
 */
export function parseHandoverSelect(message: Uint8Array): ParsedHandoverSelect {
  const records = parseNdefMessage(message);
  const hs = requireHandoverRecord(records, RTD_HANDOVER_SELECT, 'Handover Select');
  const payload = parseHandoverPayload(hs.payload, 'Handover Select');
  const deRecord = findRecord(records, Tnf.EXTERNAL, DEVICE_ENGAGEMENT_TYPE);
  if (deRecord === undefined) {
    throw fail(`Handover Select has no DeviceEngagement record (external type ${DEVICE_ENGAGEMENT_TYPE})`);
  }
  return {
    version: payload.version,
    alternativeCarriers: payload.alternativeCarriers,
    deviceEngagement: deRecord.payload,
    ...parseCarriers(records, payload.alternativeCarriers, 'mdoc'),
    records,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Handover Request (reader → mdoc), negotiated handover

export interface BuildHandoverRequestOptions {
  /**
   * The reader's BLE offer; the UUID is required: a reader supporting central client mode must send one
   * (ISO 18013-5 §8.3.3.1.1.2).
   */
  readonly ble: BleCarrierConfig & { readonly uuid: string };
  /**
   * NFC carrier offer. When present it always carries both max-length fields: Google Wallet reads past a
   * version-only record and crashes (isomdl `ndef_handover_reader.rs`, `generate_hr_ndef()`). Omitted → no NFC
   * carrier.
   */
  readonly nfc?: NfcCarrierConfig;
  /** ReaderEngagement CBOR; default `{0: "1.0"}` as Multipaz and isomdl send; null omits it (Annex D style). */
  readonly readerEngagement?: Uint8Array | null;
  /** Adds a `cr` record with this 16-bit random number first in the Hr payload. */
  readonly collisionRandom?: number;
  readonly carrierPowerState?: number;
}

/**
 * Builds the reader's HR: `Hr` (ac "0", ac "nfc", no auxiliary references), ReaderEngagement, BLE OOB, NFC —
 * Multipaz's layout (`mdocReaderNfcHandover.kt`). With the inputs of Multipaz's `MdocNfcEngagementHelperTest.kt`
 * this reproduces its 168-byte HR byte-exact.
 */
export function buildHandoverRequest(options: BuildHandoverRequestOptions): Uint8Array {
  const cps = options.carrierPowerState ?? CarrierPowerState.ACTIVE;
  const carriers: AlternativeCarrier[] = [{ carrierPowerState: cps, carrierDataReference: BLE_CARRIER_ID, auxiliaryDataReferences: [] }];
  if (options.nfc !== undefined) {
    carriers.push({ carrierPowerState: cps, carrierDataReference: NFC_CARRIER_ID, auxiliaryDataReferences: [] });
  }
  const hr = ndefRecord(
    Tnf.WELL_KNOWN,
    RTD_HANDOVER_REQUEST,
    encodeHandoverPayload({
      alternativeCarriers: carriers,
      ...(options.collisionRandom === undefined ? {} : { collisionRandom: options.collisionRandom }),
    }),
  );
  const records: NdefRecord[] = [hr];
  if (options.readerEngagement !== null) records.push(readerEngagementRecord(options.readerEngagement));
  records.push(bleCarrierRecord(options.ble));
  if (options.nfc !== undefined) records.push(nfcCarrierRecord(options.nfc));
  return encodeNdefMessage(records);
}

export interface ParsedHandoverRequest {
  readonly version: number;
  readonly collisionRandom?: number;
  readonly alternativeCarriers: readonly AlternativeCarrier[];
  /** ReaderEngagement record payload, verbatim, when present. */
  readonly readerEngagement?: Uint8Array;
  /** BLE offer; `modes` is read with the reader as sender (LE roles 00/01 invert: leRoleToMdocModes). */
  readonly ble?: SelectedBleCarrier;
  readonly nfc?: SelectedNfcCarrier;
  readonly records: readonly ParsedNdefRecord[];
}

/** Parses an HR NDEF message (the tag side of negotiated handover), records found by type. */
export function parseHandoverRequest(message: Uint8Array): ParsedHandoverRequest {
  const records = parseNdefMessage(message);
  const hr = requireHandoverRecord(records, RTD_HANDOVER_REQUEST, 'Handover Request');
  const payload = parseHandoverPayload(hr.payload, 'Handover Request');
  const reRecord = findRecord(records, Tnf.EXTERNAL, READER_ENGAGEMENT_TYPE);
  return {
    version: payload.version,
    ...(payload.collisionRandom === undefined ? {} : { collisionRandom: payload.collisionRandom }),
    alternativeCarriers: payload.alternativeCarriers,
    ...(reRecord === undefined ? {} : { readerEngagement: reRecord.payload }),
    ...parseCarriers(records, payload.alternativeCarriers, 'reader'),
    records,
  };
}
