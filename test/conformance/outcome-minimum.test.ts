/**
 * One rule for what a tap or a scan does on an outcome (issue 28), in the Kiosk core against the scripted
 * fake backend: an outcome younger than `timeouts.outcomeMinimumMs` is never replaced; a phone tapped or a
 * code scanned meanwhile is held and taken once the minimum has passed; the replaced outcome is kept for
 * staff (codes and times only) until it would have cleared. And taps on a kiosk that cannot serve anyone:
 * the screen that tells the truth, never an error whose "Try again" cannot work.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KioskView } from '../../src/common/kiosk-view.js';
import { FakeBackend } from '../support/fake-backend.js';
import { startHarness, type Harness } from '../support/harness.js';
import { OUTCOME, armed, freshQr, mark, u8, viewAfter } from '../support/relay-fixtures.js';
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

const MINIMUM_MS = 1_500;
const DISPLAY_MS = 5_000;
const NOT_21 = { ...OUTCOME, response: { 'org.iso.18013.5.1': { age_over_21: false } } };
const phasesAfter = (harness: Harness, from: number): KioskView['phase'][] => harness.views.slice(from).map((v) => v.phase);

/** A first customer's NFC verification ends with "NOT 21 or older" on screen; returns when it showed. */
async function firstOutcome(harness: Harness): Promise<{ shownAt: number }> {
  const conn = await armed(harness);
  harness.nfc.tap(() => u8(0x90, 0x00));
  await conn.expect('nfc_card_present');
  const from = mark(harness);
  conn.send({ type: 'complete', outcome: NOT_21 });
  const result = await viewAfter(harness, from, (v) => v.phase === 'result');
  expect(result.outcome?.answer).toMatchObject({ kind: 'age', threshold: 21, result: 'not_met' });
  harness.nfc.lift();
  return { shownAt: result.at };
}

describe('an outcome stays until its minimum has passed (NFC and QR alike)', () => {
  it('a second phone tapped 0.3 s after an outcome is held: the outcome stays, the tap is taken after the minimum, and staff see the replaced one until it would have cleared', async () => {
    h = await startHarness({ config: { profile: 'age_over_21', timeouts: { resultDisplayMs: DISPLAY_MS, outcomeMinimumMs: MINIMUM_MS } } });
    const { shownAt } = await firstOutcome(h);
    const next = await h.backend.nextConnection();
    await next.expect('engage');
    await new Promise((done) => setTimeout(done, 300));
    const from = mark(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    // Before: the tap replaced the outcome at once (engaging 1.6 s later showed another phone's answer).
    await next.expectSilence(MINIMUM_MS - 300 - 400);
    expect(phasesAfter(h, from)).not.toContain('engaging');
    expect(h.kiosk.currentView.phase).toBe('result');
    expect(h.kiosk.replacedOutcome).toBeNull();
    // Held, not lost: the phone left on the reader is taken once the minimum has passed.
    await next.expect('nfc_card_present', 3_000);
    const takenAt = Date.now();
    expect(takenAt - shownAt).toBeGreaterThanOrEqual(MINIMUM_MS - 50);
    const replaced = h.kiosk.replacedOutcome;
    expect(replaced).toMatchObject({
      verdict: 'verified',
      answer: { kind: 'age', result: 'not_met', threshold: 21 },
      transport: 'nfc',
      replacedBy: 'nfc',
    });
    expect(replaced?.clearsAt).toBeGreaterThanOrEqual(shownAt + DISPLAY_MS - 50);
    expect(replaced?.clearsAt).toBeLessThanOrEqual(shownAt + DISPLAY_MS + 200);
    // Codes and times only: nothing the holder disclosed.
    expect(JSON.stringify(replaced)).not.toContain('age_over_21');
    expect(h.logs.records.find((r) => r.event === 'outcome_replaced')).toMatchObject({ verdict: 'verified', answer: 'not_met', by: 'nfc' });
    // Gone when the outcome would have cleared (privacy), whatever the new customer's verification does.
    await expect.poll(() => h?.kiosk.replacedOutcome, { timeout: DISPLAY_MS + 1_000, interval: 100 }).toBeNull();
    expect(Date.now()).toBeGreaterThanOrEqual((replaced?.clearsAt ?? 0) - 5);
  }, 20_000);

  it('a QR scanned during the minimum is held the same way and replaces the outcome only after it', async () => {
    h = await startHarness({ config: { profile: 'age_over_21', timeouts: { resultDisplayMs: DISPLAY_MS, outcomeMinimumMs: MINIMUM_MS } } });
    const { shownAt } = await firstOutcome(h);
    const next = await h.backend.nextConnection();
    await next.expect('engage');
    h.qr.push(freshQr());
    await next.expectSilence(MINIMUM_MS - 600);
    expect(h.kiosk.currentView.phase).toBe('result');
    await next.expect('qr_scanned', 3_000);
    expect(Date.now() - shownAt).toBeGreaterThanOrEqual(MINIMUM_MS - 50);
    expect(h.kiosk.replacedOutcome).toMatchObject({ verdict: 'verified', transport: 'nfc', replacedBy: 'qr' });
  }, 20_000);

  it('after the minimum a new customer replaces the outcome at once; "Next" clears it whenever staff press it', async () => {
    h = await startHarness({ config: { timeouts: { resultDisplayMs: DISPLAY_MS, outcomeMinimumMs: 300 } } });
    await firstOutcome(h);
    const next = await h.backend.nextConnection();
    await next.expect('engage');
    await new Promise((done) => setTimeout(done, 500));
    h.nfc.tap(() => u8(0x90, 0x00));
    await next.expect('nfc_card_present', 1_000);
    next.send({ type: 'complete', outcome: OUTCOME });
    await h.view((v) => v.phase === 'result' && v.outcome?.answer.result === 'met');
    h.nfc.lift();
    const from = mark(h);
    h.kiosk.dismiss();
    await viewAfter(h, from, (v) => v.phase === 'ready', 2_000);
  }, 20_000);

  it('a phone left on the reader after its own outcome is not read again when the minimum passes', async () => {
    h = await startHarness({ config: { timeouts: { resultDisplayMs: 2_000, outcomeMinimumMs: 300 } } });
    const conn = await armed(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
    conn.send({ type: 'complete', outcome: OUTCOME });
    await h.view((v) => v.phase === 'result');
    const next = await h.backend.nextConnection();
    await next.expect('engage');
    await next.expectSilence(1_000);
    expect(h.kiosk.replacedOutcome).toBeNull();
  }, 20_000);

  it('outcomeMinimumMs is bounded: at most 10 s and never above qr.scanFreshMs', async () => {
    const { parseConfig } = await import('../../src/platform/config.js');
    expect(parseConfig({}).timeouts.outcomeMinimumMs).toBe(5_000);
    expect(() => parseConfig({ timeouts: { outcomeMinimumMs: 10_001 } })).toThrow(/outcomeMinimumMs: at most 10000 ms/);
    expect(() => parseConfig({ timeouts: { outcomeMinimumMs: -1 } })).toThrow(/outcomeMinimumMs/);
    expect(() => parseConfig({ timeouts: { outcomeMinimumMs: 8_000 }, qr: { scanFreshMs: 5_000 } })).toThrow(
      /outcomeMinimumMs: must not exceed qr.scanFreshMs/,
    );
    expect(parseConfig({ timeouts: { outcomeMinimumMs: 0 } }).timeouts.outcomeMinimumMs).toBe(0);
  });
});

describe('a tap on a kiosk that cannot serve anyone gets the screen that tells the truth', () => {
  async function offlineHarness(options: { readinessGate?: boolean } = {}): Promise<Harness> {
    backend = await FakeBackend.start();
    gate = await TcpGate.open(backend.port);
    await gate.shut();
    const harness = await startHarness({
      backend,
      ...options,
      start: false,
      config: {
        backend: { baseUrl: gate.baseUrl() },
        session: { offlineBackoffMinMs: 60_000, offlineBackoffMaxMs: 60_000 },
        timeouts: { armWaitMs: 60_000 },
      },
    });
    return harness;
  }

  it('offline: a tap keeps the offline screen (no "That did not work" with a "Try again" that cannot work), and a phone left down is not asked to "tap again"', async () => {
    h = await offlineHarness();
    h.kiosk.start();
    await h.view((v) => v.phase === 'offline');
    const from = mark(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    const report = await h.nextReport(5_000);
    expect(report).toMatchObject({ result: 'not_ready', error: { code: 'backend_unavailable' } });
    await viewAfter(h, from, (v) => v.phase === 'offline', 2_000);
    await new Promise((done) => setTimeout(done, 500));
    const phases = phasesAfter(h, from);
    expect(phases).not.toContain('error');
    expect(phases).not.toContain('remove_phone');
    expect(h.views.slice(from).map((v) => v.prompt)).not.toContain('remove_to_retry');
    expect(h.kiosk.currentView.phase).toBe('offline');
  });

  it('a failure with the phone still on the reader while the kiosk can no longer serve anyone: the needs-staff screen, not "lift your phone and tap again"', async () => {
    h = await startHarness({ readinessGate: true, config: { timeouts: { errorDisplayMs: 300 } } });
    const conn = await armed(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
    const from = mark(h);
    // Bluetooth goes while the attempt fails: a tap again could not work.
    h.central.usable = false;
    h.central.reason = 'no_adapter';
    h.peripheral.usable = false;
    conn.send({ type: 'error', message: 'engagement refused' });
    await viewAfter(h, from, (v) => v.phase === 'error');
    await viewAfter(h, from, (v) => v.phase === 'cannot_verify', 5_000);
    // Before: "remove_to_retry" (lift your phone, then tap it again) on a kiosk that could not take the tap.
    expect(h.views.slice(from).map((v) => v.prompt)).not.toContain('remove_to_retry');
    expect(h.nfc.presence).toBeDefined();
  });

  it('no Bluetooth and the backend down: the permanent cause (Bluetooth, needs staff) wins over "offline", before and after a tap', async () => {
    h = await offlineHarness({ readinessGate: true });
    h.central.usable = false;
    h.central.reason = 'no_adapter';
    h.peripheral.usable = false;
    h.kiosk.start();
    const view = await h.view((v) => v.phase === 'cannot_verify' && v.backend === 'offline', 5_000);
    expect(view.error).toMatchObject({ code: 'ble_unavailable', retryable: false });
    expect(h.views.map((v) => v.phase)).not.toContain('offline');
    const from = mark(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    expect(await h.nextReport(5_000)).toMatchObject({ result: 'not_ready', error: { code: 'ble_unavailable' } });
    await new Promise((done) => setTimeout(done, 300));
    expect(phasesAfter(h, from)).not.toContain('error');
    expect(h.kiosk.currentView.phase).toBe('cannot_verify');
  });
});
