/**
 * The four device ports as the screen shows them (`KioskView['devices']`), and whether they can finish a
 * verification. Each port's availability is read, never trusted to be announced: a port that throws reads
 * as `adapter_error`, a port that is absent as `not_configured`.
 */
import type { ErrorView, KioskView } from '../common/kiosk-view.js';
import { readinessOf } from '../common/readiness.js';
import type { Availability, DevicePorts } from '../devices/ports.js';

export type DeviceStatus = KioskView['devices'];

/** Each port's availability now. */
export function readDevices(ports: DevicePorts): DeviceStatus {
  const status = (port: { availability(): Availability } | undefined): { usable: boolean; reason?: string } => {
    if (!port) return { usable: false, reason: 'not_configured' };
    try {
      const a = port.availability();
      return a.reason === undefined ? { usable: a.usable } : { usable: a.usable, reason: a.reason };
    } catch {
      return { usable: false, reason: 'adapter_error' };
    }
  };
  const { nfc, qr, bleCentral, blePeripheral } = ports;
  return { nfc: status(nfc), qr: status(qr), bleCentral: status(bleCentral), blePeripheral: status(blePeripheral) };
}

export class DeviceWatch {
  private current: DeviceStatus;

  /** `readinessGate`: see `KioskDeps.readinessGate` (off, the devices never refuse a customer). */
  constructor(
    private readonly ports: DevicePorts,
    private readonly readinessGate: boolean,
  ) {
    this.current = readDevices(ports);
  }

  /** The status last read. */
  get status(): DeviceStatus {
    return this.current;
  }

  /** Reads every port again. */
  refresh(): DeviceStatus {
    this.current = readDevices(this.ports);
    return this.current;
  }

  /** Why a customer cannot be served by these devices now (readinessGate), as the error the screen shows. */
  refusal(): ErrorView | undefined {
    if (!this.readinessGate) return undefined;
    // Read afresh: a port need not announce every change of its availability.
    const readiness = readinessOf(this.refresh());
    if (readiness.blocker) return { code: readiness.blocker, detail: readiness.detail, retryable: false };
    if (!readiness.canVerify) return { code: 'starting', detail: readiness.detail, retryable: true };
    return undefined;
  }

  /** Calls `changed` (the status already read again) whenever a port announces a change; returns the unsubscribers. */
  watch(changed: () => void): (() => void)[] {
    const unsubscribers: (() => void)[] = [];
    const { nfc, qr, bleCentral, blePeripheral } = this.ports;
    for (const port of [nfc, qr, bleCentral, blePeripheral]) {
      const unsubscribe = port?.onAvailabilityChange?.(() => {
        this.refresh();
        changed();
      });
      if (unsubscribe) unsubscribers.push(unsubscribe);
    }
    return unsubscribers;
  }
}
