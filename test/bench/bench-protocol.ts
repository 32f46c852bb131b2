/**
 * Protocol fixtures of the relay benchmark, shared by the bench process (relay-bench.ts) and the memory
 * phase's backend child process (memory-backend-child.ts): the central BLE mode, prepared backend
 * messages, the instant card, and the messages of the scripted full verification and of the child's
 * IPC channel.
 */

export const b64 = (bytes: Uint8Array | readonly number[]): string => Buffer.from(bytes).toString('base64');

export const RESPONSE_DATA_BYTES = 32; // response APDU: 32 data bytes + SW1 SW2

export const MODE_CENTRAL = {
  role: 'central',
  service_uuid: '6c1e2f3a-9b8d-4e5f-a1b2-c3d4e5f60718',
  characteristics: {
    state: { uuid: '00000001-a123-48ce-896b-4c76973373e6', operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
    c2s: { uuid: '00000002-a123-48ce-896b-4c76973373e6', operations: ['write_without_response'], permissions: ['writeable'] },
    s2c: { uuid: '00000003-a123-48ce-896b-4c76973373e6', operations: ['notify'], permissions: [] },
  },
} as const;
export const STATE_UUID = MODE_CENTRAL.characteristics.state.uuid;
export const C2S_UUID = MODE_CENTRAL.characteristics.c2s.uuid;
export const S2C_UUID = MODE_CENTRAL.characteristics.s2c.uuid;

export const OUTCOME = {
  response: { 'org.iso.18013.5.1': { age_over_21: true } },
  doc_types: ['org.iso.18013.5.1.mDL'],
  issuer_authentication: 'Valid',
  device_authentication: 'Valid',
  errors: {},
  warnings: {},
};

export const stepRequest = (op: string, params: Record<string, unknown>): string => JSON.stringify({ type: 'step_request', op, params });
export const BLE_EXCHANGE = stepRequest('ble_exchange', { modes: [MODE_CENTRAL] });
export const WRITE_STATE_START = stepRequest('ble_write', { char: STATE_UUID, data: b64([0x01]) });
export const WRITE_STATE_END = stepRequest('ble_write', { char: STATE_UUID, data: b64([0x02]) });
export const C2S_REQUEST = new Uint8Array(180).fill(0x33);
export const WRITE_C2S = stepRequest('ble_write', { char: C2S_UUID, data: b64(C2S_REQUEST) });
export const COMPLETE = JSON.stringify({ type: 'complete', outcome: OUTCOME });
export const RESET = JSON.stringify({ type: 'error', message: 'bench: session reset' });

/** READ BINARY at offset `i` (the offset makes every command, and so its response, distinct). */
export function apduCommand(i: number): Uint8Array {
  return Uint8Array.of(0x00, 0xb0, (i >> 8) & 0xff, i & 0xff, RESPONSE_DATA_BYTES);
}

/** The instant card: echoes the offset, pads, appends 90 00. Shared by the kiosk's fake card and the floor. */
export function instantCard(command: Uint8Array): Uint8Array {
  const out = new Uint8Array(RESPONSE_DATA_BYTES + 2).fill(0x5a);
  out[0] = command[2] ?? 0;
  out[1] = command[3] ?? 0;
  out[RESPONSE_DATA_BYTES] = 0x90;
  out[RESPONSE_DATA_BYTES + 1] = 0x00;
  return out;
}

// ---------------------------------------------------------------- the scripted full verification

/**
 * One full verification as the memory phase scripts it: NFC handover of `FULL_APDUS` APDUs → ble_exchange
 * (central) → ble_connected → ble_write 0x01 on state + one request on c2s → the phone answers with
 * `FULL_NOTIFICATIONS` s2c notifications (forwarded as ble_notified) → ble_write 0x02 on state → complete.
 */
export const FULL_APDUS = 3;
export const FULL_NOTIFICATIONS = 3;
export const FULL_NOTIFICATION_BYTES = 100;
/** Notification `i` of a full verification: 100 bytes of the value `i`. */
export const fullNotification = (i: number): Uint8Array => new Uint8Array(FULL_NOTIFICATION_BYTES).fill(i);

// ---------------------------------------------------------------- IPC between the bench and the child

/** Child → bench. */
export type ChildReport =
  | { readonly kind: 'ready'; readonly baseUrl: string; readonly apiKey: string; readonly pid: number }
  | { readonly kind: 'failure'; readonly detail: string }
  | { readonly kind: 'counts'; readonly completed: number; readonly failed: number; readonly connections: number };

/** Bench → child. */
export type ChildCommand = { readonly kind: 'counts' } | { readonly kind: 'stop' };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isChildReport(value: unknown): value is ChildReport {
  if (!isRecord(value)) return false;
  switch (value.kind) {
    case 'ready':
      return typeof value.baseUrl === 'string' && typeof value.apiKey === 'string' && typeof value.pid === 'number';
    case 'failure':
      return typeof value.detail === 'string';
    case 'counts':
      return typeof value.completed === 'number' && typeof value.failed === 'number' && typeof value.connections === 'number';
    default:
      return false;
  }
}

export function isChildCommand(value: unknown): value is ChildCommand {
  return isRecord(value) && (value.kind === 'counts' || value.kind === 'stop');
}
