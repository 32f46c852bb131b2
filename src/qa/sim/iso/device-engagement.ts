/**
 * DeviceEngagement (ISO 18013-5 §8.2.1.1) built by hand and parsed with the raw bytes kept, plus the QR
 * form (ISO 18013-5 §8.2.2.3). Layout (as Multipaz `EngagementGenerator.kt` and @owf/mdoc `device-engagement.ts`
 * model it):
 *
 *   DeviceEngagement = {0: version, 1: Security, ?2: [+ DeviceRetrievalMethod], ?3, ?4,
 *                       ?5: OriginInfos, ?6: Capabilities}        ; 5 and 6 are 2nd edition ("1.1")
 *   Security = [1, EDeviceKeyBytes]                                 ; cipher suite 1
 *   BLE  = [2, 1, {0: peripheralServerMode, 1: centralClientMode, ?10: psUuid, ?11: ccUuid, ?20: psAddress}]
 *   NFC  = [1, 1, {0: maxLenCommandData, 1: maxLenResponseData}]
 *
 * We write keys in ascending order and options in label order, which is what Annex D, Multipaz and Apple
 * Wallet send (the Annex D QR vector; the Multipaz and Apple HS in test/unit/sim/iso/nfc-fixtures.ts). Never
 * re-encode a received DeviceEngagement: keep `bytes`. (@owf/mdoc 0.6.0's DeviceEngagement.create() passes
 * decoded objects to fromEncodedStructure and throws; see its src/mdoc/models/device-engagement.ts.)
 */
import type { KeyObject } from 'node:crypto';
import { uuidFromBytes, uuidToBytes } from './ble-uuids.js';
import {
  CborError,
  cborDecode,
  cborEncode,
  expectArray,
  expectBool,
  expectBytes,
  expectMap,
  expectText,
  expectUint,
  type CborMap,
} from './cbor.js';
import { encodeRawArray, encodeRawMap, rawArrayItems, requireRawMapValue } from './cbor-raw.js';
import { decodeCoseKeyBytes, encodeCoseKeyBytes } from './cose-key.js';

export const DE_KEY = {
  version: 0,
  security: 1,
  deviceRetrievalMethods: 2,
  serverRetrievalMethods: 3,
  protocolInfo: 4,
  originInfos: 5,
  capabilities: 6,
} as const;
export const CIPHER_SUITE_1 = 1;
export const RETRIEVAL_TYPE = { nfc: 1, ble: 2, wifiAware: 3 } as const;
export const BLE_OPTION = {
  peripheralServerMode: 0,
  centralClientMode: 1,
  peripheralServerModeUuid: 10,
  centralClientModeUuid: 11,
  peripheralServerModeDeviceAddress: 20,
  l2capPsm: 21,
} as const;
export const NFC_OPTION = { maxCommandDataLength: 0, maxResponseDataLength: 1 } as const;
/** Capability ids (2nd edition; Multipaz's `Capability` enum). */
export const CAPABILITY = { handoverSessionEstablishmentSupport: 2, readerAuthAllSupport: 3, extendedRequestSupport: 4 } as const;

export interface BleRetrievalMethod {
  readonly type: 'ble';
  readonly peripheralServerMode: boolean;
  readonly centralClientMode: boolean;
  /** Canonical lower-case dashed UUIDs (big-endian bytes in CBOR). */
  readonly peripheralServerModeUuid?: string;
  readonly centralClientModeUuid?: string;
  readonly peripheralServerModeDeviceAddress?: Uint8Array;
}

export interface NfcRetrievalMethod {
  readonly type: 'nfc';
  readonly maxCommandDataLength: number;
  readonly maxResponseDataLength: number;
}

/** A method we do not interpret (Wi-Fi Aware, future types), kept as decoded. */
export interface OtherRetrievalMethod {
  readonly type: 'other';
  readonly typeCode: number;
  readonly version: number;
  readonly options: unknown;
}

export type RetrievalMethod = BleRetrievalMethod | NfcRetrievalMethod;
export type DecodedRetrievalMethod = RetrievalMethod | OtherRetrievalMethod;

export interface DeviceEngagementOptions {
  /** EDeviceKey (public or private KeyObject; only the public part is written). */
  readonly eDeviceKey: KeyObject;
  /** Default "1.1" when originInfos or capabilities are given (2nd edition keys), else "1.0". */
  readonly version?: string;
  /** Key 2; omitted when undefined (NFC engagement carries the methods in the handover records). */
  readonly retrievalMethods?: readonly RetrievalMethod[];
  /** Key 5 (Apple Wallet sends []). */
  readonly originInfos?: readonly unknown[];
  /** Key 6, e.g. {3: true, 4: true} as Apple Wallet sends (isomdl `APPLE_HS_NDEF`). */
  readonly capabilities?: ReadonlyMap<number, unknown>;
}

function encodeRetrievalMethod(method: RetrievalMethod): unknown[] {
  if (method.type === 'nfc') {
    return [
      RETRIEVAL_TYPE.nfc,
      1,
      new Map([
        [NFC_OPTION.maxCommandDataLength, method.maxCommandDataLength],
        [NFC_OPTION.maxResponseDataLength, method.maxResponseDataLength],
      ]),
    ];
  }
  const options = new Map<number, boolean | Uint8Array>([
    [BLE_OPTION.peripheralServerMode, method.peripheralServerMode],
    [BLE_OPTION.centralClientMode, method.centralClientMode],
  ]);
  if (method.peripheralServerModeUuid !== undefined)
    options.set(BLE_OPTION.peripheralServerModeUuid, uuidToBytes(method.peripheralServerModeUuid));
  if (method.centralClientModeUuid !== undefined) options.set(BLE_OPTION.centralClientModeUuid, uuidToBytes(method.centralClientModeUuid));
  if (method.peripheralServerModeDeviceAddress !== undefined) {
    if (method.peripheralServerModeDeviceAddress.length !== 6) throw new TypeError('BLE device address must be 6 bytes');
    options.set(BLE_OPTION.peripheralServerModeDeviceAddress, method.peripheralServerModeDeviceAddress);
  }
  return [RETRIEVAL_TYPE.ble, 1, options];
}

/** DeviceEngagement CBOR bytes (untagged: the QR payload and the NDEF record payload). */
export function encodeDeviceEngagement(options: DeviceEngagementOptions): Uint8Array {
  const secondEdition = options.originInfos !== undefined || options.capabilities !== undefined;
  const version = options.version ?? (secondEdition ? '1.1' : '1.0');
  // Security is spliced as raw bytes so EDeviceKeyBytes is exactly what encodeCoseKeyBytes produced.
  const security = encodeRawArray([cborEncode(CIPHER_SUITE_1), encodeCoseKeyBytes(options.eDeviceKey)]);
  const entries: Array<readonly [Uint8Array, Uint8Array]> = [
    [cborEncode(DE_KEY.version), cborEncode(version)],
    [cborEncode(DE_KEY.security), security],
  ];
  if (options.retrievalMethods !== undefined) {
    entries.push([cborEncode(DE_KEY.deviceRetrievalMethods), cborEncode(options.retrievalMethods.map(encodeRetrievalMethod))]);
  }
  if (options.originInfos !== undefined) entries.push([cborEncode(DE_KEY.originInfos), cborEncode(options.originInfos)]);
  if (options.capabilities !== undefined) entries.push([cborEncode(DE_KEY.capabilities), cborEncode(new Map(options.capabilities))]);
  return encodeRawMap(entries);
}

export interface DecodedDeviceEngagement {
  /** The DeviceEngagement bytes exactly as received (hash these, via DeviceEngagementBytes). */
  readonly bytes: Uint8Array;
  readonly version: string;
  readonly cipherSuite: number;
  /** EDeviceKeyBytes (`#6.24(bstr .cbor COSE_Key)`) exactly as they sit in `bytes`: the BLE Ident IKM. */
  readonly eDeviceKeyBytes: Uint8Array;
  /** The COSE_Key bytes inside EDeviceKeyBytes. */
  readonly eDeviceKeyCose: Uint8Array;
  readonly eDeviceKey: KeyObject;
  readonly retrievalMethods: readonly DecodedRetrievalMethod[];
  /** First BLE / NFC method, for convenience. */
  readonly ble: BleRetrievalMethod | undefined;
  readonly nfc: NfcRetrievalMethod | undefined;
  readonly originInfos: unknown;
  readonly capabilities: ReadonlyMap<unknown, unknown> | undefined;
}

function decodeBleOptions(options: CborMap): BleRetrievalMethod {
  const uuid = (label: number): string | undefined => {
    const value = options.get(label);
    if (value === undefined) return undefined;
    const bytes = expectBytes(value, `BLE option ${label}`);
    if (bytes.length !== 16) throw new CborError(`BLE option ${label}: a UUID is 16 bytes, got ${bytes.length}`);
    return uuidFromBytes(bytes);
  };
  const address = options.get(BLE_OPTION.peripheralServerModeDeviceAddress);
  return {
    type: 'ble',
    peripheralServerMode: expectBool(options.get(BLE_OPTION.peripheralServerMode), 'BLE option 0 (peripheral server mode)'),
    centralClientMode: expectBool(options.get(BLE_OPTION.centralClientMode), 'BLE option 1 (central client mode)'),
    ...optional('peripheralServerModeUuid', uuid(BLE_OPTION.peripheralServerModeUuid)),
    ...optional('centralClientModeUuid', uuid(BLE_OPTION.centralClientModeUuid)),
    ...optional(
      'peripheralServerModeDeviceAddress',
      address === undefined ? undefined : expectBytes(address, 'BLE option 20 (device address)'),
    ),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Partial<Record<K, V>>);
}

function decodeRetrievalMethod(value: unknown): DecodedRetrievalMethod {
  const [typeCode, version, options] = expectArray(value, 'DeviceRetrievalMethod');
  const type = expectUint(typeCode, 'DeviceRetrievalMethod type');
  const methodVersion = expectUint(version, 'DeviceRetrievalMethod version');
  if (type === RETRIEVAL_TYPE.ble) return decodeBleOptions(expectMap(options, 'BLE options'));
  if (type === RETRIEVAL_TYPE.nfc) {
    const map = expectMap(options, 'NFC options');
    return {
      type: 'nfc',
      maxCommandDataLength: expectUint(map.get(NFC_OPTION.maxCommandDataLength), 'NFC option 0'),
      maxResponseDataLength: expectUint(map.get(NFC_OPTION.maxResponseDataLength), 'NFC option 1'),
    };
  }
  return { type: 'other', typeCode: type, version: methodVersion, options };
}

/** Parses DeviceEngagement bytes (QR payload or NDEF record payload). */
export function decodeDeviceEngagement(bytes: Uint8Array): DecodedDeviceEngagement {
  const copy = Uint8Array.from(bytes);
  const map = expectMap(cborDecode(copy), 'DeviceEngagement');
  const version = expectText(map.get(DE_KEY.version), 'DeviceEngagement version (key 0)');
  // Security through the raw spans so EDeviceKeyBytes keeps its received header and content.
  const securityRaw = requireRawMapValue(copy, DE_KEY.security, 'DeviceEngagement');
  const securityItems = rawArrayItems(securityRaw);
  const [suiteRaw, keyBytesRaw] = securityItems;
  if (securityItems.length !== 2 || suiteRaw === undefined || keyBytesRaw === undefined) {
    throw new CborError('DeviceEngagement Security must be [cipherSuite, EDeviceKeyBytes]');
  }
  const cipherSuite = expectUint(cborDecode(suiteRaw), 'cipher suite');
  if (cipherSuite !== CIPHER_SUITE_1) throw new CborError(`unsupported cipher suite ${cipherSuite} (only 1 is defined)`);
  const { key, coseKey } = decodeCoseKeyBytes(keyBytesRaw);
  const methodsValue = map.get(DE_KEY.deviceRetrievalMethods);
  const retrievalMethods = methodsValue === undefined ? [] : expectArray(methodsValue, 'DeviceRetrievalMethods').map(decodeRetrievalMethod);
  const capabilities = map.get(DE_KEY.capabilities);
  return {
    bytes: copy,
    version,
    cipherSuite,
    eDeviceKeyBytes: keyBytesRaw.slice(),
    eDeviceKeyCose: coseKey,
    eDeviceKey: key,
    retrievalMethods,
    ble: retrievalMethods.find((m): m is BleRetrievalMethod => m.type === 'ble'),
    nfc: retrievalMethods.find((m): m is NfcRetrievalMethod => m.type === 'nfc'),
    originInfos: map.get(DE_KEY.originInfos),
    capabilities: capabilities === undefined ? undefined : expectMap(capabilities, 'Capabilities'),
  };
}

// ---------------------------------------------------------------- QR form

const QR_SCHEME = 'mdoc:';
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** QR text: "mdoc:" + base64url without padding of the DeviceEngagement bytes (ISO 18013-5 §8.2.2.3). */
export function deviceEngagementToQr(deviceEngagement: Uint8Array): string {
  return QR_SCHEME + Buffer.from(deviceEngagement).toString('base64url');
}

/**
 * DeviceEngagement bytes from QR text. The scheme is matched case-insensitively ("MDOC:" too) because URI
 * schemes are case-insensitive (RFC 3986 §3.1); we always write lower case. The payload is strict:
 * base64url alphabet only, no padding, no whitespace, canonical trailing bits, so a relay that alters the
 * text is caught here rather than surfacing later as a key-derivation mismatch.
 */
export function deviceEngagementFromQr(text: string): Uint8Array {
  if (text.slice(0, QR_SCHEME.length).toLowerCase() !== QR_SCHEME) throw new TypeError('QR text must start with "mdoc:"');
  const payload = text.slice(QR_SCHEME.length);
  if (payload.length === 0 || !BASE64URL.test(payload) || payload.length % 4 === 1) {
    throw new TypeError('QR payload is not unpadded base64url');
  }
  const bytes = Buffer.from(payload, 'base64url');
  if (bytes.toString('base64url') !== payload) throw new TypeError('QR payload is not canonical base64url');
  return Uint8Array.from(bytes);
}
