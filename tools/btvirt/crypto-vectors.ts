/**
 * Published test vectors the AF_ALG shim is checked against before btvirt runs on it: a shim that got
 * AES or CMAC wrong would still let btvirt start, and then fail in ways that look like radio faults.
 *
 * - AES-128 (ecb(aes), what btdev's LE Encrypt and the RPA hash use): FIPS-197 (NIST, 2001), Appendix B
 *   "Cipher Example" and Appendix C.1 "AES-128 (Nk=4, Nr=10)".
 * - AES-CMAC (cmac(aes), what crypto.c's signing and key derivation use): RFC 4493 (Song, Poovendran, Lee,
 *   Iwata, 2006), section 4 "Test Vectors", examples 1–4 (message lengths 0, 16, 40 and 64 bytes).
 */
export interface CryptoVector {
  readonly source: string;
  readonly operation: 'ecb' | 'cmac';
  readonly key: string;
  /** Hex; empty for the empty message. */
  readonly data: string;
  readonly expected: string;
}

const RFC4493_KEY = '2b7e151628aed2a6abf7158809cf4f3c';
const RFC4493_MESSAGE =
  '6bc1bee22e409f96e93d7e117393172a' +
  'ae2d8a571e03ac9c9eb76fac45af8e51' +
  '30c81c46a35ce411e5fbc1191a0a52ef' +
  'f69f2445df4f9b17ad2b417be66c3710';

export const CRYPTO_VECTORS: readonly CryptoVector[] = [
  {
    source: 'FIPS-197 Appendix B',
    operation: 'ecb',
    key: '2b7e151628aed2a6abf7158809cf4f3c',
    data: '3243f6a8885a308d313198a2e0370734',
    expected: '3925841d02dc09fbdc118597196a0b32',
  },
  {
    source: 'FIPS-197 Appendix C.1',
    operation: 'ecb',
    key: '000102030405060708090a0b0c0d0e0f',
    data: '00112233445566778899aabbccddeeff',
    expected: '69c4e0d86a7b0430d8cdb78070b4c55a',
  },
  { source: 'RFC 4493 §4 Example 1', operation: 'cmac', key: RFC4493_KEY, data: '', expected: 'bb1d6929e95937287fa37d129b756746' },
  {
    source: 'RFC 4493 §4 Example 2',
    operation: 'cmac',
    key: RFC4493_KEY,
    data: RFC4493_MESSAGE.slice(0, 32),
    expected: '070a16b46b4d4144f79bdd9dd04a287c',
  },
  {
    source: 'RFC 4493 §4 Example 3',
    operation: 'cmac',
    key: RFC4493_KEY,
    data: RFC4493_MESSAGE.slice(0, 80),
    expected: 'dfa66747de9ae63030ca32611497c827',
  },
  {
    source: 'RFC 4493 §4 Example 4',
    operation: 'cmac',
    key: RFC4493_KEY,
    data: RFC4493_MESSAGE,
    expected: '51f0bebf7e3b9d92fc49741779363cfe',
  },
];
