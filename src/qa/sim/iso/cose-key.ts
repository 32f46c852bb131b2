/**
 * P-256 keys as node:crypto KeyObjects, and their COSE_Key form (RFC 9052/9053).
 *
 * COSE_Key EC2 for P-256: {1: 2 (kty EC2), -1: 1 (crv P-256), -2: x (32 bytes), -3: y (32 bytes)}, in this
 * label order, which is the order of the Annex D EDeviceKey/EReaderKey (`a4 01 02 20 01 21 58 20 … 22 58
 * 20 …`, vector `ISO_18013_5_ANNEX_D_E_DEVICE_KEY_BYTES`). The "…KeyBytes" form is `#6.24(bstr .cbor COSE_Key)`
 * (EDeviceKeyBytes in the DeviceEngagement, ISO 18013-5 §8.2.1.1; EReaderKeyBytes in SessionEstablishment,
 * ISO 18013-5 §9.1.1.4).
 *
 * Only P-256 is supported: ISO cipher suite 1 also allows other curves (Multipaz's reader makes EReaderKey on
 * EDeviceKey's curve, legacy `VerificationHelper.kt`), but both our simulators use P-256 and the ECDH/ECDSA
 * helpers here assume it.
 */
import { createECDH, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { CborError, cborDecode, cborEncode, encodeTag24, expectBytes, expectMap } from './cbor.js';
import { rawTag24Content } from './cbor-raw.js';
import { errorText } from '../../../common/error-text.js';

export const COSE_KTY_EC2 = 2;
export const COSE_CRV_P256 = 1;
/** COSE_Key labels (RFC 9052 §7.1, RFC 9053 §7.1.1). */
export const COSE_KEY_LABEL = { kty: 1, kid: 2, alg: 3, crv: -1, x: -2, y: -3, d: -4 } as const;

const COORDINATE_LENGTH = 32;

export interface P256KeyPair {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
}

export interface P256PublicCoordinates {
  readonly x: Uint8Array;
  readonly y: Uint8Array;
}

export function generateP256KeyPair(): P256KeyPair {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

function assertP256(key: KeyObject): void {
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new TypeError('expected a P-256 key');
  }
}

function jwkField(value: string | undefined, name: string): Uint8Array {
  if (value === undefined) throw new TypeError(`key has no ${name}`);
  return Uint8Array.from(Buffer.from(value, 'base64url'));
}

/** Public x/y (32 bytes each, big-endian) of a P-256 public or private KeyObject. */
export function publicCoordinates(key: KeyObject): P256PublicCoordinates {
  assertP256(key);
  const jwk = key.export({ format: 'jwk' });
  return { x: jwkField(jwk.x, 'x'), y: jwkField(jwk.y, 'y') };
}

/** Private scalar d (32 bytes, big-endian) of a P-256 private KeyObject. */
export function privateScalar(privateKey: KeyObject): Uint8Array {
  assertP256(privateKey);
  if (privateKey.type !== 'private') throw new TypeError('expected a private key');
  return jwkField(privateKey.export({ format: 'jwk' }).d, 'd');
}

/** The public KeyObject of a public or private key. */
export function toPublicKey(key: KeyObject): KeyObject {
  return key.type === 'private' ? createPublicKey(key) : key;
}

function checkLength(bytes: Uint8Array, what: string): void {
  if (bytes.length !== COORDINATE_LENGTH) throw new TypeError(`${what} must be ${COORDINATE_LENGTH} bytes`);
}

/** Public key from raw coordinates; rejects points not on the curve. */
export function p256PublicKeyFromRaw(x: Uint8Array, y: Uint8Array): KeyObject {
  checkLength(x, 'x');
  checkLength(y, 'y');
  return createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: Buffer.from(x).toString('base64url'), y: Buffer.from(y).toString('base64url') },
    format: 'jwk',
  });
}

/**
 * Private key from raw d (as in the Annex D vectors). x/y are derived from d; when given they must match
 * (node:crypto would otherwise accept an inconsistent JWK and fail later in ECDH or signing).
 */
export function p256PrivateKeyFromRaw(d: Uint8Array, x?: Uint8Array, y?: Uint8Array): KeyObject {
  checkLength(d, 'd');
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(d);
  const point = ecdh.getPublicKey(); // 04 || x || y
  const px = point.subarray(1, 33);
  const py = point.subarray(33, 65);
  if ((x !== undefined && !px.equals(x)) || (y !== undefined && !py.equals(y))) {
    throw new TypeError('x/y do not match the private key d');
  }
  const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');
  return createPrivateKey({ key: { kty: 'EC', crv: 'P-256', d: b64(d), x: b64(px), y: b64(py) }, format: 'jwk' });
}

/** COSE_Key bytes of the public part of a P-256 key: {1: 2, -1: 1, -2: x, -3: y}. */
export function encodeCoseKey(key: KeyObject): Uint8Array {
  const { x, y } = publicCoordinates(key);
  return cborEncode(
    new Map<number, number | Uint8Array>([
      [COSE_KEY_LABEL.kty, COSE_KTY_EC2],
      [COSE_KEY_LABEL.crv, COSE_CRV_P256],
      [COSE_KEY_LABEL.x, x],
      [COSE_KEY_LABEL.y, y],
    ]),
  );
}

/** Public KeyObject from a decoded COSE_Key map (EC2, P-256 only). Extra labels (kid, alg…) are ignored. */
export function publicKeyFromCoseMap(value: unknown): KeyObject {
  const map = expectMap(value, 'COSE_Key');
  if (map.get(COSE_KEY_LABEL.kty) !== COSE_KTY_EC2) throw new CborError('COSE_Key: kty must be 2 (EC2)');
  if (map.get(COSE_KEY_LABEL.crv) !== COSE_CRV_P256) throw new CborError('COSE_Key: only crv 1 (P-256) is supported');
  const x = expectBytes(map.get(COSE_KEY_LABEL.x), 'COSE_Key x');
  const y = expectBytes(map.get(COSE_KEY_LABEL.y), 'COSE_Key y');
  try {
    return p256PublicKeyFromRaw(x, y);
  } catch (error) {
    throw new CborError(`COSE_Key: invalid P-256 point (${errorText(error)})`);
  }
}

/** Public KeyObject from COSE_Key bytes. */
export function decodeCoseKey(bytes: Uint8Array): KeyObject {
  return publicKeyFromCoseMap(cborDecode(bytes));
}

/** EDeviceKeyBytes / EReaderKeyBytes: `#6.24(bstr .cbor COSE_Key)`. */
export function encodeCoseKeyBytes(key: KeyObject): Uint8Array {
  return encodeTag24(encodeCoseKey(key));
}

export interface DecodedCoseKeyBytes {
  readonly key: KeyObject;
  /** The COSE_Key bytes inside the tag, exactly as received. */
  readonly coseKey: Uint8Array;
}

/** Parses `#6.24(bstr .cbor COSE_Key)` given as the raw tagged item. */
export function decodeCoseKeyBytes(tagged: Uint8Array): DecodedCoseKeyBytes {
  const coseKey = rawTag24Content(tagged).slice();
  return { key: decodeCoseKey(coseKey), coseKey };
}

/**
 * JWK of a P-256 key (public, or private with d), with `alg: ES256` (without it @owf/mdoc 0.6.0 writes a null alg:
 * test/unit/sim/iso/mdoc-context.test.ts).
 */
export function toEs256Jwk(key: KeyObject): Record<string, string> {
  assertP256(key);
  const jwk = key.export({ format: 'jwk' });
  const out: Record<string, string> = { kty: 'EC', crv: 'P-256', alg: 'ES256' };
  if (jwk.x !== undefined) out.x = jwk.x;
  if (jwk.y !== undefined) out.y = jwk.y;
  if (jwk.d !== undefined) out.d = jwk.d;
  return out;
}
