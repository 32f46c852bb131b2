/**
 * One device operation of a verification (a scan, a connect, an APDU, a BLE write) under a timeout, tied
 * to the attempt: it stops when the attempt ends, and what it produces too late is released.
 */
import { AbortedError, withTimeout } from '../async-tools.js';

export interface DeviceOperationOptions<T> {
  /** Releases what the operation produced after it was given up on (a link, a session, a card). */
  readonly dispose?: (late: T) => Promise<void>;
  /** Keeps the operation's signal tied to the attempt after success, for a result that goes on using it. */
  readonly keepSignal?: boolean;
}

/**
 * Runs `operation` with its own signal, aborted when `runSignal` aborts or `ms` pass, so an adapter that is
 * still scanning or connecting stops at once. Rejects with the timeout's error (`withTimeout`), the
 * operation's own, or `whenAborted()` when `runSignal` aborted it.
 */
export async function runDeviceOperation<T>(
  runSignal: AbortSignal,
  operation: (signal: AbortSignal) => Promise<T>,
  ms: number,
  what: string,
  options: DeviceOperationOptions<T>,
  whenAborted: () => Error,
): Promise<T> {
  const op = new AbortController();
  const onRunAbort = (): void => op.abort();
  runSignal.addEventListener('abort', onRunAbort, { once: true });
  let pending: Promise<T>;
  try {
    pending = operation(op.signal);
  } catch (e) {
    // An adapter that throws instead of rejecting.
    pending = Promise.reject(e instanceof Error ? e : new Error(String(e)));
  }
  try {
    const result = await withTimeout(pending, ms, runSignal, what);
    // What the operation produced (a link, a session) may keep using its signal until the attempt ends;
    // anything else lets go of the listener now (one per BLE write would pile up otherwise).
    if (!options.keepSignal) runSignal.removeEventListener('abort', onRunAbort);
    return result;
  } catch (e) {
    op.abort();
    runSignal.removeEventListener('abort', onRunAbort);
    const { dispose } = options;
    if (dispose) pending.then(dispose).catch(() => undefined);
    else pending.catch(() => undefined);
    if (e instanceof AbortedError) throw whenAborted();
    throw e;
  }
}
