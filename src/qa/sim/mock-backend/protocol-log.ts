/**
 * Structured protocol log of the mock backend: one JSON line per HTTP request, handshake and message in
 * either direction. Secrets are redacted (API key, client secret, token), disclosed values of outcomes
 * are never written, and payload bytes are reduced to their length and a short SHA-256 unless
 * `logPayloads` is set (APDUs and BLE chunks carry no personal data in clear, but QA seldom needs them).
 */
import { createHash } from 'node:crypto';

export interface ProtocolLogEntry {
  readonly [key: string]: unknown;
  readonly event: string;
}

export type ProtocolLogSink = (entry: ProtocolLogEntry) => void;

const SECRET_KEYS = new Set(['client_secret', 'clientSecret', 'token', 'authorization', 'apiKey', 'api_key']);
const BYTES_KEYS = new Set(['data']);

function digest(b64: string): string {
  return createHash('sha256').update(b64).digest('hex').slice(0, 12);
}

function redact(value: unknown, logPayloads: boolean, depth = 0): unknown {
  if (depth > 6) return '[deep]';
  if (Array.isArray(value)) return value.map((v) => redact(v, logPayloads, depth + 1));
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (SECRET_KEYS.has(k)) out[k] = '[redacted]';
    else if (k === 'response' && depth > 0) out[k] = '[disclosed data not logged]';
    else if (BYTES_KEYS.has(k) && typeof v === 'string' && !logPayloads) out[k] = { length: v.length, sha256: digest(v) };
    else out[k] = redact(v, logPayloads, depth + 1);
  }
  return out;
}

export class ProtocolLog {
  constructor(
    private readonly sink: ProtocolLogSink | undefined,
    private readonly logPayloads = false,
  ) {}

  event(event: string, fields: Record<string, unknown> = {}): void {
    if (!this.sink) return;
    this.sink({ event, at: new Date().toISOString(), ...(redact(fields, this.logPayloads) as Record<string, unknown>) });
  }

  /** A message on a session's socket; `message` is the parsed JSON (or a note for unparsable frames). */
  message(sessionId: string, direction: 'in' | 'out', message: unknown): void {
    this.event('message', { session: sessionId, direction, message });
  }
}

/** A sink writing JSON lines to a stream (stderr by default in the CLI). */
export function jsonLines(write: (line: string) => void): ProtocolLogSink {
  return (entry) => write(`${JSON.stringify(entry)}\n`);
}
