/**
 * The noble BleCentral adapter against the port contract, through the real noble JS layer
 * (`@stoprocent/noble/lib/noble.js`) on the radio bindings, with a scripted phone as GATT server on the
 * virtual radio (mdoc peripheral server mode).
 */
import type { EventEmitter } from 'node:events';
import type { Noble, Peripheral } from '@stoprocent/noble';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { NobleCentral, type NobleCentralOptions } from '../../../../src/devices/ble/noble-central.js';
import { availabilityOf, disconnectReasonText, normaliseMtu } from '../../../../src/devices/ble/noble-support.js';
import { nobleUuid, sameUuid } from '../../../../src/devices/ble/uuid.js';
import { RadioNobleBindings, createVirtualNoble } from '../../../../src/qa/devices/noble-radio-bindings.js';
import { BleSetupError, type Availability, type GattProfile } from '../../../../src/devices/ports.js';
import { VirtualRadio, type RadioDevice, type RadioLogEntry } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { Recorder, serverProfile } from '../../../support/ble-fixtures.js';
import { PhoneServer, SERVER_MODE, hex, stack, turns, until } from '../../../support/radio-phone.js';
import { Timeline, recordCentralStageEnds } from '../../../support/stage-timeline.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000AA01';

const profile = (serviceUuid = SERVICE): GattProfile => serverProfile(serviceUuid);

/** Bindings whose Write Commands are taken slowly (a congested controller), counting writes in flight. */
class SlowWriteBindings extends RadioNobleBindings {
  inFlight = 0;
  maxInFlight = 0;
  override write(id: string, serviceUuid: string, characteristicUuid: string, data: Uint8Array, withoutResponse: boolean): void {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    setTimeout(() => {
      this.inFlight--;
      super.write(id, serviceUuid, characteristicUuid, data, withoutResponse);
    }, 2);
  }
}

interface Setup {
  readonly radio: VirtualRadio;
  readonly phone: PhoneServer;
  readonly kiosk: RadioDevice;
  readonly noble: Noble;
  readonly bindings: RadioNobleBindings;
  readonly central: NobleCentral;
  readonly logs: RadioLogEntry[];
  /** Every peripheral noble discovered (listener added before the baseline). */
  readonly peripherals: Set<Peripheral>;
}

let current: Setup | undefined;
let warn: MockInstance<typeof console.warn> | undefined;
afterEach(() => {
  if (current) {
    current.central.dispose();
    current.noble.stop();
    current.radio.shutdown();
  }
  current = undefined;
  // noble prints its 'warning' events (unknown peripheral, …) with console.warn: there must be none.
  expect(warn?.mock.calls ?? []).toEqual([]);
  warn?.mockRestore();
  warn = undefined;
});

async function setup(
  options: {
    start?: boolean;
    phoneMtu?: number;
    central?: NobleCentralOptions;
    bindings?: (device: RadioDevice) => RadioNobleBindings;
  } = {},
): Promise<Setup> {
  warn = vi.spyOn(console, 'warn');
  const radio = new VirtualRadio();
  const logs: RadioLogEntry[] = [];
  radio.onLog((e) => logs.push(e));
  // The phone advertises the service in lower case; the profile spells it in upper case with dashes.
  const phone = new PhoneServer(radio, { serviceUuid: SERVICE.toLowerCase(), ...(options.phoneMtu ? { mtu: options.phoneMtu } : {}) });
  const kiosk = radio.addDevice({ name: 'kiosk' });
  const bindings = options.bindings ? options.bindings(kiosk) : new RadioNobleBindings(kiosk);
  const noble = createVirtualNoble(kiosk, bindings);
  const peripherals = new Set<Peripheral>();
  noble.on('discover', (p: Peripheral) => peripherals.add(p));
  const central = new NobleCentral(noble, { platform: 'hci', scanTimeoutMs: 2_000, retryDelayMs: 5, ...options.central });
  current = { radio, phone, kiosk, noble, bindings, central, logs, peripherals };
  await until(() => central.availability().usable, 1_000, 'noble poweredOn');
  if (options.start !== false) await phone.start();
  return current;
}

const signal = (): AbortSignal => new AbortController().signal;

/** Listener counts per event of an emitter (noble, a peripheral, a characteristic). */
function listeners(emitter: EventEmitter): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of emitter.eventNames()) {
    const count = emitter.listenerCount(name);
    if (count > 0) out[String(name)] = count;
  }
  return out;
}

const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/** Nothing left: no link on the kiosk's side, none on the phone's, no listener of ours on noble's objects. */
async function expectNothingLeft(s: Setup, nobleBaseline: Record<string, number>): Promise<void> {
  expect(s.kiosk.central.links).toEqual([]);
  await until(() => s.phone.device.peripheral.connections.length === 0, 1_000, 'the phone to see the disconnect');
  await turns(3);
  expect(listeners(s.noble)).toEqual(nobleBaseline);
  for (const p of s.peripherals) {
    expect(listeners(p)).toEqual({});
    for (const service of (p.services as Peripheral['services'] | null) ?? []) {
      // noble's Characteristic keeps one 'notify' listener of its own (its isNotifying flag).
      for (const c of (service.characteristics as Peripheral['services'][number]['characteristics'] | null) ?? []) {
        expect(listeners(c)).toEqual({ notify: 1 });
      }
    }
  }
}

describe('helpers', () => {
  it('UUIDs: noble spelling and comparison by value', () => {
    expect(nobleUuid(SERVICE)).toBe('c0ffee0012344321abcd00000000aa01');
    expect(nobleUuid('0000180D-0000-1000-8000-00805F9B34FB')).toBe('180d');
    expect(sameUuid('180D', '0000180d-0000-1000-8000-00805f9b34fb')).toBe(true);
    expect(() => nobleUuid('not-a-uuid')).toThrow(/not a UUID/);
  });

  it('MTU normalised to ATT_MTU per binding; unknown stays undefined', () => {
    expect(normaliseMtu(247, 'hci')).toBe(247);
    expect(normaliseMtu(247, 'win')).toBe(247);
    expect(normaliseMtu(182, 'mac')).toBe(185);
    expect(normaliseMtu(247, 'dbus')).toBeUndefined();
    expect(normaliseMtu(null, 'hci')).toBeUndefined();
    expect(normaliseMtu(0, 'hci')).toBeUndefined();
  });

  it('adapter states map to availability reasons', () => {
    expect(availabilityOf('poweredOn', 'hci')).toEqual({ usable: true });
    expect(availabilityOf('poweredOff', 'mac')).toMatchObject({ usable: false, reason: 'powered_off' });
    expect(availabilityOf('unauthorized', 'mac')).toMatchObject({ usable: false, reason: 'unauthorized' });
    expect(availabilityOf('unsupported', 'hci')).toMatchObject({ usable: false, reason: 'no_adapter' });
    expect(availabilityOf('unsupported', 'win')).toMatchObject({ usable: false, reason: 'no_radio' });
    expect(availabilityOf('unknown', 'hci')).toMatchObject({ usable: false, reason: 'starting' });
    expect(disconnectReasonText(0x13)).toBe('remote user terminated connection (0x13)');
    expect(disconnectReasonText('cleanup')).toMatch(/adapter stopped/);
  });
});

describe('connect', () => {
  it('scans for the normalised service UUID, connects asking for MTU 517, subscribes to every notify characteristic', async () => {
    const s = await setup();
    const scans = vi.spyOn(s.bindings, 'startScanning');
    const connects = vi.spyOn(s.bindings, 'connect');
    const link = await s.central.connect(profile(), new Recorder(), signal());
    expect(scans.mock.calls[0]?.[0]).toEqual([stack(SERVICE)]);
    expect(connects.mock.calls[0]?.[1]).toEqual({ mtu: 517 });
    expect(link.mtu).toBe(247);
    expect(s.phone.events.all).toEqual(['connect', `subscribe:${stack(SERVER_MODE.state)}`, `subscribe:${stack(SERVER_MODE.s2c)}`]);
    expect(s.phone.isSubscribed(SERVER_MODE.c2s)).toBe(false);
    await link.close();
  });

  it('exposes the negotiated MTU (the phone’s smaller preference)', async () => {
    const s = await setup({ phoneMtu: 185 });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    expect(link.mtu).toBe(185);
    await link.close();
  });

  it('finds the service and characteristics whatever the profile’s case and dashes', async () => {
    const s = await setup();
    const lower = profile(stack(SERVICE));
    const mixed: GattProfile = {
      serviceUuid: SERVICE.toLowerCase(),
      characteristics: {
        state: { ...lower.characteristics.state, uuid: stack(SERVER_MODE.state).toUpperCase() },
        c2s: { ...lower.characteristics.c2s, uuid: SERVER_MODE.c2s.toLowerCase() },
        s2c: lower.characteristics.s2c,
      },
    };
    await (await s.central.connect(lower, new Recorder(), signal())).close();
    await (await s.central.connect(mixed, new Recorder(), signal())).close();
  });

  it('waits for a phone that starts advertising later', async () => {
    const s = await setup({ start: false });
    let done = false;
    const connecting = s.central.connect(profile(), new Recorder(), signal()).then((l) => ((done = true), l));
    await turns(10);
    expect(done).toBe(false);
    await s.phone.start();
    await (await connecting).close();
  });

  it('no phone advertising the service: scan_timeout BleSetupError, nothing left behind', async () => {
    const s = await setup({ central: { scanTimeoutMs: 100 } });
    const baseline = listeners(s.noble);
    const timersBefore = timers();
    // Which timer ends the scan: the scan's own timers are traced (the signal never aborts, so nothing else can).
    const timeline: string[] = [];
    const realSetTimeout = globalThis.setTimeout;
    const traced = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
      callback: (...args: unknown[]) => void,
      ms?: number,
      ...args: unknown[]
    ) => {
      if (!(new Error().stack ?? '').includes('noble-scan')) return realSetTimeout(callback, ms, ...args);
      timeline.push(`scan timer armed: ${String(ms)} ms`);
      return realSetTimeout(() => {
        timeline.push('scan timer fired');
        callback(...args);
      }, ms);
    }) as typeof setTimeout);
    const error = await s.central
      .connect(profile('C0FFEE00-1234-4321-ABCD-00000000AA02'), new Recorder(), signal())
      .catch((e: unknown) => e)
      .finally(() => timeline.push('connect settled'));
    traced.mockRestore();
    // One scan, bounded by scanTimeoutMs: its timer firing is what ended the connect (no wall-clock bound).
    expect(timeline).toEqual(['scan timer armed: 100 ms', 'scan timer fired', 'connect settled']);
    expect(error).toBeInstanceOf(BleSetupError);
    expect((error as BleSetupError).reason).toBe('scan_timeout: no phone advertising C0FFEE00-1234-4321-ABCD-00000000AA02 within 100 ms');
    await expectNothingLeft(s, baseline);
    expect(timers()).toBeLessThanOrEqual(timersBefore);
    expect(s.logs.filter((e) => e.event === 'scan_start')).toHaveLength(s.logs.filter((e) => e.event === 'scan_stop').length);
  });

  it('a missing characteristic is a BleSetupError naming it, and nothing stays connected', async () => {
    const s = await setup({ start: false });
    const phone = new PhoneServer(s.radio, {
      serviceUuid: SERVICE,
      characteristics: [
        { uuid: SERVER_MODE.state, properties: ['notify', 'writeWithoutResponse'] },
        { uuid: SERVER_MODE.s2c, properties: ['notify'] },
      ],
    });
    await phone.start();
    const baseline = listeners(s.noble);
    const error = await s.central.connect(profile(), new Recorder(), signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BleSetupError);
    expect((error as BleSetupError).reason).toBe(`characteristic_missing: c2s (${SERVER_MODE.c2s}) is not on the phone`);
    await expectNothingLeft({ ...s, phone }, baseline);
  });

  it('a characteristic without the property its operations need is a BleSetupError', async () => {
    const s = await setup({ start: false });
    const phone = new PhoneServer(s.radio, {
      serviceUuid: SERVICE,
      characteristics: [
        { uuid: SERVER_MODE.state, properties: ['notify', 'writeWithoutResponse'] },
        { uuid: SERVER_MODE.c2s, properties: ['writeWithoutResponse'] },
        { uuid: SERVER_MODE.s2c, properties: ['read'] },
      ],
    });
    await phone.start();
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: `characteristic_unusable: s2c (${SERVER_MODE.s2c}) lacks notify on the phone`,
    });
  });

  it('the phone leaving during setup is a BleSetupError with its reason', async () => {
    const s = await setup();
    const baseline = listeners(s.noble);
    s.radio.onLog((e) => {
      if (e.event === 'subscribe') void s.phone.disconnect('user cancelled');
    });
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: expect.stringMatching(
        /^disconnected: the phone disconnected during subscribe to (state|s2c) \(remote user terminated connection \(0x13\)\)$/,
      ) as unknown,
    });
    await expectNothingLeft(s, baseline);
  });

  it('connection refusals are retried; past the attempts it is a connect_failed BleSetupError', async () => {
    const s = await setup();
    s.phone.device.setFaults({ refuseConnections: 2 });
    await (await s.central.connect(profile(), new Recorder(), signal())).close();
    s.phone.device.setFaults({ refuseConnections: 3 });
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: expect.stringMatching(/^connect_failed: c0:de:00:00:00:01 after 3 attempts: .*refused/) as unknown,
    });
  });

  it('a connection that does not come up in time: connect_timeout, the attempt cancelled', async () => {
    const s = await setup({ central: { connectTimeoutMs: 30, connectAttempts: 2 } });
    s.phone.device.setFaults({ latencyMs: 200 });
    const baseline = listeners(s.noble);
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: 'connect_timeout: c0:de:00:00:00:01 did not connect within 30 ms (2 attempts)',
    });
    await turns(5);
    expect(s.phone.events.all).toEqual([]);
    await expectNothingLeft(s, baseline);
  });
});

describe('abort at every stage: rejects promptly, nothing left behind', () => {
  it('already aborted: rejects without scanning', async () => {
    const s = await setup();
    await expect(s.central.connect(profile(), new Recorder(), AbortSignal.abort())).rejects.toThrow(/aborted/);
    expect(s.logs.map((e) => e.event)).not.toContain('scan_start');
  });

  it('while scanning', async () => {
    const s = await setup({ start: false });
    const baseline = listeners(s.noble);
    const timersBefore = timers();
    const controller = new AbortController();
    const timeline = new Timeline();
    const connecting = timeline.settle(s.central.connect(profile(), new Recorder(), controller.signal), 'connect');
    await turns(5);
    controller.abort();
    // Promptly = within a few turns of the event loop, long before the scan's own bound (2 s here) or a
    // phone could end it; no wall-clock threshold.
    await turns(3);
    expect(timeline.entries).toEqual(['connect:rejected']);
    await expect(connecting).rejects.toThrow(/aborted/);
    expect(s.logs.map((e) => e.event)).toContain('scan_stop');
    await s.phone.start();
    await turns(5);
    expect(s.phone.events.all).toEqual([]);
    await expectNothingLeft(s, baseline);
    expect(timers()).toBeLessThanOrEqual(timersBefore);
  });

  // Each stage is held open by 100 ms of latency; the abort comes once the stage has begun. "Promptly" is
  // an order, not a time: the rejection comes before the answer that would have ended the stage.
  it.each([
    { stage: 'connecting', trigger: 'scan_stop', delayMs: 20, stageEnd: 'connected' },
    { stage: 'discovering', trigger: 'discover_services', delayMs: 0, stageEnd: 'discovered' },
    { stage: 'subscribing', trigger: 'subscribe', delayMs: 0, stageEnd: 'subscribed' },
  ])('while $stage: rejects before the stage would have ended', async ({ trigger, delayMs, stageEnd }) => {
    const s = await setup();
    const baseline = listeners(s.noble);
    s.phone.device.setFaults({ latencyMs: 100 });
    const timeline = new Timeline();
    recordCentralStageEnds(s.kiosk, timeline);
    const controller = new AbortController();
    let armed = false;
    s.radio.onLog((e) => {
      if (e.event === trigger && !armed) {
        armed = true;
        setTimeout(() => {
          timeline.push('aborted');
          controller.abort();
        }, delayMs);
      }
    });
    const error = await timeline
      .settle(s.central.connect(profile(), new Recorder(), controller.signal), 'connect')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/aborted/);
    // The phone hears the disconnect after the latency (so the stage's answer had its chance meanwhile).
    await until(() => s.phone.device.peripheral.connections.length === 0, 1_000, 'the phone to see the disconnect');
    await until(() => listeners(s.noble)['disconnect:c0de00000001'] === undefined, 1_000, 'noble to settle');
    await expectNothingLeft(s, baseline);
    expect(timeline.at('aborted')).toBeLessThan(timeline.at('connect:rejected'));
    expect(timeline.at('connect:rejected')).toBeLessThan(timeline.at(stageEnd));
  });

  it('an abort after connect resolved does nothing (the core aborts that signal when the attempt ends)', async () => {
    const s = await setup();
    const controller = new AbortController();
    const link = await s.central.connect(profile(), new Recorder(), controller.signal);
    controller.abort();
    await turns(5);
    expect(s.phone.device.peripheral.connections).toHaveLength(1);
    await link.write(SERVER_MODE.state, Uint8Array.of(1));
    await link.close();
  });
});

describe('the link', () => {
  it('write() is a write without response, in order (1,000 writes, each issued after the previous one resolved)', async () => {
    const s = await setup();
    const link = await s.central.connect(profile(), new Recorder(), signal());
    for (let i = 0; i < 1000; i++)
      await link.write(i % 2 ? SERVER_MODE.c2s : SERVER_MODE.state.toLowerCase(), Uint8Array.of(i >> 8, i & 0xff));
    await until(() => s.phone.writes.all.length === 1000);
    expect(s.phone.writes.all.every((w) => w.withoutResponse)).toBe(true);
    expect(s.phone.writes.all.map((w) => `${w.characteristicUuid === stack(SERVER_MODE.c2s) ? 'c' : 's'}${hex(w.data)}`)).toEqual(
      Array.from({ length: 1000 }, (_, i) => `${i % 2 ? 'c' : 's'}${hex(Uint8Array.of(i >> 8, i & 0xff))}`),
    );
    await link.close();
  });

  it('writes issued at once go one at a time (backpressure on a slow stack), in order, each resolving after the stack took it', async () => {
    let bindings: SlowWriteBindings | undefined;
    const s = await setup({ bindings: (device) => (bindings = new SlowWriteBindings(device)) });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    const resolved: number[] = [];
    const buffer = new Uint8Array(2);
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        buffer.set([0xc0, i]); // reused by the caller: each write must carry its own bytes
        return link.write(SERVER_MODE.c2s, buffer).then(() => resolved.push(i));
      }),
    );
    expect(bindings?.maxInFlight).toBe(1);
    expect(resolved).toEqual(Array.from({ length: 50 }, (_, i) => i));
    await until(() => s.phone.writes.all.length === 50);
    expect(s.phone.writes.all.map((w) => w.data[1])).toEqual(Array.from({ length: 50 }, (_, i) => i));
    await link.close();
  });

  it('an aborted write rejects at once; a queued one is never sent, the next ones still go in order', async () => {
    const s = await setup({ bindings: (device) => new SlowWriteBindings(device) });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    const controller = new AbortController();
    const first = link.write(SERVER_MODE.c2s, Uint8Array.of(1));
    const second = link.write(SERVER_MODE.c2s, Uint8Array.of(2), controller.signal);
    const third = link.write(SERVER_MODE.c2s, Uint8Array.of(3));
    controller.abort();
    await expect(second).rejects.toThrow(/aborted/);
    await first;
    await third;
    await until(() => s.phone.writes.all.length === 2);
    await turns(5);
    expect(s.phone.writes.all.map((w) => w.data[0])).toEqual([1, 3]);
    await link.close();
  });

  it('write() refuses characteristics outside the profile or without write_without_response, and values above ATT_MTU − 3', async () => {
    const s = await setup();
    const link = await s.central.connect(profile(), new Recorder(), signal());
    await expect(link.write(SERVER_MODE.s2c, Uint8Array.of(1))).rejects.toThrow(/write_without_response/);
    await expect(link.write('00000009-A123-48CE-896B-4C76973373E6', Uint8Array.of(1))).rejects.toThrow(/not a characteristic/);
    // Above ATT_MTU − 3 the adapter refuses before the stack sees it (a Write Command cannot be split).
    await expect(link.write(SERVER_MODE.c2s, new Uint8Array(245))).rejects.toMatchObject({
      ...{ name: 'BleValueTooLargeError', bytes: 245, limit: 244, attMtu: 247 },
      message: 'ble_write of 245 bytes exceeds the write-without-response limit of 244 bytes (ATT_MTU 247 − 3)',
    });
    await link.write(SERVER_MODE.c2s, new Uint8Array(244));
    expect((await s.phone.writes.next()).data).toHaveLength(244);
    expect(s.phone.writes.all).toHaveLength(1); // nothing of the refused one
    await link.close();
  });

  it('any value size at any ATT_MTU: up to ATT_MTU − 3 (at most 512) reaches the phone whole, above it is refused with the size and limit and nothing is sent (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 23, max: 517 }), fc.integer({ min: 0, max: 1_000 }), async (mtu, size) => {
        const s = await setup({ phoneMtu: mtu });
        try {
          const link = await s.central.connect(profile(), new Recorder(), signal());
          const limit = Math.min(mtu - 3, 512);
          const value = Uint8Array.from({ length: size }, (_, i) => (i * 17 + size) & 0xff);
          const written = await link.write(SERVER_MODE.c2s, value).then(
            () => undefined,
            (e: unknown) => e,
          );
          if (size <= limit) {
            expect(written).toBeUndefined();
            expect(Array.from((await s.phone.writes.next()).data)).toEqual(Array.from(value));
          } else {
            expect(written).toMatchObject({ name: 'BleValueTooLargeError', bytes: size, limit, attMtu: mtu });
            await turns(5);
            expect(s.phone.writes.all).toEqual([]);
          }
          await link.close();
        } finally {
          s.central.dispose();
          s.noble.stop();
          s.radio.shutdown();
          current = undefined;
          expect(warn?.mock.calls ?? []).toEqual([]);
          warn?.mockRestore();
          warn = undefined;
        }
      }),
      { numRuns: 25 },
    );
  });

  it('write(): a refusal by the stack itself rejects the write (a link enforcing a smaller MTU than it reports)', async () => {
    const s = await setup();
    s.phone.device.setFaults({ mtu: 100, reportedMtu: 247 });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    await expect(link.write(SERVER_MODE.c2s, new Uint8Array(200))).rejects.toThrow(/ATT_MTU 100 allows 97/);
    await link.close();
  });

  it('one onNotification per notification, in order, with the backend’s UUID spelling (1,000 notifications)', async () => {
    const s = await setup();
    const handlers = new Recorder();
    const link = await s.central.connect(profile(), handlers, signal());
    await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        s.phone.notify(i === 999 ? SERVER_MODE.state : SERVER_MODE.s2c, Uint8Array.of(i >> 8, i & 0xff)),
      ),
    );
    await until(() => handlers.notifications.length === 1000);
    await turns(3);
    expect(handlers.notifications).toHaveLength(1000);
    expect(handlers.notifications.map((n) => (n.data[0] ?? 0) * 256 + (n.data[1] ?? 0))).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(handlers.notifications[0]?.uuid).toBe(SERVER_MODE.s2c);
    expect(handlers.notifications[999]?.uuid).toBe(SERVER_MODE.state);
    await link.close();
  });

  it('onDisconnect once when the phone leaves; close() is idempotent and leaves no listener', async () => {
    const s = await setup();
    const baseline = listeners(s.noble);
    const handlers = new Recorder();
    const link = await s.central.connect(profile(), handlers, signal());
    await s.phone.disconnect('phone locked');
    await until(() => handlers.disconnects.length === 1);
    await turns(5);
    expect(handlers.disconnects).toEqual(['remote user terminated connection (0x13)']);
    await expect(link.write(SERVER_MODE.c2s, Uint8Array.of(1))).rejects.toThrow(/link lost/);
    await Promise.all([link.close(), link.close()]);
    await link.close();
    expect(handlers.disconnects).toHaveLength(1);
    await expect(link.write(SERVER_MODE.c2s, Uint8Array.of(1))).rejects.toThrow(/closed/);
    await expectNothingLeft(s, baseline);
  });

  it('close() unsubscribes, disconnects the phone, silences the handlers and leaves no listener or timer', async () => {
    const s = await setup();
    const baseline = listeners(s.noble);
    const timersBefore = timers();
    const handlers = new Recorder();
    const link = await s.central.connect(profile(), handlers, signal());
    await Promise.all([link.close(), link.close()]);
    expect(s.kiosk.central.links).toEqual([]);
    const info = await s.phone.disconnects.next();
    expect(info).toMatchObject({ reason: 'closed by the kiosk', by: 'central' });
    expect(s.phone.events.all.filter((e) => e.startsWith('unsubscribe:'))).toEqual([
      `unsubscribe:${stack(SERVER_MODE.state)}`,
      `unsubscribe:${stack(SERVER_MODE.s2c)}`,
    ]);
    await turns(5);
    expect(handlers.disconnects).toEqual([]);
    await expect(link.write(SERVER_MODE.c2s, Uint8Array.of(1))).rejects.toThrow(/closed/);
    await expectNothingLeft(s, baseline);
    expect(timers()).toBeLessThanOrEqual(timersBefore);
  });

  it('a radio drop reaches onDisconnect with the HCI reason', async () => {
    const s = await setup();
    const handlers = new Recorder();
    s.phone.device.setFaults({ dropAfterPackets: { toCentral: 2, reason: 'supervision timeout' } });
    await s.central.connect(profile(), handlers, signal());
    await s.phone.notify(SERVER_MODE.s2c, Uint8Array.of(1));
    await s.phone.notify(SERVER_MODE.s2c, Uint8Array.of(2));
    await until(() => handlers.disconnects.length === 1);
    expect(handlers.notifications).toHaveLength(2);
    expect(handlers.disconnects).toEqual(['connection timeout (0x08)']);
  });
});

describe('availability', () => {
  it('follows the adapter: powered_off while the radio device is off, usable again when on', async () => {
    const s = await setup();
    const seen: Availability[] = [];
    s.central.onAvailabilityChange((a) => seen.push(a));
    expect(s.central.availability()).toEqual({ usable: true });
    s.kiosk.setPowered(false);
    await until(() => !s.central.availability().usable);
    expect(s.central.availability()).toMatchObject({ usable: false, reason: 'powered_off' });
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({ reason: 'powered_off' });
    s.kiosk.setPowered(true);
    await until(() => s.central.availability().usable);
    expect(seen.map((a) => a.reason ?? 'usable')).toEqual(['powered_off', 'usable']);
    await (await s.central.connect(profile(), new Recorder(), signal())).close();
  });

  it('a power-off while connected reaches onDisconnect; while scanning it is a powered_off BleSetupError', async () => {
    const s = await setup();
    const handlers = new Recorder();
    await s.central.connect(profile(), handlers, signal());
    s.kiosk.setPowered(false);
    await until(() => handlers.disconnects.length === 1);
    expect(handlers.disconnects[0]).toMatch(/power off \(0x15\)|adapter stopped/);
    s.kiosk.setPowered(true);
    await until(() => s.central.availability().usable);
    await s.phone.device.peripheral.stopAdvertising();
    const connecting = s.central.connect(profile(), new Recorder(), signal());
    await turns(5);
    s.kiosk.setPowered(false);
    await expect(connecting).rejects.toMatchObject({ reason: 'powered_off' });
  });

  it('starts as `starting` until noble reports its state, and dispose() removes its listener', () => {
    const radio = new VirtualRadio();
    const noble = createVirtualNoble(radio.addDevice());
    const central = new NobleCentral(noble, { platform: 'hci' });
    expect(central.availability()).toMatchObject({ usable: false, reason: 'starting' });
    expect(noble.listenerCount('stateChange')).toBe(1);
    central.dispose();
    expect(noble.listenerCount('stateChange')).toBe(0);
    noble.stop();
    radio.shutdown();
  });
});

describe("noble's peripheral cache (a new phone address with nearly every customer)", () => {
  /** noble's own per-peripheral state, keyed by peripheral id (stoprocent noble.js `_createPeripheral`). */
  const cached = (noble: Noble): { peripherals: number; services: number; characteristics: number } => {
    const inner = noble as unknown as { _peripherals: Map<string, unknown>; _services: object; _characteristics: object };
    return {
      peripherals: inner._peripherals.size,
      services: Object.keys(inner._services).length,
      characteristics: Object.keys(inner._characteristics).length,
    };
  };
  const EMPTY = { peripherals: 0, services: 0, characteristics: 0 };

  it('each phone is forgotten once its link is closed, however it ended: 20 customers leave nothing behind', async () => {
    // Found by the soak: noble kept every phone it had met (Peripheral, services, characteristics) while
    // the adapter stayed on, so the kiosk's heap grew with the number of customers.
    const s = await setup();
    const first = await s.central.connect(profile(), new Recorder(), signal());
    expect(cached(s.noble).peripherals).toBe(1);
    await first.close();
    expect(cached(s.noble)).toEqual(EMPTY);
    s.phone.device.setPowered(false);
    for (let i = 0; i < 20; i++) {
      const phone = new PhoneServer(s.radio, { serviceUuid: SERVICE.toLowerCase(), name: `customer-${i}` });
      await phone.start();
      const handlers = new Recorder();
      const link = await s.central.connect(profile(), handlers, signal());
      if (i % 2 === 0) {
        await phone.disconnect('the customer walked away'); // the phone leaves first, the kiosk closes after
        await until(() => handlers.disconnects.length === 1);
      }
      await link.close();
      phone.device.setPowered(false);
    }
    expect(cached(s.noble)).toEqual(EMPTY);
  });

  it('a phone whose setup failed, or that refused every connection, is forgotten too', async () => {
    const s = await setup({ start: false });
    const lacking = new PhoneServer(s.radio, {
      serviceUuid: SERVICE,
      characteristics: [{ uuid: SERVER_MODE.state, properties: ['notify', 'writeWithoutResponse'] }],
    });
    await lacking.start();
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toBeInstanceOf(BleSetupError);
    expect(cached(s.noble)).toEqual(EMPTY);
    lacking.device.setPowered(false);
    const refusing = new PhoneServer(s.radio, { serviceUuid: SERVICE, name: 'refusing' });
    await refusing.start();
    refusing.device.setFaults({ refuseConnections: 3 });
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: expect.stringMatching(/^connect_failed: /) as unknown,
    });
    expect(cached(s.noble)).toEqual(EMPTY);
  });
});
