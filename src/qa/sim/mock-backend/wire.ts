/**
 * The relay protocol as the backend sees it (docs/protocol.md §4.2–4.4), written independently of
 * the kiosk's own schemas: the mock is the other side of the wire, and a shared mistake would hide.
 *
 * Each client message is classified into one cause of spec §7.2 with a distinct `error` text, so QA can
 * tell from the kiosk's logs which rule a message broke.
 */
import { z } from 'zod';

/** Strict standard base64 with padding (RFC 4648 §4), canonical (zero pad bits). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$/;
const UUID = /^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32})$/;

const b64 = z.string().regex(BASE64, { error: 'not standard padded base64' });
const uuid = z.string().regex(UUID, { error: 'not a UUID' });
const role = z.enum(['central', 'peripheral']);

/** `ble_notified`, `ble_written`, `ble_read_request` carry no status in the spec; `ok` is tolerated. */
const noStatus = z.literal('ok').optional();

const schemas = {
  engage: z.object({ status: z.literal('ok'), namespaces: z.record(z.string().min(1), z.array(z.string().min(1))) }),
  qr_scanned: z.object({ status: z.literal('ok'), data: z.string() }),
  nfc_card_present: z.object({ status: z.literal('ok') }),
  nfc_rapdu: z.union([
    z.object({ status: z.literal('ok'), data: b64 }),
    z.object({ status: z.literal('error'), reason: z.string().min(1) }),
  ]),
  ble_connected: z.union([
    z.object({ status: z.literal('ok'), role }),
    z.object({ status: z.literal('error'), role, reason: z.string().min(1) }),
  ]),
  ble_notified: z.object({ status: noStatus, char: uuid, data: b64 }),
  ble_written: z.object({ status: noStatus, char: uuid, data: b64 }),
  ble_read_request: z.object({ status: noStatus, char: uuid }),
} as const;

export type ClientOp = keyof typeof schemas;
export const CLIENT_OPS = Object.keys(schemas) as ClientOp[];

export type ClientMessage =
  | { op: 'engage'; namespaces: Record<string, string[]> }
  | { op: 'qr_scanned'; data: string }
  | { op: 'nfc_card_present' }
  | { op: 'nfc_rapdu'; ok: true; data: Uint8Array }
  | { op: 'nfc_rapdu'; ok: false; reason: string }
  | { op: 'ble_connected'; ok: true; role: 'central' | 'peripheral' }
  | { op: 'ble_connected'; ok: false; role: 'central' | 'peripheral'; reason: string }
  | { op: 'ble_notified'; char: string; data: Uint8Array }
  | { op: 'ble_written'; char: string; data: Uint8Array }
  | { op: 'ble_read_request'; char: string };

/** The causes of a protocol `error` (spec §7.2), each with its own message text. */
export type ProtocolFault =
  | { cause: 'malformed_json'; text: string }
  | { cause: 'unknown_message'; text: string }
  | { cause: 'unknown_op'; text: string }
  | { cause: 'missing_field'; text: string }
  | { cause: 'invalid_field'; text: string }
  | { cause: 'out_of_sequence'; text: string }
  | { cause: 'nfc_retries_exhausted'; text: string }
  | { cause: 'fatal_pcsc'; text: string }
  | { cause: 'ble_setup_failed'; text: string }
  | { cause: 'reader_failure'; text: string }
  | { cause: 'fault_injected'; text: string };

export const faults = {
  malformedJson: (): ProtocolFault => ({ cause: 'malformed_json', text: 'malformed JSON: every message must be a UTF-8 JSON text frame' }),
  unknownMessage: (type: string): ProtocolFault => ({ cause: 'unknown_message', text: `unknown message type: ${type}` }),
  unknownOp: (op: string): ProtocolFault => ({ cause: 'unknown_op', text: `unknown op: ${op}` }),
  missingField: (op: string, field: string): ProtocolFault => ({
    cause: 'missing_field',
    text: `missing required field: ${field} (${op})`,
  }),
  invalidField: (op: string, field: string, why: string): ProtocolFault => ({
    cause: 'invalid_field',
    text: `invalid field: ${field} (${op}): ${why}`,
  }),
  outOfSequence: (op: string, phase: string): ProtocolFault => ({
    cause: 'out_of_sequence',
    text: `out-of-sequence message: ${op} in phase ${phase}`,
  }),
  nfcRetriesExhausted: (limit: number): ProtocolFault => ({
    cause: 'nfc_retries_exhausted',
    text: `NFC retries exhausted (${limit} allowed)`,
  }),
  fatalPcsc: (reason: string): ProtocolFault => ({ cause: 'fatal_pcsc', text: `fatal PC/SC error: ${reason}` }),
  bleSetupFailed: (reason: string): ProtocolFault => ({ cause: 'ble_setup_failed', text: `BLE setup failed on the kiosk: ${reason}` }),
  reader: (what: string): ProtocolFault => ({ cause: 'reader_failure', text: `reader: ${what}` }),
  injected: (what: string): ProtocolFault => ({ cause: 'fault_injected', text: `injected fault: ${what}` }),
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const bytes = (b64text: string): Uint8Array => Buffer.from(b64text, 'base64');
const short = (s: string): string => (/^[A-Za-z0-9_.-]{1,40}$/.test(s) ? s : '<not an identifier>');

export type ParsedClientMessage = { ok: true; message: ClientMessage } | { ok: false; fault: ProtocolFault };

/** Parses one text frame from the kiosk. */
export function parseClientFrame(text: string): ParsedClientMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, fault: faults.malformedJson() };
  }
  if (!isRecord(raw)) return { ok: false, fault: faults.malformedJson() };
  if (raw.type === undefined) return { ok: false, fault: faults.missingField('(message)', 'type') };
  if (raw.type !== 'step_result')
    return { ok: false, fault: faults.unknownMessage(typeof raw.type === 'string' ? short(raw.type) : typeof raw.type) };
  if (raw.op === undefined) return { ok: false, fault: faults.missingField('step_result', 'op') };
  if (typeof raw.op !== 'string' || !(CLIENT_OPS as string[]).includes(raw.op)) {
    return { ok: false, fault: faults.unknownOp(typeof raw.op === 'string' ? short(raw.op) : typeof raw.op) };
  }
  const op = raw.op as ClientOp;
  const parsed = schemas[op].safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.length ? issue.path.join('.') : 'status';
    // A union reports its branches; the first missing key is the clearest thing to say.
    const missing = parsed.error.issues.find((i) => i.code === 'invalid_type' && i.message.includes('undefined'));
    if (missing) return { ok: false, fault: faults.missingField(op, missing.path.join('.') || field) };
    return { ok: false, fault: faults.invalidField(op, field, issue?.message ?? 'invalid') };
  }
  return { ok: true, message: toMessage(op, parsed.data) };
}

function toMessage(op: ClientOp, d: Record<string, unknown>): ClientMessage {
  switch (op) {
    case 'engage':
      return { op, namespaces: d.namespaces as Record<string, string[]> };
    case 'qr_scanned':
      return { op, data: d.data as string };
    case 'nfc_card_present':
      return { op };
    case 'nfc_rapdu':
      return d.status === 'ok' ? { op, ok: true, data: bytes(d.data as string) } : { op, ok: false, reason: d.reason as string };
    case 'ble_connected':
      return d.status === 'ok'
        ? { op, ok: true, role: d.role as 'central' | 'peripheral' }
        : { op, ok: false, role: d.role as 'central' | 'peripheral', reason: d.reason as string };
    case 'ble_notified':
    case 'ble_written':
      return { op, char: d.char as string, data: bytes(d.data as string) };
    case 'ble_read_request':
      return { op, char: d.char as string };
  }
}

// ---------------------------------------------------------------- backend → client

export interface BleModeWire {
  role: 'central' | 'peripheral';
  service_uuid: string;
  characteristics: {
    state: CharacteristicWire;
    c2s: CharacteristicWire;
    s2c: CharacteristicWire;
    ident?: CharacteristicWire;
  };
}

export interface CharacteristicWire {
  uuid: string;
  operations: ('read' | 'write_without_response' | 'notify')[];
  permissions: ('readable' | 'writeable')[];
}

/** Outcome of `complete` (spec §2.4), JSON-safe. */
export interface OutcomeWire {
  response: Record<string, Record<string, unknown>>;
  doc_types: string[];
  issuer_authentication: 'Valid' | 'Invalid' | 'Unchecked';
  device_authentication: 'Valid' | 'Invalid' | 'Unchecked';
  errors: Record<string, unknown>;
  warnings: Record<string, unknown>;
}

export type BackendMessage =
  | { type: 'step_request'; op: 'nfc_apdu'; params: { data: string } }
  | { type: 'step_request'; op: 'nfc_await_card'; params: Record<string, never> }
  | { type: 'step_request'; op: 'ble_exchange'; params: { modes: BleModeWire[] } }
  | { type: 'step_request'; op: 'ble_write'; params: { char: string; data: string } }
  | { type: 'step_request'; op: 'ble_read_response'; params: { data: string } }
  | { type: 'complete'; outcome: OutcomeWire }
  | { type: 'error'; message: string };

export const base64 = (data: Uint8Array): string => Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');

export const backend = {
  nfcApdu: (apdu: Uint8Array): BackendMessage => ({ type: 'step_request', op: 'nfc_apdu', params: { data: base64(apdu) } }),
  nfcAwaitCard: (): BackendMessage => ({ type: 'step_request', op: 'nfc_await_card', params: {} }),
  bleExchange: (modes: BleModeWire[]): BackendMessage => ({ type: 'step_request', op: 'ble_exchange', params: { modes } }),
  bleWrite: (char: string, data: Uint8Array): BackendMessage => ({
    type: 'step_request',
    op: 'ble_write',
    params: { char, data: base64(data) },
  }),
  bleReadResponse: (data: Uint8Array): BackendMessage => ({
    type: 'step_request',
    op: 'ble_read_response',
    params: { data: base64(data) },
  }),
  complete: (outcome: OutcomeWire): BackendMessage => ({ type: 'complete', outcome }),
  error: (fault: ProtocolFault): BackendMessage => ({ type: 'error', message: fault.text }),
};

/** Recoverable PC/SC variants (spec §7.3); every other `reason` is fatal. */
export const RECOVERABLE_PCSC = new Set(['RemovedCard', 'ResetCard', 'UnpoweredCard', 'UnresponsiveCard', 'NotTransacted', 'CommError']);

/** Case-insensitive UUID comparison (spec §2.5), dashes optional. */
export const sameUuid = (a: string, b: string): boolean => a.replaceAll('-', '').toLowerCase() === b.replaceAll('-', '').toLowerCase();
