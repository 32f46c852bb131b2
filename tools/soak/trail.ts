/**
 * The event trail: the last events of the soak (run plans, faults, the kiosk's phase changes, the
 * customer's actions, outcomes), kept in a ring so a night-long soak holds a fixed amount. Printed with
 * the seed when a run fails, it says what led there.
 */
import { performance } from 'node:perf_hooks';

export class Trail {
  private readonly entries: string[] = [];
  private readonly started = performance.now();

  constructor(private readonly capacity = 50) {}

  add(text: string): void {
    const at = ((performance.now() - this.started) / 1000).toFixed(3);
    this.entries.push(`${at.padStart(9)}s  ${text}`);
    if (this.entries.length > this.capacity) this.entries.shift();
  }

  lines(): readonly string[] {
    return this.entries;
  }
}
