/**
 * Relay conformance against a hostile phone (issue 12, docs/ble-limits.md): values longer than one ATT PDU of any phone link,
 * floods of notifications or writes faster than the backend takes them. Each is bounded, ends the transfer
 * at once with a reason that names the numbers, reaches neither the backend nor the phone past the bound,
 * and the kiosk is ready again on the same session. The ports are the fakes of test/support/fake-devices.ts.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ATT_MAX_VALUE_BYTES, type BleCentralHandlers } from '../../src/devices/ports.js';
import {
  MAX_EARLY_NOTIFICATIONS,
  MAX_OUTBOUND_BUFFERED_BYTES,
  MAX_PHONE_VALUE_BYTES,
  MAX_QUEUED_PHONE_EVENTS,
} from '../../src/kiosk/verification/ble-common.js';
import { startHarness, type Harness } from '../support/harness.js';
import {
  CENTRAL_CHARS,
  Latch,
  PERIPHERAL_CHARS,
  armed,
  b64,
  centralMode,
  connectCentral,
  connectPeripheral,
  expectFailure,
  expectRecoveryOnSameSession,
  receiveMany,
  scanQr,
  stackSpelling,
  u8,
} from '../support/relay-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const FAILED = { result: 'ble_transfer_failed', code: 'ble_transfer_failed', closeCode: 1000 } as const;

describe('values longer than one ATT PDU of the largest link (ATT_MTU 517 − 3 = 514 bytes)', () => {
  it('central: a notification of any length up to 514 bytes is relayed whole (above 512 with one warning); a longer one ends the transfer at once and is not relayed (property)', async () => {
    h = await startHarness();
    const harness = h;
    let conn = await armed(harness);
    await scanQr(harness, conn);
    let link = await connectCentral(harness, conn);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 64 * 1024 }), async (length) => {
        const data = new Uint8Array(length).fill(length & 0xff);
        link.notify(stackSpelling(CENTRAL_CHARS.s2c), data);
        if (length <= MAX_PHONE_VALUE_BYTES) {
          expect(await conn.expect('ble_notified')).toMatchObject({ data: Buffer.from(data).toString('base64') });
          return;
        }
        const report = await expectFailure(harness, conn, FAILED);
        expect(report.error?.detail).toBe(
          `the phone notified ${length} bytes on s2c; one ATT PDU carries at most 514 bytes (ATT_MTU 517 − 3)`,
        );
        expect(link.closed).toBe(true);
        // The next customer: the same session again, connected afresh.
        conn = await harness.backend.nextConnection();
        await conn.expect('engage');
        await scanQr(harness, conn);
        link = await connectCentral(harness, conn);
      }),
      // The edges always: the attribute maximum, ATT_MTU − 3 of a 517 link, one past it.
      { numRuns: 30, examples: [[ATT_MAX_VALUE_BYTES], [ATT_MAX_VALUE_BYTES + 1], [MAX_PHONE_VALUE_BYTES], [MAX_PHONE_VALUE_BYTES + 1]] },
    );
  });

  it('central: 513 and 514 bytes (ATT_MTU − 3 of an MTU 517 link, as Android before 13 sent) are relayed whole, with one warning naming the size', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    for (const length of [513, 514, 514]) {
      const data = new Uint8Array(length).fill(length & 0xff);
      link.notify(stackSpelling(CENTRAL_CHARS.s2c), data);
      expect(await conn.expect('ble_notified')).toMatchObject({ data: Buffer.from(data).toString('base64') });
    }
    const warnings = h.logs.records.filter((r) => r.event === 'ble_value_above_att_maximum');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ bytes: 513, characteristic: 's2c', op: 'notified' });
  });

  it('central: a notification of 515 bytes during the setup → ble_connected error naming it, nothing forwarded', async () => {
    h = await startHarness({ config: { timeouts: { backendReplyMs: 200 } } });
    h.central.behaviour = {
      duringSetup: (handlers) => {
        handlers.onNotification(stackSpelling(CENTRAL_CHARS.s2c), u8(1));
        handlers.onNotification(stackSpelling(CENTRAL_CHARS.s2c), new Uint8Array(515));
      },
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    expect(await conn.expect('ble_connected')).toEqual({
      type: 'step_result',
      op: 'ble_connected',
      status: 'error',
      role: 'central',
      reason: 'phone_value_too_large: the phone notified 515 bytes on s2c; one ATT PDU carries at most 514 bytes (ATT_MTU 517 − 3)',
    });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
  });

  it('peripheral: a phone write of 514 bytes is relayed, one of 515 ends the transfer at once, not forwarded as ble_written; recovery', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    session.write(stackSpelling(PERIPHERAL_CHARS.c2s), new Uint8Array(514).fill(1));
    expect(await conn.expect('ble_written')).toMatchObject({ data: Buffer.from(new Uint8Array(514).fill(1)).toString('base64') });
    session.write(stackSpelling(PERIPHERAL_CHARS.c2s), new Uint8Array(515).fill(2));
    const report = await expectFailure(h, conn, FAILED);
    expect(report.error?.detail).toBe('the phone wrote 515 bytes on c2s; one ATT PDU carries at most 514 bytes (ATT_MTU 517 − 3)');
    expect(session.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });
});

describe('floods', () => {
  it(`peripheral: more than ${MAX_QUEUED_PHONE_EVENTS} phone events while a read waits for its ble_read_response → ble_transfer_failed at once, none of them forwarded`, async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    const reading = session.read(stackSpelling(PERIPHERAL_CHARS.ident)).catch(() => 'failed');
    expect(await conn.expect('ble_read_request')).toMatchObject({ op: 'ble_read_request' });
    // The backend has not answered yet; the phone writes and writes.
    for (let i = 0; i <= MAX_QUEUED_PHONE_EVENTS; i++) session.write(stackSpelling(PERIPHERAL_CHARS.c2s), u8(i & 0xff));
    const report = await expectFailure(h, conn, FAILED);
    expect(report.error?.detail).toBe(
      `the phone sent more than ${MAX_QUEUED_PHONE_EVENTS} GATT events while a read waited for its ble_read_response`,
    );
    expect(await reading).toBe('failed');
    await expectRecoveryOnSameSession(h, conn);
  });

  it(`peripheral: ${MAX_QUEUED_PHONE_EVENTS} queued events are within the bound: all forwarded in order once the read is answered`, async () => {
    h = await startHarness({ config: { timeouts: { bleReadResponseMs: 10_000 } } });
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    const reading = session.read(stackSpelling(PERIPHERAL_CHARS.ident));
    await conn.expect('ble_read_request');
    for (let i = 0; i < MAX_QUEUED_PHONE_EVENTS; i++) session.write(stackSpelling(PERIPHERAL_CHARS.c2s), u8(i >> 8, i & 0xff));
    conn.stepRequest('ble_read_response', { data: b64([0x01]) });
    expect(Array.from(await reading)).toEqual([0x01]);
    for (let i = 0; i < MAX_QUEUED_PHONE_EVENTS; i++) {
      expect(await conn.expect('ble_written')).toMatchObject({ data: Buffer.from([i >> 8, i & 0xff]).toString('base64') });
    }
  });

  it(`central: more than ${MAX_EARLY_NOTIFICATIONS} notifications before ble_connected → ble_connected error naming the flood, none forwarded`, async () => {
    h = await startHarness({ config: { timeouts: { backendReplyMs: 200 } } });
    h.central.behaviour = {
      duringSetup: (handlers) => {
        for (let i = 0; i <= MAX_EARLY_NOTIFICATIONS; i++) handlers.onNotification(stackSpelling(CENTRAL_CHARS.s2c), u8(i & 0xff));
      },
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    expect(await conn.expect('ble_connected')).toEqual({
      type: 'step_result',
      op: 'ble_connected',
      status: 'error',
      role: 'central',
      reason: `phone_flood: the phone sent more than ${MAX_EARLY_NOTIFICATIONS} notifications before the kiosk was connected`,
    });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    expect(h.central.links.at(-1)?.closed).toBe(true);
  });

  it(`central: ${MAX_EARLY_NOTIFICATIONS} notifications before ble_connected are within the bound: forwarded in order right after it`, async () => {
    h = await startHarness();
    h.central.behaviour = {
      duringSetup: (handlers) => {
        for (let i = 0; i < MAX_EARLY_NOTIFICATIONS; i++) handlers.onNotification(stackSpelling(CENTRAL_CHARS.s2c), u8(i & 0xff));
      },
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    await connectCentral(h, conn);
    for (let i = 0; i < MAX_EARLY_NOTIFICATIONS; i++) expect(await conn.expect('ble_notified')).toMatchObject({ data: b64([i & 0xff]) });
  });

  it(`central: a backend that stops reading while the phone keeps notifying → ble_transfer_failed once ${MAX_OUTBOUND_BUFFERED_BYTES} bytes wait unsent; back to ready`, async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    conn.socket.pause(); // TCP back-pressure: the kiosk's socket buffer fills
    const value = new Uint8Array(ATT_MAX_VALUE_BYTES).fill(0x33);
    let sent = 0;
    // Notifications in bursts, each followed by a turn so the kiosk can see its socket's state.
    while (h.reports.length === 0 && sent < 200_000) {
      for (let i = 0; i < 500 && !link.closed; i++, sent++) link.notify(stackSpelling(CENTRAL_CHARS.s2c), value);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const report = await h.nextReport();
    expect({ result: report.result, code: report.error?.code }).toEqual({ result: 'ble_transfer_failed', code: 'ble_transfer_failed' });
    expect(report.error?.detail).toMatch(
      new RegExp(
        `^the phone sent faster than the backend takes it: \\d+ bytes wait to be sent, above the bound of ${MAX_OUTBOUND_BUFFERED_BYTES}$`,
      ),
    );
    // Bounded: it stopped within one burst of the bound (each ble_notified is under 1 KiB).
    expect(sent * 800).toBeLessThan(MAX_OUTBOUND_BUFFERED_BYTES + 64 * 1024 * 1024);
    conn.socket.resume();
    await conn.closed;
    const next = await h.backend.nextConnection();
    await next.expect('engage');
  });
});

describe('central: notifications before ble_connected are held, then forwarded in order', () => {
  it('notifications that arrive while connect() is still pending reach the backend only after ble_connected, in the phone’s order, before any later one', async () => {
    h = await startHarness();
    const harness = h;
    // connect() is held open by the test: the phone notifies while the kiosk is still setting up.
    const setup = new Latch<BleCentralHandlers>();
    const finish = new Latch();
    const connect = harness.central.connect.bind(harness.central);
    harness.central.connect = async (profile, handlers, signal) => {
      setup.open(handlers);
      await finish.promise;
      return connect(profile, handlers, signal);
    };
    const conn = await armed(harness);
    await scanQr(harness, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    const handlers = await setup.promise;
    const early: [string, number[]][] = [
      [CENTRAL_CHARS.state, [0x01]],
      [CENTRAL_CHARS.s2c, [0xa1]],
      [CENTRAL_CHARS.s2c, [0xa2, 0xa3]],
      [CENTRAL_CHARS.state, [0x01]],
    ];
    for (const [uuid, data] of early) handlers.onNotification(stackSpelling(uuid), Uint8Array.from(data));
    // Held: nothing reaches the backend while ble_connected has not been sent.
    await conn.expectSilence(300);
    expect(conn.pending).toEqual([]);
    finish.open(undefined);
    const link = await harness.central.nextLink();
    link.notify(stackSpelling(CENTRAL_CHARS.s2c), u8(0xb0)); // after ble_connected: forwarded at once, after the held ones
    expect(await receiveMany(conn, early.length + 2)).toEqual([
      { type: 'step_result', op: 'ble_connected', status: 'ok', role: 'central' },
      ...early.map(([uuid, data]) => ({ type: 'step_result', op: 'ble_notified', char: uuid, data: b64(data) })),
      { type: 'step_result', op: 'ble_notified', char: CENTRAL_CHARS.s2c, data: b64([0xb0]) },
    ]);
    // Each held notification went out once: nothing more follows.
    await conn.expectSilence(100);
  });
});
