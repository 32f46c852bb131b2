/**
 * The virtual BlePeripheral port against the port contract (src/devices/ports.ts), driven by a scripted phone
 * acting as GATT client on the virtual radio (mdoc central client mode).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualBlePeripheral } from '../../../../src/qa/devices/virtual-ble-peripheral.js';
import { BleSetupError, type BlePeripheralSession, type GattProfile } from '../../../../src/devices/ports.js';
import { AttErrorCode, VirtualRadio, type CommandErrorEvent } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { Events, IDENT, clientProfile } from '../../../support/ble-fixtures.js';
import { CLIENT_MODE, PhoneClient, stack, turns, until } from '../../../support/radio-phone.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000BB02';
const C = CLIENT_MODE;

const profile = (serviceUuid = SERVICE, overrides: Parameters<typeof clientProfile>[1] = {}): GattProfile =>
  clientProfile(serviceUuid, overrides);

let radio: VirtualRadio | undefined;
afterEach(() => {
  radio?.shutdown();
  radio = undefined;
});

function setup(): { radio: VirtualRadio; port: VirtualBlePeripheral; phone: PhoneClient; events: Events } {
  const r = (radio = new VirtualRadio());
  const port = new VirtualBlePeripheral(r.addDevice({ name: 'kiosk' }));
  return { radio: r, port, phone: new PhoneClient(r), events: new Events() };
}

const signal = (): AbortSignal => new AbortController().signal;

describe('advertise', () => {
  it('builds the service from the specs (operations → properties) and advertises its UUID', async () => {
    const { port, phone, events } = setup();
    await port.advertise(profile(), events.onEvent, signal());
    expect(port.device.peripheral.advertising).toEqual({ localName: 'mdl-kiosk', serviceUuids: [stack(SERVICE)] });
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
  });

  it('reports the phone’s GATT activity in order: connect, read (offset), subscribe, write, unsubscribe, disconnect', async () => {
    const { port, phone, events } = setup();
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    expect(await phone.read(C.ident)).toEqual(IDENT);
    await phone.subscribe(C.state);
    await phone.subscribe(C.s2c);
    await phone.write(C.state, Uint8Array.of(1));
    await phone.write(C.c2s, Uint8Array.of(0xa0, 0xa1));
    await phone.unsubscribe(C.s2c);
    await phone.link.disconnect('done');
    await until(() => events.log.all.length === 8);
    expect(events.log.all).toEqual([
      'connect',
      `read ${stack(C.ident)} @0`,
      `subscribe ${stack(C.state)}`,
      `subscribe ${stack(C.s2c)}`,
      `write ${stack(C.state)} 01`,
      `write ${stack(C.c2s)} a0a1`,
      `unsubscribe ${stack(C.s2c)}`,
      'disconnect done',
    ]);
  });

  it('a long value is read at increasing offsets; respond() takes the whole value and the port applies the offset', async () => {
    const { port, phone, events } = setup();
    const value = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
    events.answer = (e) => e.respond(value);
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    expect(await phone.read(C.ident)).toEqual(value);
    expect(events.reads.map((r) => r.offset)).toEqual([0, 246]);
  });

  it('an offset past the end of the value is Invalid Offset (0x07); fail() is Unlikely Error (0x0E)', async () => {
    const { port, phone, events } = setup();
    let call = 0;
    events.answer = (e) => e.respond(new Uint8Array(call++ === 0 ? 300 : 100)); // the value shrank between blobs
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await expect(phone.read(C.ident)).rejects.toMatchObject({ code: AttErrorCode.INVALID_OFFSET });
    events.answer = (e) => e.fail();
    await expect(phone.read(C.ident)).rejects.toMatchObject({ code: AttErrorCode.UNLIKELY_ERROR });
  });

  it('answers may come later (the backend round trip); the phone’s next operation waits for it', async () => {
    const { port, phone, events } = setup();
    events.answer = undefined;
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    const reading = phone.read(C.ident);
    const writing = phone.write(C.state, Uint8Array.of(1));
    await until(() => events.reads.length === 1);
    await turns(5);
    expect(events.log.all).toEqual(['connect', `read ${stack(C.ident)} @0`]);
    events.reads[0]?.respond(IDENT);
    expect(await reading).toEqual(IDENT);
    await writing;
    await until(() => events.log.all.length === 3);
  });
});

describe('permissions', () => {
  it('no read without the read operation (0x02, by the radio) or without `readable` (0x02, by the port); no event either way', async () => {
    const { port, phone, events } = setup();
    await port.advertise(profile(SERVICE, { ident: { uuid: C.ident, operations: ['read'], permissions: [] } }), events.onEvent, signal());
    await phone.connect(SERVICE);
    await expect(phone.read(C.state)).rejects.toMatchObject({ code: AttErrorCode.READ_NOT_PERMITTED });
    await expect(phone.read(C.ident)).rejects.toMatchObject({ code: AttErrorCode.READ_NOT_PERMITTED });
    expect(events.reads).toEqual([]);
  });

  it('no write without write_without_response (by the radio) or without `writeable` (0x03, by the port); no event either way', async () => {
    const { port, phone, events } = setup();
    await port.advertise(
      profile(SERVICE, { c2s: { uuid: C.c2s, operations: ['write_without_response'], permissions: [] } }),
      events.onEvent,
      signal(),
    );
    await phone.connect(SERVICE);
    const refused: CommandErrorEvent[] = [];
    phone.link.onCommandError((e) => refused.push(e));
    await phone.write(C.s2c, Uint8Array.of(1)); // notify only
    await phone.write(C.c2s, Uint8Array.of(2)); // not writeable
    await phone.write(C.state, Uint8Array.of(3)); // fine
    await until(() => refused.length === 2 && events.log.all.length === 2);
    expect(refused.map((e) => [e.characteristicUuid, e.code])).toEqual([
      [stack(C.s2c), AttErrorCode.WRITE_NOT_PERMITTED],
      [stack(C.c2s), AttErrorCode.WRITE_NOT_PERMITTED],
    ]);
    expect(events.log.all).toEqual(['connect', `write ${stack(C.state)} 03`]);
  });
});

describe('notify', () => {
  it('waits for the phone’s subscription to that characteristic, then sends', async () => {
    const { port, phone, events } = setup();
    const session = await port.advertise(profile(), events.onEvent, signal());
    let sent = false;
    const notifying = session.notify(C.s2c, Uint8Array.of(0x42)).then(() => (sent = true));
    await phone.connect(SERVICE);
    await phone.subscribe(C.state);
    await turns(5);
    expect(sent).toBe(false);
    await phone.subscribe(C.s2c);
    await notifying;
    const n = await phone.notifications.next();
    expect(n).toEqual({ serviceUuid: stack(SERVICE), characteristicUuid: stack(C.s2c), data: Uint8Array.of(0x42) });
  });

  it('1,000 notifications, each sent after the previous resolved, arrive in order', async () => {
    const { port, phone, events } = setup();
    const session = await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await phone.subscribe(C.s2c);
    for (let i = 0; i < 1000; i++) await session.notify(C.s2c, Uint8Array.of(i >> 8, i & 0xff));
    await until(() => phone.notifications.all.length === 1000);
    expect(phone.notifications.all.map((n) => (n.data[0] ?? 0) * 256 + (n.data[1] ?? 0))).toEqual(
      Array.from({ length: 1000 }, (_, i) => i),
    );
  });

  it('refuses characteristics outside the profile or without notify, and payloads above MTU − 3', async () => {
    const { port, phone, events } = setup();
    const session = await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await phone.subscribe(C.s2c);
    await expect(session.notify(C.c2s, Uint8Array.of(1))).rejects.toThrow(/notify/);
    await expect(session.notify('00000009-A123-48CE-896B-4C76973373E6', Uint8Array.of(1))).rejects.toThrow(/not a characteristic/);
    await expect(session.notify(C.s2c, new Uint8Array(245))).rejects.toMatchObject({
      name: 'BleValueTooLargeError',
      bytes: 245,
      limit: 244,
      attMtu: 247,
    });
  });
});

describe('one phone per session', () => {
  it('advertising stops when the phone connects; another phone cannot get in; it resumes when the phone leaves', async () => {
    const { radio: r, port, phone, events } = setup();
    await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    await until(() => port.device.peripheral.advertising === undefined);
    const other = r.addDevice({ name: 'phone-2' });
    await expect(other.central.connect(port.device.id)).rejects.toMatchObject({
      code: expect.stringMatching(/unreachable|connection_refused/) as unknown,
    });
    await phone.link.disconnect('bye');
    await until(() => port.device.peripheral.advertising !== undefined);
    await other.central.connect(port.device.id);
    await until(() => events.log.all.length === 3);
    expect(events.log.all).toEqual(['connect', 'disconnect bye', 'connect']);
  });

  it('two phones racing for the service: one is served, the other refused', async () => {
    const { radio: r, port, events } = setup();
    await port.advertise(profile(), events.onEvent, signal());
    const a = r.addDevice({ name: 'a' });
    const b = r.addDevice({ name: 'b' });
    const results = await Promise.allSettled([a.central.connect(port.device.id), b.central.connect(port.device.id)]);
    expect(results.map((x) => x.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(port.device.peripheral.connections).toHaveLength(1);
    expect(events.log.all).toEqual(['connect']);
  });
});

describe('close', () => {
  it('stops advertising, disconnects the phone, removes the service, fails waiting notifies; idempotent; silent after', async () => {
    const { port, phone, events } = setup();
    const session = await port.advertise(profile(), events.onEvent, signal());
    await phone.connect(SERVICE);
    const waiting = session.notify(C.s2c, Uint8Array.of(1)).catch((e: unknown) => e);
    const pendingRead = ((): Promise<unknown> => {
      events.answer = undefined;
      return phone.read(C.ident).catch((e: unknown) => e);
    })();
    await until(() => events.reads.length === 1);
    await Promise.all([session.close(), session.close()]);
    await session.close();
    expect(await waiting).toMatchObject({ message: expect.stringMatching(/closed/) as unknown });
    // The pending read is failed (0x0E) as the session closes; nothing is left waiting.
    expect(await pendingRead).toMatchObject({ code: AttErrorCode.UNLIKELY_ERROR });
    expect(await phone.disconnects.next()).toMatchObject({ reason: 'closed by the kiosk', by: 'peripheral' });
    expect(port.device.peripheral.advertising).toBeUndefined();
    expect(port.device.peripheral.services).toEqual([]);
    expect(port.device.peripheral.connections).toEqual([]);
    await turns(5);
    expect(events.log.all).toEqual(['connect', `read ${stack(C.ident)} @0`]);
    await expect(session.notify(C.s2c, Uint8Array.of(1))).rejects.toThrow(/closed/);
  });

  it('the next session advertises a new service UUID on the same device; the old one is gone', async () => {
    const { radio: r, port, events } = setup();
    const first: BlePeripheralSession = await port.advertise(profile(), events.onEvent, signal());
    await first.close();
    const next = 'C0FFEE00-1234-4321-ABCD-00000000CC03';
    await port.advertise(profile(next), events.onEvent, signal());
    const phone = new PhoneClient(r, 'phone-2');
    await expect(phone.connect(SERVICE, 50)).rejects.toMatchObject({ code: 'aborted' });
    const link = await phone.connect(next);
    expect((await link.discover()).map((s) => s.uuid)).toEqual([stack(next)]);
  });
});

describe('abort and availability', () => {
  it('an aborted signal: rejects, nothing advertised', async () => {
    const { port, events } = setup();
    await expect(port.advertise(profile(), events.onEvent, AbortSignal.abort())).rejects.toThrow(/aborted/);
    expect(port.device.peripheral.advertising).toBeUndefined();
    expect(port.device.peripheral.services).toEqual([]);
  });

  it('aborted while advertising starts: rejects promptly, advertising stopped, service removed', async () => {
    const { port, events } = setup();
    const controller = new AbortController();
    const advertising = port.advertise(profile(), events.onEvent, controller.signal);
    controller.abort();
    await expect(advertising).rejects.toThrow(/aborted/);
    expect(port.device.peripheral.advertising).toBeUndefined();
    expect(port.device.peripheral.services).toEqual([]);
  });

  it('an unusable role refuses with its reason and advertises nothing; power off is powered_off', async () => {
    const { port, events } = setup();
    port.setAvailability({ usable: false, reason: 'unsupported_platform' });
    const error = await port.advertise(profile(), events.onEvent, signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BleSetupError);
    expect(error).toMatchObject({ reason: 'unsupported_platform' });
    port.setAvailability({ usable: true });
    port.device.setPowered(false);
    await expect(port.advertise(profile(), events.onEvent, signal())).rejects.toMatchObject({ reason: 'powered_off' });
    expect(port.device.peripheral.advertising).toBeUndefined();
  });
});
