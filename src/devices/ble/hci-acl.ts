/**
 * Whether a connection's outgoing data has left the host stack, on noble's and bleno's hci bindings. Both
 * libraries resolve a Write Command or a notification once it is *queued*: their ACL queue then waits for
 * the controller's buffers (one packet in flight on some controllers; a 240-byte value is two ACL
 * fragments at an ACL MTU of 192), and a disconnect issued meanwhile overtakes the queue — the host drops
 * what is still queued for that handle when the Disconnection Complete arrives (Core Vol 4 Part E §7.7.5).
 * The end byte and the reader's last SessionData are exactly the packets at risk.
 *
 * Neither library exposes its queue, so this reads their internals (stoprocent noble 2.8 and bleno 0.12,
 * lib/hci-socket/hci.js): noble keeps `_aclQueue` ({handle}) and `_aclConnections` (handle → {pending});
 * bleno keeps `_aclOutQueue` ({handle}) and `_handleAclsInProgress` (handle → count). `pending` is a
 * packet given to the controller whose Number Of Completed Packets has not come back. On any other
 * binding (CoreBluetooth, WinRT, D-Bus, the virtual radio) nothing is known and nothing is waited for.
 */

/** The library's hci object (`noble._bindings._hci`, `bleno._bindings._hci`), if it runs on hci. */
export function hciOf(library: object): object | undefined {
  const bindings: unknown = Reflect.get(library, '_bindings');
  if (typeof bindings !== 'object' || bindings === null) return undefined;
  const hci: unknown = Reflect.get(bindings, '_hci');
  return typeof hci === 'object' && hci !== null ? hci : undefined;
}

function countQueued(queue: unknown, handle: number): number | undefined {
  if (!Array.isArray(queue)) return undefined;
  let n = 0;
  for (const item of queue as unknown[]) if (typeof item === 'object' && item !== null && Reflect.get(item, 'handle') === handle) n++;
  return n;
}

/**
 * ACL packets of `handle` still queued in the host or not yet completed by the controller; `undefined`
 * when this is not a layout we know; `0` also when the handle is gone (nothing more will be sent on it).
 */
export function unsentAclPackets(hci: object, handle: number): number | undefined {
  const nobleConnections: unknown = Reflect.get(hci, '_aclConnections');
  if (nobleConnections instanceof Map) {
    const queued = countQueued(Reflect.get(hci, '_aclQueue'), handle);
    if (queued === undefined) return undefined;
    const connection: unknown = nobleConnections.get(handle);
    const pending: unknown = typeof connection === 'object' && connection !== null ? Reflect.get(connection, 'pending') : 0;
    return queued + (typeof pending === 'number' ? pending : 0);
  }
  const inProgress: unknown = Reflect.get(hci, '_handleAclsInProgress');
  if (typeof inProgress === 'object' && inProgress !== null) {
    const queued = countQueued(Reflect.get(hci, '_aclOutQueue'), handle);
    if (queued === undefined) return undefined;
    const pending: unknown = Reflect.get(inProgress, handle);
    return queued + (typeof pending === 'number' ? pending : 0);
  }
  return undefined;
}

const POLL_MS = 1;

/**
 * How many ACL packets of one connection the adapters let wait in the host before they take the next
 * write: a few PDUs' worth keeps the controller busy, while an unbounded queue let the relay loop hand
 * noble hundreds of writes in one go — starving the event loop of the controller's completion events, so
 * the first write after the state write reached the phone 150 ms late with 300 writes queued.
 */
export const MAX_UNSENT_ACL_PACKETS = 8;

/**
 * Resolves once `handle` has at most `limit` ACL packets unsent (0: drained, everything completed by the
 * controller), at once when the layout is unknown or the handle gone; rejects when `signal` aborts. Polled
 * on a short timer: the libraries emit nothing when a packet completes, and a timer lets the socket's
 * completion events in.
 */
export function whenAclBelow(
  hci: object | undefined,
  handle: number | undefined,
  limit: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const over = (): boolean => hci !== undefined && handle !== undefined && (unsentAclPackets(hci, handle) ?? 0) > limit;
  if (!over()) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const done = (): void => {
      clearInterval(poll);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      done();
      reject(new Error('BLE wait for the controller aborted'));
    };
    const poll = setInterval(() => {
      if (over()) return;
      done();
      resolve();
    }, POLL_MS);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Everything of `handle` has left the host and been completed by the controller (see whenAclBelow). */
export function whenAclDrained(hci: object | undefined, handle: number | undefined, signal: AbortSignal): Promise<void> {
  return whenAclBelow(hci, handle, 0, signal);
}
