/**
 * Fixtures for the relay conformance suite (test/conformance/relay-*.test.ts): BLE modes as the backend
 * sends them in `ble_exchange`, a valid `complete` outcome, and small steps shared by the tests (arm,
 * scan or tap, reach the BLE transfer, finish, check a failure and the recovery on the same session).
 *
 * The backend spells UUIDs in upper case with dashes; the fake phone reports them the way BLE stacks do
 * (lower case, no dashes), so every test also checks the case-insensitive matching of spec §2.5.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { KioskView } from '../../src/common/kiosk-view.js';
import type { VerificationReport } from '../../src/kiosk/kiosk.js';
import type { FakeConnection, ReceivedMessage } from './fake-backend.js';
import type { FakeCentralLink, FakePeripheralSession } from './fake-devices.js';
import type { Harness } from './harness.js';

export const b64 = (bytes: readonly number[] | Uint8Array): string => Buffer.from(bytes).toString('base64');
export const u8 = (...bytes: number[]): Uint8Array => Uint8Array.from(bytes);
export const arr = (bytes: Uint8Array): number[] => Array.from(bytes);

/** The ISO 18013-5 characteristic UUIDs of mdoc peripheral server mode (the kiosk is central). */
export const CENTRAL_CHARS = {
  state: '00000001-A123-48CE-896B-4C76973373E6',
  c2s: '00000002-A123-48CE-896B-4C76973373E6',
  s2c: '00000003-A123-48CE-896B-4C76973373E6',
} as const;

/** The ISO 18013-5 characteristic UUIDs of mdoc central client mode (the kiosk is peripheral). */
export const PERIPHERAL_CHARS = {
  state: '00000005-A123-48CE-896B-4C76973373E6',
  c2s: '00000006-A123-48CE-896B-4C76973373E6',
  s2c: '00000007-A123-48CE-896B-4C76973373E6',
  ident: '00000008-A123-48CE-896B-4C76973373E6',
} as const;

/** How a BLE stack (noble, bleno) prints a UUID: lower case, no dashes. */
export const stackSpelling = (uuid: string): string => uuid.replaceAll('-', '').toLowerCase();

export const sameUuid = (a: string, b: string): boolean => stackSpelling(a) === stackSpelling(b);

export interface ModeJson {
  readonly role: 'central' | 'peripheral';
  readonly service_uuid: string;
  readonly characteristics: Record<string, { uuid: string; operations: string[]; permissions: string[] }>;
}

export function centralMode(serviceUuid: string = randomUUID().toUpperCase()): ModeJson {
  return {
    role: 'central',
    service_uuid: serviceUuid,
    characteristics: {
      state: { uuid: CENTRAL_CHARS.state, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
      c2s: { uuid: CENTRAL_CHARS.c2s, operations: ['write_without_response'], permissions: ['writeable'] },
      s2c: { uuid: CENTRAL_CHARS.s2c, operations: ['notify'], permissions: [] },
    },
  };
}

export function peripheralMode(serviceUuid: string = randomUUID().toUpperCase()): ModeJson {
  return {
    role: 'peripheral',
    service_uuid: serviceUuid,
    characteristics: {
      state: { uuid: PERIPHERAL_CHARS.state, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
      c2s: { uuid: PERIPHERAL_CHARS.c2s, operations: ['write_without_response'], permissions: ['writeable'] },
      s2c: { uuid: PERIPHERAL_CHARS.s2c, operations: ['notify'], permissions: [] },
      ident: { uuid: PERIPHERAL_CHARS.ident, operations: ['read'], permissions: ['readable'] },
    },
  };
}

export const OUTCOME = {
  response: { 'org.iso.18013.5.1': { age_over_21: true } },
  doc_types: ['org.iso.18013.5.1.mDL'],
  issuer_authentication: 'Valid',
  device_authentication: 'Valid',
  errors: {},
  warnings: {},
} as const;

export const QR_TEXT = 'mdoc:owBjMS4wAYIB2BhYS6QBAiABIVggx8b0kVbPWi7fFRVq3QnvVA3hRAW0kBJfRbsh0lVe3xE';

let qrCounter = 0;
/**
 * A QR engagement not shown before. A device engagement is single-use (fresh ephemeral key), and the kiosk
 * ignores a repeat of one it already used, so every scan of a new verification needs its own text.
 */
export function freshQr(): string {
  qrCounter++;
  return `${QR_TEXT}${qrCounter.toString(36).toUpperCase()}`;
}

/** Matches any non-empty reason text (typed `unknown` so it can sit in an expected object without `any`). */
export const NON_EMPTY_REASON: unknown = expect.stringMatching(/\S/);

/** Element `i` of an array, or a failing assertion. */
export function at<T>(items: readonly T[], i: number): T {
  const item = items[i];
  if (item === undefined) throw new Error(`no element ${i} (length ${items.length})`);
  return item;
}

/** A promise the test resolves by hand: a gate a fake device waits on, or a signal it raises. */
export class Latch<T = undefined> {
  readonly promise: Promise<T>;
  private settle!: (value: T) => void;
  constructor() {
    this.promise = new Promise<T>((resolve) => {
      this.settle = resolve;
    });
  }
  open(value: T): void {
    this.settle(value);
  }
}

/** Receives `n` messages from the kiosk, in order. */
export async function receiveMany(conn: FakeConnection, n: number, timeoutMs?: number): Promise<ReceivedMessage[]> {
  const out: ReceivedMessage[] = [];
  for (let i = 0; i < n; i++) out.push(await conn.receive(timeoutMs));
  return out;
}

// ---------------------------------------------------------------- views

/** The number of views seen so far, to wait for a view that comes after this point. */
export const mark = (h: Harness): number => h.views.length;

/** The first view at or after `from` (an index of `h.views`) that matches. */
export function viewAfter(h: Harness, from: number, predicate: (v: KioskView) => boolean, timeoutMs?: number): Promise<KioskView> {
  return h.view((v) => h.views.indexOf(v) >= from && predicate(v), timeoutMs);
}

/** Index of the latest view that matches (−1 when none). */
export function lastIndexOf(h: Harness, predicate: (v: KioskView) => boolean): number {
  for (let i = h.views.length - 1; i >= 0; i--) if (predicate(at(h.views, i))) return i;
  return -1;
}

// ---------------------------------------------------------------- steps

/** The pre-warmed session: the next connection, its `engage`, and the kiosk showing `ready` after `from`. */
export async function armed(h: Harness, from = 0): Promise<FakeConnection> {
  const conn = await h.backend.nextConnection();
  await conn.expect('engage');
  await viewAfter(h, from, (v) => v.phase === 'ready');
  return conn;
}

/** A QR scan on an armed session; returns the `qr_scanned` message. */
export async function scanQr(h: Harness, conn: FakeConnection, text: string = freshQr()): Promise<ReceivedMessage> {
  h.qr.push(text);
  return conn.expect('qr_scanned');
}

/** `ble_exchange` with a central mode, `ble_connected`, and the link the kiosk opened. */
export async function connectCentral(h: Harness, conn: FakeConnection, mode: ModeJson = centralMode()): Promise<FakeCentralLink> {
  conn.stepRequest('ble_exchange', { modes: [mode] });
  expect(await conn.expect('ble_connected')).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'central' });
  return h.central.nextLink();
}

/** `ble_exchange` with a peripheral mode; the phone subscribes to s2c; `ble_connected`. */
export async function connectPeripheral(
  h: Harness,
  conn: FakeConnection,
  mode: ModeJson = peripheralMode(),
): Promise<FakePeripheralSession> {
  conn.stepRequest('ble_exchange', { modes: [mode] });
  const session = await h.peripheral.nextSession();
  session.subscribe(stackSpelling(PERIPHERAL_CHARS.s2c));
  expect(await conn.expect('ble_connected')).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
  return session;
}

/** The backend ends the transfer: the 0x02 session-end byte on the state characteristic, then `complete`. */
export function endTransfer(conn: FakeConnection, stateUuid: string): void {
  conn.stepRequest('ble_write', { char: stateUuid, data: b64([0x02]) });
  conn.send({ type: 'complete', outcome: OUTCOME });
}

/** A whole QR → BLE central → complete verification on an armed session. */
export async function completeQrVerification(h: Harness, conn: FakeConnection): Promise<VerificationReport> {
  await scanQr(h, conn);
  const link = await connectCentral(h, conn);
  endTransfer(conn, CENTRAL_CHARS.state);
  const report = await h.nextReport();
  expect(report.result).toBe('complete');
  expect(report.outcome?.verdict).toBe('verified');
  expect((await conn.closed).code).toBe(1000);
  expect(link.writes.map((w) => arr(w.data))).toEqual([[0x02]]);
  expect(link.closed).toBe(true);
  return report;
}

export interface ExpectedFailure {
  /** `VerificationReport.result`. */
  readonly result: VerificationReport['result'];
  /** `ErrorView.code`. */
  readonly code: string;
  /** WebSocket close code the backend sees. */
  readonly closeCode: number;
  /**
   * Client ops the backend may still receive after the failing input (default: none). A failure is more
   * than its result: nothing may reach the phone or the backend after the input that failed the
   * verification (e.g. a `ble_write` that came before `ble_connected` must never be delivered later).
   */
  readonly backendMayGet?: readonly string[];
}

/** Everything the kiosk has handed to the phone so far: APDUs to the card, central writes, notifications. */
export function phoneDeliveries(h: Harness): number {
  return (
    h.nfc.apduCount +
    h.central.links.reduce((n, link) => n + link.writes.length, 0) +
    h.peripheral.sessions.reduce((n, session) => n + session.notifications.length, 0)
  );
}

/** The attempt failed as expected: report, close code, error view. */
export async function expectFailure(h: Harness, conn: FakeConnection, expected: ExpectedFailure): Promise<VerificationReport> {
  const deliveredBefore = phoneDeliveries(h);
  const unreadBefore = conn.pending.length;
  const report = await h.nextReport();
  expect({ result: report.result, code: report.error?.code }).toEqual({ result: expected.result, code: expected.code });
  expect((await conn.closed).code).toBe(expected.closeCode);
  expect(phoneDeliveries(h), 'nothing reaches the phone after the failing input').toBe(deliveredBefore);
  const allowed = new Set(expected.backendMayGet ?? []);
  const after = conn.pending.slice(unreadBefore).map((m) => (m as { op?: unknown }).op);
  expect(
    after.filter((op) => typeof op !== 'string' || !allowed.has(op)),
    'nothing reaches the backend after the failing input',
  ).toEqual([]);
  const errorView = await h.view((v) => v.phase === 'error' && v.error?.code === expected.code);
  expect(errorView.prompt).toBe('try_again');
  return report;
}

/**
 * After a failure: the kiosk goes back to `ready` on a reconnection of the SAME session (same id and
 * secret, spec §3 "Any phase" row, §5 rule 2) and a whole verification works on it.
 */
export async function expectRecoveryOnSameSession(h: Harness, failed: FakeConnection, onlySession = true): Promise<FakeConnection> {
  const afterError = lastIndexOf(h, (v) => v.error !== null) + 1;
  const conn = await h.backend.nextConnection();
  expect(conn.session.id).toBe(failed.session.id);
  expect(conn.session.secret).toBe(failed.session.secret);
  await conn.expect('engage');
  await viewAfter(h, afterError, (v) => v.phase === 'ready');
  if (onlySession) {
    // No new session was created for the retry: every handshake so far was for the one session.
    expect(h.backend.http.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(new Set(h.backend.handshakes.filter((r) => r.status === 101).map((r) => r.sessionId))).toEqual(new Set([failed.session.id]));
  }
  await completeQrVerification(h, conn);
  return conn;
}

/** The structured `protocol_violation` warnings logged so far. */
export function violationLogs(h: Harness): Record<string, unknown>[] {
  return h.logs.records.filter((r) => r.event === 'protocol_violation');
}
