/**
 * The soak's plan is a pure function of (seed, run number): a failure at run K replays with --from K.
 * Every fault appears in a long enough mix, each drawn on the path it can act on, with its parameters
 * inside the bounds that make its expected outcome definite.
 */
import { describe, expect, it } from 'vitest';
import { PHONE_PROFILE_NAMES, PHONE_PROFILES as PHONE_PROFILES_BY_NAME } from '../../../src/qa/sim/virtual-wallet/profiles.js';
import {
  CENTRAL_CLIENT_ONLY_PROFILES,
  FAULT_WEIGHTS,
  PHONE_PROFILES,
  planRun,
  type FaultKind,
  type PlanLimits,
  type RunPlan,
} from '../../../tools/soak/plan.js';
import { Prng } from '../../../tools/soak/prng.js';

const LIMITS: PlanLimits = { backendReplyMs: 3_000, bleIdleMs: 4_000, httpMs: 3_000, armWaitMs: 4_000, renewAfterIdleMs: 5_000 };

describe('Prng', () => {
  it('is deterministic per seed and run, and runs of one seed differ', () => {
    const a = Array.from({ length: 5 }, () => Prng.forRun(42, 7).nextUint32());
    expect(new Set(a).size).toBe(1);
    const first = Prng.forRun(42, 7);
    const again = Prng.forRun(42, 7);
    const seqA = Array.from({ length: 100 }, () => first.nextUint32());
    const seqB = Array.from({ length: 100 }, () => again.nextUint32());
    expect(seqA).toEqual(seqB);
    const starts = new Set(Array.from({ length: 1_000 }, (_, i) => Prng.forRun(42, i + 1).nextUint32()));
    expect(starts.size).toBe(1_000);
    expect(Prng.forRun(43, 7).nextUint32()).not.toBe(seqA[0]);
  });

  it('int() stays within its bounds and reaches both ends; weighted() follows the weights', () => {
    const rng = new Prng(1);
    const seen = new Set<number>();
    for (let i = 0; i < 2_000; i++) {
      const v = rng.int(3, 7);
      expect(v).toBeGreaterThanOrEqual(3);
      expect(v).toBeLessThanOrEqual(7);
      seen.add(v);
    }
    expect([...seen].sort()).toEqual([3, 4, 5, 6, 7]);
    const counts = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < 20_000; i++) counts[rng.weighted({ a: 1, b: 3, c: 0 })]++;
    expect(counts.c).toBe(0);
    expect(counts.b / counts.a).toBeGreaterThan(2.5);
    expect(counts.b / counts.a).toBeLessThan(3.5);
    expect(() => rng.weighted({ a: 0 })).toThrow(RangeError);
  });
});

describe('planRun', () => {
  const plans: RunPlan[] = Array.from({ length: 5_000 }, (_, i) => planRun(12345, i + 1, LIMITS));

  it('replays: the same seed and run number give the same plan, whatever was planned before', () => {
    expect(planRun(12345, 3_217, LIMITS)).toEqual(plans[3_216]);
    expect(planRun(12346, 3_217, LIMITS)).not.toEqual(plans[3_216]);
  });

  it('meets every fault, both engagements, every phone profile and every request profile in 5,000 runs', () => {
    const kinds = new Set(plans.map((p) => p.fault.kind));
    expect([...kinds].sort()).toEqual((Object.keys(FAULT_WEIGHTS) as FaultKind[]).sort());
    const flows = new Set(plans.map((p) => `${p.flow.engagement}/${p.flow.phone}`));
    expect([...flows].sort()).toEqual(PHONE_PROFILE_NAMES.flatMap((phone) => [`nfc/${phone}`, `qr/${phone}`]).sort());
    expect(new Set(plans.map((p) => p.flow.profile)).size).toBe(4);
    expect(plans.some((p) => p.flow.deviceAuth === 'mac')).toBe(true);
    expect(plans.some((p) => p.flow.portrait === 'jpeg2000')).toBe(true);
    const drops = plans.flatMap((p) => (p.fault.kind === 'socket_drop' ? [`${p.fault.phase}/${p.fault.how}`] : []));
    expect(new Set(drops).size).toBe(10);
  });

  it('draws each fault on a path it can act on, with parameters that make its outcome definite', () => {
    for (const { flow, fault } of plans) {
      if (fault.kind === 'field_drop' || fault.kind === 'card_lifted' || fault.kind === 'pcscd_restart_run')
        expect(flow.engagement).toBe('nfc');
      if (fault.kind === 'socket_drop' && (fault.phase === 'nfc_handover' || fault.phase === 'awaiting_card'))
        expect(flow.engagement).toBe('nfc');
      if (fault.kind === 'wrong_ident') expect(CENTRAL_CLIENT_ONLY_PROFILES).toContain(flow.phone);
      if (fault.kind === 'backend_slow') expect(fault.delayMs).toBeLessThanOrEqual(LIMITS.backendReplyMs / 10);
      if (fault.kind === 'backend_stall') expect(fault.delayMs).toBeGreaterThan(LIMITS.backendReplyMs);
      if (fault.kind === 'phone_slow') expect(fault.delayMs).toBeLessThan(LIMITS.bleIdleMs);
      if (fault.kind === 'phone_too_slow') expect(fault.delayMs).toBeGreaterThan(LIMITS.bleIdleMs);
      if (fault.kind === 'backend_offline_tap') expect(fault.forMs).toBeGreaterThan(LIMITS.armWaitMs);
      if (fault.kind === 'backend_slow_http') expect(fault.delayMs).toBeLessThan(LIMITS.httpMs);
    }
  });
});

describe("the soak's phone mix", () => {
  it('holds every profile of the virtual wallet', () => {
    expect([...PHONE_PROFILES].sort()).toEqual([...PHONE_PROFILE_NAMES].sort());
  });

  it('sends a wrong-Ident fault only to phones whose every engagement ends in mdoc central client mode', () => {
    const centralOnly = PHONE_PROFILE_NAMES.filter((name) => {
      const { peripheralServer, centralClient } = PHONE_PROFILES_BY_NAME[name].bleModes;
      return centralClient && !peripheralServer;
    });
    expect([...CENTRAL_CLIENT_ONLY_PROFILES].sort()).toEqual(centralOnly.sort());
    const wrongIdentPhones = new Set(
      Array.from({ length: 5_000 }, (_, i) => planRun(777, i + 1, LIMITS)).flatMap((p) =>
        p.fault.kind === 'wrong_ident' ? [p.flow.phone] : [],
      ),
    );
    expect([...wrongIdentPhones].sort()).toEqual([...CENTRAL_CLIENT_ONLY_PROFILES].sort());
  });
});
