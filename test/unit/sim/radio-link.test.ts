/**
 * The radio link (docs/radio-link.md) over real loopback TCP: the radio, a scripted phone and the
 * RadioLinkServer play "process A"; noble on RemoteNobleBindings plays "process B" (the same test process,
 * a real socket between them). One test runs process A in a child process with the virtual phone and the
 * kiosk, with its noble central, in this one.
 */
import { once } from 'node:events';
import { connect as netConnect, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import type { Characteristic, Noble, Peripheral } from '@stoprocent/noble';
import { afterEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { NobleCentral } from '../../../src/devices/ble/noble-central.js';
import type { GattProfile } from '../../../src/devices/ports.js';
import { MAX_FRAME_BYTES, PROTOCOL_NAME, PROTOCOL_VERSION } from '../../../src/qa/devices/radio-link/protocol.js';
import { RemoteNobleBindings, createRemoteNoble } from '../../../src/qa/devices/radio-link/remote-noble-bindings.js';
import { RadioLinkServer } from '../../../src/qa/devices/radio-link/server.js';
import { AttError, AttErrorCode, VirtualRadio } from '../../../src/qa/sim/radio/virtual-radio.js';
import { startE2e } from '../../support/e2e-stack.js';
import { acrossProcesses, destroyLinkSocket } from '../../support/radio-link-fixtures.js';
import { Recorder, expectVerifiedOutcome, serverProfile } from '../../support/ble-fixtures.js';
import { PhoneServer, SERVER_MODE, hex, stack, until } from '../../support/radio-phone.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000AA02';
const RW = '0000AA10-0000-1000-8000-00805F9B34FB';
const HELLO = { type: 'hello', protocol: PROTOCOL_NAME, version: PROTOCOL_VERSION, role: 'noble' };

const profile = (): GattProfile => serverProfile(SERVICE);

interface ProcessA {
  readonly radio: VirtualRadio;
  readonly phone: PhoneServer;
  readonly server: RadioLinkServer;
}
interface ProcessB {
  readonly bindings: RemoteNobleBindings;
  readonly noble: Noble;
}

const cleanups: (() => Promise<void> | void)[] = [];
let warn: MockInstance<typeof console.warn> | undefined;

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  expect(warn?.mock.calls ?? []).toEqual([]);
  warn?.mockRestore();
  warn = undefined;
});

async function processA(options: { readonly characteristics?: PhoneServer['options']['characteristics'] } = {}): Promise<ProcessA> {
  const radio = new VirtualRadio();
  const phone = new PhoneServer(radio, {
    serviceUuid: SERVICE.toLowerCase(),
    ...(options.characteristics ? { characteristics: options.characteristics } : {}),
    onRead: (request) => {
      if (request.characteristicUuid === stack(RW)) return Buffer.from('value-from-the-phone'.slice(request.offset));
      throw new AttError(AttErrorCode.READ_NOT_PERMITTED);
    },
  });
  await phone.start();
  const server = await RadioLinkServer.start({ radio });
  cleanups.push(async () => {
    await server.stop();
    radio.shutdown();
  });
  return { radio, phone, server };
}

async function processB(a: ProcessA, name = 'kiosk-remote'): Promise<ProcessB> {
  warn ??= vi.spyOn(console, 'warn');
  const bindings = await RemoteNobleBindings.connect({ port: a.server.port, name });
  const noble = createRemoteNoble(bindings);
  cleanups.push(async () => {
    noble.stop();
    await bindings.close();
  });
  await noble.waitForPoweredOnAsync(2_000);
  return { bindings, noble };
}

/** Connection refused: nothing listens on the port any more. */
async function expectPortClosed(port: number): Promise<void> {
  const socket = netConnect({ host: '127.0.0.1', port });
  const [error] = (await once(socket, 'error')) as [NodeJS.ErrnoException];
  expect(error.code).toBe('ECONNREFUSED');
  socket.destroy();
}

/** A raw client: what the server answers to hand-made frames. */
class RawClient {
  readonly frames: Record<string, unknown>[] = [];
  readonly closed: Promise<void>;
  private constructor(readonly socket: Socket) {
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    const lines = createInterface({ input: socket });
    lines.on('line', (line) => this.frames.push(JSON.parse(line) as Record<string, unknown>));
  }
  static async open(port: number): Promise<RawClient> {
    const socket = netConnect({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    return new RawClient(socket);
  }
  send(text: string): void {
    this.socket.write(text);
  }
  async next(type: string): Promise<Record<string, unknown>> {
    await until(() => this.frames.some((f) => f.type === type), 2_000, `a ${type} frame`);
    return this.frames.find((f) => f.type === type) as Record<string, unknown>;
  }
}

describe('radio link over loopback TCP (noble)', () => {
  it('NobleCentral over the link: connect, subscribe, 2,000 notifications in order, ordered writes, close', async () => {
    const a = await processA();
    const b = await processB(a);
    expect(b.bindings.device.name).toBe('kiosk-remote');
    expect(a.radio.findDevice(b.bindings.device.id)?.name).toBe('kiosk-remote');
    const central = new NobleCentral(b.noble, { platform: 'hci', scanTimeoutMs: 3_000, retryDelayMs: 5 });
    cleanups.push(() => central.dispose());
    const recorder = new Recorder();
    const link = await central.connect(profile(), recorder, AbortSignal.timeout(5_000));
    expect(link.mtu).toBe(247);
    expect(a.phone.events.all).toEqual(['connect', `subscribe:${stack(SERVER_MODE.state)}`, `subscribe:${stack(SERVER_MODE.s2c)}`]);

    const count = 2_000;
    const sent = Array.from({ length: count }, (_, i) => Buffer.from(`${i.toString().padStart(5, '0')}:${'x'.repeat(i % 200)}`));
    await Promise.all(sent.map((data) => a.phone.notify(SERVER_MODE.s2c, data)));
    await until(() => recorder.notifications.length === count, 10_000, `${count} notifications`);
    expect(recorder.notifications.map((n) => hex(n.data))).toEqual(sent.map(hex));
    expect(new Set(recorder.notifications.map((n) => n.uuid)).size).toBe(1);

    const writes = Array.from({ length: 200 }, (_, i) => Buffer.from([i & 0xff, 0xc2, 0x5e]));
    for (const data of writes) await link.write(SERVER_MODE.c2s, data);
    await until(() => a.phone.writes.all.length === writes.length, 5_000, 'the writes');
    expect(a.phone.writes.all.map((w) => hex(w.data))).toEqual(writes.map(hex));
    expect(a.phone.writes.all.every((w) => w.withoutResponse)).toBe(true);

    await link.close();
    await until(() => a.phone.events.all.some((e) => e.startsWith('disconnect:')), 2_000, 'the phone to see the disconnect');
    expect(recorder.disconnects).toEqual([]);
    expect(a.radio.findDevice(b.bindings.device.id)?.central.links).toEqual([]);
  });

  it('the raw noble API over the link: scan, discover, read, write with response, subscribe/unsubscribe, ATT errors, disconnect', async () => {
    const a = await processA({
      characteristics: [
        { uuid: RW, properties: ['read', 'write', 'notify'] },
        { uuid: SERVER_MODE.c2s, properties: ['writeWithoutResponse'] },
      ],
    });
    const b = await processB(a);
    const discovered = new Promise<Peripheral>((resolve) => b.noble.once('discover', resolve));
    await b.noble.startScanningAsync([stack(SERVICE)], false);
    const peripheral = await discovered;
    await b.noble.stopScanningAsync();
    expect(peripheral.id).toBe(a.phone.device.id);
    expect(peripheral.advertisement.localName).toBe('phone');
    await peripheral.connectAsync();
    const { characteristics } = await peripheral.discoverSomeServicesAndCharacteristicsAsync([stack(SERVICE)], []);
    const rw = characteristics.find((c) => c.uuid === stack(RW)) as Characteristic;
    expect(rw.properties).toEqual(['read', 'write', 'notify']);

    expect((await rw.readAsync()).toString()).toBe('value-from-the-phone');
    await rw.writeAsync(Buffer.from([1, 2, 3]), false);
    expect(a.phone.writes.all.at(-1)).toMatchObject({ withoutResponse: false });
    expect(hex(a.phone.writes.all.at(-1)?.data ?? new Uint8Array())).toBe('010203');

    const data: string[] = [];
    rw.on('data', (value: Buffer, isNotification: boolean) => data.push(`${value.toString()}:${isNotification}`));
    await rw.subscribeAsync();
    await a.phone.notify(RW, Buffer.from('n1'));
    await a.phone.notify(RW, Buffer.from('n2'));
    await until(() => data.length === 2, 2_000, 'two notifications');
    expect(data).toEqual(['n1:true', 'n2:true']);
    await rw.unsubscribeAsync();
    expect(a.phone.isSubscribed(RW)).toBe(false);

    // An ATT error from the phone comes back as noble's error.
    const c2s = characteristics.find((c) => c.uuid === stack(SERVER_MODE.c2s)) as Characteristic;
    await expect(c2s.readAsync()).rejects.toThrow(/not permitted|0x02/i);

    await peripheral.disconnectAsync();
    expect(peripheral.state).toBe('disconnected');
    await until(() => a.phone.connection === undefined, 2_000, 'the phone to see the disconnect');
  });

  it('rejects bad input with a clear error frame and closes that connection; the server keeps serving', async () => {
    const a = await processA();
    const expectFatal = async (text: string, code: string, message: RegExp): Promise<void> => {
      const raw = await RawClient.open(a.server.port);
      raw.send(text);
      const error = await raw.next('error');
      expect(error).toMatchObject({ code, fatal: true });
      expect(error.message).toMatch(message);
      await raw.closed;
    };
    await expectFatal('this is not json\n', 'bad_frame', /not JSON/);
    await expectFatal('{"type":"call","method":"start","args":[]}\n', 'hello_required', /first message must be hello/);
    await expectFatal(`${JSON.stringify({ ...HELLO, version: 99 })}\n`, 'unsupported_version', /version 99/);
    await expectFatal(`${JSON.stringify({ ...HELLO, role: 'toaster' })}\n`, 'bad_message', /role/);
    await expectFatal('{"type":"launch"}\n', 'bad_message', /type/);
    await expectFatal(`${JSON.stringify({ ...HELLO, device: 'ff:ff:ff:ff:ff:ff' })}\n`, 'unknown_device', /no device/);
    await expectFatal(
      `${JSON.stringify(HELLO)}\n${JSON.stringify({ type: 'call', method: 'write', args: ['id', 'aa', 'bb', 'not bytes', true] })}\n`,
      'bad_message',
      /invalid arguments for write/,
    );
    await expectFatal(
      `${JSON.stringify(HELLO)}\n${JSON.stringify({ type: 'call', method: 'rm -rf', args: [] })}\n`,
      'bad_message',
      /method/,
    );
    await expectFatal('x'.repeat(MAX_FRAME_BYTES + 10), 'frame_too_large', /exceeds/);

    const version = await RawClient.open(a.server.port);
    version.send(`${JSON.stringify({ ...HELLO, version: 2 })}\n`);
    expect(await version.next('error')).toMatchObject({ supported: [PROTOCOL_VERSION] });

    // Nobody crashed: a well-behaved client still works, and a second one cannot take its device.
    const b = await processB(a);
    const busy = await RawClient.open(a.server.port);
    busy.send(`${JSON.stringify({ ...HELLO, device: b.bindings.device.address })}\n`);
    expect(await busy.next('error')).toMatchObject({ code: 'device_busy' });
    await busy.closed;
    await until(() => a.server.clients === 1, 2_000, 'only the good client left');
  });

  it('a client can attach to an existing radio device by address', async () => {
    const a = await processA();
    const kiosk = a.radio.addDevice({ name: 'counter-kiosk' });
    const bindings = await RemoteNobleBindings.connect({ port: a.server.port, device: kiosk.address });
    cleanups.push(() => bindings.close());
    expect(bindings.device).toEqual({ id: kiosk.id, address: kiosk.address, name: 'counter-kiosk' });
  });

  it('server stop: clients get bye, noble sees its link and adapter go, nothing stays listening', async () => {
    const a = await processA();
    const b = await processB(a);
    const central = new NobleCentral(b.noble, { platform: 'hci', scanTimeoutMs: 3_000 });
    cleanups.push(() => central.dispose());
    const recorder = new Recorder();
    await central.connect(profile(), recorder, AbortSignal.timeout(5_000));
    const states: string[] = [];
    b.noble.on('stateChange', (state: string) => states.push(state));
    const port = a.server.port;

    await a.server.stop();
    await b.bindings.closed;
    expect(b.bindings.open).toBe(false);
    expect(a.server.clients).toBe(0);
    await until(() => recorder.disconnects.length === 1, 2_000, 'the link drop');
    expect(states).toContain('poweredOff');
    expect(central.availability().usable).toBe(false);
    await until(() => a.phone.connection === undefined, 2_000, 'the phone to see the link end');
    await expectPortClosed(port);
  });

  it('a client that vanishes (socket destroyed) releases its links on the radio', async () => {
    const a = await processA();
    const b = await processB(a);
    const central = new NobleCentral(b.noble, { platform: 'hci', scanTimeoutMs: 3_000 });
    cleanups.push(() => central.dispose());
    await central.connect(profile(), new Recorder(), AbortSignal.timeout(5_000));
    expect(a.phone.connection).toBeDefined();
    destroyLinkSocket(b.bindings);
    await until(() => a.phone.connection === undefined, 2_000, 'the radio side to drop the link');
    await until(() => a.server.clients === 0, 2_000, 'the server to forget the client');
  });

  it('connect fails cleanly when nothing listens', async () => {
    const a = await processA();
    const port = a.server.port;
    await a.server.stop();
    await expect(RemoteNobleBindings.connect({ port, timeoutMs: 1_000 })).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('radio link across processes', () => {
  const children = acrossProcesses();

  it('the kiosk (NobleCentral over the link) verifies the virtual phone living in a child process', { timeout: 60_000 }, async () => {
    const { host, ready } = await children.start('android');

    const bindings = await RemoteNobleBindings.connect({ port: ready.port, name: 'kiosk-over-link' });
    const noble = createRemoteNoble(bindings);
    const e2e = children.track(
      await startE2e({
        profile: 'android',
        ble: { peripheral: false },
        config: { profile: 'identity' },
        trusted: [new Uint8Array(Buffer.from(ready.iaca, 'base64'))],
        devices: (rig) => ({ ...rig.devices, bleCentral: new NobleCentral(noble, { platform: 'hci' }) }),
      }),
    );
    cleanups.push(async () => {
      noble.stop();
      await bindings.close();
    });
    await e2e.ready();
    // The child's phone shows its QR; the kiosk's camera reads it (this process's phone stays idle).
    e2e.rig.qr.push(ready.qr);
    const report = await e2e.nextReport(30_000);
    expectVerifiedOutcome(report);
    expect(e2e.logs.records.some((r) => r.event === 'ble_connected' && r.mtu === 517)).toBe(true);
    await until(() => host.lines.some((l) => 'outcome' in l), 10_000, "the child phone's outcome");
    expect(host.lines.find((l) => 'outcome' in l)).toMatchObject({ outcome: 'shared' });
  });
});
