/**
 * The bleno BlePeripheral adapter against the port contract (src/devices/ports.ts), through bleno's real
 * object model and GATT server (`lib/bleno`, `lib/hci-socket/gatt.js`) on the virtual radio bindings,
 * with a scripted phone acting as GATT client (mdoc central client mode).
 */
import type { EventEmitter } from 'node:events';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { BlenoPeripheral } from '../../../../src/devices/ble/bleno-peripheral.js';
import { blenoAvailability } from '../../../../src/devices/ble/bleno-support.js';
import type { Bleno } from '../../../../src/devices/ble/bleno-types.js';
import { BleSetupError, type Availability, type GattProfile } from '../../../../src/devices/ports.js';
import { createVirtualBleno } from '../../../../src/qa/devices/bleno-radio-bindings.js';
import { AttErrorCode, VirtualRadio, type CommandErrorEvent, type RadioDevice } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { Events, IDENT, blenoSessionListeners, clientProfile } from '../../../support/ble-fixtures.js';
import { CLIENT_MODE, PhoneClient, stack, turns, until } from '../../../support/radio-phone.js';
import { Timeline } from '../../../support/stage-timeline.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000BB02';
const C = CLIENT_MODE;

const profile = (serviceUuid = SERVICE, overrides: Parameters<typeof clientProfile>[1] = {}): GattProfile =>
  clientProfile(serviceUuid, overrides);

interface Rig {
  readonly radio: VirtualRadio;
  readonly device: RadioDevice;
  readonly bleno: Bleno;
  readonly port: BlenoPeripheral;
  readonly phone: PhoneClient;
  readonly events: Events;
}

let rig: Rig | undefined;
let consoleLog: MockInstance<typeof console.log>;

beforeEach(() => {
  consoleLog = vi.spyOn(console, 'log');
});

afterEach(async () => {
  await rig?.port.close();
  rig?.radio.shutdown();
  rig = undefined;
  // bleno prints its warnings with console.log; the default HCI binding is never constructed.
  expect(consoleLog).not.toHaveBeenCalled();
  consoleLog.mockRestore();
});

async function setup(): Promise<Rig> {
  const radio = new VirtualRadio();
  const device = radio.addDevice({ name: 'kiosk' });
  const bleno = createVirtualBleno(device);
  const port = new BlenoPeripheral(bleno, { teardownStepMs: 500 });
  rig = { radio, device, bleno, port, phone: new PhoneClient(radio), events: new Events() };
  await until(() => port.availability().usable, 2_000, 'bleno poweredOn');
  return rig;
}

const signal = (): AbortSignal => new AbortController().signal;

function expectNothingRunning(r: Rig): void {
  expect(r.device.peripheral.advertising).toBeUndefined();
  expect(r.device.peripheral.services).toEqual([]);
  expect(r.device.peripheral.connections).toEqual([]);
  expect(blenoSessionListeners(r.bleno)).toBe(0);
}

describe('advertise', () => {
  it('builds the service from the specs (operations → properties) and advertises its UUID', async () => {
    const { device, port, phone, events } = await setup();
    await port.advertise(profile(), events.onEvent, signal());
    expect(device.peripheral.advertising).toEqual({ localName: 'mdl-kiosk', serviceUuids: [stack(SERVICE)] });
    const link = await phone.connect(SERVICE.toLowerCase());
    expect(await link.discover()).toEqual([
      {
        uuid: stack(SERVICE),
        characteristics: [
          { uuid: stack(C.state), properties: ['writeWithoutResponse', 'notify'] },
          { uuid: stack(C.c2s), properties: ['writeWithoutResponse'] },
          { uuid: stack(C.s2c), properties: ['notify'] },
          { uuid: stack(C.ident), properties: ['read'] },
        ],
      },
    ]);
    // bleno's GATT took the link's MTU from the Exchange MTU the bindings fed it.
    expect(rig?.bleno.mtu).toBe(247);
  });

  it('reports the phone’s activity in order, the first GATT event right after connect', async () => {
    const { port, phone, events } = await setup();
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    expect(await phone.read(C.ident)).toEqual(IDENT);
    await phone.subscribe(C.state);
    await phone.subscribe(C.s2c);
    await phone.write(C.state, Uint8Array.of(1));
    await phone.write(C.c2s, Uint8Array.of(0xa0, 0xa1));
    await phone.unsubscribe(C.s2c);
    await phone.link.disconnect('done');
    await until(() => events.log.all.length === 9);
    expect(events.log.all).toEqual([
      'connect',
      `read ${C.ident} @0`,
      `subscribe ${C.state}`,
      `subscribe ${C.s2c}`,
      `write ${C.state} 01`,
      `write ${C.c2s} a0a1`,
      `unsubscribe ${C.s2c}`,
      // bleno's GATT drops the remaining subscription when the link ends, before the disconnect
      `unsubscribe ${C.state}`,
      'disconnect the phone disconnected',
    ]);
  });

  it('refuses a profile naming one characteristic twice, or a bad UUID', async () => {
    const { port, events } = await setup();
    const twice = profile(SERVICE, {
      c2s: { uuid: C.state.toLowerCase(), operations: ['write_without_response'], permissions: ['writeable'] },
    });
    await expect(port.advertise(twice, events.onEvent, signal())).rejects.toBeInstanceOf(BleSetupError);
    await expect(port.advertise(profile('not-a-uuid'), events.onEvent, signal())).rejects.toBeInstanceOf(BleSetupError);
    expectNothingRunning(rig as Rig);
  });
});

describe('reads', () => {
  it('a long value: one reported read, one respond(); the Read Blobs are answered from that value', async () => {
    const { port, phone, events } = await setup();
    const value = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
    events.answer = (e) => e.respond(value);
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    expect(await phone.read(C.ident)).toEqual(value);
    // The radio asked at offsets 0 and 246 (ATT_MTU 247 − 1); only offset 0 reached the core.
    expect(events.reads.map((r) => r.offset)).toEqual([0]);
  });

  it('the phone reads ident again and again: each read is reported and answered afresh', async () => {
    const { port, phone, events } = await setup();
    const values = [new Uint8Array(250).fill(1), new Uint8Array(300).fill(2), new Uint8Array(16).fill(3)];
    let n = 0;
    events.answer = (e) => e.respond(values[n++] ?? IDENT);
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    expect(await phone.read(C.ident)).toEqual(values[0]);
    expect(await phone.read(C.ident)).toEqual(values[1]);
    expect(await phone.read(C.ident)).toEqual(values[2]);
    expect(events.reads.map((r) => r.offset)).toEqual([0, 0, 0]);
  });

  it('answers may come later (the backend round trip); the phone’s next operation waits for it', async () => {
    const { port, phone, events } = await setup();
    events.answer = undefined;
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    const reading = phone.read(C.ident);
    const writing = phone.write(C.state, Uint8Array.of(1));
    await until(() => events.reads.length === 1);
    await turns(5);
    expect(events.log.all).toEqual(['connect', `read ${C.ident} @0`]);
    events.reads[0]?.respond(IDENT);
    expect(await reading).toEqual(IDENT);
    await writing;
    await until(() => events.log.all.length === 3);
    expect(events.log.all[2]).toBe(`write ${C.state} 01`);
  });

  it('fail() is Unlikely Error (0x0E); a second answer is ignored', async () => {
    const { port, phone, events } = await setup();
    events.answer = (e) => {
      e.fail();
      e.respond(IDENT);
    };
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await expect(phone.read(C.ident)).rejects.toMatchObject({ code: AttErrorCode.UNLIKELY_ERROR });
  });
});

describe('permissions', () => {
  it('no read of a characteristic without read (0x02) or without `readable` (0x02); no event either way', async () => {
    const { port, phone, events } = await setup();
    await port.advertise(profile(SERVICE, { ident: { uuid: C.ident, operations: ['read'], permissions: [] } }), events.onEvent, signal());
    await phone.connect(SERVICE);
    await expect(phone.read(C.state)).rejects.toMatchObject({ code: AttErrorCode.READ_NOT_PERMITTED });
    await expect(phone.read(C.ident)).rejects.toMatchObject({ code: AttErrorCode.READ_NOT_PERMITTED });
    expect(events.reads).toEqual([]);
  });

  it('no write to a characteristic without the operation (0x03) or without `writeable` (not reported)', async () => {
    const { port, phone, events } = await setup();
    await port.advertise(
      profile(SERVICE, { c2s: { uuid: C.c2s, operations: ['write_without_response'], permissions: [] } }),
      events.onEvent,
      signal(),
    );
    await phone.connect(SERVICE);
    const refused: CommandErrorEvent[] = [];
    phone.link.onCommandError((e) => refused.push(e));
    await phone.write(C.s2c, Uint8Array.of(1)); // notify only: refused with an error PDU
    await expect(phone.link.write(SERVICE, C.c2s, Uint8Array.of(2))).rejects.toMatchObject({ code: AttErrorCode.WRITE_NOT_PERMITTED }); // Write Request
    await phone.write(C.c2s, Uint8Array.of(3)); // a Write Command gets no response in ATT; not writeable: dropped
    await phone.write(C.state, Uint8Array.of(4)); // fine
    await until(() => refused.length === 1 && events.log.all.length === 2);
    await turns(5);
    expect(refused.map((e) => [e.characteristicUuid, e.code])).toEqual([[stack(C.s2c), AttErrorCode.WRITE_NOT_PERMITTED]]);
    expect(events.log.all).toEqual(['connect', `write ${C.state} 04`]);
  });
});

describe('notify', () => {
  it('waits for the phone’s subscription to that characteristic, then sends', async () => {
    const { port, phone, events } = await setup();
    const session = await port.advertise(profile(), events.onEvent, signal());
    let sent = false;
    const notifying = session.notify(C.s2c, Uint8Array.of(0x42)).then(() => (sent = true));
    await phone.connect(SERVICE);
    await phone.subscribe(C.state);
    await turns(5);
    expect(sent).toBe(false);
    await phone.subscribe(C.s2c);
    await notifying;
    expect(await phone.notifications.next()).toEqual({
      serviceUuid: stack(SERVICE),
      characteristicUuid: stack(C.s2c),
      data: Uint8Array.of(0x42),
    });
  });

  it('an abort while waiting for the subscription rejects at once and sends nothing later', async () => {
    const { port, phone, events } = await setup();
    const session = await port.advertise(profile(), events.onEvent, signal());
    const controller = new AbortController();
    const first = session.notify(C.s2c, Uint8Array.of(1), controller.signal).catch((e: unknown) => e);
    const second = session.notify(C.s2c, Uint8Array.of(2), controller.signal).catch((e: unknown) => e);
    controller.abort();
    expect(await first).toMatchObject({ name: 'AbortError' });
    expect(await second).toMatchObject({ name: 'AbortError' });
    await phone.connect(SERVICE);
    await phone.subscribe(C.s2c);
    await session.notify(C.s2c, Uint8Array.of(3));
    await until(() => phone.notifications.all.length === 1);
    await turns(5);
    expect(phone.notifications.all.map((n) => n.data)).toEqual([Uint8Array.of(3)]);
  });

  it('refuses characteristics outside the profile or without notify, and values above ATT_MTU − 3 (never truncated)', async () => {
    const { port, phone, events } = await setup();
    const session = await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await phone.subscribe(C.s2c);
    await expect(session.notify(C.c2s, Uint8Array.of(1))).rejects.toThrow(/notify/);
    await expect(session.notify('00000009-A123-48CE-896B-4C76973373E6', Uint8Array.of(1))).rejects.toThrow(/not a characteristic/);
    await expect(session.notify(C.s2c, new Uint8Array(245))).rejects.toMatchObject({
      ...{ name: 'BleValueTooLargeError', bytes: 245, limit: 244, attMtu: 247 },
      message: 'ble_write of 245 bytes exceeds the notification limit of 244 bytes (ATT_MTU 247 − 3)',
    });
    await session.notify(C.s2c, new Uint8Array(244));
    expect((await phone.notifications.next()).data).toHaveLength(244);
  });

  it('any value size at any ATT_MTU: up to ATT_MTU − 3 arrives whole, above it is refused with the size and limit and nothing is sent (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 23, max: 256 }), fc.integer({ min: 0, max: 600 }), async (mtu, size) => {
        const r = await setup();
        try {
          const session = await r.port.advertise(profile(), r.events.onEvent, signal());
          const phone = new PhoneClient(r.radio, 'phone', mtu);
          phone.device.setFaults({ mtu }); // the link's MTU, whatever the kiosk device prefers
          await phone.connect(SERVICE);
          await phone.subscribe(C.s2c);
          const value = Uint8Array.from({ length: size }, (_, i) => (i * 31 + size) & 0xff);
          const sent = await session.notify(C.s2c, value).then(
            () => undefined,
            (e: unknown) => e,
          );
          if (size <= mtu - 3) {
            expect(sent).toBeUndefined();
            expect(Array.from((await phone.notifications.next()).data)).toEqual(Array.from(value));
          } else {
            expect(sent).toMatchObject({ name: 'BleValueTooLargeError', bytes: size, limit: mtu - 3, attMtu: mtu });
            await turns(5);
            expect(phone.notifications.all).toEqual([]);
          }
        } finally {
          await r.port.close();
          r.radio.shutdown();
          rig = undefined;
        }
      }),
      { numRuns: 25 },
    );
  });

  it('interleaving: phone writes while notifications are in flight keep both orders', async () => {
    const { port, phone, events } = await setup();
    const session = await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await phone.subscribe(C.s2c);
    const timeline: ('n' | 'w')[] = [];
    phone.link.onNotification(() => timeline.push('n'));
    events.tap = (e) => {
      if (e.kind === 'write') timeline.push('w');
    };
    const count = 200;
    const notifying = (async (): Promise<void> => {
      for (let i = 0; i < count; i++) await session.notify(C.s2c, Uint8Array.of(i >> 8, i & 0xff));
    })();
    const writing = (async (): Promise<void> => {
      for (let i = 0; i < count; i++) await phone.write(C.c2s, Uint8Array.of(i >> 8, i & 0xff));
    })();
    await Promise.all([notifying, writing]);
    await until(() => phone.notifications.all.length === count && events.log.all.length === count + 2);
    expect(phone.notifications.all.map((n) => (n.data[0] ?? 0) * 256 + (n.data[1] ?? 0))).toEqual(
      Array.from({ length: count }, (_, i) => i),
    );
    const writes = events.log.all.filter((l) => l.startsWith('write')).map((l) => parseInt(l.split(' ')[2] ?? '', 16));
    expect(writes).toEqual(Array.from({ length: count }, (_, i) => i));
    // Both really overlapped: writes were reported between the first and the last notification.
    const firstNotified = timeline.indexOf('n');
    const lastNotified = timeline.lastIndexOf('n');
    expect(timeline.slice(firstNotified, lastNotified).includes('w')).toBe(true);
  });

  it('concurrent notify() calls go out in call order', async () => {
    const { port, phone, events } = await setup();
    const session = await port.advertise(profile(), events.onEvent, signal());
    const all = Array.from({ length: 20 }, (_, i) => session.notify(C.s2c, Uint8Array.of(i)));
    await phone.connect(SERVICE);
    await phone.subscribe(C.s2c);
    await Promise.all(all);
    await until(() => phone.notifications.all.length === 20);
    expect(phone.notifications.all.map((n) => n.data[0])).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});

describe('one phone per session', () => {
  it('advertising stops when the phone connects; it resumes when the phone leaves; the phone can come back', async () => {
    const { radio, device, port, phone, events } = await setup();
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await until(() => device.peripheral.advertising === undefined);
    const other = radio.addDevice({ name: 'phone-2' });
    await expect(other.central.connect(device.id)).rejects.toMatchObject({ code: 'unreachable' });
    await phone.link.disconnect('bye');
    await until(() => device.peripheral.advertising !== undefined);
    await other.central.connect(device.id);
    await until(() => events.log.all.length === 3);
    expect(events.log.all).toEqual(['connect', 'disconnect the phone disconnected', 'connect']);
  });

  it('a second central that gets in anyway (hci re-advertises) is disconnected; its requests are refused', async () => {
    const { radio, device, bleno, port, phone, events } = await setup();
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await until(() => device.peripheral.advertising === undefined);
    bleno.startAdvertising('mdl-kiosk', [stack(SERVICE)]); // as the hci binding does after an accept
    await until(() => device.peripheral.advertising !== undefined);
    const intruder = radio.addDevice({ name: 'intruder' });
    const link = await intruder.central.connect(device.id);
    const read = link.read(SERVICE, C.ident).catch((e: unknown) => e);
    const info = await new Promise((resolve) => link.onDisconnect(resolve));
    expect(info).toMatchObject({ by: 'peripheral' });
    expect(await read).toBeInstanceOf(Error);
    expect(await phone.read(C.ident)).toEqual(IDENT);
    expect(events.log.all).toEqual(['connect', `read ${C.ident} @0`]);
  });

  it('two phones racing for the service: one is served, the other not', async () => {
    const { radio, device, port, events } = await setup();
    await port.advertise(profile(), events.onEvent, signal());
    const a = radio.addDevice({ name: 'a' });
    const b = radio.addDevice({ name: 'b' });
    const results = await Promise.allSettled([a.central.connect(device.id), b.central.connect(device.id)]);
    expect(results.map((x) => x.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(device.peripheral.connections).toHaveLength(1);
    expect(events.log.all).toEqual(['connect']);
  });
});

describe('teardown', () => {
  it('phone disconnects mid-transfer: disconnect reported, a late answer is dropped, then a clean close', async () => {
    const r = await setup();
    const { port, phone, events } = r;
    const session = await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await phone.subscribe(C.s2c);
    for (let i = 0; i < 5; i++) await session.notify(C.s2c, Uint8Array.of(i));
    events.answer = undefined;
    const reading = phone.read(C.ident).catch((e: unknown) => e);
    await until(() => events.reads.length === 1);
    await phone.link.disconnect('walked away');
    expect(await reading).toMatchObject({ code: 'disconnected' });
    await until(() => events.log.all.includes('disconnect the phone disconnected'));
    // bleno's GATT has forgotten the connection; answering now must not throw into it.
    expect(() => events.reads[0]?.respond(IDENT)).not.toThrow();
    const waiting = session.notify(C.s2c, Uint8Array.of(9)).catch((e: unknown) => e);
    await session.close();
    expect(await waiting).toMatchObject({ message: expect.stringMatching(/closed/) as unknown });
    expect(events.log.all).toEqual([
      'connect',
      `subscribe ${C.s2c}`,
      `read ${C.ident} @0`,
      `unsubscribe ${C.s2c}`,
      'disconnect the phone disconnected',
    ]);
    expectNothingRunning(r);
  });

  it('close(): stops advertising, disconnects the phone, removes the service, fails waits; idempotent; silent after', async () => {
    const r = await setup();
    const { port, phone, events } = r;
    const session = await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    const waiting = session.notify(C.s2c, Uint8Array.of(1)).catch((e: unknown) => e);
    events.answer = undefined;
    const pendingRead = phone.read(C.ident).catch((e: unknown) => e);
    await until(() => events.reads.length === 1);
    await Promise.all([session.close(), session.close()]);
    await session.close();
    expect(await waiting).toMatchObject({ message: expect.stringMatching(/closed/) as unknown });
    // The pending read is failed (0x0E) as the session closes.
    expect(await pendingRead).toMatchObject({ code: AttErrorCode.UNLIKELY_ERROR });
    expect(await phone.disconnects.next()).toMatchObject({ by: 'peripheral' });
    expectNothingRunning(r);
    await turns(5);
    expect(events.log.all).toEqual(['connect', `read ${C.ident} @0`]);
    await expect(session.notify(C.s2c, Uint8Array.of(1))).rejects.toThrow(/closed/);
    await port.close();
    await port.close();
    await expect(port.advertise(profile(), events.onEvent, signal())).rejects.toBeInstanceOf(BleSetupError);
    expect(r.bleno.listenerCount('stateChange')).toBe(0);
  });

  it('the next session advertises a new service UUID on the same bleno instance; the old one is gone', async () => {
    const r = await setup();
    const { radio, port, events } = r;
    const first = await port.advertise(profile(), events.onEvent, signal());
    await r.phone.connect(SERVICE);
    await r.phone.subscribe(C.s2c);
    await first.close();
    const next = 'C0FFEE00-1234-4321-ABCD-00000000CC03';
    const second = await port.advertise(profile(next), events.onEvent, signal());
    const phone = new PhoneClient(radio, 'phone-2');
    await expect(phone.connect(SERVICE, 50)).rejects.toMatchObject({ code: 'aborted' });
    const link = await phone.connect(next);
    expect((await link.discover()).map((s) => s.uuid)).toEqual([stack(next)]);
    await phone.subscribe(C.s2c);
    await second.notify(C.s2c, Uint8Array.of(7));
    expect((await phone.notifications.next()).data).toEqual(Uint8Array.of(7));
    expect(await phone.read(C.ident)).toEqual(IDENT);
    await second.close();
    expectNothingRunning(r);
  });

  it('advertise() while a session is open takes it over (the old one is closed first)', async () => {
    const r = await setup();
    const first = await r.port.advertise(profile(), r.events.onEvent, signal());
    await r.port.advertise(profile('C0FFEE00-1234-4321-ABCD-00000000CC04'), r.events.onEvent, signal());
    await expect(first.notify(C.s2c, Uint8Array.of(1))).rejects.toThrow(/closed/);
    expect(r.device.peripheral.advertising?.serviceUuids).toEqual([stack('C0FFEE00-1234-4321-ABCD-00000000CC04')]);
  });
});

describe('abort and availability', () => {
  it('an aborted signal: rejects, nothing advertised', async () => {
    const r = await setup();
    await expect(r.port.advertise(profile(), r.events.onEvent, AbortSignal.abort())).rejects.toThrow(/aborted/);
    expectNothingRunning(r);
  });

  it('aborted while advertising starts: rejects before the service is set or advertising starts, and leaves nothing running', async () => {
    const r = await setup();
    const timeline = new Timeline();
    const onServicesSet = (): void => timeline.push('servicesSet');
    const onAdvertisingStart = (): void => timeline.push('advertisingStart');
    r.bleno.on('servicesSet', onServicesSet);
    r.bleno.on('advertisingStart', onAdvertisingStart);
    const controller = new AbortController();
    const advertising = timeline.settle(r.port.advertise(profile(), r.events.onEvent, controller.signal), 'advertise');
    controller.abort();
    await expect(advertising).rejects.toThrow(/aborted/);
    await turns(10); // what bleno would have done next has had its turns
    // Promptly = ahead of the stack's own answers, not under a number of milliseconds.
    expect(timeline.at('advertise:rejected')).toBeLessThan(Math.min(timeline.at('servicesSet'), timeline.at('advertisingStart')));
    expect(timeline.entries).not.toContain('advertisingStart');
    r.bleno.removeListener('servicesSet', onServicesSet);
    r.bleno.removeListener('advertisingStart', onAdvertisingStart);
    expectNothingRunning(r);
  });

  it('follows the radio’s power: powered_off (advertise refused), then usable again', async () => {
    const { device, port, events } = await setup();
    const seen: Availability[] = [];
    const stop = port.onAvailabilityChange((a) => seen.push(a));
    device.setPowered(false);
    await until(() => !port.availability().usable);
    expect(port.availability()).toMatchObject({ usable: false, reason: 'powered_off' });
    await expect(port.advertise(profile(), events.onEvent, signal())).rejects.toMatchObject({ reason: 'powered_off' });
    device.setPowered(true);
    await until(() => port.availability().usable);
    expect(seen.map((a) => a.reason ?? 'usable')).toEqual(['powered_off', 'usable']);
    stop();
    const session = await port.advertise(profile(), events.onEvent, signal());
    expect(device.peripheral.advertising).toBeDefined();
    await session.close();
  });

  it('power off mid-session: the phone’s disconnect is reported; close() still completes', async () => {
    const r = await setup();
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    await r.phone.connect(SERVICE);
    await r.phone.subscribe(C.s2c);
    r.device.setPowered(false);
    await until(() => r.events.log.all.includes('disconnect the phone disconnected'));
    await session.close();
    expectNothingRunning(r);
  });

  it('adapter gone mid-session with no disconnect from the stack (hci: a dongle pulled out, only pollIsDevUp reports it): the phone is reported gone at once, saying why', async () => {
    const r = await setup();
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    await r.phone.connect(SERVICE);
    await r.phone.subscribe(C.s2c);
    await until(() => r.events.log.all.includes(`subscribe ${C.s2c}`));
    // Nothing comes from a socket whose adapter is gone: the binding's disconnect events are lost.
    const bindings = Reflect.get(r.bleno, '_bindings') as EventEmitter;
    const emit = bindings.emit.bind(bindings);
    bindings.emit = (event: string | symbol, ...args: unknown[]): boolean => (event === 'disconnect' ? false : emit(event, ...args));
    r.device.setPowered(false);
    await until(() => r.events.log.all.some((e) => e.startsWith('disconnect')), 2_000, 'the phone reported gone');
    expect(r.events.log.all.slice(-2)).toEqual([
      `unsubscribe ${C.s2c}`,
      'disconnect adapter_off: the Bluetooth adapter was switched off (poweredOff), the link to the phone is gone',
    ]);
    await session.close();
    bindings.emit = emit;
  });

  it('maps bleno states to availability', () => {
    expect(blenoAvailability('poweredOn', 'hci')).toEqual({ usable: true });
    expect(blenoAvailability('poweredOff', 'hci')).toMatchObject({ usable: false, reason: 'powered_off' });
    expect(blenoAvailability('unsupported', 'hci')).toMatchObject({ usable: false, reason: 'no_adapter' });
    expect(blenoAvailability('unsupported', 'mac')).toMatchObject({ usable: false, reason: 'unsupported_platform' });
    expect(blenoAvailability('unauthorized', 'mac')).toMatchObject({ usable: false, reason: 'unauthorized' });
    expect(blenoAvailability('unknown', 'hci')).toMatchObject({ usable: false, reason: 'starting' });
  });
});
