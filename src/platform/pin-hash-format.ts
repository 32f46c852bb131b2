/**
 * The form of a staff PIN hash, `scrypt$N$r$p$saltB64$hashB64`, checked where the configuration is
 * validated (so a managed file with a placeholder or a mangled hash is named at start, not met later as
 * "no staff PIN") and again before each check (src/service/staff-pin.ts). Bounded, so a tampered hash
 * cannot make a check eat the machine.
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
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export function parsePinHash(stored: string): { params: ScryptParams; salt: Buffer; hash: Buffer } {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') throw new PinHashError('the staff PIN hash is not in the form scrypt$N$r$p$salt$hash');
  const [N, r, p] = parts.slice(1, 4).map((v) => (/^[0-9]{1,10}$/.test(v) ? Number(v) : NaN)) as [number, number, number];
  const log2N = Math.log2(N);
  if (!Number.isInteger(log2N) || log2N < 1 || log2N > MAX_LOG2_N) throw new PinHashError(`the staff PIN hash has an unusable N (a power of two up to 2^${MAX_LOG2_N})`);
  if (!(r >= 1 && r <= 32) || !(p >= 1 && p <= 16)) throw new PinHashError('the staff PIN hash has an unusable r or p');
  const [saltText, hashText] = [parts[4] ?? '', parts[5] ?? ''];
  if (!BASE64.test(saltText) || !BASE64.test(hashText)) throw new PinHashError('the staff PIN hash\'s salt and hash must be base64 (a placeholder such as <salt> left in?)');
  const salt = Buffer.from(saltText, 'base64');
  const hash = Buffer.from(hashText, 'base64');
  if (salt.length < 8 || hash.length < 16) throw new PinHashError('the staff PIN hash has a short salt or hash');
  return { params: { N, r, p }, salt, hash };
}
