/**
 * Relay conformance, BLE exchange and the central role: spec §3 (rows "ble_exchange", "ble_connected ok",
 * "ble_connected error", "BLE transfer → Complete", rule 3), §4.3 (`ble_connected`, `ble_notified`),
 * §4.4 (`ble_exchange`, `ble_write` in central mode, `complete`) and §4.5 central procedure.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BleSetupError } from '../support/fake-devices.js';
import { startHarness, type Harness } from '../support/harness.js';
import {
  CENTRAL_CHARS,
  Latch,
  NON_EMPTY_REASON,
  OUTCOME,
  PERIPHERAL_CHARS,
  armed,
  arr,
  at,
  b64,
  centralMode,
  connectCentral,
  endTransfer,
  expectFailure,
  expectRecoveryOnSameSession,
  mark,
  peripheralMode,
  receiveMany,
  sameUuid,
  scanQr,
  stackSpelling,
  viewAfter,
} from '../support/relay-fixtures.js';

let h: Harness | undefined;

async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe('§3 ble_exchange → BLE exchange / §4.4 ble_exchange mode choice', () => {
  it('§3 ble_exchange → pick mode: the first mode (central) is set up from the message fields', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const central = centralMode();
    conn.stepRequest('ble_exchange', { modes: [central, peripheralMode()] });
    expect(await conn.expect('ble_connected')).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'central' });
    const link = await h.central.nextLink();
    expect(link.profile).toEqual({ serviceUuid: central.service_uuid, characteristics: central.characteristics });
    expect(h.peripheral.sessions).toHaveLength(0);
  });

  it('§4.4 ble_exchange: an unusable central is skipped and the next usable mode (peripheral) is chosen', async () => {
    h = await startHarness();
    h.central.usable = false;
    const conn = await armed(h);
    await scanQr(h, conn);
    const peripheral = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [centralMode(), peripheral] });
    const session = await h.peripheral.nextSession();
    expect(session.profile).toEqual({ serviceUuid: peripheral.service_uuid, characteristics: peripheral.characteristics });
    session.subscribe(stackSpelling(PERIPHERAL_CHARS.s2c));
    expect(await conn.expect('ble_connected')).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
    expect(h.central.connectSignals).toHaveLength(0);
  });

  it('§4.4 ble_exchange: a role without a BLE port is skipped', async () => {
    h = await startHarness({ devices: { central: false } });
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode(), peripheralMode()] });
    const session = await h.peripheral.nextSession();
    session.subscribe(stackSpelling(PERIPHERAL_CHARS.s2c));
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'peripheral' });
  });

  it('§4.4 ble_exchange: usability is judged when ble_exchange arrives (central back in service is used)', async () => {
    h = await startHarness();
    h.central.usable = false;
    const conn = await armed(h);
    await scanQr(h, conn);
    h.central.usable = true;
    conn.stepRequest('ble_exchange', { modes: [centralMode(), peripheralMode()] });
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'central' });
    expect(h.peripheral.sessions).toHaveLength(0);
  });

  it('§4.4 ble_exchange: a central that is still coming up (starting) is waited for, then used — not skipped as unusable', async () => {
    h = await startHarness();
    const central = h.central;
    central.usable = false;
    central.reason = 'starting';
    const conn = await armed(h);
    await scanQr(h, conn);
    setTimeout(() => {
      central.usable = true;
    }, 150);
    conn.stepRequest('ble_exchange', { modes: [centralMode(), peripheralMode()] });
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'central' });
    expect(h.peripheral.sessions).toHaveLength(0);
    expect(h.logs.records.some((r) => r.event === 'ble_adapter_starting')).toBe(true);
  });

  it('§3 ble_connected error: a role still starting at the bound is reported as starting (the wait is bounded by bleSetupMs)', async () => {
    h = await startHarness({ config: { timeouts: { bleSetupMs: 300 } } });
    h.central.usable = false;
    h.central.reason = 'starting';
    const conn = await armed(h);
    await scanQr(h, conn);
    const started = Date.now();
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    const reply = await conn.expect('ble_connected');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(reply).toMatchObject({ status: 'error', role: 'central', reason: expect.stringContaining('central starting') as unknown });
  });

  it('§4.4 ble_exchange: modes are taken in the order given (a usable peripheral listed first wins)', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [peripheralMode(), centralMode()] });
    const session = await h.peripheral.nextSession();
    session.subscribe(stackSpelling(PERIPHERAL_CHARS.s2c));
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'peripheral' });
    expect(h.central.connectSignals).toHaveLength(0);
  });
});

describe('§3 ble_connected ok', () => {
  it('§3 ble_connected ok: sent once the link is up and s2c subscribed, role = the chosen mode; ble_write then flows', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const from = mark(h);
    const link = await connectCentral(h, conn);
    await viewAfter(h, from, (v) => v.phase === 'transferring' && v.role === 'central' && v.prompt === 'approve_on_phone');
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.state, data: b64([0x01]) });
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64([0xa0, 0xa1]) });
    endTransfer(conn, CENTRAL_CHARS.state);
    expect((await h.nextReport()).result).toBe('complete');
    expect(link.writes.map((w) => arr(w.data))).toEqual([[0x01], [0xa0, 0xa1], [0x02]]);
  });
});

describe('§3 ble_connected error', () => {
  it('§3 ble_connected error: no offered role usable → status error with role and reason; backend error → error view naming Bluetooth (ble_unavailable)', async () => {
    h = await startHarness();
    h.central.usable = false;
    h.peripheral.usable = false;
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode(), peripheralMode()] });
    const reply = await conn.expect('ble_connected');
    expect(reply).toEqual({ type: 'step_result', op: 'ble_connected', status: 'error', role: 'central', reason: NON_EMPTY_REASON });
    conn.send({ type: 'error', message: 'BLE setup failed' });
    // The backend's error answers the kiosk's own failure: the report names Bluetooth, not the backend.
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_unavailable', closeCode: 1000 });
    expect(h.central.connectSignals).toHaveLength(0);
    expect(h.peripheral.sessions).toHaveLength(0);
  });

  it('§3 ble_connected error: no offered role usable and the backend says nothing → the kiosk gives up after backendReplyMs', async () => {
    h = await startHarness({ config: { timeouts: { backendReplyMs: 1_500 } } });
    h.central.usable = false;
    h.peripheral.usable = false;
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode(), peripheralMode()] });
    expect(await conn.expect('ble_connected')).toMatchObject({ status: 'error', role: 'central' });
    const report = await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_unavailable', closeCode: 1000 });
    expect(report.error?.retryable).toBe(true);
    h.central.usable = true;
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 ble_connected error: central scan/connect fails → status error, role central, the stack reason verbatim; the backend error that answers it does not hide the cause (ble_failed, not backend_error)', async () => {
    h = await startHarness();
    h.central.behaviour = { failWith: new BleSetupError('no device advertising the service') };
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    expect(await conn.expect('ble_connected')).toEqual({
      type: 'step_result',
      op: 'ble_connected',
      status: 'error',
      role: 'central',
      reason: 'no device advertising the service',
    });
    conn.send({ type: 'error', message: 'BLE setup failed' });
    const report = await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    expect(report.error?.detail).toContain('no device advertising the service');
    h.central.behaviour = {};
    await expectRecoveryOnSameSession(h, conn);
  });

  it('§3 ble_connected error: central scan/connect times out → status error; the abandoned connect is aborted; silence → give up', async () => {
    h = await startHarness({ config: { timeouts: { bleSetupMs: 300, backendReplyMs: 1_500 } } });
    h.central.behaviour = { hang: true };
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    const reply = await conn.expect('ble_connected');
    expect(reply).toEqual({ type: 'step_result', op: 'ble_connected', status: 'error', role: 'central', reason: NON_EMPTY_REASON });
    expect(at(h.central.connectSignals, 0).aborted).toBe(true);
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    h.central.behaviour = {};
    await expectRecoveryOnSameSession(h, conn);
  });
});

describe('§3 BLE transfer → Complete (central)', () => {
  it('§3 BLE transfer → Complete: the final 0x02 on state is written before teardown; complete → socket closed 1000, link closed', async () => {
    h = await startHarness({ config: { timeouts: { completionFlushMs: 10_000 } } });
    const endWritten = new Latch();
    const release = new Latch();
    h.central.behaviour = {
      onWrite: async (_uuid, data) => {
        if (data.length === 1 && data[0] === 0x02) {
          endWritten.open(undefined);
          await release.promise; // a slow stack: complete arrives while the end byte is still being written
        }
      },
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    endTransfer(conn, CENTRAL_CHARS.state);
    await endWritten.promise;
    await conn.expectSilence(100);
    expect(conn.isClosed).toBe(false);
    expect(link.closed).toBe(false);
    release.open(undefined);
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.outcome).toMatchObject({ verdict: 'verified', response: OUTCOME.response, source: 'complete' });
    expect((await conn.closed).code).toBe(1000);
    expect(link.writes.map((w) => ({ state: sameUuid(w.uuid, CENTRAL_CHARS.state), data: arr(w.data) }))).toEqual([
      { state: true, data: [0x02] },
    ]);
    expect(link.closed).toBe(true);
    const result = await h.view((v) => v.phase === 'result');
    expect(result.outcome?.verdict).toBe('verified');
  });

  it('§4.4 complete: a rejected outcome is shown as rejected and the socket is closed 1000', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.state, data: b64([0x02]) });
    conn.send({ type: 'complete', outcome: { ...OUTCOME, issuer_authentication: 'Invalid', errors: { issuer: 'bad signature' } } });
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('rejected');
    expect((await conn.closed).code).toBe(1000);
    expect(link.closed).toBe(true);
  });
});

describe('§4.4 ble_write (central) / §4.3 ble_notified', () => {
  it('§4.4 ble_write (central): decoded bytes written to the characteristic matched case-insensitively; no reply', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    const payload = Array.from({ length: 180 }, (_, i) => (i * 13) & 0xff);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s.toLowerCase(), data: b64(payload) });
    conn.stepRequest('ble_write', { char: stackSpelling(CENTRAL_CHARS.state).toUpperCase(), data: b64([0x01]) });
    endTransfer(conn, CENTRAL_CHARS.state.toLowerCase());
    expect((await h.nextReport()).result).toBe('complete');
    expect(link.writes.map((w) => ({ c2s: sameUuid(w.uuid, CENTRAL_CHARS.c2s), data: arr(w.data) }))).toEqual([
      { c2s: true, data: payload },
      { c2s: false, data: [0x01] },
      { c2s: false, data: [0x02] },
    ]);
    expect(sameUuid(at(link.writes, 1).uuid, CENTRAL_CHARS.state)).toBe(true);
  });

  it('§4.3 ble_notified: one message per notification, never combined, char spelled as the backend spelled it, no status', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    const chunks = [[0x01], [0x02, 0x03], [], [0x04, 0x05, 0x06]];
    link.notify(stackSpelling(CENTRAL_CHARS.s2c), Uint8Array.from(at(chunks, 0)));
    // Forwarded at once: the first arrives before the next notification happens.
    expect(await conn.expect('ble_notified')).toEqual({
      type: 'step_result',
      op: 'ble_notified',
      char: CENTRAL_CHARS.s2c,
      data: b64(at(chunks, 0)),
    });
    for (const chunk of chunks.slice(1)) link.notify(stackSpelling(CENTRAL_CHARS.s2c), Uint8Array.from(chunk));
    link.notify(CENTRAL_CHARS.state.toLowerCase(), Uint8Array.from([0x02]));
    const messages = await receiveMany(conn, 4);
    expect(messages).toEqual([
      ...chunks.slice(1).map((c) => ({ type: 'step_result', op: 'ble_notified', char: CENTRAL_CHARS.s2c, data: b64(c) })),
      { type: 'step_result', op: 'ble_notified', char: CENTRAL_CHARS.state, data: b64([0x02]) },
    ]);
  });

  it('screen prompts: "approve on your phone" until the phone answers the delivered request, then "receiving"', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    await viewAfter(h, 0, (v) => v.phase === 'transferring' && v.prompt === 'approve_on_phone');
    // Data from the phone before the request reached it is not the answer.
    link.notify(stackSpelling(CENTRAL_CHARS.s2c), Uint8Array.from([0x01]));
    await conn.expect('ble_notified');
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64([0x00, 0xaa]) });
    await until(() => link.writes.length === 1);
    const from = h.views.length;
    expect(h.views.at(-1)?.prompt).toBe('approve_on_phone');
    // A state write is not the answer either; a chunk on s2c is.
    link.notify(stackSpelling(CENTRAL_CHARS.state), Uint8Array.from([0x01]));
    await conn.expect('ble_notified');
    expect(h.views.slice(from).some((v) => v.prompt === 'receiving')).toBe(false);
    link.notify(stackSpelling(CENTRAL_CHARS.s2c), Uint8Array.from([0x01, 0x02]));
    await conn.expect('ble_notified');
    const receiving = await viewAfter(h, from, (v) => v.prompt === 'receiving');
    expect(receiving).toMatchObject({ phase: 'transferring', progress: { step: 3 } });
  });

  it('§4.5 central step order: a notification during setup is forwarded only after ble_connected', async () => {
    h = await startHarness();
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    const link = await h.central.nextLink();
    link.notify(stackSpelling(CENTRAL_CHARS.s2c), Uint8Array.from([0x77]));
    const [first, second] = await receiveMany(conn, 2);
    expect(first).toMatchObject({ op: 'ble_connected', status: 'ok', role: 'central' });
    expect(second).toEqual({ type: 'step_result', op: 'ble_notified', char: CENTRAL_CHARS.s2c, data: b64([0x77]) });
  });
});

describe('§3 rule 3 (central): no ble_write before ble_connected', () => {
  it('§3 rule 3: a ble_write before ble_connected is a protocol violation (1002); the pending connect is aborted', async () => {
    h = await startHarness();
    h.central.behaviour = { hang: true };
    const conn = await armed(h);
    await scanQr(h, conn);
    const from = mark(h);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    await viewAfter(h, from, (v) => v.phase === 'ble_connecting');
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.state, data: b64([0x01]) });
    await expectFailure(h, conn, { result: 'violation', code: 'protocol_violation', closeCode: 1002 });
    expect(at(h.central.connectSignals, 0).aborted).toBe(true);
    expect(h.central.links).toHaveLength(0);
    expect(h.logs.records.find((r) => r.event === 'protocol_violation')).toMatchObject({ kind: 'out_of_sequence', op: 'ble_write' });
    h.central.behaviour = {};
    await expectRecoveryOnSameSession(h, conn);
  });
});
