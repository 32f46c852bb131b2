/**
 * NFC Forum TNEP records for ISO 18013-5 negotiated handover (NFC Forum TNEP 1.0; Multipaz `nfc/ServiceParameterRecord.kt`, `ServiceSelectRecord.kt`, `TnepStatusRecord.kt`):
 * Service Parameter "Tp", Service Select "Ts", Status "Te" — all TNF 1 (well-known).
 */
import { ByteCursor, decodeUtf8, isUint, utf8, concatBytes } from './byte-cursor.js';
import { Tnf, encodeNdefMessage, findRecord, ndefRecord, parseNdefMessage } from './ndef.js';
import type { NdefRecord } from './ndef.js';

export class TnepFormatError extends Error {
  override readonly name = 'TnepFormatError';
}

const fail = (message: string): Error => new TnepFormatError(message);

/** Record types (NFC Forum TNEP 1.0; Multipaz `nfc/Nfc.kt`). */
export const RTD_SERVICE_PARAMETER = 'Tp';
export const RTD_SERVICE_SELECT = 'Ts';
export const RTD_TNEP_STATUS = 'Te';

/** The TNEP service through which 18013-5 negotiated handover runs (NFC Forum Connection Handover 1.5 §4.1.2). */
export const TNEP_HANDOVER_SERVICE = 'urn:nfc:sn:handover';
/** TNEP version 1.0 as the byte Multipaz writes (`10`: test/fixtures/captures/multipaz-loopback-negotiated.json). */
export const TNEP_VERSION_1_0 = 0x10;
/** Communication mode 00 = single response (what Connection Handover 1.5 §4.1.2 prescribes). */
export const TNEP_COMM_MODE_SINGLE_RESPONSE = 0x00;
/** Te status 00 = success (TNEP 1.0 §4.3); any other value is a failure. */
export const TNEP_STATUS_SUCCESS = 0x00;
/** t_wait when the Tp carries no WT (isomdl `ndef_handover_reader.rs` `DEFAULT_T_WAIT_MS`). */
export const DEFAULT_T_WAIT_MS = 8;

export interface ServiceParameter {
  readonly tnepVersion: number;
  readonly serviceName: string;
  /**
   * Fields after the name are optional on parse: a truncated Tp leaves them undefined, and one a single byte
   * short of the layout (isomdl's holder) leaves `maxNdefMessageSize` undefined (isomdl tolerates both).
   */
  readonly communicationMode?: number;
  /** WT, "minimum waiting time" exponent: t_wait = 2^(WT/4 − 1) ms. */
  readonly minimumWaitingTime?: number;
  /** N_wait, the number of waiting-time extensions allowed. */
  readonly maxWaitingTimeExtensions?: number;
  readonly maxNdefMessageSize?: number;
}

/**
 * Multipaz's Tp values (test/fixtures/captures/multipaz-loopback-negotiated.json): version 10, comm mode 00, WT 00,
 * N_wait 0F, max NDEF FFFF.
 */
export const MULTIPAZ_SERVICE_PARAMETER: ServiceParameter = {
  tnepVersion: TNEP_VERSION_1_0,
  serviceName: TNEP_HANDOVER_SERVICE,
  communicationMode: TNEP_COMM_MODE_SINGLE_RESPONSE,
  minimumWaitingTime: 0x00,
  maxWaitingTimeExtensions: 0x0f,
  maxNdefMessageSize: 0xffff,
};

/**
 * Apple Wallet's Tp values (test/fixtures/captures/apple-wallet-negotiated.json): WT 0x14 → 16 ms, N_wait 0x0F,
 * max NDEF 0x0800.
 */
export const APPLE_WALLET_SERVICE_PARAMETER: ServiceParameter = {
  tnepVersion: TNEP_VERSION_1_0,
  serviceName: TNEP_HANDOVER_SERVICE,
  communicationMode: TNEP_COMM_MODE_SINGLE_RESPONSE,
  minimumWaitingTime: 0x14,
  maxWaitingTimeExtensions: 0x0f,
  maxNdefMessageSize: 0x0800,
};

function serviceNameBytes(name: string): Uint8Array {
  const bytes = utf8(name);
  if (bytes.length > 0xff) throw fail(`service name is ${bytes.length} bytes; at most 255 fit its length byte`);
  return bytes;
}

function checkByte(value: number, field: string): number {
  if (!isUint(value, 0xff)) throw fail(`${field} ${String(value)} is not a byte`);
  return value;
}

/**
 * Tp payload: tnepVersion, nameLen, name, commMode, WT, N_wait, maxNdefSize (2 bytes BE) (TNEP 1.0 §4.1.2;
 * Multipaz `nfc/ServiceParameterRecord.kt`).
 * Missing optional fields are written with Multipaz's values so the record is always complete.
 */
export function encodeServiceParameterPayload(sp: ServiceParameter): Uint8Array {
  const name = serviceNameBytes(sp.serviceName);
  const maxSize = sp.maxNdefMessageSize ?? 0xffff;
  if (!isUint(maxSize, 0xffff)) throw fail(`max NDEF message size ${String(maxSize)} does not fit 2 bytes`);
  return concatBytes([
    Uint8Array.of(checkByte(sp.tnepVersion, 'TNEP version'), name.length),
    name,
    Uint8Array.of(
      checkByte(sp.communicationMode ?? TNEP_COMM_MODE_SINGLE_RESPONSE, 'communication mode'),
      checkByte(sp.minimumWaitingTime ?? 0, 'WT'),
      checkByte(sp.maxWaitingTimeExtensions ?? 0x0f, 'N_wait'),
      maxSize >> 8,
      maxSize & 0xff,
    ),
  ]);
}

export function parseServiceParameterPayload(payload: Uint8Array): ServiceParameter {
  const cursor = new ByteCursor(payload, fail, 'Tp payload');
  const tnepVersion = cursor.u8('TNEP version');
  const nameLength = cursor.u8('service name length');
  const serviceName = decodeUtf8(cursor.take(nameLength, 'service name'), fail, 'Tp service name');
  if (cursor.atEnd()) return { tnepVersion, serviceName };
  const communicationMode = cursor.u8('communication mode');
  if (cursor.atEnd()) return { tnepVersion, serviceName, communicationMode };
  const minimumWaitingTime = cursor.u8('WT');
  if (cursor.atEnd()) return { tnepVersion, serviceName, communicationMode, minimumWaitingTime };
  const maxWaitingTimeExtensions = cursor.u8('N_wait');
  // One byte short of the TNEP layout: isomdl's holder writes `00 0F FF FF` after the name where TNEP has
  // five bytes (spruceid/isomdl @ fcb49d15ad9d54afa028a12183ee7fab1e46a5dc, ndef_handover.rs
  // `generate_tp_ndef()`), and isomdl's reader accepts it, reading only the name and the WT byte
  // (ndef_handover_reader.rs `detect_tp_service()`). Read positionally as isomdl does and drop the lone
  // byte where the 2-byte maximum NDEF size would start: without it the CC's file size bounds writes.
  if (cursor.atEnd() || cursor.remaining === 1) {
    return { tnepVersion, serviceName, communicationMode, minimumWaitingTime, maxWaitingTimeExtensions };
  }
  const maxNdefMessageSize = cursor.uint(2, 'max NDEF message size');
  if (!cursor.atEnd()) throw cursor.error(`${cursor.remaining} unexpected trailing byte(s)`);
  return {
    tnepVersion,
    serviceName,
    communicationMode,
    minimumWaitingTime,
    maxWaitingTimeExtensions,
    maxNdefMessageSize,
  };
}

export function serviceParameterRecord(sp: ServiceParameter): NdefRecord {
  return ndefRecord(Tnf.WELL_KNOWN, RTD_SERVICE_PARAMETER, encodeServiceParameterPayload(sp));
}

/** Ts payload: nameLen, name (Multipaz `nfc/ServiceSelectRecord.kt`). */
export function encodeServiceSelectPayload(serviceName: string): Uint8Array {
  const name = serviceNameBytes(serviceName);
  return concatBytes([Uint8Array.of(name.length), name]);
}

export function parseServiceSelectPayload(payload: Uint8Array): string {
  const cursor = new ByteCursor(payload, fail, 'Ts payload');
  const name = cursor.take(cursor.u8('service name length'), 'service name');
  if (!cursor.atEnd()) throw cursor.error(`${cursor.remaining} unexpected trailing byte(s)`);
  return decodeUtf8(name, fail, 'Ts service name');
}

export function serviceSelectRecord(serviceName: string = TNEP_HANDOVER_SERVICE): NdefRecord {
  return ndefRecord(Tnf.WELL_KNOWN, RTD_SERVICE_SELECT, encodeServiceSelectPayload(serviceName));
}

/** Te payload: one status byte (TNEP 1.0 §4.3; Multipaz `nfc/TnepStatusRecord.kt`). */
export function tnepStatusRecord(status: number = TNEP_STATUS_SUCCESS): NdefRecord {
  return ndefRecord(Tnf.WELL_KNOWN, RTD_TNEP_STATUS, Uint8Array.of(checkByte(status, 'TNEP status')));
}

export function parseTnepStatusPayload(payload: Uint8Array): number {
  if (payload.length !== 1) throw fail(`Te payload must be 1 status byte, got ${payload.length}`);
  return payload[0] ?? 0;
}

/** Single-record messages, as written to / read from the NDEF file (see the Multipaz negotiated capture). */
export function buildServiceParameterMessage(sp: ServiceParameter = MULTIPAZ_SERVICE_PARAMETER): Uint8Array {
  return encodeNdefMessage([serviceParameterRecord(sp)]);
}

export function buildServiceSelectMessage(serviceName: string = TNEP_HANDOVER_SERVICE): Uint8Array {
  return encodeNdefMessage([serviceSelectRecord(serviceName)]);
}

export function buildTnepStatusMessage(status: number = TNEP_STATUS_SUCCESS): Uint8Array {
  return encodeNdefMessage([tnepStatusRecord(status)]);
}

/**
 * The Tp record offering `serviceName` in an NDEF message, or undefined: its absence is how the reader
 * tells static from negotiated handover (Multipaz `mdocReaderNfcHandover.kt`). Other services' Tp records are skipped.
 */
export function findServiceParameter(
  records: readonly NdefRecord[],
  serviceName: string = TNEP_HANDOVER_SERVICE,
): ServiceParameter | undefined {
  for (const record of records) {
    if (record.tnf !== Tnf.WELL_KNOWN || record.type.length !== 2) continue;
    if (record.type[0] !== 0x54 || record.type[1] !== 0x70) continue; // "Tp"
    const sp = parseServiceParameterPayload(record.payload);
    if (sp.serviceName === serviceName) return sp;
  }
  return undefined;
}

/** The selected service name from a Ts message (the tag side after the reader's first write). */
export function parseServiceSelectMessage(message: Uint8Array): string {
  const record = findRecord(parseNdefMessage(message), Tnf.WELL_KNOWN, RTD_SERVICE_SELECT);
  if (record === undefined) throw fail('message has no Service Select (Ts) record');
  return parseServiceSelectPayload(record.payload);
}

/** The status byte from a Te message (the reader side after selecting the service). */
export function parseTnepStatusMessage(message: Uint8Array): number {
  const record = findRecord(parseNdefMessage(message), Tnf.WELL_KNOWN, RTD_TNEP_STATUS);
  if (record === undefined) throw fail('message has no TNEP Status (Te) record');
  return parseTnepStatusPayload(record.payload);
}

/**
 * TNEP minimum waiting time in whole milliseconds: 2^(WT/4 − 1) (TNEP 1.0 §4.1.6), rounded up so the reader
 * never waits less than the tag asked for, clamped to 1..1000 ms (isomdl: a hostile WT must not stall the
 * reader), 8 ms when WT is absent. WT 0x14 (Apple Wallet) → 16 ms; WT 0x10 (Google Wallet) → 8 ms.
 */
export function tWaitMs(wt?: number): number {
  if (wt === undefined) return DEFAULT_T_WAIT_MS;
  if (!isUint(wt, 0xff)) throw fail(`WT ${String(wt)} is not a byte`);
  const exact = 2 ** (wt / 4 - 1);
  // Guard against float noise at exact powers of two (e.g. 2^4 computed as 16.000000000000004).
  const rounded = Math.ceil(exact - 1e-9);
  return Math.min(1000, Math.max(1, rounded));
}
