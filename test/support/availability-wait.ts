/** Waits for a device port to report an availability that passes `test` (bounded). */
import type { Availability, AvailabilitySource } from '../../src/devices/ports.js';

export function availabilityWhen(port: AvailabilitySource, test: (a: Availability) => boolean, ms = 10_000): Promise<Availability> {
  if (test(port.availability())) return Promise.resolve(port.availability());
  const subscribe = port.onAvailabilityChange?.bind(port);
  if (!subscribe) return Promise.reject(new Error('the port reports no availability changes'));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`availability stayed ${JSON.stringify(port.availability())}`));
    }, ms);
    const stop = subscribe((a) => {
      if (!test(a)) return;
      clearTimeout(timer);
      stop();
      resolve(a);
    });
  });
}
