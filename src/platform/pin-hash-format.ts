/**
 * The form of a staff PIN hash, `scrypt$N$r$p$saltB64$hashB64`, checked where the configuration is
 * validated (so a managed file with a placeholder or a mangled hash is named at start, not met later as
 * "no staff PIN") and again before each check (src/service/staff-pin.ts). Bounded, so a tampered hash
 * cannot make a check eat the machine.
 *
 * The salt and the hash must have exactly the lengths the kiosk writes and derives: a copy cut short at a
 * base64 boundary still decodes, and a shorter hash can never equal the 32 bytes a check derives, so
 * accepting it would lock staff out (with growing lockouts) instead of naming the bad value at start.
 */

export interface ScryptParams {
  readonly N: number;
  readonly r: number;
  readonly p: number;
}

export class PinHashError extends Error {
  override readonly name = 'PinHashError';
}

/** Largest log2(N) accepted from a stored hash. */
const MAX_LOG2_N = 20;
/**
 * Smallest log2(N) accepted. The kiosk writes 2^15; below 2^10 a hash protects a PIN for minutes at most, and
 * such an N is what a mangled copy reads (digits dropped from "1024" leave "4", still a power of two).
 */
const MIN_LOG2_N = 10;
/** Bytes of the key a check derives (and `hashPin` stores). */
export const PIN_KEY_BYTES = 32;
/** Bytes of the salt `hashPin` writes. */
export const PIN_SALT_BYTES = 16;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Decoded bytes of a base64 text (padding optional), or undefined when no whole number of bytes fits. */
function base64Bytes(text: string): Buffer | undefined {
  const digits = text.replace(/=+$/, '').length;
  // One leftover base64 digit holds 6 bits, not a byte: a copy cut in the middle of a quantum.
  if (digits % 4 === 1 || (text.includes('=') && text.length % 4 !== 0)) return undefined;
  return Buffer.from(text, 'base64');
}

export function parsePinHash(stored: string): { params: ScryptParams; salt: Buffer; hash: Buffer } {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') throw new PinHashError('the staff PIN hash is not in the form scrypt$N$r$p$salt$hash');
  const [N, r, p] = parts.slice(1, 4).map((v) => (/^[0-9]{1,10}$/.test(v) ? Number(v) : NaN)) as [number, number, number];
  const log2N = Math.log2(N);
  if (!Number.isInteger(log2N) || log2N < MIN_LOG2_N || log2N > MAX_LOG2_N) {
    throw new PinHashError(`the staff PIN hash has an unusable N (a power of two from 2^${MIN_LOG2_N} to 2^${MAX_LOG2_N})`);
  }
  if (!(r >= 1 && r <= 32) || !(p >= 1 && p <= 16)) throw new PinHashError('the staff PIN hash has an unusable r or p');
  const [saltText, hashText] = [parts[4] ?? '', parts[5] ?? ''];
  if (!BASE64.test(saltText) || !BASE64.test(hashText))
    throw new PinHashError("the staff PIN hash's salt and hash must be base64 (a placeholder such as <salt> left in?)");
  const salt = base64Bytes(saltText);
  const hash = base64Bytes(hashText);
  if (salt === undefined || hash === undefined)
    throw new PinHashError("the staff PIN hash's salt or hash is cut inside a base64 group (a truncated copy?)");
  if (salt.length !== PIN_SALT_BYTES || hash.length !== PIN_KEY_BYTES) {
    throw new PinHashError(
      `the staff PIN hash must have a ${PIN_SALT_BYTES}-byte salt and a ${PIN_KEY_BYTES}-byte hash, this one has ${salt.length} and ${hash.length} (a truncated copy?)`,
    );
  }
  return { params: { N, r, p }, salt, hash };
}
