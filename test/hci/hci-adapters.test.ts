/**
 * The kiosk as composed (createKiosk) with its noble central and bleno peripheral adapters on emulated
 * controllers (tools/btvirt), against the scripted fake backend and a scripted phone on the opposite library
 * (src/qa/hci/hci-phone-radio.ts), so each test asserts exactly what the kiosk sends and what reaches the
 * phone through real HCI, L2CAP, ATT, MTU exchange, ACL fragmentation and flow control: the conformance
 * and adapter tests that the object-model bindings (test/e2e-sim/ble-libraries.test.ts) cannot prove.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BlenoPeripheral } from '../../src/devices/ble/bleno-peripheral.js';
import { hciOf, MAX_UNSENT_ACL_PACKETS, unsentAclPackets } from '../../src/devices/ble/hci-acl.js';
import { NobleCentral } from '../../src/devices/ble/noble-central.js';
import { uuidKey } from '../../src/devices/ble/uuid.js';
import { QrScanQueue } from '../../src/devices/qr/qr-scan-queue.js';
import { createKiosk } from '../../src/kiosk/compose.js';
import { mergeConfig, parseConfig } from '../../src/platform/config.js';
import type { Kiosk } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import { HciPhoneRadio } from '../../src/qa/hci/hci-phone-radio.js';
import type { PhoneLink } from '../../src/qa/sim/virtual-wallet/phone-radio.js';
import { FakeBackend, type FakeConnection } from '../support/fake-backend.js';
import { LogCapture, TEST_TIMEOUTS, observeKiosk, type KioskObserver } from '../support/harness.js';
import { startHciRadio, type HciRadio } from '../support/hci-stack.js';
import { CENTRAL_CHARS, PERIPHERAL_CHARS, b64, centralMode, freshQr, peripheralMode, receiveMany } from '../support/relay-fixtures.js';

let radio: HciRadio;

beforeAll(async () => {
  radio = await startHciRadio();
}, 30_000);

afterAll(async () => {
  await radio.radio.stop();
});

interface Rig extends KioskObserver {
  readonly backend: FakeBackend;
  readonly kiosk: Kiosk;
  readonly qr: QrScanQueue;
  readonly central: NobleCentral;
  readonly peripheral: BlenoPeripheral;
  readonly phone: HciPhoneRadio;
  readonly logs: LogCapture;
  stop(): Promise<void>;
}

let rig: Rig | undefined;

afterEach(async (context) => {
  if (process.env.HCI_TEST_DEBUG && context.task.result?.state === 'fail' && rig) {
    for (const r of rig.logs.records) process.stderr.write(`${JSON.stringify(r)}\n`);
  }
  await rig?.stop();
  rig = undefined;
});

async function startRig(config: Record<string, unknown> = {}): Promise<Rig> {
  const backend = await FakeBackend.start();
  const { stacks } = radio;
  const central = new NobleCentral(stacks.kioskNoble, { platform: 'hci', connectAttempts: 1, gattTimeoutMs: 3_000 });
  const peripheral = new BlenoPeripheral(stacks.kioskBleno, { teardownStepMs: 1_000 });
  const phone = new HciPhoneRadio({ noble: stacks.phoneNoble, bleno: stacks.phoneBleno, operationMs: 5_000 });
  const logs = new LogCapture();
  const parsed = parseConfig(
    mergeConfig(
      {
        backend: { baseUrl: backend.baseUrl, apiKey: backend.apiKey },
        timeouts: { ...TEST_TIMEOUTS, bleSetupMs: 8_000, bleIdleMs: 8_000, completionFlushMs: 2_000 },
      },
      config,
    ),
  );
  const qr = new QrScanQueue({ freshMs: parsed.qr.scanFreshMs });
  const kiosk = createKiosk(parsed, { qr, bleCentral: central, blePeripheral: peripheral }, createLogger({ level: 'debug' }, logs));
  const observed = observeKiosk(kiosk);
  kiosk.start();
  rig = {
    ...observed,
    backend,
    kiosk,
    qr,
    central,
    peripheral,
    phone,
    logs,
    async stop() {
      await kiosk.stop();
      central.dispose();
      await peripheral.close();
      phone.dispose();
      await backend.stop();
    },
  };
  return rig;
}

async function armedScan(r: Rig): Promise<FakeConnection> {
  const conn = await r.backend.nextConnection();
  await conn.expect('engage');
  await r.view((v) => v.phase === 'ready');
  r.qr.push(freshQr());
  await conn.expect('qr_scanned');
  return conn;
}

/** 240-byte values, distinct per index (two ACL fragments each at the emulated controller's ACL MTU of 192). */
const chunk = (i: number, size = 240): Uint8Array => Uint8Array.from({ length: size }, (_, k) => (i * 31 + k) & 0xff);
const hex = (data: Uint8Array): string => Buffer.from(data).toString('hex');

interface PhoneClientRecord {
  readonly link: PhoneLink;
  /** Notifications by characteristic key, with the time each came. */
  readonly received: { readonly characteristic: string; readonly data: string; readonly at: number }[];
  readonly disconnected: Promise<number>;
}

/** mdoc central client mode, scripted: scan, connect, discover, read Ident, subscribe State and S2C, write State 0x01. */
async function phoneAsClient(r: Rig, serviceUuid: string): Promise<PhoneClientRecord> {
  const P = PERIPHERAL_CHARS;
  const report = await r.phone.central.scanFor(serviceUuid);
  const link = await r.phone.central.connect(report.peripheral.id);
  const received: PhoneClientRecord['received'] = [];
  link.onNotification((e) => received.push({ characteristic: uuidKey(e.characteristicUuid), data: hex(e.data), at: Date.now() }));
  const disconnected = new Promise<number>((resolve) => link.onDisconnect(() => resolve(Date.now())));
  await link.discover([serviceUuid]);
  await link.read(serviceUuid, P.ident);
  await link.subscribe(serviceUuid, P.state);
  await link.subscribe(serviceUuid, P.s2c);
  await link.write(serviceUuid, P.state, Uint8Array.of(0x01), { withoutResponse: true });
  return { link, received, disconnected };
}

/**
 * Peripheral role up to the transfer: ble_exchange, the scripted phone connects; ble_connected on its Ident
 * read, answered by the backend; then the phone's State 0x01 as ble_written.
 */
async function peripheralTransferStarted(r: Rig): Promise<{ conn: FakeConnection; phone: PhoneClientRecord }> {
  const conn = await armedScan(r);
  const mode = peripheralMode();
  conn.stepRequest('ble_exchange', { modes: [mode] });
  const phoneReady = phoneAsClient(r, mode.service_uuid);
  expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'peripheral' });
  expect(await conn.receive()).toMatchObject({ op: 'ble_read_request' });
  conn.stepRequest('ble_read_response', { data: b64(IDENT) });
  const phone = await phoneReady;
  expect(await receiveMany(conn, 1)).toMatchObject([{ op: 'ble_written', data: b64([0x01]) }]);
  return { conn, phone };
}

/** The phone as mdoc GATT server (bleno), recording each write and how many had come when the link went down. */
async function phoneAsServer(
  r: Rig,
  serviceUuid: string,
): Promise<{ writes: { characteristic: string; data: string }[]; goneAfter: () => number }> {
  const C = CENTRAL_CHARS;
  const writes: { characteristic: string; data: string }[] = [];
  let gone = -1;
  r.phone.peripheral.setServices(
    [
      {
        uuid: serviceUuid,
        characteristics: [
          { uuid: C.state, properties: ['notify', 'writeWithoutResponse'] },
          { uuid: C.c2s, properties: ['writeWithoutResponse'] },
          { uuid: C.s2c, properties: ['notify'] },
        ],
      },
    ],
    {
      onWrite: (w) => {
        writes.push({ characteristic: uuidKey(w.characteristicUuid), data: hex(w.data) });
      },
      onDisconnect: () => {
        gone = writes.length;
      },
    },
  );
  await r.phone.peripheral.startAdvertising({ localName: 'phone', serviceUuids: [serviceUuid] });
  return { writes, goneAfter: () => gone };
}

async function centralCompletion(count: number, config: Record<string, unknown> = {}): Promise<void> {
  const r = await startRig(config);
  const conn = await armedScan(r);
  const mode = centralMode();
  const C = CENTRAL_CHARS;
  const phone = await phoneAsServer(r, mode.service_uuid);
  conn.stepRequest('ble_exchange', { modes: [mode] });
  expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'central' });
  const sent = Array.from({ length: count }, (_, i) => chunk(i));
  for (const data of sent) conn.stepRequest('ble_write', { char: C.c2s, data: b64(data) });
  conn.stepRequest('ble_write', { char: C.state, data: b64([0x02]) });
  conn.send({ type: 'complete', outcome: { ...VERIFIED } });
  expect((await r.nextReport(30_000)).result).toBe('complete');
  await expect.poll(() => r.phone.peripheral.connections.length, { timeout: 10_000 }).toBe(0);
  await r.phone.peripheral.stopAdvertising();
  r.phone.peripheral.setServices([]);
  const expected = [
    ...sent.map((d) => ({ characteristic: uuidKey(C.c2s), data: hex(d) })),
    { characteristic: uuidKey(C.state), data: '02' },
  ];
  expect(phone.goneAfter(), 'every write reached the phone before the link went down').toBe(expected.length);
  expect(phone.writes).toEqual(expected);
}

describe('completion over HCI: what the backend sent is delivered before the link is torn down', () => {
  it('peripheral (bleno): complete right behind 20 × 240 B ble_writes and the end byte — the phone gets all 20 and 0x02 before the disconnect', async () => {
    const r = await startRig();
    const { conn, phone } = await peripheralTransferStarted(r);
    const sent = Array.from({ length: 20 }, (_, i) => chunk(i));
    for (const data of sent) conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(data) });
    conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.state, data: b64([0x02]) });
    conn.send({ type: 'complete', outcome: { ...VERIFIED } });
    const report = await r.nextReport(10_000);
    expect(report.result).toBe('complete');
    const gone = await phone.disconnected;
    const s2c = uuidKey(PERIPHERAL_CHARS.s2c);
    const state = uuidKey(PERIPHERAL_CHARS.state);
    expect(phone.received.filter((n) => n.characteristic === s2c).map((n) => n.data)).toEqual(sent.map(hex));
    const end = phone.received.find((n) => n.characteristic === state && n.data === '02');
    expect(end, 'the 0x02 end byte reached the phone').toBeDefined();
    expect(end?.at ?? Infinity).toBeLessThanOrEqual(gone);
  });

  it('central (noble): complete right behind 20 × 240 B ble_writes and the end byte — the phone gets all 20 and 0x02 before the disconnect', async () => {
    await centralCompletion(20);
  });

  it('central (noble): 3,000 × 240 B ble_writes, the end byte and complete — all delivered before the disconnect, beyond the unsubscribe that close() waits for', async () => {
    // 6,000 ACL fragments at one in flight take longer than close()'s bounded unsubscribe (1 s), which was
    // all that kept the central's disconnect behind its queue.
    await centralCompletion(3_000, { timeouts: { completionFlushMs: 20_000, bleWriteMs: 5_000 } });
  }, 60_000);
});

describe('conformance over HCI: MTU, order, size limits', () => {
  it('peripheral: 500 ble_writes of 1–253 bytes reach the phone as notifications in order, unchanged; MTU 256 as bleno grants it', async () => {
    const r = await startRig();
    const { conn, phone } = await peripheralTransferStarted(r);
    expect(phone.link.mtu).toBe(256);
    const sent = Array.from({ length: 500 }, (_, i) => chunk(i, 1 + ((i * 37) % 253)));
    for (const data of sent) conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(data) });
    const s2c = uuidKey(PERIPHERAL_CHARS.s2c);
    await expect.poll(() => phone.received.filter((n) => n.characteristic === s2c).length, { timeout: 15_000 }).toBe(sent.length);
    expect(phone.received.filter((n) => n.characteristic === s2c).map((n) => n.data)).toEqual(sent.map(hex));
    conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.state, data: b64([0x02]) });
    conn.send({ type: 'complete', outcome: { ...VERIFIED } });
    expect((await r.nextReport(10_000)).result).toBe('complete');
  });

  it('peripheral: a 500-byte Ident is one ble_read_request; noble’s long read (Read, then Read Blobs at MTU 256) gets it whole', async () => {
    const r = await startRig();
    const conn = await armedScan(r);
    const mode = peripheralMode();
    const P = PERIPHERAL_CHARS;
    conn.stepRequest('ble_exchange', { modes: [mode] });
    const report = await r.phone.central.scanFor(mode.service_uuid);
    const link = await r.phone.central.connect(report.peripheral.id);
    await link.discover([mode.service_uuid]);
    const ident = Uint8Array.from({ length: 500 }, (_, i) => (i * 13) & 0xff);
    const read = link.read(mode.service_uuid, P.ident);
    await conn.expect('ble_connected');
    expect(await conn.receive()).toMatchObject({ op: 'ble_read_request' });
    conn.stepRequest('ble_read_response', { data: b64(ident) });
    expect(hex(await read)).toBe(hex(ident));
    // The blobs were answered from the one value: nothing more reached the backend.
    await link.disconnect();
    const after = await conn.receive(1_000).then(
      (m) => m.op,
      () => undefined,
    );
    expect(after).not.toBe('ble_read_request');
  });

  it('peripheral: a 254-byte ble_write on a link of ATT_MTU 256 is refused before anything is sent: ble_transfer_failed, close 1009', async () => {
    const r = await startRig();
    const { conn, phone } = await peripheralTransferStarted(r);
    conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(chunk(1, 253)) });
    conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(chunk(2, 254)) });
    const report = await r.nextReport(10_000);
    expect(report.result).toBe('ble_transfer_failed');
    expect(report.error?.detail ?? '').toContain('254 bytes exceeds the notification limit of 253 bytes (ATT_MTU 256 − 3)');
    expect((await conn.closed).code).toBe(1009);
    // Nothing of the refused write (bleno would have cut it to 253 bytes silently); the 253-byte one before
    // it may be lost with the link, as the failed transfer's teardown does not flush.
    expect([[], [hex(chunk(1, 253))]]).toContainEqual(phone.received.map((n) => n.data));
  });

  it('central: a 254-byte ble_write on a link of ATT_MTU 256 (bleno caps it) is refused before anything is sent: ble_transfer_failed, close 1009', async () => {
    const r = await startRig();
    const conn = await armedScan(r);
    const mode = centralMode();
    const phone = await phoneAsServer(r, mode.service_uuid);
    conn.stepRequest('ble_exchange', { modes: [mode] });
    await conn.expect('ble_connected');
    expect(r.logs.records.some((x) => x.event === 'ble_connected' && x.mtu === 256)).toBe(true);
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64(chunk(1, 253)) });
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64(chunk(2, 254)) });
    const report = await r.nextReport(10_000);
    expect(report.result).toBe('ble_transfer_failed');
    expect(report.error?.detail ?? '').toContain('254 bytes exceeds the write-without-response limit of 253 bytes (ATT_MTU 256 − 3)');
    expect((await conn.closed).code).toBe(1009);
    await expect.poll(() => r.phone.peripheral.connections.length, { timeout: 5_000 }).toBe(0);
    await r.phone.peripheral.stopAdvertising();
    r.phone.peripheral.setServices([]);
    expect(phone.writes.map((w) => w.data)).toEqual([hex(chunk(1, 253))]);
  });
});

describe('backpressure over HCI: the relay does not pour its queue into the stack', () => {
  /** The one ACL connection the library's hci binding has (the phone's). */
  function onlyHandle(hci: object): number | undefined {
    const nobleConnections: unknown = Reflect.get(hci, '_aclConnections');
    if (nobleConnections instanceof Map) return [...nobleConnections.keys()].find((k): k is number => typeof k === 'number');
    const inProgress: unknown = Reflect.get(hci, '_handleAclsInProgress');
    const key = typeof inProgress === 'object' && inProgress !== null ? Object.keys(inProgress)[0] : undefined;
    return key === undefined ? undefined : Number(key);
  }

  /** Samples the connection's unsent ACL packets in the kiosk's stack every millisecond until stopped. */
  function sampleUnsent(library: object): { stop(): number } {
    let max = 0;
    const timer = setInterval(() => {
      const hci = hciOf(library);
      const handle = hci ? onlyHandle(hci) : undefined;
      if (hci && handle !== undefined) max = Math.max(max, unsentAclPackets(hci, handle) ?? 0);
    }, 1);
    return {
      stop: () => {
        clearInterval(timer);
        return max;
      },
    };
  }

  it('central: with 300 ble_writes queued behind the state write, noble never holds more than a few packets of the link (the first c2s write is not stuck behind 600 queued packets)', async () => {
    const r = await startRig();
    const conn = await armedScan(r);
    const mode = centralMode();
    const C = CENTRAL_CHARS;
    const phone = await phoneAsServer(r, mode.service_uuid);
    conn.stepRequest('ble_exchange', { modes: [mode] });
    await conn.expect('ble_connected');
    const sampler = sampleUnsent(radio.stacks.kioskNoble);
    conn.stepRequest('ble_write', { char: C.state, data: b64([0x01]) });
    const sent = Array.from({ length: 300 }, (_, i) => chunk(i));
    for (const data of sent) conn.stepRequest('ble_write', { char: C.c2s, data: b64(data) });
    await expect.poll(() => phone.writes.length, { timeout: 15_000 }).toBe(301);
    const max = sampler.stop();
    // A 240-byte write is two ACL fragments; the adapter waits for room before each write.
    expect(max).toBeLessThanOrEqual(MAX_UNSENT_ACL_PACKETS + 2);
    expect(phone.writes.slice(1).map((w) => w.data)).toEqual(sent.map(hex));
    conn.stepRequest('ble_write', { char: C.state, data: b64([0x02]) });
    conn.send({ type: 'complete', outcome: { ...VERIFIED } });
    expect((await r.nextReport(10_000)).result).toBe('complete');
    await expect.poll(() => r.phone.peripheral.connections.length, { timeout: 5_000 }).toBe(0);
    await r.phone.peripheral.stopAdvertising();
    r.phone.peripheral.setServices([]);
  });

  it('peripheral: with 300 ble_writes queued, bleno never holds more than a few packets for the phone', async () => {
    const r = await startRig();
    const { conn, phone } = await peripheralTransferStarted(r);
    const sampler = sampleUnsent(radio.stacks.kioskBleno);
    const sent = Array.from({ length: 300 }, (_, i) => chunk(i));
    for (const data of sent) conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(data) });
    const s2c = uuidKey(PERIPHERAL_CHARS.s2c);
    await expect.poll(() => phone.received.filter((n) => n.characteristic === s2c).length, { timeout: 15_000 }).toBe(300);
    expect(sampler.stop()).toBeLessThanOrEqual(MAX_UNSENT_ACL_PACKETS + 2);
    expect(phone.received.filter((n) => n.characteristic === s2c).map((n) => n.data)).toEqual(sent.map(hex));
    conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.state, data: b64([0x02]) });
    conn.send({ type: 'complete', outcome: { ...VERIFIED } });
    expect((await r.nextReport(10_000)).result).toBe('complete');
  });
});

const IDENT = Uint8Array.from({ length: 16 }, (_, i) => 0xa0 + i);

const VERIFIED = {
  status: 'success',
  response: {},
  errors: {},
  warnings: {},
  doc_types: ['org.iso.18013.5.1.mDL'],
  issuer_authentication: 'Valid',
  device_authentication: 'Valid',
};
