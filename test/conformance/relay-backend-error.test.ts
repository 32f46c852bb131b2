/**
 * Relay conformance, spec §3 row "Any phase — backend sends `error`" with §4.4 `error` and §5 rule 2: in
 * every phase, `error` ends the attempt: the kiosk closes the socket, tells the user, and the session is
 * retried on the SAME id and client_secret.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FakeConnection } from '../support/fake-backend.js';
import { NfcTransmitError } from '../support/fake-devices.js';
import { startHarness, type Harness } from '../support/harness.js';
import {
  CENTRAL_CHARS,
  Latch,
  PERIPHERAL_CHARS,
  armed,
  at,
  b64,
  centralMode,
  connectCentral,
  connectPeripheral,
  expectFailure,
  expectRecoveryOnSameSession,
  lastIndexOf,
  mark,
  peripheralMode,
  scanQr,
  u8,
  viewAfter,
} from '../support/relay-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const ERROR = { type: 'error', message: 'fatal protocol error' } as const;

async function failsWithBackendError(h: Harness, conn: FakeConnection): Promise<void> {
  conn.send(ERROR);
  await expectFailure(h, conn, { result: 'backend_error', code: 'backend_error', closeCode: 1000 });
  const errorView = at(
    h.views,
    lastIndexOf(h, (v) => v.phase === 'error'),
  );
  expect(errorView.error?.retryable).toBe(true);
}

describe('§3 Any phase: backend sends error → socket closed, error shown, retry on the same session', () => {
  it('§3 Any phase, backend error: error while idle (engaged, before any tap or scan): socket closed 1000, error shown, re-armed on the same session', async () => {
    h = await startHarness({ config: { session: { offlineBackoffMinMs: 50 } } });
    const conn = await armed(h);
    const from = mark(h);
    conn.send(ERROR);
    expect((await conn.closed).code).toBe(1000);
    await viewAfter(h, from, (v) => v.error !== null);
    expect(h.logs.records.some((r) => r.event === 'backend_error')).toBe(true);
    expect(h.reports).toHaveLength(0); // no customer, no verification report
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 Any phase, backend error: error after qr_scanned (QR engaged): socket closed 1000, error view, retry on the same session', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    await failsWithBackendError(h, conn);
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 Any phase, backend error: error during the NFC handover: socket closed 1000, error view, card released, retry on the same session', async () => {
    h = await startHarness();
    const conn = await armed(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) });
    await conn.expect('nfc_rapdu');
    await failsWithBackendError(h, conn);
    expect(at(h.nfc.cards, 0).released).toBe(true);
    h.nfc.lift();
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 Any phase, backend error: error while awaiting the card (after nfc_await_card): the wait ends at once, error view, retry on the same session', async () => {
    h = await startHarness();
    const conn = await armed(h);
    h.nfc.tap(() => new NfcTransmitError('RemovedCard'));
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) });
    await conn.expect('nfc_rapdu');
    const from = mark(h);
    conn.stepRequest('nfc_await_card', {});
    await viewAfter(h, from, (v) => v.phase === 'awaiting_card');
    await failsWithBackendError(h, conn);
    // A tap now is a new customer on the re-armed session, not a late re-tap of the failed attempt.
    h.nfc.lift();
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 Any phase, backend error: error during BLE setup (central still connecting): the connect is aborted, error view, retry on the same session', async () => {
    h = await startHarness();
    h.central.behaviour = { hang: true };
    const conn = await armed(h);
    await scanQr(h, conn);
    const from = mark(h);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    await viewAfter(h, from, (v) => v.phase === 'ble_connecting');
    await failsWithBackendError(h, conn);
    expect(at(h.central.connectSignals, 0).aborted).toBe(true);
    h.central.behaviour = {};
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 Any phase, backend error: error during BLE setup (peripheral advertising, no phone yet): advertising stops, error view, retry on the same session', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [peripheralMode()] });
    const session = await h.peripheral.nextSession();
    await failsWithBackendError(h, conn);
    expect(session.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 Any phase, backend error: error during the BLE transfer (central): socket closed 1000, link closed, error view, retry on the same session', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64([0x01]) });
    link.notify(CENTRAL_CHARS.s2c.toLowerCase(), u8(0x02));
    await conn.expect('ble_notified');
    await vi.waitFor(() => expect(link.writes).toHaveLength(1)); // the write before the error is delivered
    await failsWithBackendError(h, conn);
    expect(link.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 Any phase, backend error: error during the BLE transfer while a ble_write is still being written: acted on at once, link closed', async () => {
    h = await startHarness();
    const stuck = new Latch();
    h.central.behaviour = {
      onWrite: async () => {
        stuck.open(undefined);
        await new Promise<void>(() => undefined); // the stack never takes the write
      },
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64([0x01]) });
    await stuck.promise;
    await failsWithBackendError(h, conn);
    expect(link.closed).toBe(true);
    h.central.behaviour = {};
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 Any phase, backend error: error during the BLE transfer (peripheral): socket closed 1000, service removed, error view, retry on the same session', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    session.write(PERIPHERAL_CHARS.c2s.toLowerCase(), u8(0x01));
    await conn.expect('ble_written');
    await failsWithBackendError(h, conn);
    expect(session.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });
});
