/**
 * DeviceResponse (ISO/IEC 18013-5 §8.3.2.1.2.2) read from its raw bytes, keeping every item that is hashed,
 * signed or MACed exactly as the phone sent it:
 *
 *   DeviceResponse   = {"version", ? "documents": [+ Document], ? "documentErrors": [+ {docType => code}], "status"}
 *   Document         = {"docType", "issuerSigned": {"nameSpaces": {ns => [+ IssuerSignedItemBytes]},
 *                       "issuerAuth": COSE_Sign1(MobileSecurityObjectBytes)}, "deviceSigned", ? "errors"}
 *   IssuerSignedItemBytes = #6.24(bstr .cbor {"digestID", "random", "elementIdentifier", "elementValue"})
 *   valueDigest      = digest(IssuerSignedItemBytes as received)          (MSO valueDigests, ISO/IEC 18013-5 §9.1.2.4)
 *
 * @owf/mdoc re-encodes decoded IssuerSignedItems to hash them and re-encodes DeviceNameSpaces and the
 * SessionTranscript to check the device signature, so a wallet whose encoding differs from cbor-x's would
 * fail there although its data are authentic. The digest and device checks therefore run on these spans.
 */
import {
  CborError,
  EmbeddedCbor,
  Tag,
  cborDecode,
  cborEncode,
  expectArray,
  expectBytes,
  expectMap,
  expectText,
  expectUint,
  isCborMap,
} from '../../iso/cbor.js';
import {
  encodeRawArray,
  encodeRawMap,
  rawArrayItems,
  rawMapEntries,
  rawMapValue,
  rawTag24Content,
  requireRawMapValue,
} from '../../iso/cbor-raw.js';
import { readDeviceSigned, type RawDeviceSigned } from '../../iso/device-mac.js';
import { errorText } from '../../../../common/error-text.js';

const COSE_SIGN1_TAG = 18;

export interface IssuerItem {
  readonly namespace: string;
  /** IssuerSignedItemBytes, the whole `#6.24(bstr)` item as it sits in the array: what the digest covers. */
  readonly itemBytes: Uint8Array;
  readonly digestId: number;
  readonly elementIdentifier: string;
  /** Decoded by the toolkit's CBOR rules (maps as Map, dates as Tag): convert with `toJsonValue`. */
  readonly elementValue: unknown;
}

export interface MobileSecurityObject {
  readonly digestAlgorithm: string;
  /** ns → digestID → digest. */
  readonly valueDigests: ReadonlyMap<string, ReadonlyMap<number, Uint8Array>>;
  readonly docType: string;
  /** MSO deviceKeyInfo.deviceKey, a decoded COSE_Key map (SDeviceKey). */
  readonly deviceKey: unknown;
}

export interface ParsedDocument {
  readonly docType: string;
  readonly items: readonly IssuerItem[];
  readonly mso: MobileSecurityObject;
  readonly deviceSigned: RawDeviceSigned;
  /** Decoded DeviceNameSpaces (device-signed elements; normally empty). */
  readonly deviceNameSpaces: ReadonlyMap<unknown, unknown>;
  /** Document "errors": ns → element → error code (elements the wallet did not return). */
  readonly elementErrors: readonly { readonly namespace: string; readonly element: string; readonly code: unknown }[];
}

export type DocumentEntry =
  | { readonly ok: true; readonly document: ParsedDocument }
  | { readonly ok: false; readonly docType: string | undefined; readonly error: string };

export interface ParsedDeviceResponse {
  readonly version: string;
  readonly status: number;
  readonly documents: readonly DocumentEntry[];
  readonly documentErrors: readonly { readonly docType: string; readonly code: unknown }[];
}

const message = (error: unknown): string => errorText(error);

function decodeMso(issuerAuth: Uint8Array): MobileSecurityObject {
  let sign1 = cborDecode(issuerAuth);
  if (sign1 instanceof Tag && sign1.tag === COSE_SIGN1_TAG) sign1 = sign1.value as unknown;
  const parts = expectArray(sign1, 'issuerAuth (COSE_Sign1)');
  if (parts.length !== 4) throw new CborError('issuerAuth: COSE_Sign1 must have 4 elements');
  // Payload = MobileSecurityObjectBytes = #6.24(bstr .cbor MSO) (ISO/IEC 18013-5 §9.1.2.4).
  const payload = expectBytes(parts[2], 'issuerAuth payload');
  const wrapped = cborDecode(payload);
  if (!(wrapped instanceof EmbeddedCbor)) throw new CborError('issuerAuth payload must be MobileSecurityObjectBytes (tag 24)');
  const mso = expectMap(wrapped.decode(), 'MobileSecurityObject');
  const valueDigests = new Map<string, Map<number, Uint8Array>>();
  for (const [namespace, digests] of expectMap(mso.get('valueDigests'), 'MSO valueDigests')) {
    const inner = new Map<number, Uint8Array>();
    for (const [digestId, digest] of expectMap(digests, `MSO valueDigests[${String(namespace)}]`)) {
      inner.set(expectUint(digestId, 'MSO digestID'), expectBytes(digest, 'MSO digest'));
    }
    valueDigests.set(expectText(namespace, 'MSO valueDigests namespace'), inner);
  }
  const deviceKeyInfo = expectMap(mso.get('deviceKeyInfo'), 'MSO deviceKeyInfo');
  return {
    digestAlgorithm: expectText(mso.get('digestAlgorithm'), 'MSO digestAlgorithm'),
    valueDigests,
    docType: expectText(mso.get('docType'), 'MSO docType'),
    deviceKey: deviceKeyInfo.get('deviceKey'),
  };
}

function decodeItem(namespace: string, itemBytes: Uint8Array): IssuerItem {
  const item = expectMap(cborDecode(rawTag24Content(itemBytes)), `IssuerSignedItem in ${namespace}`);
  return {
    namespace,
    itemBytes,
    digestId: expectUint(item.get('digestID'), 'IssuerSignedItem digestID'),
    elementIdentifier: expectText(item.get('elementIdentifier'), 'IssuerSignedItem elementIdentifier'),
    elementValue: item.get('elementValue'),
  };
}

function parseDocument(raw: Uint8Array): ParsedDocument {
  const docType = expectText(cborDecode(requireRawMapValue(raw, 'docType', 'Document')), 'Document docType');
  const issuerSigned = requireRawMapValue(raw, 'issuerSigned', 'Document');
  const items: IssuerItem[] = [];
  const nameSpaces = rawMapValue(issuerSigned, 'nameSpaces');
  if (nameSpaces !== undefined) {
    for (const entry of rawMapEntries(nameSpaces)) {
      const namespace = expectText(entry.key, 'IssuerNameSpaces key');
      for (const itemBytes of rawArrayItems(entry.rawValue)) items.push(decodeItem(namespace, itemBytes.slice()));
    }
  }
  const mso = decodeMso(requireRawMapValue(issuerSigned, 'issuerAuth', 'IssuerSigned'));
  // readDeviceSigned (device-mac.ts) takes a DeviceResponse: wrap this one document so a broken sibling
  // document cannot hide it.
  const [deviceSigned] = readDeviceSigned(encodeRawMap([[cborEncode('documents'), encodeRawArray([raw])]]));
  if (deviceSigned === undefined) throw new CborError('Document: missing deviceSigned');
  const deviceNameSpaces = expectMap(cborDecode(rawTag24Content(deviceSigned.deviceNameSpacesBytes)), 'DeviceNameSpaces');
  const elementErrors: { namespace: string; element: string; code: unknown }[] = [];
  const errors = rawMapValue(raw, 'errors');
  if (errors !== undefined) {
    for (const [namespace, elements] of expectMap(cborDecode(errors), 'Document errors')) {
      for (const [element, code] of expectMap(elements, 'Document errors items')) {
        elementErrors.push({ namespace: String(namespace), element: String(element), code });
      }
    }
  }
  return { docType, items, mso, deviceSigned, deviceNameSpaces, elementErrors };
}

function peekDocType(raw: Uint8Array): string | undefined {
  try {
    const value = cborDecode(requireRawMapValue(raw, 'docType', 'Document'));
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Parses a DeviceResponse; throws CborError when its top level is unusable, isolates broken documents. */
export function parseDeviceResponse(bytes: Uint8Array): ParsedDeviceResponse {
  const top = expectMap(cborDecode(bytes), 'DeviceResponse');
  const version = expectText(top.get('version'), 'DeviceResponse version');
  const status = expectUint(top.get('status'), 'DeviceResponse status');
  const documents: DocumentEntry[] = [];
  const rawDocuments = rawMapValue(bytes, 'documents');
  if (rawDocuments !== undefined) {
    for (const raw of rawArrayItems(rawDocuments)) {
      try {
        documents.push({ ok: true, document: parseDocument(raw.slice()) });
      } catch (error) {
        documents.push({ ok: false, docType: peekDocType(raw), error: message(error) });
      }
    }
  }
  const documentErrors: { docType: string; code: unknown }[] = [];
  const errorList = top.get('documentErrors');
  if (errorList !== undefined) {
    for (const entry of expectArray(errorList, 'DeviceResponse documentErrors')) {
      if (!isCborMap(entry)) throw new CborError('DeviceResponse documentErrors: expected maps');
      for (const [docType, code] of entry) documentErrors.push({ docType: String(docType), code });
    }
  }
  return { version, status, documents, documentErrors };
}
