/**
 * The QA radio process: the production child's server (src/devices/ble/radio-process/child-server.ts)
 * with noble and bleno built over the radio link (docs/radio-link.md) instead of this machine's stack, so
 * the kiosk's radio process reaches a virtual radio in another process. The link's address comes from
 * `MDL_KIOSK_QA_RADIO_LINK` (`HOST:PORT`).
 *
 * QA-only commands (the production child refuses them): `abort` plants a native-style crash
 * (`process.abort()`, SIGABRT as a failed assertion in a binding gives), `print` writes on stdout and
 * stderr as a native `printf` would (a phone-address-like text included). `MDL_KIOSK_QA_RADIO_STRAY_OUTPUT=1`
 * prints the same at start and after every connect.
 */
import type { BleCentral } from '../../../devices/ports.js';
import { BlenoPeripheral } from '../../../devices/ble/bleno-peripheral.js';
import { routeLibraryConsole } from '../../../devices/ble/library-console.js';
import { NobleCentral } from '../../../devices/ble/noble-central.js';
import { channelOfThisProcess, serveRadio, type RadioStack } from '../../../devices/ble/radio-process/child-server.js';
import { parseHostPort } from '../../sim/vpcd/vpcd-address.js';
import { RemoteBlenoBindings, createRemoteBleno } from './remote-bleno-bindings.js';
import { RemoteNobleBindings, createRemoteNoble } from './remote-noble-bindings.js';

const address = process.env.MDL_KIOSK_QA_RADIO_LINK;
const stray = process.env.MDL_KIOSK_QA_RADIO_STRAY_OUTPUT === '1';

function printStray(): void {
  // What a native printf in a binding looks like: raw text on the process's own stdout and stderr.
  process.stdout.write('BLEManager: didDiscoverPeripheral 12:34:56:78:9A:BC rssi -40\n');
  process.stderr.write('noble_winrt: OnWrite status Unreachable\n');
}

async function build(init: { central: boolean; peripheral: boolean }, log: Parameters<typeof routeLibraryConsole>[0]): Promise<RadioStack> {
  if (!address) throw new Error('MDL_KIOSK_QA_RADIO_LINK is not set');
  const link = parseHostPort(address);
  const unroute = routeLibraryConsole(log);
  const nobleBindings = init.central ? await RemoteNobleBindings.connect({ ...link, name: 'kiosk-central' }) : undefined;
  const blenoBindings = init.peripheral ? await RemoteBlenoBindings.connect({ ...link, name: 'kiosk-peripheral' }) : undefined;
  const noble = nobleBindings ? createRemoteNoble(nobleBindings) : undefined;
  const central = noble ? new NobleCentral(noble, { platform: 'hci' }) : undefined;
  const peripheral = blenoBindings ? new BlenoPeripheral(createRemoteBleno(blenoBindings), { binding: 'hci' }) : undefined;
  const strayCentral: BleCentral | undefined =
    central && stray
      ? {
          availability: () => central.availability(),
          onAvailabilityChange: (listener) => central.onAvailabilityChange(listener),
          connect: async (profile, handlers, signal) => {
            const opened = await central.connect(profile, handlers, signal);
            printStray();
            return opened;
          },
        }
      : central;
  if (stray) printStray();
  return {
    ...(strayCentral ? { central: strayCentral } : {}),
    ...(peripheral ? { peripheral } : {}),
    problems: [],
    async close() {
      central?.dispose();
      noble?.stop();
      await peripheral?.close();
      await nobleBindings?.close();
      await blenoBindings?.close();
      unroute();
    },
  };
}

serveRadio(channelOfThisProcess(), build, {
  onQa(command) {
    if (command === 'abort') process.abort();
    if (command === 'print') printStray();
  },
});
process.on('disconnect', () => process.exit(0));
