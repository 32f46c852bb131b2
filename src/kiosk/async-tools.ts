/** Small async helpers with explicit cancellation, so no wait of the relay is unbounded or left running. */

export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

export class AbortedError extends Error {
  override readonly name = 'AbortedError';
}

/**
 * Resolves or rejects with `promise`, or rejects with {@link TimeoutError} after `ms`, or with
 * {@link AbortedError} when `signal` aborts. The timer and the listener are always removed.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, signal: AbortSignal, what: string): Promise<T> {
  if (signal.aborted) return Promise.reject(new AbortedError(`${what}: aborted`));
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new TimeoutError(`${what}: no result within ${ms} ms`));
    }, ms);
    const onAbort = (): void => {
      cleanup();
      reject(new AbortedError(`${what}: aborted`));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (error: unknown) => {
        cleanup();
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** Waits `ms`; rejects with {@link AbortedError} when `signal` aborts first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(new AbortedError('sleep aborted'));
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new AbortedError('sleep aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** First-in first-out queue with one asynchronous consumer. */
export class AsyncQueue<T> {
  private readonly items: T[] = [];
  private waiter: ((item: T) => void) | undefined;

  push(item: T): void {
    const waiter = this.waiter;
    if (waiter) {
      this.waiter = undefined;
      waiter(item);
    } else {
      this.items.push(item);
    }
  }

  get size(): number {
    return this.items.length;
  }

  /** Next item; rejects with {@link AbortedError} when `signal` aborts. */
  shift(signal: AbortSignal): Promise<T> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift() as T);
    if (signal.aborted) return Promise.reject(new AbortedError('queue wait aborted'));
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => {
        this.waiter = undefined;
        reject(new AbortedError('queue wait aborted'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiter = (item) => {
        signal.removeEventListener('abort', onAbort);
        resolve(item);
      };
    });
  }
}

/** A promise with its settle functions, for handing a result across callbacks. */
export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: Error) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * A timeout re-armed for every message at the cost of reading the clock. The timer itself is set once
 * and, when it wakes, checks the latest deadline and sleeps again if the deadline moved: with messages
 * much more frequent than the timeout it wakes about once per timeout period instead of being
 * rescheduled per message.
 */
export class LazyDeadline {
  private timer: NodeJS.Timeout | undefined;
  /** When the pending timer wakes (performance.now time). */
  private wakeAt = Number.POSITIVE_INFINITY;
  private due = Number.POSITIVE_INFINITY;
  private onExpire: (() => void) | undefined;

  arm(ms: number, onExpire: () => void): void {
    const now = performance.now();
    this.due = now + ms;
    this.onExpire = onExpire;
    // A wake later than the new deadline would fire late: move it earlier.
    if (this.timer && this.wakeAt > this.due) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (!this.timer) this.schedule(ms, now);
  }

  disarm(): void {
    this.onExpire = undefined;
  }

  dispose(): void {
    this.onExpire = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number, now: number): void {
    this.wakeAt = now + ms;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.check();
    }, ms);
  }

  private check(): void {
    const expire = this.onExpire;
    if (!expire) return; // disarmed: stay asleep until armed again
    const now = performance.now();
    const left = this.due - now;
    if (left > 0) {
      this.schedule(Math.ceil(left), now);
      return;
    }
    this.onExpire = undefined;
    expire();
  }
}
