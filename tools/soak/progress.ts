/**
 * The progress bar on stderr: on a terminal one line redrawn in place (at most ten times a second), else
 * (CI logs) a plain line every few per cent, so a log file stays short.
 */
import { performance } from 'node:perf_hooks';

export interface ProgressState {
  readonly done: number;
  readonly ok: number;
  readonly failed: number;
  readonly faults: number;
}

export type Goal = { readonly kind: 'runs'; readonly runs: number } | { readonly kind: 'minutes'; readonly minutes: number };

const WIDTH = 28;
const LINE_EVERY_PERCENT = 5;

function clock(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return h > 0
    ? `${h}:${String(m).padStart(2, '0')}:${String(r).padStart(2, '0')}`
    : `${String(m).padStart(2, '0')}:${String(r).padStart(2, '0')}`;
}

export class Progress {
  private readonly started = performance.now();
  private lastDraw = 0;
  private lastStep = -1;
  private drawn = false;

  constructor(
    private readonly goal: Goal,
    private readonly out: { readonly isTTY?: boolean; write(text: string): unknown },
  ) {}

  /** The fraction done, by runs or by time. */
  fraction(done: number): number {
    if (this.goal.kind === 'runs') return Math.min(1, done / this.goal.runs);
    return Math.min(1, (performance.now() - this.started) / (this.goal.minutes * 60_000));
  }

  update(state: ProgressState, force = false): void {
    const fraction = this.fraction(state.done);
    const elapsed = (performance.now() - this.started) / 1000;
    const rate = state.done / Math.max(elapsed, 0.001);
    const eta = fraction > 0 ? elapsed / fraction - elapsed : Number.NaN;
    const target = this.goal.kind === 'runs' ? `/${this.goal.runs}` : '';
    const text = `soak ${String(state.done)}${target} ${(fraction * 100).toFixed(0).padStart(3)}% ${rate.toFixed(2)}/s ok=${state.ok} failed=${state.failed} faults=${state.faults} elapsed ${clock(elapsed)} eta ${clock(eta)}`;
    if (this.out.isTTY === true) {
      const now = performance.now();
      if (!force && now - this.lastDraw < 100) return;
      this.lastDraw = now;
      const filled = Math.round(fraction * WIDTH);
      this.out.write(`\r[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${text}\u001b[K`);
      this.drawn = true;
      return;
    }
    const step = Math.floor((fraction * 100) / LINE_EVERY_PERCENT);
    if (!force && step === this.lastStep) return;
    this.lastStep = step;
    this.out.write(`${text}\n`);
  }

  /** Ends the redrawn line so what follows starts on a line of its own. */
  finish(): void {
    if (this.drawn) this.out.write('\n');
    this.drawn = false;
  }
}
