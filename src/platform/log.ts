/**
 * Structured logging (pino). The kiosk logs events, never data: no API key, client secret, URL with a
 * token, APDU or BLE payload, disclosed element or portrait. Call sites pass only identifiers, counts and
 * categories; the redaction below is a second line of defence should a secret-bearing field slip in.
 */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/** Field names that may carry secrets or personal data, at the top level and one level down. */
const SENSITIVE_KEYS = [
  'apiKey',
  'api_key',
  'clientSecret',
  'client_secret',
  'secret',
  'token',
  'authorization',
  'headers',
  'url',
  'data',
  'namespacesValues',
  'response',
  'outcome',
  'value',
];

export const REDACT_PATHS = [...SENSITIVE_KEYS, ...SENSITIVE_KEYS.map((k) => `*.${k}`)];

export function createLogger(options: { level?: LoggerOptions['level']; name?: string } = {}, destination?: DestinationStream): Logger {
  const opts: LoggerOptions = {
    level: options.level ?? 'info',
    name: options.name ?? 'mdl-kiosk',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: undefined,
  };
  return destination ? pino(opts, destination) : pino(opts);
}

/** A logger that drops everything, for library use without configuration. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
