/**
 * Relay conformance, bad input from the backend (spec §4.2 text frames of JSON with standard padded base64,
 * §4.4 message shapes, §7.2 "unknown message or op, out-of-sequence message, missing required field,
 * malformed JSON"). Whatever the phase, the kiosk logs a structured `protocol_violation` warning without the
 * payload, closes the socket with a fitting close code (binary 1003, malformed JSON or invalid base64 1007,
 * any other violation 1002), shows an error, and the next verification works on the same session.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { FakeConnection } from '../support/fake-backend.js';
import { NfcTransmitError } from '../support/fake-devices.js';
import { startHarness, type Harness } from '../support/harness.js';
import {
  CENTRAL_CHARS,
  OUTCOME,
  PERIPHERAL_CHARS,
  armed,
  b64,
  centralMode,
  connectCentral,
  connectPeripheral,
  expectFailure,
  expectRecoveryOnSameSession,
  mark,
  peripheralMode,
  scanQr,
  stackSpelling,
  u8,
  viewAfter,
  violationLogs,
} from '../support/relay-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** Text that would be a leak if it showed up in a log line. */
const MARKER = 'PAYLOAD-MARKER-7f3a';
const MARKER_BYTES = [...Buffer.from(`${MARKER}!`), 0xfb, 0xff, 0xfe]; // 22 bytes: padding, and + and / in base64
const GOOD_B64 = b64(MARKER_BYTES);

/** The same bytes in encodings the spec does not allow (RFC 4648 §4 standard alphabet with padding only). */
const BAD_BASE64: Record<string, string> = {
  'missing padding': GOOD_B64.replace(/=+$/, ''),
  'URL-safe alphabet': GOOD_B64.replaceAll('+', '-').replaceAll('/', '_'),
  'non-canonical (non-zero pad bits)': `${GOOD_B64.slice(0, -3)}/==`,
  'embedded whitespace': `${GOOD_B64.slice(0, 8)} ${GOOD_B64.slice(8)}`,
  'padding in the middle': `${GOOD_B64.slice(0, 4)}=${GOOD_B64.slice(5)}`,
};

/** 3 MiB of bytes, 4 MiB of valid base64: under the 16 MiB frame cap, far over any field's bound. */
const HUGE_B64 = Buffer.alloc(3 * 1024 * 1024, 0x5a).toString('base64');

/** The outcome without one of its fields. */
function withoutField<T extends object>(outcome: T, field: keyof T): Partial<T> {
  const copy: Partial<T> = { ...outcome };
  // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- the field under test
  delete copy[field];
  return copy;
}

/** A `complete` whose response nests `levels` arrays (as text: building it as an object would be slow). */
function deepComplete(levels: number): string {
  const outcome = JSON.stringify({ ...OUTCOME, response: { 'org.iso.18013.5.1.mDL': { deep: '@' } } });
  return JSON.stringify({ type: 'complete', outcome: JSON.parse(outcome) as unknown }).replace(
    '"@"',
    `${'['.repeat(levels)}${']'.repeat(levels)}`,
  );
}

type Phase = 'idle' | 'qr_engaged' | 'nfc_handover' | 'awaiting_card' | 'ble_setup' | 'ble_transfer' | 'peripheral_read_pending';

interface Setup {
  readonly conn: FakeConnection;
  /** The phone's read that is pending (peripheral_read_pending only). */
  readonly read?: Promise<Uint8Array>;
}

async function reach(h: Harness, phase: Phase): Promise<Setup> {
  const conn = await armed(h);
  switch (phase) {
    case 'idle':
      return { conn };
    case 'qr_engaged':
      await scanQr(h, conn);
      return { conn };
    case 'nfc_handover':
      h.nfc.tap(() => u8(0x90, 0x00));
      await conn.expect('nfc_card_present');
      return { conn };
    case 'awaiting_card': {
      h.nfc.tap(() => new NfcTransmitError('RemovedCard'));
      await conn.expect('nfc_card_present');
      conn.stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) });
      await conn.expect('nfc_rapdu');
      const from = mark(h);
      conn.stepRequest('nfc_await_card', {});
      await viewAfter(h, from, (v) => v.phase === 'awaiting_card');
      return { conn };
    }
    case 'ble_setup': {
      h.central.behaviour = { hang: true };
      await scanQr(h, conn);
      const from = mark(h);
      conn.stepRequest('ble_exchange', { modes: [centralMode()] });
      await viewAfter(h, from, (v) => v.phase === 'ble_connecting');
      return { conn };
    }
    case 'ble_transfer':
      await scanQr(h, conn);
      await connectCentral(h, conn);
      return { conn };
    case 'peripheral_read_pending': {
      await scanQr(h, conn);
      const session = await connectPeripheral(h, conn);
      const read = session.read(stackSpelling(PERIPHERAL_CHARS.ident));
      read.catch(() => undefined); // checked by the test
      await conn.expect('ble_read_request');
      return { conn, read };
    }
  }
}

interface Case {
  readonly name: string;
  readonly phase: Phase;
  readonly send: (conn: FakeConnection) => void;
  readonly kind: string;
  readonly closeCode: number;
}

const step = (op: string, params: unknown) => (conn: FakeConnection) => conn.send({ type: 'step_request', op, params });
const raw = (text: string) => (conn: FakeConnection) => conn.sendRaw(text);

const CASES: Case[] = [
  // Frames that are not JSON text.
  {
    name: 'malformed JSON',
    phase: 'qr_engaged',
    send: raw(`{"type":"step_request","op":"ble_exchange","params":{"x":"${MARKER}"`),
    kind: 'malformed_json',
    closeCode: 1007,
  },
  {
    name: 'malformed JSON (trailing garbage)',
    phase: 'nfc_handover',
    send: raw(`{"type":"error","message":"x"} ${MARKER}`),
    kind: 'malformed_json',
    closeCode: 1007,
  },
  {
    name: 'binary frame',
    phase: 'qr_engaged',
    send: (conn) => conn.sendBinary(Buffer.from(JSON.stringify({ type: 'step_request', op: 'ble_exchange', params: { m: MARKER } }))),
    kind: 'binary_frame',
    closeCode: 1003,
  },
  {
    name: 'binary frame during the BLE transfer',
    phase: 'ble_transfer',
    send: (conn) => conn.sendBinary(Uint8Array.from(MARKER_BYTES)),
    kind: 'binary_frame',
    closeCode: 1003,
  },
  {
    name: 'JSON that is not an object',
    phase: 'qr_engaged',
    send: raw(`["step_request","ble_exchange","${MARKER}"]`),
    kind: 'not_an_object',
    closeCode: 1002,
  },
  // Unknown type or op.
  {
    name: 'unknown type',
    phase: 'qr_engaged',
    send: (conn) => conn.send({ type: 'step_response', op: 'ble_exchange', params: { m: MARKER } }),
    kind: 'unknown_type',
    closeCode: 1002,
  },
  {
    name: 'missing type',
    phase: 'nfc_handover',
    send: (conn) => conn.send({ op: 'nfc_apdu', params: { data: GOOD_B64 } }),
    kind: 'unknown_type',
    closeCode: 1002,
  },
  { name: 'unknown op', phase: 'qr_engaged', send: step('ble_scan', { m: MARKER }), kind: 'unknown_op', closeCode: 1002 },
  {
    name: 'unknown op (a client op echoed back)',
    phase: 'nfc_handover',
    send: step('nfc_rapdu', { data: GOOD_B64 }),
    kind: 'unknown_op',
    closeCode: 1002,
  },
  {
    name: 'missing op',
    phase: 'qr_engaged',
    send: (conn) => conn.send({ type: 'step_request', params: { m: MARKER } }),
    kind: 'unknown_op',
    closeCode: 1002,
  },
  // Missing or mistyped fields.
  {
    name: 'missing params',
    phase: 'qr_engaged',
    send: (conn) => conn.send({ type: 'step_request', op: 'ble_exchange' }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'ble_exchange without modes',
    phase: 'qr_engaged',
    send: step('ble_exchange', { m: MARKER }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'ble_exchange with mistyped modes',
    phase: 'qr_engaged',
    send: step('ble_exchange', { modes: MARKER }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'ble_exchange with an unknown role',
    phase: 'qr_engaged',
    send: step('ble_exchange', { modes: [{ ...centralMode(), role: 'observer' }] }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'ble_exchange with a mode missing a characteristic',
    phase: 'qr_engaged',
    send: step('ble_exchange', { modes: [{ ...centralMode(), characteristics: { state: centralMode().characteristics.state } }] }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  { name: 'nfc_apdu without data', phase: 'nfc_handover', send: step('nfc_apdu', {}), kind: 'invalid_fields', closeCode: 1002 },
  {
    name: 'nfc_apdu with mistyped data (number)',
    phase: 'nfc_handover',
    send: step('nfc_apdu', { data: 7 }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'ble_write without char',
    phase: 'ble_transfer',
    send: step('ble_write', { data: GOOD_B64 }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'ble_write with a char that is not a UUID',
    phase: 'ble_transfer',
    send: step('ble_write', { char: 'state', data: GOOD_B64 }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'error without message',
    phase: 'nfc_handover',
    send: (conn) => conn.send({ type: 'error', text: MARKER }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'complete with a mistyped outcome',
    phase: 'ble_transfer',
    send: (conn) => conn.send({ type: 'complete', outcome: { ...OUTCOME, issuer_authentication: MARKER } }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  // Without the authentication results a `complete` says nothing about authenticity: never verified.
  ...(['issuer_authentication', 'device_authentication'] as const).map(
    (field): Case => ({
      name: `complete without ${field}`,
      phase: 'ble_transfer',
      send: (conn) => conn.send({ type: 'complete', outcome: withoutField(OUTCOME, field) }),
      kind: 'invalid_fields',
      closeCode: 1002,
    }),
  ),
  {
    name: 'complete without either authentication result',
    phase: 'ble_transfer',
    send: (conn) =>
      conn.send({ type: 'complete', outcome: withoutField(withoutField(OUTCOME, 'issuer_authentication'), 'device_authentication') }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  // Invalid base64 (spec §4.2: standard base64 with padding).
  ...Object.entries(BAD_BASE64).flatMap(([what, data]): Case[] => [
    {
      name: `invalid base64 in nfc_apdu: ${what}`,
      phase: 'nfc_handover',
      send: step('nfc_apdu', { data }),
      kind: 'invalid_base64',
      closeCode: 1007,
    },
    {
      name: `invalid base64 in ble_write: ${what}`,
      phase: 'ble_transfer',
      send: step('ble_write', { char: CENTRAL_CHARS.c2s, data }),
      kind: 'invalid_base64',
      closeCode: 1007,
    },
  ]),
  {
    name: 'invalid base64 in the ble_read_response to a pending read',
    phase: 'peripheral_read_pending',
    send: step('ble_read_response', { data: BAD_BASE64['URL-safe alphabet'] }),
    kind: 'invalid_base64',
    closeCode: 1007,
  },
  // Hostile sizes (the spec shows no limits, §8: the kiosk's bounds in messages.ts and json-bounds.ts).
  // A valid 4 MB base64 field once overflowed the stack and ended the process, even while idle.
  {
    name: 'a 4 MB nfc_apdu (valid base64)',
    phase: 'nfc_handover',
    send: step('nfc_apdu', { data: HUGE_B64 }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'an nfc_apdu one byte over the extended-length maximum',
    phase: 'nfc_handover',
    send: step('nfc_apdu', { data: Buffer.alloc(65_545, 1).toString('base64') }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'a 4 MB ble_write during the transfer',
    phase: 'ble_transfer',
    send: step('ble_write', { char: CENTRAL_CHARS.c2s, data: HUGE_B64 }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'a 4 MB ble_write while idle',
    phase: 'idle',
    send: step('ble_write', { char: CENTRAL_CHARS.c2s, data: HUGE_B64 }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'a ble_read_response longer than a GATT value (513 bytes)',
    phase: 'peripheral_read_pending',
    send: step('ble_read_response', { data: Buffer.alloc(513, 1).toString('base64') }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'complete nested 100,000 levels deep',
    phase: 'ble_transfer',
    send: raw(deepComplete(100_000)),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  { name: 'complete nested 33 levels deep', phase: 'ble_transfer', send: raw(deepComplete(33)), kind: 'invalid_fields', closeCode: 1002 },
  {
    name: 'complete with 200,000 values',
    phase: 'ble_transfer',
    send: (conn) => conn.send({ type: 'complete', outcome: { ...OUTCOME, warnings: { w: new Array<number>(200_000).fill(0) } } }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  {
    name: 'error with a 20,000-character message',
    phase: 'nfc_handover',
    send: (conn) => conn.send({ type: 'error', message: MARKER.repeat(1_200) }),
    kind: 'invalid_fields',
    closeCode: 1002,
  },
  // Out of sequence (spec §3, §7.2).
  {
    name: 'out of sequence: ble_write before ble_connected',
    phase: 'ble_setup',
    send: step('ble_write', { char: CENTRAL_CHARS.state, data: GOOD_B64 }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: unsolicited ble_read_response',
    phase: 'ble_transfer',
    send: step('ble_read_response', { data: GOOD_B64 }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: nfc_apdu during the BLE transfer',
    phase: 'ble_transfer',
    send: step('nfc_apdu', { data: GOOD_B64 }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: a second ble_exchange during the BLE transfer',
    phase: 'ble_transfer',
    send: step('ble_exchange', { modes: [centralMode()] }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: a second ble_exchange during BLE setup',
    phase: 'ble_setup',
    send: step('ble_exchange', { modes: [peripheralMode()] }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: nfc_apdu after qr_scanned',
    phase: 'qr_engaged',
    send: step('nfc_apdu', { data: GOOD_B64 }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: nfc_await_card after qr_scanned',
    phase: 'qr_engaged',
    send: step('nfc_await_card', {}),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: ble_write during the NFC handover',
    phase: 'nfc_handover',
    send: step('ble_write', { char: CENTRAL_CHARS.state, data: GOOD_B64 }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: ble_read_response during the NFC handover',
    phase: 'nfc_handover',
    send: step('ble_read_response', { data: GOOD_B64 }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: nfc_apdu while awaiting the card',
    phase: 'awaiting_card',
    send: step('nfc_apdu', { data: GOOD_B64 }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  // While idle (engaged, before any tap or scan).
  {
    name: 'out of sequence: complete while idle',
    phase: 'idle',
    send: (conn) => conn.send({ type: 'complete', outcome: OUTCOME }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: nfc_apdu while idle',
    phase: 'idle',
    send: step('nfc_apdu', { data: GOOD_B64 }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  {
    name: 'out of sequence: ble_exchange while idle',
    phase: 'idle',
    send: step('ble_exchange', { modes: [centralMode()] }),
    kind: 'out_of_sequence',
    closeCode: 1002,
  },
  { name: 'malformed JSON while idle', phase: 'idle', send: raw(`{${MARKER}`), kind: 'malformed_json', closeCode: 1007 },
  {
    name: 'binary frame while idle',
    phase: 'idle',
    send: (conn) => conn.sendBinary(Uint8Array.from(MARKER_BYTES)),
    kind: 'binary_frame',
    closeCode: 1003,
  },
];

describe('Bad input from the backend', () => {
  const titled = CASES.map((c): [string, Case] => [
    `§7.2 bad input (${c.phase}): ${c.name} → protocol_violation warning without payload, close ${c.closeCode}, error shown, next verification works`,
    c,
  ]);
  it.each(titled)('%s', async (_title, c) => {
    h = await startHarness({ config: { session: { offlineBackoffMinMs: 50 } } });
    const { conn, read } = await reach(h, c.phase);
    const from = mark(h);
    c.send(conn);

    // Whatever the backend sent, the kiosk never showed a verified outcome for it (fail closed).
    const verifiedViews = (): number => h?.views.filter((v) => v.outcome?.verdict === 'verified').length ?? 0;
    const verifiedBefore = verifiedViews();
    if (c.phase === 'idle') {
      // No verification runs: the kiosk closes the engaged socket, says so, and re-arms.
      expect((await conn.closed).code).toBe(c.closeCode);
      await viewAfter(h, from, (v) => v.error !== null);
      expect(h.reports).toHaveLength(0);
    } else {
      const report = await expectFailure(h, conn, { result: 'violation', code: 'protocol_violation', closeCode: c.closeCode });
      expect(report.error?.detail).toContain(c.kind);
    }
    if (read) await expect(read).rejects.toThrow();
    expect(verifiedViews()).toBe(verifiedBefore);

    const warnings = violationLogs(h);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, event: 'protocol_violation', kind: c.kind });
    expect(warnings[0]).not.toHaveProperty('data');
    expect(warnings[0]).not.toHaveProperty('params');
    // No payload anywhere in the logs: neither the marker nor the bad base64 text.
    const logText = h.logs.text();
    expect(logText).not.toContain(MARKER);
    expect(logText).not.toContain(GOOD_B64.slice(0, 12));

    h.central.behaviour = {};
    h.nfc.lift();
    await expectRecoveryOnSameSession(h, conn);
  });
});

describe('A backend that floods the socket', () => {
  it('5,000 ble_writes while the phone takes none: one message_flood violation, close 1008, memory bounded, next verification works', async () => {
    h = await startHarness({ config: { session: { offlineBackoffMinMs: 50 } } });
    const conn = await armed(h);
    await scanQr(h, conn);
    // The phone accepts the first write and then stalls (a slow phone), so every later write queues.
    let release: (() => void) | undefined;
    h.central.behaviour = { onWrite: () => new Promise<void>((resolve) => (release = resolve)) };
    await connectCentral(h, conn);
    for (let i = 0; i < 5_000; i++) conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: GOOD_B64 });
    const report = await expectFailure(h, conn, { result: 'violation', code: 'protocol_violation', closeCode: 1008 });
    expect(report.error?.detail).toContain('message_flood');
    release?.();
    expect(violationLogs(h)).toEqual([expect.objectContaining({ event: 'protocol_violation', kind: 'message_flood' })]);
    expect(h.logs.text()).not.toContain(MARKER);
    h.central.behaviour = {};
    await expectRecoveryOnSameSession(h, conn);
  });
});
