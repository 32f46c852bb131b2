/**
 * The retry policy alone (src/kiosk/retry-policy.ts): no timers, no keeper; the time is a number the test
 * moves and the random source is scripted, so every decision is checked exactly.
 */
import { describe, expect, it } from 'vitest';
import type { BackendFailure, BackendFailureKind } from '../../src/kiosk/backend-failure.js';
import { BACKEND_FAILURE_KINDS } from '../../src/kiosk/backend-failure.js';
import {
  HEALTHY_AFTER_MS,
  RetryPolicy,
  STAFF_AFTER,
  WINDOW_MS,
  backoff,
  failureClass,
  fullJitter,
  slowPace,
  slowPaceText,
  type RetrySettings,
} from '../../src/kiosk/retry-policy.js';

const SETTINGS: RetrySettings = { backoffMinMs: 1_000, backoffMaxMs: 30_000, conflictBackoffMs: 250, maxRequestsPerMinute: 20 };
const MAX = (): number => 0.999_999;
const MIN = (): number => 0;

function failure(kind: BackendFailureKind, extra: Partial<BackendFailure> = {}): BackendFailure {
  return { kind, stage: 'handshake', detail: `a ${kind}`, ...extra };
}

function policy(random: () => number = MAX, settings: RetrySettings = SETTINGS): RetryPolicy {
  return new RetryPolicy(() => settings, random);
}

function delayOf(decision: ReturnType<RetryPolicy['onFailure']>): number {
  if (decision.action !== 'retry') throw new Error(`expected a retry, got ${decision.action}`);
  return decision.delayMs;
}

describe('full jitter (AWS "Exponential Backoff and Jitter")', () => {
  it('draws uniformly in [0, min(cap, base·2^(n−1))], both ends included', () => {
    expect(fullJitter(1, 1_000, 30_000, MIN)).toBe(0);
    expect(fullJitter(1, 1_000, 30_000, MAX)).toBe(1_000);
    expect(fullJitter(3, 1_000, 30_000, MAX)).toBe(4_000);
    expect(fullJitter(6, 1_000, 30_000, MAX)).toBe(30_000);
    expect(fullJitter(500, 1_000, 30_000, MAX)).toBe(30_000);
    expect(fullJitter(2, 1_000, 30_000, () => 0.5)).toBe(1_000);
  });

  it('the slow pace is in [cap/2, cap]', () => {
    expect(slowPace(30_000, MIN)).toBe(15_000);
    expect(slowPace(30_000, MAX)).toBe(30_000);
  });

  it('a thousand kiosks failing together spread their next attempt over the whole window', () => {
    const draws = Array.from({ length: 1_000 }, () => fullJitter(6, 1_000, 30_000, Math.random));
    const perSecond = new Array<number>(31).fill(0);
    for (const d of draws) perSecond[Math.floor(d / 1_000)] = (perSecond[Math.floor(d / 1_000)] ?? 0) + 1;
    // Uniform over 30 s is ~33 a second; 80 (8 %) would take a very unlucky draw.
    expect(Math.max(...perSecond)).toBeLessThan(80);
  });
});

describe('decisions by kind', () => {
  it('every kind has a class, and only refused credentials stop the retries', () => {
    for (const kind of BACKEND_FAILURE_KINDS) {
      const decision = policy().onFailure(failure(kind), 0);
      expect(decision.action, kind).toBe(kind === 'credentials_refused' ? 'stop' : 'retry');
    }
  });

  it('transient failures back off exponentially to the cap and say offline', () => {
    const p = policy();
    const delays = [1, 2, 3, 4, 5, 6, 7].map((i) => {
      const d = p.onFailure(failure('unreachable'), i);
      expect(d.action === 'retry' && d.standing).toBe('offline');
      return delayOf(d);
    });
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(p.consecutive).toBe(7);
  });

  it('once the ceiling reaches the cap the wait is in [cap/2, cap], never shorter (a fleet at the cap returns at 4.4 %/s, not 6.7 %/s)', () => {
    const p = policy(MIN);
    const delays = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => delayOf(p.onFailure(failure('unreachable'), i)));
    expect(delays).toEqual([0, 0, 0, 0, 0, 15_000, 15_000, 15_000]);
    expect(backoff(5, 1_000, 30_000, MAX)).toBe(16_000);
    expect(backoff(6, 1_000, 30_000, MIN)).toBe(15_000);
    expect(backoff(6, 1_000, 30_000, MAX)).toBe(30_000);
  });

  it("the backend's return: an ordinary ending right after it was away (a 404 on the old session) comes within [0, base], still counted", () => {
    const p = policy();
    p.onFailure(failure('socket_lost'), 0); // the outage begins: the ordinary ending is used
    for (let i = 1; i <= 8; i++) p.onFailure(failure('unreachable'), i);
    const back = p.onFailure(failure('session_gone', { status: 404 }), 9);
    expect(back).toMatchObject({ action: 'retry', delayMs: 1_000, standing: 'recovering', consecutive: 9 });
    // Not twice: the next ending follows an ending, not an absence.
    expect(delayOf(p.onFailure(failure('socket_lost'), 10))).toBe(30_000);
    // And a cycle of absence and ending never runs fast: the absences keep their full backoff.
    expect(delayOf(p.onFailure(failure('unreachable'), 11))).toBe(30_000);
  });

  it('a silent backend (not_answering) is an absence: offline from the first one, exponential backoff, never the free ordinary ending', () => {
    const p = policy();
    const first = p.onFailure(failure('not_answering', { stage: 'socket' }), 0);
    expect(first).toMatchObject({ action: 'retry', delayMs: 1_000, standing: 'offline', consecutive: 1 });
    const delays = [1, 2, 3, 4, 5].map((i) => delayOf(p.onFailure(failure(i % 2 === 0 ? 'not_answering' : 'timeout'), i)));
    expect(delays).toEqual([2_000, 4_000, 8_000, 16_000, 30_000]);
    // When it answers again, its 404 for the old session is its return: within [0, base], still counted.
    expect(p.onFailure(failure('session_gone', { status: 404 }), 7)).toMatchObject({
      standing: 'recovering',
      delayMs: 1_000,
      consecutive: 7,
    });
    expect(failureClass('not_answering')).toBe('transient');
  });

  it('failures of different kinds share one streak: switching kinds does not restart the backoff', () => {
    const p = policy();
    const kinds: BackendFailureKind[] = ['unreachable', 'server_error', 'timeout', 'bad_response', 'rate_limited'];
    expect(kinds.map((k, i) => delayOf(p.onFailure(failure(k), i)))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000]);
  });

  it('an ordinary ending is let through once, within [0, base], without counting as a failure', () => {
    for (const kind of ['session_gone', 'secret_expired', 'socket_lost', 'idle_error', 'idle_violation', 'verification_failed'] as const) {
      const p = policy();
      const first = p.onFailure(failure(kind), 0);
      expect(first).toMatchObject({ action: 'retry', delayMs: 1_000, standing: 'recovering', consecutive: 0 });
      // A second one before the backend proved healthy is a failure like any other.
      const second = p.onFailure(failure(kind), 10);
      expect(second).toMatchObject({ action: 'retry', delayMs: 1_000, standing: 'recovering', consecutive: 1 });
      const third = p.onFailure(failure(kind), 20);
      expect(third).toMatchObject({ action: 'retry', delayMs: 2_000, standing: 'offline', consecutive: 2 });
    }
  });

  it('health restores the ordinary ending and ends the streak', () => {
    const p = policy();
    p.onFailure(failure('socket_lost'), 0);
    p.onFailure(failure('socket_lost'), 1);
    p.onFailure(failure('unreachable'), 2);
    expect(p.consecutive).toBe(2);
    p.onHealthy();
    expect(p.consecutive).toBe(0);
    expect(p.onFailure(failure('socket_lost'), 3)).toMatchObject({ standing: 'recovering', consecutive: 0 });
  });

  it(`a gateway refusing the session socket is shown to staff after ${STAFF_AFTER} in a row, then probed at the slowest pace`, () => {
    const p = policy(MIN);
    const standings = Array.from({ length: 6 }, (_, i) => p.onFailure(failure('socket_refused', { status: 404 }), i));
    expect(standings.map((d) => d.action === 'retry' && d.standing)).toEqual([
      'offline',
      'offline',
      'needs_staff',
      'needs_staff',
      'needs_staff',
      'needs_staff',
    ]);
    // Slow pace: never sooner than half the cap, whatever the random draw.
    expect(standings.slice(2).map(delayOf)).toEqual([15_000, 15_000, 15_000, 15_000]);
  });

  it('another kind of failure between two refusals starts the count for staff again', () => {
    const p = policy();
    p.onFailure(failure('api_rejected'), 0);
    p.onFailure(failure('api_rejected'), 1);
    p.onFailure(failure('unreachable'), 2);
    expect(p.onFailure(failure('api_rejected'), 3)).toMatchObject({ standing: 'offline' });
  });

  it('an untrusted certificate is slow from the first failure and stays "offline" (its code names it)', () => {
    const d = policy(MIN).onFailure(failure('tls'), 0);
    expect(d).toMatchObject({ action: 'retry', standing: 'offline', delayMs: 15_000 });
  });

  it('409s back off from conflictBackoffMs and say "recovering" (the backend answers)', () => {
    const p = policy();
    const delays = [0, 1, 2].map((t) => p.onFailure(failure('conflict'), t));
    expect(delays.map(delayOf)).toEqual([250, 500, 1_000]);
    expect(delays.every((d) => d.action === 'retry' && d.standing === 'recovering')).toBe(true);
  });

  it('Retry-After is honoured when longer, and capped at the longest backoff', () => {
    expect(delayOf(policy(MIN).onFailure(failure('rate_limited', { retryAfterMs: 7_000 }), 0))).toBe(7_000);
    expect(delayOf(policy(MIN).onFailure(failure('server_error', { retryAfterMs: 300_000 }), 0))).toBe(30_000);
    expect(delayOf(policy(MAX).onFailure(failure('server_error', { retryAfterMs: 10 }), 0))).toBe(1_000);
  });
});

describe(`the request budget (at most maxRequestsPerMinute in any ${WINDOW_MS} ms)`, () => {
  it('admits the budget at once, then the next request only when the oldest left the window', () => {
    const p = policy();
    for (let i = 0; i < SETTINGS.maxRequestsPerMinute; i++) {
      expect(p.admissionDelay(i * 100)).toBe(0);
      p.recordRequest(i * 100);
    }
    expect(p.admissionDelay(2_000)).toBe(WINDOW_MS - 2_000);
    expect(p.admissionDelay(WINDOW_MS - 1)).toBe(1);
    expect(p.admissionDelay(WINDOW_MS)).toBe(0);
    p.recordRequest(WINDOW_MS);
    // The second-oldest (t = 100) is now the one that must leave.
    expect(p.admissionDelay(WINDOW_MS)).toBe(100);
  });

  it('requests admitted one at a time, as fast as allowed, never exceed the budget in any window', () => {
    const p = policy();
    const times: number[] = [];
    let now = 0;
    while (now < 10 * WINDOW_MS) {
      now += p.admissionDelay(now);
      p.recordRequest(now);
      times.push(now);
      now += 1;
    }
    for (let i = 0; i < times.length; i++) {
      const start = times[i] ?? 0;
      const inWindow = times.filter((t) => t >= start && t < start + WINDOW_MS).length;
      expect(inWindow).toBeLessThanOrEqual(SETTINGS.maxRequestsPerMinute);
    }
  });

  it('the report names the last failure, the streak, totals by kind and the budget in use', () => {
    const p = policy();
    p.onFailure(failure('unreachable', { detail: 'POST /sessions: ECONNREFUSED', stage: 'create' }), 5);
    p.onFailure(failure('socket_refused', { status: 404, detail: 'refused (HTTP 404)' }), 6);
    p.recordRequest(6);
    expect(p.report(7)).toEqual({
      lastFailure: { kind: 'socket_refused', stage: 'handshake', status: 404, detail: 'refused (HTTP 404)', at: 6 },
      consecutive: 2,
      totals: { unreachable: 1, socket_refused: 1 },
      requestsLastMinute: 1,
      maxRequestsPerMinute: 20,
    });
    expect(p.report(6 + WINDOW_MS).requestsLastMinute).toBe(0);
  });
});

it('classes: what only staff can fix is a configuration failure; endings are not failures the first time', () => {
  expect(failureClass('socket_refused')).toBe('configuration');
  expect(failureClass('api_rejected')).toBe('configuration');
  expect(failureClass('proxy_refused')).toBe('configuration');
  expect(failureClass('session_gone')).toBe('ending');
  expect(failureClass('credentials_refused')).toBe('permanent');
  expect(HEALTHY_AFTER_MS).toBeGreaterThan(0);
});

it("what staff are told of the probing pace is true: the slowest pace while the budget allows it, else the budget's one-minute bound", () => {
  // Defaults: probes every 15–30 s cost at most 8 requests a minute, within the 20 of the budget.
  expect(slowPaceText(30_000, 20)).toBe('every 15–30 s');
  expect(slowPaceText(8_000, 60)).toBe('every 4–8 s');
  expect(slowPaceText(1_000, 600)).toBe('every 0.5–1 s');
  // Probes every 0.5–1 s would spend a budget of 20 in seconds: then it is the budget that sets the pace.
  expect(slowPaceText(1_000, 20)).toBe('within 60 s');
  expect(slowPaceText(120_000, 4)).toBe('every 60–120 s');
  // Checked against the policy itself: at its slowest pace, two requests per probe stay within the budget.
  const p = policy(MIN);
  for (let i = 0; i < 3; i++) p.onFailure(failure('socket_refused', { status: 404 }), i);
  const pace = p.onFailure(failure('socket_refused', { status: 404 }), 3);
  if (pace.action !== 'retry') throw new Error('a gateway refusal is retried');
  expect(pace.delayMs).toBe(SETTINGS.backoffMaxMs / 2);
  expect((2 * WINDOW_MS) / pace.delayMs).toBeLessThanOrEqual(SETTINGS.maxRequestsPerMinute);
});
