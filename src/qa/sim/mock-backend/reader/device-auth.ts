/**
 * mdoc authentication (ISO/IEC 18013-5 §9.1.3), checked over bytes spliced from what was
 * received, never over re-encoded structures:
 *
 *   DeviceAuthenticationBytes = #6.24(["DeviceAuthentication", SessionTranscript, DocType, DeviceNameSpacesBytes])
 *   deviceSignature = COSE_Sign1, payload nil, key SDeviceKey (MSO deviceKeyInfo.deviceKey), ES256/384/512,
 *                     Sig_structure ["Signature1", protected bstr as received, h'', DeviceAuthenticationBytes]
 *                     (RFC 9052 §4.4), signature r||s (IEEE P1363)
 *   deviceMac       = COSE_Mac0 with EMacKey = HKDF(ECDH(EReaderKey, SDeviceKey), SHA-256(SessionTranscriptBytes),
 *                     "EMacKey") — verified by the toolkit's verifyDeviceMac (@owf/mdoc 0.6.0's
 *                     `DeviceAuth.verify` rejects every deviceMac, Annex D's included)
 */
import { createPublicKey, verify as ecdsaVerify, type KeyObject } from 'node:crypto';
import { Tag, cborDecode, cborEncode, encodeByteString, expectBytes, expectMap, isCborMap } from '../../iso/cbor.js';
import { encodeRawArray } from '../../iso/cbor-raw.js';
import { deviceAuthenticationBytes, verifyDeviceMac } from '../../iso/device-mac.js';
import { deriveEMacKey } from '../../iso/session-crypto.js';
import type { SessionTranscript } from '../../iso/session-transcript.js';
import type { ParsedDocument } from './device-response.js';
import { errorText } from '../../../../common/error-text.js';

const COSE_SIGN1_TAG = 18;
const COSE_HEADER_ALG = 1;

interface Curve {
  readonly jwk: 'P-256' | 'P-384' | 'P-521';
  readonly node: string;
  readonly coordinateLength: number;
}

/** COSE EC2 curves (RFC 9053 §7.1) and ECDSA algorithms (RFC 9053 §2.1). */
const CURVES: ReadonlyMap<number, Curve> = new Map([
  [1, { jwk: 'P-256', node: 'prime256v1', coordinateLength: 32 }],
  [2, { jwk: 'P-384', node: 'secp384r1', coordinateLength: 48 }],
  [3, { jwk: 'P-521', node: 'secp521r1', coordinateLength: 66 }],
]);
const ECDSA: ReadonlyMap<number, { hash: string; curve: number }> = new Map([
  [-7, { hash: 'sha256', curve: 1 }],
  [-35, { hash: 'sha384', curve: 2 }],
  [-36, { hash: 'sha512', curve: 3 }],
]);

export type DeviceAuthResult =
  | { readonly valid: true; readonly method: 'deviceSignature' | 'deviceMac' }
  | { readonly valid: false; readonly method: 'deviceSignature' | 'deviceMac' | 'none'; readonly reason: string };

/** SDeviceKey from the MSO's COSE_Key (EC2 on P-256, P-384 or P-521). */
export function deviceKeyFromCose(coseKey: unknown): { key: KeyObject; curve: number } {
  const map = expectMap(coseKey, 'MSO deviceKey');
  if (map.get(1) !== 2) throw new TypeError('MSO deviceKey: kty must be 2 (EC2)');
  const crv = map.get(-1);
  const curve = typeof crv === 'number' ? CURVES.get(crv) : undefined;
  if (typeof crv !== 'number' || curve === undefined) throw new TypeError(`MSO deviceKey: unsupported curve ${String(crv)}`);
  const x = expectBytes(map.get(-2), 'MSO deviceKey x');
  const y = expectBytes(map.get(-3), 'MSO deviceKey y');
  const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');
  const key = createPublicKey({ key: { kty: 'EC', crv: curve.jwk, x: b64(x), y: b64(y) }, format: 'jwk' });
  return { key, curve: crv };
}

function verifySignature(coseSign1: Uint8Array, key: KeyObject, keyCurve: number, payload: Uint8Array): DeviceAuthResult {
  const invalid = (reason: string): DeviceAuthResult => ({ valid: false, method: 'deviceSignature', reason });
  let decoded: unknown;
  try {
    decoded = cborDecode(coseSign1);
  } catch (error) {
    return invalid(`deviceSignature is not CBOR: ${errorText(error)}`);
  }
  if (decoded instanceof Tag) {
    if (decoded.tag !== COSE_SIGN1_TAG) return invalid(`deviceSignature has tag ${decoded.tag}, expected none or 18`);
    decoded = decoded.value as unknown;
  }
  if (!Array.isArray(decoded) || decoded.length !== 4) return invalid('deviceSignature must be a 4-element COSE_Sign1 array');
  const [protectedHeader, unprotectedHeader, detached, signature] = decoded as unknown[];
  if (!(protectedHeader instanceof Uint8Array)) return invalid('COSE_Sign1 protected header must be a byte string');
  if (!isCborMap(unprotectedHeader)) return invalid('COSE_Sign1 unprotected header must be a map');
  if (detached !== null) return invalid('COSE_Sign1 payload must be nil (detached DeviceAuthenticationBytes)');
  if (!(signature instanceof Uint8Array)) return invalid('COSE_Sign1 signature must be a byte string');
  let headers: unknown;
  try {
    headers = protectedHeader.length === 0 ? new Map() : cborDecode(protectedHeader);
  } catch {
    return invalid('COSE_Sign1 protected header is not CBOR');
  }
  // alg belongs in the protected header ({1: null} is what @owf/mdoc 0.6.0 writes for a device key without alg).
  const alg = isCborMap(headers) ? headers.get(COSE_HEADER_ALG) : undefined;
  const algorithm = typeof alg === 'number' ? ECDSA.get(alg) : undefined;
  if (algorithm === undefined)
    return invalid(`deviceSignature alg must be ES256, ES384 or ES512 in the protected header, got ${String(alg)}`);
  if (algorithm.curve !== keyCurve) return invalid(`deviceSignature alg ${String(alg)} does not match the curve of the MSO device key`);
  const coordinateLength = CURVES.get(keyCurve)?.coordinateLength ?? 0;
  if (signature.length !== 2 * coordinateLength)
    return invalid(`deviceSignature must be ${2 * coordinateLength} bytes (r||s), got ${signature.length}`);
  const toBeSigned = encodeRawArray([
    cborEncode('Signature1'),
    encodeByteString(protectedHeader),
    encodeByteString(new Uint8Array(0)),
    encodeByteString(payload),
  ]);
  const valid = ecdsaVerify(algorithm.hash, toBeSigned, { key, dsaEncoding: 'ieee-p1363' }, signature);
  return valid ? { valid: true, method: 'deviceSignature' } : invalid('deviceSignature does not verify with the MSO device key');
}

/** Checks the document's deviceAuth against the SessionTranscript of this session. */
export function verifyDeviceAuthentication(input: {
  readonly document: ParsedDocument;
  readonly transcript: SessionTranscript;
  readonly eReaderPrivateKey: KeyObject;
}): DeviceAuthResult {
  const { document, transcript } = input;
  const { deviceMac, deviceSignature, deviceNameSpacesBytes } = document.deviceSigned;
  if ((deviceMac === undefined) === (deviceSignature === undefined)) {
    return { valid: false, method: 'none', reason: 'deviceAuth must hold exactly one of deviceSignature and deviceMac' };
  }
  const method = deviceSignature !== undefined ? 'deviceSignature' : 'deviceMac';
  let deviceKey: { key: KeyObject; curve: number };
  try {
    deviceKey = deviceKeyFromCose(document.mso.deviceKey);
  } catch (error) {
    return { valid: false, method, reason: errorText(error) };
  }
  const authenticationInput = { sessionTranscript: transcript.bytes, docType: document.docType, deviceNameSpacesBytes };
  if (deviceSignature !== undefined) {
    return verifySignature(deviceSignature, deviceKey.key, deviceKey.curve, deviceAuthenticationBytes(authenticationInput));
  }
  if (deviceMac === undefined) return { valid: false, method: 'none', reason: 'no device authentication' };
  // EMacKey needs ECDH between SDeviceKey and EReaderKey, which is P-256 (reader-session.ts).
  if (deviceKey.curve !== 1) return { valid: false, method, reason: 'deviceMac needs an MSO device key on P-256, the curve of EReaderKey' };
  const eMacKey = deriveEMacKey({
    privateKey: input.eReaderPrivateKey,
    publicKey: deviceKey.key,
    sessionTranscriptBytes: transcript.taggedBytes,
  });
  const verdict = verifyDeviceMac({ ...authenticationInput, eMacKey, deviceMac });
  eMacKey.fill(0);
  return verdict.valid ? { valid: true, method } : { valid: false, method, reason: verdict.reason };
}
