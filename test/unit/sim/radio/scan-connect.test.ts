/** Virtual radio: identities, advertising and scanning, connections, MTU, power and disconnection. */
import { afterEach, describe, expect, it } from 'vitest';
import {
  RadioError,
  VirtualRadio,
  type AdvertisementReport,
  type DisconnectInfo,
  type ServerConnection,
} from '../../../../src/qa/sim/radio/virtual-radio.js';
import { turns, until } from '../../../support/radio-phone.js';
import { CHR, SVC, connected, pair, type Pair } from './radio-fixtures.js';

let current: Pair | undefined;
afterEach(() => {
  current?.radio.shutdown();
  current = undefined;
});
const setup = async (...args: Parameters<typeof pair>): Promise<Pair> => (current = await pair(...args));

describe('identities', () => {
  it('addresses and ids are deterministic per radio and creation order, and the seed separates radios', () => {
    const a = new VirtualRadio();
    const b = new VirtualRadio();
    const c = new VirtualRadio({ seed: 7 });
    const names = (r: VirtualRadio): string[] => [r.addDevice({ name: 'x' }), r.addDevice()].map((d) => `${d.name} ${d.address} ${d.id}`);
    expect(names(a)).toEqual(['x c0:de:00:00:00:01 c0de00000001', 'device-2 c0:de:00:00:00:02 c0de00000002']);
    expect(names(b)).toEqual(names(new VirtualRadio()));
    expect(names(c)[0]).toBe('x c0:de:07:00:00:01 c0de07000001');
    expect(a.findDevice('C0:DE:00:00:00:02')?.name).toBe('device-2');
    expect(a.findDevice('c0de00000001')?.name).toBe('x');
  });

  it('removeDevice powers a device off and forgets it; its address is never given to another device', async () => {
    const p = await setup({ onWrite: () => undefined });
    const link = await connected(p);
    const before = p.radio.devices.length;
    const dropped = new Promise<DisconnectInfo>((resolve) => link.onDisconnect(resolve));
    p.radio.removeDevice(p.phone);
    expect((await dropped).reason).toMatch(/powered off/);
    expect(p.phone.powered).toBe(false);
    expect(p.radio.devices).toHaveLength(before - 1);
    expect(p.radio.findDevice(p.phone.address)).toBeUndefined();
    const next = p.radio.addDevice({ name: 'next' });
    expect(next.address).not.toBe(p.phone.address);
    expect(p.radio.devices.map((d) => d.address)).not.toContain(p.phone.address);
    p.radio.removeDevice(p.phone); // already gone: nothing happens
    expect(p.radio.devices).toHaveLength(before);
  });

  it('addresses count past 65,535 devices ever added into the fourth byte', () => {
    const radio = new VirtualRadio();
    for (let i = 0; i < 0x10000; i++) radio.removeDevice(radio.addDevice());
    expect(radio.addDevice().address).toBe('c0:de:00:01:00:01');
    expect(radio.devices).toHaveLength(1);
  });

  it('log entries name devices as name@address and carry link ids, never payload bytes', async () => {
    const p = await setup({ onWrite: () => undefined }, { logPackets: true });
    const link = await connected(p);
    await link.write(SVC, CHR.rw, Uint8Array.of(1, 2, 3));
    const connect = p.logs.find((e) => e.event === 'connect');
    expect(connect).toMatchObject({ device: 'kiosk@c0:de:00:00:00:02', peer: 'phone@c0:de:00:00:00:01', link: 'link-1', mtu: 247 });
    expect(p.logs.find((e) => e.event === 'write')).toMatchObject({ bytes: 3, link: 'link-1' });
    expect(JSON.stringify(p.logs)).not.toContain('"data"');
    expect(p.logs.map((e) => e.seq)).toEqual(p.logs.map((_, i) => i + 1));
  });
});

describe('advertising and scanning', () => {
  it('scanFor resolves with an advertiser that is already there (case-insensitive, dashed or not)', async () => {
    const p = await setup();
    const report = await p.kiosk.central.scanFor(SVC.replaceAll('-', '').toLowerCase());
    expect(report).toEqual({
      peripheral: p.phone.info,
      localName: 'phone',
      serviceUuids: ['6c1e2f3a9b8d4e5fa1b2c3d4e5f60718'],
      rssi: -50,
      connectable: true,
    });
  });

  it('scanFor waits for an advertiser that appears later', async () => {
    const radio = new VirtualRadio();
    const central = radio.addDevice({ name: 'kiosk' });
    const phone = radio.addDevice({ name: 'phone' });
    let found: AdvertisementReport | undefined;
    const scanning = central.central.scanFor(SVC).then((r) => (found = r));
    await turns(5);
    expect(found).toBeUndefined();
    await phone.peripheral.startAdvertising({ serviceUuids: ['0000aaaa-0000-0000-0000-000000000000'] }); // another service
    await turns(5);
    expect(found).toBeUndefined();
    await phone.peripheral.startAdvertising({ serviceUuids: [SVC] });
    await scanning;
    expect(found?.peripheral.id).toBe(phone.id);
    radio.shutdown();
  });

  it('16-bit and 128-bit spellings of one UUID match', async () => {
    const radio = new VirtualRadio();
    const phone = radio.addDevice();
    await phone.peripheral.startAdvertising({ serviceUuids: ['180D'] });
    const report = await radio.addDevice().central.scanFor('0000180d-0000-1000-8000-00805f9b34fb');
    expect(report.serviceUuids).toEqual(['180d']);
    radio.shutdown();
  });

  it('scanFor is abortable and leaves no scan running', async () => {
    const radio = new VirtualRadio();
    const central = radio.addDevice();
    const controller = new AbortController();
    const scanning = central.central.scanFor(SVC, { signal: controller.signal });
    controller.abort();
    await expect(scanning).rejects.toMatchObject({ code: 'aborted' });
    const logs: string[] = [];
    radio.onLog((e) => logs.push(e.event));
    await radio.addDevice().peripheral.startAdvertising({ serviceUuids: [SVC] });
    await turns(3);
    expect(logs).not.toContain('discovered');
    await expect(central.central.scanFor(SVC, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'aborted' });
  });

  it('startScan reports each advertising set once, a restarted advertisement again, and never the scanner itself', async () => {
    const radio = new VirtualRadio();
    const central = radio.addDevice();
    const phone = radio.addDevice();
    await central.peripheral.startAdvertising({ serviceUuids: [SVC] });
    await phone.peripheral.startAdvertising({ serviceUuids: [SVC] });
    const reports: string[] = [];
    const scan = central.central.startScan({}, (r) => reports.push(r.peripheral.id));
    await turns(3);
    expect(reports).toEqual([phone.id]);
    await phone.peripheral.startAdvertising({ serviceUuids: [SVC], localName: 'again' });
    await turns(3);
    expect(reports).toEqual([phone.id, phone.id]);
    scan.stop();
    await phone.peripheral.startAdvertising({ serviceUuids: [SVC] });
    await turns(3);
    expect(reports).toHaveLength(2);
    radio.shutdown();
  });

  it('a peripheral that stopped advertising cannot be connected to', async () => {
    const p = await setup();
    await p.phone.peripheral.stopAdvertising();
    await expect(connected(p)).rejects.toMatchObject({ code: 'unreachable' });
    await expect(p.kiosk.central.connect('c0:de:00:00:99:99')).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('connections', () => {
  it('connect tells the peripheral first, then resolves; MTU defaults to 247 on both sides', async () => {
    const order: string[] = [];
    let server: ServerConnection | undefined;
    const p = await setup({ onConnect: (c) => ((server = c), order.push('peripheral')) });
    const link = await connected(p).then((l) => (order.push('central'), l));
    expect(order).toEqual(['peripheral', 'central']);
    expect(link.mtu).toBe(247);
    expect(server).toEqual({ handle: 0x40, linkId: link.id, central: p.kiosk.info, mtu: 247 });
    expect(p.phone.peripheral.connections).toEqual([server]);
    expect(p.kiosk.central.links).toEqual([link]);
  });

  it('the MTU is the smaller of the two preferences', async () => {
    const p = await setup({}, { phoneMtu: 185, kioskMtu: 517 });
    expect((await connected(p)).mtu).toBe(185);
    const q = await pair({}, { phoneMtu: 517 });
    expect((await q.kiosk.central.connect(q.phone.id, { mtu: 100 })).mtu).toBe(100);
    q.radio.shutdown();
    await expect(q.kiosk.central.connect(q.phone.id, { mtu: 22 })).rejects.toBeInstanceOf(RadioError);
  });

  it('a central holds several links; a peripheral serves several centrals, each with its own handle', async () => {
    const p = await setup();
    const other = p.radio.addDevice({ name: 'phone-2' });
    other.peripheral.setServices([{ uuid: SVC, characteristics: [] }]);
    await other.peripheral.startAdvertising({ serviceUuids: [SVC] });
    const second = p.radio.addDevice({ name: 'kiosk-2' });
    const [a, b, c] = await Promise.all([connected(p), p.kiosk.central.connect(other.id), second.central.connect(p.phone.id)]);
    expect(new Set([a.id, b.id, c.id]).size).toBe(3);
    expect(p.kiosk.central.links).toHaveLength(2);
    expect(p.phone.peripheral.connections.map((x) => x.handle)).toEqual([0x40, 0x41]);
    await expect(connected(p)).rejects.toMatchObject({ code: 'already_connected' });
  });

  it('the accept hook refuses a connection', async () => {
    const p = await setup({ accept: (central) => central.name !== 'kiosk' });
    await expect(connected(p)).rejects.toMatchObject({ code: 'connection_refused' });
    expect(p.phone.peripheral.connections).toEqual([]);
  });

  it('connect is abortable while the request is in the air; nothing is connected', async () => {
    const p = await setup();
    p.phone.setFaults({ latencyMs: 50 });
    const controller = new AbortController();
    const connecting = p.kiosk.central.connect(p.phone.id, { signal: controller.signal });
    setTimeout(() => controller.abort(), 5);
    await expect(connecting).rejects.toMatchObject({ code: 'aborted' });
    await new Promise((r) => setTimeout(r, 80));
    expect(p.phone.peripheral.connections).toEqual([]);
    expect(p.kiosk.central.links).toEqual([]);
  });
});

describe('disconnection', () => {
  it('a central disconnect reaches the peripheral after the packets sent before it, with the reason', async () => {
    const seen: string[] = [];
    const p = await setup({
      onWrite: (r) => void seen.push(`write ${r.data[0] ?? -1}`),
      onDisconnect: (_c, info) => void seen.push(`disconnect ${info.by} ${info.reason} ${info.hciCode}`),
    });
    const link = await connected(p);
    const local: DisconnectInfo[] = [];
    link.onDisconnect((i) => local.push(i));
    void link.write(SVC, CHR.wwr, Uint8Array.of(1), { withoutResponse: true });
    void link.write(SVC, CHR.wwr, Uint8Array.of(2), { withoutResponse: true });
    await turns(1); // both commands are on the air
    await link.disconnect('bye');
    expect(local).toEqual([{ reason: 'bye', hciCode: 0x13, by: 'central' }]);
    expect(link.connected).toBe(false);
    await until(() => seen.length === 3);
    expect(seen).toEqual(['write 1', 'write 2', 'disconnect central bye 19']);
    expect(p.phone.peripheral.connections).toEqual([]);
    await link.disconnect('again'); // idempotent
    await expect(link.read(SVC, CHR.rw)).rejects.toMatchObject({ code: 'disconnected' });
  });

  it('a peripheral disconnect fails the pending request and tells the central once; late listeners hear it too', async () => {
    let handle = -1;
    const p = await setup({ onConnect: (c) => (handle = c.handle), onRead: () => new Promise<Uint8Array>(() => undefined) });
    const link = await connected(p);
    const infos: DisconnectInfo[] = [];
    link.onDisconnect((i) => infos.push(i));
    const reading = link.read(SVC, CHR.rw);
    await turns(3);
    await p.phone.peripheral.disconnect(handle, 'phone walked away');
    await expect(reading).rejects.toMatchObject({ code: 'disconnected' });
    expect(infos).toEqual([{ reason: 'phone walked away', hciCode: 0x13, by: 'peripheral' }]);
    const late = await new Promise<DisconnectInfo>((resolve) => link.onDisconnect(resolve));
    expect(late.reason).toBe('phone walked away');
    expect(link.disconnectInfo).toEqual(late);
  });

  it('power off drops every link (0x15), stops advertising and ends scans; availability follows', async () => {
    const disconnects: DisconnectInfo[] = [];
    const p = await setup({ onDisconnect: (_c, i) => disconnects.push(i) });
    const link = await connected(p);
    const scanning = p.kiosk.central.scanFor('0000bbbb-0000-1000-8000-00805f9b34fb');
    const powered: boolean[] = [];
    p.phone.onPowerChange((on) => powered.push(on));
    p.phone.setPowered(false);
    p.kiosk.setPowered(false);
    await expect(scanning).rejects.toMatchObject({ code: 'powered_off' });
    await until(() => disconnects.length === 1 && !link.connected);
    expect(disconnects[0]).toMatchObject({ by: 'radio', hciCode: 0x15 });
    expect(p.phone.peripheral.advertising).toBeUndefined();
    expect(powered).toEqual([false]);
    await expect(p.phone.peripheral.startAdvertising({ serviceUuids: [SVC] })).rejects.toMatchObject({ code: 'powered_off' });
    expect(() => p.kiosk.central.startScan({}, () => undefined)).toThrow(RadioError);
  });
});
