/**
 * Turns one received WebSocket frame into a typed backend message, or a categorised violation.
 * Categories drive the close code and the structured warning; `detail` never contains payload bytes.
 */
import type { z } from 'zod';
import { parseCanonicalStep } from './canonical-step.js';
import { escapePeerText, peerKey } from '../peer-text.js';
import { isRecord } from '../is-record.js';
import { isUuid } from './uuid.js';
import {
  BACKEND_OPS,
  BackendParamsSchemas,
  isBase64Within,
  MAX_APDU_BYTES,
  MAX_BLE_READ_BYTES,
  MAX_BLE_WRITE_BYTES,
  CompleteMessage,
  ErrorMessage,
  type BackendMessage,
  type BackendOp,
  type StepRequest,
} from './messages.js';

export type ViolationKind =
  | 'binary_frame'
  | 'malformed_json'
  | 'not_an_object'
  | 'unknown_type'
  | 'unknown_op'
  | 'invalid_fields'
  | 'invalid_base64'
  | 'out_of_sequence'
  | 'message_too_large'
  /** More messages arrived unread than the kiosk queues (relay-channel.ts). */
  | 'message_flood';

export interface ProtocolViolation {
  readonly kind: ViolationKind;
  /** Human-readable, free of payload data: field paths and expectations only. */
  readonly detail: string;
  /** `type`/`op` of the offending message when they could be read (for logs). */
  readonly type?: string;
  readonly op?: string;
}

export type ParseResult = { ok: true; message: BackendMessage } | { ok: false; violation: ProtocolViolation };

function describeIssues(error: z.ZodError): { kind: ViolationKind; detail: string } {
  const base64 = error.issues.some((i) => i.message.includes('base64'));
  const detail = error.issues
    .slice(0, 5)
    // Path segments are the backend's own keys: escaped, so none can inject a line into a log or terminal.
    .map((i) => `${i.path.length > 0 ? i.path.map(peerKey).join('.') : '(root)'}: ${escapePeerText(i.message)}`)
    .join('; ');
  return { kind: base64 ? 'invalid_base64' : 'invalid_fields', detail };
}

/** Echoes a `type`/`op` into logs only when it looks like an identifier, so no payload can leak through. */
function stringOrUndefined(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  return /^[A-Za-z0-9_.-]{1,40}$/.test(v) ? v : '<not an identifier>';
}

/**
 * The per-message path (APDUs, BLE writes) checked by hand: the same rules as the schemas, a fraction of
 * the cost. Anything that does not pass goes through the schema for a precise violation.
 */
const FAST_MAX_BYTES: Record<BackendOp, number> = {
  nfc_apdu: MAX_APDU_BYTES,
  ble_read_response: MAX_BLE_READ_BYTES,
  ble_write: MAX_BLE_WRITE_BYTES,
  nfc_await_card: 0,
  ble_exchange: 0,
};

function fastParams(op: BackendOp, params: Record<string, unknown>): Record<string, string> | undefined {
  const { data } = params;
  if (typeof data !== 'string' || !isBase64Within(data, FAST_MAX_BYTES[op])) return undefined;
  if (op === 'nfc_apdu' || op === 'ble_read_response') return { data };
  if (op === 'ble_write' && typeof params.char === 'string' && isUuid(params.char)) return { char: params.char, data };
  return undefined;
}

export function parseBackendText(text: string): ParseResult {
  const canonical = parseCanonicalStep(text);
  if (canonical) return { ok: true, message: canonical };
  return parseBackendJson(text);
}

/** The general parser: any JSON spelling, each field checked (by hand on the per-message path, else by its schema). */
export function parseBackendJson(text: string): ParseResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, violation: { kind: 'malformed_json', detail: 'frame is not valid JSON' } };
  }
  if (!isRecord(raw)) {
    return { ok: false, violation: { kind: 'not_an_object', detail: 'message is not a JSON object' } };
  }
  switch (raw.type) {
    case 'step_request': {
      const type = 'step_request';
      if (typeof raw.op !== 'string' || !(BACKEND_OPS as readonly string[]).includes(raw.op)) {
        const op = stringOrUndefined(raw.op);
        return {
          ok: false,
          violation: { kind: 'unknown_op', detail: `unknown step_request op`, type, ...(op ? { op } : {}) },
        };
      }
      const knownOp = raw.op as BackendOp;
      if (!isRecord(raw.params)) {
        return {
          ok: false,
          violation: { kind: 'invalid_fields', detail: 'params: expected an object', type, op: knownOp },
        };
      }
      const fast = fastParams(knownOp, raw.params);
      if (fast) return { ok: true, message: { type: 'step_request', op: knownOp, params: fast } as StepRequest };
      const parsed = BackendParamsSchemas[knownOp].safeParse(raw.params);
      if (!parsed.success) {
        const { kind, detail } = describeIssues(parsed.error);
        return { ok: false, violation: { kind, detail: `params.${detail}`, type, op: knownOp } };
      }
      return { ok: true, message: { type: 'step_request', op: knownOp, params: parsed.data } as StepRequest };
    }
    case 'complete':
    case 'error': {
      const schema = raw.type === 'complete' ? CompleteMessage : ErrorMessage;
      const parsed = schema.safeParse(raw);
      if (!parsed.success) {
        const { kind, detail } = describeIssues(parsed.error);
        return { ok: false, violation: { kind, detail, type: raw.type } };
      }
      return { ok: true, message: parsed.data };
    }
    default: {
      const type = stringOrUndefined(raw.type);
      return {
        ok: false,
        violation: { kind: 'unknown_type', detail: 'unknown message type', ...(type ? { type } : {}) },
      };
    }
  }
}
