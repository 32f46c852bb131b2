/**
 * When to start the radio process again after it stopped: half to all of
 * min(`restartMaxMs`, `restartMinMs` × 2^(failures−1)), so a child that dies at once is never restarted in a
 * tight loop; a child that lived `healthyMs` was healthy and the next failure starts again from the shortest wait.
 */
export interface RestartBackoffSettings {
  readonly restartMinMs: number;
  readonly restartMaxMs: number;
  readonly healthyMs: number;
  /** Jitter source in [0, 1). */
  readonly random: () => number;
}

export class RestartBackoff {
  private failures = 0;
  private startedAt = 0;

  constructor(private readonly settings: RestartBackoffSettings) {}

  /** A child was started at `now`. */
  started(now: number): void {
    this.startedAt = now;
  }

  /** The child stopped at `now`: how long to wait before starting the next. */
  delayAfterStop(now: number): number {
    if (now - this.startedAt >= this.settings.healthyMs) this.failures = 0;
    this.failures += 1;
    const ceiling = Math.min(this.settings.restartMaxMs, this.settings.restartMinMs * 2 ** Math.min(this.failures - 1, 30));
    // Equal jitter: at least half the ceiling, so kiosks restarted together do not stay in step.
    return Math.round(ceiling / 2 + (this.settings.random() * ceiling) / 2);
  }
}
