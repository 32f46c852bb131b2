/**
 * Strict standard base64 (RFC 4648 §4, with `=` padding), as the relay protocol requires (spec §4.2).
 *
 * Node's `Buffer.from(s, 'base64')` silently skips invalid characters, accepts URL-safe letters and
 * missing padding, so a corrupted payload would reach the card or the phone as different bytes.
 * We accept only the canonical encoding: the alphabet `A–Z a–z 0–9 + /`, length a multiple of 4,
 * padding only at the end, and zero bits in the unused low bits of the last symbol (RFC 4648 §3.5),
 * so every byte string has exactly one accepted text.
 */
// Checked in parts instead of one regex with a repeated group: V8's backtracking engine recurses once per
// repetition of `(?:…{4})*`, so a valid field of a few megabytes overflowed the stack (RangeError) — a
// crash any peer could trigger well under the frame cap. A plain character class repeats without recursion.
const ALPHABET_ONLY = /^[A-Za-z0-9+/]*$/;
/** Last data symbol before `==`: only its top 2 bits carry data (RFC 4648 §3.5). */
const BEFORE_TWO_PADS = /[AQgw]/;
/** Last data symbol before `=`: only its top 4 bits carry data. */
const BEFORE_ONE_PAD = /[AEIMQUYcgkosw048]/;

export function isStrictBase64(text: string): boolean {
  if (text.length % 4 !== 0) return false;
  const pads = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const body = text.slice(0, text.length - pads);
  if (!ALPHABET_ONLY.test(body)) return false;
  if (pads === 0) return true;
  const last = body.charAt(body.length - 1);
  return pads === 2 ? BEFORE_TWO_PADS.test(last) : BEFORE_ONE_PAD.test(last);
}

/** Bytes that strict base64 text (checked by {@link isStrictBase64}) decodes to, without decoding it. */
export function base64ByteLength(text: string): number {
  const pads = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  return (text.length / 4) * 3 - pads;
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
