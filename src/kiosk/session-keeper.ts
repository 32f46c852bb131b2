/**
 * Keeps one session pre-warmed while the kiosk is idle: created, its WebSocket open and `engage` sent,
 * so that a tap goes straight to `nfc_card_present` with no HTTP round trip (docs/protocol.md §10). It is
 * renewed in the background before it gets too old, and never handed out about to expire (idle-watch.ts).
 * When to try again after any failure, and how the kiosk presents itself meanwhile, is the retry policy's
 * decision (retry-policy.ts), never the keeper's: every request to the backend passes its budget first.
 *
 * This class decides when a session is prepared, lends it and takes it back. Its parts, in session-keeper/:
 * arming one (arming.ts); the idle one, its timers and what the backend sends on it (idle-watch.ts,
 * idle-ending.ts); the status (keeper-status.ts); what follows a failure (retry-schedule.ts); the request
 * budget (request-budget.ts); when to keep one warm (warm-policy.ts); the callers waiting (change-waiters.ts,
 * attempt-waiters.ts).
 */
import { AbortedError } from './async-tools.js';
import { CloseCode } from './relay-link.js';
import { RetryPolicy, retrySettingsOf, type RetryReport } from './retry-policy.js';
import { ArmingFailure, SessionArming, armingFault } from './session-keeper/arming.js';
import { AttemptWaiters, attemptReport } from './session-keeper/attempt-waiters.js';
import { ChangeWaiters } from './session-keeper/change-waiters.js';
import { IdleWatch } from './session-keeper/idle-watch.js';
import { StatusBoard } from './session-keeper/keeper-status.js';
import {
  ArmTimeoutError,
  type ArmedSession,
  type Disposition,
  type IdleFailure,
  type KeeperStatus,
  type RetryAttempt,
  type SessionKeeperOptions,
} from './session-keeper/keeper-types.js';
import { Listeners } from './session-keeper/listeners.js';
import { RequestGate } from './session-keeper/request-budget.js';
import { RetrySchedule } from './session-keeper/retry-schedule.js';
import { SessionAge, sameNamespaces } from './session-keeper/session-age.js';
import { SocketClosings } from './session-keeper/socket-closings.js';
import { WarmPolicy } from './session-keeper/warm-policy.js';

export * from './session-keeper/keeper-types.js';

export class SessionKeeper {
  private lent: ArmedSession | undefined;
  private preparing = false;
  private stopped = false;
  private started = false;
  private readonly stopController = new AbortController();
  private readonly now: () => number;
  private readonly policy: RetryPolicy;
  private readonly statusBoard: StatusBoard;
  private readonly idleFailures: Listeners<IdleFailure>;
  private readonly gate: RequestGate;
  private readonly age: SessionAge;
  private readonly arming: SessionArming;
  private readonly idle: IdleWatch;
  private readonly warm: WarmPolicy;
  private readonly retries: RetrySchedule;
  private readonly changes = new ChangeWaiters();
  private readonly attempts = new AttemptWaiters();

  constructor(private readonly options: SessionKeeperOptions) {
    const { config, log, sessions, connector, namespaces, onSessionCreated } = options;
    const now = (this.now = options.now ?? Date.now);
    this.policy = options.retryPolicy ?? new RetryPolicy(() => retrySettingsOf(config));
    this.statusBoard = new StatusBoard(log);
    this.idleFailures = new Listeners(log);
    this.gate = new RequestGate(this.policy, config, log, now);
    const age = (this.age = new SessionAge(config, namespaces, now));
    const closings = new SocketClosings();
    const admit = (signal: AbortSignal): Promise<void> => this.gate.admit(signal);
    this.arming = new SessionArming({ sessions, connector, config, namespaces, log, now, age, closings, admit, onSessionCreated });
    const showBackendErrorText = options.showBackendErrorText ?? false;
    this.idle = new IdleWatch({
      config,
      log,
      age,
      closings,
      showBackendErrorText,
      events: {
        healthy: () => this.policy.onHealthy(),
        renewDue: () => this.ensure(),
        // Retired with no replacement: refused credentials stay shown; else what the renewal's failure called for.
        retired: () => {
          if (this.status.state !== 'config_error') this.statusBoard.showDeferred();
          this.ensure();
        },
        // The backend ended it (idle-ending.ts says how): staff are told, and the policy says when to retry.
        ended: (ending) => {
          this.arming.reuseNext(ending.reusable);
          if (ending.idleFailure) this.idleFailures.emit(ending.idleFailure);
          this.retries.failed(ending.failure);
        },
      },
    });
    this.warm = new WarmPolicy(config, now);
    const { policy, gate, changes } = this;
    // While the idle session still serves (a renewal failed), the kiosk stays ready.
    const idleServing = (): boolean => {
      const idle = this.idle.session;
      return idle !== undefined && age.usable(idle);
    };
    this.retries = new RetrySchedule({
      policy,
      gate,
      status: this.statusBoard,
      changes,
      log,
      now,
      idleServing,
      retry: () => this.ensure(),
    });
  }

  get status(): KeeperStatus {
    return this.statusBoard.current;
  }

  /** The backend's failures as the retry policy counts them (diagnostics, health, metrics, support bundle). */
  get failureReport(): RetryReport {
    return this.policy.report(this.now());
  }

  /** The session a verification is using, else the one waiting armed: for the staff's freshness display. */
  get freshness(): { readonly state: 'none' | 'armed' | 'busy'; readonly createdAt: number | null } {
    const idle = this.idle.session;
    if (this.lent) return { state: 'busy', createdAt: this.lent.session.createdAt };
    if (idle) return { state: 'armed', createdAt: idle.session.createdAt };
    return { state: 'none', createdAt: null };
  }

  onStatus(listener: (status: KeeperStatus) => void): () => void {
    return this.statusBoard.onChange(listener);
  }

  onIdleFailure(listener: (failure: IdleFailure) => void): () => void {
    return this.idleFailures.add(listener);
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
    this.retries.cancel();
    if (this.status.state === 'config_error') this.statusBoard.set({ state: 'arming' });
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
    const attempt = this.attempts.listen();
    if (!this.preparing) this.retryNow();
    if (!this.preparing) {
      // Nothing to try: a session is ready (or kept for a customer), or the policy keeps none warm.
      attempt.cancel();
      return this.status.state === 'armed' || this.status.state === 'standby'
        ? { tried: true, at, reachable: true }
        : { tried: false, at, reason: 'stopped' };
    }
    return attemptReport(at, await attempt.within(timeoutMs));
  }

  /**
   * Waits until the request budget lets one more request go to the backend, and counts it. Every request
   * passes here: the keeper's own, and `GET /sessions/{id}` of a result recovery.
   */
  admitRequest(signal: AbortSignal): Promise<void> {
    return this.gate.admit(signal);
  }

  /**
   * Hands out an armed session, waiting up to `timeoutMs` for one. The caller owns it until `release()`.
   * Rejects with {@link ArmTimeoutError} or {@link AbortedError}.
   */
  async acquire(timeoutMs: number, signal: AbortSignal): Promise<ArmedSession> {
    const deadline = this.now() + timeoutMs;
    this.warm.customerArrived();
    try {
      return await this.lendWhenReady(deadline, timeoutMs, signal);
    } finally {
      this.warm.customerLeft();
    }
  }

  private async lendWhenReady(deadline: number, timeoutMs: number, signal: AbortSignal): Promise<ArmedSession> {
    for (;;) {
      if (signal.aborted || this.stopped) throw new AbortedError('acquire aborted');
      // Nothing changes until staff act: fail at once instead of keeping the customer waiting.
      if (this.status.state === 'config_error') throw new ArmTimeoutError(`staff needed: ${this.status.detail}`);
      const idle = this.idle.session;
      if (idle && this.age.usable(idle)) {
        this.lent = this.idle.lend();
        this.options.log.info({ event: 'session_acquired', sessionId: idle.session.id }, 'verification starts on the pre-warmed session');
        return idle;
      }
      this.ensure();
      const left = deadline - this.now();
      if (left <= 0) throw new ArmTimeoutError(`no session ready within ${timeoutMs} ms (${this.status.state})`);
      await this.changes.wait(left, signal);
    }
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
      if (disposition !== 'spent' && this.age.worthReusing(armed.session)) {
        this.arming.reuseNext({ session: armed.session, reuses: armed.reuses + 1, usedBefore: true, conflicts: 0 });
      }
      // Schedules the re-arm after the policy's wait (and ends any earlier allowance, hence the order below).
      this.retries.failed(
        disposition === 'unanswered'
          ? { kind: 'not_answering', stage: 'verification', detail: 'the backend stopped answering during a verification' }
          : { kind: 'verification_failed', stage: 'verification', detail: `the verification ended without an outcome (${disposition})` },
      );
    }
    if (served) this.gate.allowFollowUp();
    if (disposition === 'completed') this.ensure();
  }

  /** The request profile changed: re-engage the idle session with the new namespaces. */
  namespacesChanged(): void {
    const idle = this.idle.session;
    if (!idle || sameNamespaces(idle.namespaces, this.options.namespaces())) return;
    this.arming.reuseNext({ session: idle.session, reuses: idle.reuses, usedBefore: true, conflicts: 0 });
    this.idle.drop('request profile changed');
    this.ensure();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopController.abort();
    this.retries.cancel();
    this.warm.stop();
    const idle = this.idle.stop();
    this.statusBoard.set({ state: 'stopped' });
    this.changes.wake();
    if (idle) await idle.channel.close(CloseCode.goingAway, 'kiosk stopping');
  }

  /** Decides whether a session must be prepared, and starts it. Idempotent. */
  private ensure(): void {
    if (this.stopped || !this.started || this.preparing || this.lent || this.retries.waiting) return;
    if (this.status.state === 'config_error' && !this.status.retrying) return;
    const idle = this.idle.session;
    if (idle && this.age.fresh(idle)) return;
    if (!this.warm.wantsWarm()) {
      this.standBy(idle);
      return;
    }
    // Expired, closed or engaged with an old profile: it cannot serve a tap any more.
    if (idle && !this.age.usable(idle)) this.idle.drop('session renewed');
    this.preparing = true;
    // No session to hand out: the screen must not say "ready". While retrying after failures the status stays
    // what the policy said (offline, needs staff) until an attempt succeeds.
    if (!this.idle.session && this.status.state !== 'offline' && this.status.state !== 'config_error')
      this.statusBoard.set({ state: 'arming' });
    void this.prepare().finally(() => {
      this.preparing = false;
      // What happened meanwhile (e.g. the new session ended at once) may call for another attempt.
      this.ensure();
    });
  }

  /**
   * Policy says no warm session: a usable idle one serves until its expiry timer retires it (it is not
   * renewed); otherwise none is prepared and the kiosk waits, ready, for a tap or scan to ask for one.
   */
  private standBy(idle: ArmedSession | undefined): void {
    if (idle && this.age.usable(idle)) {
      this.idle.stopRenewal();
    } else {
      this.idle.drop('no session kept warm (session.prewarm)');
      if (this.status.state !== 'standby')
        this.options.log.info(
          { event: 'session_standby', policy: this.options.config.session.prewarm },
          'no session kept warm until a customer comes',
        );
      this.statusBoard.set({ state: 'standby' });
      this.changes.wake();
    }
    this.warm.lookAgainLater(() => this.ensure());
  }

  private async prepare(): Promise<void> {
    try {
      const armed = await this.arming.arm(this.stopController.signal);
      if (this.stopped) {
        await armed.channel.close(CloseCode.goingAway, 'kiosk stopping');
        return;
      }
      // False: something the backend sent before the watcher was in place already ended this session.
      if (this.idle.install(armed)) {
        this.statusBoard.clearDeferred();
        this.statusBoard.set({ state: 'armed' });
        this.changes.wake();
      }
      this.attempts.ended({ reachable: true });
    } catch (e) {
      if (this.stopped || e instanceof AbortedError) return;
      const backendFailure = e instanceof ArmingFailure;
      this.retries.failed(backendFailure ? e.failure : armingFault(e, this.options.log));
      this.attempts.ended({ reachable: false, detail: backendFailure ? e.failure.detail : 'unexpected fault in the kiosk' });
    }
  }
}
