/**
 * Robustness regressions: misbehaving device adapters, BLE setup edge cases, the link-loss grace, older
 * sessions refused with 401, single-use QR engagements, oversize messages, the WebSocket heartbeat and the
 * kiosk's own lifecycle. Each test names the open point of docs/protocol.md §10 (as its table names it) or the spec
 * section it checks. Device faults are injected by replacing methods on the harness's fake devices, the
 * way a broken adapter would behave; timeouts are shortened through the configuration.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Availability, BleCentralHandlers, GattProfile, NfcCard, PeripheralEvent } from '../../src/devices/ports.js';
import { FakeBackend, type FakeConnection } from '../support/fake-backend.js';
import { NfcTransmitError, type ApduResponder, type FakeCentralLink } from '../support/fake-devices.js';
import { startHarness, type Harness, type HarnessOptions } from '../support/harness.js';
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
  completeQrVerification,
  connectCentral,
  endTransfer,
  expectFailure,
  expectRecoveryOnSameSession,
  freshQr,
  lastIndexOf,
  mark,
  peripheralMode,
  scanQr,
  stackSpelling,
  u8,
  viewAfter,
  violationLogs,
} from '../support/relay-fixtures.js';
import { FreezeGate } from '../support/robust-freeze-gate.js';
import { TcpGate, until } from '../support/session-harness.js';

// ---------------------------------------------------------------- fixtures

let h: Harness | undefined;
let ownBackend: FakeBackend | undefined;
let gate: TcpGate | undefined;
let freezeGate: FreezeGate | undefined;
/** Run after the kiosk is stopped (e.g. releasing a device call the test left hanging). */
const cleanups: (() => void)[] = [];

afterEach(async () => {
  await h?.stop();
  h = undefined;
  for (const cleanup of cleanups.splice(0)) cleanup();
  await gate?.shut();
  gate = undefined;
  await freezeGate?.close();
  freezeGate = undefined;
  await ownBackend?.stop();
  ownBackend = undefined;
});

async function start(options: HarnessOptions = {}): Promise<Harness> {
  h = await startHarness(options);
  return h;
}

const SELECT = [0x00, 0xa4, 0x04, 0x00, 0x07, 0xd2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00];
const OK = [0x90, 0x00];
const answersOk: ApduResponder = () => u8(...OK);
const P = PERIPHERAL_CHARS;
const phone = stackSpelling;
const never = <T>(): Promise<T> => new Promise<T>(() => undefined);
const posts = (backend: FakeBackend): number => backend.http.filter((r) => r.method === 'POST').length;

/** Taps a phone on an armed session; returns the card the kiosk connected. */
async function tap(harness: Harness, conn: FakeConnection, responder: ApduResponder = answersOk): Promise<NfcCard> {
  const before = harness.nfc.cards.length;
  harness.nfc.tap(responder);
  await conn.expect('nfc_card_present');
  return at(harness.nfc.cards, before);
}

/** An adapter that cannot even say whether it is usable. */
const crashingAvailability = (): Availability => {
  throw new Error('adapter crashed: driver not responding');
};

/**
 * Waits until the kiosk's cool-down for a failed QR engagement is certainly over: it was set before the
 * report of the failure was emitted (at `reportedAt` or earlier) and lasts `errorDisplayMs`.
 */
async function coolDownOver(harness: Harness, reportedAt: number): Promise<void> {
  const { errorDisplayMs } = harness.config.timeouts;
  await until(() => Date.now() > reportedAt + errorDisplayMs, 'the QR cool-down to pass', errorDisplayMs + 5_000);
}

// ================================================================ misbehaving adapters

describe('docs/protocol.md §10 "misbehaving adapters": nothing ends the kiosk loop', () => {
  it('docs/protocol.md §10 "misbehaving adapters" / "remove your phone": a card whose waitForRemoval() rejects (reader unplugged) ends the remove_phone screen; the kiosk is ready again and the next QR scan works', async () => {
    const h = await start();
    const conn1 = await armed(h);
    const card = await tap(h, conn1);
    // The reader is unplugged while the phone still lies on it: asking about the card fails.
    card.waitForRemoval = () => Promise.reject(new Error('SCARD_E_NO_READERS_AVAILABLE'));
    conn1.stepRequest('nfc_apdu', { data: b64(SELECT) });
    await conn1.expect('nfc_rapdu');
    await connectCentral(h, conn1);
    endTransfer(conn1, CENTRAL_CHARS.state);
    expect((await h.nextReport()).result).toBe('complete');
    expect(card.present).toBe(true);

    const shown = await h.view((v) => v.phase === 'remove_phone');
    const afterScreen = h.views.indexOf(shown);
    const conn2 = await armed(h, afterScreen);
    expect(h.views.slice(afterScreen).some((v) => v.error?.code === 'internal_error')).toBe(false);
    expect(h.logs.events()).not.toContain('kiosk_loop_fault');
    await completeQrVerification(h, conn2);
  });

  it('docs/protocol.md §10 "misbehaving adapters": a BLE central link whose close() throws synchronously at teardown after complete → the report is still emitted and the next verification works', async () => {
    const h = await start();
    const connect = h.central.connect.bind(h.central);
    let throwingCloses = 0;
    h.central.connect = async (profile: GattProfile, handlers: BleCentralHandlers, signal: AbortSignal) => {
      const link = await connect(profile, handlers, signal);
      const fake: FakeCentralLink = at(h.central.links, h.central.links.length - 1);
      fake.close = (): Promise<void> => {
        fake.closed = true;
        throwingCloses++;
        throw new Error('adapter bug: close() threw');
      };
      return link;
    };
    const conn1 = await armed(h);
    await completeQrVerification(h, conn1);
    expect(throwingCloses).toBe(1);

    const conn2 = await armed(h, mark(h));
    expect(conn2.session.id).not.toBe(conn1.session.id); // the first engagement was spent
    await completeQrVerification(h, conn2);
    expect(throwingCloses).toBe(2);
    expect(h.logs.events()).not.toContain('kiosk_loop_fault');
  });

  it('docs/protocol.md §10 "misbehaving adapters": ports whose availability() throws are shown unusable (adapter_error), nothing crashes, and verifications still work (BLE falls to the next usable mode, taps still work)', async () => {
    const h = await start({ start: false });
    h.central.availability = crashingAvailability;
    h.nfc.availability = crashingAvailability;
    h.kiosk.start();
    const conn1 = await armed(h);
    const ready = await h.view((v) => v.phase === 'ready');
    expect(ready.devices).toEqual({
      nfc: { usable: false, reason: 'adapter_error' },
      qr: { usable: true },
      bleCentral: { usable: false, reason: 'adapter_error' },
      blePeripheral: { usable: true },
    });

    // QR: central is offered first but its port cannot say it is usable; the peripheral mode is used.
    await scanQr(h, conn1);
    conn1.stepRequest('ble_exchange', { modes: [centralMode(), peripheralMode()] });
    const session = await h.peripheral.nextSession();
    session.subscribe(phone(P.s2c));
    expect(await conn1.expect('ble_connected')).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
    endTransfer(conn1, P.state);
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(session.notifications.map((n) => arr(n.data))).toEqual([[0x02]]);
    expect(h.central.connectSignals).toHaveLength(0);
    expect((await conn1.closed).code).toBe(1000);

    // NFC: a tap on the reader whose availability() throws still starts a verification.
    const conn2 = await armed(h, mark(h));
    await tap(h, conn2);
    conn2.stepRequest('nfc_apdu', { data: b64(SELECT) });
    expect(await conn2.expect('nfc_rapdu')).toMatchObject({ status: 'ok' });
    conn2.stepRequest('ble_exchange', { modes: [centralMode(), peripheralMode()] });
    const second = await h.peripheral.nextSession();
    second.write(phone(P.c2s), u8(0x01));
    expect(await conn2.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'peripheral' });
    expect(await conn2.expect('ble_written')).toMatchObject({ char: P.c2s, data: b64([0x01]) });
    endTransfer(conn2, P.state);
    expect((await h.nextReport()).result).toBe('complete');
    expect(h.logs.events()).not.toContain('kiosk_loop_fault');
  });

  it('docs/protocol.md §10 "misbehaving adapters" / "pre-warmed session": availability() throwing while the backend closes the idle socket crashes nothing (no uncaught exception or unhandled rejection) and the kiosk re-arms', async () => {
    const faults: unknown[] = [];
    const onFault = (e: unknown): void => {
      faults.push(e);
    };
    process.on('uncaughtException', onFault);
    process.on('unhandledRejection', onFault);
    try {
      const h = await start();
      const conn1 = await armed(h);
      let broken = false;
      const availability = h.central.availability.bind(h.central);
      h.central.availability = () => (broken ? crashingAvailability() : availability());
      broken = true;
      const from = mark(h);
      conn1.close(1000, 'idle connection closed by the server');

      const conn2 = await h.backend.nextConnection();
      await conn2.expect('engage');
      const ready = await viewAfter(h, from, (v) => v.phase === 'ready');
      expect(ready.devices.bleCentral).toEqual({ usable: false, reason: 'adapter_error' });
      expect(faults).toEqual([]);
      // And the kiosk still serves a customer (BLE central is unusable: the peripheral mode is offered too).
      await scanQr(h, conn2);
      conn2.stepRequest('ble_exchange', { modes: [centralMode(), peripheralMode()] });
      const session = await h.peripheral.nextSession();
      session.subscribe(phone(P.s2c));
      expect(await conn2.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'peripheral' });
      endTransfer(conn2, P.state);
      expect((await h.nextReport()).result).toBe('complete');
      expect(faults).toEqual([]);
    } finally {
      process.off('uncaughtException', onFault);
      process.off('unhandledRejection', onFault);
    }
  });
});

// ================================================================ bounded device calls

describe('docs/protocol.md §10 "misbehaving adapters": every device call is bounded even if the adapter ignores its abort signal', () => {
  /** Tap, one APDU failing with RemovedCard, then `nfc_await_card`; returns the first card. */
  async function untilAwaitCard(harness: Harness, conn: FakeConnection, beforeAwait: (card: NfcCard) => void): Promise<NfcCard> {
    const card = await tap(harness, conn, () => new NfcTransmitError('RemovedCard'));
    conn.stepRequest('nfc_apdu', { data: b64(SELECT) });
    expect(await conn.expect('nfc_rapdu')).toEqual({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'RemovedCard' });
    beforeAwait(card);
    const from = mark(harness);
    conn.stepRequest('nfc_await_card', {});
    await viewAfter(harness, from, (v) => v.phase === 'awaiting_card');
    return card;
  }

  async function expectAwaitCardTimeout(harness: Harness, conn: FakeConnection): Promise<void> {
    const report = await expectFailure(harness, conn, { result: 'timeout', code: 'timeout', closeCode: 4008 });
    expect(report.transport).toBe('nfc');
    const watchdog = harness.logs.records.filter((r) => r.event === 'watchdog_timeout');
    expect(watchdog.map((r) => r.phase)).toEqual(['awaiting_card']);
  }

  it('§4.4 nfc_await_card / docs/protocol.md §10 "misbehaving adapters": the old card\'s waitForRemoval() ignores its signal and never resolves → timeout (awaiting_card) after awaitCardMs, and kiosk.stop() completes', async () => {
    const h = await start({ config: { timeouts: { awaitCardMs: 300 } } });
    const conn = await armed(h);
    await untilAwaitCard(h, conn, (card) => {
      card.waitForRemoval = () => never<undefined>();
    });
    await expectAwaitCardTimeout(h, conn);
    // The kiosk carries on: back to ready on the same session.
    const again = await h.backend.nextConnection();
    await again.expect('engage');
    await viewAfter(h, lastIndexOf(h, (v) => v.error !== null) + 1, (v) => v.phase === 'ready');
    await h.kiosk.stop();
    expect(h.kiosk.currentView.phase).toBe('stopped');
  });

  it('§4.4 nfc_await_card / docs/protocol.md §10 "misbehaving adapters": the reader\'s nextCard() ignores its signal and never resolves → timeout (awaiting_card) after awaitCardMs, and kiosk.stop() completes', async () => {
    const h = await start({ config: { timeouts: { awaitCardMs: 300 } } });
    const conn = await armed(h);
    await untilAwaitCard(h, conn, () => {
      h.nfc.lift(); // the phone left: waitForRemoval resolves at once
      h.nfc.nextCard = () => never<NfcCard>();
    });
    await expectAwaitCardTimeout(h, conn);
    const again = await h.backend.nextConnection();
    await again.expect('engage');
    await h.kiosk.stop();
    expect(h.kiosk.currentView.phase).toBe('stopped');
    expect((await again.closed).code).toBe(1001);
  });
});

// ================================================================ link-loss grace

describe('docs/protocol.md §10 "phone link lost": a complete that arrived within the grace period stands', () => {
  it('docs/protocol.md §10 "phone link lost" / §3 BLE transfer → Complete: complete arrives after the link dropped, within bleLinkLossGraceMs, while a write to the dead link still hangs → complete (not ble_link_lost)', async () => {
    const h = await start({ config: { timeouts: { bleLinkLossGraceMs: 300, completionFlushMs: 1_000, bleWriteMs: 5_000 } } });
    const writeStarted = new Latch();
    const writeReleased = new Latch();
    cleanups.push(() => writeReleased.open(undefined));
    h.central.behaviour = {
      onWrite: async () => {
        writeStarted.open(undefined);
        await writeReleased.promise; // the stack never confirms the write to the phone that went away
      },
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64([0x01, 0x02]) });
    await writeStarted.promise;
    link.drop('connection timeout');
    // The kiosk has seen the link go (its grace period runs); then the backend's complete comes in.
    await until(() => h.logs.events().includes('ble_link_lost'), 'the kiosk to register the lost link');
    conn.send({ type: 'complete', outcome: OUTCOME });

    const report = await h.nextReport();
    writeReleased.open(undefined);
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('verified');
    expect(report.error).toBeNull();
    expect((await conn.closed).code).toBe(1000);
    expect(link.closed).toBe(true);
    await h.view((v) => v.phase === 'result' && v.prompt === 'verified');
  });
});

// ================================================================ BLE setup

describe('docs/protocol.md §10 "BLE setup failure": disconnects before the first GATT event, late links', () => {
  it('docs/protocol.md §10 "BLE setup failure" / §4.5 peripheral: the phone connects and disconnects before any GATT event and does not come back → ble_connected error after bleSetupMs (not ble_link_lost), advertising stopped', async () => {
    const h = await start({ config: { timeouts: { bleSetupMs: 800 } } });
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [peripheralMode()] });
    const session = await h.peripheral.nextSession();
    session.connect();
    session.drop('remote user terminated connection');
    expect(await conn.receive()).toEqual({
      type: 'step_result',
      op: 'ble_connected',
      status: 'error',
      role: 'peripheral',
      reason: NON_EMPTY_REASON,
    });
    expect(session.closed).toBe(true);
    conn.send({ type: 'error', message: 'BLE setup failed' });
    const report = await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    expect(report.result).not.toBe('ble_link_lost');
    await expectRecoveryOnSameSession(h, conn);
  });

  it('docs/protocol.md §10 "BLE setup failure" / §4.5 peripheral: the phone disconnects before its first GATT event, then reconnects and subscribes → ble_connected ok, ble_writes are delivered as notifications (not skipped), complete', async () => {
    const h = await start();
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [peripheralMode()] });
    const session = await h.peripheral.nextSession();
    session.connect();
    session.drop('remote user terminated connection');
    session.connect();
    session.subscribe(phone(P.s2c));
    expect(await conn.receive()).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0x10, 0x11]) });
    endTransfer(conn, P.state);
    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(session.notifications.map((n) => arr(n.data))).toEqual([[0x10, 0x11], [0x02]]);
    expect((await conn.closed).code).toBe(1000);
  });

  it('docs/protocol.md §10 "BLE setup failure" / §3 ble_connected error (central): the link drops while connect() is still running → ble_connected error whose reason names the disconnect, link closed', async () => {
    const h = await start();
    const connect = h.central.connect.bind(h.central);
    h.central.connect = (profile: GattProfile, handlers: BleCentralHandlers, signal: AbortSignal) => {
      const connecting = connect(profile, handlers, signal);
      handlers.onDisconnect('connection failed to be established (0x3e)'); // before connect() resolves
      return connecting;
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    const connected = await conn.receive();
    expect(connected).toMatchObject({ type: 'step_result', op: 'ble_connected', status: 'error', role: 'central' });
    expect(String(connected.reason)).toMatch(/disconnect/i);
    expect(String(connected.reason)).toContain('connection failed to be established (0x3e)');
    conn.send({ type: 'error', message: 'BLE setup failed' });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    expect(at(h.central.links, 0).closed).toBe(true);
  });

  it('docs/protocol.md §10 "BLE setup failure" (a link an adapter produces after the kiosk gave up is closed): central connect() ignores its signal and resolves after bleSetupMs → ble_connected error, then the late link is closed', async () => {
    const h = await start({ config: { timeouts: { bleSetupMs: 300 } } });
    h.central.behaviour = { delayMs: 900 }; // the fake's delay ignores the abort signal
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    expect(await conn.expect('ble_connected')).toEqual({
      type: 'step_result',
      op: 'ble_connected',
      status: 'error',
      role: 'central',
      reason: NON_EMPTY_REASON,
    });
    expect(h.central.links).toHaveLength(0); // given up on before the link existed
    conn.send({ type: 'error', message: 'BLE setup failed' });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    await until(() => h.central.links.length === 1, 'the adapter to produce its late link');
    await until(() => at(h.central.links, 0).closed, 'the late link to be closed by the kiosk');
  });

  it('docs/protocol.md §10 "BLE setup failure" (a session an adapter produces after the kiosk gave up is closed): peripheral advertise() resolves after bleSetupMs → ble_connected error, then the late session is closed', async () => {
    const h = await start({ config: { timeouts: { bleSetupMs: 300 } } });
    const advertise = h.peripheral.advertise.bind(h.peripheral);
    h.peripheral.advertise = async (profile: GattProfile, onEvent: (event: PeripheralEvent) => void) => {
      await new Promise((resolve) => setTimeout(resolve, 900)); // ignores the abort signal
      return advertise(profile, onEvent);
    };
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.stepRequest('ble_exchange', { modes: [peripheralMode()] });
    expect(await conn.expect('ble_connected')).toEqual({
      type: 'step_result',
      op: 'ble_connected',
      status: 'error',
      role: 'peripheral',
      reason: NON_EMPTY_REASON,
    });
    expect(h.peripheral.sessions).toHaveLength(0);
    conn.send({ type: 'error', message: 'BLE setup failed' });
    await expectFailure(h, conn, { result: 'ble_failed', code: 'ble_setup_failed', closeCode: 1000 });
    await until(() => h.peripheral.sessions.length === 1, 'the adapter to start its late advertising');
    await until(() => at(h.peripheral.sessions, 0).closed, 'the late advertising session to be closed by the kiosk');
  });
});

// ================================================================ 401 on an older session

describe('docs/protocol.md §10 "handshake and HTTP statuses": 401/403 on an older session vs a new one', () => {
  it('docs/protocol.md §10 "handshake and HTTP statuses" / §5 rule 4: 401 when reconnecting an OLDER session (idle socket closed by the backend) → a new session is created and the kiosk is ready; no config_error', async () => {
    const h = await start();
    const conn1 = await armed(h);
    const from = mark(h);
    h.backend.handshakeStatuses.push(401); // the client secret of the first session has expired meanwhile
    conn1.close(1000, 'idle');

    const conn2 = await h.backend.nextConnection();
    await conn2.expect('engage');
    await viewAfter(h, from, (v) => v.phase === 'ready');
    expect(conn2.session.id).not.toBe(conn1.session.id);
    expect(posts(h.backend)).toBe(2);
    expect(h.backend.handshakes.map((r) => [r.sessionId, r.status])).toEqual([
      [conn1.session.id, 101],
      [conn1.session.id, 401],
      [conn2.session.id, 101],
    ]);
    expect(h.views.some((v) => v.phase === 'config_error')).toBe(false);
    await completeQrVerification(h, conn2);
  });

  it('docs/protocol.md §10 "handshake and HTTP statuses" / §5: 401 on a brand-new session\'s handshake still means a configuration error (config_error view, not retryable)', async () => {
    ownBackend = await FakeBackend.start();
    ownBackend.handshakeStatuses.push(401);
    const h = await start({ backend: ownBackend });
    const view = await h.view((v) => v.phase === 'config_error');
    expect(view.error).toMatchObject({ code: 'config_error', retryable: false });
    expect(posts(h.backend)).toBe(1);
    expect(h.backend.handshakes.map((r) => r.status)).toEqual([401]);
  });
});

// ================================================================ QR engagements

describe('docs/protocol.md §10 "QR text": an engagement that produced an outcome is never used again; a failed one after errorDisplayMs', () => {
  it('docs/protocol.md §10 "QR text": a scan while the backend is offline → not_ready; once the backend is back and the kiosk ready, the same QR text scanned again after errorDisplayMs starts a verification', async () => {
    ownBackend = await FakeBackend.start();
    gate = await TcpGate.open(ownBackend.port);
    await gate.shut();
    const h = await start({
      backend: ownBackend,
      config: {
        backend: { baseUrl: gate.baseUrl() },
        session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 200 },
        timeouts: { armWaitMs: 300 },
      },
    });
    await h.view((v) => v.phase === 'offline');
    const text = freshQr();
    h.qr.push(text);
    const report = await h.nextReport();
    const reportedAt = Date.now();
    expect(report).toMatchObject({ transport: 'qr', result: 'not_ready', error: { code: 'backend_unavailable' } });

    const from = mark(h);
    await gate.reopen();
    const conn = await armed(h, from);
    await coolDownOver(h, reportedAt);
    h.qr.push(text);
    expect(await conn.expect('qr_scanned')).toEqual({ type: 'step_result', op: 'qr_scanned', status: 'ok', data: text });
  });

  it('docs/protocol.md §10 "QR text": after a failed attempt (backend error) the same QR is ignored while the error is shown (errorDisplayMs) and accepted after it', async () => {
    const h = await start({ config: { timeouts: { errorDisplayMs: 1_500 } } });
    const conn1 = await armed(h);
    const text = freshQr();
    await scanQr(h, conn1, text);
    conn1.send({ type: 'error', message: 'engagement refused' });
    const report = await h.nextReport();
    const reportedAt = Date.now();
    expect(report.result).toBe('backend_error');
    const errorView = await h.view((v) => v.phase === 'error' && v.error?.code === 'backend_error');
    const errorIndex = h.views.indexOf(errorView);

    // The camera still sees the code while the error is on screen: it is not used again yet.
    h.qr.push(text);
    await until(() => h.logs.events().includes('qr_retry_too_soon'), 'the repeat to be ignored during the cool-down');
    const conn2 = await h.backend.nextConnection();
    expect(conn2.session.id).toBe(conn1.session.id);
    await conn2.expect('engage');
    expect(h.views.slice(errorIndex).some((v) => v.phase === 'engaging')).toBe(false);

    await viewAfter(h, errorIndex, (v) => v.phase === 'ready');
    await coolDownOver(h, reportedAt);
    h.qr.push(text);
    expect(await conn2.expect('qr_scanned')).toEqual({ type: 'step_result', op: 'qr_scanned', status: 'ok', data: text });
    expect(h.reports).toHaveLength(1);
  });

  it('docs/protocol.md §10 "QR text": after a completed verification the same QR is never used again (a different code is)', async () => {
    const h = await start();
    const conn1 = await armed(h);
    const text = freshQr();
    await scanQr(h, conn1, text);
    await connectCentral(h, conn1);
    endTransfer(conn1, CENTRAL_CHARS.state);
    expect((await h.nextReport()).result).toBe('complete');
    const reportedAt = Date.now();

    const conn2 = await armed(h, mark(h));
    await coolDownOver(h, reportedAt); // longer than a failed engagement would be ignored
    h.qr.push(text);
    h.qr.push(`${text}\r\n`); // the same code from a keyboard-wedge scanner
    const other = freshQr();
    h.qr.push(other);
    expect(await conn2.expect('qr_scanned')).toEqual({ type: 'step_result', op: 'qr_scanned', status: 'ok', data: other });
  });
});

// ================================================================ complete in any phase

describe('docs/protocol.md §10 "complete": a complete that arrives in any phase after the tap or scan is honoured', () => {
  it('docs/protocol.md §10 "complete" / §4.4 complete: complete while the kiosk is still setting up BLE (central connect hangs) → report complete with the outcome, socket closed 1000, setup aborted', async () => {
    const h = await start();
    h.central.behaviour = { hang: true };
    const conn = await armed(h);
    await scanQr(h, conn);
    const from = mark(h);
    conn.stepRequest('ble_exchange', { modes: [centralMode()] });
    await viewAfter(h, from, (v) => v.phase === 'ble_connecting');
    expect(h.central.connectSignals).toHaveLength(1);
    conn.send({ type: 'complete', outcome: OUTCOME });

    const report = await h.nextReport();
    expect(report.result).toBe('complete');
    expect(report.outcome).toMatchObject({ verdict: 'verified', source: 'complete', response: OUTCOME.response });
    expect((await conn.closed).code).toBe(1000);
    expect(at(h.central.connectSignals, 0).aborted).toBe(true);
    expect(conn.pending.map((m) => (m as { op?: string }).op)).not.toContain('ble_connected');
    await h.view((v) => v.phase === 'result' && v.prompt === 'verified');
  });

  it('docs/protocol.md §10 "complete" / §4.4 nfc_await_card: complete while awaiting the re-tap → report complete with the outcome, socket closed 1000', async () => {
    const h = await start();
    const conn = await armed(h);
    await tap(h, conn, () => new NfcTransmitError('RemovedCard'));
    conn.stepRequest('nfc_apdu', { data: b64(SELECT) });
    await conn.expect('nfc_rapdu');
    h.nfc.lift();
    const from = mark(h);
    conn.stepRequest('nfc_await_card', {});
    await viewAfter(h, from, (v) => v.phase === 'awaiting_card');
    conn.send({ type: 'complete', outcome: OUTCOME });

    const report = await h.nextReport();
    expect({ result: report.result, transport: report.transport }).toEqual({ result: 'complete', transport: 'nfc' });
    expect(report.outcome).toMatchObject({ verdict: 'verified', source: 'complete' });
    expect((await conn.closed).code).toBe(1000);
    await viewAfter(h, from, (v) => v.phase === 'result' && v.prompt === 'verified');
  });
});

// ================================================================ transport limits

describe('docs/protocol.md §4.6 close codes: oversize messages and the WebSocket heartbeat', () => {
  it('docs/protocol.md §4.6 close codes (1009) / backend.maxMessageBytes: a message larger than the limit during the NFC handover → message_too_large violation, error view, socket closed 1009, next verification works', async () => {
    const h = await start({ config: { backend: { maxMessageBytes: 4_096 } } });
    const conn = await armed(h);
    await tap(h, conn);
    conn.stepRequest('nfc_apdu', { data: b64(new Uint8Array(6_000).fill(0xa5)) });
    const report = await expectFailure(h, conn, { result: 'violation', code: 'protocol_violation', closeCode: 1009 });
    expect(report.error?.detail).toContain('message_too_large');
    expect(violationLogs(h).map((r) => r.kind)).toEqual(['message_too_large']);
    h.nfc.lift();
    await expectRecoveryOnSameSession(h, conn);
  });

  it('docs/configuration.md timeouts.heartbeatMs: the idle socket is pinged; a responsive backend keeps it, a half-open connection (no pong) is dropped and the kiosk re-arms', async () => {
    ownBackend = await FakeBackend.start();
    freezeGate = await FreezeGate.open(ownBackend.port);
    const h = await start({
      backend: ownBackend,
      config: {
        backend: { baseUrl: freezeGate.baseUrl() },
        session: { conflictBackoffMs: 20 },
        timeouts: { heartbeatMs: 300 },
      },
    });
    const conn1 = await armed(h);
    // Beats answered (ws answers pings by itself): the socket stays up.
    const pinged = new Latch();
    let pings = 0;
    conn1.socket.on('ping', () => {
      if (++pings === 2) pinged.open(undefined);
    });
    await pinged.promise;
    expect(conn1.isClosed).toBe(false);
    expect(h.backend.connections).toHaveLength(1);

    const from = mark(h);
    expect(freezeGate.freeze()).toBe(1);
    const conn2 = await h.backend.nextConnection();
    await conn2.expect('engage');
    await viewAfter(h, from, (v) => v.phase === 'ready');
    expect(h.logs.records.filter((r) => r.event === 'idle_socket_closed').map((r) => r.code)).toEqual([1006]);
    await completeQrVerification(h, conn2);
  });
});

// ================================================================ lifecycle

describe('Kiosk lifecycle: stop() and start()', () => {
  it('kiosk.stop() twice at once: both resolve only once the stop is complete (stopped view, running verification cancelled with 1001)', async () => {
    const h = await start();
    const conn = await armed(h);
    await tap(h, conn);
    const first = h.kiosk.stop();
    const second = h.kiosk.stop();
    await second;
    expect(h.kiosk.currentView.phase).toBe('stopped');
    await first;
    expect((await conn.closed).code).toBe(1001);
    expect(h.kiosk.currentView).toMatchObject({
      phase: 'stopped',
      prompt: 'stopped',
      transport: null,
      role: null,
      outcome: null,
      error: null,
    });
  });

  it('kiosk.start() after stop() throws (a stopped kiosk is not restarted), also for a kiosk stopped before it ever started', async () => {
    const h = await start();
    await armed(h);
    await h.kiosk.stop();
    const connections = h.backend.connections.length;
    const http = h.backend.http.length;
    expect(() => {
      h.kiosk.start();
    }).toThrow(/stopped/);
    expect(h.kiosk.currentView.phase).toBe('stopped');
    expect(h.backend.connections).toHaveLength(connections);
    expect(h.backend.http).toHaveLength(http);

    const unstarted = await startHarness({ start: false, backend: h.backend });
    try {
      await unstarted.kiosk.stop();
      expect(() => {
        unstarted.kiosk.start();
      }).toThrow(/stopped/);
      expect(h.backend.http).toHaveLength(http);
    } finally {
      await unstarted.stop();
    }
  });

  it('the final view after stop() has phase stopped, no error and no transport (stopped while an error was on screen)', async () => {
    const h = await start({ config: { timeouts: { errorDisplayMs: 10_000 } } });
    const conn = await armed(h);
    await scanQr(h, conn);
    conn.send({ type: 'error', message: 'engagement refused' });
    await expectFailure(h, conn, { result: 'backend_error', code: 'backend_error', closeCode: 1000 });
    expect(h.kiosk.currentView).toMatchObject({ phase: 'error', transport: 'qr' });
    await h.kiosk.stop();
    const last = h.views.at(-1);
    expect(last).toBe(h.kiosk.currentView);
    expect(last).toMatchObject({ phase: 'stopped', prompt: 'stopped', transport: null, role: null, outcome: null, error: null });
  });
});
