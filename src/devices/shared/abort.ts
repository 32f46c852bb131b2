/** Abort helpers shared by the device adapters. */
import { errorText } from '../../common/error-text.js';

export class DeviceAbortError extends Error {
  override readonly name = 'AbortError';
}

export function abortedError(what: string): DeviceAbortError {
  return new DeviceAbortError(`${what}: aborted`);
}

/** Reads `signal.aborted` afresh (TypeScript keeps the narrowing of an earlier check across awaits). */
export function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** The message of anything thrown, for setup errors and logs. */
export const errorMessage = (e: unknown): string => errorText(e);

/** Rejects with an abort error as soon as `signal` aborts; the listener is removed either way. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal, what: string): Promise<T> {
  if (signal.aborted) return Promise.reject(abortedError(what));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortedError(what));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
