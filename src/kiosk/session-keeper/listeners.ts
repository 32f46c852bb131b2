/** The keeper's listeners, called so that one that throws harms nothing. */
import type { Logger } from '../../platform/log.js';

/** Listeners run inside socket events: one that throws must neither crash the process nor stop the keeper. */
export function callSafely(log: Logger, call: () => void): void {
  try {
    call();
  } catch (e) {
    log.error({ event: 'keeper_listener_failed', detail: e instanceof Error ? e.message : 'unknown' }, 'status listener threw');
  }
}

export class Listeners<T> {
  private readonly listeners = new Set<(value: T) => void>();

  constructor(private readonly log: Logger) {}

  add(listener: (value: T) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(value: T): void {
    for (const listener of this.listeners) callSafely(this.log, () => listener(value));
  }
}
