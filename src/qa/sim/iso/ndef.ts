/**
 * NDEF records and messages (NFC Forum NDEF 1.0) as used by ISO 18013-5 NFC engagement.
 *
 * Byte layout (NFC Forum NDEF 1.0 §3.2): header `MB(0x80) | ME(0x40) | CF(0x20) | SR(0x10) | IL(0x08) | TNF`,
 * TYPE_LENGTH, PAYLOAD_LENGTH (1 byte if SR, else 4 bytes big-endian), ID_LENGTH if IL, then TYPE, ID, PAYLOAD.
 * Chunked records (CF) never occur in 18013-5 engagement, so they are rejected rather than reassembled.
 */
import { ByteCursor, concatBytes, decodeUtf8, isUint, uintBytes, utf8 } from './byte-cursor.js';

export class NdefFormatError extends Error {
  override readonly name = 'NdefFormatError';
}

const fail = (message: string): Error => new NdefFormatError(message);

/** Header flag bits (NDEF 1.0 §3.2). */
export const NdefFlag = { MB: 0x80, ME: 0x40, CF: 0x20, SR: 0x10, IL: 0x08 } as const;

/** Type Name Format values (NDEF 1.0 §3.2.6; 18013-5 engagement uses 1, 2 and 4). */
export const Tnf = {
  EMPTY: 0,
  WELL_KNOWN: 1,
  MIME_MEDIA: 2,
  ABSOLUTE_URI: 3,
  EXTERNAL: 4,
  UNKNOWN: 5,
  UNCHANGED: 6,
  RESERVED: 7,
} as const;
export type Tnf = (typeof Tnf)[keyof typeof Tnf];

export interface NdefRecord {
  readonly tnf: Tnf;
  readonly type: Uint8Array;
  /** Present (even when empty) means the IL flag is set and an ID_LENGTH byte is written. */
  readonly id?: Uint8Array;
  readonly payload: Uint8Array;
}

/** A record as found in a message, with where it sat and its exact header, for diagnostics and tests. */
export interface ParsedNdefRecord extends NdefRecord {
  readonly header: number;
  readonly offset: number;
  readonly byteLength: number;
}

const MAX_PAYLOAD = 0xffff_ffff;

/** Convenience constructor taking strings (ASCII/UTF-8) for type and id. */
export function ndefRecord(tnf: Tnf, type: string | Uint8Array, payload: Uint8Array, id?: string | Uint8Array): NdefRecord {
  const record: NdefRecord = {
    tnf,
    type: typeof type === 'string' ? utf8(type) : type,
    payload,
  };
  if (id === undefined) return record;
  return { ...record, id: typeof id === 'string' ? utf8(id) : id };
}

function validateRecord(record: NdefRecord): void {
  if (!isUint(record.tnf, 7)) throw fail(`TNF ${String(record.tnf)} is not a 3-bit value`);
  if (record.tnf === Tnf.RESERVED) throw fail('TNF 7 is reserved and must not be used');
  if (record.tnf === Tnf.UNCHANGED) {
    throw fail('TNF 6 (unchanged) only occurs in chunked records, which are not supported');
  }
  if (record.type.length > 0xff) throw fail(`record type is ${record.type.length} bytes; at most 255 fit TYPE_LENGTH`);
  if (record.id !== undefined && record.id.length > 0xff) {
    throw fail(`record id is ${record.id.length} bytes; at most 255 fit ID_LENGTH`);
  }
  if (record.payload.length > MAX_PAYLOAD) throw fail('payload exceeds 2^32-1 bytes');
  const hasContent = record.type.length > 0 || (record.id?.length ?? 0) > 0 || record.payload.length > 0;
  if (record.tnf === Tnf.EMPTY && hasContent) {
    throw fail('an empty record (TNF 0) must have no type, id or payload');
  }
  if (record.tnf === Tnf.UNKNOWN && record.type.length > 0) {
    throw fail('an unknown-type record (TNF 5) must have TYPE_LENGTH 0');
  }
}

/**
 * Encodes one record with the given MB/ME flags. SR is used whenever the payload fits one byte, as every
 * 18013-5 implementation does (headers 91, 51, d1, 1a, 1c, 5c, 5a in test/fixtures/captures), so transcripts are
 * reproduced byte-exact.
 */
export function encodeNdefRecord(record: NdefRecord, flags: { readonly mb: boolean; readonly me: boolean }): Uint8Array {
  validateRecord(record);
  const short = record.payload.length <= 0xff;
  let header = record.tnf;
  if (flags.mb) header |= NdefFlag.MB;
  if (flags.me) header |= NdefFlag.ME;
  if (short) header |= NdefFlag.SR;
  if (record.id !== undefined) header |= NdefFlag.IL;
  const head = [header, record.type.length];
  const lengthBytes = short ? uintBytes(record.payload.length, 1) : uintBytes(record.payload.length, 4);
  const idLength = record.id === undefined ? [] : [record.id.length];
  return concatBytes([
    Uint8Array.from(head),
    lengthBytes,
    Uint8Array.from(idLength),
    record.type,
    record.id ?? new Uint8Array(0),
    record.payload,
  ]);
}

/** Encodes a message: MB on the first record, ME on the last. */
export function encodeNdefMessage(records: readonly NdefRecord[]): Uint8Array {
  if (records.length === 0) throw fail('an NDEF message needs at least one record');
  return concatBytes(records.map((record, index) => encodeNdefRecord(record, { mb: index === 0, me: index === records.length - 1 })));
}

/**
 * Parses a complete NDEF message. Rejects: empty input, CF (chunking unsupported), reserved/unchanged TNF,
 * MB missing on the first or set on a later record, data after the ME record, a message without ME,
 * and any length field that runs past the end of the input.
 */
export function parseNdefMessage(bytes: Uint8Array): ParsedNdefRecord[] {
  if (bytes.length === 0) throw fail('NDEF message is empty (0 bytes)');
  const cursor = new ByteCursor(bytes, fail, 'NDEF message');
  const records: ParsedNdefRecord[] = [];
  for (;;) {
    const offset = cursor.offset;
    const index = records.length;
    const header = cursor.u8(`record ${index} header`);
    const tnf = (header & 0x07) as Tnf;
    const where = `record ${index} at offset ${offset}`;
    if ((header & NdefFlag.CF) !== 0) {
      throw fail(`NDEF ${where}: chunked records (CF flag) are not supported`);
    }
    if (index === 0 && (header & NdefFlag.MB) === 0) throw fail(`NDEF ${where}: first record lacks the MB flag`);
    if (index > 0 && (header & NdefFlag.MB) !== 0) throw fail(`NDEF ${where}: MB flag set on a record after the first`);
    if (tnf === Tnf.RESERVED) throw fail(`NDEF ${where}: TNF 7 is reserved`);
    if (tnf === Tnf.UNCHANGED) {
      throw fail(`NDEF ${where}: TNF 6 (unchanged) only occurs in chunked records, which are not supported`);
    }
    const typeLength = cursor.u8(`${where} TYPE_LENGTH`);
    const payloadLength = (header & NdefFlag.SR) !== 0 ? cursor.u8(`${where} PAYLOAD_LENGTH`) : cursor.uint(4, `${where} PAYLOAD_LENGTH`);
    const idLength = (header & NdefFlag.IL) !== 0 ? cursor.u8(`${where} ID_LENGTH`) : undefined;
    const type = cursor.take(typeLength, `${where} TYPE (${typeLength} bytes)`);
    const id = idLength === undefined ? undefined : cursor.take(idLength, `${where} ID (${idLength} bytes)`);
    const payload = cursor.take(payloadLength, `${where} PAYLOAD (${payloadLength} bytes)`);
    if (tnf === Tnf.EMPTY && (typeLength > 0 || (idLength ?? 0) > 0 || payloadLength > 0)) {
      throw fail(`NDEF ${where}: an empty record (TNF 0) must have zero type, id and payload lengths`);
    }
    if (tnf === Tnf.UNKNOWN && typeLength > 0) {
      throw fail(`NDEF ${where}: an unknown-type record (TNF 5) must have TYPE_LENGTH 0`);
    }
    const base = { tnf, type, payload, header, offset, byteLength: cursor.offset - offset };
    records.push(id === undefined ? base : { ...base, id });
    if ((header & NdefFlag.ME) !== 0) {
      if (!cursor.atEnd()) {
        throw fail(`NDEF message: ${cursor.remaining} byte(s) after the ME record (ends at offset ${cursor.offset})`);
      }
      return records;
    }
    if (cursor.atEnd()) throw fail(`NDEF message: ended after ${where} without a record carrying the ME flag`);
  }
}

/** Record type as text (types in 18013-5 are ASCII). */
export function recordTypeText(record: NdefRecord): string {
  return decodeUtf8(record.type, fail, 'record type');
}

export function recordIdText(record: NdefRecord): string | undefined {
  return record.id === undefined ? undefined : decodeUtf8(record.id, fail, 'record id');
}

/**
 * Whether `record` has the given TNF and type. Well-known types compare case-sensitively (NFC RTD);
 * MIME and external types are case-insensitive (RFC 2045; NFC RTD external types).
 */
export function isRecordType(record: NdefRecord, tnf: Tnf, type: string): boolean {
  if (record.tnf !== tnf) return false;
  let text: string;
  try {
    text = recordTypeText(record);
  } catch {
    return false;
  }
  return tnf === Tnf.WELL_KNOWN ? text === type : text.toLowerCase() === type.toLowerCase();
}

/** All records of one TNF and type, in message order (record order varies between wallets: isomdl commit cc3fb5a). */
export function findRecords<R extends NdefRecord>(records: readonly R[], tnf: Tnf, type: string): R[] {
  return records.filter((record) => isRecordType(record, tnf, type));
}

/** The single record of that TNF and type; undefined when absent, an error when repeated. */
export function findRecord<R extends NdefRecord>(records: readonly R[], tnf: Tnf, type: string): R | undefined {
  const found = findRecords(records, tnf, type);
  if (found.length > 1) throw fail(`NDEF message has ${found.length} records of type "${type}"; expected at most one`);
  return found[0];
}
