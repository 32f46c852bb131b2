/**
 * The BLE adapters on this machine's own Bluetooth stack: noble and bleno with their default bindings
 * (raw HCI on Linux, CoreBluetooth on macOS, WinRT / HCI on Windows; reference ble.md §2.1, §6). Loaded
 * only when asked for, because constructing the default bindings touches the hardware; a role whose
 * library cannot load is reported, not thrown. What the libraries print goes to `log` while the adapters
 * live (library-console.ts): the relay CLI's stdout is one JSON line per verification.
 */
import { createRequire } from 'node:module';
import type { Noble } from '@stoprocent/noble';
import { errorMessage } from '../shared/abort.js';
import { BlenoPeripheral, type BlenoPeripheralOptions } from './bleno-peripheral.js';
import type { Bleno } from './bleno-types.js';
import { routeLibraryConsole, type LibraryLog } from './library-console.js';
import { NobleCentral, type NobleCentralOptions } from './noble-central.js';

export interface PlatformBle {
  readonly central?: NobleCentral;
  readonly peripheral?: BlenoPeripheral;
  /** Roles that could not be set up, with why (for staff diagnostics). */
  readonly problems: readonly string[];
  /**
   * Releases the adapters; noble is stopped, bleno is left running (its stop() leaks a timer, ble.md
   * §1.2), and so is the routing of its console output to the log.
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
}

export function loadPlatformBle(options: PlatformBleOptions): PlatformBle {
  const require = createRequire(import.meta.url);
  const problems: string[] = [];
  // Before the libraries load: their bindings print from the first state change on.
  const unroute = options.log ? routeLibraryConsole(options.log) : () => undefined;
  // Both roles on one adapter with raw HCI: without this noble answers the phone's ATT requests with
  // "Request Not Supported" (ble.md §3.1). Set before noble loads; an explicit setting wins.
  if (options.central && options.peripheral && process.platform === 'linux') process.env.NOBLE_MULTI_ROLE ??= '1';
  let noble: Noble | undefined;
  let central: NobleCentral | undefined;
  let peripheral: BlenoPeripheral | undefined;
  if (options.central) {
    try {
      noble = require('@stoprocent/noble') as Noble;
      central = new NobleCentral(noble, options.centralOptions);
    } catch (e) {
      problems.push(`central (noble): ${errorMessage(e)}`);
    }
  }
  if (options.peripheral) {
    try {
      peripheral = new BlenoPeripheral(require('@stoprocent/bleno') as Bleno, options.peripheralOptions);
    } catch (e) {
      problems.push(`peripheral (bleno): ${errorMessage(e)}`);
    }
  }
  return {
    ...(central ? { central } : {}),
    ...(peripheral ? { peripheral } : {}),
    problems,
    async close() {
      central?.dispose();
      noble?.stop();
      await peripheral?.close();
      // bleno is never stopped (its hci poll timer would throw, ble.md §1.2) and keeps reporting state
      // changes, each printed: its output stays routed for as long as it lives, i.e. the process.
      if (!peripheral) unroute();
    },
  };
}
