/** What the PC/SC reader can be told (`PcscNfcReaderOptions`), its defaults and checks, and the log it writes to. */
import type { BindingFactory } from './pcsc-binding.js';
import type { ScardPlatform } from './scard-errors.js';

export type ShareMode = 'shared' | 'exclusive';
export type ProtocolPreference = 'any' | 'T0' | 'T1';

/** Structured log sink (pino's Logger fits). Never given APDU contents. */
export interface PcscLog {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface PcscNfcReaderOptions {
  /** Reader name, part of a name, or `/regex/flags`; automatic choice when absent. */
  readonly reader?: string;
  readonly shareMode?: ShareMode;
  readonly protocol?: ProtocolPreference;
  /** First delay before re-establishing a lost or absent PC/SC service; doubles up to the maximum. */
  readonly serviceRetryMinMs?: number;
  readonly serviceRetryMaxMs?: number;
  /** Bound on SCardConnect. */
  readonly connectTimeoutMs?: number;
  /** Bound on SCardDisconnect (the handle is considered dropped after it). */
  readonly disconnectTimeoutMs?: number;
  readonly log?: PcscLog;
  /** The binding (tests inject a double); default: the `smartcard` addon (`smartcard-binding.ts`). */
  readonly binding?: BindingFactory;
  readonly platform?: ScardPlatform;
}

const DEFAULTS = {
  shareMode: 'shared' as ShareMode,
  protocol: 'any' as ProtocolPreference,
  serviceRetryMinMs: 500,
  serviceRetryMaxMs: 10_000,
  connectTimeoutMs: 5_000,
  disconnectTimeoutMs: 1_000,
};

/** The share mode, protocols and time bounds in force: every one given or defaulted. */
export type ReaderSettings = typeof DEFAULTS;

/** The options with their defaults filled in; a time bound that is not a positive number is refused. */
export function readerSettings(options: PcscNfcReaderOptions): ReaderSettings {
  const settings: ReaderSettings = {
    shareMode: options.shareMode ?? DEFAULTS.shareMode,
    protocol: options.protocol ?? DEFAULTS.protocol,
    serviceRetryMinMs: options.serviceRetryMinMs ?? DEFAULTS.serviceRetryMinMs,
    serviceRetryMaxMs: options.serviceRetryMaxMs ?? DEFAULTS.serviceRetryMaxMs,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
    disconnectTimeoutMs: options.disconnectTimeoutMs ?? DEFAULTS.disconnectTimeoutMs,
  };
  for (const [key, value] of Object.entries(settings)) {
    if (typeof value === 'number' && !(Number.isFinite(value) && value > 0))
      throw new RangeError(`${key} must be a positive number, got ${value}`);
  }
  return settings;
}

export const silentLog: PcscLog = { debug: () => undefined, info: () => undefined, warn: () => undefined };
