/** One scan for a service: the first connectable advertiser, bounded by the caller's signal and a timeout. */
import type { AdapterState, Noble, Peripheral } from '@stoprocent/noble';
import { BleSetupError } from '../ports.js';
import { abortedError, errorMessage } from '../shared/abort.js';
import type { NobleBindingKind } from './noble-support.js';
import { sameUuid } from './uuid.js';

export interface ScanOptions {
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  /** The service as the backend spelled it, for the reason string. */
  readonly label: string;
  /** The binding (win scans differently, see `scanFor`); default: any other. */
  readonly binding?: NobleBindingKind;
}

/**
 * On Windows the binding filters each report alone and calls a scan response non-connectable
 * (ble_manager.cc `OnScanResult`, peripheral_winrt.cc `PeripheralWinrt::Update`): a wallet with its service UUID
 * only in the scan response would be dropped by the filter (its advertisement lacks the UUID) or seen only as
 * non-connectable. So on win the scan is unfiltered, with duplicates (a later report of a peripheral is
 * otherwise never emitted, `mAdvertismentMap`), and a peripheral is the phone once it has both advertised the
 * UUID and sent a connectable report in this scan. A beacon that is never connectable is still ignored.
 */
class WinScanMatch {
  private readonly connectable = new Set<string>();
  private readonly advertising = new Set<string>();

  constructor(private readonly serviceUuid: string) {}

  matches(peripheral: Peripheral): boolean {
    const { id } = peripheral;
    if ((peripheral.connectable as boolean | undefined) !== false) this.connectable.add(id);
    // noble's merge keeps the last report's UUIDs on win (Emit.cc always sends the array): look at each report.
    if (peripheral.advertisement.serviceUuids.some((uuid) => sameUuid(uuid, this.serviceUuid))) this.advertising.add(id);
    return this.connectable.has(id) && this.advertising.has(id);
  }
}

/**
 * Starts a filtered scan (`serviceUuid` in noble's spelling, docs/ble-libraries.md §3) and resolves with the first
 * connectable peripheral. Rejects with `BleSetupError` on timeout or when the adapter leaves poweredOn,
 * with an abort error when the signal aborts. The scan is stopped and every listener removed either way.
 */
export function scanFor(noble: Noble, serviceUuid: string, options: ScanOptions): Promise<Peripheral> {
  const { signal, timeoutMs, label } = options;
  if (signal.aborted) return Promise.reject(abortedError('BLE scan'));
  return new Promise<Peripheral>((resolve, reject) => {
    let settled = false;
    const finish = (stopScan: boolean): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      noble.removeListener('discover', onDiscover);
      noble.removeListener('stateChange', onState);
      signal.removeEventListener('abort', onAbort);
      // Fire and forget: awaiting scanStop would leave a listener behind when the binding never sends it
      // (adapter gone); hci stops an ongoing scan by itself before connecting anyway.
      if (stopScan) noble.stopScanning();
      return true;
    };
    const win = options.binding === 'win' ? new WinScanMatch(serviceUuid) : undefined;
    const onDiscover = (peripheral: Peripheral): void => {
      if (win) {
        if (win.matches(peripheral) && finish(true)) resolve(peripheral);
        return;
      }
      // Non-connectable reports (a beacon using the same UUID) cannot be the phone's GATT server.
      if ((peripheral.connectable as boolean | undefined) === false) return;
      if (finish(true)) resolve(peripheral);
    };
    const onState = (state: AdapterState): void => {
      if (state !== 'poweredOn' && finish(false)) reject(new BleSetupError(`scan_failed: the Bluetooth adapter is ${state}`));
    };
    const onAbort = (): void => {
      if (finish(true)) reject(abortedError('BLE scan'));
    };
    const timer = setTimeout(() => {
      if (finish(true)) reject(new BleSetupError(`scan_timeout: no phone advertising ${label} within ${timeoutMs} ms`));
    }, timeoutMs);
    noble.on('discover', onDiscover);
    noble.on('stateChange', onState);
    signal.addEventListener('abort', onAbort, { once: true });
    noble.startScanningAsync(win ? [] : [serviceUuid], win !== undefined).catch((e: unknown) => {
      if (finish(false)) reject(new BleSetupError(`scan_failed: ${errorMessage(e)}`));
    });
  });
}
