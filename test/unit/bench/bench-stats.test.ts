import { describe, expect, it } from 'vitest';
import { describeInterval, meanInterval, ratioInterval, seededRandom } from '../../bench/bench-stats.js';

describe('ratioInterval', () => {
  it('gives the geometric mean, and a zero-width interval when every round agrees', () => {
    const interval = ratioInterval([1.04, 1.04, 1.04, 1.04]);
    expect(interval.estimate).toBeCloseTo(1.04, 12);
    expect(interval.low).toBeCloseTo(1.04, 12);
    expect(interval.high).toBeCloseTo(1.04, 12);
    expect(interval.rounds).toBe(4);
  });

  it('weighs a ratio and its inverse alike', () => {
    expect(ratioInterval([2, 0.5]).estimate).toBeCloseTo(1, 12);
  });

  it('covers the true ratio of noisy rounds about as often as it claims', () => {
    // 200 simulated runs of 20 rounds, log-normal noise around a true ratio of 1.03.
    const random = seededRandom(7);
    const normal = (): number => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    let covered = 0;
    for (let run = 0; run < 200; run++) {
      const rounds = Array.from({ length: 20 }, () => 1.03 * Math.exp(0.08 * normal()));
      const { low, high } = ratioInterval(rounds, { resamples: 2_000, seed: run + 1 });
      if (low <= 1.03 && 1.03 <= high) covered++;
    }
    // A percentile bootstrap on 20 rounds is a little narrow; it must still be close to its 95 %.
    expect(covered / 200).toBeGreaterThan(0.88);
    expect(covered / 200).toBeLessThan(0.99);
  });

  it('is wider for noisier rounds and narrower for more of them', () => {
    const base = [0.98, 1.06, 1.01, 1.1, 0.95, 1.04, 1.02, 1.07];
    const noisier = base.map((r) => r ** 3);
    const width = (rs: number[]): number => {
      const i = ratioInterval(rs);
      return Math.log(i.high) - Math.log(i.low);
    };
    expect(width(noisier)).toBeGreaterThan(width(base) * 2);
    expect(width([...base, ...base, ...base, ...base])).toBeLessThan(width(base));
  });

  it('is the same for the same seed', () => {
    const rounds = [1.01, 1.2, 0.9, 1.05, 1.1];
    expect(ratioInterval(rounds, { seed: 42 })).toEqual(ratioInterval(rounds, { seed: 42 }));
  });

  it('refuses no rounds, a ratio that is not positive, and a level outside (0, 1)', () => {
    expect(() => ratioInterval([])).toThrow(/no rounds/);
    expect(() => ratioInterval([1, 0])).toThrow(/not a positive number/);
    expect(() => ratioInterval([1, Number.NaN])).toThrow(/not a positive number/);
    expect(() => ratioInterval([1], { level: 1 })).toThrow(/level/);
  });

  it('prints the estimate with its interval', () => {
    expect(describeInterval({ estimate: 1.0321, low: 1.011, high: 1.0544, level: 0.95, rounds: 20 })).toBe(
      '1.032 (95 % CI 1.011–1.054, 20 rounds)',
    );
  });
});

describe('meanInterval', () => {
  it('gives the mean of per-round differences and an interval around it', () => {
    const rounds = [0.12, 0.14, 0.13, 0.15, 0.11, 0.13];
    const interval = meanInterval(rounds, { seed: 3 });
    expect(interval.estimate).toBeCloseTo(0.13, 12);
    expect(interval.low).toBeLessThan(0.13);
    expect(interval.high).toBeGreaterThan(0.13);
    expect(interval.low).toBeGreaterThanOrEqual(0.11);
    expect(interval.high).toBeLessThanOrEqual(0.15);
  });

  it('takes negative values (a kiosk faster than its floor) and refuses what is not finite', () => {
    expect(meanInterval([-0.01, -0.03]).estimate).toBeCloseTo(-0.02, 12);
    expect(() => meanInterval([0.1, Number.POSITIVE_INFINITY])).toThrow(/not a finite number/);
    expect(() => meanInterval([])).toThrow(/no rounds/);
  });
});
