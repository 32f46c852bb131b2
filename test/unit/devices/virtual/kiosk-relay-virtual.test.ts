/**
 * Integration: the kiosk's relay end to end through the virtual BLE ports. A scripted phone on the
 * virtual radio exchanges ISO 18013-5 chunks with the scripted fake backend through the kiosk, in both
 * roles: QR → central (the phone is the GATT server) and QR → peripheral (the phone is the GATT client,
 * reading Ident through the backend). Payloads are random bytes; the test checks every byte arrives, in
 * order, framed as sent.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { KioskView } from '../../../../src/common/kiosk-view.js';
import { QrScanQueue } from '../../../../src/devices/qr/qr-scan-queue.js';
import { VirtualBleCentral } from '../../../../src/qa/devices/virtual-ble-central.js';
import { VirtualBlePeripheral } from '../../../../src/qa/devices/virtual-ble-peripheral.js';
import { createKiosk } from '../../../../src/kiosk/compose.js';
import { mergeConfig, parseConfig } from '../../../../src/platform/config.js';
import type { Kiosk, VerificationReport } from '../../../../src/kiosk/kiosk.js';
import { createLogger } from '../../../../src/platform/log.js';
import { VirtualRadio, type RadioLogEntry } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { FakeBackend, type FakeConnection, type ReceivedMessage } from '../../../support/fake-backend.js';
import { LogCapture, TEST_TIMEOUTS } from '../../../support/harness.js';
import { PhoneClient, PhoneServer, Reassembler, chunk, stack, until } from '../../../support/radio-phone.js';
import {
  CENTRAL_CHARS,
  PERIPHERAL_CHARS,
  b64,
  centralMode,
  endTransfer,
  freshQr,
  peripheralMode,
} from '../../../support/relay-fixtures.js';

/** The backend's characteristic size (the mock backend's default). */
const BACKEND_CHUNK = 182;

interface VirtualKiosk {
  readonly radio: VirtualRadio;
  readonly backend: FakeBackend;
  readonly kiosk: Kiosk;
  readonly qr: QrScanQueue;
  readonly logs: LogCapture;
  readonly radioLog: RadioLogEntry[];
  view(predicate: (v: KioskView) => boolean): Promise<KioskView>;
  nextReport(): Promise<VerificationReport>;
  stop(): Promise<void>;
}

/** The harness's assembly (createKiosk), with the virtual BLE ports on one radio device instead of fakes. */
async function startVirtualKiosk(): Promise<VirtualKiosk> {
  const backend = await FakeBackend.start();
  const logs = new LogCapture();
  const config = parseConfig(mergeConfig({ backend: { baseUrl: backend.baseUrl, apiKey: backend.apiKey }, timeouts: TEST_TIMEOUTS }, {}));
  const radio = new VirtualRadio();
  const radioLog: RadioLogEntry[] = [];
  radio.onLog((e) => radioLog.push(e));
  const adapter = radio.addDevice({ name: 'kiosk' }); // one adapter, both roles, as with noble + bleno
  const qr = new QrScanQueue({ freshMs: config.qr.scanFreshMs });
  const kiosk = createKiosk(
    config,
    { qr, bleCentral: new VirtualBleCentral(adapter), blePeripheral: new VirtualBlePeripheral(adapter) },
    createLogger({ level: 'debug' }, logs),
  );
  const views: KioskView[] = [];
  const reports: VerificationReport[] = [];
  kiosk.onView((v) => views.push(v));
  kiosk.onVerification((r) => reports.push(r));
  kiosk.start();
  return {
    radio,
    backend,
    kiosk,
    qr,
    logs,
    radioLog,
    async view(predicate) {
      await until(() => views.some(predicate), 5_000, 'a kiosk view');
      return views.find(predicate) as KioskView;
    },
    async nextReport() {
      await until(() => reports.length > 0, 8_000, 'a verification report');
      return reports.shift() as VerificationReport;
    },
    async stop() {
      await kiosk.stop();
      await backend.stop();
      radio.shutdown();
    },
  };
}

let k: VirtualKiosk | undefined;
afterEach(async () => {
  await k?.stop();
  k = undefined;
});

/** The armed session, and a QR scan on it. */
async function scanned(kiosk: VirtualKiosk): Promise<FakeConnection> {
  const conn = await kiosk.backend.nextConnection();
  await conn.expect('engage');
  await kiosk.view((v) => v.phase === 'ready');
  kiosk.qr.push(freshQr());
  await conn.expect('qr_scanned');
  return conn;
}

const bytesOf = (message: ReceivedMessage): Uint8Array => new Uint8Array(Buffer.from(String(message.data), 'base64'));

/** Receives `op` messages until a whole chunked message is in; checks each names `char` as the backend spelled it. */
async function receiveMessage(conn: FakeConnection, op: string, char: string): Promise<Uint8Array> {
  const reassembler = new Reassembler();
  for (;;) {
    const message = await conn.expect(op);
    expect(message.char).toBe(char);
    const whole = reassembler.push(bytesOf(message));
    if (whole) return whole;
  }
}

describe('kiosk relay through the virtual BLE ports', () => {
  it('QR → central: the phone serves the service; SessionEstablishment goes down as writes, the response comes up as notifications', async () => {
    k = await startVirtualKiosk();
    const conn = await scanned(k);
    const service = randomUUID().toUpperCase();
    const phone = new PhoneServer(k.radio, { serviceUuid: service.toLowerCase() });
    await phone.start();

    conn.stepRequest('ble_exchange', { modes: [centralMode(service)] });
    expect(await conn.expect('ble_connected')).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'central' });
    expect(phone.isSubscribed(CENTRAL_CHARS.state) && phone.isSubscribed(CENTRAL_CHARS.s2c)).toBe(true);

    // Reader → phone: state 0x01, then the SessionEstablishment in 182-byte chunks on c2s.
    const establishment = new Uint8Array(randomBytes(1_500));
    conn.stepRequest('ble_write', { char: CENTRAL_CHARS.state, data: b64([0x01]) });
    const down = chunk(establishment, BACKEND_CHUNK);
    for (const c of down) conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64(c) });
    await until(() => phone.writes.all.length === 1 + down.length, 5_000, 'the chunks at the phone');
    const [start, ...rest] = phone.writes.all;
    expect(start?.characteristicUuid).toBe(stack(CENTRAL_CHARS.state));
    expect([...(start?.data ?? [])]).toEqual([0x01]);
    expect(rest.every((w) => w.withoutResponse && w.characteristicUuid === stack(CENTRAL_CHARS.c2s))).toBe(true);
    const atPhone = new Reassembler();
    const received = rest.map((w) => atPhone.push(w.data)).at(-1);
    expect(received).toEqual(establishment);

    // Phone → reader: the DeviceResponse in MTU − 3 chunks as s2c notifications, one ble_notified each.
    const response = new Uint8Array(randomBytes(5_000));
    const mtu = phone.connection?.mtu ?? 0;
    expect(mtu).toBe(247);
    const up = chunk(response, mtu - 3);
    const notifying = (async (): Promise<void> => {
      for (const c of up) await phone.notify(CENTRAL_CHARS.s2c, c);
    })();
    expect(await receiveMessage(conn, 'ble_notified', CENTRAL_CHARS.s2c)).toEqual(response);
    await notifying;

    endTransfer(conn, CENTRAL_CHARS.state);
    const report = await k.nextReport();
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe('verified');
    const last = await phone.writes.next(5_000).then(() => phone.writes.all.at(-1));
    expect([...(last?.data ?? [])]).toEqual([0x02]);
    // The kiosk tore the link down after the end.
    expect(await phone.disconnects.next(5_000)).toMatchObject({ by: 'central' });
    expect(k.radioLog.filter((e) => e.event === 'connect')).toHaveLength(1);
  });

  it('QR → peripheral: the kiosk advertises; the phone reads Ident through the backend, then both streams flow', async () => {
    k = await startVirtualKiosk();
    const conn = await scanned(k);
    const mode = peripheralMode();
    conn.stepRequest('ble_exchange', { modes: [mode] });

    const phone = new PhoneClient(k.radio);
    await phone.connect(mode.service_uuid);
    // The phone's first GATT event (reading Ident) makes the kiosk send ble_connected, then the read request.
    const ident = new Uint8Array(randomBytes(16));
    const reading = phone.read(PERIPHERAL_CHARS.ident);
    expect(await conn.expect('ble_connected')).toEqual({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
    expect(await conn.expect('ble_read_request')).toEqual({ type: 'step_result', op: 'ble_read_request', char: PERIPHERAL_CHARS.ident });
    conn.stepRequest('ble_read_response', { data: b64(ident) });
    expect(await reading).toEqual(ident);

    await phone.subscribe(PERIPHERAL_CHARS.state);
    await phone.subscribe(PERIPHERAL_CHARS.s2c);
    await phone.write(PERIPHERAL_CHARS.state, Uint8Array.of(0x01));
    expect(await conn.expect('ble_written')).toEqual({
      type: 'step_result',
      op: 'ble_written',
      char: PERIPHERAL_CHARS.state,
      data: b64([0x01]),
    });

    // Reader → phone: SessionEstablishment as s2c notifications.
    const establishment = new Uint8Array(randomBytes(1_500));
    const down = chunk(establishment, BACKEND_CHUNK);
    for (const c of down) conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(c) });
    const atPhone = new Reassembler();
    let received: Uint8Array | undefined;
    for (let i = 0; i < down.length; i++) {
      const n = await phone.notifications.next(5_000);
      expect(n.characteristicUuid).toBe(stack(PERIPHERAL_CHARS.s2c));
      received = atPhone.push(n.data) ?? received;
    }
    expect(received).toEqual(establishment);

    // Phone → reader: the DeviceResponse as c2s writes, one ble_written each, in order.
    const response = new Uint8Array(randomBytes(5_000));
    const writing = (async (): Promise<void> => {
      for (const c of chunk(response, phone.link.mtu - 3)) await phone.write(PERIPHERAL_CHARS.c2s, c);
    })();
    expect(await receiveMessage(conn, 'ble_written', PERIPHERAL_CHARS.c2s)).toEqual(response);
    await writing;

    endTransfer(conn, PERIPHERAL_CHARS.state);
    const end = await phone.notifications.next(5_000);
    expect({ char: end.characteristicUuid, data: [...end.data] }).toEqual({ char: stack(PERIPHERAL_CHARS.state), data: [0x02] });
    const report = await k.nextReport();
    expect(report.result).toBe('complete');
    expect(await phone.disconnects.next(5_000)).toMatchObject({ reason: 'closed by the kiosk', by: 'peripheral' });
    const adapter = k.radio.findDevice('c0:de:00:00:00:01');
    expect(adapter?.name).toBe('kiosk');
    expect(adapter?.peripheral.advertising).toBeUndefined();
    expect(adapter?.peripheral.services).toEqual([]);
  });
});
