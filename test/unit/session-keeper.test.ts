/**
 * The session keeper's lifetime rules on a fake clock (vitest fake timers for `setTimeout` and `Date`), with
 * the in-memory backend (test/support/memory-backend.ts) as session service and connector: renewal when
 * `session.renewBeforeExpiryMs` is left (not later, not earlier), and no session handed out with less than
 * `session.minRemainingToStartMs` left. The conformance tests (session-lifecycle.test.ts) check the same
 * rules through HTTP and the WebSocket on real timers; these pin the exact moments.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseConfig, type KioskConfig } from '../../src/platform/config.js';
import { createLogger } from '../../src/platform/log.js';
import { RetryPolicy, retrySettingsOf } from '../../src/kiosk/retry-policy.js';
import { SessionKeeper, type KeeperStatus } from '../../src/kiosk/session-keeper.js';
import { MemoryBackend } from '../support/memory-backend.js';

const T0 = Date.UTC(2030, 0, 1, 9, 0, 0);
const LIFETIME_MS = 600_000;
const RENEW_BEFORE_EXPIRY_MS = 240_000;
const MIN_REMAINING_TO_START_MS = 180_000;

/** Real event-loop turns (setImmediate is not faked): the in-memory backend answers one turn after a call. */
async function turns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

interface Rig {
  readonly keeper: SessionKeeper;
  readonly backend: MemoryBackend;
  readonly statuses: KeeperStatus['state'][];
  readonly config: KioskConfig;
}

let keeper: SessionKeeper | undefined;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'], now: T0 });
});

afterEach(async () => {
  await keeper?.stop();
  keeper = undefined;
  vi.useRealTimers();
});

function rig(): Rig {
  const config = parseConfig({
    session: { lifetimeMs: LIFETIME_MS, renewBeforeExpiryMs: RENEW_BEFORE_EXPIRY_MS, minRemainingToStartMs: MIN_REMAINING_TO_START_MS },
  });
  const backend = new MemoryBackend();
  keeper = new SessionKeeper({
    sessions: backend,
    connector: backend,
    config,
    // Every backoff drawn at its ceiling, so that the moments below are exact.
    retryPolicy: new RetryPolicy(
      () => retrySettingsOf(config),
      () => 0.999_999,
    ),
    namespaces: () => ({ 'org.iso.18013.5.1': ['age_over_21'] }),
    log: createLogger({ level: 'silent' }),
  });
  const statuses: KeeperStatus['state'][] = [];
  keeper.onStatus((s) => statuses.push(s.state));
  return { keeper, backend, statuses, config };
}

/** Starts the keeper and waits (in real turns, the fake clock standing still) for its first armed session. */
async function started(r: Rig): Promise<void> {
  r.keeper.start();
  await turns();
  expect(r.keeper.status.state).toBe('armed');
  expect(r.backend.createCount).toBe(1);
  expect(r.backend.connections[0]?.received.map((f) => f.op)).toEqual(['engage']);
  expect(r.backend.sessions.get('mem-1')?.createdAt).toBe(T0);
}

describe('renewal before expiry (session.renewBeforeExpiryMs), on a fake clock', () => {
  it('the idle session is replaced once less than renewBeforeExpiryMs is left — not a millisecond before — while the old one stays armed until the new one is engaged', async () => {
    const r = rig();
    await started(r);
    const renewDueAt = LIFETIME_MS - RENEW_BEFORE_EXPIRY_MS; // 360 s after creation: 240 s left

    // Exactly renewBeforeExpiryMs left: still fresh, nothing is created.
    await vi.advanceTimersByTimeAsync(renewDueAt);
    await turns();
    expect(r.backend.createCount).toBe(1);
    expect(r.backend.connections[0]?.isOpen).toBe(true);

    // One millisecond later (less than renewBeforeExpiryMs left): the replacement is created and engaged.
    await vi.advanceTimersByTimeAsync(1);
    await turns();
    expect(r.backend.createCount).toBe(2);
    const [old, renewed] = r.backend.connections;
    expect(renewed?.session.id).toBe('mem-2');
    expect(renewed?.received.map((f) => f.op)).toEqual(['engage']);
    // … and only then the old socket is closed, by the kiosk, normally.
    expect(old?.closeInfo).toEqual({ code: 1000, reason: 'session renewed', by: 'kiosk' });
    // Renewal happened behind the ready screen: the keeper never stopped being armed.
    expect(r.statuses.filter((s) => s !== 'armed')).toEqual([]);
    // The renewed session is the one handed out now, well before the old one would have expired.
    const lent = await r.keeper.acquire(1_000, new AbortController().signal);
    expect(lent.session.id).toBe('mem-2');
  });

  it('the replacement is renewed in its turn, renewBeforeExpiryMs before its own expiry (counted from its creation)', async () => {
    const r = rig();
    await started(r);
    await vi.advanceTimersByTimeAsync(LIFETIME_MS - RENEW_BEFORE_EXPIRY_MS + 1);
    await turns();
    expect(r.backend.createCount).toBe(2);
    expect(r.backend.sessions.get('mem-2')?.createdAt).toBe(T0 + LIFETIME_MS - RENEW_BEFORE_EXPIRY_MS + 1);
    await vi.advanceTimersByTimeAsync(LIFETIME_MS - RENEW_BEFORE_EXPIRY_MS - 1);
    await turns();
    expect(r.backend.createCount).toBe(2);
    await vi.advanceTimersByTimeAsync(2);
    await turns();
    expect(r.backend.createCount).toBe(3);
  });
});

describe('minimum remaining lifetime to start (session.minRemainingToStartMs), on a fake clock', () => {
  // The clock is set, not advanced: the keeper's timers (renewal, retirement) do not run, so acquire() alone
  // decides whether the idle session may still serve a customer.
  it('a session with exactly minRemainingToStartMs left is still handed out', async () => {
    const r = rig();
    await started(r);
    vi.setSystemTime(T0 + LIFETIME_MS - MIN_REMAINING_TO_START_MS);
    const lent = await r.keeper.acquire(1_000, new AbortController().signal);
    expect(lent.session.id).toBe('mem-1');
    expect(r.backend.createCount).toBe(1);
  });

  it('a session with 1 ms less than minRemainingToStartMs left is not handed out: it is closed unused and a new one serves', async () => {
    const r = rig();
    await started(r);
    vi.setSystemTime(T0 + LIFETIME_MS - MIN_REMAINING_TO_START_MS + 1);
    const acquiring = r.keeper.acquire(1_000, new AbortController().signal);
    await turns();
    const lent = await acquiring;
    expect(lent.session.id).toBe('mem-2');
    expect(r.backend.createCount).toBe(2);
    const old = r.backend.connections[0];
    expect(old?.received.map((f) => f.op)).toEqual(['engage']); // it never carried the customer's verification
    expect(old?.closeInfo).toMatchObject({ code: 1000, by: 'kiosk' });
  });
});

describe('POST /sessions refused (409, 429, 503) and Retry-After, on a fake clock', () => {
  const OFFLINE_MIN_MS = 1_000; // session.offlineBackoffMinMs default
  const OFFLINE_MAX_MS = 30_000; // session.offlineBackoffMaxMs default

  /** Starts the keeper with the first POST /sessions failing as given; returns when that POST was made. */
  async function refusedOnce(failure: MemoryBackend['createFailures'][number]): Promise<Rig> {
    const r = rig();
    r.backend.createFailures.push(failure);
    r.keeper.start();
    await turns();
    expect(r.backend.createCount).toBe(1);
    expect(r.keeper.status.state).toBe('offline');
    return r;
  }

  /** Advances the fake clock to `ms` after T0 and lets the keeper run. */
  async function at(ms: number): Promise<void> {
    await vi.advanceTimersByTimeAsync(T0 + ms - Date.now());
    await turns();
  }

  it('a 409 answer to POST /sessions is not retried at once: the next POST waits for the backoff', async () => {
    const r = await refusedOnce({ kind: 'conflict', status: 409 });
    // Many event-loop turns at the same instant: a keeper that retried in a loop would have posted again.
    await turns(200);
    expect(r.backend.createCount).toBe(1);
    await at(OFFLINE_MIN_MS - 1);
    expect(r.backend.createCount).toBe(1);
    await at(OFFLINE_MIN_MS);
    expect(r.backend.createCount).toBe(2);
    expect(r.backend.createTimes[1]).toBe(T0 + OFFLINE_MIN_MS);
    expect(r.keeper.status.state).toBe('armed');
  });

  for (const [kind, status] of [
    ['conflict', 409],
    ['rate_limited', 429],
    ['server', 503],
  ] as const) {
    it(`Retry-After on a ${status} answer to POST /sessions is honoured: no POST before it`, async () => {
      const r = await refusedOnce({ kind, status, retryAfterMs: 7_000 });
      await at(6_999);
      expect(r.backend.createCount).toBe(1);
      await at(7_000);
      expect(r.backend.createCount).toBe(2);
      expect(r.backend.createTimes[1]).toBe(T0 + 7_000);
    });
  }

  it('a Retry-After longer than session.offlineBackoffMaxMs is capped by it (a backend cannot park the kiosk for minutes)', async () => {
    const r = await refusedOnce({ kind: 'server', status: 503, retryAfterMs: 300_000 });
    await at(OFFLINE_MAX_MS - 1);
    expect(r.backend.createCount).toBe(1);
    await at(OFFLINE_MAX_MS);
    expect(r.backend.createCount).toBe(2);
    expect(r.backend.createTimes[1]).toBe(T0 + OFFLINE_MAX_MS);
  });
});
