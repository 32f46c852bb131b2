/**
 * A callback-style native call with a time bound. PC/SC calls can block without end (a mute card on vpcd
 * never answers: vpcd's driver blocks in recv(), frankmorgner/vsmartcard `ifd-vpcd.c`), so the adapter never waits on the binding alone.
 */
import type { BindingCallbackError } from './pcsc-binding.js';

export class NativeCallTimeout extends Error {
  override readonly name = 'NativeCallTimeout';
}

export interface NativeCallOptions<T> {
  readonly timeoutMs: number;
  readonly what: string;
  /** Called with the result of a call that completed after it had timed out (e.g. to drop a late handle). */
  readonly onLateSuccess?: (value: T) => void;
}

/**
 * Runs `start(callback)`; resolves with the callback's value, rejects with its error, with what `start`
 * throws synchronously, or with {@link NativeCallTimeout} after `timeoutMs`.
 */
export function nativeCall<T>(
  start: (done: (error: BindingCallbackError, value?: T) => void) => void,
  options: NativeCallOptions<T>,
): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      reject(new NativeCallTimeout(`${options.what} did not complete within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    const done = (error: BindingCallbackError, value?: T): void => {
      if (settled) {
        if (!error && value !== undefined) options.onLateSuccess?.(value);
        return;
      }
      settled = true;
      clearTimeout(timer);
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve(value);
    };
    try {
      start(done);
    } catch (e) {
      done(e instanceof Error ? e : new Error(String(e)));
    }
  });
}
