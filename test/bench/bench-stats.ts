/**
 * Interval estimates for the benches' paired comparisons (issue 34): a kiosk path and its floor measured in
 * alternating rounds of one run, one ratio per round. The figure is the geometric mean of the per-round
 * ratios (a ratio and its inverse weigh alike), with a percentile bootstrap interval over rounds: rounds are
 * the unit that drifts with the machine's load, so they are what is resampled. Seeded, so a run's interval
 * can be reproduced from its printed seed.
 */
import { seededRandom } from '../support/seeded-random.js';

export { seededRandom };

export interface RatioInterval {
  /** Geometric mean of the per-round ratios (`meanInterval`: their mean). */
  readonly estimate: number;
  readonly low: number;
  readonly high: number;
  /** Confidence level of [low, high], e.g. 0.95. */
  readonly level: number;
  /** Rounds the interval is built from. */
  readonly rounds: number;
}

export interface IntervalOptions {
  readonly level?: number;
  readonly resamples?: number;
  readonly seed?: number;
}

function quantile(sorted: readonly number[], q: number): number {
  // Linear interpolation between order statistics (type 7, as R and NumPy default to).
  const at = (sorted.length - 1) * q;
  const lower = Math.floor(at);
  const upper = Math.ceil(at);
  const a = sorted[lower] ?? Number.NaN;
  const b = sorted[upper] ?? Number.NaN;
  return a + (b - a) * (at - lower);
}

/** Mean of per-round values (e.g. differences in ms) with a percentile bootstrap interval over rounds. */
export function meanInterval(values: readonly number[], options: IntervalOptions = {}): RatioInterval {
  const level = options.level ?? 0.95;
  const resamples = options.resamples ?? 10_000;
  if (values.length === 0) throw new Error('meanInterval: no rounds');
  if (!(level > 0 && level < 1)) throw new Error(`meanInterval: level ${level} is not in (0, 1)`);
  for (const v of values) if (!Number.isFinite(v)) throw new Error(`meanInterval: value ${v} is not a finite number`);
  const n = values.length;
  const random = seededRandom(options.seed ?? 1);
  const means = new Float64Array(resamples);
  for (let i = 0; i < resamples; i++) {
    let sum = 0;
    for (let j = 0; j < n; j++) sum += values[Math.floor(random() * n)] ?? 0;
    means[i] = sum / n;
  }
  means.sort();
  const tail = (1 - level) / 2;
  const sorted = Array.from(means);
  return {
    estimate: values.reduce((s, v) => s + v, 0) / n,
    low: quantile(sorted, tail),
    high: quantile(sorted, 1 - tail),
    level,
    rounds: n,
  };
}

/** Geometric mean of per-round ratios with a bootstrap interval; throws on no rounds or a ratio that is not positive. */
export function ratioInterval(ratios: readonly number[], options: IntervalOptions = {}): RatioInterval {
  if (ratios.length === 0) throw new Error('ratioInterval: no rounds');
  const logs = ratios.map((r) => {
    if (!(r > 0) || !Number.isFinite(r)) throw new Error(`ratioInterval: ratio ${r} is not a positive number`);
    return Math.log(r);
  });
  const interval = meanInterval(logs, options);
  return { ...interval, estimate: Math.exp(interval.estimate), low: Math.exp(interval.low), high: Math.exp(interval.high) };
}

/** `1.032 (95 % CI 1.011–1.054, 20 rounds)` */
export function describeInterval(interval: RatioInterval, digits = 3): string {
  const pct = Math.round(interval.level * 100);
  return `${interval.estimate.toFixed(digits)} (${pct} % CI ${interval.low.toFixed(digits)}–${interval.high.toFixed(digits)}, ${interval.rounds} rounds)`;
}
