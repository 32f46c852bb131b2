/**
 * The end of a session on bleno (bleno-peripheral.ts header): stop advertising, disconnect the phone, remove
 * the service. Each step waits for bleno's event and is given up after its bound, so a dead adapter cannot
 * hang close(), and none rejects.
 */
import { awaitEvent } from './bleno-support.js';
import type { Bleno, BlenoConnection } from './bleno-types.js';

export interface TeardownOptions {
  /** Bound for each step. */
  readonly teardownStepMs: number;
  /** bleno's mac binding underneath: no disconnect, and `setServices([])` removes nothing there. */
  readonly mac: boolean;
  /** macOS: empties the GATT database (the teardown's last step there). */
  readonly removeServices: () => Promise<void>;
}

function step(
  bleno: Bleno,
  options: TeardownOptions,
  event: string,
  errorEvent: string | undefined,
  trigger: () => void,
  what: string,
  filter?: (args: unknown[]) => boolean,
): Promise<unknown> {
  return awaitEvent(bleno, event, errorEvent, trigger, { timeoutMs: options.teardownStepMs, what, ...(filter ? { filter } : {}) }).catch(
    () => undefined, // close() never rejects; a step that gets no answer is given up after its bound
  );
}

/** Stops advertising, then disconnects `phone` unless it left meanwhile (`stillThere()` false). */
export async function stopAndDisconnect(
  bleno: Bleno,
  phone: BlenoConnection | undefined,
  stillThere: () => boolean,
  options: TeardownOptions,
): Promise<void> {
  await step(bleno, options, 'advertisingStop', undefined, () => bleno.stopAdvertising(), 'BLE stop advertising');
  // macOS: no disconnect (a no-op there, and no event would come).
  if (!options.mac && phone !== undefined && stillThere()) {
    await step(
      bleno,
      options,
      'disconnect',
      undefined,
      () => bleno.disconnect(phone),
      'BLE disconnect',
      (args) => args[1] === phone,
    );
  }
}

/** Removes the session's service: `setServices([])`; on macOS, where that removes nothing, `removeServices()`. */
export async function removeService(bleno: Bleno, options: TeardownOptions): Promise<void> {
  if (options.mac) await options.removeServices();
  else await step(bleno, options, 'servicesSet', 'servicesSetError', () => bleno.setServices([]), 'BLE remove service');
}
