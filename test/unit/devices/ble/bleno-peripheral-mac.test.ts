/**
 * The bleno BlePeripheral adapter on macOS: bleno's own object model (`lib/bleno.js`) on a stand-in for its
 * mac binding that behaves as `lib/mac/src` shows (test/support/fake-bleno-mac.ts): `accept` once per central
 * and manager, no `disconnect` ever, `setServices` that only adds, `stop()` the one way to remove services,
 * a read callback that needs a Buffer, events that arrive later and not in a guaranteed order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BlenoPeripheral } from '../../../../src/devices/ble/bleno-peripheral.js';
import { blenoAvailability, blenoBindingKind } from '../../../../src/devices/ble/bleno-support.js';
import type { Bleno } from '../../../../src/devices/ble/bleno-types.js';
import { BleSetupError, type BlePeripheralSession, type GattProfile } from '../../../../src/devices/ports.js';
import { CB_ATT, FakeBlenoMac, createMacBleno, type FakeBlenoMacOptions } from '../../../support/fake-bleno-mac.js';
import { Events, IDENT, blenoSessionListeners, clientProfile } from '../../../support/ble-fixtures.js';
import { CLIENT_MODE, stack, turns, until } from '../../../support/radio-phone.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000DD01';
const NEXT_SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000DD02';
const C = CLIENT_MODE;
/** A CBCentral identifier as bleno spells it (objc_cpp.mm convertToBlenoAddress: lower case, no dashes). */
const PHONE = '6a1f3c0e9b7d4e21a0c35f8e2d4b7a90';
const OTHER = '0b9e2d4c7a3f41e8b6d05c2a9e7f1d34';

const profile = (serviceUuid = SERVICE): GattProfile => clientProfile(serviceUuid);
const signal = (): AbortSignal => new AbortController().signal;

interface Rig {
  readonly mac: FakeBlenoMac;
  readonly bleno: Bleno;
  readonly port: BlenoPeripheral;
  readonly events: Events;
}

let rig: Rig | undefined;

afterEach(async () => {
  await rig?.port.close();
  // Nothing the binding threw back at a callback: such a request would never be answered on a Mac.
  expect(rig?.mac.callbackErrors ?? []).toEqual([]);
  rig = undefined;
});

async function setup(options: FakeBlenoMacOptions & { teardownStepMs?: number } = {}, ready = true): Promise<Rig> {
  const mac = new FakeBlenoMac(options);
  const bleno = createMacBleno(mac);
  const port = new BlenoPeripheral(bleno, { binding: 'mac', teardownStepMs: options.teardownStepMs ?? 60_000 });
  rig = { mac, bleno, port, events: new Events() };
  if (ready) await until(() => port.availability().usable, 2_000, 'bleno poweredOn');
  return rig;
}

/** One phone's visit: subscribes to State and Server2Client, reads Ident, writes the start byte. */
async function visit(
  r: Rig,
  session: BlePeripheralSession,
  serviceUuid = SERVICE,
  identifier = PHONE,
): Promise<ReturnType<FakeBlenoMac['central']>> {
  const phone = r.mac.central(identifier);
  const service = stack(serviceUuid);
  phone.subscribe(service, stack(C.state));
  phone.subscribe(service, stack(C.s2c));
  expect(await phone.read(service, stack(C.ident))).toEqual({ result: CB_ATT.success, data: Buffer.from(IDENT) });
  await phone.write(service, stack(C.state), Uint8Array.of(1));
  await session.notify(C.s2c, Uint8Array.of(0x42));
  await until(() => phone.notifications.length === 1, 2_000, 'the notification');
  return phone;
}

describe('macOS peripheral: who the phone is', () => {
  it('the same phone in a second session is served (bleno accepts a central once per manager; the manager is renewed)', async () => {
    const r = await setup();
    const first = await r.port.advertise(profile(), r.events.onEvent, signal());
    const phone = await visit(r, first);
    phone.disconnect();
    await until(() =>
      r.events.log.all.includes(
        'disconnect the phone left: it unsubscribed from 00000005-A123-48CE-896B-4C76973373E6 (macOS reports no disconnect)',
      ),
    );
    await first.close();
    const secondEvents = new Events();
    const second = await r.port.advertise(profile(NEXT_SERVICE), secondEvents.onEvent, signal());
    await visit(r, second, NEXT_SERVICE);
    expect(secondEvents.log.all).toEqual([
      'connect',
      `subscribe ${C.state}`,
      `subscribe ${C.s2c}`,
      `read ${C.ident} @0`,
      `write ${C.state} 01`,
    ]);
    await second.close();
  });

  it('the first GATT event of the open session is the phone, even when its accept comes after it', async () => {
    const r = await setup({ acceptLate: true });
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    const phone = r.mac.central(PHONE);
    expect(await phone.read(stack(SERVICE), stack(C.ident))).toEqual({ result: CB_ATT.success, data: Buffer.from(IDENT) });
    await turns(5); // the late accept has arrived
    expect(r.events.log.all).toEqual(['connect', `read ${C.ident} @0`]);
    expect(r.mac.advertising).toBeUndefined(); // one phone per session: advertising stopped on it
    await session.close();
  });

  it('another central is refused (0x0E, the answer a Buffer) and does not displace the phone; it cannot be disconnected', async () => {
    const r = await setup();
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    await visit(r, session);
    const other = r.mac.central(OTHER);
    expect(await other.read(stack(SERVICE), stack(C.ident))).toEqual({ result: 0x0e, data: Buffer.alloc(0) });
    await other.write(stack(SERVICE), stack(C.c2s), Uint8Array.of(9));
    await turns(5);
    expect(r.events.log.all.filter((line) => line.includes('c2s') || line === 'connect')).toEqual(['connect']);
    expect(r.events.log.all).not.toContain(`write ${C.c2s} 09`);
    await session.close();
  });

  it('reads refused by the adapter answer with a Buffer (the binding cannot convert a missing one)', async () => {
    const r = await setup();
    const readable = clientProfile(SERVICE, { ident: { uuid: C.ident, operations: ['read'], permissions: [] } });
    const session = await r.port.advertise(readable, r.events.onEvent, signal());
    const phone = r.mac.central(PHONE);
    expect(await phone.read(stack(SERVICE), stack(C.ident))).toEqual({ result: 0x02, data: Buffer.alloc(0) });
    await session.close();
  });
});

describe('macOS peripheral: the phone leaving', () => {
  it('an unsubscribe from State or Server2Client means the phone left: its subscriptions, then the disconnect; advertising resumes; it may come back', async () => {
    const r = await setup();
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    const phone = await visit(r, session);
    phone.unsubscribe(stack(C.s2c));
    await until(() => r.events.log.all.length === 8);
    expect(r.events.log.all.slice(5)).toEqual([
      `unsubscribe ${C.s2c}`,
      `unsubscribe ${C.state}`,
      'disconnect the phone left: it unsubscribed from 00000007-A123-48CE-896B-4C76973373E6 (macOS reports no disconnect)',
    ]);
    await until(() => r.mac.advertising !== undefined, 2_000, 'advertising again');
    // Within this session the binding knows the phone already: no accept comes; its next request is the phone.
    const again = r.mac.central(PHONE);
    again.subscribe(stack(SERVICE), stack(C.s2c));
    await until(() => r.events.log.all.length === 10);
    expect(r.events.log.all.slice(8)).toEqual(['connect', `subscribe ${C.s2c}`]);
    await session.notify(C.s2c, Uint8Array.of(7));
    await until(() => again.notifications.length === 1);
    await session.close();
  });

  it('flush() resolves once the phone has left (its own disconnect is the only sign the end reached it)', async () => {
    const r = await setup();
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    const phone = await visit(r, session);
    await session.notify(C.state, Uint8Array.of(0x02));
    let flushed = false;
    const flushing = session.flush?.(signal()).then(() => (flushed = true));
    await turns(10);
    expect(flushed).toBe(false);
    phone.disconnect();
    await flushing;
    expect(phone.notifications.map((n) => n.data[0])).toEqual([0x42, 0x02]);
    await session.close();
  });
});

describe('macOS peripheral: Bluetooth switched off mid-session (issue 29, defect 3)', () => {
  const OFF = 'disconnect adapter_off: the Bluetooth adapter was switched off (poweredOff), the link to the phone is gone';

  it('ends the phone at once: its subscriptions, then a disconnect saying the adapter was switched off (the binding reports only stateChange)', async () => {
    const r = await setup();
    const stateListeners = r.bleno.listenerCount('stateChange');
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    await visit(r, session);
    r.mac.setAdapterState('poweredOff');
    await until(() => r.events.log.all.length === 8, 2_000, 'the phone reported gone');
    expect(r.events.log.all.slice(5)).toEqual([`unsubscribe ${C.state}`, `unsubscribe ${C.s2c}`, OFF]);
    await session.close();
    expect(r.events.log.all.filter((e) => e.startsWith('disconnect'))).toEqual([OFF]);
    expect(r.bleno.listenerCount('stateChange')).toBe(stateListeners);
  });

  it('a flush waiting for the phone to leave ends when the adapter is switched off', async () => {
    const r = await setup();
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    await visit(r, session);
    await session.notify(C.state, Uint8Array.of(0x02));
    // Bounded, so that a flush that never ends fails here rather than at the test's timeout.
    const flushing = session.flush?.(AbortSignal.timeout(5_000));
    r.mac.setAdapterState('poweredOff');
    await flushing;
    expect(r.events.log.all).toContain(OFF);
    await session.close();
  });

  it('switched off before any phone came: nothing to report (the setup bound decides); switched on again, the next session serves', async () => {
    const r = await setup();
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    r.mac.setAdapterState('poweredOff');
    await until(() => !r.port.availability().usable);
    await turns(5);
    expect(r.events.log.all).toEqual([]);
    await session.close();
    r.mac.setAdapterState('poweredOn');
    await until(() => r.port.availability().usable, 2_000, 'poweredOn again');
    const next = await r.port.advertise(profile(), new Events().onEvent, signal());
    await next.close();
  });
});

describe('macOS peripheral: teardown', () => {
  it('removes the service from the GATT database, with no disconnect step and no wait for a servicesSet that never comes', {
    timeout: 10_000,
  }, async () => {
    // Steps bounded at 60 s: a step waiting for an event the binding never emits would time the test out.
    const r = await setup({ teardownStepMs: 60_000 });
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    await visit(r, session);
    expect(r.mac.database).toEqual([stack(SERVICE)]);
    await session.close();
    expect(r.mac.database).toEqual([]);
    expect(r.mac.calls).not.toContain('disconnect');
    expect(r.mac.calls).not.toContain('setServices(0)');
    expect(blenoSessionListeners(r.bleno)).toBe(0);
    const next = await r.port.advertise(profile(NEXT_SERVICE), r.events.onEvent, signal());
    expect(r.mac.database).toEqual([stack(NEXT_SERVICE)]);
    expect(r.mac.advertising).toEqual({ name: 'mdl-kiosk', serviceUuids: [stack(NEXT_SERVICE)] });
    await next.close();
    expect(r.mac.database).toEqual([]);
  });

  it('a read pending at close is answered 0x0E with a Buffer', async () => {
    const r = await setup();
    r.events.answer = undefined;
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    const phone = r.mac.central(PHONE);
    const reading = phone.read(stack(SERVICE), stack(C.ident));
    await until(() => r.events.reads.length === 1);
    await session.close();
    expect(await reading).toEqual({ result: 0x0e, data: Buffer.alloc(0) });
  });

  it('close() of the adapter leaves bleno stopped; a new adapter on the same bleno starts it again', async () => {
    const r = await setup();
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    await visit(r, session);
    await r.port.close();
    expect(r.mac.database).toEqual([]);
    expect(r.bleno.listenerCount('stateChange')).toBe(0);
    const again = new BlenoPeripheral(r.bleno, { binding: 'mac' });
    await until(() => again.availability().usable);
    const next = await again.advertise(profile(NEXT_SERVICE), r.events.onEvent, signal());
    expect(r.mac.database).toEqual([stack(NEXT_SERVICE)]);
    await next.close();
    await again.close();
  });
});

describe('macOS peripheral: sizes and states', () => {
  it('notifications are bounded by the central’s maximumUpdateValueLength (ATT_MTU − 3)', async () => {
    const r = await setup();
    const session = await r.port.advertise(profile(), r.events.onEvent, signal());
    const phone = await visit(r, session);
    await expect(session.notify(C.s2c, new Uint8Array(183))).rejects.toMatchObject({
      name: 'BleValueTooLargeError',
      bytes: 183,
      limit: 182,
      attMtu: 185,
    });
    await session.notify(C.s2c, new Uint8Array(182));
    await until(() => phone.notifications.length === 2);
    expect(phone.notifications[1]?.data).toHaveLength(182);
    await session.close();
  });

  it('unsupported on the mac binding is unsupported_platform (the binding never reports a platform)', async () => {
    const r = await setup({ state: 'unsupported' }, false);
    await until(() => r.port.availability().reason === 'unsupported_platform');
    expect(r.bleno.platform).toBe('unknown');
    await expect(r.port.advertise(profile(), r.events.onEvent, signal())).rejects.toBeInstanceOf(BleSetupError);
  });

  it('maps states per binding, and picks the binding bleno’s index picks', () => {
    expect(blenoAvailability('unsupported', 'mac')).toMatchObject({ usable: false, reason: 'unsupported_platform' });
    expect(blenoAvailability('unsupported', 'hci')).toMatchObject({ usable: false, reason: 'no_adapter' });
    expect(blenoBindingKind('darwin', {})).toBe('mac');
    expect(blenoBindingKind('darwin', { BLUETOOTH_HCI_SOCKET_UART_PORT: '/dev/ttyUSB0' })).toBe('hci');
    expect(blenoBindingKind('linux', {})).toBe('hci');
    expect(blenoBindingKind('win32', {})).toBe('hci');
  });
});
