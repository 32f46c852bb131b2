/**
 * The noble BleCentral adapter on macOS: noble's JS layer on bindings that report Write Commands and the MTU
 * as noble's mac binding does, over a CoreBluetooth queue that drops what it has no room for
 * (test/support/fake-noble-mac.ts). The phone is the scripted GATT server of the virtual radio.
 */
import { afterEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { Noble } from '@stoprocent/noble';
import { NobleCentral, type NobleCentralOptions } from '../../../../src/devices/ble/noble-central.js';
import { createVirtualNoble } from '../../../../src/qa/devices/noble-radio-bindings.js';
import type { GattProfile } from '../../../../src/devices/ports.js';
import { VirtualRadio } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { MacNobleBindings, type CoreBluetoothQueue } from '../../../support/fake-noble-mac.js';
import { Recorder, serverProfile } from '../../../support/ble-fixtures.js';
import { PhoneServer, SERVER_MODE, chunk, until } from '../../../support/radio-phone.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000EE01';
const profile = (): GattProfile => serverProfile(SERVICE);
const signal = (): AbortSignal => new AbortController().signal;

/** A queue that holds 4 Write Commands and sends one per 15 ms connection event (numbers Apple does not publish). */
const COREBLUETOOTH: CoreBluetoothQueue = { room: 4, eventMs: 15 };

interface Setup {
  readonly radio: VirtualRadio;
  readonly phone: PhoneServer;
  readonly noble: Noble;
  readonly bindings: MacNobleBindings;
  readonly central: NobleCentral;
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
  expect(warn?.mock.calls ?? []).toEqual([]);
  warn?.mockRestore();
});

async function setup(central: NobleCentralOptions = {}): Promise<Setup> {
  warn = vi.spyOn(console, 'warn');
  const radio = new VirtualRadio();
  const phone = new PhoneServer(radio, { serviceUuid: SERVICE.toLowerCase(), mtu: 185 });
  const kiosk = radio.addDevice({ name: 'kiosk' });
  const bindings = new MacNobleBindings(kiosk, COREBLUETOOTH);
  const noble = createVirtualNoble(kiosk, bindings);
  const adapter = new NobleCentral(noble, { platform: 'mac', scanTimeoutMs: 2_000, retryDelayMs: 5, ...central });
  current = { radio, phone, noble, bindings, central: adapter };
  await until(() => adapter.availability().usable, 1_000, 'noble poweredOn');
  await phone.start();
  return current;
}

/** A SessionEstablishment-sized message in the 18013-5 GATT chunks of a 185 ATT_MTU link (182-byte values). */
function sessionEstablishment(): Uint8Array[] {
  const message = Uint8Array.from({ length: 2_000 }, (_, i) => (i * 7) & 0xff);
  return chunk(message, 182);
}

describe('macOS central: Write Commands without flow control in the binding', () => {
  it('a SessionEstablishment in a dozen chunks written back to back reaches the phone whole: none dropped by CoreBluetooth', async () => {
    const s = await setup();
    const link = await s.central.connect(profile(), new Recorder(), signal());
    const chunks = sessionEstablishment();
    expect(chunks.length).toBeGreaterThanOrEqual(12);
    // The core issues the next ble_write once the previous one resolved: as fast as the binding says "done".
    for (const value of chunks) await link.write(SERVER_MODE.c2s, value);
    await link.flush?.(signal());
    await until(() => s.phone.writes.all.length === chunks.length, 3_000, 'every chunk at the phone');
    expect(s.bindings.dropped).toEqual([]);
    expect(s.phone.writes.all.map((w) => Buffer.from(w.data).toString('hex'))).toEqual(chunks.map((c) => Buffer.from(c).toString('hex')));
    await link.close();
  });

  it('flush() holds the teardown until the last Write Command has had its connection event (the end byte is not lost with the link)', async () => {
    const s = await setup();
    const link = await s.central.connect(profile(), new Recorder(), signal());
    await link.write(SERVER_MODE.c2s, Uint8Array.of(0x00, 0xa1));
    await link.write(SERVER_MODE.c2s, Uint8Array.of(0x00, 0xa2));
    await link.write(SERVER_MODE.state, Uint8Array.of(0x02));
    await link.flush?.(signal());
    await link.close();
    await until(() => s.phone.disconnects.all.length === 1);
    expect(s.phone.writes.all.map((w) => Buffer.from(w.data).toString('hex'))).toEqual(['00a1', '00a2', '02']);
  });

  it('an abort while a write waits for its turn rejects at once; the write is never sent', async () => {
    const s = await setup({ writeSpacingMs: 200 });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    await link.write(SERVER_MODE.c2s, Uint8Array.of(1));
    const controller = new AbortController();
    const waiting = link.write(SERVER_MODE.c2s, Uint8Array.of(2), controller.signal);
    controller.abort();
    await expect(waiting).rejects.toThrow(/aborted/);
    await link.write(SERVER_MODE.c2s, Uint8Array.of(3));
    await until(() => s.phone.writes.all.length === 2);
    expect(s.phone.writes.all.map((w) => w.data[0])).toEqual([1, 3]);
    await link.close();
  });

  it('the MTU the binding reports (ATT_MTU − 3) is normalised: the link says 185 and refuses 183-byte writes', async () => {
    const s = await setup();
    const link = await s.central.connect(profile(), new Recorder(), signal());
    await until(() => link.mtu !== undefined);
    expect(link.mtu).toBe(185);
    await expect(link.write(SERVER_MODE.c2s, new Uint8Array(183))).rejects.toMatchObject({
      name: 'BleValueTooLargeError',
      bytes: 183,
      limit: 182,
      attMtu: 185,
    });
    await link.write(SERVER_MODE.c2s, new Uint8Array(182));
    await until(() => s.phone.writes.all.length === 1);
    await link.close();
  });
});
