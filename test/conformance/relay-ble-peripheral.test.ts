/**
 * Relay conformance, BLE peripheral role: spec §3 (rows "ble_connected ok/error", "BLE transfer → Complete",
 * rule 3), §4.3 (`ble_connected`, `ble_written`, `ble_read_request` and its read-request rule), §4.4
 * (`ble_write` as a notification, `ble_read_response`) and §4.5 peripheral procedure (concurrency of BLE
 * events and socket messages).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { FakeConnection } from '../support/fake-backend.js';
import { BleSetupError, type FakePeripheralSession } from '../support/fake-devices.js';
import { startHarness, type Harness } from '../support/harness.js';
import {
  Latch,
  NON_EMPTY_REASON,
  OUTCOME,
  PERIPHERAL_CHARS,
  armed,
  arr,
  b64,
  connectPeripheral,
  endTransfer,
  expectFailure,
  expectRecoveryOnSameSession,
  mark,
  peripheralMode,
  receiveMany,
  sameUuid,
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

const P = PERIPHERAL_CHARS;
const phone = stackSpelling;
const IDENT = Array.from({ length: 16 }, (_, i) => 0xb0 + i);

/** A harness at the end of `qr_scanned`, with the peripheral mode about to be offered. */
async function scanned(config?: Record<string, unknown>): Promise<{ h: Harness; conn: FakeConnection }> {
  const harness = await startHarness(config ? { config } : {});
  h = harness;
  const conn = await armed(harness);
  await scanQr(harness, conn);
  return { h: harness, conn };
}

/** `ble_exchange` (peripheral only) and the session the kiosk advertises. */
async function advertised(h: Harness, conn: FakeConnection): Promise<FakePeripheralSession> {
  conn.stepRequest('ble_exchange', { modes: [peripheralMode()] });
  return h.peripheral.nextSession();
}

/** Wraps the session's `notify` to report when each call starts (the kiosk handed a ble_write to the stack). */
function trackNotifyCalls(session: FakePeripheralSession): { started: Latch[] } {
  const started = Array.from({ length: 16 }, () => new Latch());
  let calls = 0;
  const original = session.notify.bind(session);
  session.notify = (uuid: string, data: Uint8Array): Promise<void> => {
    started[calls++]?.open(undefined);
    return original(uuid, data);
  };
  return { started };
}

describe('§4.5 peripheral setup / §3 ble_connected ok (peripheral)', () => {
  it('§4.5 peripheral: the GATT service is built from the mode (service uuid, state, c2s, s2c, ident specs as sent)', async () => {
    const { h, conn } = await scanned();
    const mode = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const session = await h.peripheral.nextSession();
    expect(session.profile).toEqual({ serviceUuid: mode.service_uuid, characteristics: mode.characteristics });
    // Advertising alone is not a connection: nothing is sent yet.
    await conn.expectSilence(150);
  });

  it('§4.5 peripheral: a link-level connect is not a GATT event; the first subscription sends ble_connected (role peripheral)', async () => {
    const { h, conn } = await scanned();
    const session = await advertised(h, conn);
    session.connect();
    await conn.expectSilence(150);
    const from = mark(h);
    session.subscribe(phone(P.s2c));
    expect(await conn.receive()).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
    await viewAfter(h, from, (v) => v.phase === 'transferring' && v.role === 'peripheral');
  });

  it("§3 rule 3 / §4.5: the phone's first GATT event is a write → ble_connected is sent BEFORE its ble_written", async () => {
    const { h, conn } = await scanned();
    const session = await advertised(h, conn);
    session.write(phone(P.c2s), u8(0x01, 0x02));
    const [first, second] = await receiveMany(conn, 2);
    expect(first).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
    expect(second).toEqual({ type: 'step_result', op: 'ble_written', char: P.c2s, data: b64([0x01, 0x02]) });
  });

  it("§3 rule 3 / §4.5: the phone's first GATT event is a read → ble_connected is sent BEFORE its ble_read_request", async () => {
    const { h, conn } = await scanned();
    const session = await advertised(h, conn);
    const read = session.read(phone(P.ident));
    const [first, second] = await receiveMany(conn, 2);
    expect(first).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
    expect(second).toEqual({ type: 'step_result', op: 'ble_read_request', char: P.ident });
    conn.stepRequest('ble_read_response', { data: b64(IDENT) });
    expect(arr(await read)).toEqual(IDENT);
  });

  it('§3 rule 3 (peripheral): a ble_write before ble_connected (phone not connected yet) is a protocol violation (1002)', async () => {
    const { h, conn } = await scanned();
    const session = await advertised(h, conn);
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0x01]) });
    await expectFailure(h, conn, { result: 'violation', code: 'protocol_violation', closeCode: 1002 });
    expect(session.notifications).toHaveLength(0);
    expect(session.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });
});

describe('§3 ble_connected error (peripheral)', () => {
  it('§3 ble_connected error: advertising fails → status error, role peripheral, the stack reason verbatim; backend error → error view', async () => {
    const { h, conn } = await scanned();
    h.peripheral.behaviour = { failWith: new BleSetupError('advertising not supported by the adapter') };
    conn.stepRequest('ble_exchange', { modes: [peripheralMode()] });
    expect(await conn.expect('ble_connected')).toEqual({
      type: 'step_result',
      op: 'ble_connected',
      status: 'error',
      role: 'peripheral',
      reason: 'advertising not supported by the adapter',
    });
    conn.send({ type: 'error', message: 'BLE setup failed' });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
  });

  it('§3 ble_connected error: no phone connects within bleSetupMs → status error, role peripheral; the backend error names Bluetooth as the cause (ble_failed); retry', async () => {
    const { h, conn } = await scanned({ timeouts: { bleSetupMs: 300 } });
    const session = await advertised(h, conn);
    const reply = await conn.expect('ble_connected');
    expect(reply).toEqual({ type: 'step_result', op: 'ble_connected', status: 'error', role: 'peripheral', reason: NON_EMPTY_REASON });
    conn.send({ type: 'error', message: 'BLE setup failed' });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    expect(session.closed).toBe(true); // advertising stopped
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 ble_connected error: no phone connects and the backend says nothing → the kiosk gives up after backendReplyMs', async () => {
    const { h, conn } = await scanned({ timeouts: { bleSetupMs: 300, backendReplyMs: 1_500 } });
    const session = await advertised(h, conn);
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'error', role: 'peripheral' });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    expect(session.closed).toBe(true);
  });

  it('§3 ble_connected error: a phone connecting after ble_connected error is ignored (no second ble_connected, nothing forwarded)', async () => {
    const { h, conn } = await scanned({ timeouts: { bleSetupMs: 300, backendReplyMs: 3_000 } });
    const session = await advertised(h, conn);
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'error', role: 'peripheral' });
    // The phone shows up late, while the kiosk waits for the backend's answer to the error.
    session.subscribe(phone(P.s2c));
    session.write(phone(P.c2s), u8(0x01));
    await conn.expectSilence(200);
    conn.send({ type: 'error', message: 'BLE setup failed' });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
  });
});

describe('§4.3 ble_written / ble_read_request, §4.4 ble_write / ble_read_response (peripheral)', () => {
  it('§4.3 ble_written: one message per phone write, forwarded at once, char as the backend spelled it, no status', async () => {
    const { h, conn } = await scanned();
    const session = await connectPeripheral(h, conn);
    session.write(phone(P.c2s), u8(0x10));
    expect(await conn.receive()).toEqual({ type: 'step_result', op: 'ble_written', char: P.c2s, data: b64([0x10]) });
    session.write(phone(P.c2s), u8(0x11, 0x12));
    session.write(P.state.toLowerCase(), u8(0x01));
    session.write(phone(P.c2s), u8());
    expect(await receiveMany(conn, 3)).toEqual([
      { type: 'step_result', op: 'ble_written', char: P.c2s, data: b64([0x11, 0x12]) },
      { type: 'step_result', op: 'ble_written', char: P.state, data: b64([0x01]) },
      { type: 'step_result', op: 'ble_written', char: P.c2s, data: '' },
    ]);
  });

  it('§4.3 ble_read_request / §4.4 ble_read_response: exact shape; the response bytes answer the pending read', async () => {
    const { h, conn } = await scanned();
    const session = await connectPeripheral(h, conn);
    const read = session.read(phone(P.ident));
    expect(await conn.receive()).toEqual({ type: 'step_result', op: 'ble_read_request', char: P.ident });
    conn.stepRequest('ble_read_response', { data: b64(IDENT) });
    expect(arr(await read)).toEqual(IDENT);
  });

  it('§4.5 step 3: a phone reading ident repeatedly and at offsets; each read is its own ble_read_request and response', async () => {
    const { h, conn } = await scanned();
    const session = await connectPeripheral(h, conn);
    for (const offset of [0, 0, 5, 12, 16]) {
      const read = session.read(phone(P.ident), offset);
      expect(await conn.receive()).toEqual({ type: 'step_result', op: 'ble_read_request', char: P.ident });
      conn.stepRequest('ble_read_response', { data: b64(IDENT) });
      expect(arr(await read)).toEqual(IDENT.slice(offset));
    }
    // Reads of other characteristics: the backend answers empty bytes, which reach the phone.
    const other = session.read(phone(P.state));
    expect(await conn.receive()).toEqual({ type: 'step_result', op: 'ble_read_request', char: P.state });
    conn.stepRequest('ble_read_response', { data: '' });
    expect(arr(await other)).toEqual([]);
    // The session still works afterwards.
    endTransfer(conn, P.state);
    expect((await h.nextReport()).result).toBe('complete');
  });

  it('§4.4 ble_write (peripheral): decoded bytes are notified on the characteristic matched case-insensitively, in order', async () => {
    const { h, conn } = await scanned();
    const session = await connectPeripheral(h, conn);
    session.subscribe(phone(P.state));
    conn.stepRequest('ble_write', { char: P.s2c.toLowerCase(), data: b64([0x21, 0x22]) });
    conn.stepRequest('ble_write', { char: phone(P.s2c).toUpperCase(), data: b64([0x23]) });
    endTransfer(conn, P.state);
    expect((await h.nextReport()).result).toBe('complete');
    expect(session.notifications.map((n) => ({ s2c: sameUuid(n.uuid, P.s2c), data: arr(n.data) }))).toEqual([
      { s2c: true, data: [0x21, 0x22] },
      { s2c: true, data: [0x23] },
      { s2c: false, data: [0x02] },
    ]);
    expect(sameUuid(session.notifications[2]?.uuid ?? '', P.state)).toBe(true);
  });

  it('§3 BLE transfer → Complete (peripheral): 0x02 notified on state, then complete → socket closed 1000, service removed', async () => {
    const { h, conn } = await scanned();
    const session = await connectPeripheral(h, conn);
    session.subscribe(phone(P.state));
    endTransfer(conn, P.state);
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.outcome?.response).toEqual(OUTCOME.response);
    expect((await conn.closed).code).toBe(1000);
    expect(session.notifications.map((n) => arr(n.data))).toEqual([[0x02]]);
    expect(session.closed).toBe(true);
  });
});

describe('§4.3 read-request rule', () => {
  it.each([
    ['ble_write', { type: 'step_request', op: 'ble_write', params: { char: P.s2c, data: b64([0x01]) } }],
    ['complete', { type: 'complete', outcome: OUTCOME }],
    ['nfc_apdu', { type: 'step_request', op: 'nfc_apdu', params: { data: b64([0x00]) } }],
  ])(
    'read-request rule: after ble_read_request the next message must be ble_read_response; %s instead → violation 1002, the read fails',
    async (_name, message) => {
      const { h, conn } = await scanned();
      const session = await connectPeripheral(h, conn);
      const read = session.read(phone(P.ident));
      await conn.expect('ble_read_request');
      conn.send(message);
      await expect(read).rejects.toThrow();
      await expectFailure(h, conn, { result: 'violation', code: 'protocol_violation', closeCode: 1002 });
      expect(session.notifications).toHaveLength(0);
      await expectRecoveryOnSameSession(h, conn);
    },
  );

  it('read-request rule: an unsolicited ble_read_response (no read pending) → violation 1002', async () => {
    const { h, conn } = await scanned();
    const session = await connectPeripheral(h, conn);
    conn.stepRequest('ble_read_response', { data: b64(IDENT) });
    await expectFailure(h, conn, { result: 'violation', code: 'protocol_violation', closeCode: 1002 });
    expect(session.closed).toBe(true);
    await expectRecoveryOnSameSession(h, conn);
  });

  it('read-request rule: a second ble_read_response after the one that answered the read → violation 1002', async () => {
    // (A short idle watchdog, so a kiosk that swallows the second response fails fast with a timeout.)
    const { h, conn } = await scanned({ timeouts: { bleIdleMs: 1_000 } });
    const session = await connectPeripheral(h, conn);
    const read = session.read(phone(P.ident));
    await conn.expect('ble_read_request');
    conn.stepRequest('ble_read_response', { data: b64(IDENT) });
    conn.stepRequest('ble_read_response', { data: b64(IDENT) });
    expect(arr(await read)).toEqual(IDENT);
    await expectFailure(h, conn, { result: 'violation', code: 'protocol_violation', closeCode: 1002 });
  });
});

describe('§4.5 peripheral concurrency: BLE events and socket messages at once', () => {
  it('§4.5 concurrency: while a ble_write notification is in flight, phone writes are forwarded at once and a read is answered; both orders kept', async () => {
    const { h, conn } = await scanned();
    const gate = new Latch();
    const inFlight = new Latch();
    h.peripheral.behaviour = {
      onNotify: async () => {
        inFlight.open(undefined);
        await gate.promise; // a slow stack: the notification takes its time
      },
    };
    const session = await connectPeripheral(h, conn);
    session.subscribe(phone(P.state));
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0xd0]) });
    await inFlight.promise;
    // The phone reads ident while the notification is stuck: the read is relayed and answered at once.
    const read = session.read(phone(P.ident));
    expect(await conn.receive()).toEqual({ type: 'step_result', op: 'ble_read_request', char: P.ident });
    conn.stepRequest('ble_read_response', { data: b64(IDENT) });
    expect(arr(await read)).toEqual(IDENT);
    // More data from the backend queues behind the stuck notification...
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0xd1]) });
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0xd2]) });
    // ...while the phone's writes go straight through.
    session.write(phone(P.c2s), u8(0xe0));
    session.write(phone(P.c2s), u8(0xe1));
    expect(await receiveMany(conn, 2)).toEqual([
      { type: 'step_result', op: 'ble_written', char: P.c2s, data: b64([0xe0]) },
      { type: 'step_result', op: 'ble_written', char: P.c2s, data: b64([0xe1]) },
    ]);
    expect(session.notifications).toHaveLength(0);
    gate.open(undefined);
    endTransfer(conn, P.state);
    expect((await h.nextReport()).result).toBe('complete');
    expect(session.notifications.map((n) => arr(n.data))).toEqual([[0xd0], [0xd1], [0xd2], [0x02]]);
  });

  it("§4.5 concurrency: a notification waiting for the phone's subscription does not hold back its writes; orders kept", async () => {
    const { h, conn } = await scanned();
    h.peripheral.behaviour = { notifyNeedsSubscription: true };
    const session = await advertised(h, conn);
    const calls = trackNotifyCalls(session);
    // The phone starts with a write, before subscribing to anything.
    session.write(phone(P.c2s), u8(0xe0));
    expect((await receiveMany(conn, 2)).map((m) => m.op)).toEqual(['ble_connected', 'ble_written']);
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0xd0]) });
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0xd1]) });
    await calls.started[0]?.promise; // the first notification is with the stack, waiting for the subscription
    session.write(phone(P.c2s), u8(0xe1));
    session.write(phone(P.c2s), u8(0xe2));
    expect(await receiveMany(conn, 2)).toEqual([
      { type: 'step_result', op: 'ble_written', char: P.c2s, data: b64([0xe1]) },
      { type: 'step_result', op: 'ble_written', char: P.c2s, data: b64([0xe2]) },
    ]);
    expect(session.notifications).toHaveLength(0);
    // (The fake's subscription bookkeeping compares lower-cased UUIDs, so the phone spells them with dashes.)
    session.subscribe(P.s2c.toLowerCase());
    session.subscribe(P.state.toLowerCase());
    endTransfer(conn, P.state);
    expect((await h.nextReport()).result).toBe('complete');
    expect(session.notifications.map((n) => arr(n.data))).toEqual([[0xd0], [0xd1], [0x02]]);
  });
});
