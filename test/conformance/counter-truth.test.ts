/**
 * The counter tells the truth (issue 18), in the Kiosk core against the scripted fake backend:
 * - the answer to the request travels with the outcome (report, log line), not only the screen;
 * - offline means offline: a tap while the backend is unreachable gets the offline message at once (never
 *   "hold still" for `armWaitMs`), the kiosk tries the backend then, and `view.backend` says connected only
 *   after a successful exchange;
 * - with the readiness gate (the counter's hosts), no prompt invites a customer the devices cannot serve;
 * - after a failed tap with the phone still on the reader, the customer is told to lift it and tap again
 *   (not "thank you"); "Cancel" on "tap your phone again" goes back to waiting without an error screen.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KioskView } from '../../src/common/kiosk-view.js';
import { MORE_TIME_MS, MORE_TIME_PRESSES } from '../../src/kiosk/kiosk.js';
import { FakeBackend } from '../support/fake-backend.js';
import { startHarness, type Harness } from '../support/harness.js';
import {
  OUTCOME,
  armed,
  at,
  centralMode,
  completeQrVerification,
  freshQr,
  mark,
  scanQr,
  u8,
  viewAfter,
} from '../support/relay-fixtures.js';
import { TcpGate } from '../support/session-harness.js';

let h: Harness | undefined;
let backend: FakeBackend | undefined;
let gate: TcpGate | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
  await gate?.shut();
  gate = undefined;
  await backend?.stop();
  backend = undefined;
});

const phasesAfter = (harness: Harness, from: number): KioskView['phase'][] => harness.views.slice(from).map((v) => v.phase);

describe('the answer to the request is part of the outcome', () => {
  it('authentic with age_over_21 false under the age_over_21 profile: verified, answer not met, in the report and the log line', async () => {
    h = await startHarness({ config: { profile: 'age_over_21' } });
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.send({ type: 'complete', outcome: { ...OUTCOME, response: { 'org.iso.18013.5.1': { age_over_21: false, portrait: 'AAAA' } } } });
    const report = await h.nextReport();
    expect(report.outcome?.verdict).toBe('verified');
    expect(report.outcome?.answer).toEqual({ kind: 'age', threshold: 21, result: 'not_met', missing: [] });
    const line = h.logs.records.find((r) => r.event === 'verification_outcome');
    expect(line).toMatchObject({ verdict: 'verified', answer: 'not_met', missing: [] });
  });

  it('identity profile with the portrait withheld: verified, not met, the missing element named (never its value) in the log', async () => {
    h = await startHarness({ config: { profile: 'identity' } });
    const conn = await armed(h);
    await scanQr(h, conn);
    const all = {
      family_name: 'Doe',
      given_name: 'Jane',
      birth_date: '1990-01-01',
      document_number: 'D1',
      expiry_date: '2030-01-01',
      issuing_authority: 'X',
      issuing_country: 'US',
    };
    conn.send({ type: 'complete', outcome: { ...OUTCOME, response: { 'org.iso.18013.5.1': all } } });
    const report = await h.nextReport();
    expect(report.outcome?.answer).toEqual({
      kind: 'elements',
      result: 'not_met',
      missing: [{ namespace: 'org.iso.18013.5.1', identifier: 'portrait', required: true }],
    });
    expect(h.logs.records.find((r) => r.event === 'verification_outcome')).toMatchObject({ answer: 'not_met', missing: ['portrait'] });
    expect(h.logs.text()).not.toContain('Doe');
  });
});

describe('offline means offline', () => {
  async function offlineHarness(): Promise<Harness> {
    backend = await FakeBackend.start();
    gate = await TcpGate.open(backend.port);
    await gate.shut();
    // A long backoff and a long armWaitMs: a prompt answer and a fresh attempt can only come from the tap.
    const harness = await startHarness({
      backend,
      config: {
        backend: { baseUrl: gate.baseUrl() },
        session: { offlineBackoffMinMs: 60_000, offlineBackoffMaxMs: 60_000 },
        timeouts: { armWaitMs: 60_000 },
      },
    });
    await harness.view((v) => v.phase === 'offline');
    return harness;
  }

  it('a tap while offline gets backend_unavailable at once: no "hold still", never "connected", and the backend is tried again then', async () => {
    h = await offlineHarness();
    const attempts = (): number => (h?.logs.records ?? []).filter((r) => r.event === 'backend_unavailable').length;
    const before = attempts();
    const from = mark(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    const report = await h.nextReport(5_000);
    expect(report).toMatchObject({
      transport: 'nfc',
      result: 'not_ready',
      sessionId: null,
      error: { code: 'backend_unavailable', retryable: true },
    });
    expect(report.error?.detail).toMatch(/^the backend is unreachable: /);
    const phases = phasesAfter(h, from);
    expect(phases).not.toContain('engaging');
    // The offline screen stays: an error with "Try again" could not work (issue 28).
    expect(phases).not.toContain('error');
    expect(h.views.slice(from).map((v) => v.backend)).not.toContain('connected');
    // The card was let go and the backend tried once more because a customer was waiting.
    expect(at(h.nfc.cards, 0).released).toBe(true);
    await expect.poll(attempts, { timeout: 5_000 }).toBeGreaterThan(before);
  });

  it('a QR scan while offline: the same, and the code is not used up', async () => {
    h = await offlineHarness();
    const from = mark(h);
    h.qr.push(freshQr());
    const report = await h.nextReport(5_000);
    expect(report).toMatchObject({ transport: 'qr', result: 'not_ready', error: { code: 'backend_unavailable' } });
    expect(phasesAfter(h, from)).not.toContain('engaging');
  });

  it('view.backend: connecting until the first session is engaged, connected then, offline when the backend goes, connected again only after a new exchange', async () => {
    backend = await FakeBackend.start();
    gate = await TcpGate.open(backend.port);
    h = await startHarness({
      backend,
      config: { backend: { baseUrl: gate.baseUrl() }, session: { offlineBackoffMinMs: 100, offlineBackoffMaxMs: 200 } },
    });
    const firstReady = h.views.findIndex((v) => v.phase === 'ready');
    await armed(h);
    const ready = await h.view((v) => v.phase === 'ready');
    expect(ready.backend).toBe('connected');
    expect(h.views.slice(0, firstReady === -1 ? h.views.indexOf(ready) : firstReady).map((v) => v.backend)).not.toContain('connected');
    const from = mark(h);
    await gate.shut();
    const offline = await viewAfter(h, from, (v) => v.phase === 'offline', 10_000);
    expect(offline.backend).toBe('offline');
    const back = mark(h);
    await gate.reopen();
    const again = await viewAfter(h, back, (v) => v.phase === 'ready', 10_000);
    expect(again.backend).toBe('connected');
    expect(h.views.slice(back, h.views.indexOf(again)).map((v) => v.backend)).not.toContain('connected');
  });
});

describe('ready only when the kiosk can verify (readiness gate)', () => {
  it('no Bluetooth role usable: cannot_verify naming the cause, no "tap or scan"; a tap is refused at once and never reaches the backend', async () => {
    h = await startHarness({ readinessGate: true, start: false });
    h.central.usable = false;
    h.central.reason = 'no_adapter';
    h.peripheral.usable = false;
    h.kiosk.start();
    const conn = await h.backend.nextConnection();
    await conn.expect('engage');
    const view = await h.view((v) => v.phase === 'cannot_verify' && v.backend === 'connected');
    expect(view).toMatchObject({ prompt: 'cannot_verify', backend: 'connected', error: { code: 'ble_unavailable', retryable: false } });
    expect(view.error?.detail).toMatch(/^no Bluetooth role is usable \(Bluetooth central no_adapter, peripheral /);
    expect(h.views.map((v) => v.prompt)).not.toContain('tap_or_scan');
    const from = mark(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    const report = await h.nextReport(5_000);
    expect(report).toMatchObject({ result: 'not_ready', error: { code: 'ble_unavailable', retryable: false } });
    expect(phasesAfter(h, from)).not.toContain('engaging');
    await conn.expectSilence(200);
    // The screen keeps naming the cause: no error whose "Try again" cannot work (issue 28).
    await viewAfter(h, from, (v) => v.phase === 'cannot_verify', 5_000);
    expect(phasesAfter(h, from)).not.toContain('error');
  });

  it('without the gate (the headless CLI) the same devices keep the old behaviour: Ready, and the BLE step reports the failure to the backend', async () => {
    h = await startHarness({ start: false });
    h.central.usable = false;
    h.peripheral.usable = false;
    h.kiosk.start();
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'error' });
  });
});

describe("after a failed tap, and the customer's way out", () => {
  it('the backend fails while the phone lies on the reader: the error, then "lift your phone and tap again" (remove_to_retry), not the goodbye', async () => {
    h = await startHarness();
    const conn = await armed(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
    const from = mark(h);
    conn.send({ type: 'error', message: 'engagement refused' });
    await viewAfter(h, from, (v) => v.phase === 'error');
    const remove = await viewAfter(h, from, (v) => v.phase === 'remove_phone', 5_000);
    expect(remove.prompt).toBe('remove_to_retry');
  });

  it('"More time" on an error keeps it on screen (WCAG 2.2.1), a bounded number of times; nowhere else', async () => {
    h = await startHarness({ config: { timeouts: { errorDisplayMs: 2_000 } } });
    const conn = await armed(h);
    expect(h.kiosk.moreTime()).toBeUndefined();
    await scanQr(h, conn);
    const from = mark(h);
    conn.send({ type: 'error', message: 'engagement refused' });
    await viewAfter(h, from, (v) => v.phase === 'error');
    const left = h.kiosk.moreTime();
    expect(left).toBeGreaterThan(MORE_TIME_MS);
    expect(left).toBeLessThanOrEqual(MORE_TIME_MS + 2_000);
    await new Promise((done) => setTimeout(done, 2_500));
    expect(h.kiosk.currentView.phase).toBe('error');
    for (let i = 1; i < MORE_TIME_PRESSES; i++) expect(h.kiosk.moreTime()).toBeDefined();
    expect(h.kiosk.moreTime()).toBeUndefined();
    h.kiosk.dismiss();
    await viewAfter(h, from, (v) => v.phase === 'ready', 5_000);
  });

  it('after an outcome with the phone still on the reader it is the goodbye (remove_phone)', async () => {
    h = await startHarness();
    const conn = await armed(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
    const from = mark(h);
    conn.send({ type: 'complete', outcome: OUTCOME });
    const remove = await viewAfter(h, from, (v) => v.phase === 'remove_phone', 5_000);
    expect(remove.prompt).toBe('remove_phone');
  });

  it('"Cancel" on "tap your phone again": back to waiting at once, no error screen, the session re-armed; elsewhere it does nothing', async () => {
    h = await startHarness({ config: { timeouts: { awaitCardMs: 60_000 } } });
    const conn = await armed(h);
    expect(h.kiosk.cancelTapAgain()).toBe(false);
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
    expect(h.kiosk.cancelTapAgain()).toBe(false); // engaging: not the customer's to cancel
    h.nfc.lift();
    const from = mark(h);
    conn.stepRequest('nfc_await_card', {});
    await viewAfter(h, from, (v) => v.phase === 'awaiting_card');
    expect(h.kiosk.cancelTapAgain()).toBe(true);
    const report = await h.nextReport(5_000);
    expect(report.result).toBe('cancelled');
    expect((await conn.closed).code).toBe(1001);
    const again = await h.backend.nextConnection();
    expect(again.session.id).toBe(conn.session.id);
    await again.expect('engage');
    await viewAfter(h, from, (v) => v.phase === 'ready', 5_000);
    expect(phasesAfter(h, from)).not.toContain('error');
    // And the next customer's verification works.
    await completeQrVerification(h, again);
  });
});
