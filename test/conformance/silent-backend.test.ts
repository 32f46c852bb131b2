/**
 * A backend that goes silent — traffic taken, nothing answered, nothing closed, how real outages begin —
 * on the real ws stack, behind a TCP gate that black-holes the traffic (src/qa/wiring/silent-gate.ts).
 * docs/protocol.md §10.2 states the bounds measured here, with the default timeouts:
 *
 * - idle: the pre-warmed socket's ping goes unanswered → offline, "not answering", within
 *   heartbeatMs + pongMs (7.5 s);
 * - on a tap or a scan: the socket is probed at once and the first reply is bounded → the customer is told
 *   "not answering" within min(pongMs, firstReplyMs) (2.5 s), never "That took too long";
 * - a backend whose socket answers pings but which does not reply to the tap: firstReplyMs (4 s).
 *
 * Margins are generous (a loaded CI machine): these check behaviour, not speed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KioskView } from '../../src/common/kiosk-view.js';
import { SilentGate } from '../../src/qa/wiring/silent-gate.js';
import { FakeBackend } from '../support/fake-backend.js';
import { startHarness, type Harness } from '../support/harness.js';
import { armed, connectCentral, mark, scanQr, u8, viewAfter } from '../support/relay-fixtures.js';

const HEARTBEAT_MS = 5_000; // the defaults (config.ts), so the documented bounds are what is measured
const PONG_MS = 2_500;
const FIRST_REPLY_MS = 4_000;
/** Scheduling on a loaded machine; the bounds themselves are seconds. */
const MARGIN_MS = 2_000;

let h: Harness | undefined;
let gate: SilentGate | undefined;
let backend: FakeBackend | undefined;
afterEach(async () => {
  await h?.stop();
  await gate?.close();
  await backend?.stop();
  h = gate = backend = undefined;
});

async function behindGate(config: Record<string, unknown> = {}): Promise<{ h: Harness; gate: SilentGate }> {
  backend = await FakeBackend.start();
  gate = await SilentGate.open(backend.port);
  h = await startHarness({ backend, config: { backend: { baseUrl: `http://127.0.0.1:${gate.port}/v1` }, ...config } });
  return { h, gate };
}

const notAnswering = (v: KioskView): boolean =>
  v.phase === 'offline' && v.backend === 'not_answering' && v.error?.code === 'backend_not_answering';

describe('silent backend: idle', () => {
  it(`the pre-warmed socket's unanswered ping takes the kiosk out of Ready within heartbeatMs + pongMs (${HEARTBEAT_MS + PONG_MS} ms): offline, backend "not answering"; it comes back by itself`, async () => {
    const { h, gate } = await behindGate();
    await armed(h);
    expect(h.kiosk.currentView).toMatchObject({ phase: 'ready', backend: 'connected' });
    const from = mark(h);
    const silentAt = Date.now();
    gate.silence();
    const offline = await viewAfter(h, from, notAnswering, HEARTBEAT_MS + PONG_MS + MARGIN_MS);
    const detectedMs = offline.at - silentAt;
    expect(detectedMs).toBeLessThanOrEqual(HEARTBEAT_MS + PONG_MS + MARGIN_MS);
    // Straight from Ready to offline: never "connecting" with a backend that says nothing, never Ready again.
    const after = h.views.slice(from);
    expect(after.filter((v) => v.phase === 'ready' || v.backend === 'connected')).toEqual([]);
    expect(h.logs.records.filter((r) => r.event === 'idle_socket_closed')).toEqual([expect.objectContaining({ unanswered: true })]);
    expect(h.kiosk.backendFailures.lastFailure).toMatchObject({ kind: 'not_answering', stage: 'socket' });

    // A tap while it stays silent is told at once (the Offline screen's own code), without a wait on "hold still".
    const tapFrom = mark(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    const report = await h.nextReport();
    expect(report).toMatchObject({ result: 'not_ready', error: { code: 'backend_not_answering' } });
    expect(h.views.slice(tapFrom).some((v) => v.prompt === 'hold_still')).toBe(false);
    h.nfc.lift();

    // The re-arm waits out the backoff (an absence, like unreachable) and needs the backend to answer.
    const backFrom = mark(h);
    gate.answer();
    const ready = await viewAfter(h, backFrom, (v) => v.phase === 'ready', 40_000);
    expect(ready.backend).toBe('connected');
  }, 70_000);
});

describe('silent backend: HTTP', () => {
  it('a kiosk starting against a silent backend: POST /sessions bounded by timeouts.httpMs → offline, backend "not answering" (never "connecting" for ever)', async () => {
    backend = await FakeBackend.start();
    gate = await SilentGate.open(backend.port);
    gate.silence();
    const startedAt = Date.now();
    h = await startHarness({ backend, config: { backend: { baseUrl: `http://127.0.0.1:${gate.port}/v1` }, timeouts: { httpMs: 1_000 } } });
    const offline = await h.view(notAnswering, 1_000 + MARGIN_MS + 1_000);
    expect(offline.at - startedAt).toBeLessThanOrEqual(1_000 + MARGIN_MS);
    expect(h.kiosk.backendFailures.lastFailure).toMatchObject({ kind: 'timeout', stage: 'create' });
    expect(backend.http).toEqual([]); // nothing reached the backend
  }, 20_000);
});

describe('silent backend: a tap or a scan', () => {
  it(`NFC tap on a socket gone silent (not yet found idle): the probe finds it within pongMs (${PONG_MS} ms); "not answering", never "That took too long"; then offline`, async () => {
    const { h, gate } = await behindGate({ timeouts: { heartbeatMs: 60_000 } });
    const conn = await armed(h);
    gate.silence();
    const from = mark(h);
    const tapAt = Date.now();
    h.nfc.tap(() => u8(0x90, 0x00));
    const report = await h.nextReport(PONG_MS + MARGIN_MS + 3_000);
    expect(report).toMatchObject({ result: 'not_answering', error: { code: 'backend_not_answering', retryable: true } });
    const errorView = await viewAfter(h, from, (v) => v.phase === 'error');
    expect(errorView.error?.code).toBe('backend_not_answering');
    expect(errorView.at - tapAt).toBeLessThanOrEqual(PONG_MS + MARGIN_MS);
    const holdStill = h.views.slice(from).filter((v) => v.prompt === 'hold_still');
    expect(holdStill.length).toBeGreaterThan(0);
    expect(Math.max(...holdStill.map((v) => v.at)) - tapAt).toBeLessThanOrEqual(PONG_MS + MARGIN_MS);
    expect(h.views.slice(from).some((v) => v.error?.code === 'timeout')).toBe(false);
    expect(conn.pending.map((m) => (m as { op?: string }).op)).toEqual([]); // nothing got through the gate
    h.nfc.lift();
    // After the error screen: offline, not Ready, while nobody answers.
    await viewAfter(h, from, notAnswering, 5_000);
  }, 30_000);

  it('QR scan on a silent backend with the periodic heartbeat off (heartbeatMs 0): the probe alone finds it within pongMs', async () => {
    const { h, gate } = await behindGate({ timeouts: { heartbeatMs: 0 } });
    await armed(h);
    gate.silence();
    const from = mark(h);
    const scanAt = Date.now();
    h.qr.push('mdoc:owBjMS4wAYIB2BhYS6QBAiABIVggx8b0kVbPWi7fFRVq3QnvVA3hRAW0kBJfRbsh0lVe3xE');
    const report = await h.nextReport(PONG_MS + MARGIN_MS + 3_000);
    expect(report).toMatchObject({ result: 'not_answering', error: { code: 'backend_not_answering' } });
    expect(Date.now() - scanAt).toBeLessThanOrEqual(PONG_MS + MARGIN_MS);
    await viewAfter(h, from, notAnswering, 5_000);
  }, 30_000);

  it(`a backend whose socket answers pings but says nothing after nfc_card_present: firstReplyMs (${FIRST_REPLY_MS} ms), close 4008, "not answering"; backend "not answering", then ready again on the same session`, async () => {
    backend = await FakeBackend.start();
    // The default reply wait (the harness shortens it): the first reply's own bound is what ends the wait.
    h = await startHarness({ backend, config: { timeouts: { backendReplyMs: 15_000 } } });
    const conn = await armed(h);
    const from = mark(h);
    const tapAt = Date.now();
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
    const report = await h.nextReport(FIRST_REPLY_MS + MARGIN_MS + 3_000);
    expect(report).toMatchObject({ result: 'not_answering', error: { code: 'backend_not_answering' } });
    const elapsed = Date.now() - tapAt;
    expect(elapsed).toBeGreaterThanOrEqual(FIRST_REPLY_MS - 100);
    expect(elapsed).toBeLessThanOrEqual(FIRST_REPLY_MS + MARGIN_MS);
    expect((await conn.closed).code).toBe(4008);
    expect(h.logs.records.filter((r) => r.event === 'backend_not_answering')).toEqual([
      expect.objectContaining({ phase: 'nfc_card_present' }),
    ]);
    h.nfc.lift();
    // Staff see it at once: the backend "not answering", not "connected", until a session is armed again.
    await viewAfter(h, from, (v) => v.backend === 'not_answering', 5_000);
    // The socket answered pings: re-armed on the same session after the backoff.
    const again = await h.backend.nextConnection(10_000);
    expect(again.session.id).toBe(conn.session.id);
    await again.expect('engage');
    await viewAfter(h, from, (v) => v.phase === 'ready' && v.backend === 'connected', 10_000);
  }, 30_000);

  it('silent in the middle of a BLE transfer (before the end byte): the heartbeat finds it within heartbeatMs + pongMs → "not answering", no result recovery attempted', async () => {
    const { h, gate } = await behindGate({ timeouts: { heartbeatMs: 1_000, pongMs: 500, bleIdleMs: 30_000 } });
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    const silentAt = Date.now();
    gate.silence();
    const report = await h.nextReport(1_500 + MARGIN_MS + 3_000);
    expect(report).toMatchObject({ result: 'not_answering', error: { code: 'backend_not_answering' } });
    expect(Date.now() - silentAt).toBeLessThanOrEqual(1_500 + MARGIN_MS);
    expect(link.closed).toBe(true);
    // Nothing to recover before the end byte: no GET /sessions/{id} was tried.
    expect(h.logs.records.filter((r) => /^result_recover/.test(String(r.event)))).toEqual([]);
  }, 20_000);

  it('timeouts.firstReplyMs is configurable and bounds qr_scanned the same way', async () => {
    backend = await FakeBackend.start();
    h = await startHarness({ backend, config: { timeouts: { firstReplyMs: 1_000 } } });
    const conn = await armed(h);
    const scanAt = Date.now();
    h.qr.push('mdoc:owBjMS4wAYIB2BhYS6QBAiABIVggx8b0kVbPWi7fFRVq3QnvVA3hRAW0kBJfRbsh0lVe3xE');
    await conn.expect('qr_scanned');
    const report = await h.nextReport();
    expect(report).toMatchObject({ result: 'not_answering', error: { code: 'backend_not_answering' } });
    expect(Date.now() - scanAt).toBeLessThanOrEqual(1_000 + MARGIN_MS);
    expect((await conn.closed).code).toBe(4008);
  }, 20_000);
});
