/**
 * The kiosk (createKiosk, as shipped) with its BLE ports on the libraries' real JavaScript object models:
 * `NobleCentral` on a noble instance and `BlenoPeripheral` on a bleno instance, both with bindings on the
 * kiosk's device of a virtual radio. The backend is the scripted fake (test/support/fake-backend.ts) and
 * the phone a scripted radio phone (test/support/radio-phone.ts), so each test asserts exactly what the
 * kiosk sends and what reaches the phone (spec §2.5, §3, §4.3–§4.5).
 */
import type { Noble } from '@stoprocent/noble';
import { afterEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { KioskView } from '../../src/common/kiosk-view.js';
import { BlenoPeripheral } from '../../src/devices/ble/bleno-peripheral.js';
import type { Bleno } from '../../src/devices/ble/bleno-types.js';
import { NobleCentral, type NobleCentralOptions } from '../../src/devices/ble/noble-central.js';
import type { BlePeripheralSession, GattProfile, PeripheralEvent } from '../../src/devices/ports.js';
import { QrScanQueue } from '../../src/devices/qr/qr-scan-queue.js';
import { createVirtualBleno } from '../../src/qa/devices/bleno-radio-bindings.js';
import type { RadioNobleBindings } from '../../src/qa/devices/noble-radio-bindings.js';
import { createVirtualNoble } from '../../src/qa/devices/noble-radio-bindings.js';
import { createKiosk } from '../../src/kiosk/compose.js';
import { mergeConfig, parseConfig } from '../../src/platform/config.js';
import type { Kiosk, VerificationReport } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import { AttError, VirtualRadio, type RadioDevice, type RadioLogEntry } from '../../src/qa/sim/radio/virtual-radio.js';
import { blenoSessionListeners } from '../support/ble-fixtures.js';
import { WinNobleBindings, type WinAdvertising } from '../support/fake-noble-win.js';
import { FakeBackend, type FakeConnection, type ReceivedMessage } from '../support/fake-backend.js';
import { LogCapture, TEST_TIMEOUTS, observeKiosk, type KioskObserver } from '../support/harness.js';
import { PhoneClient, PhoneServer, SERVER_MODE_TABLE, hex, stack, until } from '../support/radio-phone.js';
import {
  CENTRAL_CHARS,
  PERIPHERAL_CHARS,
  arr,
  b64,
  centralMode,
  endTransfer,
  freshQr,
  peripheralMode,
  receiveMany,
  u8,
} from '../support/relay-fixtures.js';

const C = CENTRAL_CHARS;
const P = PERIPHERAL_CHARS;

// ---------------------------------------------------------------- the rig

/** The bleno adapter, recording each `notify` call the kiosk makes on its sessions (when it starts). */
class TrackingBlenoPeripheral extends BlenoPeripheral {
  readonly notifyCalls: string[] = [];
  override async advertise(
    profile: GattProfile,
    onEvent: (event: PeripheralEvent) => void,
    signal: AbortSignal,
  ): Promise<BlePeripheralSession> {
    const session = await super.advertise(profile, onEvent, signal);
    const calls = this.notifyCalls;
    return {
      notify(characteristicUuid, data, notifySignal) {
        calls.push(`${characteristicUuid}:${hex(data)}`);
        return session.notify(characteristicUuid, data, notifySignal);
      },
      close: () => session.close(),
    };
  }
}

interface LibRig extends KioskObserver {
  readonly backend: FakeBackend;
  readonly radio: VirtualRadio;
  /** The kiosk's radio device: noble's and bleno's bindings both sit on it. */
  readonly device: RadioDevice;
  readonly noble: Noble;
  readonly bleno: Bleno;
  readonly central: NobleCentral;
  readonly peripheral: TrackingBlenoPeripheral;
  readonly qr: QrScanQueue;
  readonly kiosk: Kiosk;
  readonly logs: LogCapture;
  /** Every radio log entry, packets included. */
  readonly radioLog: RadioLogEntry[];
  stop(): Promise<void>;
}

interface RigOptions {
  readonly config?: Record<string, unknown>;
  readonly noble?: NobleCentralOptions;
  /** noble's bindings on the kiosk's device (default: the radio bindings, as hci). */
  readonly nobleBindings?: (device: RadioDevice) => RadioNobleBindings;
}

let rig: LibRig | undefined;
let warn: MockInstance<typeof console.warn> | undefined;
let consoleLog: MockInstance<typeof console.log> | undefined;

afterEach(async () => {
  await rig?.stop();
  rig = undefined;
  // noble prints its warnings with console.warn, bleno with console.log: a clean run has none.
  expect(warn?.mock.calls ?? []).toEqual([]);
  expect(consoleLog?.mock.calls ?? []).toEqual([]);
  warn?.mockRestore();
  consoleLog?.mockRestore();
  warn = undefined;
  consoleLog = undefined;
});

async function startRig(options: RigOptions = {}): Promise<LibRig> {
  warn = vi.spyOn(console, 'warn');
  consoleLog = vi.spyOn(console, 'log');
  const backend = await FakeBackend.start();
  const radio = new VirtualRadio({ logPackets: true });
  const radioLog: RadioLogEntry[] = [];
  radio.onLog((entry) => radioLog.push(entry));
  const device = radio.addDevice({ name: 'kiosk' });
  const noble = createVirtualNoble(device, options.nobleBindings?.(device));
  const central = new NobleCentral(noble, {
    platform: 'hci',
    connectAttempts: 1,
    gattTimeoutMs: 2_000,
    closeTimeoutMs: 500,
    ...options.noble,
  });
  const bleno = createVirtualBleno(device);
  const peripheral = new TrackingBlenoPeripheral(bleno, { teardownStepMs: 500 });
  await until(() => central.availability().usable && peripheral.availability().usable, 2_000, 'noble and bleno poweredOn');
  const logs = new LogCapture();
  const config = parseConfig(
    mergeConfig({ backend: { baseUrl: backend.baseUrl, apiKey: backend.apiKey }, timeouts: TEST_TIMEOUTS }, options.config ?? {}),
  );
  const qr = new QrScanQueue({ freshMs: config.qr.scanFreshMs });
  const kiosk = createKiosk(config, { qr, bleCentral: central, blePeripheral: peripheral }, createLogger({ level: 'debug' }, logs));
  const observed = observeKiosk(kiosk);
  kiosk.start();
  const started: LibRig = {
    ...observed,
    backend,
    radio,
    device,
    noble,
    bleno,
    central,
    peripheral,
    qr,
    kiosk,
    logs,
    radioLog,
    async stop() {
      await kiosk.stop();
      central.dispose();
      noble.stop();
      await peripheral.close();
      radio.shutdown();
      await backend.stop();
      observed.assertViewsValid();
    },
  };
  rig = started;
  return started;
}

// ---------------------------------------------------------------- steps

const mark = (r: LibRig): number => r.views.length;

function viewAfter(r: LibRig, from: number, predicate: (v: KioskView) => boolean, timeoutMs?: number): Promise<KioskView> {
  return r.view((v) => r.views.indexOf(v) >= from && predicate(v), timeoutMs);
}

/** The kiosk's pre-warmed session: the next connection, its `engage`, and `ready` after `from`. */
async function armed(r: LibRig, from = 0): Promise<FakeConnection> {
  const conn = await r.backend.nextConnection();
  await conn.expect('engage');
  await viewAfter(r, from, (v) => v.phase === 'ready');
  return conn;
}

async function scanQr(r: LibRig, conn: FakeConnection): Promise<void> {
  r.qr.push(freshQr());
  await conn.expect('qr_scanned');
}

/** The attempt failed: report, socket close code, error view. */
async function expectFailure(r: LibRig, conn: FakeConnection, result: string, code: string): Promise<VerificationReport> {
  const report = await r.nextReport();
  expect({ result: report.result, code: report.error?.code }).toEqual({ result, code });
  expect((await conn.closed).code).toBe(1000);
  const errorView = await r.view((v) => v.phase === 'error' && v.error?.code === code);
  expect(errorView.prompt).toBe('try_again');
  return report;
}

/** The kiosk's peripheral facet is idle: no advertising, no service, no link, no session listener on bleno. */
function peripheralIdle(r: LibRig): boolean {
  const { peripheral } = r.device;
  return (
    peripheral.advertising === undefined &&
    peripheral.services.length === 0 &&
    peripheral.connections.length === 0 &&
    blenoSessionListeners(r.bleno) === 0
  );
}

const connectedOk = (role: 'central' | 'peripheral'): Record<string, unknown> => ({
  type: 'step_result',
  op: 'ble_connected',
  status: 'ok',
  role,
});
const written = (char: string, data: Uint8Array): Record<string, unknown> => ({
  type: 'step_result',
  op: 'ble_written',
  char,
  data: b64(data),
});
const readRequest = (char: string): Record<string, unknown> => ({ type: 'step_result', op: 'ble_read_request', char });

/** A distinct payload per index: the index in two bytes, then 0–49 filler bytes derived from it. */
function payload(i: number): Uint8Array {
  return Uint8Array.from([i >> 8, i & 0xff, ...Array.from({ length: i % 50 }, (_, k) => (i * 7 + k) & 0xff)]);
}

const onlyOps = (messages: readonly ReceivedMessage[]): string[] => messages.map((m) => m.op);

// ---------------------------------------------------------------- tests

describe('kiosk central through noble (scripted backend, scripted phone as GATT server)', () => {
  it('1,000 ble_writes on c2s reach the phone as Write Commands in the order sent, then 0x02 on state; the kiosk replies nothing (§4.4)', async () => {
    // completionFlushMs: `complete` is sent right behind the writes and must wait for all of them.
    const r = await startRig({ config: { timeouts: { completionFlushMs: 15_000, bleIdleMs: 10_000, bleWriteMs: 5_000 } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = centralMode();
    const phone = new PhoneServer(r.radio, { serviceUuid: mode.service_uuid });
    await phone.start();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    expect(await conn.receive()).toEqual(connectedOk('central'));
    // §4.5 central step 3: subscribed before ble_connected (state and s2c are the notify characteristics).
    expect(phone.isSubscribed(C.s2c)).toBe(true);
    expect(phone.isSubscribed(C.state)).toBe(true);

    const payloads = Array.from({ length: 1_000 }, (_, i) => payload(i));
    // Spelled three ways: the match against the discovered characteristics is case-insensitive (§4.4).
    const spellings = [C.c2s, C.c2s.toLowerCase(), stack(C.c2s)];
    payloads.forEach((p, i) => conn.stepRequest('ble_write', { char: spellings[i % 3], data: b64(p) }));
    endTransfer(conn, C.state);
    const report = await r.nextReport(20_000);
    expect(report.result).toBe('complete');
    expect((await conn.closed).code).toBe(1000);

    const expected = [...payloads.map((p) => `${stack(C.c2s)}:${hex(p)}`), `${stack(C.state)}:02`];
    expect(phone.writes.all.map((w) => `${stack(w.characteristicUuid)}:${hex(w.data)}`)).toEqual(expected);
    expect(phone.writes.all.every((w) => w.withoutResponse)).toBe(true);
    // ble_write has no reply in either role; `ble_written` is the peripheral role's phone writes (§4.3).
    expect(conn.pending).toEqual([]);
    // The link is closed at the end of the attempt.
    await until(() => r.device.central.links.length === 0, 3_000, 'the kiosk link closed');
    expect(phone.connection).toBeUndefined();
  });

  it.each([
    {
      name: "the adapter's scanTimeoutMs",
      noble: { scanTimeoutMs: 300 },
      timeouts: { bleSetupMs: 5_000 },
      reason: (uuid: string): unknown => `scan_timeout: no phone advertising ${uuid} within 300 ms`,
    },
    {
      name: "the kiosk's bleSetupMs",
      noble: { scanTimeoutMs: 20_000 },
      timeouts: { bleSetupMs: 300 },
      // The core's bound ends the adapter's scan (its signal aborts), so the reason is the core's.
      reason: (): unknown => 'scan and connect timed out after 300 ms',
    },
  ])(
    'wrong service UUID: the phone advertises another UUID → scan ends after $name → ble_connected status error with a reason; scan stopped; next session connects',
    async ({ noble, timeouts, reason }) => {
      const r = await startRig({ noble, config: { timeouts: { ...timeouts, backendReplyMs: 3_000 } } });
      const conn = await armed(r);
      await scanQr(r, conn);
      const wanted = centralMode();
      const other = centralMode(); // a fresh UUID: what the phone really advertises
      const phone = new PhoneServer(r.radio, { serviceUuid: other.service_uuid, name: 'phone' });
      await phone.start();
      const discoverListeners = r.noble.listenerCount('discover');
      const started = Date.now();
      conn.stepRequest('ble_exchange', { modes: [wanted] });
      const reply = await conn.receive();
      expect(reply).toEqual({
        type: 'step_result',
        op: 'ble_connected',
        status: 'error',
        role: 'central',
        reason: reason(wanted.service_uuid),
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      // The phone never saw the kiosk; the scan is over and noble holds no listener of it.
      expect(phone.events.all).toEqual([]);
      expect(r.noble.listenerCount('discover')).toBe(discoverListeners);
      const scans = r.radioLog.filter((e) => (e.event === 'scan_start' || e.event === 'scan_stop') && e.device?.startsWith('kiosk'));
      expect(scans.map((e) => e.event)).toEqual(['scan_start', 'scan_stop']);
      expect(r.device.central.links).toEqual([]);
      // What the backend does next is not shown (§3); here it ends the session with `error`, which answers the
      // kiosk's own failure: the report names Bluetooth.
      conn.send({ type: 'error', message: 'BLE setup failed' });
      await expectFailure(r, conn, 'ble_failed', 'ble_setup_failed');

      // Nothing of the failed scan is left in noble: the next session finds the phone it names.
      const from = mark(r);
      const next = await armed(r, from);
      await scanQr(r, next);
      next.stepRequest('ble_exchange', { modes: [other] });
      expect(await next.receive()).toEqual(connectedOk('central'));
      endTransfer(next, C.state);
      expect((await r.nextReport()).result).toBe('complete');
      expect(phone.writes.all.map((w) => arr(w.data))).toEqual([[0x02]]);
    },
  );
});

describe("kiosk central on Windows (noble's win binding as its sources show it, test/support/fake-noble-win.ts)", () => {
  it('a wallet with its UUID only in the scan response, out of reach at the first try: found, the link made on the second attempt, the transfer completes', async () => {
    const advertising = new Map<string, WinAdvertising>();
    const r = await startRig({
      noble: { platform: 'win', connectAttempts: 3, retryDelayMs: 5 },
      nobleBindings: (device) => new WinNobleBindings(device, { advertising }),
    });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = centralMode();
    const phone = new PhoneServer(r.radio, { serviceUuid: mode.service_uuid, name: 'phone' });
    advertising.set(phone.device.id, 'scan_response');
    await phone.start();
    phone.device.setFaults({ refuseConnections: 1 });
    conn.stepRequest('ble_exchange', { modes: [mode] });
    expect(await conn.receive()).toEqual(connectedOk('central'));
    conn.stepRequest('ble_write', { char: C.c2s, data: b64([0x01, 0xaa]) });
    endTransfer(conn, C.state);
    expect((await r.nextReport()).result).toBe('complete');
    expect(phone.writes.all.map((w) => hex(w.data))).toEqual(['01aa', '02']);
  });

  it('a phone that refuses the CCCD write (reported as success by the binding): ble_connected error subscribe_refused, at once, not a wait for notifications', async () => {
    const r = await startRig({ noble: { platform: 'win' }, nobleBindings: (device) => new WinNobleBindings(device) });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = centralMode();
    const phone = new PhoneServer(r.radio, { serviceUuid: mode.service_uuid, name: 'phone' });
    await phone.start();
    phone.device.peripheral.setServices([{ uuid: mode.service_uuid, characteristics: SERVER_MODE_TABLE }], {
      onSubscribe: () => {
        throw new AttError(0x05); // Insufficient Authentication
      },
    });
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const reply = await conn.receive();
    expect(reply).toMatchObject({ type: 'step_result', op: 'ble_connected', status: 'error', role: 'central' });
    expect((reply as { reason?: string }).reason).toMatch(/^subscribe_refused: the phone did not turn notifications on for state /);
    await until(() => r.device.central.links.length === 0, 3_000, 'the kiosk link closed');
  });
});

describe('kiosk peripheral through bleno (scripted backend, scripted phone as GATT client)', () => {
  it('interleaving: phone writes go out as ble_written while ble_write notifications are held in flight; both orders kept (§4.5)', async () => {
    const r = await startRig({ config: { timeouts: { bleWriteMs: 5_000, bleIdleMs: 10_000, completionFlushMs: 15_000 } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const phone = new PhoneClient(r.radio);
    await phone.connect(mode.service_uuid);
    // The phone's first GATT event is a write, before any subscription: ble_connected goes first (§4.5 step 2).
    await phone.write(P.c2s, u8(0xe0, 0x00));
    expect(await receiveMany(conn, 2)).toEqual([connectedOk('peripheral'), written(P.c2s, u8(0xe0, 0x00))]);

    // Phase 1 (deterministic): the backend's ble_writes wait in the kiosk for the s2c subscription
    // (the first one is with bleno's session, the rest queued behind it) while the phone keeps writing.
    const held = Array.from({ length: 20 }, (_, i) => payload(10_000 + i));
    for (const p of held) conn.stepRequest('ble_write', { char: P.s2c, data: b64(p) });
    // The first is with bleno's session, waiting for the subscription: a notification in flight.
    await until(() => r.peripheral.notifyCalls.length === 1, 2_000, 'the first notify call');
    const phase1Writes = Array.from({ length: 20 }, (_, j) => u8(0xe1, j));
    for (const w of phase1Writes) await phone.write(P.c2s, w);
    expect(await receiveMany(conn, 20)).toEqual(phase1Writes.map((w) => written(P.c2s, w)));
    expect(phone.notifications.all).toEqual([]);
    expect(r.peripheral.notifyCalls).toHaveLength(1); // still the first one: the rest wait behind it, in the kiosk

    // Phase 2 (volume): 200 more ble_writes are sent at once; the phone answers each notification it gets
    // with a write of its own, so its writes reach the kiosk while the backend's data is still streaming.
    const more = Array.from({ length: 200 }, (_, i) => payload(20_000 + i));
    const phase2Writes = Array.from({ length: 200 }, (_, j) => u8(0xe2, j >> 8, j & 0xff));
    const phoneWrites: Promise<void>[] = [];
    phone.link.onNotification(() => {
      const next = phase2Writes[phoneWrites.length];
      if (next) phoneWrites.push(phone.write(P.c2s, next));
    });
    for (const p of more) conn.stepRequest('ble_write', { char: P.s2c, data: b64(p) });
    await phone.subscribe(P.s2c);
    await phone.subscribe(P.state);
    const forwarded: ReceivedMessage[] = [];
    /** How many notify calls the kiosk had made when each ble_written reached the backend. */
    const notifyCallsAt: number[] = [];
    for (let j = 0; j < phase2Writes.length; j++) {
      forwarded.push(await conn.receive());
      notifyCallsAt.push(r.peripheral.notifyCalls.length);
    }
    await Promise.all(phoneWrites);
    expect(forwarded).toEqual(phase2Writes.map((w) => written(P.c2s, w)));
    // The kiosk forwarded phone writes while it still had ble_writes to notify: both sides ran at once.
    expect(notifyCallsAt[0]).toBeLessThan(held.length + more.length);
    await until(() => phone.notifications.all.length === held.length + more.length, 5_000, 'all notifications');
    endTransfer(conn, P.state);
    expect((await r.nextReport(20_000)).result).toBe('complete');
    expect((await conn.closed).code).toBe(1000);
    expect(conn.pending).toEqual([]);

    const seen = phone.notifications.all.map((n) => `${stack(n.characteristicUuid)}:${hex(n.data)}`);
    expect(seen).toEqual([...[...held, ...more].map((p) => `${stack(P.s2c)}:${hex(p)}`), `${stack(P.state)}:02`]);
    await until(() => peripheralIdle(r), 3_000, 'the kiosk peripheral idle');
  });

  it('read-request rule: each holder read of ident (long values → Read Blob) is one ble_read_request answered by one ble_read_response; blobs come from the cached value (§4.5 step 3)', async () => {
    const r = await startRig();
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const phone = new PhoneClient(r.radio);
    await phone.connect(mode.service_uuid);
    const mtu = phone.link.mtu;
    expect(mtu).toBe(247);
    // Lengths around the ATT boundaries: > ATT_MTU − 1 (one and two blobs), exactly ATT_MTU − 1 (a blob
    // at the end answers empty), short, empty; each value distinct so a stale cache would show.
    const lengths = [300, 16, 500, mtu - 1, 0, 300];
    const values = lengths.map((n, k) => Uint8Array.from({ length: n }, (_, i) => (i * (k + 3) + k) & 0xff));
    const readLog = (): RadioLogEntry[] => r.radioLog.filter((e) => e.event === 'read' && e.characteristic === stack(P.ident));

    const messages: ReceivedMessage[] = [];
    for (const [k, value] of values.entries()) {
      const before = readLog().length;
      const reading = phone.read(P.ident);
      // On one read the phone also queues a write behind it: its ATT bearer holds it until the read is done.
      const writing = k === 2 ? phone.write(P.c2s, u8(0x77)) : undefined;
      if (k === 0) {
        const first = await conn.receive();
        messages.push(first);
        expect(first).toEqual(connectedOk('peripheral'));
      }
      const request = await conn.receive();
      messages.push(request);
      expect(request).toEqual(readRequest(P.ident));
      // Nothing else from the kiosk until the backend answers (the read holds the phone's queue).
      await conn.expectSilence(30);
      conn.stepRequest('ble_read_response', { data: b64(value) });
      expect(await reading).toEqual(value);
      if (writing) {
        await writing;
        const after = await conn.receive();
        messages.push(after);
        expect(after).toEqual(written(P.c2s, u8(0x77)));
      }
      // The radio saw the blobs: offsets 0, ATT_MTU − 1, 2 × (ATT_MTU − 1), … while responses came back full.
      const offsets = readLog()
        .slice(before)
        .map((e) => e.offset ?? 0);
      const blobs = Math.floor(value.length / (mtu - 1));
      expect(offsets).toEqual(Array.from({ length: blobs + 1 }, (_, i) => i * (mtu - 1)));
    }
    await conn.expectSilence(100);
    const requests = messages.filter((m) => m.op === 'ble_read_request');
    const offsetZeroReads = readLog().filter((e) => (e.offset ?? 0) === 0).length;
    expect(requests).toHaveLength(values.length);
    expect(offsetZeroReads).toBe(values.length);
    expect(readLog().length).toBeGreaterThan(values.length); // Read Blobs happened and were not re-requested
    expect(onlyOps(messages)).toEqual([
      'ble_connected',
      ...values.flatMap((_, k) => (k === 2 ? ['ble_read_request', 'ble_written'] : ['ble_read_request'])),
    ]);

    await phone.subscribe(P.state);
    endTransfer(conn, P.state);
    expect((await r.nextReport()).result).toBe('complete');
    expect(phone.notifications.all.map((n) => arr(n.data))).toEqual([[0x02]]);
  });

  it('phone disconnects while a notification waits for its subscription → ble_link_lost after the grace period (not a ble_write timeout); torn down', async () => {
    const r = await startRig({ config: { timeouts: { bleLinkLossGraceMs: 200, bleWriteMs: 2_000 } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const phone = new PhoneClient(r.radio);
    await phone.connect(mode.service_uuid);
    await phone.write(P.c2s, u8(0x01)); // connected by a write: nothing subscribed
    expect(await receiveMany(conn, 2)).toEqual([connectedOk('peripheral'), written(P.c2s, u8(0x01))]);
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0xd0]) });
    await until(() => r.peripheral.notifyCalls.length === 1, 2_000, 'the notify call');
    const left = Date.now();
    await phone.link.disconnect('the holder walked away');
    await expectFailure(r, conn, 'ble_link_lost', 'ble_link_lost');
    expect(Date.now() - left).toBeLessThan(1_500);
    expect(phone.notifications.all).toEqual([]);
    await until(() => peripheralIdle(r), 3_000, 'the kiosk peripheral idle');
  });

  it('the kiosk\'s adapter goes off mid-transfer and the stack reports no disconnect (macOS; hci with its dongle gone) → told at once: Bluetooth not working on the kiosk, not "the phone left"', async () => {
    const r = await startRig({ config: { timeouts: { bleLinkLossGraceMs: 200, bleIdleMs: 60_000 } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const phone = new PhoneClient(r.radio);
    await phone.connect(mode.service_uuid);
    await phone.subscribe(P.s2c);
    expect(await conn.receive()).toEqual(connectedOk('peripheral'));
    // Only the adapter's state says so: the binding's disconnect events never come.
    const bindings = Reflect.get(r.bleno, '_bindings') as { emit: (event: string | symbol, ...args: unknown[]) => boolean };
    const emit = bindings.emit.bind(bindings);
    bindings.emit = (event, ...args) => (event === 'disconnect' ? false : emit(event, ...args));
    r.device.setPowered(false);
    const report = await expectFailure(r, conn, 'ble_link_lost', 'ble_unavailable');
    expect(report.error?.detail).toMatch(/^adapter_off: the Bluetooth adapter was switched off/);
    bindings.emit = emit;
  });

  it('phone disconnects mid-transfer → ble_link_lost error view and report, everything torn down; the next session advertises its new UUID and the phone connects to it', async () => {
    const r = await startRig({ config: { timeouts: { bleLinkLossGraceMs: 200 } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = peripheralMode();
    const advertised: string[] = [];
    r.radio.onLog((e) => {
      if (e.event === 'advertising_start' && e.device?.startsWith('kiosk') && e.service !== undefined) advertised.push(e.service);
    });
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const phone = new PhoneClient(r.radio);
    await phone.connect(mode.service_uuid);
    await phone.subscribe(P.s2c);
    expect(await conn.receive()).toEqual(connectedOk('peripheral'));
    await phone.write(P.c2s, u8(0x01));
    expect(await conn.receive()).toEqual(written(P.c2s, u8(0x01)));
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0xd0]) });
    expect(arr((await phone.notifications.next()).data)).toEqual([0xd0]);
    // Mid-transfer: more data is on its way from the backend when the phone goes.
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0xd1]) });
    conn.stepRequest('ble_write', { char: P.s2c, data: b64([0xd2]) });
    await phone.link.disconnect('the holder walked away');

    const report = await expectFailure(r, conn, 'ble_link_lost', 'ble_link_lost');
    expect(report.error?.retryable).toBe(true);
    // Torn down: bleno re-advertised when the phone left (the session was still open), then the teardown
    // stopped it; no service, no link, no listener of the session left on bleno.
    await until(() => peripheralIdle(r), 3_000, 'the kiosk peripheral idle after the failure');
    const kioskAdvertising = r.radioLog.filter(
      (e) => (e.event === 'advertising_start' || e.event === 'advertising_stop') && e.device?.startsWith('kiosk'),
    );
    expect(kioskAdvertising.at(-1)?.event).toBe('advertising_stop');
    expect(r.logs.records.some((rec) => rec.event === 'ble_link_lost')).toBe(true);
    // Nothing sent after the phone left but the close: no ble_* for a gone phone.
    expect(conn.pending).toEqual([]);

    // The next session: a new service UUID (§2.5: it changes on every connection), advertised anew.
    const from = mark(r);
    const next = await armed(r, from);
    await scanQr(r, next);
    const mode2 = peripheralMode();
    expect(mode2.service_uuid).not.toBe(mode.service_uuid);
    next.stepRequest('ble_exchange', { modes: [mode2] });
    await until(() => r.device.peripheral.advertising !== undefined, 3_000, 'advertising the new service');
    expect(r.device.peripheral.advertising?.serviceUuids).toEqual([stack(mode2.service_uuid)]);
    // The old UUID is nowhere on the air any more.
    await expect(phone.connect(mode.service_uuid, 200)).rejects.toThrow();
    await phone.connect(mode2.service_uuid);
    await phone.subscribe(P.s2c);
    expect(await next.receive()).toEqual(connectedOk('peripheral'));
    await phone.subscribe(P.state);
    const before = phone.notifications.all.length;
    next.stepRequest('ble_write', { char: P.s2c, data: b64([0xa5]) });
    endTransfer(next, P.state);
    expect((await r.nextReport()).result).toBe('complete');
    expect(phone.notifications.all.slice(before).map((n) => arr(n.data))).toEqual([[0xa5], [0x02]]);
    expect(new Set(advertised)).toEqual(new Set([stack(mode.service_uuid), stack(mode2.service_uuid)]));
    await until(() => peripheralIdle(r), 3_000, 'the kiosk peripheral idle at the end');
  });
});

// A ble_write the link cannot carry in one ATT PDU (issue 12): the spec gives the backend no way to learn
// the MTU (docs/protocol.md §4.4, §8), so the kiosk refuses it before anything reaches the phone and ends
// the attempt at once with the size and the limit, instead of truncating (bleno hci) or failing the write
// and waiting out the link-loss grace period as if the phone had left.
describe('a ble_write larger than the link carries (docs/ble-limits.md)', () => {
  const GRACE = 60_000; // far beyond the test's own timeout: a failure that waits for it never shows up

  it('peripheral: a notification above ATT_MTU − 3 fails the attempt at once (size and limit named), nothing reaches the phone; back to ready', async () => {
    const r = await startRig({ config: { timeouts: { bleLinkLossGraceMs: GRACE, bleIdleMs: GRACE, bleWriteMs: GRACE } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const phone = new PhoneClient(r.radio, 'phone', 100);
    await phone.connect(mode.service_uuid);
    await phone.subscribe(P.s2c);
    expect(await conn.receive()).toEqual(connectedOk('peripheral'));
    conn.stepRequest('ble_write', { char: P.s2c, data: b64(new Uint8Array(97).fill(0x11)) }); // fits: 100 − 3
    expect((await phone.notifications.next()).data).toHaveLength(97);
    conn.stepRequest('ble_write', { char: P.s2c, data: b64(new Uint8Array(200).fill(0x22)) });
    const report = await r.nextReport();
    expect({ result: report.result, code: report.error?.code }).toEqual({ result: 'ble_transfer_failed', code: 'ble_transfer_failed' });
    expect(report.error?.detail).toBe('ble_write of 200 bytes exceeds the notification limit of 97 bytes (ATT_MTU 100 − 3)');
    const closed = await conn.closed;
    expect(closed.code).toBe(1009);
    expect(closed.reason).toMatch(/^ble_write of 200 bytes exceeds .*97 bytes/);
    expect(conn.pending).toEqual([]);
    expect(phone.notifications.all.map((n) => n.data.length)).toEqual([97]);
    await until(() => peripheralIdle(r), 3_000, 'the kiosk peripheral idle');
    expect(r.logs.records.some((rec) => rec.event === 'ble_transfer_failed')).toBe(true);
    await armed(r, mark(r));
  });

  it('central: a Write Command above ATT_MTU − 3 fails the attempt at once (size and limit named), nothing reaches the phone; back to ready', async () => {
    const r = await startRig({ config: { timeouts: { bleLinkLossGraceMs: GRACE, bleIdleMs: GRACE, bleWriteMs: GRACE } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = centralMode();
    const phone = new PhoneServer(r.radio, { serviceUuid: mode.service_uuid, mtu: 100 });
    await phone.start();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    expect(await conn.receive()).toEqual(connectedOk('central'));
    conn.stepRequest('ble_write', { char: C.c2s, data: b64(new Uint8Array(97).fill(0x11)) });
    expect((await phone.writes.next()).data).toHaveLength(97);
    conn.stepRequest('ble_write', { char: C.c2s, data: b64(new Uint8Array(98).fill(0x22)) });
    const report = await r.nextReport();
    expect({ result: report.result, code: report.error?.code }).toEqual({ result: 'ble_transfer_failed', code: 'ble_transfer_failed' });
    expect(report.error?.detail).toBe('ble_write of 98 bytes exceeds the write-without-response limit of 97 bytes (ATT_MTU 100 − 3)');
    expect((await conn.closed).code).toBe(1009);
    expect(conn.pending).toEqual([]);
    expect(phone.writes.all.map((w) => w.data.length)).toEqual([97]);
    await until(() => r.device.central.links.length === 0, 3_000, 'the kiosk link closed');
    await armed(r, mark(r));
  });
});

// A hostile or silent phone through noble and bleno (issue 12, docs/ble-limits.md): bounded, reported with
// a reason, and the kiosk's radio is idle and ready for the next customer.
describe('hostile or silent phone through the libraries', () => {
  it('peripheral: a phone that connects and never speaks → ble_connected error after bleSetupMs; advertising stopped, the phone dropped; the next session works', async () => {
    const r = await startRig({ config: { timeouts: { bleSetupMs: 400, backendReplyMs: 200 } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const phone = new PhoneClient(r.radio);
    await phone.connect(mode.service_uuid); // connected, and not one GATT request
    expect(await conn.receive()).toEqual({
      type: 'step_result',
      op: 'ble_connected',
      status: 'error',
      role: 'peripheral',
      reason: 'no phone connected within 400 ms',
    });
    await expectFailure(r, conn, 'ble_failed', 'ble_setup_failed');
    await phone.disconnects.next(); // the kiosk let it go
    await until(() => peripheralIdle(r), 3_000, 'the kiosk peripheral idle');
    const next = await armed(r, mark(r));
    await scanQr(r, next);
    const mode2 = peripheralMode();
    next.stepRequest('ble_exchange', { modes: [mode2] });
    const phone2 = new PhoneClient(r.radio, 'phone2');
    await phone2.connect(mode2.service_uuid);
    await phone2.subscribe(P.state);
    expect(await next.receive()).toEqual(connectedOk('peripheral'));
    endTransfer(next, P.state);
    expect((await r.nextReport()).result).toBe('complete');
  });

  it('central: a phone that accepts the connection and never answers discovery → gatt_timeout in ble_connected error; the link closed', async () => {
    const r = await startRig({ noble: { gattTimeoutMs: 300 }, config: { timeouts: { bleSetupMs: 5_000, backendReplyMs: 200 } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = centralMode();
    const phone = new PhoneServer(r.radio, { serviceUuid: mode.service_uuid });
    await phone.start();
    // Once connected the phone goes quiet: every packet to or from it now takes a minute.
    r.radio.onLog((e) => {
      if (e.event === 'connect' && e.peer?.startsWith('phone')) phone.device.setFaults({ latencyMs: 60_000 });
    });
    conn.stepRequest('ble_exchange', { modes: [mode] });
    expect(await conn.receive()).toEqual({
      type: 'step_result',
      op: 'ble_connected',
      status: 'error',
      role: 'central',
      reason: 'gatt_timeout: no answer to service discovery within 300 ms',
    });
    await expectFailure(r, conn, 'ble_failed', 'ble_setup_failed');
    expect(r.device.central.links).toEqual([]);
  });

  it('peripheral: a phone write longer than an ATT value but one PDU of the link (514 bytes at ATT_MTU 517, as Android before 13 sent) is relayed whole, with a warning', async () => {
    const r = await startRig({ config: { timeouts: { bleLinkLossGraceMs: 60_000 } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const phone = new PhoneClient(r.radio, 'phone', 517);
    phone.device.setFaults({ mtu: 517 }); // above the kiosk device's preferred 247
    await phone.connect(mode.service_uuid);
    await phone.subscribe(P.s2c);
    expect(await conn.receive()).toEqual(connectedOk('peripheral'));
    await phone.write(P.c2s, new Uint8Array(514).fill(0x44));
    expect(await conn.receive()).toMatchObject({ op: 'ble_written', data: Buffer.from(new Uint8Array(514).fill(0x44)).toString('base64') });
    expect(r.logs.records.filter((x) => x.event === 'ble_value_above_att_maximum')).toMatchObject([{ bytes: 514, characteristic: 'c2s' }]);
  });

  it('central: a notification longer than an ATT value but one PDU of the link (514 bytes at ATT_MTU 517) is relayed whole, with a warning', async () => {
    const r = await startRig({ config: { timeouts: { bleLinkLossGraceMs: 60_000 } } });
    const conn = await armed(r);
    await scanQr(r, conn);
    const mode = centralMode();
    const phone = new PhoneServer(r.radio, { serviceUuid: mode.service_uuid, mtu: 517 });
    await phone.start();
    conn.stepRequest('ble_exchange', { modes: [mode] });
    expect(await conn.receive()).toEqual(connectedOk('central'));
    await phone.notify(C.s2c, new Uint8Array(514).fill(0x55));
    expect(await conn.receive()).toMatchObject({
      op: 'ble_notified',
      data: Buffer.from(new Uint8Array(514).fill(0x55)).toString('base64'),
    });
    expect(r.logs.records.filter((x) => x.event === 'ble_value_above_att_maximum')).toMatchObject([{ bytes: 514, characteristic: 's2c' }]);
  });
});
