/**
 * The virtual BleCentral port against the port contract (src/devices/ports.ts), driven by a scripted phone
 * acting as GATT server on the virtual radio (mdoc peripheral server mode).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualBleCentral } from '../../../../src/qa/devices/virtual-ble-central.js';
import { BleSetupError, type Availability, type GattProfile } from '../../../../src/devices/ports.js';
import { VirtualRadio, type RadioLogEntry } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { Recorder, serverProfile } from '../../../support/ble-fixtures.js';
import { PhoneServer, SERVER_MODE, hex, stack, turns, until } from '../../../support/radio-phone.js';
import { Timeline, recordCentralStageEnds } from '../../../support/stage-timeline.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000AA01';

const profile = (serviceUuid = SERVICE): GattProfile => serverProfile(serviceUuid);

let radio: VirtualRadio | undefined;
afterEach(() => {
  radio?.shutdown();
  radio = undefined;
});

/** A radio with a phone serving SERVICE (lower case here; the profile spells it in upper case) and the port. */
async function setup(
  options: { start?: boolean; connectAttempts?: number } = {},
): Promise<{ radio: VirtualRadio; phone: PhoneServer; port: VirtualBleCentral; logs: RadioLogEntry[] }> {
  const r = (radio = new VirtualRadio());
  const logs: RadioLogEntry[] = [];
  r.onLog((e) => logs.push(e));
  const phone = new PhoneServer(r, { serviceUuid: SERVICE.toLowerCase() });
  const kiosk = r.addDevice({ name: 'kiosk' });
  const port = new VirtualBleCentral(kiosk, options.connectAttempts ? { connectAttempts: options.connectAttempts } : {});
  if (options.start !== false) await phone.start();
  return { radio: r, phone, port, logs };
}

const signal = (): AbortSignal => new AbortController().signal;

/** Nothing is left: no link on the kiosk's side and (once the disconnect arrived) none on the phone's. */
async function expectNothingConnected(phone: PhoneServer, port: VirtualBleCentral): Promise<void> {
  expect(port.device.central.links).toEqual([]);
  await until(() => phone.device.peripheral.connections.length === 0, 1_000, 'the phone to see the disconnect');
}

describe('connect', () => {
  it('scans (case-insensitive), connects, discovers, subscribes to every notify characteristic, then resolves', async () => {
    const { phone, port } = await setup();
    const link = await port.connect(profile(), new Recorder(), signal());
    expect(link.mtu).toBe(247);
    expect(phone.events.all).toEqual(['connect', `subscribe:${stack(SERVER_MODE.state)}`, `subscribe:${stack(SERVER_MODE.s2c)}`]);
    expect(phone.isSubscribed(SERVER_MODE.c2s)).toBe(false);
    await link.close();
  });

  it('waits for a phone that starts advertising later', async () => {
    const { phone, port } = await setup({ start: false });
    let done = false;
    const connecting = port.connect(profile(), new Recorder(), signal()).then((l) => ((done = true), l));
    await turns(10);
    expect(done).toBe(false);
    await phone.start();
    await (await connecting).close();
  });

  it('exposes the negotiated MTU (the smaller preference)', async () => {
    const r = (radio = new VirtualRadio());
    const phone = new PhoneServer(r, { serviceUuid: SERVICE, mtu: 185 });
    await phone.start();
    const link = await new VirtualBleCentral(r.addDevice(), { mtu: 517 }).connect(profile(), new Recorder(), signal());
    expect(link.mtu).toBe(185);
  });

  it('a missing characteristic is a BleSetupError naming it, and nothing stays connected', async () => {
    const r = (radio = new VirtualRadio());
    const phone = new PhoneServer(r, {
      serviceUuid: SERVICE,
      characteristics: [
        { uuid: SERVER_MODE.state, properties: ['notify', 'writeWithoutResponse'] },
        { uuid: SERVER_MODE.s2c, properties: ['notify'] },
      ],
    });
    await phone.start();
    const port = new VirtualBleCentral(r.addDevice());
    const error = await port.connect(profile(), new Recorder(), signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BleSetupError);
    expect((error as BleSetupError).reason).toBe(`characteristic c2s (${SERVER_MODE.c2s}) not found on the phone`);
    await expectNothingConnected(phone, port);
  });

  it('a characteristic without the property its operations need is a BleSetupError', async () => {
    const r = (radio = new VirtualRadio());
    const phone = new PhoneServer(r, {
      serviceUuid: SERVICE,
      characteristics: [
        { uuid: SERVER_MODE.state, properties: ['notify', 'writeWithoutResponse'] },
        { uuid: SERVER_MODE.c2s, properties: ['writeWithoutResponse'] },
        { uuid: SERVER_MODE.s2c, properties: ['read'] },
      ],
    });
    await phone.start();
    const port = new VirtualBleCentral(r.addDevice());
    await expect(port.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: `characteristic s2c (${SERVER_MODE.s2c}) lacks notify on the phone`,
    });
    await expectNothingConnected(phone, port);
  });

  it('the phone leaving during setup is a BleSetupError with its reason', async () => {
    const { phone, port, radio: r } = await setup();
    r.onLog((e) => {
      if (e.event === 'subscribe') void phone.disconnect('user cancelled');
    });
    await expect(port.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: 'the phone disconnected during subscribe to state: user cancelled',
    });
    await expectNothingConnected(phone, port);
  });

  it('connection refusals are retried; past the attempts it is a BleSetupError', async () => {
    const { phone, port } = await setup();
    phone.device.setFaults({ refuseConnections: 2 });
    await (await port.connect(profile(), new Recorder(), signal())).close();
    phone.device.setFaults({ refuseConnections: 3 });
    await expect(port.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: expect.stringMatching(/^connect failed after 3 attempts: .*refused/) as unknown,
    });
  });
});

describe('abort at every stage: rejects promptly, nothing left connected', () => {
  it('already aborted: rejects without scanning', async () => {
    const { phone, port, logs } = await setup();
    await expect(port.connect(profile(), new Recorder(), AbortSignal.abort())).rejects.toThrow(/aborted/);
    expect(logs.map((e) => e.event)).not.toContain('scan_start');
    expect(phone.events.all).toEqual([]);
  });

  it('while scanning', async () => {
    const { phone, port, logs } = await setup({ start: false });
    const controller = new AbortController();
    const connecting = port.connect(profile(), new Recorder(), controller.signal);
    await turns(5);
    controller.abort();
    await expect(connecting).rejects.toThrow(/aborted/);
    expect(logs.map((e) => e.event)).toContain('scan_stop');
    await phone.start();
    await turns(5);
    expect(phone.events.all).toEqual([]);
  });

  // Each stage is held open by 100 ms of latency; the abort comes once the stage has begun (the connection
  // request leaves right after the scan stops, so that stage is aborted 20 ms later, mid-flight). "Promptly"
  // is an order, not a time: the rejection comes before the answer that would have ended the stage.
  it.each([
    { stage: 'connecting', trigger: 'scan_stop', delayMs: 20, stageEnd: 'connected' },
    { stage: 'discovering', trigger: 'discover_services', delayMs: 0, stageEnd: 'discovered' },
    { stage: 'subscribing', trigger: 'subscribe', delayMs: 0, stageEnd: 'subscribed' },
  ])('while $stage: rejects before the stage would have ended', async ({ trigger, delayMs, stageEnd }) => {
    const { phone, port, radio: r } = await setup();
    phone.device.setFaults({ latencyMs: 100 });
    const timeline = new Timeline();
    recordCentralStageEnds(port.device, timeline);
    const controller = new AbortController();
    let armed = false;
    r.onLog((e) => {
      if (e.event === trigger && !armed) {
        armed = true;
        setTimeout(() => {
          timeline.push('aborted');
          controller.abort();
        }, delayMs);
      }
    });
    const error = await timeline.settle(port.connect(profile(), new Recorder(), controller.signal), 'connect').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/aborted/);
    await expectNothingConnected(phone, port); // by then the stage's answer (100 ms away) had its chance
    expect(timeline.at('aborted')).toBeLessThan(timeline.at('connect:rejected'));
    expect(timeline.at('connect:rejected')).toBeLessThan(timeline.at(stageEnd));
  });

  it('an abort after connect resolved does nothing (the core aborts that signal when the attempt ends)', async () => {
    const { phone, port } = await setup();
    const controller = new AbortController();
    const handlers = new Recorder();
    const link = await port.connect(profile(), handlers, controller.signal);
    controller.abort();
    await turns(5);
    expect(phone.device.peripheral.connections).toHaveLength(1);
    await link.write(SERVER_MODE.state, Uint8Array.of(1));
    await link.close();
  });
});

describe('the link', () => {
  it('write() is a write without response, in order (1,000 writes, each issued after the previous one resolved)', async () => {
    const { phone, port } = await setup();
    const link = await port.connect(profile(), new Recorder(), signal());
    for (let i = 0; i < 1000; i++)
      await link.write(i % 2 ? SERVER_MODE.c2s : SERVER_MODE.state.toLowerCase(), Uint8Array.of(i >> 8, i & 0xff));
    await until(() => phone.writes.all.length === 1000);
    expect(phone.writes.all.every((w) => w.withoutResponse)).toBe(true);
    expect(phone.writes.all.map((w) => `${w.characteristicUuid === stack(SERVER_MODE.c2s) ? 'c' : 's'}${hex(w.data)}`)).toEqual(
      Array.from({ length: 1000 }, (_, i) => `${i % 2 ? 'c' : 's'}${hex(Uint8Array.of(i >> 8, i & 0xff))}`),
    );
  });

  it('write() refuses payloads above MTU − 3 and characteristics outside the profile or without write_without_response', async () => {
    const { port } = await setup();
    const link = await port.connect(profile(), new Recorder(), signal());
    await expect(link.write(SERVER_MODE.c2s, new Uint8Array(245))).rejects.toMatchObject({
      name: 'BleValueTooLargeError',
      bytes: 245,
      limit: 244,
      attMtu: 247,
    });
    await expect(link.write(SERVER_MODE.s2c, Uint8Array.of(1))).rejects.toThrow(/write_without_response/);
    await expect(link.write('00000009-A123-48CE-896B-4C76973373E6', Uint8Array.of(1))).rejects.toThrow(/not a characteristic/);
  });

  it('one onNotification per notification, in order, with the stack’s UUID spelling (1,000 notifications)', async () => {
    const { phone, port } = await setup();
    const handlers = new Recorder();
    await port.connect(profile(), handlers, signal());
    await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        phone.notify(i === 999 ? SERVER_MODE.state : SERVER_MODE.s2c, Uint8Array.of(i >> 8, i & 0xff)),
      ),
    );
    await until(() => handlers.notifications.length === 1000);
    expect(handlers.notifications.map((n) => (n.data[0] ?? 0) * 256 + (n.data[1] ?? 0))).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(handlers.notifications[0]?.uuid).toBe(stack(SERVER_MODE.s2c));
    expect(handlers.notifications[999]?.uuid).toBe(stack(SERVER_MODE.state));
  });

  it('onDisconnect once when the phone leaves; nothing after close(); close() is idempotent', async () => {
    const { phone, port } = await setup();
    const handlers = new Recorder();
    const link = await port.connect(profile(), handlers, signal());
    await phone.disconnect('phone locked');
    await until(() => handlers.disconnects.length === 1);
    await turns(5);
    expect(handlers.disconnects).toEqual(['phone locked']);
    await Promise.all([link.close(), link.close()]);
    await link.close();
    expect(handlers.disconnects).toHaveLength(1);
    await expect(link.write(SERVER_MODE.c2s, Uint8Array.of(1))).rejects.toThrow();
  });

  it('close() disconnects the phone and silences the handlers', async () => {
    const { phone, port } = await setup();
    const handlers = new Recorder();
    const link = await port.connect(profile(), handlers, signal());
    await link.close();
    expect(port.device.central.links).toEqual([]);
    const info = await phone.disconnects.next();
    expect(info).toMatchObject({ reason: 'closed by the kiosk', by: 'central' });
    await turns(5);
    expect(handlers.disconnects).toEqual([]);
    await expect(link.write(SERVER_MODE.c2s, Uint8Array.of(1))).rejects.toThrow(/closed/);
  });

  it('a radio drop reaches onDisconnect with the radio’s reason', async () => {
    const { phone, port } = await setup();
    const handlers = new Recorder();
    phone.device.setFaults({ dropAfterPackets: { toCentral: 2, reason: 'supervision timeout' } });
    await port.connect(profile(), handlers, signal());
    await phone.notify(SERVER_MODE.s2c, Uint8Array.of(1));
    await phone.notify(SERVER_MODE.s2c, Uint8Array.of(2));
    await until(() => handlers.disconnects.length === 1);
    expect(handlers.notifications).toHaveLength(2);
    expect(handlers.disconnects).toEqual(['supervision timeout']);
  });
});

describe('availability', () => {
  it('configurable, reported to listeners, and powered_off when the radio device is off', async () => {
    const { port, phone } = await setup();
    const seen: Availability[] = [];
    port.onAvailabilityChange((a) => seen.push(a));
    expect(port.availability()).toEqual({ usable: true });
    port.setAvailability({ usable: false, reason: 'unauthorized' });
    await expect(port.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({ reason: 'unauthorized' });
    port.setAvailability({ usable: true });
    port.device.setPowered(false);
    await turns(2);
    expect(port.availability()).toMatchObject({ usable: false, reason: 'powered_off' });
    await expect(port.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({ reason: 'powered_off' });
    port.device.setPowered(true);
    await turns(2);
    expect(seen.map((a) => a.reason ?? 'usable')).toEqual(['unauthorized', 'usable', 'powered_off', 'usable']);
    await (await port.connect(profile(), new Recorder(), signal())).close();
    expect(phone.events.all[0]).toBe('connect');
  });
});
