/**
 * The mock backend's ISO 18013-5 reader engine (issue 3): plug `createIsoReaderEngineFactory(...)` into
 * `startMockBackend({ engineFactory })`. Module map:
 *
 * - `nfc-handover.ts`     sans-IO NFC reader handover driver (static and negotiated, ISO/IEC 18013-5 §8.2.2.1)
 * - `ble-modes.ts`        `ble_exchange` modes from the engagement (spec §2.5, ISO/IEC 18013-5 §8.3.3.1.1)
 * - `reader-session.ts`   EReaderKey, SessionTranscript, DeviceRequest, SessionEstablishment, Ident (ISO/IEC 18013-5 §9.1.1)
 * - `iso-reader-engine.ts` the ReaderEngine: both BLE roles, chunking, SessionData, decline semantics
 * - `device-response.ts`  DeviceResponse read from its raw bytes
 * - `device-auth.ts`      deviceSignature / deviceMac over raw DeviceAuthenticationBytes (ISO/IEC 18013-5 §9.1.3)
 * - `verify-response.ts`  the outcome of spec §2.4 (with @owf/mdoc for issuer signature and chain)
 * - `findings.ts`         the `errors` / `warnings` structure
 * - `json-values.ts`      JSON-safe element values
 * - `trust.ts`            the IACA trust directory loader
 */
import { createNodeMdocContext } from '../../iso/mdoc-context.js';
import type { ReaderEngineFactory } from '../engine.js';
import {
  DEFAULT_MAX_CHARACTERISTIC_SIZE,
  DEFAULT_MAX_MESSAGE_SIZE,
  IsoReaderEngine,
  checkCharacteristicSize,
} from './iso-reader-engine.js';
import type { NfcHandoverOptions } from './nfc-handover.js';

export interface IsoReaderEngineOptions {
  /** Trusted IACA certificates, DER (see `loadTrustDirectory`). */
  readonly trustedIacaCertificates: readonly Uint8Array[];
  /** BLE characteristic size for what the backend sends, flag byte included (ISO/IEC 18013-5 §8.3.3.1.1.6). Default 182. */
  readonly maxCharacteristicSize?: number;
  /** Largest message reassembled from the phone's chunks. Default 4 MiB. */
  readonly maxMessageSize?: number;
  /** Verification time (MSO validity, certificate validity). Default: the wall clock. */
  readonly now?: () => Date;
  /** NFC handover driver options (HR UUID, polling bounds, restarts). */
  readonly nfc?: NfcHandoverOptions;
  /** How waits (TNEP t_wait, locked-phone polls) are awaited; default `setTimeout`. For tests. */
  readonly delay?: (ms: number) => Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function createIsoReaderEngineFactory(options: IsoReaderEngineOptions): ReaderEngineFactory {
  if (options.trustedIacaCertificates.length === 0) throw new TypeError('at least one trusted IACA certificate is needed');
  const maxMessageSize = options.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE;
  if (!Number.isInteger(maxMessageSize) || maxMessageSize < 1)
    throw new RangeError(`maxMessageSize must be a positive integer, got ${maxMessageSize}`);
  const settings = {
    trustedCertificates: options.trustedIacaCertificates.map((der) => Uint8Array.from(der)),
    maxCharacteristicSize: checkCharacteristicSize(options.maxCharacteristicSize ?? DEFAULT_MAX_CHARACTERISTIC_SIZE),
    maxMessageSize,
    now: options.now ?? (() => new Date()),
    nfc: options.nfc ?? {},
    delay: options.delay ?? sleep,
    context: createNodeMdocContext(),
  };
  return (context) => new IsoReaderEngine(context, settings);
}

export { DEFAULT_MAX_CHARACTERISTIC_SIZE, DEFAULT_MAX_MESSAGE_SIZE, IsoReaderEngine } from './iso-reader-engine.js';
export { NfcHandoverDriver, type HandoverResult, type HandoverStep, type NfcHandoverOptions } from './nfc-handover.js';
export { buildBleModes, offeredFromDeviceEngagement, offeredFromHandover, ROLE_CHARACTERISTICS, type OfferedModes } from './ble-modes.js';
export { encodeDeviceRequest, MDL_DOC_TYPE, ReaderSession, type RequestedNamespaces } from './reader-session.js';
export { verifyDeviceResponse, type VerifyResponseInput } from './verify-response.js';
export { CATEGORIES, Findings, type Category, type FindingsJson } from './findings.js';
export { toJsonValue, type JsonValue } from './json-values.js';
export { loadTrustDirectory, parseCertificateFile, TrustDirectoryError } from './trust.js';
