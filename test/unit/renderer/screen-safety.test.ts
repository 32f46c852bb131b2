/**
 * What keeps the customer screens steady and private between the host's states: an unchanged outcome
 * keeps its identity across the states the host pushes for unrelated reasons (so the portrait is not
 * decoded again and the verdict not re-announced), and an outcome or error that outlives its `clearsAt`
 * is hidden by the screen itself when the host does not clear it (fake timers).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ScreenState } from '../../../src/common/kiosk-api.js';
import { MAX_UNTIMED_RESULT_MS, STALE_GRACE_MS, StaleScreenWatch, hideAt } from '../../../src/renderer/api/stale-screen.js';
import { keepOutcomeIdentity, sameJson } from '../../../src/renderer/api/state-identity.js';
import { presentOutcome } from '../../../src/renderer/outcome/present.js';
import { screenState } from '../../support/screen-fixtures.js';

/** What the screen receives: every state parsed from JSON text, so nothing is shared with the last one. */
const overTheWire = (state: ScreenState): ScreenState => JSON.parse(JSON.stringify(state)) as ScreenState;

describe('an unchanged outcome keeps its identity', () => {
  const result = screenState('result_identity');

  it('across states that change only the session, a device or the camera', () => {
    const first = overTheWire(result);
    let shown = keepOutcomeIdentity(null, first);
    const outcome = shown.view.outcome;
    expect(outcome).not.toBeNull();
    const pushes: ScreenState[] = [
      { ...result, session: { ...result.session, expiresAt: (result.session.expiresAt ?? 0) - 5_000 } },
      { ...result, view: { ...result.view, devices: { ...result.view.devices, nfc: { usable: false, reason: 'no_reader' } } } },
      { ...result, camera: { ...result.camera, state: 'error' } },
    ];
    for (const push of pushes) {
      const next = overTheWire(push);
      expect(next.view.outcome).not.toBe(outcome);
      shown = keepOutcomeIdentity(shown, next);
      expect(shown.view.outcome).toBe(outcome);
      // Everything else is the new state's.
      expect(shown.session).toEqual(push.session);
      expect(shown.view.devices).toEqual(push.view.devices);
      expect(shown.camera).toEqual(push.camera);
    }
  });

  it('so the presented portrait keeps its content key, and the outcome screen its memoised model', () => {
    const a = presentOutcome(overTheWire(result).view.outcome ?? fail());
    const b = presentOutcome(overTheWire(result).view.outcome ?? fail());
    expect(a.portrait.state).toBe('image');
    if (a.portrait.state !== 'image' || b.portrait.state !== 'image') return;
    expect(a.portrait).not.toBe(b.portrait);
    expect(a.portrait.key).toBe(b.portrait.key);
  });

  it('but a changed outcome (another customer, another value) comes through as new', () => {
    const shown = keepOutcomeIdentity(null, overTheWire(result));
    const other = overTheWire(screenState('result_rejected'));
    expect(keepOutcomeIdentity(shown, other).view.outcome).toBe(other.view.outcome);
    const tweaked = overTheWire(result);
    const namespace = tweaked.view.outcome?.response['org.iso.18013.5.1'];
    if (namespace) namespace.height = 169;
    expect(keepOutcomeIdentity(shown, tweaked).view.outcome).toBe(tweaked.view.outcome);
    // No outcome any more: none.
    expect(keepOutcomeIdentity(shown, overTheWire(screenState('ready'))).view.outcome).toBeNull();
  });

  it('compares JSON values exactly, whatever their depth', () => {
    expect(sameJson({ a: [1, 'x', null, { b: true }] }, { a: [1, 'x', null, { b: true }] })).toBe(true);
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
    for (const [x, y] of [
      [{ a: 1 }, { a: 1, b: undefined }],
      [{ a: 1 }, { b: 1 }],
      [
        [1, 2],
        [2, 1],
      ],
      [[], {}],
      [{ a: null }, { a: {} }],
      ['1', 1],
      [[1], [1, 1]],
    ] as const) {
      expect(sameJson(x, y), JSON.stringify([x, y])).toBe(false);
    }
    // A peer's nesting has no bound: no recursion, no stack overflow.
    let deepA: unknown = 'bottom';
    let deepB: unknown = 'bottom';
    for (let i = 0; i < 200_000; i++) {
      deepA = [deepA];
      deepB = [deepB];
    }
    expect(sameJson(deepA, deepB)).toBe(true);
  });
});

function fail(): never {
  throw new Error('the fixture has no outcome');
}

describe('an outcome past its time is hidden by the screen itself', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: new Date('2030-01-01T12:00:00Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function watch(): { watch: StaleScreenWatch; calls: boolean[] } {
    const calls: boolean[] = [];
    return { watch: new StaleScreenWatch((stale) => calls.push(stale)), calls };
  }

  it(`${STALE_GRACE_MS} ms after clearsAt, with no further state from the host`, () => {
    const { watch: w, calls } = watch();
    const state = { ...screenState('result_verified'), clearsAt: Date.now() + 30_000 };
    w.update(state);
    expect(w.stale).toBe(false);
    vi.advanceTimersByTime(30_000 + STALE_GRACE_MS - 1);
    expect(w.stale).toBe(false);
    vi.advanceTimersByTime(1);
    expect(w.stale).toBe(true);
    expect(calls).toEqual([true]);
    // The host comes back with the next customer's screen: shown again.
    w.update(screenState('ready'));
    expect(w.stale).toBe(false);
    expect(calls).toEqual([true, false]);
  });

  it('even while the host keeps pushing the same result (a stuck clock, repeated freshness updates)', () => {
    const { watch: w } = watch();
    const clearsAt = Date.now() + 10_000;
    const state = { ...screenState('result_verified'), clearsAt };
    for (let i = 0; i < 4; i++) {
      w.update(overTheWire(state));
      vi.advanceTimersByTime(4_000);
    }
    // 16 s after a 10 s result: hidden, and a repeat of the same state does not bring it back.
    expect(w.stale).toBe(true);
    w.update(overTheWire(state));
    expect(w.stale).toBe(true);
  });

  it('at once for a state that arrives already past its time (e.g. after a reconnection)', () => {
    const { watch: w, calls } = watch();
    w.update({ ...screenState('result_verified'), clearsAt: Date.now() - STALE_GRACE_MS });
    expect(w.stale).toBe(true);
    expect(calls).toEqual([true]);
  });

  it('the error screen too; a later clearsAt from the host re-arms; disconnected or other screens never', () => {
    const { watch: w } = watch();
    w.update({ ...screenState('error'), clearsAt: Date.now() + 6_000 });
    vi.advanceTimersByTime(6_000 + STALE_GRACE_MS);
    expect(w.stale).toBe(true);
    w.update({ ...screenState('error'), clearsAt: Date.now() + 6_000 });
    expect(w.stale).toBe(false);
    vi.advanceTimersByTime(6_000 + STALE_GRACE_MS);
    expect(w.stale).toBe(true);
    w.update(null);
    expect(w.stale).toBe(false);
    w.update(screenState('remove_phone'));
    vi.advanceTimersByTime(24 * 3_600_000);
    expect(w.stale).toBe(false);
  });

  it('a result without clearsAt (out of contract) stays at most the longest result time; an error without one waits for staff', () => {
    const since = Date.now();
    expect(hideAt({ ...screenState('result_verified'), clearsAt: null }, since)).toBe(since + MAX_UNTIMED_RESULT_MS + STALE_GRACE_MS);
    expect(hideAt({ ...screenState('error'), clearsAt: null }, since)).toBeNull();
    expect(MAX_UNTIMED_RESULT_MS).toBe(300_000);

    const { watch: w } = watch();
    w.update({ ...screenState('result_verified'), clearsAt: null });
    // Freshness updates of the same result do not restart the count.
    vi.advanceTimersByTime(MAX_UNTIMED_RESULT_MS);
    w.update({ ...screenState('result_verified'), clearsAt: null });
    expect(w.stale).toBe(false);
    vi.advanceTimersByTime(STALE_GRACE_MS);
    expect(w.stale).toBe(true);
  });

  it('a far-future clearsAt does not overflow the timer into firing at once; disposed watches stay quiet', () => {
    const { watch: w, calls } = watch();
    w.update({ ...screenState('result_verified'), clearsAt: Date.now() + 40 * 86_400_000 });
    vi.advanceTimersByTime(30 * 86_400_000);
    expect(w.stale).toBe(false);
    vi.advanceTimersByTime(10 * 86_400_000 + STALE_GRACE_MS);
    expect(w.stale).toBe(true);

    const second = watch();
    second.watch.update({ ...screenState('result_verified'), clearsAt: Date.now() + 1_000 });
    second.watch.dispose();
    vi.advanceTimersByTime(60_000);
    expect(second.calls).toEqual([]);
    expect(calls).toEqual([true]);
  });
});
