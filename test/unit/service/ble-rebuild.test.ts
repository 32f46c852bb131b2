/**
 * Saving another `ble.roles` rebuilds the devices (kiosk-runtime.ts `devicesChanged` → `rebuild`) through the
 * production factory: `createConfiguredDevices` → `loadPlatformBle`, on noble's real JavaScript with the mac
 * binding replayed as unforgiving as noble_mac.mm (test/support/fake-noble-native.ts) and one bleno for the
 * process on the virtual radio (as the package index gives one), strict after stop as bleno_mac.mm. Every
 * build must verify, and nothing may pile up on the long-lived bleno or the process.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dispatchIntent } from '../../../src/common/kiosk-api.js';
import type { Bleno } from '../../../src/devices/ble/bleno-types.js';
import { loadPlatformBle } from '../../../src/devices/ble/platform-stack.js';
import { createVirtualBleno } from '../../../src/qa/devices/bleno-radio-bindings.js';
import { VirtualRadio } from '../../../src/qa/sim/radio/virtual-radio.js';
import { configuredDeviceFactory } from '../../../src/service/configured-devices.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { fakeNoblePackage, type FakeNoblePackage } from '../../support/fake-noble-native.js';
import { startServiceFixture, TEST_SCRYPT, type ServiceFixture } from './service-fixture.js';

const PIN = '246810';
let fixture: ServiceFixture | undefined;
let pkg: FakeNoblePackage | undefined;
let radio: VirtualRadio | undefined;

afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
  radio?.shutdown();
  radio = undefined;
  pkg?.remove();
  pkg = undefined;
  vi.unstubAllEnvs();
});

const PROCESS_EVENTS = ['exit', 'SIGINT'] as const;
// Each listener by event and the start of its source, so a failure says whose listener stayed or went.
const processListeners = (): string[] =>
  PROCESS_EVENTS.flatMap((event) =>
    (event === 'exit' ? process.listeners('exit') : process.listeners('SIGINT')).map(
      (l) => `${event}: ${String(l).replace(/\s+/g, ' ').slice(0, 100)}`,
    ),
  ).sort();

describe('a BLE role change through the production device factory', () => {
  it('central → both → peripheral → central: each build verifies, the bleno of the process keeps no listener of an old build', async () => {
    // noble's resolve-bindings takes the mac binding (the copy's fake) on this Linux machine; bleno is hci's.
    vi.stubEnv('NOBLE_BINDINGS', 'mac');
    vi.stubEnv('NOBLE_MULTI_ROLE', '1');
    let bleno: Bleno | undefined;
    // The kiosk's own radio device on the rig's air, next to the virtual phone.
    radio = new VirtualRadio();
    const device = radio.addDevice({ name: 'kiosk-native' });
    pkg = fakeNoblePackage(() => device);
    const load = (id: string): unknown => {
      if (id === '@stoprocent/bleno') {
        bleno ??= createVirtualBleno(device);
        return bleno;
      }
      return pkg?.load(id);
    };
    const pinHash = await hashPin(PIN, TEST_SCRYPT);
    fixture = await startServiceFixture({
      overrides: { staff: { pinHash } },
      config: { ble: { roles: 'central' } },
      rig: { radio, ble: { central: false, peripheral: false } },
      service: {
        devices: configuredDeviceFactory({
          nfc: 'none',
          loadBle: (o) => {
            // A line through the logger the factory hands the Bluetooth stack (checked below).
            o.log?.info({ event: 'ble_stack_loading' }, 'loading the Bluetooth stack');
            return loadPlatformBle({ ...o, platform: 'linux', load });
          },
        }),
      },
    });
    const f = fixture;
    const call = (intent: string, args: unknown): Promise<unknown> =>
      dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
    const listenersAtStart = processListeners();

    const verifyOnce = async (n: number): Promise<void> => {
      await f.waitState((s) => s.view.phase === 'ready', 10_000, `ready (${n})`);
      await call('qrScanned', { text: f.rig.phone.presentQr(), source: 'camera' });
      await f.waitState((s) => s.view.phase === 'result', 15_000, `result (${n})`);
      expect(f.reports[n]?.outcome?.verdict).toBe('verified');
    };

    await verifyOnce(0);
    await call('unlock', { pin: PIN });
    const roles = ['both', 'peripheral', 'central'] as const;
    for (const [i, role] of roles.entries()) {
      expect(await call('saveSettings', { bleRoles: role })).toMatchObject({ ok: true });
      await f.service.settled();
      await verifyOnce(i + 1);
      // Between builds the one bleno keeps only the current build's listener (none without the role).
      expect(bleno?.listenerCount('stateChange') ?? 0).toBe(role === 'central' ? 0 : 1);
    }
    expect(pkg.created.length).toBe(3); // central, both, central: a noble of its own each
    // Nothing of the builds left behind. A listener that went away is not a leak: test files share a worker
    // process, and an earlier file's pino stream (on-exit-leak-free's "exit") may close during this one.
    const left = [...processListeners()];
    for (const l of listenersAtStart) if (left.includes(l)) left.splice(left.indexOf(l), 1);
    expect(left).toEqual([]);
    // The devices' lines (ble, pcsc) under the runtime's logger name each key once: a nested component
    // once read {"component":"devices","component":"ble"}, which a log reader may take either way.
    expect(f.logs.lines.filter((l) => l.includes('"event":"ble_stack_loading"') && l.includes('"component":"ble"'))).toHaveLength(4);
    expect(f.logs.linesWithRepeatedKeys()).toEqual([]);
  });
});
