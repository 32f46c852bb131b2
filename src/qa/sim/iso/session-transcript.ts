/**
 * SessionTranscript (ISO 18013-5 §9.1.5.1), assembled from raw parts so both sides hash identical bytes
 * (ISO 18013-5 §8.1 wants the received bytes, not a re-encoding):
 *
 *   SessionTranscript      = [DeviceEngagementBytes, EReaderKeyBytes, Handover]
 *   SessionTranscriptBytes = #6.24(bstr .cbor SessionTranscript)
 *   DeviceEngagementBytes  = #6.24(bstr <DeviceEngagement exactly as in the QR / NDEF record>)
 *   EReaderKeyBytes        = #6.24(bstr .cbor COSE_Key), exactly the item sent in SessionEstablishment
 *   Handover               = null (QR) | [bstr HS, bstr HR | null] (NFC static / negotiated)
 *
 * HS/HR are the complete NDEF messages as read or written, without the 2-byte NLEN (as Multipaz
 * `mdocReaderNfcHandover.kt` and `MdocNfcEngagementHelper.kt` build the Handover).
 * isomdl broke Apple Wallet sessions by re-encoding the DeviceEngagement (commit 3ad4471), hence raw bytes.
 */
import { CborError, cborDecode, encodeByteString, encodeTag24 } from './cbor.js';
import { assertSingleItem, encodeRawArray, rawArrayItems, rawTag24Content } from './cbor-raw.js';

export type Handover =
  | { readonly type: 'qr' }
  | { readonly type: 'nfc'; readonly handoverSelect: Uint8Array; readonly handoverRequest: Uint8Array | null };

const CBOR_NULL = Uint8Array.of(0xf6);

/** Handover CBOR: `f6` for QR, `82 <bstr HS> <bstr HR | f6>` for NFC. */
export function encodeHandover(handover: Handover): Uint8Array {
  if (handover.type === 'qr') return CBOR_NULL;
  return encodeRawArray([
    encodeByteString(handover.handoverSelect),
    handover.handoverRequest === null ? CBOR_NULL : encodeByteString(handover.handoverRequest),
  ]);
}

export interface SessionTranscriptParts {
  /** DeviceEngagement bytes as received (untagged: QR payload or NDEF record payload). */
  readonly deviceEngagement: Uint8Array;
  /** EReaderKeyBytes: the tag-24 item exactly as it is (or was) sent in SessionEstablishment. */
  readonly eReaderKeyBytes: Uint8Array;
  readonly handover: Handover;
}

export interface SessionTranscript {
  /** The SessionTranscript array (what DeviceAuthentication and ReaderAuthentication embed). */
  readonly bytes: Uint8Array;
  /** SessionTranscriptBytes = #6.24(bstr bytes): HKDF salt input and what @owf/mdoc accepts. */
  readonly taggedBytes: Uint8Array;
}

export function buildSessionTranscript(parts: SessionTranscriptParts): SessionTranscript {
  assertSingleItem(parts.deviceEngagement, 'DeviceEngagement');
  rawTag24Content(parts.eReaderKeyBytes); // validates the tag-24 shape without changing it
  const bytes = encodeRawArray([encodeTag24(parts.deviceEngagement), parts.eReaderKeyBytes, encodeHandover(parts.handover)]);
  return { bytes, taggedBytes: encodeTag24(bytes) };
}

export interface ParsedSessionTranscript extends SessionTranscript {
  /** Raw DeviceEngagementBytes item and its content; null when the transcript carries null there. */
  readonly deviceEngagementBytes: Uint8Array | null;
  readonly deviceEngagement: Uint8Array | null;
  readonly eReaderKeyBytes: Uint8Array | null;
  /** Raw Handover item. */
  readonly handoverRaw: Uint8Array;
  /** Interpreted Handover when it is the QR or NFC form; undefined for others (e.g. OpenID4VP). */
  readonly handover: Handover | undefined;
}

function nullOr(raw: Uint8Array): Uint8Array | null {
  return raw.length === 1 && raw[0] === 0xf6 ? null : raw.slice();
}

function interpretHandover(raw: Uint8Array): Handover | undefined {
  const value = cborDecode(raw);
  if (value === null) return { type: 'qr' };
  if (Array.isArray(value) && value.length === 2) {
    const [hs, hr] = value as unknown[];
    if (hs instanceof Uint8Array && (hr === null || hr instanceof Uint8Array)) {
      return { type: 'nfc', handoverSelect: hs, handoverRequest: hr };
    }
  }
  return undefined;
}

/** Splits SessionTranscriptBytes into its raw parts (for checks and tests; nothing is re-encoded). */
export function parseSessionTranscriptBytes(taggedBytes: Uint8Array): ParsedSessionTranscript {
  const bytes = rawTag24Content(taggedBytes).slice();
  const items = rawArrayItems(bytes);
  const [de, erk, handoverRaw] = items;
  if (items.length !== 3 || de === undefined || erk === undefined || handoverRaw === undefined) {
    throw new CborError('SessionTranscript must be a 3-element array');
  }
  const deviceEngagementBytes = nullOr(de);
  const eReaderKeyBytes = nullOr(erk);
  return {
    bytes,
    taggedBytes: Uint8Array.from(taggedBytes),
    deviceEngagementBytes,
    deviceEngagement: deviceEngagementBytes === null ? null : rawTag24Content(deviceEngagementBytes).slice(),
    eReaderKeyBytes,
    handoverRaw: handoverRaw.slice(),
    handover: interpretHandover(handoverRaw),
  };
}
