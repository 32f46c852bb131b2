/**
 * Hands card presences to waiting `nextCard` calls. Each presence is handed out once, so a phone left on the
 * reader after its verification is not engaged again until it has been removed ("remove your phone").
 */
import { abortedError } from '../shared/abort.js';
import type { Presence } from './reader-state.js';

interface PresenceWaiter {
  readonly resolve: (presence: Presence) => void;
  readonly reject: (error: Error) => void;
}

export class PresenceHandout {
  private readonly waiters = new Set<PresenceWaiter>();

  /** `current`: the presence on the reader in use now, if any. */
  constructor(private readonly current: () => Presence | undefined) {}

  /** The next presence not handed out yet: the one there now, or the next to begin; rejects when `signal` aborts. */
  take(signal: AbortSignal): Promise<Presence> {
    if (signal.aborted) return Promise.reject(abortedError('NFC nextCard'));
    const ready = this.offerable();
    if (ready) {
      ready.handedOut = true; // at once: a concurrent call must not get the same presence
      return Promise.resolve(ready);
    }
    return new Promise<Presence>((resolve, reject) => {
      const onAbort = (): void => {
        this.waiters.delete(waiter);
        reject(abortedError('NFC nextCard'));
      };
      const waiter: PresenceWaiter = {
        resolve: (presence) => {
          signal.removeEventListener('abort', onAbort);
          resolve(presence);
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      this.waiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Hands a new presence to one waiting `take`. */
  offer(): void {
    const presence = this.offerable();
    if (!presence) return;
    const [waiter] = this.waiters;
    if (!waiter) return;
    this.waiters.delete(waiter);
    presence.handedOut = true;
    waiter.resolve(presence);
  }

  /** Fails every waiting `take` (the adapter closes). */
  rejectAll(message: string): void {
    for (const waiter of [...this.waiters]) waiter.reject(new Error(message));
    this.waiters.clear();
  }

  private offerable(): Presence | undefined {
    const presence = this.current();
    return presence && !presence.removed && !presence.handedOut ? presence : undefined;
  }
}
