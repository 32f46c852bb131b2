/** Availability bookkeeping shared by the device adapters: the current value and change listeners. */
import type { Availability } from '../ports.js';

export const sameAvailability = (a: Availability, b: Availability): boolean =>
  a.usable === b.usable && a.reason === b.reason && a.detail === b.detail;

/** Holds an adapter's availability and tells listeners when it really changed. */
export class AvailabilityNotifier {
  private value: Availability;
  private readonly listeners = new Set<(availability: Availability) => void>();

  constructor(initial: Availability) {
    this.value = initial;
  }

  get current(): Availability {
    return this.value;
  }

  set(availability: Availability): void {
    if (sameAvailability(availability, this.value)) return;
    this.value = availability;
    for (const listener of [...this.listeners]) {
      try {
        listener(availability);
      } catch {
        // a failing listener must not stop the others
      }
    }
  }

  onChange(listener: (availability: Availability) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
