/**
 * PC/SC return codes → the canonical variant names the relay forwards to the backend (spec §4.3, §7.3).
 *
 * The names are those of the Rust `pcsc` crate's `Error` enum (bluetech/pcsc-rust, `pcsc/src/lib.rs`;
 * values from `pcsc-sys/src/lib.rs`), which is what the backend classifies on. The codes themselves are
 * the SCARD_E_/SCARD_W_/SCARD_F_/SCARD_P_ constants of pcsc-lite's `pcsclite.h` and Windows' `winerror.h`.
 *
 * Two platform differences follow the crate:
 * - 0x8010001F is SCARD_E_UNEXPECTED on Windows but SCARD_E_UNSUPPORTED_FEATURE in pcsc-lite and on
 *   macOS (pcsc-lite API "differences" page); Windows puts SCARD_E_UNSUPPORTED_FEATURE at 0x80100022.
 * - Codes the crate does not model (Windows' PIN-cache and read-only codes, anything unknown) become
 *   `UnknownError`, as the crate masks them.
 */
import { osCapabilities } from '../../platform/os.js';

export type ScardPlatform = 'windows' | 'other';

export interface ScardCodeEntry {
  readonly code: number;
  /** The C constant, for diagnostics. */
  readonly constant: string;
  /** The canonical variant name. */
  readonly variant: string;
  /** Only on this platform (else the code means something else there, or nothing). */
  readonly platform?: ScardPlatform;
}

const entry = (code: number, constant: string, variant: string, platform?: ScardPlatform): ScardCodeEntry =>
  platform === undefined ? { code, constant, variant } : { code, constant, variant, platform };

/** Every SCARD_E_/SCARD_W_/SCARD_F_/SCARD_P_ code of pcsc-lite and Windows. */
export const SCARD_CODES: readonly ScardCodeEntry[] = [
  entry(0x80100001, 'SCARD_F_INTERNAL_ERROR', 'InternalError'),
  entry(0x80100002, 'SCARD_E_CANCELLED', 'Cancelled'),
  entry(0x80100003, 'SCARD_E_INVALID_HANDLE', 'InvalidHandle'),
  entry(0x80100004, 'SCARD_E_INVALID_PARAMETER', 'InvalidParameter'),
  entry(0x80100005, 'SCARD_E_INVALID_TARGET', 'InvalidTarget'),
  entry(0x80100006, 'SCARD_E_NO_MEMORY', 'NoMemory'),
  entry(0x80100007, 'SCARD_F_WAITED_TOO_LONG', 'WaitedTooLong'),
  entry(0x80100008, 'SCARD_E_INSUFFICIENT_BUFFER', 'InsufficientBuffer'),
  entry(0x80100009, 'SCARD_E_UNKNOWN_READER', 'UnknownReader'),
  entry(0x8010000a, 'SCARD_E_TIMEOUT', 'Timeout'),
  entry(0x8010000b, 'SCARD_E_SHARING_VIOLATION', 'SharingViolation'),
  entry(0x8010000c, 'SCARD_E_NO_SMARTCARD', 'NoSmartcard'),
  entry(0x8010000d, 'SCARD_E_UNKNOWN_CARD', 'UnknownCard'),
  entry(0x8010000e, 'SCARD_E_CANT_DISPOSE', 'CantDispose'),
  entry(0x8010000f, 'SCARD_E_PROTO_MISMATCH', 'ProtoMismatch'),
  entry(0x80100010, 'SCARD_E_NOT_READY', 'NotReady'),
  entry(0x80100011, 'SCARD_E_INVALID_VALUE', 'InvalidValue'),
  entry(0x80100012, 'SCARD_E_SYSTEM_CANCELLED', 'SystemCancelled'),
  entry(0x80100013, 'SCARD_F_COMM_ERROR', 'CommError'),
  entry(0x80100014, 'SCARD_F_UNKNOWN_ERROR', 'UnknownError'),
  entry(0x80100015, 'SCARD_E_INVALID_ATR', 'InvalidAtr'),
  entry(0x80100016, 'SCARD_E_NOT_TRANSACTED', 'NotTransacted'),
  entry(0x80100017, 'SCARD_E_READER_UNAVAILABLE', 'ReaderUnavailable'),
  entry(0x80100018, 'SCARD_P_SHUTDOWN', 'Shutdown'),
  entry(0x80100019, 'SCARD_E_PCI_TOO_SMALL', 'PciTooSmall'),
  entry(0x8010001a, 'SCARD_E_READER_UNSUPPORTED', 'ReaderUnsupported'),
  entry(0x8010001b, 'SCARD_E_DUPLICATE_READER', 'DuplicateReader'),
  entry(0x8010001c, 'SCARD_E_CARD_UNSUPPORTED', 'CardUnsupported'),
  entry(0x8010001d, 'SCARD_E_NO_SERVICE', 'NoService'),
  entry(0x8010001e, 'SCARD_E_SERVICE_STOPPED', 'ServiceStopped'),
  entry(0x8010001f, 'SCARD_E_UNEXPECTED', 'Unexpected', 'windows'),
  entry(0x8010001f, 'SCARD_E_UNSUPPORTED_FEATURE', 'UnsupportedFeature', 'other'),
  entry(0x80100020, 'SCARD_E_ICC_INSTALLATION', 'IccInstallation'),
  entry(0x80100021, 'SCARD_E_ICC_CREATEORDER', 'IccCreateorder'),
  entry(0x80100022, 'SCARD_E_UNSUPPORTED_FEATURE', 'UnsupportedFeature', 'windows'),
  entry(0x80100023, 'SCARD_E_DIR_NOT_FOUND', 'DirNotFound'),
  entry(0x80100024, 'SCARD_E_FILE_NOT_FOUND', 'FileNotFound'),
  entry(0x80100025, 'SCARD_E_NO_DIR', 'NoDir'),
  entry(0x80100026, 'SCARD_E_NO_FILE', 'NoFile'),
  entry(0x80100027, 'SCARD_E_NO_ACCESS', 'NoAccess'),
  entry(0x80100028, 'SCARD_E_WRITE_TOO_MANY', 'WriteTooMany'),
  entry(0x80100029, 'SCARD_E_BAD_SEEK', 'BadSeek'),
  entry(0x8010002a, 'SCARD_E_INVALID_CHV', 'InvalidChv'),
  entry(0x8010002b, 'SCARD_E_UNKNOWN_RES_MNG', 'UnknownResMng'),
  entry(0x8010002c, 'SCARD_E_NO_SUCH_CERTIFICATE', 'NoSuchCertificate'),
  entry(0x8010002d, 'SCARD_E_CERTIFICATE_UNAVAILABLE', 'CertificateUnavailable'),
  entry(0x8010002e, 'SCARD_E_NO_READERS_AVAILABLE', 'NoReadersAvailable'),
  entry(0x8010002f, 'SCARD_E_COMM_DATA_LOST', 'CommDataLost'),
  entry(0x80100030, 'SCARD_E_NO_KEY_CONTAINER', 'NoKeyContainer'),
  entry(0x80100031, 'SCARD_E_SERVER_TOO_BUSY', 'ServerTooBusy'),
  // Windows only; the crate has no variants for them, so they are masked as it masks them.
  entry(0x80100032, 'SCARD_E_PIN_CACHE_EXPIRED', 'UnknownError', 'windows'),
  entry(0x80100033, 'SCARD_E_NO_PIN_CACHE', 'UnknownError', 'windows'),
  entry(0x80100034, 'SCARD_E_READ_ONLY_CARD', 'UnknownError', 'windows'),
  entry(0x80100065, 'SCARD_W_UNSUPPORTED_CARD', 'UnsupportedCard'),
  entry(0x80100066, 'SCARD_W_UNRESPONSIVE_CARD', 'UnresponsiveCard'),
  entry(0x80100067, 'SCARD_W_UNPOWERED_CARD', 'UnpoweredCard'),
  entry(0x80100068, 'SCARD_W_RESET_CARD', 'ResetCard'),
  entry(0x80100069, 'SCARD_W_REMOVED_CARD', 'RemovedCard'),
  entry(0x8010006a, 'SCARD_W_SECURITY_VIOLATION', 'SecurityViolation'),
  entry(0x8010006b, 'SCARD_W_WRONG_CHV', 'WrongChv'),
  entry(0x8010006c, 'SCARD_W_CHV_BLOCKED', 'ChvBlocked'),
  entry(0x8010006d, 'SCARD_W_EOF', 'Eof'),
  entry(0x8010006e, 'SCARD_W_CANCELLED_BY_USER', 'CancelledByUser'),
  entry(0x8010006f, 'SCARD_W_CARD_NOT_AUTHENTICATED', 'CardNotAuthenticated'),
  entry(0x80100070, 'SCARD_W_CACHE_ITEM_NOT_FOUND', 'CacheItemNotFound'),
  entry(0x80100071, 'SCARD_W_CACHE_ITEM_STALE', 'CacheItemStale'),
  entry(0x80100072, 'SCARD_W_CACHE_ITEM_TOO_BIG', 'CacheItemTooBig'),
];

/** The variant for codes nobody defines, as the crate masks them. */
export const UNKNOWN_VARIANT = 'UnknownError';

export const currentScardPlatform = (): ScardPlatform => osCapabilities().scardCodes;

const tables = new Map<ScardPlatform, ReadonlyMap<number, ScardCodeEntry>>();

function tableFor(platform: ScardPlatform): ReadonlyMap<number, ScardCodeEntry> {
  let table = tables.get(platform);
  if (!table) {
    const built = new Map<number, ScardCodeEntry>();
    for (const e of SCARD_CODES) if (e.platform === undefined || e.platform === platform) built.set(e.code, e);
    tables.set(platform, built);
    table = built;
  }
  return table;
}

/** The table entry for a code on a platform, if the platform defines the code. */
export function scardEntry(code: number, platform: ScardPlatform = currentScardPlatform()): ScardCodeEntry | undefined {
  return tableFor(platform).get(code >>> 0);
}

/** The canonical variant name of a code (`UnknownError` for codes the platform does not define). */
export function scardVariant(code: number, platform: ScardPlatform = currentScardPlatform()): string {
  return scardEntry(code, platform)?.variant ?? UNKNOWN_VARIANT;
}

/**
 * The SCARD code in a binding error: bindings give it as `(0x8010xxxx)` at the end of the message (the
 * `smartcard` shim, `smartcard-errors.ts`, writes it so; `pcsclite` did the same). Texts differ between
 * bindings and are localised on Windows (santigimeno/node-pcsclite#57), so only the hex code is matched.
 */
export function parseScardCode(error: unknown): number | undefined {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : undefined;
  if (message === undefined) return undefined;
  const match = /\(0x([0-9a-f]{8})\)/i.exec(message);
  return match?.[1] === undefined ? undefined : Number.parseInt(match[1], 16);
}

/** `0x80100069` */
export const formatScardCode = (code: number): string => `0x${(code >>> 0).toString(16).padStart(8, '0').toUpperCase()}`;

export const Scard = {
  CANCELLED: 0x80100002,
  INVALID_HANDLE: 0x80100003,
  NO_SMARTCARD: 0x8010000c,
  COMM_ERROR: 0x80100013,
  NOT_TRANSACTED: 0x80100016,
  READER_UNAVAILABLE: 0x80100017,
  SHUTDOWN: 0x80100018,
  UNKNOWN_READER: 0x80100009,
  NO_SERVICE: 0x8010001d,
  SERVICE_STOPPED: 0x8010001e,
  NO_READERS_AVAILABLE: 0x8010002e,
  REMOVED_CARD: 0x80100069,
} as const;

/** Codes after which the whole PC/SC context is gone and must be established anew (a restarted pcscd leaves the old context dead: SCARD_E_NO_SERVICE / SCARD_F_COMM_ERROR, pcsc-lite `winscard_clnt.c`). */
export const CONTEXT_LOST_CODES: ReadonlySet<number> = new Set([
  Scard.COMM_ERROR,
  Scard.NO_SERVICE,
  Scard.SERVICE_STOPPED,
  Scard.SHUTDOWN,
  Scard.INVALID_HANDLE,
]);
