/** Customers waiting for a session, woken when anything changes (a session armed, a failure, a stop). */
export class ChangeWaiters {
  private readonly waiters = new Set<() => void>();

  /** Resolves at the next change, after `ms`, or when `signal` aborts, whichever comes first. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }

  wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}
