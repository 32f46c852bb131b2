/**
 * ISO 7816-4 command/response APDUs and the NFC Forum Type 4 Tag pieces 18013-5 engagement uses
 * (NFC Forum Type 4 Tag: NDEF application AID, Capability Container, READ/UPDATE BINARY; as Multipaz `nfc/Nfc.kt`, `nfc/CommandApdu.kt`, `mdoc/nfc/MdocNfcEngagementHelper.kt` and isomdl `src/definitions/device_engagement/nfc/apdu_handover.rs` implement them).
 */
import { ByteCursor, concatBytes, isUint, uintBytes } from './byte-cursor.js';

export class ApduFormatError extends Error {
  override readonly name = 'ApduFormatError';
}

const fail = (message: string): Error => new ApduFormatError(message);

// ---------------------------------------------------------------------------------------------------------------
// Constants (as Multipaz `nfc/Nfc.kt` and isomdl `apdu_handover.rs` define them)

/** NDEF Type 4 Tag application AID. */
export const AID_NDEF_APPLICATION: Uint8Array = Uint8Array.of(0xd2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01);
/** mdoc NFC data-transfer AID (NFC data retrieval only, not engagement; ISO/IEC 18013-5 §8.3.3.1.2). */
export const AID_MDOC_DATA_TRANSFER: Uint8Array = Uint8Array.of(0xa0, 0x00, 0x00, 0x02, 0x48, 0x04, 0x00);
export const FILE_ID_CAPABILITY_CONTAINER = 0xe103;
/** Typical NDEF file ID; readers must take it from CC bytes 9..10 (as Multipaz `mdocReaderNfcHandover.kt` does). */
export const FILE_ID_NDEF_DEFAULT = 0xe104;

export const Ins = {
  SELECT: 0xa4,
  READ_BINARY: 0xb0,
  UPDATE_BINARY: 0xd6,
  ENVELOPE: 0xc3,
  GET_RESPONSE: 0xc0,
} as const;

/** CLA 00 = last/only command, 10 = more commands follow (command chaining, ISO/IEC 7816-4 §5.4.1). */
export const Cla = { LAST: 0x00, CHAINING: 0x10 } as const;

/** SELECT P1/P2 (ISO/IEC 7816-4 §11.2.2): by AID `04 00`; by file ID `00 0C` (no response data). */
export const SelectP1 = { BY_FILE_ID: 0x00, BY_AID: 0x04 } as const;
export const SelectP2 = { FIRST_WITH_FCI: 0x00, NO_RESPONSE_DATA: 0x0c } as const;

/** Status words (ISO/IEC 7816-4 §5.6). `61xx` is a family: use {@link moreResponseBytes}. */
export const Sw = {
  OK: 0x9000,
  FILE_NOT_FOUND: 0x6a82,
  INS_NOT_SUPPORTED: 0x6d00,
  NO_PRECISE_DIAGNOSIS: 0x6f00,
} as const;
export const SW1_MORE_DATA = 0x61;

/**
 * READ/UPDATE BINARY offsets live in P1..P2 with P1 bit 8 clear (bit 8 set selects a short EF id; ISO/IEC 7816-4
 * READ BINARY / UPDATE BINARY).
 */
export const MAX_BINARY_OFFSET = 0x7fff;
/** Largest data field of a short-form UPDATE BINARY (one-byte Lc, ISO 7816-4 §5.1). */
export const MAX_SHORT_DATA = 0xff;

// ---------------------------------------------------------------------------------------------------------------
// Command APDU

export interface CommandApdu {
  readonly cla: number;
  readonly ins: number;
  readonly p1: number;
  readonly p2: number;
  /** Command data (Lc = its length); empty for none. */
  readonly data: Uint8Array;
  /**
   * Expected response length Ne, 1..65536. Undefined (or 0, Multipaz's convention) means no Le field —
   * Multipaz `nfc/CommandApdu.kt` omits Le when `le == 0`. In short form Ne 256 is written as Le byte `00`.
   */
  readonly le?: number;
}

export interface ParsedCommandApdu extends CommandApdu {
  /** Whether Lc/Le used the extended (3-byte / 2-byte) encoding. */
  readonly extended: boolean;
}

function checkHeaderByte(value: number, field: string): void {
  if (!isUint(value, 0xff)) throw fail(`${field} ${String(value)} is not a byte`);
}

/**
 * Short form unless the data exceed 255 bytes or Ne exceeds 256, then extended form (ISO 7816-4 §5.1).
 * `forceExtended` writes the extended form even when short would do.
 */
export function encodeCommandApdu(apdu: CommandApdu, options: { readonly forceExtended?: boolean } = {}): Uint8Array {
  checkHeaderByte(apdu.cla, 'CLA');
  checkHeaderByte(apdu.ins, 'INS');
  checkHeaderByte(apdu.p1, 'P1');
  checkHeaderByte(apdu.p2, 'P2');
  const le = apdu.le === 0 ? undefined : apdu.le;
  if (le !== undefined && (!Number.isInteger(le) || le < 1 || le > 65536)) {
    throw fail(`Le (Ne) ${String(le)} is outside 1..65536`);
  }
  if (apdu.data.length > 65535) throw fail(`command data of ${apdu.data.length} bytes exceed 65535`);
  const extended = options.forceExtended === true || apdu.data.length > MAX_SHORT_DATA || (le !== undefined && le > 256);
  const header = Uint8Array.of(apdu.cla, apdu.ins, apdu.p1, apdu.p2);
  const parts: Uint8Array[] = [header];
  if (!extended) {
    if (apdu.data.length > 0) parts.push(Uint8Array.of(apdu.data.length), apdu.data);
    if (le !== undefined) parts.push(Uint8Array.of(le === 256 ? 0 : le));
    return concatBytes(parts);
  }
  if (apdu.data.length > 0) parts.push(Uint8Array.of(0), uintBytes(apdu.data.length, 2), apdu.data);
  if (le !== undefined) {
    const leBytes = uintBytes(le === 65536 ? 0 : le, 2);
    parts.push(apdu.data.length > 0 ? leBytes : concatBytes([Uint8Array.of(0), leBytes]));
  }
  return concatBytes(parts);
}

/** Parses cases 1, 2S/3S/4S and 2E/3E/4E of ISO 7816-4; anything else is a clear error. */
export function parseCommandApdu(bytes: Uint8Array): ParsedCommandApdu {
  const cursor = new ByteCursor(bytes, fail, 'command APDU');
  if (bytes.length < 4) throw cursor.error(`needs at least 4 header bytes, got ${bytes.length}`);
  const cla = cursor.u8('CLA');
  const ins = cursor.u8('INS');
  const p1 = cursor.u8('P1');
  const p2 = cursor.u8('P2');
  const head = { cla, ins, p1, p2 };
  const body = bytes.length - 4;
  if (body === 0) return { ...head, data: new Uint8Array(0), extended: false };
  const first = cursor.u8('Lc/Le');
  if (body === 1) return { ...head, data: new Uint8Array(0), le: first === 0 ? 256 : first, extended: false };
  if (first !== 0) {
    // Short Lc: data follow, then optionally one Le byte.
    const data = cursor.take(first, `data (Lc=${first})`);
    if (cursor.atEnd()) return { ...head, data, extended: false };
    const le = cursor.u8('Le');
    if (!cursor.atEnd()) throw cursor.error(`${cursor.remaining} byte(s) after Le (Lc=${first})`);
    return { ...head, data, le: le === 0 ? 256 : le, extended: false };
  }
  // Extended: 00 then two bytes of Lc or Le.
  const lengthValue = cursor.uint(2, 'extended Lc/Le');
  if (cursor.atEnd()) {
    return { ...head, data: new Uint8Array(0), le: lengthValue === 0 ? 65536 : lengthValue, extended: true };
  }
  if (lengthValue === 0) throw cursor.error('extended Lc is 0 but data follow');
  const data = cursor.take(lengthValue, `data (extended Lc=${lengthValue})`);
  if (cursor.atEnd()) return { ...head, data, extended: true };
  const le = cursor.uint(2, 'extended Le');
  if (!cursor.atEnd()) throw cursor.error(`${cursor.remaining} byte(s) after extended Le`);
  return { ...head, data, le: le === 0 ? 65536 : le, extended: true };
}

// ---------------------------------------------------------------------------------------------------------------
// Response APDU

export interface ResponseApdu {
  readonly data: Uint8Array;
  /** SW1SW2 as one 16-bit number, e.g. 0x9000. */
  readonly sw: number;
}

export function encodeResponseApdu(response: ResponseApdu): Uint8Array {
  if (!isUint(response.sw, 0xffff)) throw fail(`status word ${String(response.sw)} is not 16 bits`);
  return concatBytes([response.data, uintBytes(response.sw, 2)]);
}

export function parseResponseApdu(bytes: Uint8Array): ResponseApdu {
  if (bytes.length < 2) throw fail(`response APDU: needs at least the 2 status bytes, got ${bytes.length}`);
  const sw = ((bytes[bytes.length - 2] ?? 0) << 8) | (bytes[bytes.length - 1] ?? 0);
  return { data: bytes.slice(0, bytes.length - 2), sw };
}

export function responseOk(data: Uint8Array = new Uint8Array(0)): ResponseApdu {
  return { data, sw: Sw.OK };
}

export function responseStatus(sw: number): ResponseApdu {
  return { data: new Uint8Array(0), sw };
}

export function isSwOk(sw: number): boolean {
  return sw === Sw.OK;
}

/** For `61xx`: how many more bytes GET RESPONSE can fetch (xx = 00 means 256); otherwise undefined. */
export function moreResponseBytes(sw: number): number | undefined {
  if (sw >> 8 !== SW1_MORE_DATA) return undefined;
  const xx = sw & 0xff;
  return xx === 0 ? 256 : xx;
}

/** Four lower-case hex digits, as the transcripts print status words. */
export function swHex(sw: number): string {
  return sw.toString(16).padStart(4, '0');
}

// ---------------------------------------------------------------------------------------------------------------
// Command builders (the exact bytes Multipaz sends: test/fixtures/captures/multipaz-loopback-*.json)

/** SELECT by AID: `00 A4 04 00 Lc AID` (Multipaz), or with `le: 256` the `… 00` form isomdl sends. */
export function selectAid(aid: Uint8Array, options: { readonly le?: number } = {}): CommandApdu {
  if (aid.length < 1 || aid.length > 16) throw fail(`AID must be 1..16 bytes, got ${aid.length}`);
  const apdu = { cla: Cla.LAST, ins: Ins.SELECT, p1: SelectP1.BY_AID, p2: 0x00, data: aid };
  return options.le === undefined ? apdu : { ...apdu, le: options.le };
}

function checkFileId(fileId: number): void {
  if (!isUint(fileId, 0xffff)) throw fail(`file ID ${String(fileId)} is not 16 bits`);
}

/** SELECT by file ID, no response data: `00 A4 00 0C 02 <id>`. */
export function selectFile(fileId: number): CommandApdu {
  checkFileId(fileId);
  return {
    cla: Cla.LAST,
    ins: Ins.SELECT,
    p1: SelectP1.BY_FILE_ID,
    p2: SelectP2.NO_RESPONSE_DATA,
    data: uintBytes(fileId, 2),
  };
}

function checkOffset(offset: number): void {
  if (!isUint(offset, MAX_BINARY_OFFSET)) {
    throw fail(`binary offset ${String(offset)} is outside 0..0x7FFF (P1 bit 8 must stay 0)`);
  }
}

/** READ BINARY: `00 B0 <off_hi> <off_lo> <Le>`, offset ≤ 0x7FFF, Le 1..256. */
export function readBinary(offset: number, le: number): CommandApdu {
  checkOffset(offset);
  if (!Number.isInteger(le) || le < 1 || le > 256) throw fail(`READ BINARY Le ${String(le)} is outside 1..256`);
  return { cla: Cla.LAST, ins: Ins.READ_BINARY, p1: offset >> 8, p2: offset & 0xff, data: new Uint8Array(0), le };
}

/** UPDATE BINARY: `00 D6 <off_hi> <off_lo> <Lc> <data>`, offset ≤ 0x7FFF, 1..255 data bytes (short form). */
export function updateBinary(offset: number, data: Uint8Array): CommandApdu {
  checkOffset(offset);
  if (data.length < 1 || data.length > MAX_SHORT_DATA) {
    throw fail(`UPDATE BINARY data must be 1..255 bytes in short form, got ${data.length}`);
  }
  return { cla: Cla.LAST, ins: Ins.UPDATE_BINARY, p1: offset >> 8, p2: offset & 0xff, data };
}

/** GET RESPONSE after `61xx`: `00 C0 00 00 Le` (ISO/IEC 7816-4 §11.8.1; Multipaz `NfcTransportMdocReader.kt`). */
export function getResponse(le: number): CommandApdu {
  return { cla: Cla.LAST, ins: Ins.GET_RESPONSE, p1: 0, p2: 0, data: new Uint8Array(0), le };
}

/**
 * ENVELOPE part for NFC data transfer: CLA 10 when more parts follow, 00 on the last (Multipaz
 * `NfcTransportMdocReader.kt`).
 */
export function envelope(data: Uint8Array, last: boolean, le?: number): CommandApdu {
  const apdu = { cla: last ? Cla.LAST : Cla.CHAINING, ins: Ins.ENVELOPE, p1: 0, p2: 0, data };
  return le === undefined ? apdu : { ...apdu, le };
}

// ---------------------------------------------------------------------------------------------------------------
// Tag side: what a received command asks for

export type T4tCommand =
  | { readonly kind: 'selectAid'; readonly aid: Uint8Array }
  | { readonly kind: 'selectFile'; readonly fileId: number }
  | { readonly kind: 'readBinary'; readonly offset: number; readonly length: number }
  | { readonly kind: 'updateBinary'; readonly offset: number; readonly data: Uint8Array }
  | { readonly kind: 'unsupported'; readonly apdu: CommandApdu; readonly reason: string };

/** Classifies a command the way a Type 4 Tag does, so the virtual phone can answer it. */
export function interpretT4tCommand(apdu: CommandApdu): T4tCommand {
  const unsupported = (reason: string): T4tCommand => ({ kind: 'unsupported', apdu, reason });
  if ((apdu.cla & 0xfc) !== 0x00) return unsupported(`CLA ${apdu.cla.toString(16)} is not an interindustry class`);
  switch (apdu.ins) {
    case Ins.SELECT:
      if (apdu.p1 === SelectP1.BY_AID) return { kind: 'selectAid', aid: apdu.data };
      if (apdu.p1 === SelectP1.BY_FILE_ID) {
        if (apdu.data.length !== 2) return unsupported(`SELECT file needs a 2-byte file ID, got ${apdu.data.length}`);
        return { kind: 'selectFile', fileId: ((apdu.data[0] ?? 0) << 8) | (apdu.data[1] ?? 0) };
      }
      return unsupported(`SELECT P1 ${apdu.p1.toString(16)} is not supported`);
    case Ins.READ_BINARY:
      if ((apdu.p1 & 0x80) !== 0) return unsupported('READ BINARY with P1 bit 8 set (short EF id) is not supported');
      if (apdu.le === undefined || apdu.le === 0) return unsupported('READ BINARY without Le');
      return { kind: 'readBinary', offset: (apdu.p1 << 8) | apdu.p2, length: apdu.le };
    case Ins.UPDATE_BINARY:
      if ((apdu.p1 & 0x80) !== 0) return unsupported('UPDATE BINARY with P1 bit 8 set (short EF id) is not supported');
      if (apdu.data.length === 0) return unsupported('UPDATE BINARY without data');
      return { kind: 'updateBinary', offset: (apdu.p1 << 8) | apdu.p2, data: apdu.data };
    default:
      return unsupported(`INS ${apdu.ins.toString(16)} is not supported`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// NDEF file access plans (NFC Forum Type 4 Tag §7.5.4 read, §7.5.5 write)

/**
 * READ BINARY commands fetching an NDEF message of `nlen` bytes that starts at offset 2 (after NLEN),
 * `chunk` bytes at a time (isomdl: NLEN=300, chunk 255 → `00B00002FF`, `00B001012D`).
 */
export function ndefReadCommands(nlen: number, chunk: number): CommandApdu[] {
  if (!Number.isInteger(chunk) || chunk < 1 || chunk > 256) throw fail(`read chunk ${String(chunk)} is outside 1..256`);
  if (!isUint(nlen, 0xffff)) throw fail(`NLEN ${String(nlen)} is not 16 bits`);
  const commands: CommandApdu[] = [];
  for (let done = 0; done < nlen; done += chunk) commands.push(readBinary(2 + done, Math.min(chunk, nlen - done)));
  return commands;
}

/**
 * UPDATE BINARY commands writing `message` to the NDEF file (T4T §7.5.5, as Multipaz `NfcIsoTag.ndefTransact()`):
 * under 254 bytes one write of `NLEN||message` at offset 0; otherwise `0000` at 0, the data at 2.. in ≤255-byte
 * pieces, then the real NLEN at 0, so the tag never sees a length whose data are incomplete.
 */
export function ndefWriteCommands(message: Uint8Array, chunk: number = MAX_SHORT_DATA): CommandApdu[] {
  if (!Number.isInteger(chunk) || chunk < 1 || chunk > MAX_SHORT_DATA) {
    throw fail(`write chunk ${String(chunk)} is outside 1..255`);
  }
  if (message.length > 0xffff) throw fail(`NDEF message of ${message.length} bytes does not fit NLEN`);
  const nlen = uintBytes(message.length, 2);
  if (message.length + 2 <= chunk) return [updateBinary(0, concatBytes([nlen, message]))];
  const commands: CommandApdu[] = [updateBinary(0, Uint8Array.of(0, 0))];
  for (let done = 0; done < message.length; done += chunk) {
    commands.push(updateBinary(2 + done, message.subarray(done, Math.min(message.length, done + chunk))));
  }
  commands.push(updateBinary(0, nlen));
  return commands;
}

/** The 2-byte NLEN a READ BINARY of offset 0, length 2 returns. */
export function parseNlen(data: Uint8Array): number {
  if (data.length !== 2) throw fail(`NLEN must be 2 bytes, got ${data.length}`);
  return ((data[0] ?? 0) << 8) | (data[1] ?? 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Capability Container (15 bytes, NFC Forum Type 4 Tag mapping 2.0)

export const CC_LENGTH = 15;
export const CC_MAPPING_VERSION_2_0 = 0x20;
/** NDEF File Control TLV tag and length (`04 06`, NFC Forum Type 4 Tag). */
export const CC_NDEF_FILE_CONTROL_TLV = 0x04;
/** Access condition bytes: 00 = granted; FF = no write access (read-only). */
export const CcAccess = { GRANTED: 0x00, DENIED: 0xff } as const;

export interface CapabilityContainer {
  readonly mappingVersion: number;
  /** MLe: max R-APDU data size. */
  readonly maxResponseDataSize: number;
  /** MLc: max C-APDU data size. */
  readonly maxCommandDataSize: number;
  readonly ndefFileId: number;
  readonly maxNdefFileSize: number;
  readonly readAccess: number;
  /**
   * FF = read-only → static handover; 00 = writable → negotiated handover (TNEP), as Multipaz
   * `MdocNfcEngagementHelper.kt` sets it.
   */
  readonly writeAccess: number;
}

export type HandoverMode = 'static' | 'negotiated';

/**
 * Multipaz holder CC (`MdocNfcEngagementHelper.kt`; test/fixtures/captures/multipaz-loopback-*.json): MLe/MLc/max
 * size 7FFF, NDEF file E104; write access by handover mode.
 */
export function multipazCapabilityContainer(mode: HandoverMode): CapabilityContainer {
  return {
    mappingVersion: CC_MAPPING_VERSION_2_0,
    maxResponseDataSize: 0x7fff,
    maxCommandDataSize: 0x7fff,
    ndefFileId: FILE_ID_NDEF_DEFAULT,
    maxNdefFileSize: 0x7fff,
    readAccess: CcAccess.GRANTED,
    writeAccess: mode === 'static' ? CcAccess.DENIED : CcAccess.GRANTED,
  };
}

/**
 * Apple Wallet CC (isomdl `drive_apple_to_hr_ack()`; test/fixtures/captures/apple-wallet-negotiated.json):
 * `000F2004000400 0406E1040802 0000`.
 */
export const APPLE_WALLET_CAPABILITY_CONTAINER: CapabilityContainer = {
  mappingVersion: CC_MAPPING_VERSION_2_0,
  maxResponseDataSize: 0x0400,
  maxCommandDataSize: 0x0400,
  ndefFileId: FILE_ID_NDEF_DEFAULT,
  maxNdefFileSize: 0x0802,
  readAccess: CcAccess.GRANTED,
  writeAccess: CcAccess.GRANTED,
};

export function encodeCapabilityContainer(cc: CapabilityContainer): Uint8Array {
  const byteFields: [number, string][] = [
    [cc.mappingVersion, 'mapping version'],
    [cc.readAccess, 'read access'],
    [cc.writeAccess, 'write access'],
  ];
  for (const [value, field] of byteFields) checkHeaderByte(value, field);
  const wordFields: [number, string][] = [
    [cc.maxResponseDataSize, 'MLe'],
    [cc.maxCommandDataSize, 'MLc'],
    [cc.ndefFileId, 'NDEF file ID'],
    [cc.maxNdefFileSize, 'max NDEF file size'],
  ];
  for (const [value, field] of wordFields) {
    if (!isUint(value, 0xffff)) throw fail(`CC ${field} ${String(value)} does not fit 2 bytes`);
  }
  return concatBytes([
    uintBytes(CC_LENGTH, 2),
    Uint8Array.of(cc.mappingVersion),
    uintBytes(cc.maxResponseDataSize, 2),
    uintBytes(cc.maxCommandDataSize, 2),
    Uint8Array.of(CC_NDEF_FILE_CONTROL_TLV, 6),
    uintBytes(cc.ndefFileId, 2),
    uintBytes(cc.maxNdefFileSize, 2),
    Uint8Array.of(cc.readAccess, cc.writeAccess),
  ]);
}

/**
 * Parses the first 15 bytes of a CC file. A longer CCLEN (extra TLVs) is accepted; the T4T 3.0 extended
 * NDEF TLV (T=06) is not, because no 18013-5 holder uses it.
 */
export function parseCapabilityContainer(bytes: Uint8Array): CapabilityContainer {
  const cursor = new ByteCursor(bytes, fail, 'Capability Container');
  const ccLen = cursor.uint(2, 'CCLEN');
  if (ccLen < CC_LENGTH) throw cursor.error(`CCLEN ${ccLen} is below the 15 bytes of a T4T 2.0 CC`);
  if (bytes.length < CC_LENGTH) throw cursor.error(`needs 15 bytes, got ${bytes.length}`);
  const mappingVersion = cursor.u8('mapping version');
  const maxResponseDataSize = cursor.uint(2, 'MLe');
  const maxCommandDataSize = cursor.uint(2, 'MLc');
  const tlvTag = cursor.u8('NDEF File Control TLV tag');
  const tlvLength = cursor.u8('NDEF File Control TLV length');
  if (tlvTag === 0x06) throw cursor.error('extended NDEF File Control TLV (T=06, T4T 3.0) is not supported');
  if (tlvTag !== CC_NDEF_FILE_CONTROL_TLV || tlvLength !== 6) {
    const got = `${tlvTag.toString(16)} ${tlvLength.toString(16)}`;
    throw cursor.error(`expected NDEF File Control TLV 04 06 at offset 7, got ${got}`);
  }
  const ndefFileId = cursor.uint(2, 'NDEF file ID');
  const maxNdefFileSize = cursor.uint(2, 'max NDEF file size');
  const readAccess = cursor.u8('read access');
  const writeAccess = cursor.u8('write access');
  return {
    mappingVersion,
    maxResponseDataSize,
    maxCommandDataSize,
    ndefFileId,
    maxNdefFileSize,
    readAccess,
    writeAccess,
  };
}

/** Writable NDEF file → negotiated handover; read-only → static (the CCs Multipaz's holder writes). */
export function handoverModeOf(cc: CapabilityContainer): HandoverMode {
  return cc.writeAccess === CcAccess.GRANTED ? 'negotiated' : 'static';
}

/** READ BINARY chunk size a reader uses with this tag: clamp(MLe, 15, 255) (isomdl `apdu_handover_reader.rs`). */
export function readChunkSize(cc: CapabilityContainer): number {
  return Math.min(255, Math.max(15, cc.maxResponseDataSize));
}
