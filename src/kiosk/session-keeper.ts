/**
 * Keeps one session pre-warmed while the kiosk is idle: created, its WebSocket open and `engage` sent,
 * so that a tap goes straight to `nfc_card_present` with no HTTP round trip (docs/protocol.md §10).
 *
 * - Renewal: when an idle session has less than `renewBeforeExpiryMs` left, a replacement is prepared in
 *   the background while the old one stays usable; then they are swapped. A session with less than
 *   `minRemainingToStartMs` left is never handed out, so no verification starts on a session about to expire.
 * - Re-arm: a session given back after an error, a violation or a dropped socket is reconnected with the same
 *   `id`/`client_secret` (spec §3, §5 rule 2) while it has time left; a spent one is replaced.
 * - Handshake 404 → the session is gone: the next attempt creates a new one. 409 → the same session again,
 *   a bounded number of times, then a new one. 401/403 on a new session (HTTP or handshake) → configuration
 *   error: no retries until staff act.
 * - When to try again after any failure, and how the kiosk presents itself meanwhile, is the retry policy's
 *   decision (retry-policy.ts), never this file's: every request to the backend passes its budget first.
 * - While idle, anything the backend sends on the engaged socket is handled here: `error` resets the
 *   session on the backend (spec §3), so it is re-armed; anything else is a violation.
 */
import type { Namespaces } from '../common/protocol/messages.js';
import { AbortedError, sleep } from './async-tools.js';
import type { KioskConfig } from '../platform/config.js';
import { insideWindow } from '../platform/time-window.js';
import type { Logger } from '../platform/log.js';
import { createFailure, handshakeFailure, type BackendFailure } from './backend-failure.js';
import { RelayChannel, type Arrival } from './relay-channel.js';
import { CloseCode, RelayHandshakeError, type RelayConnector } from './relay-link.js';
import { HEALTHY_AFTER_MS, RetryPolicy, retrySettingsOf, type RetryDecision, type RetryReport, type Standing } from './retry-policy.js';
import { SessionApiError, type Session } from './session-client.js';
import { backendErrorFields, closeCodeForViolation } from './verification/results.js';

export interface SessionFactory {
  createSession(signal?: AbortSignal): Promise<Session>;
}

export interface ArmedSession {
  readonly session: Session;
  readonly channel: RelayChannel;
  readonly namespaces: Namespaces;
  /** How many times this session was reconnected before this arming (0 for a new session). */
  readonly reuses: number;
}

/**
 * What a "Retry now" came to (staff or a customer on Offline): tried at `at` and the backend answered
 * (`reachable`) or not (`detail`: why, the failure's own words); or not tried, because the request budget
 * of the retry policy says wait (`waitMs`), or the kiosk is stopping.
 */
export type RetryAttempt =
  | { readonly tried: true; readonly at: number; readonly reachable: true }
  | { readonly tried: true; readonly at: number; readonly reachable: false; readonly detail: string }
  | { readonly tried: false; readonly at: number; readonly reason: 'request_budget' | 'stopped'; readonly waitMs?: number };

type AttemptEnd = { readonly reachable: true } | { readonly reachable: false; readonly detail: string };

export type KeeperStatus =
  | { readonly state: 'arming' }
  | { readonly state: 'armed' }
  /** No session kept warm by policy (`session.prewarm`): a tap or scan creates one. The kiosk is ready. */
  | { readonly state: 'standby' }
  /**
   * `backend_tls`: the backend's certificate is not trusted; staff must act, so retries are slow.
   * `backend_not_answering`: it takes the traffic and answers nothing (no pong, no first reply, no answer to
   * a handshake or a request in time): a silent backend, not a refused connection.
   */
  | { readonly state: 'offline'; readonly detail: string; readonly code?: 'backend_tls' | 'backend_not_answering' }
  /**
   * Only staff can fix it. `retrying`: the keeper still probes at the slowest pace and turns ready by itself
   * once the cause is gone (a gateway fixed); otherwise (refused credentials) it waits for staff's retry.
   * `kind`: the failure that called for staff (the screen names the cause by it).
   */
  | { readonly state: 'config_error'; readonly detail: string; readonly retrying: boolean; readonly kind: BackendFailure['kind'] }
  | { readonly state: 'stopped' };

/** The backend ended an idle session with an `error` or an invalid message (shown to staff briefly). */
export interface IdleFailure {
  readonly code: 'backend_error' | 'protocol_violation';
  readonly detail: string;
}

/**
 * What the holder of a lent session tells the keeper when giving it back: `completed` (an outcome came: the
 * backend works), `spent` (the session cannot serve again, and no outcome came), `retry` (it failed and may
 * be reconnected), `unanswered` (the backend stopped answering: an absence, counted like an unreachable
 * backend, and the session is tried again once it answers).
 */
export type Disposition = 'completed' | 'spent' | 'retry' | 'unanswered';

export interface SessionKeeperOptions {
  readonly sessions: SessionFactory;
  readonly connector: RelayConnector;
  readonly config: Pick<KioskConfig, 'session'>;
  readonly namespaces: () => Namespaces;
  readonly log: Logger;
  readonly now?: () => number;
  /** See `privacy.backendErrorText` in the configuration. */
  readonly showBackendErrorText?: boolean;
  /** Called after each successful `POST /sessions` (diagnostics count them: a fleet owner may pay per session). */
  readonly onSessionCreated?: () => void;
  /**
   * The retry policy, when its history must outlive this keeper (a kiosk rebuilt after a settings change
   * keeps its backoff and its request budget); by default one of its own.
   */
  readonly retryPolicy?: RetryPolicy;
}

/** How often the business-hours policy looks at the clock while no session is warm. */
const POLICY_CHECK_MS = 60_000;

export class ArmTimeoutError extends Error {
  override readonly name = 'ArmTimeoutError';
}

/** Arming failed for a reason of the backend's (or of the way to it), classified for the retry policy. */
class ArmingFailure extends Error {
  override readonly name = 'ArmingFailure';
  constructor(readonly failure: BackendFailure) {
    super(failure.detail);
  }
}

/** Log events of the ordinary endings that have names of their own (the rest log `session_rearm`). */
const RECOVERING_EVENT: Partial<Record<BackendFailure['kind'], string>> = {
  conflict: 'session_conflict',
  session_gone: 'session_gone',
  secret_expired: 'session_secret_refused',
};

/** The session after a served verification is made at once; a request later than this counts against the budget. */
const UNCOUNTED_FOR_MS = 10_000;

/** A 404 on a session at least this old is an ordinary ending; sooner, whatever answered refused a new session. */
const FRESH_SESSION_MS = 30_000;

/** A session to reconnect instead of creating a new one. */
interface Reusable {
  readonly session: Session;
  /** How often it was re-armed already. */
  readonly reuses: number;
  /** It was engaged at least once (a 404 or 401 on it then means it ended, not that it was refused). */
  readonly usedBefore: boolean;
  /** Handshake 409s in a row on it. */
  readonly conflicts: number;
}

function sameNamespaces(a: Namespaces, b: Namespaces): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class SessionKeeper {
  private idle: ArmedSession | undefined;
  private lent: ArmedSession | undefined;
  private reusable: Reusable | undefined;
  private preparing = false;
  private stopped = false;
  private started = false;
  private statusValue: KeeperStatus = { state: 'arming' };
  /** The status a failed renewal called for, shown if the old session retires before a renewal succeeds. */
  private deferredStatus: KeeperStatus | undefined;
  private readonly policy: RetryPolicy;
  /**
   * Requests not counted against the budget: the session after a verification the backend served (its POST
   * and upgrade, or the reconnect), made within {@link UNCOUNTED_FOR_MS} of its end.
   */
  private uncounted = { requests: 0, until: 0 };
  private retryTimer: NodeJS.Timeout | undefined;
  /** Declares the backend healthy once an engaged idle session has stayed up long enough. */
  private healthTimer: NodeJS.Timeout | undefined;
  private policyTimer: NodeJS.Timeout | undefined;
  /** A customer tapped or scanned: sessions are kept warm until then, whatever the policy. */
  private demandUntil = Number.NEGATIVE_INFINITY;
  /** Customers waiting in `acquire()` right now: demand that holds however short keepWarmAfterUseMs is. */
  private waitingCustomers = 0;
  private renewTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private readonly stopController = new AbortController();
  private readonly waiters = new Set<() => void>();
  private readonly statusListeners = new Set<(status: KeeperStatus) => void>();
  /** Callers of {@link retryAndReport} waiting for the attempt under way to end. */
  private readonly attemptWaiters = new Set<(end: AttemptEnd) => void>();
  private readonly idleFailureListeners = new Set<(failure: IdleFailure) => void>();
  /** Sockets being closed, by session id: the same session is reconnected only after its close (one connection per session, spec §8). */
  private readonly closing = new Map<string, Promise<void>>();
  private readonly now: () => number;

  constructor(private readonly options: SessionKeeperOptions) {
    this.now = options.now ?? Date.now;
    this.policy = options.retryPolicy ?? new RetryPolicy(() => retrySettingsOf(options.config));
  }

  get status(): KeeperStatus {
    return this.statusValue;
  }

  /** The backend's failures as the retry policy counts them (diagnostics, health, metrics, support bundle). */
  get failureReport(): RetryReport {
    return this.policy.report(this.now());
  }

  /** The session a verification is using, else the one waiting armed: for the staff's freshness display. */
  get freshness(): { readonly state: 'none' | 'armed' | 'busy'; readonly createdAt: number | null } {
    if (this.lent) return { state: 'busy', createdAt: this.lent.session.createdAt };
    if (this.idle) return { state: 'armed', createdAt: this.idle.session.createdAt };
    return { state: 'none', createdAt: null };
  }

  onStatus(listener: (status: KeeperStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  onIdleFailure(listener: (failure: IdleFailure) => void): () => void {
    this.idleFailureListeners.add(listener);
    return () => this.idleFailureListeners.delete(listener);
  }

  private idleFailed(failure: IdleFailure): void {
    for (const listener of this.idleFailureListeners) this.callListener(() => listener(failure));
  }

  /** Listeners run inside socket events: one that throws must neither crash the process nor stop the keeper. */
  private callListener(call: () => void): void {
    try {
      call();
    } catch (e) {
      this.options.log.error({ event: 'keeper_listener_failed', detail: e instanceof Error ? e.message : 'unknown' }, 'status listener threw');
    }
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.ensure();
  }

  /**
   * Retry now after a configuration error or during a backoff (staff action, or a customer waiting). The wait
   * is cut short, but the request budget still applies and the failures in a row are not forgotten: a
   * customer tapping again and again cannot make the kiosk hammer the backend.
   */
  retryNow(): void {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.statusValue.state === 'config_error') this.setStatus({ state: 'arming' });
    this.ensure();
  }

  /**
   * "Retry now" with an answer: the retry policy's request budget decides whether an attempt may go now
   * (if not, nothing is sent and the wait is said); an attempt already under way is waited for rather than
   * doubled, so pressing again and again cannot hammer the backend. Resolves when the attempt ends, or after
   * `timeoutMs` without an answer (said as not reachable).
   */
  async retryAndReport(timeoutMs: number): Promise<RetryAttempt> {
    const at = this.now();
    if (this.stopped) return { tried: false, at, reason: 'stopped' };
    if (!this.preparing) {
      const waitMs = this.policy.admissionDelay(at);
      if (waitMs > 0) return { tried: false, at, reason: 'request_budget', waitMs };
    }
    let settle: ((end: AttemptEnd) => void) | undefined;
    const ended = new Promise<AttemptEnd>((resolve) => {
      settle = resolve;
      this.attemptWaiters.add(resolve);
    });
    if (!this.preparing) this.retryNow();
    if (!this.preparing) {
      // Nothing to try: a session is ready (or kept for a customer), or the policy keeps none warm.
      if (settle) this.attemptWaiters.delete(settle);
      return this.statusValue.state === 'armed' || this.statusValue.state === 'standby' ? { tried: true, at, reachable: true } : { tried: false, at, reason: 'stopped' };
    }
    const controller = new AbortController();
    const timeout = sleep(timeoutMs, controller.signal).then(
      (): AttemptEnd => ({ reachable: false, detail: `no answer within ${Math.round(timeoutMs / 1_000)} s` }),
      (): AttemptEnd => ({ reachable: false, detail: 'stopped' }),
    );
    const end = await Promise.race([ended, timeout]);
    controller.abort();
    if (settle) this.attemptWaiters.delete(settle);
    return end.reachable ? { tried: true, at, reachable: true } : { tried: true, at, reachable: false, detail: end.detail.slice(0, 300) };
  }

  private attemptEnded(end: AttemptEnd): void {
    const waiters = [...this.attemptWaiters];
    this.attemptWaiters.clear();
    for (const waiter of waiters) waiter(end);
  }

  /**
   * Waits until the request budget lets one more request go to the backend, and counts it. Every request
   * passes here: the keeper's own, and `GET /sessions/{id}` of a result recovery.
   */
  async admitRequest(signal: AbortSignal): Promise<void> {
    if (this.uncounted.requests > 0 && this.now() <= this.uncounted.until) {
      this.uncounted.requests--;
      return;
    }
    for (let logged = false; ; logged = true) {
      const wait = this.policy.admissionDelay(this.now());
      if (wait <= 0) break;
      if (!logged) this.options.log.warn({ event: 'request_budget_spent', waitMs: wait, perMinute: this.options.config.session.maxRequestsPerMinute }, 'request budget spent; waiting');
      await sleep(wait, signal);
    }
    this.policy.recordRequest(this.now());
  }

  private remaining(session: Session): number {
    return session.createdAt + this.options.config.session.lifetimeMs - this.now();
  }

  private usable(armed: ArmedSession): boolean {
    return (
      armed.channel.isOpen &&
      this.remaining(armed.session) >= this.options.config.session.minRemainingToStartMs &&
      sameNamespaces(armed.namespaces, this.options.namespaces())
    );
  }

  private fresh(armed: ArmedSession): boolean {
    return this.usable(armed) && this.remaining(armed.session) > this.options.config.session.renewBeforeExpiryMs;
  }

  /**
   * Hands out an armed session, waiting up to `timeoutMs` for one. The caller owns it until `release()`.
   * Rejects with {@link ArmTimeoutError} or {@link AbortedError}.
   */
  async acquire(timeoutMs: number, signal: AbortSignal): Promise<ArmedSession> {
    const deadline = this.now() + timeoutMs;
    // Customers come in bursts: after one, sessions stay warm for a while (session.keepWarmAfterUseMs).
    this.demandUntil = Math.max(this.demandUntil, this.now() + this.options.config.session.keepWarmAfterUseMs);
    this.waitingCustomers++;
    try {
      return await this.acquireLoop(deadline, timeoutMs, signal);
    } finally {
      this.waitingCustomers--;
    }
  }

  private async acquireLoop(deadline: number, timeoutMs: number, signal: AbortSignal): Promise<ArmedSession> {
    for (;;) {
      if (signal.aborted || this.stopped) throw new AbortedError('acquire aborted');
      // Nothing changes until staff act: fail at once instead of keeping the customer waiting.
      if (this.statusValue.state === 'config_error') throw new ArmTimeoutError(`staff needed: ${this.statusValue.detail}`);
      const idle = this.idle;
      if (idle && this.usable(idle)) {
        this.idle = undefined;
        this.lent = idle;
        idle.channel.setInterceptor(undefined);
        clearTimeout(this.renewTimer);
        clearTimeout(this.expiryTimer);
        clearTimeout(this.healthTimer);
        this.options.log.info({ event: 'session_acquired', sessionId: idle.session.id }, 'verification starts on the pre-warmed session');
        return idle;
      }
      this.ensure();
      const left = deadline - this.now();
      if (left <= 0) throw new ArmTimeoutError(`no session ready within ${timeoutMs} ms (${this.statusValue.state})`);
      await this.waitForChange(left, signal);
    }
  }

  private waitForChange(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /**
   * Gives a lent session back. Its socket must be closed (or closing) already. A verification in which the
   * backend answered (it sent steps) proves it healthy even when the phone then failed: the re-arm is then an
   * ordinary ending, not one more failure in a row.
   */
  release(armed: ArmedSession, disposition: Disposition): void {
    if (this.lent === armed) this.lent = undefined;
    if (this.stopped) return;
    // The backend did its part of this customer's verification (steps, or the outcome): it works, and the
    // session that replaces this one is the next customer's due, not a retry of a failure of the backend's.
    const served = disposition === 'completed' || armed.channel.answered > 0;
    if (served) this.policy.onHealthy();
    if (disposition !== 'completed') {
      if (disposition !== 'spent' && this.remaining(armed.session) > this.options.config.session.renewBeforeExpiryMs) {
        this.reusable = { session: armed.session, reuses: armed.reuses + 1, usedBefore: true, conflicts: 0 };
      }
      // Schedules the re-arm after the policy's wait (and ends any earlier allowance, hence the order below).
      this.onFailure(
        disposition === 'unanswered'
          ? { kind: 'not_answering', stage: 'verification', detail: 'the backend stopped answering during a verification' }
          : { kind: 'verification_failed', stage: 'verification', detail: `the verification ended without an outcome (${disposition})` },
      );
    }
    if (served) this.uncounted = { requests: 2, until: this.now() + UNCOUNTED_FOR_MS };
    if (disposition === 'completed') this.ensure();
  }

  /** The request profile changed: re-engage the idle session with the new namespaces. */
  namespacesChanged(): void {
    const idle = this.idle;
    if (!idle || sameNamespaces(idle.namespaces, this.options.namespaces())) return;
    this.idle = undefined;
    this.reusable = { session: idle.session, reuses: idle.reuses, usedBefore: true, conflicts: 0 };
    void this.closeIdle(idle, CloseCode.normal, 'request profile changed');
    this.ensure();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopController.abort();
    clearTimeout(this.retryTimer);
    clearTimeout(this.policyTimer);
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    clearTimeout(this.healthTimer);
    const idle = this.idle;
    this.idle = undefined;
    this.setStatus({ state: 'stopped' });
    this.wake();
    if (idle) await idle.channel.close(CloseCode.goingAway, 'kiosk stopping');
  }

  private setStatus(status: KeeperStatus): void {
    const prev = this.statusValue;
    this.statusValue = status;
    if (prev.state !== status.state || JSON.stringify(prev) !== JSON.stringify(status)) {
      for (const listener of this.statusListeners) this.callListener(() => listener(status));
    }
  }

  /** Decides whether a session must be prepared, and starts it. Idempotent. */
  private ensure(): void {
    if (this.stopped || !this.started || this.preparing || this.lent || this.retryTimer) return;
    if (this.statusValue.state === 'config_error' && !this.statusValue.retrying) return;
    const idle = this.idle;
    if (idle && this.fresh(idle)) return;
    if (!this.wantsWarm()) {
      this.standBy(idle);
      return;
    }
    if (idle && !this.usable(idle)) {
      // Expired, closed or engaged with an old profile: it cannot serve a tap any more.
      this.idle = undefined;
      void this.closeIdle(idle, CloseCode.normal, 'session renewed');
    }
    this.preparing = true;
    // No session to hand out: the screen must not say "ready". While retrying after failures the status stays
    // what the policy said (offline, needs staff) until an attempt succeeds.
    if (!this.idle && this.statusValue.state !== 'offline' && this.statusValue.state !== 'config_error') this.setStatus({ state: 'arming' });
    void this.prepare().finally(() => {
      this.preparing = false;
      // What happened meanwhile (e.g. the new session ended at once) may call for another attempt.
      this.ensure();
    });
  }

  /** Whether a session should be kept warm now (`session.prewarm`, or a recent customer). */
  private wantsWarm(): boolean {
    const { prewarm, businessHours } = this.options.config.session;
    if (prewarm === 'always' || this.waitingCustomers > 0 || this.now() < this.demandUntil) return true;
    return prewarm === 'business_hours' && insideWindow(businessHours, new Date(this.now()));
  }

  /**
   * Policy says no warm session: a usable idle one serves until its expiry timer retires it (it is not
   * renewed); otherwise none is prepared and the kiosk waits, ready, for a tap or scan to ask for one.
   */
  private standBy(idle: ArmedSession | undefined): void {
    if (idle && this.usable(idle)) {
      clearTimeout(this.renewTimer);
    } else {
      if (idle) {
        this.idle = undefined;
        void this.closeIdle(idle, CloseCode.normal, 'no session kept warm (session.prewarm)');
      }
      if (this.statusValue.state !== 'standby') this.options.log.info({ event: 'session_standby', policy: this.options.config.session.prewarm }, 'no session kept warm until a customer comes');
      this.setStatus({ state: 'standby' });
      this.wake();
    }
    // Business hours open by the clock: look again now and then (demand itself calls ensure()).
    if (this.options.config.session.prewarm === 'business_hours' && this.policyTimer === undefined) {
      this.policyTimer = setTimeout(() => {
        this.policyTimer = undefined;
        this.ensure();
      }, POLICY_CHECK_MS);
    }
  }

  private async prepare(): Promise<void> {
    const signal = this.stopController.signal;
    try {
      const armed = await this.arm(signal);
      if (this.stopped) {
        await armed.channel.close(CloseCode.goingAway, 'kiosk stopping');
        return;
      }
      const old = this.idle;
      this.idle = armed;
      if (old) void this.closeIdle(old, CloseCode.normal, 'session renewed');
      this.watchIdle(armed);
      // Something the backend sent before the watcher was in place already ended this session.
      if (this.idle !== armed) {
        this.attemptEnded({ reachable: true });
        return;
      }
      this.scheduleRenewal(armed);
      this.deferredStatus = undefined;
      this.setStatus({ state: 'armed' });
      this.wake();
      this.attemptEnded({ reachable: true });
    } catch (e) {
      if (this.stopped || e instanceof AbortedError) return;
      if (e instanceof ArmingFailure) {
        this.onFailure(e.failure);
        this.attemptEnded({ reachable: false, detail: e.failure.detail });
        return;
      }
      // Not the backend's doing (a bug): still a failure, so that it cannot make the keeper spin.
      const detail = e instanceof Error ? `${e.name}: ${e.message}` : 'unknown error';
      this.options.log.error({ event: 'arming_fault', detail }, 'unexpected fault while arming a session');
      this.onFailure({ kind: 'unreachable', stage: 'create', detail: `unexpected fault: ${detail}`.slice(0, 300) });
      this.attemptEnded({ reachable: false, detail: 'unexpected fault in the kiosk' });
    }
  }

  /** Asks the retry policy what a failure means, shows it, and schedules the next attempt. */
  private onFailure(failure: BackendFailure): void {
    if (this.statusValue.state === 'config_error' && !this.statusValue.retrying) {
      // The credentials were refused: nothing is tried again until staff act (retryNow), whatever else ends.
      this.options.log.info({ event: 'session_lost_while_refused', kind: failure.kind }, 'not retrying: the backend refused the credentials');
      this.wake();
      return;
    }
    const decision = this.policy.onFailure(failure, this.now());
    this.uncounted = { requests: 0, until: 0 };
    this.logDecision(decision);
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (decision.action === 'stop') {
      this.setStatus({ state: 'config_error', detail: failure.detail, retrying: false, kind: failure.kind });
      this.wake();
      return;
    }
    const status = this.statusFor(decision.standing, failure);
    // A renewal that failed leaves the old session serving: the kiosk stays ready meanwhile, and shows what
    // the failure calls for if that session retires before a renewal succeeds.
    if (this.idle && this.usable(this.idle)) this.deferredStatus = status;
    else this.setStatus(status);
    this.wake();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.ensure();
    }, decision.delayMs);
  }

  private statusFor(standing: Standing, failure: BackendFailure): KeeperStatus {
    switch (standing) {
      case 'recovering':
        return { state: 'arming' };
      case 'offline':
        if (failure.kind === 'tls') return { state: 'offline', detail: failure.detail, code: 'backend_tls' };
        // Timeouts and a silent socket: something takes the traffic and answers nothing.
        if (failure.kind === 'not_answering' || failure.kind === 'timeout') return { state: 'offline', detail: failure.detail, code: 'backend_not_answering' };
        return { state: 'offline', detail: failure.detail };
      case 'needs_staff':
        return { state: 'config_error', detail: failure.detail, retrying: true, kind: failure.kind };
    }
  }

  private logDecision(decision: RetryDecision): void {
    const { failure } = decision;
    const fields = { kind: failure.kind, stage: failure.stage, status: failure.status, detail: failure.detail, consecutive: decision.consecutive };
    if (decision.action === 'stop') {
      this.options.log.error({ event: 'backend_refused_credentials', ...fields }, 'backend refused the credentials; not retrying until staff act');
    } else if (decision.standing === 'recovering') {
      this.options.log.info({ event: RECOVERING_EVENT[failure.kind] ?? 'session_rearm', ...fields, retryInMs: decision.delayMs }, 'connecting the session again');
    } else {
      this.options.log.warn(
        { event: failure.kind === 'tls' ? 'backend_tls' : decision.standing === 'needs_staff' ? 'backend_needs_staff' : 'backend_unavailable', ...fields, retryInMs: decision.delayMs },
        'cannot keep a session ready',
      );
    }
  }

  /**
   * Creates (or reuses) a session, opens its socket and sends `engage`: one attempt. What fails is thrown as an
   * {@link ArmingFailure}, and the session to try next time (the same one, or none) is left in `reusable`.
   */
  private async arm(signal: AbortSignal): Promise<ArmedSession> {
    let target = this.takeReusable();
    if (!target) {
      await this.admitRequest(signal);
      target = { session: await this.create(signal), reuses: 0, usedBefore: false, conflicts: 0 };
    }
    const { session, reuses } = target;
    await this.closing.get(session.id);
    await this.admitRequest(signal);
    const channel = new RelayChannel();
    try {
      const link = await this.options.connector.connect(session, { onFrame: channel.onFrame, onClose: channel.onClose }, signal);
      channel.attach(link);
    } catch (e) {
      if (!(e instanceof RelayHandshakeError)) throw e;
      if (e.kind === 'aborted') throw new AbortedError('arming aborted');
      const usedBefore = target.usedBefore || this.now() - session.createdAt >= FRESH_SESSION_MS;
      const failure = handshakeFailure(e, { usedBefore });
      this.reusable = this.nextTarget(target, failure);
      throw new ArmingFailure(failure);
    }
    const namespaces = this.options.namespaces();
    try {
      channel.send({ type: 'step_result', op: 'engage', status: 'ok', namespaces });
    } catch {
      // The socket closed right after opening: the same session may be tried again.
      await channel.close(CloseCode.normal, 'engage failed');
      this.reusable = { ...target, conflicts: 0 };
      throw new ArmingFailure({ kind: 'socket_lost', stage: 'socket', detail: 'the session socket closed right after it opened' });
    }
    this.options.log.info(
      { event: 'session_armed', sessionId: session.id, remainingMs: this.remaining(session) },
      'session engaged and waiting for a tap or a scan',
    );
    return { session, channel, namespaces, reuses };
  }

  /** After a handshake failure: the session to try next (the same one), or none (a new one is due). */
  private nextTarget(target: Reusable, failure: BackendFailure): Reusable | undefined {
    switch (failure.kind) {
      case 'session_gone':
      case 'secret_expired':
      case 'credentials_refused':
        return undefined;
      case 'socket_refused':
        // A 404 says this session is unknown; other refusals say nothing about it.
        return failure.status === 404 ? undefined : { ...target, conflicts: 0 };
      case 'conflict': {
        if (target.conflicts + 1 > this.options.config.session.conflictRetries) {
          this.options.log.warn({ event: 'session_conflict_exhausted', sessionId: target.session.id, conflicts: target.conflicts }, 'session stays busy; using a new one');
          return undefined;
        }
        return { ...target, conflicts: target.conflicts + 1 };
      }
      default:
        // A network failure says nothing about the session: try it again later.
        return { ...target, conflicts: 0 };
    }
  }

  private takeReusable(): Reusable | undefined {
    const reusable = this.reusable;
    this.reusable = undefined;
    if (reusable && this.remaining(reusable.session) > this.options.config.session.renewBeforeExpiryMs) return reusable;
    return undefined;
  }

  private async create(signal: AbortSignal): Promise<Session> {
    try {
      const session = await this.options.sessions.createSession(signal);
      this.options.log.info({ event: 'session_created', sessionId: session.id }, 'session created');
      this.callListener(() => this.options.onSessionCreated?.());
      return session;
    } catch (e) {
      if (!(e instanceof SessionApiError)) throw e;
      if (e.kind === 'aborted') throw new AbortedError('session creation aborted');
      throw new ArmingFailure(createFailure(e));
    }
  }

  /**
   * Two timers per idle session: renewal when `renewBeforeExpiryMs` is left (the session stays usable while
   * its replacement is prepared), and retirement when less than `minRemainingToStartMs` would be left.
   */
  private scheduleRenewal(armed: ArmedSession): void {
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    const { renewBeforeExpiryMs, minRemainingToStartMs } = this.options.config.session;
    this.renewTimer = setTimeout(() => {
      if (this.idle !== armed) return;
      this.policy.onHealthy(); // it lived this long: the backend works
      this.options.log.info({ event: 'session_renewing', sessionId: armed.session.id }, 'renewing the idle session before it expires');
      this.ensure();
    }, Math.max(0, this.remaining(armed.session) - renewBeforeExpiryMs) + 1);
    this.expiryTimer = setTimeout(() => {
      if (this.idle !== armed) return;
      this.options.log.warn({ event: 'session_retired', sessionId: armed.session.id }, 'idle session too close to expiry; no replacement yet');
      this.idle = undefined;
      void this.closeIdle(armed, CloseCode.normal, 'session expiring');
      // Refused credentials stay shown; otherwise what the renewal's failure called for, or connecting.
      if (this.statusValue.state !== 'config_error') this.setStatus(this.deferredStatus ?? { state: 'arming' });
      this.ensure();
    }, Math.max(0, this.remaining(armed.session) - minRemainingToStartMs) + 1);
  }

  /** While idle, the backend should say nothing; anything it says is handled here. */
  private watchIdle(armed: ArmedSession): void {
    clearTimeout(this.healthTimer);
    this.healthTimer = setTimeout(() => {
      if (this.idle === armed && armed.channel.isOpen) this.policy.onHealthy();
    }, HEALTHY_AFTER_MS);
    const handle = (arrival: Arrival): boolean => {
      if (this.idle !== armed) return false;
      this.idle = undefined;
      clearTimeout(this.healthTimer);
      // The same id and secret may be retried (spec §5 rule 2), but a session that fails again after a
      // reconnect is replaced rather than retried until it expires.
      const backendEnded = arrival.kind !== 'closed';
      this.reusable = backendEnded && armed.reuses > 0 ? undefined : { session: armed.session, reuses: armed.reuses + 1, usedBefore: true, conflicts: 0 };
      let failure: BackendFailure;
      switch (arrival.kind) {
        case 'closed':
          this.options.log.warn({ event: 'idle_socket_closed', sessionId: armed.session.id, code: arrival.closed.code, unanswered: arrival.closed.unanswered === true }, 'idle session socket closed; re-arming');
          failure = arrival.closed.unanswered
            ? { kind: 'not_answering', stage: 'socket', detail: 'the backend answered no ping on the idle session socket (timeouts.pongMs); the socket was dropped' }
            : { kind: 'socket_lost', stage: 'socket', detail: `the idle session socket closed (code ${arrival.closed.code})` };
          break;
        case 'violation':
          this.options.log.warn(
            { event: 'protocol_violation', sessionId: armed.session.id, kind: arrival.violation.kind, detail: arrival.violation.detail, phase: 'idle' },
            'invalid message while idle',
          );
          void this.trackClose(armed, armed.channel.close(closeCodeForViolation(arrival.violation.kind), `protocol violation: ${arrival.violation.kind}`));
          this.idleFailed({ code: 'protocol_violation', detail: `${arrival.violation.kind}: ${arrival.violation.detail}` });
          failure = { kind: 'idle_violation', stage: 'socket', detail: `protocol violation while idle: ${arrival.violation.kind}` };
          break;
        case 'message':
          if (arrival.message.type === 'error') {
            this.options.log.warn(
              { event: 'backend_error', sessionId: armed.session.id, phase: 'idle', ...backendErrorFields(arrival.message.message, this.options.showBackendErrorText ?? false) },
              'backend error while idle',
            );
            void this.trackClose(armed, armed.channel.close(CloseCode.normal, 'backend reported an error'));
            this.idleFailed({
              code: 'backend_error',
              detail: this.options.showBackendErrorText ? arrival.message.message.slice(0, 200) : 'the verification service reported an error',
            });
            failure = { kind: 'idle_error', stage: 'socket', detail: 'the backend reported an error on the idle session' };
          } else {
            const op = arrival.message.type === 'step_request' ? arrival.message.op : undefined;
            this.options.log.warn(
              { event: 'protocol_violation', sessionId: armed.session.id, kind: 'out_of_sequence', type: arrival.message.type, op, phase: 'idle' },
              'message before any tap or scan',
            );
            void this.trackClose(armed, armed.channel.close(CloseCode.protocolError, 'protocol violation: out_of_sequence'));
            this.idleFailed({ code: 'protocol_violation', detail: `out_of_sequence: ${arrival.message.type}${op ? ` ${op}` : ''} before any tap or scan` });
            failure = { kind: 'idle_violation', stage: 'socket', detail: `protocol violation while idle: ${arrival.message.type}${op ? ` ${op}` : ''} before any tap or scan` };
          }
          break;
      }
      clearTimeout(this.renewTimer);
      clearTimeout(this.expiryTimer);
      this.onFailure(failure);
      return true;
    };
    armed.channel.setInterceptor(handle);
    // Frames (or a close) that came in the same read as the handshake were queued before the watcher.
    for (const arrival of armed.channel.takePending()) {
      if (this.idle !== armed) break;
      handle(arrival);
    }
  }

  private closeIdle(armed: ArmedSession, code: number, reason: string): Promise<void> {
    armed.channel.setInterceptor(() => true);
    return this.trackClose(armed, armed.channel.close(code, reason));
  }

  private trackClose(armed: ArmedSession, closing: Promise<void>): Promise<void> {
    const id = armed.session.id;
    const tracked = closing.finally(() => {
      if (this.closing.get(id) === tracked) this.closing.delete(id);
    });
    this.closing.set(id, tracked);
    return tracked;
  }
}
