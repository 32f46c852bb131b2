/**
 * Byte spans of CBOR data items, without decoding values.
 *
 * Why: the mdoc protocol hashes, MACs and signs structures by their exact bytes (ISO/IEC 18013-5 §8.1: tagged
 * bytestrings are used as sent or received). cbor-x decodes values but gives no offsets, and re-encoding a decoded value can change its
 * bytes (length headers, map order, float widths). These helpers walk the encoding (RFC 8949 §3) and return
 * sub-arrays of the input, so a caller can take e.g. the EReaderKeyBytes of a SessionEstablishment or the
 * DeviceNameSpacesBytes of a DeviceResponse exactly as the peer sent them, and splice raw items into a
 * new array or map (SessionTranscript, DeviceAuthentication).
 */
import { CborError, cborDecode, cborHeader, concatBytes } from './cbor.js';
import { errorText } from '../../../common/error-text.js';

const BREAK = 0xff;

interface Head {
  majorType: number;
  /** Argument value (length, count, tag number or simple value); undefined for indefinite length. */
  argument: number | undefined;
  /** Offset just after the head. */
  next: number;
}

function readHead(bytes: Uint8Array, offset: number): Head {
  const initial = bytes[offset];
  if (initial === undefined) throw new CborError('truncated CBOR item');
  const majorType = initial >> 5;
  const info = initial & 0x1f;
  if (info < 24) return { majorType, argument: info, next: offset + 1 };
  if (info === 31) {
    // Indefinite length is only defined for byte/text strings, arrays and maps; 0xff is "break".
    if (majorType === 2 || majorType === 3 || majorType === 4 || majorType === 5) {
      return { majorType, argument: undefined, next: offset + 1 };
    }
    throw new CborError(`unexpected indefinite-length marker or break at offset ${offset}`);
  }
  if (info > 27) throw new CborError(`reserved additional information ${info} at offset ${offset}`);
  const size = 1 << (info - 24);
  if (offset + 1 + size > bytes.length) throw new CborError('truncated CBOR head');
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset + 1, size);
  let argument: number;
  if (size === 1) argument = view.getUint8(0);
  else if (size === 2) argument = view.getUint16(0);
  else if (size === 4) argument = view.getUint32(0);
  else {
    const big = view.getBigUint64(0);
    // Lengths beyond 2^53 cannot be in memory anyway; integers/floats only need skipping.
    argument = big > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(big);
  }
  return { majorType, argument, next: offset + 1 + size };
}

/** Offset just after the data item that starts at `offset`. */
export function cborItemEnd(bytes: Uint8Array, offset = 0): number {
  const head = readHead(bytes, offset);
  const { majorType, argument } = head;
  let position = head.next;
  switch (majorType) {
    case 0:
    case 1:
    case 7:
      return position; // integers, simple values and floats: the head is the whole item
    case 2:
    case 3:
      if (argument === undefined) {
        // Indefinite string: definite chunks of the same major type until break.
        while (bytes[position] !== BREAK) {
          const chunk = readHead(bytes, position);
          if (chunk.majorType !== majorType || chunk.argument === undefined) {
            throw new CborError('invalid chunk in indefinite-length string');
          }
          position = checkEnd(bytes, chunk.next + chunk.argument);
        }
        return position + 1;
      }
      return checkEnd(bytes, position + argument);
    case 4:
    case 5: {
      const perEntry = majorType === 5 ? 2 : 1;
      if (argument === undefined) {
        while (bytes[position] !== BREAK) {
          if (position >= bytes.length) throw new CborError('truncated indefinite-length container');
          position = cborItemEnd(bytes, position);
        }
        return position + 1;
      }
      for (let i = 0; i < argument * perEntry; i++) position = cborItemEnd(bytes, position);
      return position;
    }
    case 6:
      return cborItemEnd(bytes, position);
    default:
      throw new CborError(`unknown major type ${majorType}`);
  }
}

function checkEnd(bytes: Uint8Array, end: number): number {
  if (end > bytes.length) throw new CborError('truncated CBOR string');
  return end;
}

/** Checks that `bytes` is exactly one well-formed data item (structure only). */
export function assertSingleItem(bytes: Uint8Array, what: string): void {
  let end: number;
  try {
    end = cborItemEnd(bytes, 0);
  } catch (error) {
    throw new CborError(`${what}: ${errorText(error)}`);
  }
  if (end !== bytes.length) throw new CborError(`${what}: ${bytes.length - end} trailing byte(s)`);
}

/** Raw bytes of each element of the array `bytes` (one complete array item). */
export function rawArrayItems(bytes: Uint8Array): Uint8Array[] {
  assertSingleItem(bytes, 'array');
  const head = readHead(bytes, 0);
  if (head.majorType !== 4) throw new CborError('expected a CBOR array');
  const items: Uint8Array[] = [];
  let position = head.next;
  const more = (): boolean => (head.argument === undefined ? bytes[position] !== BREAK : items.length < head.argument);
  while (more()) {
    const end = cborItemEnd(bytes, position);
    items.push(bytes.subarray(position, end));
    position = end;
  }
  return items;
}

export interface RawMapEntry {
  /** Decoded key (ISO keys are integers or text strings). */
  readonly key: unknown;
  readonly rawKey: Uint8Array;
  readonly rawValue: Uint8Array;
}

/** Raw key and value bytes of each entry of the map `bytes` (one complete map item), in wire order. */
export function rawMapEntries(bytes: Uint8Array): RawMapEntry[] {
  assertSingleItem(bytes, 'map');
  const head = readHead(bytes, 0);
  if (head.majorType !== 5) throw new CborError('expected a CBOR map');
  const entries: RawMapEntry[] = [];
  let position = head.next;
  const more = (): boolean => (head.argument === undefined ? bytes[position] !== BREAK : entries.length < head.argument);
  while (more()) {
    const keyEnd = cborItemEnd(bytes, position);
    const valueEnd = cborItemEnd(bytes, keyEnd);
    const rawKey = bytes.subarray(position, keyEnd);
    entries.push({ key: cborDecode(rawKey), rawKey, rawValue: bytes.subarray(keyEnd, valueEnd) });
    position = valueEnd;
  }
  return entries;
}

/** Raw value bytes under an integer or text key of the map `bytes`; undefined when absent. */
export function rawMapValue(bytes: Uint8Array, key: number | string): Uint8Array | undefined {
  const matches = rawMapEntries(bytes).filter((entry) => entry.key === key);
  if (matches.length > 1) throw new CborError(`duplicate map key ${JSON.stringify(key)}`);
  return matches[0]?.rawValue;
}

/** Like `rawMapValue`, but a missing key throws. */
export function requireRawMapValue(bytes: Uint8Array, key: number | string, what: string): Uint8Array {
  const value = rawMapValue(bytes, key);
  if (value === undefined) throw new CborError(`${what}: missing key ${JSON.stringify(key)}`);
  return value;
}

/**
 * Inner bytes of a tag-24 item given by its raw bytes (`d8 18` + bstr), exactly as they sit in the item.
 * Only a definite-length byte string is accepted (RFC 8949 §3.4.5.1 "bstr").
 */
export function rawTag24Content(tagged: Uint8Array): Uint8Array {
  assertSingleItem(tagged, 'tag-24 item');
  const tag = readHead(tagged, 0);
  if (tag.majorType !== 6 || tag.argument !== 24) throw new CborError('expected tag 24 (embedded CBOR)');
  const content = readHead(tagged, tag.next);
  if (content.majorType !== 2 || content.argument === undefined) {
    throw new CborError('tag 24 must wrap a definite-length byte string');
  }
  return tagged.subarray(content.next, content.next + content.argument);
}

/** A definite-length array built from already-encoded items, which are copied unchanged. */
export function encodeRawArray(rawItems: readonly Uint8Array[]): Uint8Array {
  return concatBytes([cborHeader(4, rawItems.length), ...rawItems]);
}

/** A definite-length map built from already-encoded keys and values, in the given order. */
export function encodeRawMap(entries: ReadonlyArray<readonly [Uint8Array, Uint8Array]>): Uint8Array {
  return concatBytes([cborHeader(5, entries.length), ...entries.flat()]);
}
