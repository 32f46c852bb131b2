/**
 * A device rebuild (a saved `ble.roles` or `pcsc.*` change: kiosk-runtime.ts `devicesChanged` → `rebuild`)
 * closes the BLE adapters and loads them again in the same process. These tests do that through the app's
 * real `loadPlatformBle` on noble's real JavaScript, with the mac and win bindings replayed as unforgiving
 * as their native sources (test/support/fake-noble-native.ts): a stopped binding throws on every call.
 */
import os from 'node:os';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadPlatformBle, type PlatformBle } from '../../../../src/devices/ble/platform-stack.js';
import { NobleCentral } from '../../../../src/devices/ble/noble-central.js';
import { createVirtualNoble } from '../../../../src/qa/devices/noble-radio-bindings.js';
import type { GattProfile } from '../../../../src/devices/ports.js';
import { VirtualRadio, type RadioDevice } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { fakeNoblePackage, type FakeNoblePackage, type NativeKind } from '../../../support/fake-noble-native.js';
import { Recorder, serverProfile } from '../../../support/ble-fixtures.js';
import { PhoneServer, SERVER_MODE, until } from '../../../support/radio-phone.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000BB01';
const profile = (): GattProfile => serverProfile(SERVICE);
const signal = (): AbortSignal => new AbortController().signal;

const PLATFORM: Record<NativeKind, NodeJS.Platform> = { mac: 'darwin', win: 'win32' };

let radio: VirtualRadio | undefined;
let pkg: FakeNoblePackage | undefined;
const loaded: PlatformBle[] = [];

afterEach(async () => {
  for (const ble of loaded.splice(0)) await ble.close();
  radio?.shutdown();
  radio = undefined;
  pkg?.remove();
  pkg = undefined;
  vi.restoreAllMocks();
});

/** A Mac or a PC as noble's resolve-bindings sees it (`os.platform()`, and a Windows 10 build with BLE). */
function onOs(kind: NativeKind): void {
  vi.spyOn(os, 'platform').mockReturnValue(PLATFORM[kind]);
  vi.spyOn(os, 'release').mockReturnValue('10.0.19045');
}

function build(kind: NativeKind): PlatformBle {
  if (!pkg) throw new Error('no package');
  const ble = loadPlatformBle({
    central: true,
    peripheral: false,
    platform: PLATFORM[kind],
    env: {},
    load: pkg.load,
    // The replayed bindings stand on the virtual radio, which has no descriptors: win's CCCD read-back
    // (noble-central-win.test.ts tests it on its own fake) is left out here, where the rebuild is the point.
    centralOptions: { scanTimeoutMs: 2_000, retryDelayMs: 5, writeSpacingMs: 0, confirmSubscriptions: false },
  });
  loaded.push(ble);
  return ble;
}

/** Scan, connect, set up, one Write Command to the phone, close: a verification's BLE part. */
async function verifyOnce(central: NobleCentral, phone: PhoneServer, value: number): Promise<void> {
  await until(() => central.availability().usable, 2_000, 'central usable');
  const link = await central.connect(profile(), new Recorder(), signal());
  await link.write(SERVER_MODE.c2s, Uint8Array.of(value));
  await until(() => phone.writes.all.some((w) => w.data[0] === value), 2_000, `write ${value} at the phone`);
  await link.close();
}

async function rig(kind: NativeKind): Promise<{ phone: PhoneServer; kiosk: RadioDevice }> {
  onOs(kind);
  radio = new VirtualRadio();
  const phone = new PhoneServer(radio, { serviceUuid: SERVICE.toLowerCase(), mtu: 185 });
  const kiosk = radio.addDevice({ name: 'kiosk' });
  pkg = fakeNoblePackage(() => kiosk);
  await phone.start();
  return { phone, kiosk };
}

describe.each(['mac', 'win'] as const)('a rebuild on the %s binding', (kind) => {
  it('the central verifies before and after the rebuild: each build has a noble of its own, started', async () => {
    const { phone } = await rig(kind);
    const first = build(kind);
    expect(first.problems).toEqual([]);
    const central1 = first.central;
    if (!central1) throw new Error('no central');
    await verifyOnce(central1, phone, 1);
    await first.close();

    const second = build(kind);
    const central2 = second.central;
    if (!central2) throw new Error('no central');
    await verifyOnce(central2, phone, 2);
    await second.close();

    // One binding per build, each started by its own noble and stopped at its close.
    expect(pkg?.created.length).toBe(2);
    expect(pkg?.created.map((b) => b.listenerCount('stateChange'))).toEqual([1, 1]);
  });

  it('several rebuilds in a row, each verified', async () => {
    const { phone } = await rig(kind);
    for (let i = 1; i <= 4; i++) {
      const ble = build(kind);
      const central = ble.central;
      if (!central) throw new Error('no central');
      await verifyOnce(central, phone, 10 + i);
      await ble.close();
    }
  });

  it('a close right after the build (before noble has started its binding) leaves no manager running', async () => {
    await rig(kind);
    const ble = build(kind);
    await ble.close();
    const [bindings] = pkg?.created ?? [];
    expect(() => bindings?.startScanning([], false)).toThrow(/BLEManager has already been cleaned up/);
  });
});

describe('a central whose binding was stopped under it (fail closed)', () => {
  it('the first call that throws "cleaned up" makes it unusable with a reason, not a usable central that fails every scan', async () => {
    radio = new VirtualRadio();
    const phone = new PhoneServer(radio, { serviceUuid: SERVICE.toLowerCase() });
    await phone.start();
    const noble = createVirtualNoble(radio.addDevice({ name: 'kiosk' }));
    const central = new NobleCentral(noble, { platform: 'mac', scanTimeoutMs: 2_000, retryDelayMs: 5, writeSpacingMs: 0 });
    await until(() => central.availability().usable, 2_000, 'central usable');
    const seen: string[] = [];
    central.onAvailabilityChange((a) => seen.push(a.reason ?? 'usable'));
    noble.stop();
    // noble's state still reads poweredOn: only the binding knows it is gone.
    await expect(central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      name: 'BleSetupError',
      reason: 'adapter_error',
    });
    expect(central.availability()).toMatchObject({ usable: false, reason: 'adapter_error' });
    expect(central.availability().detail).toMatch(/stopped/);
    expect(seen).toContain('adapter_error');
    await expect(central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({ reason: 'adapter_error' });
    central.dispose();
  });
});
