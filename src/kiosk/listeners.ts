/** A set of listeners and the unsubscribe each `add` returns. */
export class Listeners<T> {
  private readonly listeners = new Set<(value: T) => void>();

  add(listener: (value: T) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Calls every listener with `value`. With `failed`, one that throws is reported there and the rest are
   * still called; without it the throw reaches the caller (which then decides what a throw means).
   */
  notify(value: T, failed?: (error: unknown) => void): void {
    for (const listener of this.listeners) {
      if (!failed) {
        listener(value);
        continue;
      }
      try {
        listener(value);
      } catch (e) {
        failed(e);
      }
    }
  }
}
