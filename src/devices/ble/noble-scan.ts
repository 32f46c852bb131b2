/** One scan for a service: the first connectable advertiser, bounded by the caller's signal and a timeout. */
import type { AdapterState, Noble, Peripheral } from '@stoprocent/noble';
import { BleSetupError } from '../ports.js';
import { abortedError, errorMessage } from '../shared/abort.js';

export interface ScanOptions {
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  /** The service as the backend spelled it, for the reason string. */
  readonly label: string;
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
    const onDiscover = (peripheral: Peripheral): void => {
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
    noble.startScanningAsync([serviceUuid], false).catch((e: unknown) => {
      if (finish(false)) reject(new BleSetupError(`scan_failed: ${errorMessage(e)}`));
    });
  });
}
