/** The radio process's restart wait alone (src/devices/shared/restart-backoff.ts): pure, time passed in. */
import { describe, expect, it } from 'vitest';
import { RestartBackoff } from '../../../../src/devices/shared/restart-backoff.js';

const settings = (random: number) => ({ restartMinMs: 500, restartMaxMs: 30_000, healthyMs: 60_000, random: () => random });

describe('RestartBackoff', () => {
  it('waits half to all of a ceiling that doubles per failure from restartMinMs, bounded by restartMaxMs', () => {
    const low = new RestartBackoff(settings(0));
    const high = new RestartBackoff(settings(0.999_999));
    low.started(0);
    high.started(0);
    const lows = Array.from({ length: 9 }, () => low.delayAfterStop(1));
    const highs = Array.from({ length: 9 }, () => high.delayAfterStop(1));
    expect(lows).toEqual([250, 500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]);
    expect(highs).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('a child that lived healthyMs was healthy: the next failure starts from the shortest wait again', () => {
    const backoff = new RestartBackoff(settings(0.999_999));
    backoff.started(0);
    expect(backoff.delayAfterStop(10)).toBe(500);
    backoff.started(1_000);
    expect(backoff.delayAfterStop(1_010)).toBe(1_000);
    backoff.started(2_000);
    expect(backoff.delayAfterStop(62_000)).toBe(500);
  });
});
