/**
 * Relay conformance, the BLE link to the phone dropping (spec §3 "BLE transfer → Complete", §4.4 "The
 * final ble_write before complete is always one byte 0x02 on the state characteristic"): before the 0x02
 * end byte a drop is a failure unless `complete` still arrives within the grace period; after it, a drop is
 * the normal end of the BLE side and the kiosk waits for `complete`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BleValueTooLargeError } from '../../src/devices/ports.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/session-harness.js';
import {
  CENTRAL_CHARS,
  OUTCOME,
  PERIPHERAL_CHARS,
  armed,
  arr,
  b64,
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

const GRACE = (ms: number) => ({ timeouts: { bleLinkLossGraceMs: ms } });

describe('BLE link lost during the transfer', () => {
  it('§3 BLE transfer → Complete, link loss: central link lost before the 0x02 end byte, no complete within the grace period → ble_link_lost error, link closed, retry', async () => {
    h = await startHarness({ config: GRACE(200) });
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    link.notify(stackSpelling(CENTRAL_CHARS.s2c), u8(0x01));
    await conn.expect('ble_notified');
    link.drop('connection timeout');
    const report = await expectFailure(h, conn, { result: 'ble_link_lost', code: 'ble_link_lost', closeCode: 1000 });
    // What was relayed before the loss counts in the report (it said 0: counted only at progress updates).
    expect(report.bleMessages).toBe(1); // the ble_notified
    expect(link.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 BLE transfer → Complete, link loss: central link lost before the 0x02 end byte, but complete arrives within the grace period → complete', async () => {
    h = await startHarness({ config: GRACE(10_000) });
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64([0x01]) });
    link.notify(stackSpelling(CENTRAL_CHARS.s2c), u8(0x02));
    await conn.expect('ble_notified');
    link.drop('connection timeout');
    conn.send({ type: 'complete', outcome: OUTCOME });
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('verified');
    expect((await conn.closed).code).toBe(1000);
    expect(link.closed).toBe(true);
  });

  it('§3 BLE transfer → Complete, link loss: central link lost, then the backend still sends 0x02 and complete within the grace period → complete (the write is skipped)', async () => {
    h = await startHarness({ config: GRACE(10_000) });
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    link.drop('connection timeout');
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.state, data: b64([0x02]) });
    conn.send({ type: 'complete', outcome: OUTCOME });
    expect((await h.nextReport()).result).toBe('complete');
    expect((await conn.closed).code).toBe(1000);
  });

  it('§3 BLE transfer, link loss: a central write failing mid-transfer counts as a lost link → ble_link_lost error after the grace period', async () => {
    h = await startHarness({ config: GRACE(200) });
    h.central.behaviour = {
      onWrite: () => {
        throw new Error('ATT error: not connected');
      },
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    await connectCentral(h, conn);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64([0x01]) });
    await expectFailure(h, conn, { result: 'ble_link_lost', code: 'ble_link_lost', closeCode: 1000 });
  });

  it('§3 BLE transfer → Complete, link loss: central link lost AFTER the 0x02 end byte is benign: no error even past the grace period; complete then ends it', async () => {
    h = await startHarness({ config: GRACE(150) });
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    const from = mark(h);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.state, data: b64([0x02]) });
    await viewAfter(h, from, (v) => v.progress.step === 4); // the end byte was written
    expect(link.writes.map((w) => arr(w.data))).toEqual([[0x02]]);
    link.drop('remote user terminated connection');
    // Well past the grace period: the kiosk neither closes the socket nor reports anything.
    await conn.expectSilence(600);
    expect(conn.isClosed).toBe(false);
    expect(h.reports).toHaveLength(0);
    conn.send({ type: 'complete', outcome: OUTCOME });
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect((await conn.closed).code).toBe(1000);
  });

  it('§3 BLE transfer → Complete, link loss: peripheral phone disconnects before the 0x02 end byte, no complete within the grace period → ble_link_lost error', async () => {
    h = await startHarness({ config: GRACE(200) });
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    session.write(stackSpelling(PERIPHERAL_CHARS.c2s), u8(0x01));
    await conn.expect('ble_written');
    session.drop('remote user terminated connection');
    await expectFailure(h, conn, { result: 'ble_link_lost', code: 'ble_link_lost', closeCode: 1000 });
    expect(session.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 BLE transfer → Complete, link loss: peripheral phone disconnects AFTER the 0x02 end byte was notified → benign; complete then ends it', async () => {
    h = await startHarness({ config: GRACE(150) });
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    const from = mark(h);
    conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.state, data: b64([0x02]) });
    await viewAfter(h, from, (v) => v.progress.step === 4);
    session.drop('remote user terminated connection');
    await conn.expectSilence(600);
    expect(conn.isClosed).toBe(false);
    conn.send({ type: 'complete', outcome: OUTCOME });
    expect((await h.nextReport()).result).toBe('complete');
    expect(session.notifications.map((n) => arr(n.data))).toEqual([[0x02]]);
  });
});

// Not a lost link: the adapter refused a ble_write the link cannot carry (ports.ts BleValueTooLargeError).
// The kiosk says so at once with the size and the limit (issue 12; it used to wait out the grace period and
// report ble_link_lost), closes with 1009, and sends nothing behind it.
describe('a ble_write larger than one ATT PDU on the link (docs/ble-limits.md)', () => {
  const refuseAbove =
    (limit: number) =>
    (_uuid: string, data: Uint8Array): void => {
      const tooLarge = BleValueTooLargeError.check('notification', data.length, limit + 3);
      if (tooLarge) throw tooLarge;
    };

  it('peripheral: the notification is refused → ble_transfer_failed at once (not ble_link_lost after the grace period), 1009 with the size and limit; later writes are not delivered; recovery', async () => {
    h = await startHarness({ config: GRACE(60_000) });
    h.peripheral.behaviour = { onNotify: refuseAbove(182) };
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(new Array<number>(182).fill(1)) });
    await until(() => session.notifications.length === 1, 'the notification that fits');
    conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(new Array<number>(600).fill(2)) });
    conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64([3]) });
    const report = await expectFailure(h, conn, { result: 'ble_transfer_failed', code: 'ble_transfer_failed', closeCode: 1009 });
    expect(report.error?.detail).toBe('ble_write of 600 bytes exceeds the notification limit of 182 bytes (ATT_MTU 185 − 3)');
    expect(session.notifications.map((n) => n.data.length)).toEqual([182]);
    expect(h.logs.events()).not.toContain('ble_link_lost');
    await expectRecoveryOnSameSession(h, conn);
  });

  it('central: the Write Command is refused → ble_transfer_failed at once, 1009; recovery', async () => {
    h = await startHarness({ config: GRACE(60_000) });
    h.central.behaviour = {
      onWrite: (_uuid, data) => {
        const tooLarge = BleValueTooLargeError.check('write-without-response', data.length, 23);
        if (tooLarge) throw tooLarge;
      },
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64(new Array<number>(21).fill(1)) });
    const report = await expectFailure(h, conn, { result: 'ble_transfer_failed', code: 'ble_transfer_failed', closeCode: 1009 });
    expect(report.error?.detail).toBe('ble_write of 21 bytes exceeds the write-without-response limit of 20 bytes (ATT_MTU 23 − 3)');
    expect(link.writes).toEqual([]);
    await expectRecoveryOnSameSession(h, conn);
  });
});
