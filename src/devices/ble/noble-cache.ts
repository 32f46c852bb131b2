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

/**
 * noble's handlers for GATT results index its tables by peripheral, service (and characteristic) without
 * checking that the entry still exists (lib/noble.js `_onNotify`, `_onRead`, `_onValueRead`, …): a result
 * that arrives after the peripheral was forgotten — the unsubscribe confirmation racing the disconnect,
 * or a peer's stray packet — throws a TypeError from the bindings' event and ends the process. Event name
 * → the table the handler reads and how many of its leading arguments must name existing entries (all of
 * them: noble's own `if (entry)` check at the last level takes an inherited member for an entry).
 */
const LOOKUPS: Readonly<Record<string, readonly ['_services' | '_characteristics' | '_descriptors', number]>> = {
  includedServicesDiscover: ['_services', 2],
  characteristicsDiscover: ['_services', 2],
  characteristicsDiscovered: ['_services', 2], // emits on the service without checking it
  read: ['_characteristics', 3],
  write: ['_characteristics', 3],
  broadcast: ['_characteristics', 3],
  notify: ['_characteristics', 3],
  descriptorsDiscover: ['_characteristics', 3],
  valueRead: ['_descriptors', 4],
  valueWrite: ['_descriptors', 4],
};

const guardedBindings = new WeakSet<object>();

function knows(noble: Noble, table: string, keys: readonly unknown[]): boolean {
  let node: unknown = Reflect.get(noble, table);
  for (const key of keys) {
    // Own entries only: an id such as "valueOf" would otherwise find Object.prototype's member, which noble
    // (whose tables are plain objects) takes for a service or characteristic and calls emit on.
    if (typeof node !== 'object' || node === null || typeof key !== 'string' || !Object.hasOwn(node, key)) return false;
    node = Reflect.get(node, key);
  }
  return typeof node === 'object' && node !== null;
}

/**
 * Makes noble drop (with a `warning`, as it does for unknown handles) every GATT result for a peripheral,
 * service or characteristic it no longer knows, instead of throwing. Installed once per bindings object;
 * a no-op when noble's internals are not where this version keeps them. Never throws.
 */
export function dropEventsForForgottenPeripherals(noble: Noble): void {
  const bindings: unknown = Reflect.get(noble, '_bindings');
  if (typeof bindings !== 'object' || bindings === null || guardedBindings.has(bindings)) return;
  const emit: unknown = Reflect.get(bindings, 'emit');
  if (typeof emit !== 'function') return;
  guardedBindings.add(bindings);
  const guardedEmit = function (this: unknown, name: unknown, ...args: unknown[]): unknown {
    const lookup = typeof name === 'string' ? LOOKUPS[name] : undefined;
    if (lookup !== undefined && !knows(noble, lookup[0], args.slice(0, lookup[1]))) {
      // No id in the text: a phone's address is the customer's, and the warning reaches the log.
      noble.emit('warning', `dropped a late ${String(name)} result for a peripheral that is no longer known`);
      return false;
    }
    return Reflect.apply(emit, this, [name, ...args]);
  };
  Reflect.set(bindings, 'emit', guardedEmit);
}
