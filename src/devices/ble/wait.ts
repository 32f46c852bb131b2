/** Bounded waits for the noble adapter: every wait ends on abort or after its own bound, leaving nothing behind. */
import { abortedError } from '../shared/abort.js';

export interface Bound {
  readonly signal: AbortSignal;
  readonly ms: number;
  /** Names the operation in the abort error. */
  readonly what: string;
  readonly onTimeout: () => Error;
}

/**
 * Settles with `promise`, or rejects with an abort error as soon as the signal aborts, or with
 * `onTimeout()` after `ms`. The timer and the abort listener are removed either way; the caller is
 * responsible for undoing the operation behind `promise` (its late rejection is swallowed here).
 */
export function bounded<T>(promise: Promise<T>, bound: Bound): Promise<T> {
  promise.catch(() => undefined);
  if (bound.signal.aborted) return Promise.reject(abortedError(bound.what));
  return new Promise<T>((resolve, reject) => {
    const finish = (): void => {
      clearTimeout(timer);
      bound.signal.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      finish();
      reject(abortedError(bound.what));
    };
    const timer = setTimeout(() => {
      finish();
      reject(bound.onTimeout());
    }, bound.ms);
    bound.signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        finish();
        resolve(value);
      },
      (error: unknown) => {
        finish();
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** Resolves after `ms`, or rejects at once when the signal aborts. */
export function delay(ms: number, signal: AbortSignal, what: string): Promise<void> {
  return bounded(new Promise<never>(() => undefined), { signal, ms, what, onTimeout: () => new Error('elapsed') }).catch((e: unknown) => {
    if (signal.aborted) throw e;
  });
}

/** Waits for `promise` at most `ms` (its outcome is ignored); never rejects. */
export async function settleWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
