/**
 * "Never hammer the backend", as a property: whatever the backend (or the way to it) does — every POST
 * /sessions failure, every handshake status 300–599, closes with any code 1000–4999, resets before and
 * after `engage`, timeouts, proxy refusals, malformed bodies, `error` or garbage while idle — repeated
 * forever in a random cycle, interleaved with customers whose verifications succeed or fail, the real
 * SessionKeeper (with its retry policy) on a fake clock:
 *
 * 1. makes at most `session.maxRequestsPerMinute` requests (POST, upgrade, GET) in any 60 s, plus the two
 *    requests of the session made right after each verified outcome;
 * 2. never stops retrying a failure that is not permanent: while it has no session ready, the next request
 *    comes within the longest backoff plus one budget window;
 * 3. stops on a permanent one (credentials refused) and then makes no request at all;
 * 4. while offline or needing staff, shows the detail of the last failure.
 *
 * And the checker itself is shown to catch a tight loop: for each failure kind, a planted policy that
 * retries that kind at once with no budget must fail property 1.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SessionResult } from '../../src/common/protocol/messages.js';
import type { BackendFailure, BackendFailureKind } from '../../src/kiosk/backend-failure.js';
import {
  RelayHandshakeError,
  handshakeKindForStatus,
  type HandshakeFailureKind,
  type InboundFrame,
  type RelayConnector,
  type RelayLink,
  type RelayLinkHandlers,
} from '../../src/kiosk/relay-link.js';
import { recoverResult } from '../../src/kiosk/result-recovery.js';
import { RetryPolicy, WINDOW_MS, retrySettingsOf, type RetryDecision, type RetrySettings } from '../../src/kiosk/retry-policy.js';
import type { ProxyFailureStage } from '../../src/kiosk/backend-proxy.js';
import { SessionApiError, sessionKindForStatus, type Session, type SessionApiErrorKind } from '../../src/kiosk/session-client.js';
import type { SessionService } from '../../src/kiosk/session-service.js';
import { SessionKeeper, type KeeperStatus } from '../../src/kiosk/session-keeper.js';
import { parseConfig, type KioskConfig } from '../../src/platform/config.js';
import { createLogger } from '../../src/platform/log.js';
import { MemoryConnection } from '../support/memory-backend.js';

const T0 = Date.UTC(2030, 0, 1, 9, 0, 0);
const SIMULATED_MS = 12 * 60_000;
const STEP_MS = 500;
/** A keeper in a tight loop is stopped here, so that a failing run ends (and fails) quickly. */
const RUNAWAY_REQUESTS = 3_000;

// ----------------------------------------------------------------------------------- what the backend does

type PostBehaviour =
  | { readonly kind: 'ok' }
  | {
      readonly kind: 'fail';
      readonly error: SessionApiErrorKind;
      readonly status?: number;
      readonly retryAfterMs?: number;
      readonly proxyStage?: ProxyFailureStage;
    };

type AfterOpen =
  | { readonly kind: 'stay' }
  | { readonly kind: 'close_at_once'; readonly code: number }
  | { readonly kind: 'close'; readonly afterMs: number; readonly code: number }
  | { readonly kind: 'drop'; readonly afterMs: number }
  | { readonly kind: 'error'; readonly afterMs: number }
  | { readonly kind: 'garbage'; readonly afterMs: number };

type UpgradeBehaviour =
  | { readonly kind: 'ok'; readonly then: AfterOpen }
  | {
      readonly kind: 'fail';
      readonly error: HandshakeFailureKind;
      readonly status?: number;
      readonly retryAfterMs?: number;
      readonly proxyStage?: ProxyFailureStage;
    };

type Customer =
  | { readonly at: number; readonly kind: 'tap' }
  | { readonly at: number; readonly kind: 'verify'; readonly result: 'completed' | 'retry' | 'dropped'; readonly holdMs: number };

interface Script {
  readonly posts: readonly PostBehaviour[];
  readonly upgrades: readonly UpgradeBehaviour[];
  readonly customers: readonly Customer[];
}

const retryAfter = fc.option(fc.integer({ min: 0, max: 400_000 }), { nil: undefined });

/** A forward proxy failing: unreachable, unresolvable, its own TLS, closing, timing out, or refusing with a status. */
const proxyFailure = fc.oneof(
  fc.record({ proxyStage: fc.constantFrom<ProxyFailureStage>('unreachable', 'unresolved', 'tls', 'closed', 'timeout') }),
  fc.record({ proxyStage: fc.constant<ProxyFailureStage>('refused'), status: fc.constantFrom(403, 407, 502, 503, 429) }),
);

const postBehaviour: fc.Arbitrary<PostBehaviour> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'ok' } as const) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('fail' as const),
      error: fc.constantFrom<SessionApiErrorKind>('network', 'timeout', 'tls', 'bad_response'),
    }),
  },
  {
    weight: 4,
    arbitrary: fc
      .record({ status: fc.oneof(fc.integer({ min: 300, max: 399 }), fc.integer({ min: 400, max: 599 })), retryAfterMs: retryAfter })
      .map(
        ({ status, retryAfterMs }): PostBehaviour => ({
          kind: 'fail',
          error: sessionKindForStatus(status),
          status,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        }),
      ),
  },
  { weight: 1, arbitrary: proxyFailure.map((p): PostBehaviour => ({ kind: 'fail', error: 'proxy', ...p })) },
);

const afterOpen: fc.Arbitrary<AfterOpen> = fc.oneof(
  fc.constant({ kind: 'stay' } as const),
  fc.record({ kind: fc.constant('close_at_once' as const), code: fc.integer({ min: 1000, max: 4999 }) }),
  fc.record({
    kind: fc.constant('close' as const),
    afterMs: fc.integer({ min: 0, max: 30_000 }),
    code: fc.integer({ min: 1000, max: 4999 }),
  }),
  fc.record({ kind: fc.constant('drop' as const), afterMs: fc.integer({ min: 0, max: 30_000 }) }),
  fc.record({ kind: fc.constant('error' as const), afterMs: fc.integer({ min: 0, max: 30_000 }) }),
  fc.record({ kind: fc.constant('garbage' as const), afterMs: fc.integer({ min: 0, max: 30_000 }) }),
);

const upgradeBehaviour: fc.Arbitrary<UpgradeBehaviour> = fc.oneof(
  { weight: 4, arbitrary: afterOpen.map((then): UpgradeBehaviour => ({ kind: 'ok', then })) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('fail' as const), error: fc.constantFrom<HandshakeFailureKind>('network', 'timeout', 'tls') }),
  },
  {
    weight: 5,
    arbitrary: fc
      .record({ status: fc.oneof(fc.integer({ min: 300, max: 399 }), fc.integer({ min: 400, max: 599 })), retryAfterMs: retryAfter })
      .map(
        ({ status, retryAfterMs }): UpgradeBehaviour => ({
          kind: 'fail',
          error: handshakeKindForStatus(status),
          status,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        }),
      ),
  },
  { weight: 1, arbitrary: proxyFailure.map((p): UpgradeBehaviour => ({ kind: 'fail', error: 'proxy', ...p })) },
);

const customer: fc.Arbitrary<Customer> = fc.oneof(
  fc.record({ at: fc.integer({ min: 0, max: SIMULATED_MS }), kind: fc.constant('tap' as const) }),
  fc.record({
    at: fc.integer({ min: 0, max: SIMULATED_MS }),
    kind: fc.constant('verify' as const),
    result: fc.constantFrom('completed' as const, 'retry' as const, 'dropped' as const),
    holdMs: fc.integer({ min: 0, max: 20_000 }),
  }),
);

const script: fc.Arbitrary<Script> = fc.record({
  posts: fc.array(postBehaviour, { minLength: 1, maxLength: 8 }),
  upgrades: fc.array(upgradeBehaviour, { minLength: 1, maxLength: 8 }),
  customers: fc.array(customer, { maxLength: 40 }).map((cs) => [...cs].sort((a, b) => a.at - b.at)),
});

/** Whether the script can make the keeper give up for good (credentials refused on a new session). */
function canRefuseCredentials(s: Script): boolean {
  return (
    s.posts.some((p) => p.kind === 'fail' && (p.error === 'unauthorized' || p.error === 'forbidden')) ||
    s.upgrades.some((u) => u.kind === 'fail' && (u.error === 'unauthorized' || u.error === 'forbidden'))
  );
}

// ----------------------------------------------------------------------------------- the scripted backend

interface Request {
  readonly at: number;
  readonly what: 'post' | 'upgrade' | 'get';
}

/** Answers each request with the next behaviour of its cycle, forever; records when each request came. */
class ScriptedBackend implements SessionService, RelayConnector {
  readonly requests: Request[] = [];
  private posts = 0;
  private upgrades = 0;
  private sessions = 0;
  private readonly connections: MemoryConnection[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly script: Script) {}

  private record(what: Request['what']): void {
    this.requests.push({ at: Date.now(), what });
  }

  /** A keeper that ran away gets no more answers: its run ends, and the checker reports it. */
  private runaway(): Promise<never> {
    return new Promise<never>(() => undefined);
  }

  async createSession(): Promise<Session> {
    this.record('post');
    if (this.requests.length > RUNAWAY_REQUESTS) return this.runaway();
    await Promise.resolve();
    const b = this.script.posts[this.posts++ % this.script.posts.length] ?? { kind: 'ok' };
    if (b.kind === 'fail')
      throw new SessionApiError(
        b.error,
        `POST /sessions: ${b.status === undefined ? b.error : `HTTP ${b.status}`}`,
        b.status,
        b.retryAfterMs,
        b.proxyStage,
      );
    this.sessions++;
    return { id: `s-${this.sessions}`, clientSecret: `secret-${this.sessions}`, createdAt: Date.now() };
  }

  async getResult(): Promise<SessionResult> {
    this.record('get');
    if (this.requests.length > RUNAWAY_REQUESTS) return this.runaway();
    await Promise.resolve();
    throw new SessionApiError('server', 'GET /sessions/{id}: HTTP 503', 503);
  }

  async connect(session: Session, handlers: RelayLinkHandlers): Promise<RelayLink> {
    this.record('upgrade');
    if (this.requests.length > RUNAWAY_REQUESTS) return this.runaway();
    await Promise.resolve();
    const b = this.script.upgrades[this.upgrades++ % this.script.upgrades.length] ?? { kind: 'ok', then: { kind: 'stay' } };
    if (b.kind === 'fail')
      throw new RelayHandshakeError(
        b.error,
        `WebSocket handshake refused: ${b.status === undefined ? b.error : `HTTP ${b.status}`}`,
        b.status,
        b.retryAfterMs,
        b.proxyStage,
      );
    const connection = new MemoryConnection(
      this.connections.length,
      { id: session.id, secret: session.clientSecret, createdAt: session.createdAt },
      handlers,
      () => undefined,
    );
    this.connections.push(connection);
    const then = b.then;
    const later = (ms: number, act: () => void): void => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        act();
      }, ms);
      this.timers.add(timer);
    };
    switch (then.kind) {
      case 'stay':
        break;
      case 'close_at_once':
        connection.closeNow(then.code, 'closed at once');
        break;
      case 'close':
        later(then.afterMs, () => connection.close(then.code, 'closed'));
        break;
      case 'drop':
        later(then.afterMs, () => connection.drop());
        break;
      case 'error':
        later(then.afterMs, () => connection.send({ type: 'error', message: 'backend trouble' }));
        break;
      case 'garbage': {
        const frame: InboundFrame = { kind: 'text', text: '{"type":' };
        later(then.afterMs, () => connection.sendBurst([frame]));
        break;
      }
    }
    return connection.link;
  }

  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

// ----------------------------------------------------------------------------------- one run

interface Sample {
  readonly at: number;
  readonly status: KeeperStatus;
  readonly lastDetail: string | undefined;
}

interface RunResult {
  readonly requests: readonly Request[];
  readonly completions: readonly number[];
  readonly samples: readonly Sample[];
  readonly config: KioskConfig;
}

async function simulate(s: Script, policy?: (settings: () => RetrySettings) => RetryPolicy): Promise<RunResult> {
  const config = parseConfig({});
  const backend = new ScriptedBackend(s);
  const settings = (): RetrySettings => retrySettingsOf(config);
  const keeper = new SessionKeeper({
    sessions: backend,
    connector: backend,
    config,
    namespaces: () => ({ 'org.iso.18013.5.1': ['age_over_21'] }),
    log: createLogger({ level: 'silent' }),
    retryPolicy: policy ? policy(settings) : new RetryPolicy(settings),
  });
  const completions: number[] = [];
  const samples: Sample[] = [];
  const stop = new AbortController();

  const serve = async (c: Extract<Customer, { kind: 'verify' }>): Promise<void> => {
    let armed;
    try {
      armed = await keeper.acquire(config.timeouts.armWaitMs, stop.signal);
    } catch {
      return; // no session within armWaitMs: the customer is told; nothing was asked of the backend
    }
    await new Promise((resolve) => setTimeout(resolve, c.holdMs));
    await armed.channel.close(1000, 'done');
    if (c.result === 'completed') {
      completions.push(Date.now());
      keeper.release(armed, 'completed');
      return;
    }
    if (c.result === 'dropped') {
      // The socket dropped mid-verification: the kiosk asks GET /sessions/{id} (here always refused).
      await recoverResult(backend, armed.session.id, {
        transferFinished: c.holdMs % 2 === 0,
        pollForMs: config.timeouts.recoverResultMs,
        signal: stop.signal,
        log: createLogger({ level: 'silent' }),
        now: Date.now,
        asked: { namespaces: armed.namespaces },
        admit: (signal) => keeper.admitRequest(signal),
      });
      keeper.release(armed, 'spent');
      return;
    }
    keeper.release(armed, 'retry');
  };

  for (const c of s.customers) {
    setTimeout(() => {
      if (c.kind === 'tap') {
        // What the kiosk does for a tap while offline: try now (kiosk.ts `refusal`).
        if (keeper.status.state === 'offline') keeper.retryNow();
      } else {
        void serve(c);
      }
    }, c.at);
  }
  keeper.start();
  try {
    for (let t = 0; t < SIMULATED_MS && backend.requests.length <= RUNAWAY_REQUESTS; t += STEP_MS) {
      await vi.advanceTimersByTimeAsync(STEP_MS);
      samples.push({ at: Date.now(), status: keeper.status, lastDetail: keeper.failureReport.lastFailure?.detail });
    }
  } finally {
    stop.abort();
    backend.stop();
    const stopping = keeper.stop();
    await vi.advanceTimersByTimeAsync(5_000);
    await stopping;
  }
  return { requests: backend.requests, completions, samples, config };
}

// ----------------------------------------------------------------------------------- the properties

/** The first window of 60 s holding more requests than the budget allows, or undefined. */
function budgetBreach(run: RunResult): string | undefined {
  const budget = run.config.session.maxRequestsPerMinute;
  const times = run.requests.map((r) => r.at);
  for (let i = 0; i < times.length; i++) {
    const start = times[i] ?? 0;
    const count = times.filter((t) => t >= start && t < start + WINDOW_MS).length;
    // The session after a verified outcome (POST and upgrade, within 10 s of it) is not counted.
    const exempt = 2 * run.completions.filter((c) => c >= start - 10_000 && c < start + WINDOW_MS).length;
    if (count > budget + exempt) return `${count} requests in the 60 s from ${start - T0} ms (budget ${budget}, ${exempt} exempt)`;
  }
  if (run.requests.length > RUNAWAY_REQUESTS) return `runaway: more than ${RUNAWAY_REQUESTS} requests`;
  return undefined;
}

function checkRun(s: Script, run: RunResult): void {
  expect(budgetBreach(run), 'requests per sliding minute').toBeUndefined();

  const { offlineBackoffMaxMs } = run.config.session;
  const stoppedAt = run.samples.find((x) => x.status.state === 'config_error' && !x.status.retrying)?.at;
  if (stoppedAt !== undefined) {
    // 3. Stopped only by a permanent failure, and silent after it.
    expect(canRefuseCredentials(s), 'stopped without a permanent failure').toBe(true);
    expect(
      run.requests.filter((r) => r.at > stoppedAt),
      'requests after giving up',
    ).toEqual([]);
  } else {
    // 2. Never gives up: with no session ready, the next request comes within the longest backoff plus a
    // budget window (and a little for the step of the samples).
    const bound = offlineBackoffMaxMs + WINDOW_MS + 2 * STEP_MS;
    for (const sample of run.samples) {
      if (sample.status.state === 'armed' || sample.status.state === 'standby') continue;
      if (sample.at + bound > T0 + SIMULATED_MS) break;
      const next = run.requests.find((r) => r.at > sample.at);
      expect(
        next !== undefined && next.at - sample.at <= bound,
        `no request within ${bound} ms after ${sample.at - T0} ms (${sample.status.state})`,
      ).toBe(true);
    }
  }
  // 4. Offline or needing staff: the screen's detail is the last failure's.
  for (const sample of run.samples) {
    if (sample.status.state === 'offline' || sample.status.state === 'config_error') {
      expect(sample.status.detail, `detail shown at ${sample.at - T0} ms`).toBe(sample.lastDetail);
    }
  }
}

beforeEach(() => {
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date'],
    now: T0,
    loopLimit: 1_000_000,
  });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('never hammer the backend (retry-policy.ts, session-keeper.ts)', () => {
  it('random failure cycles, repeated forever, with customers: within the budget, never giving up on the transient, stopping on the permanent, naming the failure', async () => {
    await fc.assert(
      fc.asyncProperty(script, async (s) => {
        vi.setSystemTime(T0);
        const run = await simulate(s);
        checkRun(s, run);
      }),
      { numRuns: 300 },
    );
  }, 600_000);

  // Each failure kind the keeper can meet, on its own forever (the reproductions of the issue among them).
  const forever: [string, Script][] = [
    [
      'handshake 404 on every new session (a gateway that does not route the WebSocket)',
      { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'fail', error: 'session_gone', status: 404 }], customers: [] },
    ],
    ['handshake 409 forever', { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'fail', error: 'conflict', status: 409 }], customers: [] }],
    ['handshake 500 forever', { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'fail', error: 'http', status: 500 }], customers: [] }],
    [
      'socket closed at once, forever',
      { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'ok', then: { kind: 'close_at_once', code: 1000 } }], customers: [] },
    ],
    [
      'error right after engage, forever',
      { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'ok', then: { kind: 'error', afterMs: 0 } }], customers: [] },
    ],
    [
      'POST /sessions answering 2xx garbage forever',
      { posts: [{ kind: 'fail', error: 'bad_response' }], upgrades: [{ kind: 'ok', then: { kind: 'stay' } }], customers: [] },
    ],
    [
      'POST /sessions 503 with Retry-After: 0 forever',
      {
        posts: [{ kind: 'fail', error: 'server', status: 503, retryAfterMs: 0 }],
        upgrades: [{ kind: 'ok', then: { kind: 'stay' } }],
        customers: [],
      },
    ],
    [
      'a customer every 2 s tapping while the backend refuses',
      {
        posts: [{ kind: 'fail', error: 'network' }],
        upgrades: [{ kind: 'ok', then: { kind: 'stay' } }],
        customers: Array.from({ length: 300 }, (_, i) => ({ at: i * 2_000, kind: 'tap' as const })),
      },
    ],
    [
      'a verification failing every 3 s on a backend that drops sockets',
      {
        posts: [{ kind: 'ok' }],
        upgrades: [
          { kind: 'ok', then: { kind: 'drop', afterMs: 500 } },
          { kind: 'ok', then: { kind: 'stay' } },
        ],
        customers: Array.from({ length: 200 }, (_, i) => ({
          at: i * 3_000,
          kind: 'verify' as const,
          result: 'dropped' as const,
          holdMs: 100,
        })),
      },
    ],
  ];
  for (const [name, s] of forever) {
    it(`${name}: within the budget, and still trying at the end`, async () => {
      const run = await simulate(s);
      checkRun(s, run);
      const lastMinute = run.requests.filter((r) => r.at >= T0 + SIMULATED_MS - WINDOW_MS).length;
      // Still trying, unless a session is ready (the cycle has a socket that stays).
      if (run.samples.at(-1)?.status.state !== 'armed') expect(lastMinute, 'requests in the last simulated minute').toBeGreaterThan(0);
      expect(lastMinute).toBeLessThanOrEqual(run.config.session.maxRequestsPerMinute);
    }, 60_000);
  }

  it('the reproduction: POST 201 and upgrade 404 — at most a handful of requests in 12 s, and staff are told why', async () => {
    const run = await simulate({
      posts: [{ kind: 'ok' }],
      upgrades: [{ kind: 'fail', error: 'session_gone', status: 404 }],
      customers: [],
    });
    const first12s = run.requests.filter((r) => r.at < T0 + 12_000);
    expect(first12s.length).toBeLessThanOrEqual(8);
    const at12s = run.samples.find((x) => x.at >= T0 + 12_000);
    expect(at12s?.status).toMatchObject({ state: 'config_error', retrying: true });
    expect(at12s?.status.state === 'config_error' && at12s.status.detail).toMatch(
      /refuses the session connection \(HTTP 404\).*WebSocket route of the gateway/,
    );
  }, 60_000);
});

describe('the checker catches a tight loop on any single path', () => {
  /** A policy with one path planted: that kind is retried at once and nothing is counted against the budget. */
  class LoopingOn extends RetryPolicy {
    constructor(
      private readonly planted: BackendFailureKind,
      settings: () => RetrySettings,
    ) {
      super(settings);
    }
    override onFailure(failure: BackendFailure, now: number): RetryDecision {
      const decision = super.onFailure(failure, now);
      if (failure.kind !== this.planted || decision.action !== 'retry') return decision;
      this.loosened = true;
      return { ...decision, delayMs: 0 };
    }
    private loosened = false;
    override admissionDelay(now: number): number {
      return this.loosened ? 0 : super.admissionDelay(now);
    }
  }

  const pathScripts: [BackendFailureKind, Script][] = [
    ['socket_refused', { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'fail', error: 'session_gone', status: 404 }], customers: [] }],
    ['unreachable', { posts: [{ kind: 'fail', error: 'network' }], upgrades: [{ kind: 'ok', then: { kind: 'stay' } }], customers: [] }],
    ['server_error', { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'fail', error: 'http', status: 502 }], customers: [] }],
    ['conflict', { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'fail', error: 'conflict', status: 409 }], customers: [] }],
    ['socket_lost', { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'ok', then: { kind: 'close_at_once', code: 1011 } }], customers: [] }],
    ['idle_error', { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'ok', then: { kind: 'error', afterMs: 0 } }], customers: [] }],
    ['idle_violation', { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'ok', then: { kind: 'garbage', afterMs: 0 } }], customers: [] }],
    [
      'bad_response',
      { posts: [{ kind: 'fail', error: 'bad_response' }], upgrades: [{ kind: 'ok', then: { kind: 'stay' } }], customers: [] },
    ],
    ['timeout', { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'fail', error: 'timeout' }], customers: [] }],
    [
      'proxy_unreachable',
      {
        posts: [{ kind: 'fail', error: 'proxy', proxyStage: 'unreachable' }],
        upgrades: [{ kind: 'ok', then: { kind: 'stay' } }],
        customers: [],
      },
    ],
    [
      'proxy_refused',
      { posts: [{ kind: 'ok' }], upgrades: [{ kind: 'fail', error: 'proxy', proxyStage: 'refused', status: 407 }], customers: [] },
    ],
  ];
  for (const [kind, s] of pathScripts) {
    it(`a planted loop on ${kind} breaks the budget property`, async () => {
      const run = await simulate(s, (settings) => new LoopingOn(kind, settings));
      expect(budgetBreach(run)).toBeDefined();
    }, 60_000);
  }
});
