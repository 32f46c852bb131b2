/**
 * SessionEstablishment and SessionData (ISO 18013-5 §9.1.1.4; as Multipaz `SessionEncryption.kt` writes them):
 *
 *   SessionEstablishment = {"eReaderKey": EReaderKeyBytes, "data": bstr}   ; first reader → mdoc message
 *   SessionData          = {? "data": bstr, ? "status": uint}              ; every later message, both ways
 *
 * Key order as in Annex D ("eReaderKey" then "data"; "data" then "status"). A decoded SessionEstablishment
 * keeps the EReaderKeyBytes item exactly as received: the mdoc must put those very bytes in its
 * SessionTranscript.
 */
import type { KeyObject } from 'node:crypto';
import { CborError, cborDecode, cborEncode, encodeByteString, expectBytes, expectMap, expectUint } from './cbor.js';
import { encodeRawMap, rawMapValue } from './cbor-raw.js';
import { decodeCoseKeyBytes } from './cose-key.js';

/** SessionData status values (ISO 18013-5 Table 20, per Multipaz `util/Constants.kt` SESSION_DATA_STATUS_*). */
export const SESSION_STATUS = {
  /** Error: session encryption. */
  sessionEncryptionError: 10,
  /** Error: CBOR decoding. */
  cborDecodingError: 11,
  /** Session termination. */
  sessionTermination: 20,
} as const;

export interface SessionEstablishment {
  /** EReaderKeyBytes: `#6.24(bstr .cbor COSE_Key)`, spliced unchanged. */
  readonly eReaderKeyBytes: Uint8Array;
  /** Encrypted DeviceRequest (SKReader, reader counter 1). */
  readonly data: Uint8Array;
}

export interface DecodedSessionEstablishment extends SessionEstablishment {
  /** The COSE_Key bytes inside EReaderKeyBytes. */
  readonly eReaderKeyCose: Uint8Array;
  readonly eReaderKey: KeyObject;
}

export function encodeSessionEstablishment(message: SessionEstablishment): Uint8Array {
  decodeCoseKeyBytes(message.eReaderKeyBytes); // refuse to send a malformed key
  return encodeRawMap([
    [cborEncode('eReaderKey'), message.eReaderKeyBytes],
    [cborEncode('data'), encodeByteString(message.data)],
  ]);
}

export function decodeSessionEstablishment(bytes: Uint8Array): DecodedSessionEstablishment {
  const copy = Uint8Array.from(bytes);
  const map = expectMap(cborDecode(copy), 'SessionEstablishment');
  const data = expectBytes(map.get('data'), 'SessionEstablishment "data"');
  const eReaderKeyBytes = rawMapValue(copy, 'eReaderKey');
  if (eReaderKeyBytes === undefined) throw new CborError('SessionEstablishment: missing "eReaderKey"');
  const { key, coseKey } = decodeCoseKeyBytes(eReaderKeyBytes);
  return { eReaderKeyBytes: eReaderKeyBytes.slice(), eReaderKeyCose: coseKey, eReaderKey: key, data };
}

export interface SessionData {
  readonly data?: Uint8Array;
  readonly status?: number;
}

/** Encodes SessionData; at least one of data/status is required (an empty map carries nothing). */
export function encodeSessionData(message: SessionData): Uint8Array {
  const map = new Map<string, Uint8Array | number>();
  if (message.data !== undefined) map.set('data', message.data);
  if (message.status !== undefined) map.set('status', expectUint(message.status, 'SessionData status'));
  if (map.size === 0) throw new TypeError('SessionData needs data, status or both');
  return cborEncode(map);
}

/** Decodes SessionData; unknown keys are ignored, unknown status values are returned as they are. */
export function decodeSessionData(bytes: Uint8Array): SessionData {
  const map = expectMap(cborDecode(bytes), 'SessionData');
  const data = map.get('data');
  const status = map.get('status');
  return {
    ...(data === undefined ? {} : { data: expectBytes(data, 'SessionData "data"') }),
    ...(status === undefined ? {} : { status: expectUint(status, 'SessionData "status"') }),
  };
}
