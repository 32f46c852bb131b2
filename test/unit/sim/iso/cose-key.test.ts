/**
 * P-256 keys and their COSE_Key / "…KeyBytes" forms (src/qa/sim/iso/cose-key.ts).
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CborError, cborEncode, encodeTag24 } from '../../../../src/qa/sim/iso/cbor.js';
import {
  decodeCoseKey,
  decodeCoseKeyBytes,
  encodeCoseKey,
  encodeCoseKeyBytes,
  generateP256KeyPair,
  p256PrivateKeyFromRaw,
  p256PublicKeyFromRaw,
  privateScalar,
  publicCoordinates,
  toEs256Jwk,
  toPublicKey,
} from '../../../../src/qa/sim/iso/cose-key.js';
import { annexD, fromHex, hex } from './annex-d-vectors.js';

describe('COSE_Key', () => {
  it('encodes EC2 P-256 as {1: 2, -1: 1, -2: x, -3: y} (the Annex D EReaderKey layout)', () => {
    const key = p256PublicKeyFromRaw(annexD('EPHEMERAL_READER_KEY_X'), annexD('EPHEMERAL_READER_KEY_Y'));
    expect(hex(encodeCoseKey(key))).toBe(
      `a401022001215820${hex(annexD('EPHEMERAL_READER_KEY_X'))}225820${hex(annexD('EPHEMERAL_READER_KEY_Y'))}`,
    );
  });

  it('the …KeyBytes form is the tag-24 wrap (Annex D EDeviceKeyBytes, 79 bytes)', () => {
    const key = p256PrivateKeyFromRaw(annexD('EPHEMERAL_DEVICE_KEY_D'));
    const bytes = encodeCoseKeyBytes(key);
    expect(bytes).toHaveLength(79);
    expect(hex(bytes)).toBe(hex(annexD('E_DEVICE_KEY_BYTES')));
    const decoded = decodeCoseKeyBytes(bytes);
    expect(hex(decoded.coseKey)).toBe(hex(bytes.subarray(4)));
    expect(publicCoordinates(decoded.key)).toEqual(publicCoordinates(key));
  });

  it('round-trips generated keys; private keys encode their public part only', () => {
    const pair = generateP256KeyPair();
    expect(encodeCoseKey(pair.privateKey)).toEqual(encodeCoseKey(pair.publicKey));
    expect(publicCoordinates(decodeCoseKey(encodeCoseKey(pair.publicKey)))).toEqual(publicCoordinates(pair.publicKey));
    expect(toPublicKey(pair.privateKey).type).toBe('public');
  });

  it('tolerates extra labels (kid, alg) when decoding', () => {
    const { x, y } = publicCoordinates(generateP256KeyPair().publicKey);
    const withExtras = cborEncode(
      new Map<number, unknown>([
        [1, 2],
        [2, Uint8Array.of(1)],
        [3, -7],
        [-1, 1],
        [-2, x],
        [-3, y],
      ]),
    );
    expect(publicCoordinates(decodeCoseKey(withExtras))).toEqual({ x, y });
  });

  it.each([
    [
      'kty OKP',
      new Map<number, unknown>([
        [1, 1],
        [-1, 6],
        [-2, new Uint8Array(32)],
      ]),
      /kty must be 2/,
    ],
    [
      'curve P-384',
      new Map<number, unknown>([
        [1, 2],
        [-1, 2],
        [-2, new Uint8Array(48)],
        [-3, new Uint8Array(48)],
      ]),
      /only crv 1/,
    ],
    [
      'missing y',
      new Map<number, unknown>([
        [1, 2],
        [-1, 1],
        [-2, new Uint8Array(32)],
      ]),
      /COSE_Key y/,
    ],
    [
      'a point not on the curve',
      new Map<number, unknown>([
        [1, 2],
        [-1, 1],
        [-2, new Uint8Array(32).fill(1)],
        [-3, new Uint8Array(32).fill(2)],
      ]),
      /invalid P-256 point/,
    ],
    ['not a map', [1, 2], /expected a map/],
  ])('rejects %s', (_name, value, message) => {
    expect(() => decodeCoseKey(cborEncode(value))).toThrow(CborError);
    expect(() => decodeCoseKey(cborEncode(value))).toThrow(message);
  });

  it('decodeCoseKeyBytes requires the tag-24 form', () => {
    const cose = encodeCoseKey(generateP256KeyPair().publicKey);
    expect(() => decodeCoseKeyBytes(cose)).toThrow(/tag 24/);
    expect(() => decodeCoseKeyBytes(encodeTag24(fromHex('a0')))).toThrow(/kty/);
  });
});

describe('raw keys (Annex D d/x/y)', () => {
  it('derives x/y from d when they are not given', () => {
    const key = p256PrivateKeyFromRaw(annexD('STATIC_DEVICE_KEY_D'));
    expect(publicCoordinates(key)).toEqual({ x: annexD('STATIC_DEVICE_KEY_X'), y: annexD('STATIC_DEVICE_KEY_Y') });
    expect(privateScalar(key)).toEqual(annexD('STATIC_DEVICE_KEY_D'));
  });

  it('rejects wrong lengths, mismatched x/y and non-P-256 keys', () => {
    expect(() => p256PublicKeyFromRaw(new Uint8Array(31), new Uint8Array(32))).toThrow(/x must be 32 bytes/);
    expect(() =>
      p256PrivateKeyFromRaw(annexD('STATIC_DEVICE_KEY_D'), annexD('EPHEMERAL_READER_KEY_X'), annexD('EPHEMERAL_READER_KEY_Y')),
    ).toThrow();
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    expect(() => publicCoordinates(p384.publicKey)).toThrow(/P-256/);
    expect(() => privateScalar(generateP256KeyPair().publicKey)).toThrow(/private/);
  });

  it('toEs256Jwk sets alg ES256 (@owf/mdoc needs it) and d only for private keys', () => {
    const pair = generateP256KeyPair();
    const { x, y } = publicCoordinates(pair.publicKey);
    const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');
    expect(toEs256Jwk(pair.publicKey)).toEqual({ kty: 'EC', crv: 'P-256', alg: 'ES256', x: b64(x), y: b64(y) });
    expect(toEs256Jwk(pair.privateKey).d).toEqual(Buffer.from(privateScalar(pair.privateKey)).toString('base64url'));
  });
});
