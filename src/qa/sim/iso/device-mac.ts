/**
 * deviceMac: mdoc authentication by COSE_Mac0 (ISO 18013-5 §9.1.3.5), created and verified here because
 * @owf/mdoc 0.6.0 gets it wrong (its DeviceAuth.verify compares the alg name "HS256" with the number 5).
 *
 *   DeviceAuthentication      = ["DeviceAuthentication", SessionTranscript, DocType, DeviceNameSpacesBytes]
 *   DeviceAuthenticationBytes = #6.24(bstr .cbor DeviceAuthentication)      ; detached payload
 *   COSE_Mac0                 = [protected bstr (a1 01 05 = {1: 5} HMAC 256/256), unprotected {}, nil, tag]
 *   MAC_structure             = ["MAC0", protected bstr, external_aad h'', payload bstr]  (RFC 9052 §6.3)
 *   tag                       = HMAC-SHA256(EMacKey, MAC_structure)
 *
 * DeviceAuthentication is spliced from the raw SessionTranscript array and the raw DeviceNameSpacesBytes
 * item, never from re-encoded structures (ISO 18013-5 §8.1).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Tag, cborDecode, cborEncode, encodeByteString, encodeTag24, isCborMap } from './cbor.js';
import { encodeRawArray, rawArrayItems, rawMapValue, requireRawMapValue } from './cbor-raw.js';
import { errorText } from '../../../common/error-text.js';

export const COSE_ALG_HMAC_256_256 = 5;
const COSE_HEADER_ALG = 1;
const COSE_MAC0_TAG = 17;
/** Protected header {1: 5}. */
const PROTECTED_HMAC_256 = Uint8Array.of(0xa1, 0x01, 0x05);
const MAC_LENGTH = 32;

export interface DeviceAuthenticationInput {
  /** The SessionTranscript array bytes (the content of SessionTranscriptBytes, untagged). */
  readonly sessionTranscript: Uint8Array;
  readonly docType: string;
  /** DeviceNameSpacesBytes: the `deviceSigned.nameSpaces` tag-24 item exactly as sent. */
  readonly deviceNameSpacesBytes: Uint8Array;
}

/** DeviceAuthenticationBytes (`#6.24(bstr .cbor DeviceAuthentication)`). */
export function deviceAuthenticationBytes(input: DeviceAuthenticationInput): Uint8Array {
  return encodeTag24(
    encodeRawArray([cborEncode('DeviceAuthentication'), input.sessionTranscript, cborEncode(input.docType), input.deviceNameSpacesBytes]),
  );
}

/** MAC_structure for COSE_Mac0 with empty external AAD. */
export function macStructure(protectedHeader: Uint8Array, payload: Uint8Array): Uint8Array {
  return encodeRawArray([
    cborEncode('MAC0'),
    encodeByteString(protectedHeader),
    encodeByteString(new Uint8Array(0)),
    encodeByteString(payload),
  ]);
}

function hmacSha256(key: Uint8Array, data: Uint8Array): Uint8Array {
  return Uint8Array.from(createHmac('sha256', key).update(data).digest());
}

/** Untagged COSE_Mac0 bytes for `deviceAuth.deviceMac`. */
export function createDeviceMac(input: DeviceAuthenticationInput & { readonly eMacKey: Uint8Array }): Uint8Array {
  const tag = hmacSha256(input.eMacKey, macStructure(PROTECTED_HMAC_256, deviceAuthenticationBytes(input)));
  return encodeRawArray([encodeByteString(PROTECTED_HMAC_256), cborEncode(new Map()), cborEncode(null), encodeByteString(tag)]);
}

export type DeviceMacVerification = { readonly valid: true } | { readonly valid: false; readonly reason: string };

function invalid(reason: string): DeviceMacVerification {
  return { valid: false, reason };
}

/**
 * Verifies a received COSE_Mac0 (raw bytes; tag 17 tolerated) against EMacKey and the raw inputs.
 * Requires alg 5 in the protected header and a nil (detached) payload.
 */
export function verifyDeviceMac(
  input: DeviceAuthenticationInput & { readonly eMacKey: Uint8Array; readonly deviceMac: Uint8Array },
): DeviceMacVerification {
  let decoded: unknown;
  try {
    decoded = cborDecode(input.deviceMac);
  } catch (error) {
    return invalid(`deviceMac is not CBOR: ${errorText(error)}`);
  }
  if (decoded instanceof Tag) {
    if (decoded.tag !== COSE_MAC0_TAG) return invalid(`deviceMac has tag ${decoded.tag}, expected none or 17`);
    decoded = decoded.value as unknown;
  }
  if (!Array.isArray(decoded) || decoded.length !== 4) return invalid('deviceMac must be a 4-element COSE_Mac0 array');
  const [protectedHeader, unprotectedHeader, payload, tag] = decoded as unknown[];
  if (!(protectedHeader instanceof Uint8Array)) return invalid('COSE_Mac0 protected header must be a byte string');
  if (!isCborMap(unprotectedHeader)) return invalid('COSE_Mac0 unprotected header must be a map');
  if (payload !== null) return invalid('COSE_Mac0 payload must be nil (detached DeviceAuthenticationBytes)');
  if (!(tag instanceof Uint8Array) || tag.length !== MAC_LENGTH) return invalid(`COSE_Mac0 tag must be ${MAC_LENGTH} bytes`);
  let headers: unknown;
  try {
    headers = protectedHeader.length === 0 ? new Map() : cborDecode(protectedHeader);
  } catch {
    return invalid('COSE_Mac0 protected header is not CBOR');
  }
  const alg = isCborMap(headers) ? headers.get(COSE_HEADER_ALG) : undefined;
  if (alg !== COSE_ALG_HMAC_256_256) return invalid(`COSE_Mac0 alg must be 5 (HMAC 256/256), got ${String(alg)}`);
  // The MAC covers the protected header bytes as received, not a re-encoding.
  const expected = hmacSha256(input.eMacKey, macStructure(protectedHeader, deviceAuthenticationBytes(input)));
  return timingSafeEqual(expected, tag) ? { valid: true } : invalid('deviceMac tag mismatch');
}

export interface RawDeviceSigned {
  readonly docType: string;
  /** `deviceSigned.nameSpaces` (DeviceNameSpacesBytes) as sent. */
  readonly deviceNameSpacesBytes: Uint8Array;
  /** `deviceSigned.deviceAuth.deviceMac` / `.deviceSignature` raw COSE bytes, whichever is present. */
  readonly deviceMac: Uint8Array | undefined;
  readonly deviceSignature: Uint8Array | undefined;
}

/** The raw device-authentication inputs of each document of a DeviceResponse. */
export function readDeviceSigned(deviceResponse: Uint8Array): RawDeviceSigned[] {
  const documents = rawMapValue(deviceResponse, 'documents');
  if (documents === undefined) return [];
  return rawArrayItems(documents).map((document) => {
    const docType = cborDecode(requireRawMapValue(document, 'docType', 'Document'));
    if (typeof docType !== 'string') throw new TypeError('Document docType must be a text string');
    const deviceSigned = requireRawMapValue(document, 'deviceSigned', 'Document');
    const deviceAuth = requireRawMapValue(deviceSigned, 'deviceAuth', 'DeviceSigned');
    return {
      docType,
      deviceNameSpacesBytes: requireRawMapValue(deviceSigned, 'nameSpaces', 'DeviceSigned').slice(),
      deviceMac: rawMapValue(deviceAuth, 'deviceMac')?.slice(),
      deviceSignature: rawMapValue(deviceAuth, 'deviceSignature')?.slice(),
    };
  });
}
