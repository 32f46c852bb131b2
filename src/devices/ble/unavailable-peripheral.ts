/**
 * The peripheral role where this machine cannot have one (Windows without a USB dongle for bleno) or where
 * bleno could not start: a port that says why, so staff read "not supported on this computer" or "no
 * adapter" on the status bar rather than "not set up", and the backend gets that reason in `ble_connected`.
 */
import { BleSetupError, type Availability, type BlePeripheral, type BlePeripheralSession } from '../ports.js';

export class UnavailablePeripheral implements BlePeripheral {
  constructor(private readonly why: Availability & { readonly reason: string }) {}

  availability(): Availability {
    return this.why;
  }

  onAvailabilityChange(): () => void {
    return () => undefined; // it never changes
  }

  advertise(): Promise<BlePeripheralSession> {
    const { reason, detail } = this.why;
    return Promise.reject(new BleSetupError(detail === undefined ? reason : `${reason}: ${detail}`));
  }
}
