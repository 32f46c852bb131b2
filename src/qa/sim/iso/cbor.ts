/**
 * CBOR for ISO/IEC 18013-5, on cbor-x, with the rules that keep hashes and signatures stable.
 *
 * Rules (ISO/IEC 18013-5 §8.1 and RFC 8949 §4.2 preferred encoding; the cbor-x 1.6 options below were observed to produce it):
 * 1. Encoder options `useRecords: false` (no cbor-x record extension `d9dfff…`), `tagUint8Array: false`
 *    (byte strings are plain major type 2, not tag 64), `variableMapSize: true` (shortest map header, not
 *    `b9 0001…`), `useTag259ForMaps: false` (a `Map` is a plain map, not tag 259). Maps keep insertion
 *    order: build them in the order the peer expects (ISO examples and Annex D use the order of the CDDL).
 * 2. Decoding uses `mapsAsObjects: false`: every CBOR map becomes a `Map`, integer keys stay numbers
 *    (COSE_Key labels, DeviceEngagement keys). `copyBuffers: true` so decoded byte strings never alias the
 *    caller's buffer.
 * 3. Tag 24 (embedded CBOR, RFC 8949 §3.4.5.1) decodes to `EmbeddedCbor`, which holds the inner bytes
 *    exactly as received. Hash, MAC or sign those bytes; never re-encode a decoded structure
 *    (DeviceEngagement, EReaderKey, HS/HR, ItemsRequest, IssuerSignedItem, MSO) to obtain them.
 *    When the exact bytes of the whole tagged item matter (its header included), take its span with
 *    `cbor-raw.ts` instead of re-wrapping.
 * 4. Dates are explicit: tag 0 (tdate) and tag 1004 (full-date, RFC 8943) stay `Tag` objects on decode so
 *    their text is kept verbatim; build them with `tdate()` / `fullDate()`. Encoding a JS `Date` throws,
 *    because cbor-x would silently pick tag 1 (epoch seconds), which ISO does not use.
 * 5. JS numbers at or above 2^32 (or below -2^32) are encoded by cbor-x as float64; pass a `bigint` for
 *    such integers.
 *
 * Why a private cbor-x instance: `@owf/mdoc` registers process-wide cbor-x tag handlers on the ES module
 * instance of cbor-x (24 → its DataItem, 0 → Date, 1004 → DateOnly, 17/18 → Mac0/Sign1) and a Date
 * encoder (tag 0). With a shared instance our decoding would depend on whether and when @owf/mdoc was
 * imported. We load cbor-x's CommonJS build through `createRequire`; Node keeps it as a separate module
 * instance with its own tag table, so the rules above hold whatever else runs in the process.
 */
import { createRequire } from 'node:module';
import type * as CborX from 'cbor-x';
import { concatBytes } from './byte-cursor.js';
import { errorText } from '../../../common/error-text.js';

const requireCjs = createRequire(import.meta.url);
const cborx = requireCjs('cbor-x') as typeof CborX;

/** cbor-x's generic tag value (of the private instance: use this class for `instanceof`). */
export const Tag = cborx.Tag;
export type Tag = CborX.Tag;

export const TAG_TDATE = 0;
export const TAG_ENCODED_CBOR = 24;
export const TAG_FULL_DATE = 1004;

export class CborError extends Error {
  override readonly name = 'CborError';
}

/**
 * Tag 24 content: the exact bytes of an embedded CBOR data item (e.g. EDeviceKeyBytes, ItemsRequestBytes,
 * IssuerSignedItemBytes, DeviceNameSpacesBytes, MobileSecurityObjectBytes).
 */
export class EmbeddedCbor {
  readonly bytes: Uint8Array;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }

  /** Wraps the encoding of `value`; for data we create ourselves (never for data received). */
  static of(value: unknown): EmbeddedCbor {
    return new EmbeddedCbor(cborEncode(value));
  }

  /** Decodes the embedded item (a view for reading; hash `bytes`, not a re-encoding of this). */
  decode(): unknown {
    return cborDecode(this.bytes);
  }

  /** `#6.24(bstr)` with the shortest length header. */
  toTaggedBytes(): Uint8Array {
    return encodeTag24(this.bytes);
  }
}

cborx.addExtension({
  Class: EmbeddedCbor,
  tag: TAG_ENCODED_CBOR,
  encode(value: EmbeddedCbor, encode: (data: Uint8Array) => Uint8Array) {
    return encode(value.bytes);
  },
  decode(content: unknown) {
    if (!(content instanceof Uint8Array)) throw new CborError('tag 24 must wrap a byte string');
    return new EmbeddedCbor(Uint8Array.from(content));
  },
});
// Rule 4: no implicit date conversion on this private instance. Tags 0 and 1 decode to `Tag`; a JS Date
// (which cbor-x would write as tag 1) is refused when encoding.
cborx.addExtension({ tag: TAG_TDATE, decode: undefined } as unknown as CborX.Extension<never, never>);
cborx.addExtension({
  Class: Date,
  tag: 1,
  encode(): Uint8Array {
    throw new CborError('refusing to encode a JS Date: use tdate() or fullDate() (ISO 18013-5 date rules)');
  },
  decode: undefined,
} as unknown as CborX.Extension<Date, never>);

const codec = new cborx.Encoder({
  useRecords: false,
  tagUint8Array: false,
  variableMapSize: true,
  useTag259ForMaps: false,
  mapsAsObjects: false,
  copyBuffers: true,
} as CborX.Options & { useTag259ForMaps: boolean });

/** Encodes with the ISO rules above. Returns a plain Uint8Array (not a pooled Buffer). */
export function cborEncode(value: unknown): Uint8Array {
  return Uint8Array.from(codec.encode(value));
}

/**
 * Decodes exactly one data item; trailing bytes, truncation and empty input throw `CborError`.
 * cbor-x caches a `dataView` property on the array it decodes; we hand it a fresh view so the caller's
 * array is left untouched (otherwise deep-equality checks on it fail).
 */
export function cborDecode(bytes: Uint8Array): unknown {
  if (bytes.length === 0) throw new CborError('empty CBOR input');
  try {
    return codec.decode(bytes.subarray(0)) as unknown;
  } catch (error) {
    if (error instanceof CborError) throw error;
    throw new CborError(`invalid CBOR: ${errorText(error)}`);
  }
}

/** Length header of a major type (RFC 8949 §3), shortest form. */
export function cborHeader(majorType: number, length: number): Uint8Array {
  if (!Number.isSafeInteger(length) || length < 0) throw new CborError(`invalid CBOR length ${length}`);
  const mt = majorType << 5;
  if (length < 24) return Uint8Array.of(mt | length);
  if (length < 0x100) return Uint8Array.of(mt | 24, length);
  if (length < 0x10000) return Uint8Array.of(mt | 25, length >> 8, length & 0xff);
  if (length <= 0xffffffff) {
    const out = new Uint8Array(5);
    out[0] = mt | 26;
    new DataView(out.buffer).setUint32(1, length);
    return out;
  }
  const out = new Uint8Array(9);
  out[0] = mt | 27;
  new DataView(out.buffer).setBigUint64(1, BigInt(length));
  return out;
}

/** `bstr` with the shortest header. */
export function encodeByteString(bytes: Uint8Array): Uint8Array {
  return concatBytes([cborHeader(2, bytes.length), bytes]);
}

/** Wraps raw CBOR bytes as `#6.24(bstr)` (d8 18 + bstr header + bytes) without touching them. */
export function encodeTag24(inner: Uint8Array): Uint8Array {
  return concatBytes([Uint8Array.of(0xd8, TAG_ENCODED_CBOR), encodeByteString(inner)]);
}

/** Inner bytes of a top-level `#6.24(bstr)` item; anything else throws. */
export function decodeTag24(tagged: Uint8Array): Uint8Array {
  const value = cborDecode(tagged);
  if (!(value instanceof EmbeddedCbor)) throw new CborError('expected a tag-24 embedded CBOR item');
  return value.bytes;
}

/**
 * full-date `#6.1004(tstr)` "YYYY-MM-DD" (RFC 8943; the Annex D DeviceResponse writes birth_date, issue_date
 * and expiry_date this way). A Date is taken in UTC.
 */
export function fullDate(value: string | Date): Tag {
  const text = typeof value === 'string' ? value : value.toISOString().slice(0, 10);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(Date.parse(`${text}T00:00:00Z`))) {
    throw new CborError(`invalid full-date ${JSON.stringify(text)}`);
  }
  return new Tag(text, TAG_FULL_DATE);
}

/**
 * tdate `#6.0(tstr)` (RFC 8949 §3.4.1). From a Date: UTC, whole seconds, "Z" (e.g. 2024-10-20T08:00:00Z),
 * the form @owf/mdoc 0.6.0 writes for validityInfo; strings are taken verbatim after a syntax check.
 */
export function tdate(value: string | Date): Tag {
  const text = typeof value === 'string' ? value : `${value.toISOString().slice(0, 19)}Z`;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(text) || Number.isNaN(Date.parse(text))) {
    throw new CborError(`invalid tdate ${JSON.stringify(text)}`);
  }
  return new Tag(text, TAG_TDATE);
}

/** The text of a decoded full-date (tag 1004), else undefined. */
export function readFullDate(value: unknown): string | undefined {
  return value instanceof Tag && value.tag === TAG_FULL_DATE && typeof value.value === 'string' ? value.value : undefined;
}

/** The text of a decoded tdate (tag 0), else undefined. */
export function readTdate(value: unknown): string | undefined {
  return value instanceof Tag && value.tag === TAG_TDATE && typeof value.value === 'string' ? value.value : undefined;
}

// ---------------------------------------------------------------- narrowing helpers for decoded values

export type CborMap = Map<unknown, unknown>;

export function isCborMap(value: unknown): value is CborMap {
  return value instanceof Map;
}

export function expectMap(value: unknown, what: string): CborMap {
  if (!(value instanceof Map)) throw new CborError(`${what}: expected a map`);
  return value as CborMap;
}

export function expectArray(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new CborError(`${what}: expected an array`);
  return value as unknown[];
}

export function expectBytes(value: unknown, what: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new CborError(`${what}: expected a byte string`);
  return value;
}

export function expectText(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new CborError(`${what}: expected a text string`);
  return value;
}

/** An unsigned integer that fits a JS number. */
export function expectUint(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new CborError(`${what}: expected an unsigned integer`);
  }
  return value;
}

export function expectBool(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') throw new CborError(`${what}: expected a boolean`);
  return value;
}

export function expectEmbedded(value: unknown, what: string): EmbeddedCbor {
  if (!(value instanceof EmbeddedCbor)) throw new CborError(`${what}: expected tag 24 (embedded CBOR)`);
  return value;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export { concatBytes };
