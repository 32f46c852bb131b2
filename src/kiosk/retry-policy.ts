/**
 * The one retry policy of the kiosk: every decision to contact the backend again after a failure is taken
 * here, from the failure's kind (backend-failure.ts) and the history this object keeps. It owns no timer and
 * does no I/O: the caller passes the time, and the random source is injected, so it is tested alone on a
 * fake clock (test/unit/retry-policy.test.ts). The rules, in the words of docs/protocol.md §10.1:
 *
 * - Backoff is exponential with full jitter (AWS Architecture Blog, "Exponential Backoff and Jitter",
 *   2015): the n-th failure in a row waits a uniformly random time in [0, min(cap, base·2^(n−1))], so a
 *   fleet that failed together does not come back together; once that reaches the cap, in [cap/2, cap]
 *   (see {@link backoff}).
 * - An ordinary ending right after the backend was away (its 404 for the old session once it is back) is
 *   its return: the next attempt comes within [0, base], still counted in the failures in a row.
 * - An ordinary ending (an idle socket closed, a session expired, an `error` while idle, a verification
 *   that failed) is allowed once without counting as a failure: the next attempt comes within [0, base].
 *   A second one before the backend has proved healthy again counts like any failure.
 * - Healthy means: an engaged session stayed up for `HEALTHY_AFTER_MS`, or a verification got its outcome.
 * - Configuration failures (a gateway that refuses the session socket, a session API that is not at the
 *   configured address, a proxy that refuses the tunnel) are shown to staff after `STAFF_AFTER` in a row
 *   and then probed at the slowest pace, [cap/2, cap]; an untrusted certificate at once. Refused
 *   credentials stop the retries until staff act.
 * - `Retry-After` is honoured, capped at the longest backoff.
 * - Whatever the sequence, no more than `maxRequestsPerMinute` requests go to the backend in any 60 s,
 *   apart from the session that follows a verification the backend served (a customer's, at most two
 *   requests).
 */
import type { KioskConfig } from '../platform/config.js';
import type { BackendFailure, BackendFailureKind, FailureStage } from './backend-failure.js';

export interface RetrySettings {
  /** Backoff base: the first wait is at most this long (`session.offlineBackoffMinMs`). */
  readonly backoffMinMs: number;
  /** Backoff cap (`session.offlineBackoffMaxMs`); also the cap on `Retry-After`. */
  readonly backoffMaxMs: number;
  /** Base of the backoff between handshake 409s on the same session (`session.conflictBackoffMs`). */
  readonly conflictBackoffMs: number;
  /** The budget: requests to the backend in any 60 s (`session.maxRequestsPerMinute`). */
  readonly maxRequestsPerMinute: number;
}

/** The settings as the configuration gives them (read again at each decision: a saved change applies). */
export function retrySettingsOf(config: Pick<KioskConfig, 'session'>): RetrySettings {
  const { offlineBackoffMinMs, offlineBackoffMaxMs, conflictBackoffMs, maxRequestsPerMinute } = config.session;
  return { backoffMinMs: offlineBackoffMinMs, backoffMaxMs: offlineBackoffMaxMs, conflictBackoffMs, maxRequestsPerMinute };
}

/** How the kiosk should present itself while it waits to retry. */
export type Standing =
  /** An ordinary ending or a busy session: connecting again, nothing to tell. */
  | 'recovering'
  /** The backend cannot be reached or keeps failing: offline, retrying. */
  | 'offline'
  /** Only staff can fix it (configuration): shown as such, still probed now and then. */
  | 'needs_staff';

export type RetryDecision =
  | {
      readonly action: 'retry';
      readonly delayMs: number;
      readonly standing: Standing;
      readonly failure: BackendFailure;
      /** Failures in a row since the backend was last healthy (0 for an ordinary ending). */
      readonly consecutive: number;
    }
  | { readonly action: 'stop'; readonly failure: BackendFailure; readonly consecutive: number };

/** What diagnostics, health.json, the metrics file and the support bundle say of the backend's failures. */
export interface RetryReport {
  readonly lastFailure: {
    readonly kind: BackendFailureKind;
    readonly stage: FailureStage;
    readonly status: number | null;
    readonly detail: string;
    readonly at: number;
  } | null;
  readonly consecutive: number;
  /** Every failure since start, by kind. */
  readonly totals: Readonly<Partial<Record<BackendFailureKind, number>>>;
  /** Requests counted against the budget in the last 60 s, and the budget. */
  readonly requestsLastMinute: number;
  readonly maxRequestsPerMinute: number;
}

export const WINDOW_MS = 60_000;
/** An engaged session that stays up this long proves the backend healthy. */
export const HEALTHY_AFTER_MS = 10_000;
/** Configuration failures in a row before staff are told (one may be a deployment in progress). */
export const STAFF_AFTER = 3;

type FailureClass = 'transient' | 'ending' | 'configuration' | 'permanent';

const CLASS_OF: Readonly<Record<BackendFailureKind, FailureClass>> = {
  unreachable: 'transient',
  timeout: 'transient',
  // An absence like `unreachable`, not an ordinary ending: offline at once, and backoff when it comes back.
  not_answering: 'transient',
  tls: 'configuration',
  proxy_unreachable: 'transient',
  proxy_refused: 'configuration',
  server_error: 'transient',
  rate_limited: 'transient',
  bad_response: 'transient',
  credentials_refused: 'permanent',
  api_rejected: 'configuration',
  socket_refused: 'configuration',
  session_gone: 'ending',
  secret_expired: 'ending',
  conflict: 'transient',
  socket_lost: 'ending',
  idle_error: 'ending',
  idle_violation: 'ending',
  verification_failed: 'ending',
};

export function failureClass(kind: BackendFailureKind): FailureClass {
  return CLASS_OF[kind];
}

/** Full jitter: uniform in [0, min(cap, base·2^(n−1))] for the n-th failure in a row (n ≥ 1). */
export function fullJitter(n: number, baseMs: number, capMs: number, random: () => number): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(Math.max(n, 1) - 1, 30));
  // random() is below 1: the ceiling itself is drawn too (a test pins it with a random source near 1).
  return Math.min(ceiling, Math.floor(random() * (ceiling + 1)));
}

/** The slowest pace, for what only staff can fix and for a backoff at its cap: uniform in [cap/2, cap]. */
export function slowPace(capMs: number, random: () => number): number {
  return Math.min(capMs, Math.floor(capMs / 2 + random() * (capMs / 2 + 1)));
}

/**
 * The wait after the n-th failure in a row: full jitter while the ceiling grows, the slowest pace once it
 * reached the cap. Why not full jitter at the cap too: a fleet waiting there comes back at a rate of one
 * over the mean wait, and the short waits full jitter also draws make that 2/cap a second in the first
 * seconds after a recovery (6.7 % of the fleet a second at 30 s, measured 6.8–7.3 % by `npm run bench:fleet`);
 * [cap/2, cap] makes it 1/(0.75·cap), 4.4 %, flat, and no kiosk waits longer than before.
 */
export function backoff(n: number, baseMs: number, capMs: number, random: () => number): number {
  const ceiling = baseMs * 2 ** Math.min(Math.max(n, 1) - 1, 30);
  return ceiling >= capMs ? slowPace(capMs, random) : fullJitter(n, baseMs, capMs, random);
}

/** Kinds that say the backend (or the way to it) was away: an ending right after one is its return. */
const AWAY: ReadonlySet<BackendFailureKind> = new Set([
  'unreachable',
  'timeout',
  'not_answering',
  'server_error',
  'rate_limited',
  'proxy_unreachable',
]);

/**
 * How often, in words for staff, what only staff can fix is probed: {@link slowPace}, a random time in
 * [cap/2, cap], in seconds (tenths below 10 s, so a short cap is not rounded into something untrue). A probe
 * costs at most two requests (a new session and its socket); when probes at that pace could spend the
 * request budget, the budget decides instead, and it lets one through once its 60 s window has moved on:
 * then only that bound is true.
 */
export function slowPaceText(capMs: number, maxRequestsPerMinute: number): string {
  const seconds = (ms: number): string => (ms >= 10_000 ? String(Math.round(ms / 1_000)) : String(Math.round(ms / 100) / 10));
  if ((2 * WINDOW_MS) / (capMs / 2) > maxRequestsPerMinute) return `within ${seconds(Math.max(capMs, WINDOW_MS))} s`;
  const low = seconds(capMs / 2);
  const high = seconds(capMs);
  return low === high ? `every ${high} s` : `every ${low}–${high} s`;
}

export class RetryPolicy {
  private streak = 0;
  /** Configuration failures in a row (any other failure or health resets it). */
  private configurationStreak = 0;
  /** 409s in a row on the same session. */
  private conflictStreak = 0;
  /** An ordinary ending was already let through since the backend was last healthy. */
  private endingUsed = false;
  /** The kind of the previous failure. */
  private previous: BackendFailureKind | undefined;
  /** Times of the requests counted against the budget, oldest first (at most the budget's size). */
  private readonly requests: number[] = [];
  private last: RetryReport['lastFailure'] = null;
  private readonly totals: Partial<Record<BackendFailureKind, number>> = {};

  constructor(
    private readonly settings: () => RetrySettings,
    private readonly random: () => number = Math.random,
  ) {}

  /** The decision after a failure; the caller waits `delayMs` (or stops) and then tries again. */
  onFailure(failure: BackendFailure, now: number): RetryDecision {
    const { backoffMinMs, backoffMaxMs, conflictBackoffMs } = this.settings();
    this.last = { kind: failure.kind, stage: failure.stage, status: failure.status ?? null, detail: failure.detail, at: now };
    this.totals[failure.kind] = (this.totals[failure.kind] ?? 0) + 1;
    const cls = failureClass(failure.kind);
    if (failure.kind !== 'conflict') this.conflictStreak = 0;
    if (cls !== 'configuration') this.configurationStreak = 0;
    const afterAbsence = this.previous !== undefined && AWAY.has(this.previous);
    this.previous = failure.kind;

    if (cls === 'ending' && this.streak === 0 && !this.endingUsed) {
      this.endingUsed = true;
      return {
        action: 'retry',
        delayMs: fullJitter(1, backoffMinMs, backoffMaxMs, this.random),
        standing: 'recovering',
        failure,
        consecutive: 0,
      };
    }
    this.streak++;
    if (cls === 'permanent') return { action: 'stop', failure, consecutive: this.streak };

    let delayMs: number;
    let standing: Standing;
    if (cls === 'configuration') {
      this.configurationStreak++;
      // A certificate does not fix itself in a second; the other refusals may be a deployment in progress.
      const staff = failure.kind === 'tls' || this.configurationStreak >= STAFF_AFTER;
      delayMs = staff ? slowPace(backoffMaxMs, this.random) : backoff(this.streak, backoffMinMs, backoffMaxMs, this.random);
      standing = staff && failure.kind !== 'tls' ? 'needs_staff' : 'offline';
    } else if (failure.kind === 'conflict') {
      this.conflictStreak++;
      delayMs = backoff(this.conflictStreak, conflictBackoffMs, backoffMaxMs, this.random);
      standing = 'recovering';
    } else if (cls === 'ending' && afterAbsence) {
      // The backend is back and says how the old session ended (a 404 on it, its socket closed): the answer
      // is news, not one more failure to wait out. Still counted, so a cycle of the two cannot run fast.
      delayMs = fullJitter(1, backoffMinMs, backoffMaxMs, this.random);
      standing = 'recovering';
    } else {
      delayMs = backoff(this.streak, backoffMinMs, backoffMaxMs, this.random);
      // A second ending in a row is not yet an outage (a customer's phone failed twice); a third is.
      standing = cls === 'ending' && this.streak < 2 ? 'recovering' : 'offline';
    }
    // Honoured when the backend asks for longer, never beyond the longest backoff: whatever answers in the
    // backend's name must not park the kiosk for minutes per failure.
    if (failure.retryAfterMs !== undefined) delayMs = Math.max(delayMs, Math.min(failure.retryAfterMs, backoffMaxMs));
    return { action: 'retry', delayMs, standing, failure, consecutive: this.streak };
  }

  /** The backend proved healthy (an engaged session stayed up, or a verification got its outcome). */
  onHealthy(): void {
    this.previous = undefined;
    this.streak = 0;
    this.configurationStreak = 0;
    this.conflictStreak = 0;
    this.endingUsed = false;
  }

  /** Failures in a row since the backend was last healthy. */
  get consecutive(): number {
    return this.streak;
  }

  /** How long the next request must wait for the budget (0: it may go now). */
  admissionDelay(now: number): number {
    const budget = this.settings().maxRequestsPerMinute;
    this.forget(now);
    if (this.requests.length < budget) return 0;
    // The request that must leave the window before another fits: the budget-th most recent.
    const oldest = this.requests[this.requests.length - budget] ?? now;
    return Math.max(0, oldest + WINDOW_MS - now);
  }

  /** Counts a request that goes to the backend now (after {@link admissionDelay} said 0). */
  recordRequest(now: number): void {
    this.forget(now);
    this.requests.push(now);
  }

  report(now: number): RetryReport {
    this.forget(now);
    return {
      lastFailure: this.last,
      consecutive: this.streak,
      totals: { ...this.totals },
      requestsLastMinute: this.requests.length,
      maxRequestsPerMinute: this.settings().maxRequestsPerMinute,
    };
  }

  private forget(now: number): void {
    while (this.requests.length > 0 && (this.requests[0] ?? now) + WINDOW_MS <= now) this.requests.shift();
    // Only the budget-th most recent matters; a burst far over it (a clock jump) is trimmed.
    const budget = this.settings().maxRequestsPerMinute;
    if (this.requests.length > budget * 2) this.requests.splice(0, this.requests.length - budget);
  }
}
