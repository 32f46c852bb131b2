/**
 * A device rebuild on Linux over the emulated radio (tools/btvirt), on the production path: `loadPlatformBle`
 * with its default loader, i.e. noble's `lib/resolve-bindings` and bleno's index, whose default bindings take
 * a UART controller from `BLUETOOTH_HCI_SOCKET_UART_PORT` (docs/emulated-radio.md). A verification, a rebuild
 * (close, load again), a verification again — for the central (a new noble opens the tty the old one
 * closed) and for the peripheral (the process's one bleno, re-used).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BlePeripheral, BleCentral, DevicePorts } from '../../src/devices/ports.js';
import { loadPlatformBle, type PlatformBle } from '../../src/devices/ble/platform-stack.js';
import { createHciRig, hciTtysIn, type HciRig } from '../../src/qa/hci/hci-rig.js';
import type { PhoneProfileName } from '../../src/qa/sim/virtual-wallet/profiles.js';
import { expectVerified } from '../support/ble-fixtures.js';
import { startE2eOn } from '../support/e2e-stack.js';
import { startHciRadio, type HciRadio } from '../support/hci-stack.js';

let radio: HciRadio;
let rig: HciRig | undefined;
const builds: PlatformBle[] = [];

beforeAll(async () => {
  radio = await startHciRadio();
}, 30_000);

afterAll(async () => {
  await radio.radio.stop();
});

afterEach(async () => {
  for (const ble of builds.splice(0)) await ble.close();
  await rig?.stop();
  rig = undefined;
  vi.unstubAllEnvs();
});

/** One verification by QR on the kiosk ports of a build (the rig's phone; the rig's own kiosk adapters are off). */
async function verify(counter: HciRig, ports: { readonly bleCentral?: BleCentral; readonly blePeripheral?: BlePeripheral }): Promise<void> {
  const kept = { phone: counter.phone, devices: counter.devices, stop: () => Promise.resolve() };
  const devices: DevicePorts = { ...counter.devices, ...ports };
  const stack = await startE2eOn(kept, { config: { profile: 'identity' }, devices: () => devices });
  try {
    await stack.ready();
    counter.showQr();
    expectVerified(await stack.nextReport(30_000));
  } finally {
    await stack.stop();
  }
}

function build(role: 'central' | 'peripheral'): PlatformBle {
  const ble = loadPlatformBle({ central: role === 'central', peripheral: role === 'peripheral' });
  builds.push(ble);
  expect(ble.problems).toEqual([]);
  return ble;
}

async function phoneRig(profile: PhoneProfileName): Promise<HciRig> {
  rig = await createHciRig(radio.stacks, { profile, ble: { central: false, peripheral: false } });
  return rig;
}

describe('a rebuild over HCI (btvirt), production loading path', () => {
  it('central: verified, rebuilt (a new noble opens the UART the old one closed), verified again — three times', async () => {
    vi.stubEnv('BLUETOOTH_HCI_SOCKET_UART_PORT', hciTtysIn(radio.radio.dir).kioskCentral);
    const counter = await phoneRig('android');
    const listeners = (): number[] => [process.listenerCount('exit'), process.listenerCount('SIGINT')];
    const atStart = listeners();
    for (let i = 0; i < 3; i++) {
      const ble = build('central');
      await verify(counter, { bleCentral: ble.central });
      await ble.close();
      builds.splice(builds.indexOf(ble), 1);
      // noble's hci binding and the UART driver take their exit and SIGINT handlers off at stop(): none pile up.
      expect(listeners()).toEqual(atStart);
    }
  }, 120_000);

  it('peripheral: verified, rebuilt on the process’s one bleno, verified again — three times, no handlers added per build', async () => {
    vi.stubEnv('BLUETOOTH_HCI_SOCKET_UART_PORT', hciTtysIn(radio.radio.dir).kioskPeripheral);
    const counter = await phoneRig('iphone');
    const listeners = (): number[] => [process.listenerCount('exit'), process.listenerCount('SIGINT')];
    let afterFirst: number[] | undefined;
    for (let i = 0; i < 3; i++) {
      const ble = build('peripheral');
      await verify(counter, { blePeripheral: ble.peripheral });
      await ble.close();
      builds.splice(builds.indexOf(ble), 1);
      // bleno's init() put its exit and SIGINT handlers on the process once; later builds add none.
      afterFirst ??= listeners();
      expect(listeners()).toEqual(afterFirst);
    }
  }, 120_000);
});
