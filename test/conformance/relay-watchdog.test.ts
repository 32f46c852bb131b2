/**
 * Relay conformance, watchdogs: every wait of the relay is bounded (card, re-tap, BLE setup, BLE idle,
 * `ble_read_response`, a stuck write, the backend's reply). Each ends the attempt with an error view and
 * the kiosk returns to `ready` on the same session. Timeouts are shortened through the configuration.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TransmitOptions } from '../../src/devices/ports.js';
import { NfcTransmitError } from '../support/fake-devices.js';
import { startHarness, type Harness } from '../support/harness.js';
import {
  CENTRAL_CHARS,
  PERIPHERAL_CHARS,
  armed,
  at,
  b64,
  centralMode,
  connectCentral,
  connectPeripheral,
  expectFailure,
  expectRecoveryOnSameSession,
  mark,
  scanQr,
  stackSpelling,
  u8,
  viewAfter,
} from '../support/relay-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const SELECT = [0x00, 0xa4, 0x04, 0x00];
const TIMEOUT_CLOSE = 4008;

describe('watchdogs: NFC', () => {
  it('watchdog, §4.3 nfc_rapdu: mute card (the port never answers): the kiosk guard sends nfc_rapdu error reason Timeout; backend error → error view → ready', async () => {
    h = await startHarness({ config: { timeouts: { apduMs: 200 } } });
    const conn = await armed(h);
    h.nfc.tap(() => 'mute');
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64(SELECT) });
    expect(await conn.expect('nfc_rapdu')).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'Timeout' });
    conn.send({ type: 'error', message: 'fatal PC/SC error' });
    await expectFailure(h, conn, { result: 'backend_error', code: 'backend_error', closeCode: 1000 });
    h.nfc.lift();
    await expectRecoveryOnSameSession(h, conn);
  });

  it('watchdog, §4.3 nfc_rapdu: the port times out by itself: it is given timeoutMs = apduMs and its Timeout is forwarded as nfc_rapdu error reason Timeout', async () => {
    h = await startHarness({ config: { timeouts: { apduMs: 250 } } });
    const conn = await armed(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
    const card = at(h.nfc.cards, 0);
    const seen: TransmitOptions[] = [];
    // A port honouring its contract: it gives up after options.timeoutMs with the PC/SC `Timeout` variant.
    card.transmit = (_command: Uint8Array, options: TransmitOptions): Promise<Uint8Array> => {
      seen.push(options);
      return new Promise((_resolve, reject) => setTimeout(() => reject(new NfcTransmitError('Timeout')), options.timeoutMs));
    };
    conn.stepRequest('nfc_apdu', { data: b64(SELECT) });
    expect(await conn.expect('nfc_rapdu')).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'Timeout' });
    expect(seen.map((o) => o.timeoutMs)).toEqual([250]);
    conn.send({ type: 'error', message: 'fatal PC/SC error' });
    await expectFailure(h, conn, { result: 'backend_error', code: 'backend_error', closeCode: 1000 });
    h.nfc.lift();
    await expectRecoveryOnSameSession(h, conn);
  });

  it('watchdog, §4.4 nfc_await_card: no re-tap within awaitCardMs → timeout: socket closed 4008, error view, ready on the same session', async () => {
    h = await startHarness({ config: { timeouts: { awaitCardMs: 300 } } });
    const conn = await armed(h);
    h.nfc.tap(() => new NfcTransmitError('RemovedCard'));
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64(SELECT) });
    await conn.expect('nfc_rapdu');
    h.nfc.lift();
    conn.stepRequest('nfc_await_card', {});
    await expectFailure(h, conn, { result: 'timeout', code: 'timeout', closeCode: TIMEOUT_CLOSE });
    await expectRecoveryOnSameSession(h, conn);
  });

  it('watchdog, §3 NFC handover: backend silent after nfc_rapdu for backendReplyMs → timeout 4008, error view, ready on the same session', async () => {
    h = await startHarness({ config: { timeouts: { backendReplyMs: 1_500 } } });
    const conn = await armed(h);
    h.nfc.tap(() => u8(0x90, 0x00));
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64(SELECT) });
    await conn.expect('nfc_rapdu');
    await expectFailure(h, conn, { result: 'timeout', code: 'timeout', closeCode: TIMEOUT_CLOSE });
    h.nfc.lift();
    await expectRecoveryOnSameSession(h, conn);
  });
});

describe('watchdogs: BLE', () => {
  it('watchdog, §3 ble_connected error: BLE setup hang (central) → ble_connected error after bleSetupMs, the connect AbortSignal aborted; backend error → error view → ready', async () => {
    h = await startHarness({ config: { timeouts: { bleSetupMs: 300 } } });
    h.central.behaviour = { hang: true };
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'error', role: 'central' });
    const signal = at(h.central.connectSignals, 0);
    expect(signal.aborted).toBe(true);
    conn.send({ type: 'error', message: 'BLE setup failed' });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    h.central.behaviour = {};
    await expectRecoveryOnSameSession(h, conn);
  });

  it('watchdog, §4.5 central setup: an abandoned central connect gets its AbortSignal aborted when the kiosk stops mid-setup', async () => {
    const harness = await startHarness();
    h = harness;
    harness.central.behaviour = { hang: true };
    const conn = await armed(harness);
    await scanQr(harness, conn);
    const from = mark(harness);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    await viewAfter(harness, from, (v) => v.phase === 'ble_connecting');
    const signal = at(harness.central.connectSignals, 0);
    expect(signal.aborted).toBe(false);
    h = undefined;
    await harness.stop();
    expect(signal.aborted).toBe(true);
    expect((await conn.closed).code).toBe(1001);
  });

  it('watchdog, §3 BLE transfer: BLE idle (central): no traffic either way for bleIdleMs → timeout 4008, link closed, error view, ready on the same session', async () => {
    h = await startHarness({ config: { timeouts: { bleIdleMs: 300 } } });
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    await expectFailure(h, conn, { result: 'timeout', code: 'timeout', closeCode: TIMEOUT_CLOSE });
    expect(link.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });

  it('watchdog, §3 BLE transfer: BLE idle (peripheral): no traffic either way for bleIdleMs → timeout 4008, service removed, error view', async () => {
    h = await startHarness({ config: { timeouts: { bleIdleMs: 300 } } });
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    await expectFailure(h, conn, { result: 'timeout', code: 'timeout', closeCode: TIMEOUT_CLOSE });
    expect(session.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });

  it('watchdog, §4.3 ble_read_request: ble_read_response never comes within bleReadResponseMs → the phone read fails, timeout 4008, error view, ready on the same session', async () => {
    h = await startHarness({ config: { timeouts: { bleReadResponseMs: 300 } } });
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    const read = session.read(stackSpelling(PERIPHERAL_CHARS.ident));
    await conn.expect('ble_read_request');
    await expect(read).rejects.toThrow();
    await expectFailure(h, conn, { result: 'timeout', code: 'timeout', closeCode: TIMEOUT_CLOSE });
    expect(session.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });

  it('watchdog, §4.4 ble_write: a ble_write the BLE stack never finishes → timeout after bleWriteMs (4008), error view', async () => {
    h = await startHarness({ config: { timeouts: { bleWriteMs: 300 } } });
    h.central.behaviour = { onWrite: () => new Promise<void>(() => undefined) };
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64([0x01]) });
    await expectFailure(h, conn, { result: 'timeout', code: 'timeout', closeCode: TIMEOUT_CLOSE });
    expect(link.closed).toBe(true);
    h.central.behaviour = {};
    await expectRecoveryOnSameSession(h, conn);
  });

  it('watchdog, §3 QR engaged: backend silent after qr_scanned (the first reply, bounded by min(firstReplyMs, backendReplyMs)) → not answering, 4008, error view, ready on the same session', async () => {
    h = await startHarness({ config: { timeouts: { backendReplyMs: 300 } } });
    const conn = await armed(h);
    await scanQr(h, conn);
    await expectFailure(h, conn, { result: 'not_answering', code: 'backend_not_answering', closeCode: TIMEOUT_CLOSE });
    await expectRecoveryOnSameSession(h, conn);
  });
});
