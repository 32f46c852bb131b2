/**
 * Strict standard base64 (RFC 4648 §4, with `=` padding), as the relay protocol requires (spec §4.2).
 *
 * Node's `Buffer.from(s, 'base64')` silently skips invalid characters, accepts URL-safe letters and
 * missing padding, so a corrupted payload would reach the card or the phone as different bytes.
 * We accept only the canonical encoding: the alphabet `A–Z a–z 0–9 + /`, length a multiple of 4,
 * padding only at the end, and zero bits in the unused low bits of the last symbol (RFC 4648 §3.5),
 * so every byte string has exactly one accepted text.
 */
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$/;

export function isStrictBase64(text: string): boolean {
  return STRICT_BASE64.test(text);
}

export class Base64Error extends Error {
  override readonly name = 'Base64Error';
}

/** Decodes strict standard base64; throws {@link Base64Error} on anything else. */
export function decodeBase64(text: string): Uint8Array {
  if (!isStrictBase64(text)) throw new Base64Error('not standard padded base64 (RFC 4648)');
  return Buffer.from(text, 'base64');
}

/** Decodes text already checked by {@link isStrictBase64} (e.g. by a message schema), without checking again. */
export function decodeCheckedBase64(text: string): Uint8Array {
  return Buffer.from(text, 'base64');
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}
