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

/**
 * Waits until `reader` is usable and reports no card. A card lifted just before (the previous test or
 * run) is still "present" until pcscd's next poll, and a card inserted before that poll would be swapped
 * in silently (pcscd polls vpcd's readers about every 400 ms, frankmorgner/vsmartcard `ifd-vpcd.c`): a run starts from an empty reader.
 */
export async function waitForEmptyReader(
  reader: AvailabilitySource & { readonly cardPresent: boolean | undefined },
  name: string,
  ms = 3_000,
): Promise<void> {
  await availabilityWhen(reader, (a) => a.usable, Math.max(ms, 10_000));
  for (const started = performance.now(); reader.cardPresent !== false; ) {
    if (performance.now() - started > ms) throw new Error(`a card stays on ${name}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
