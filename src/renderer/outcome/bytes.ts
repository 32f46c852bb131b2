/**
 * Byte strings in the backend's `response`. The backend API spec does not say how a CBOR byte string
 * (portrait, signature_usual_mark, biometric templates) is written in JSON, so we accept what a backend
 * plausibly writes and nothing looser (docs/notes/outcome.md):
 * - standard base64 (RFC 4648 §4), padding optional, whitespace ignored;
 * - base64url (RFC 4648 §5), the same way;
 * - a `data:` URL with `;base64` (any media type: the bytes decide what they are, not the label);
 * - a Node `Buffer` serialised by JSON.stringify (`{"type":"Buffer","data":[…]}`) or a plain array of
 *   byte values, for byte-string elements only.
 * Images are recognised by their magic bytes, never by a declared type.
 */

/** Larger byte strings are not decoded (a portrait is tens of kB; ISO 18013-5 bounds nothing, we do). */
export const MAX_BYTE_STRING_BYTES = 4 * 1024 * 1024;

export type ImageKind = 'jpeg' | 'jp2' | 'j2k' | 'png';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/;
const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)?((?:;[a-z0-9-]+=[^;,]*)*);base64,/i;

/** Decodes standard base64 or base64url text; undefined when it is not one (or too large). */
export function base64Bytes(text: string): Uint8Array | undefined {
  const compact = text.replace(/\s+/g, '');
  if (compact.length === 0 || compact.length > Math.ceil(MAX_BYTE_STRING_BYTES / 3) * 4 + 4) return undefined;
  let standard: string;
  if (BASE64.test(compact)) standard = compact;
  else if (BASE64URL.test(compact)) standard = compact.replace(/-/g, '+').replace(/_/g, '/');
  else return undefined;
  const unpadded = standard.replace(/=+$/, '');
  if (unpadded.length % 4 === 1) return undefined; // no valid base64 text has this length
  const padded = unpadded + '='.repeat((4 - (unpadded.length % 4)) % 4);
  try {
    const binary = atob(padded);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  } catch {
    return undefined;
  }
}

/** Whether the text is a `data:` URL with base64 content (the only kind we decode). */
export function isDataUrl(text: string): boolean {
  return DATA_URL.test(text.slice(0, 200));
}

/** The bytes of a base64 `data:` URL; undefined for anything else. */
export function dataUrlBytes(text: string): Uint8Array | undefined {
  const head = DATA_URL.exec(text.slice(0, 200));
  if (head === null) return undefined;
  return base64Bytes(text.slice(head[0].length));
}

function byteArray(value: readonly unknown[]): Uint8Array | undefined {
  if (value.length === 0 || value.length > MAX_BYTE_STRING_BYTES) return undefined;
  const out = new Uint8Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const item = value[i];
    if (typeof item !== 'number' || !Number.isInteger(item) || item < 0 || item > 255) return undefined;
    out[i] = item;
  }
  return out;
}

/** The bytes of a value written for a byte-string element, in any accepted shape; undefined otherwise. */
export function byteStringValue(value: unknown): Uint8Array | undefined {
  if (typeof value === 'string') return isDataUrl(value) ? dataUrlBytes(value) : base64Bytes(value);
  if (Array.isArray(value)) return byteArray(value);
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const data = record.data;
    if (record.type === 'Buffer' && Array.isArray(data) && Object.keys(record).length === 2) return byteArray(data);
  }
  return undefined;
}

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);
}

/** The JP2 signature box (ISO/IEC 15444-1 I.5.1). */
export const JP2_SIGNATURE = [0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20, 0x0d, 0x0a, 0x87, 0x0a] as const;

/** The image format by magic bytes: JPEG SOI+marker, JP2 signature box, J2K SOC+SIZ, PNG signature. */
export function imageKind(bytes: Uint8Array): ImageKind | undefined {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (startsWith(bytes, JP2_SIGNATURE)) return 'jp2';
  if (startsWith(bytes, [0xff, 0x4f, 0xff, 0x51])) return 'j2k';
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  return undefined;
}
