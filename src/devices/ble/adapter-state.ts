/** Availability of a BLE adapter, shared by the noble and bleno adapters. */
import type { Availability } from '../ports.js';

const ABSENT = new Set(['no_adapter', 'unsupported_platform']);

/**
 * The next availability, except that an absent adapter does not turn into a switched-off one: without an
 * adapter, the hci bindings' 1 s device poll reports 'unsupported' and 'poweredOff' in turn (ble.md
 * §1.2), which would otherwise flap the kiosk's device status every second.
 */
export function nextAvailability(previous: Availability, next: Availability): Availability {
  return next.reason === 'powered_off' && previous.reason !== undefined && ABSENT.has(previous.reason) ? previous : next;
}
