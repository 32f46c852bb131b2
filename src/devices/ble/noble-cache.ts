/**
 * noble keeps every peripheral it ever discovered — the `Peripheral` with its advertisement, and its
 * services, characteristics and descriptors in `_services` / `_characteristics` / `_descriptors`, keyed by
 * the peripheral's id — until the adapter leaves `poweredOn` (stoprocent noble 2.8, lib/noble.js
 * `_createPeripheral`, `_onStateChange`). A kiosk meets a new phone address with nearly every customer
 * (phones advertise under resolvable private addresses that change), so with the adapter on for months
 * that cache grows with every verification in the central role. noble has no public way to drop one entry;
 * its own per-peripheral cleanup, `_cleanupPeriperals(uuid)` (sic), is used when the library has it.
 */
import type { Noble } from '@stoprocent/noble';

/** Drops `id` from noble's cache; a no-op when this noble version lacks the cleanup. Never throws. */
export function forgetPeripheral(noble: Noble, id: string): void {
  const cleanup: unknown = Reflect.get(noble, '_cleanupPeriperals');
  if (typeof cleanup !== 'function') return;
  try {
    // With the link already down this only deletes; were it still up, noble would end it first.
    Reflect.apply(cleanup, noble, [id]);
  } catch {
    // Housekeeping must never fail a verification.
  }
}
