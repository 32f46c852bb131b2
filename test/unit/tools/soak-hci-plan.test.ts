import { describe, expect, it } from 'vitest';
import { describeHciPlan, planHciRun } from '../../../tools/soak/hci-lane.js';

describe('the soak HCI lane plan', () => {
  it('is the seed and the run index alone (a failure replays), and covers both roles, both engagements and drops', () => {
    expect(planHciRun(42, 70)).toEqual(planHciRun(42, 70));
    const plans = Array.from({ length: 200 }, (_, i) => planHciRun(20261127, (i + 1) * 10));
    expect(new Set(plans.map((p) => p.phone))).toEqual(new Set(['android', 'iphone']));
    expect(new Set(plans.map((p) => p.engagement))).toEqual(new Set(['qr', 'nfc']));
    const drops = plans.filter((p) => p.drop).length;
    expect(drops).toBeGreaterThan(10);
    expect(drops).toBeLessThan(80);
    expect(describeHciPlan({ phone: 'iphone', engagement: 'nfc', drop: true })).toBe('hci nfc/iphone ble_drop');
  });
});
