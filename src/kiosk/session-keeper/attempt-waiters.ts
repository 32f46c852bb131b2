/**
 * Callers of "Retry now" with an answer, waiting for the arming attempt under way to end: each hears how it
 * ended, or that no answer came in time.
 */
import { sleep } from '../async-tools.js';
import type { RetryAttempt } from './keeper-types.js';

export type AttemptEnd = { readonly reachable: true } | { readonly reachable: false; readonly detail: string };

export interface AttemptWait {
  /** The attempt's end, or after `timeoutMs` without one (said as not reachable). */
  within(timeoutMs: number): Promise<AttemptEnd>;
  /** Not waiting after all (no attempt was started). */
  cancel(): void;
}

export class AttemptWaiters {
  private readonly waiters = new Set<(end: AttemptEnd) => void>();

  /** Starts listening before the attempt starts, so that an end that comes at once is not missed. */
  listen(): AttemptWait {
    let settle: ((end: AttemptEnd) => void) | undefined;
    const ended = new Promise<AttemptEnd>((resolve) => {
      settle = resolve;
      this.waiters.add(resolve);
    });
    const cancel = (): void => {
      if (settle) this.waiters.delete(settle);
    };
    return {
      cancel,
      within: async (timeoutMs) => {
        const controller = new AbortController();
        const timeout = sleep(timeoutMs, controller.signal).then(
          (): AttemptEnd => ({ reachable: false, detail: `no answer within ${Math.round(timeoutMs / 1_000)} s` }),
          (): AttemptEnd => ({ reachable: false, detail: 'stopped' }),
        );
        const end = await Promise.race([ended, timeout]);
        controller.abort();
        cancel();
        return end;
      },
    };
  }

  /** The attempt under way ended: every caller waiting hears how. */
  ended(end: AttemptEnd): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const waiter of waiters) waiter(end);
  }
}

/** What a caller is told of an attempt that was made at `at` and ended as `end`. */
export function attemptReport(at: number, end: AttemptEnd): RetryAttempt {
  return end.reachable ? { tried: true, at, reachable: true } : { tried: true, at, reachable: false, detail: end.detail.slice(0, 300) };
}
