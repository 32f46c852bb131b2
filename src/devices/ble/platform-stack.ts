/**
 * The BLE adapters on this machine's own Bluetooth stack: noble and bleno with their default bindings
 * (raw HCI on Linux, CoreBluetooth on macOS, WinRT for noble on Windows; docs/ble-libraries.md §2, §6). Loaded
 * only when asked for, because constructing the default bindings touches the hardware; a role whose
 * library cannot load is reported, not thrown. What the libraries print goes to `log` while the adapters
 * live (library-console.ts): the relay CLI's stdout is one JSON line per verification.
 *
 * Windows has no peripheral role on its own radio: bleno's index takes the raw HCI binding there
 * (lib/resolve-bindings.js:18-27), whose socket is bluetooth-hci-socket's libusb driver (index.js:20-30):
 * on an ordinary PC "No compatible USB Bluetooth 4.0 device found!" (lib/usb.js:75-77). Its init() has by
 * then put `exit` and `SIGINT` handlers on the process (bleno lib/hci-socket/bindings.js:79-85), which stop
 * the binding at exit by writing an HCI command through a USB device that was never found (`controlTransfer`
 * on undefined, usb.js:237-241): a TypeError at every quit. So bleno is loaded there only for a USB dongle
 * set up for it (`usbDongle`); without one the role is a port that says "unsupported on this computer".
 * Whatever a library that failed to start left on the process is taken off again.
 *
 * Every build gets a noble of its own, on bindings of its own: `lib/resolve-bindings.js` (the function the
 * index calls once for its default instance) builds new default bindings and a new Noble on each call. The
 * index's instance cannot be reused after a rebuild: `noble.stop()` stops its bindings but never clears
 * `_initialized` (lib/noble.js `stop`, `_initializeBindings`, the `newListener` hook), so a second central
 * on it never starts them again — on macOS and Windows every later call then throws "BLEManager has
 * already been cleaned up" (noble_mac.mm / noble_winrt.cc `CHECK_MANAGER`), on hci the socket stays closed.
 * bleno is the other way round: one instance per process (the index's), never stopped on hci
 * (docs/ble-libraries.md §1); each build's adapter takes its listener off again at close.
 */
import { createRequire } from 'node:module';
import type { Noble } from '@stoprocent/noble';
import type { BlePeripheral } from '../ports.js';
import { errorMessage } from '../shared/abort.js';
import { BlenoPeripheral, type BlenoPeripheralOptions } from './bleno-peripheral.js';
import { blenoBindingKind } from './bleno-support.js';
import type { Bleno } from './bleno-types.js';
import { routeLibraryConsole, type LibraryLog } from './library-console.js';
import { NobleCentral, type NobleCentralOptions } from './noble-central.js';
import { defaultBindingKind } from './noble-support.js';
import { UnavailablePeripheral } from './unavailable-peripheral.js';
import { osCapabilities } from '../../platform/os.js';

/** A USB device by vendor and product id. */
export interface UsbDevice {
  readonly vid: number;
  readonly pid: number;
}

/** What staff read for the peripheral role on a Windows kiosk without a dongle. */
export const WINDOWS_PERIPHERAL_UNAVAILABLE =
  'peripheral role unavailable on Windows (it needs a USB Bluetooth dongle set in ble.usbDongle)';

export interface PlatformBle {
  readonly central?: NobleCentral;
  readonly peripheral?: BlePeripheral;
  /** Roles that could not be set up, with why (for staff diagnostics). */
  readonly problems: readonly string[];
  /**
   * Releases the adapters; this build's noble is stopped (the next build makes a new one), bleno is left
   * running (its stop() leaks a timer, docs/ble-libraries.md §1), and so is one routing of its console output.
   */
  close(): Promise<void>;
}

export interface PlatformBleOptions {
  readonly central: boolean;
  readonly peripheral: boolean;
  readonly centralOptions?: NobleCentralOptions;
  readonly peripheralOptions?: BlenoPeripheralOptions;
  /** Takes what noble and bleno print (their hci bindings write to stdout); default: left on the console. */
  readonly log?: LibraryLog;
  /** A USB Bluetooth dongle for bleno to drive through libusb (`ble.usbDongle`); on Windows the only peripheral. */
  readonly usbDongle?: UsbDevice;
  /** The OS (default this one's). */
  readonly platform?: NodeJS.Platform;
  /** Loads a library by module id (default: Node's require); tests hand in doubles. */
  readonly load?: (id: string) => unknown;
  /** The environment the libraries read their binding choice from (default `process.env`; noble-support.ts `defaultBindingKind`). */
  readonly env?: NodeJS.ProcessEnv;
}

/** noble's `lib/resolve-bindings.js`: new default bindings and a new Noble on them, per call. */
type NobleWithBindings = (kind?: 'default') => Noble;

/** The noble module id each build loads (not the index, whose load builds a default instance of its own). */
export const NOBLE_RESOLVE_BINDINGS = '@stoprocent/noble/lib/resolve-bindings';

/**
 * The routing of bleno's console output: bleno lives as long as the process and keeps printing, so one
 * routing stays with it; a build's own routing ends at its close (else each rebuild would add a sink).
 */
let blenoRouting: (() => void) | undefined;

/**
 * Lets a start that noble's `newListener` hook deferred (process.nextTick) happen before the stop: a stop
 * first would leave a manager running. (NobleCentral reads `noble.state` first, which starts the bindings at
 * once; this keeps the close right whoever adds the first listener.)
 */
const afterPendingStart = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const hex4 = (n: number): string => n.toString(16).padStart(4, '0');

/** Why a dongle could not be used, in one line (a missing module's message lists its require stack). */
function dongleProblem(e: unknown): string {
  const first = errorMessage(e).split('\n')[0] ?? '';
  return /Cannot find module 'usb'/.test(first) ? 'this build does not include the USB Bluetooth driver (the usb module)' : first;
}

/** Process-wide listeners a library's init() may add (bleno's and noble's hci bindings add both). */
const PROCESS_EVENTS = ['exit', 'SIGINT'] as const;

/** Runs `start`; if it throws, removes the `exit`/`SIGINT` listeners it added before it did, then rethrows. */
function startedOrUndone<T>(start: () => T): T {
  const host: NodeJS.EventEmitter = process;
  const before = new Map(PROCESS_EVENTS.map((event) => [event, new Set(host.listeners(event))]));
  try {
    return start();
  } catch (e) {
    for (const event of PROCESS_EVENTS) {
      const had = before.get(event);
      for (const listener of host.listeners(event))
        if (!had?.has(listener)) host.removeListener(event, listener as (...args: unknown[]) => void);
    }
    throw e;
  }
}

export function loadPlatformBle(options: PlatformBleOptions): PlatformBle {
  const load = options.load ?? createRequire(import.meta.url);
  const os = osCapabilities(options.platform);
  const problems: string[] = [];
  // Before the libraries load: their bindings print from the first state change on.
  const unroute = options.log ? routeLibraryConsole(options.log) : () => undefined;
  // Both roles on one adapter with raw HCI: without this noble answers the phone's ATT requests with
  // "Request Not Supported" (docs/ble-libraries.md §3). Set before noble loads; an explicit setting wins.
  if (options.central && options.peripheral && os.bleRolesShareRawHci) process.env.NOBLE_MULTI_ROLE ??= '1';
  let noble: Noble | undefined;
  let central: NobleCentral | undefined;
  let peripheral: BlePeripheral | undefined;
  let bleno: BlenoPeripheral | undefined;
  if (options.central) {
    try {
      const withBindings = load(NOBLE_RESOLVE_BINDINGS) as NobleWithBindings;
      const library = startedOrUndone(() => withBindings('default'));
      noble = library;
      const binding = defaultBindingKind(os.name, options.env ?? process.env);
      central = startedOrUndone(() => new NobleCentral(library, { platform: binding, ...options.centralOptions }));
    } catch (e) {
      problems.push(`central (noble): ${errorMessage(e)}`);
    }
  }
  if (options.peripheral) {
    const dongle = options.usbDongle;
    if (!os.builtInBlePeripheral && !dongle) {
      problems.push(`peripheral: ${WINDOWS_PERIPHERAL_UNAVAILABLE}`);
      peripheral = new UnavailablePeripheral({ usable: false, reason: 'unsupported_platform', detail: WINDOWS_PERIPHERAL_UNAVAILABLE });
    } else {
      const dongleId = dongle ? `${hex4(dongle.vid)}:${hex4(dongle.pid)}` : undefined;
      try {
        bleno = startedOrUndone(() => {
          // The index would also build the OS's default binding; for a dongle, only the hci one on libusb.
          const library = dongle
            ? (load('@stoprocent/bleno/lib/resolve-bindings') as (kind: string, options: object) => Bleno)('hci', {
                hciDriver: 'usb',
                bindParams: { usb: { vid: dongle.vid, pid: dongle.pid } },
              })
            : (load('@stoprocent/bleno') as Bleno);
          return new BlenoPeripheral(library, { binding: dongle ? 'hci' : blenoBindingKind(os.name), ...options.peripheralOptions });
        });
        peripheral = bleno;
      } catch (e) {
        if (dongleId) {
          const why = dongleProblem(e);
          problems.push(`peripheral (bleno on the USB dongle ${dongleId}): ${why}`);
          peripheral = new UnavailablePeripheral({
            usable: false,
            reason: 'no_adapter',
            detail: `the USB Bluetooth dongle ${dongleId} (ble.usbDongle) could not be used: ${why}`,
          });
        } else {
          problems.push(`peripheral (bleno): ${errorMessage(e)}`);
        }
      }
    }
  }
  return {
    ...(central ? { central } : {}),
    ...(peripheral ? { peripheral } : {}),
    problems,
    async close() {
      central?.dispose();
      if (noble) {
        const stopping = noble;
        await afterPendingStart();
        try {
          stopping.stop();
        } catch {
          // mac: a binding whose manager is gone throws even on stop (noble_mac.mm `Stop`, CHECK_MANAGER): nothing left to release.
        }
      }
      await bleno?.close();
      // bleno is never stopped on hci (its poll timer would throw, docs/ble-libraries.md §1) and keeps reporting state
      // changes, each printed: one routing stays for as long as it lives, i.e. the process (see blenoRouting).
      if (bleno && options.log && blenoRouting === undefined) blenoRouting = unroute;
      else unroute();
    },
  };
}
