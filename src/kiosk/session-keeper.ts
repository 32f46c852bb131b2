/**
 * Keeps one session pre-warmed while the kiosk is idle: created, its WebSocket open and `engage` sent,
 * so that a tap goes straight to `nfc_card_present` with no HTTP round trip (docs/protocol.md §10).
 *
 * - Renewal: when an idle session has less than `renewBeforeExpiryMs` left, a replacement is prepared in
 *   the background while the old one stays usable; then they are swapped. A session with less than
 *   `minRemainingToStartMs` left is never handed out, so no verification starts on a session about to expire.
 * - Re-arm: a session given back after an error, a violation or a dropped socket is reconnected with the same
 *   `id`/`client_secret` (spec §3, §5 rule 2) while it has time left; a spent one is replaced.
 * - Handshake 404 → the session is gone: create a new one. 409 → back off and retry a bounded number of
 *   times, then use a new session. 401/403 (HTTP or handshake) → configuration error: no retry loop.
 * - Backend unreachable → `offline`, retried with exponential backoff.
 * - While idle, anything the backend sends on the engaged socket is handled here: `error` resets the
 *   session on the backend (spec §3), so it is re-armed; anything else is a violation.
 */
import type { Namespaces } from '../common/protocol/messages.js';
import { AbortedError, sleep } from './async-tools.js';
import type { KioskConfig } from '../platform/config.js';
import { insideWindow } from '../platform/time-window.js';
import type { Logger } from '../platform/log.js';
import { RelayChannel, type Arrival } from './relay-channel.js';
import { CloseCode, RelayHandshakeError, type RelayConnector } from './relay-link.js';
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

export type KeeperStatus =
  | { readonly state: 'arming' }
  | { readonly state: 'armed' }
  /** No session kept warm by policy (`session.prewarm`): a tap or scan creates one. The kiosk is ready. */
  | { readonly state: 'standby' }
  /** `backend_tls`: the backend's certificate is not trusted; staff must act, so retries are slow. */
  | { readonly state: 'offline'; readonly detail: string; readonly code?: 'backend_tls' }
  | { readonly state: 'config_error'; readonly detail: string }
  | { readonly state: 'stopped' };

/** The backend ended an idle session with an `error` or an invalid message (shown to staff briefly). */
export interface IdleFailure {
  readonly code: 'backend_error' | 'protocol_violation';
  readonly detail: string;
}

/** What the holder of a lent session tells the keeper when giving it back. */
export type Disposition = 'spent' | 'retry';

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
}

/** How often the business-hours policy looks at the clock while no session is warm. */
const POLICY_CHECK_MS = 60_000;

export class ArmTimeoutError extends Error {
  override readonly name = 'ArmTimeoutError';
}

/** An idle session lost sooner than this after arming counts as a failure (backoff applies). */
const QUICK_FAILURE_MS = 10_000;

class ConfigurationRefused extends Error {
  override readonly name = 'ConfigurationRefused';
}

function sameNamespaces(a: Namespaces, b: Namespaces): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class SessionKeeper {
  private idle: ArmedSession | undefined;
  private lent: ArmedSession | undefined;
  /** A session to reconnect instead of creating a new one, and how often it has been re-armed already. */
  private reusable: { session: Session; reuses: number } | undefined;
  private preparing = false;
  private stopped = false;
  private started = false;
  private statusValue: KeeperStatus = { state: 'arming' };
  private failures = 0;
  /** Idle sessions lost soon after arming, in a row. */
  private quickFailures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
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
  private readonly idleFailureListeners = new Set<(failure: IdleFailure) => void>();
  /** Sockets being closed, by session id: the same session is reconnected only after its close (one connection per session, spec §8). */
  private readonly closing = new Map<string, Promise<void>>();
  private readonly now: () => number;

  constructor(private readonly options: SessionKeeperOptions) {
    this.now = options.now ?? Date.now;
  }

  get status(): KeeperStatus {
    return this.statusValue;
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

  /** Retry now after a configuration error or during an offline backoff (staff action). */
  retryNow(): void {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.failures = 0;
    if (this.statusValue.state === 'config_error') this.setStatus({ state: 'arming' });
    this.ensure();
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
      if (this.statusValue.state === 'config_error') throw new ArmTimeoutError(`backend refused the configuration: ${this.statusValue.detail}`);
      const idle = this.idle;
      if (idle && this.usable(idle)) {
        this.idle = undefined;
        this.lent = idle;
        this.failures = 0;
        this.quickFailures = 0;
        idle.channel.setInterceptor(undefined);
        clearTimeout(this.renewTimer);
        clearTimeout(this.expiryTimer);
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

  /** Gives a lent session back. Its socket must be closed (or closing) already. */
  release(armed: ArmedSession, disposition: Disposition): void {
    if (this.lent === armed) this.lent = undefined;
    if (disposition === 'retry' && this.remaining(armed.session) > this.options.config.session.renewBeforeExpiryMs) {
      this.reusable = { session: armed.session, reuses: armed.reuses + 1 };
    }
    this.ensure();
  }

  /** The request profile changed: re-engage the idle session with the new namespaces. */
  namespacesChanged(): void {
    const idle = this.idle;
    if (!idle || sameNamespaces(idle.namespaces, this.options.namespaces())) return;
    this.idle = undefined;
    this.reusable = { session: idle.session, reuses: idle.reuses };
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
    if (this.statusValue.state === 'config_error') return;
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
    // No session to hand out: the screen must not say "ready". During an offline backoff the status stays
    // `offline` until an attempt succeeds (failures counted in an earlier outage do not keep it `armed`).
    if (!this.idle && this.statusValue.state !== 'offline') this.setStatus({ state: 'arming' });
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
      this.watchIdle(armed, this.now());
      // Something the backend sent before the watcher was in place already ended this session.
      if (this.idle !== armed) return;
      this.scheduleRenewal(armed);
      this.setStatus({ state: 'armed' });
      this.wake();
    } catch (e) {
      if (this.stopped || e instanceof AbortedError) return;
      this.onPrepareFailure(e);
    }
  }

  private onPrepareFailure(e: unknown): void {
    const detail = e instanceof Error ? e.message : 'unknown error';
    if (e instanceof ConfigurationRefused) {
      this.options.log.error({ event: 'backend_refused_credentials', detail }, 'backend refused the credentials; not retrying');
      this.setStatus({ state: 'config_error', detail });
      this.wake();
      return;
    }
    const retryAfter = e instanceof SessionApiError || e instanceof RelayHandshakeError ? e.retryAfterMs : undefined;
    const tls = (e instanceof SessionApiError || e instanceof RelayHandshakeError) && e.kind === 'tls';
    // A certificate problem does not fix itself in a second: retry at the slowest pace, not from the fastest.
    if (tls) this.scheduleRetry(detail, this.options.config.session.offlineBackoffMaxMs, 'backend_tls');
    else this.scheduleRetry(detail, retryAfter);
  }

  /** Backs off exponentially before the next attempt, so a failing backend is not hammered. */
  private scheduleRetry(detail: string, atLeastMs?: number, code?: 'backend_tls'): void {
    this.failures++;
    const { offlineBackoffMinMs, offlineBackoffMaxMs } = this.options.config.session;
    let delay = Math.min(offlineBackoffMaxMs, offlineBackoffMinMs * 2 ** Math.min(this.failures - 1, 20));
    // The backend's Retry-After is honoured when it asks for longer, but never beyond the longest backoff:
    // a backend (or whatever answers in its name) must not park the kiosk for minutes per failure.
    if (atLeastMs !== undefined) delay = Math.max(delay, Math.min(atLeastMs, offlineBackoffMaxMs));
    this.options.log.warn({ event: code ?? 'backend_unavailable', detail, retryInMs: delay, failures: this.failures }, 'cannot keep a session ready');
    if (!this.idle || !this.usable(this.idle)) this.setStatus(code === undefined ? { state: 'offline', detail } : { state: 'offline', detail, code });
    this.wake();
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.ensure();
    }, delay);
  }

  /** Creates (or reuses) a session, opens its socket and sends `engage`. */
  private async arm(signal: AbortSignal): Promise<ArmedSession> {
    const { conflictRetries, conflictBackoffMs } = this.options.config.session;
    const reused = this.takeReusable();
    let session = reused?.session;
    let reuses = reused?.reuses ?? 0;
    let conflicts = 0;
    for (;;) {
      if (!session) {
        session = await this.create(signal);
        reuses = 0;
      }
      await this.closing.get(session.id);
      const channel = new RelayChannel();
      try {
        const link = await this.options.connector.connect(session, { onFrame: channel.onFrame, onClose: channel.onClose }, signal);
        channel.attach(link);
      } catch (e) {
        if (!(e instanceof RelayHandshakeError)) throw e;
        switch (e.kind) {
          case 'session_gone':
            this.options.log.info({ event: 'session_gone', sessionId: session.id }, 'session expired or unknown; creating a new one');
            session = undefined;
            continue;
          case 'conflict':
            if (conflicts >= conflictRetries) {
              this.options.log.warn({ event: 'session_conflict_exhausted', sessionId: session.id, conflicts }, 'session stays busy; using a new one');
              session = undefined;
              conflicts = 0;
              continue;
            }
            conflicts++;
            this.options.log.info({ event: 'session_conflict', sessionId: session.id, attempt: conflicts }, 'session busy (409); backing off');
            // The backend's Retry-After is honoured when it asks for longer, bounded like every other
            // wait it can influence (a hostile value must not park the kiosk).
            await sleep(Math.min(Math.max(conflictBackoffMs * 2 ** (conflicts - 1), e.retryAfterMs ?? 0), this.options.config.session.offlineBackoffMaxMs), signal);
            continue;
          case 'unauthorized':
          case 'forbidden':
            if (reuses > 0) {
              // The client secret of an older session may simply have expired (its lifetime is not shown, §5).
              this.options.log.info({ event: 'session_secret_refused', sessionId: session.id }, 'older session refused; creating a new one');
              session = undefined;
              continue;
            }
            throw new ConfigurationRefused(`WebSocket handshake refused (HTTP ${e.status ?? '?'}): check the backend configuration`);
          case 'aborted':
            throw new AbortedError('arming aborted');
          default:
            // A network failure says nothing about the session: try it again later.
            this.reusable = { session, reuses };
            throw e;
        }
      }
      const namespaces = this.options.namespaces();
      try {
        channel.send({ type: 'step_result', op: 'engage', status: 'ok', namespaces });
      } catch (e) {
        // The socket closed right after opening: try again through the normal retry path.
        await channel.close(CloseCode.normal, 'engage failed');
        throw e;
      }
      this.options.log.info(
        { event: 'session_armed', sessionId: session.id, remainingMs: this.remaining(session) },
        'session engaged and waiting for a tap or a scan',
      );
      return { session, channel, namespaces, reuses };
    }
  }

  private takeReusable(): { session: Session; reuses: number } | undefined {
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
      if (e instanceof SessionApiError) {
        if (e.kind === 'aborted') throw new AbortedError('session creation aborted');
        if (e.kind === 'unauthorized' || e.kind === 'forbidden') {
          throw new ConfigurationRefused(`${e.message}: check the API key`);
        }
      }
      throw e;
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
      this.failures = 0; // it lived this long: the backend works
      this.quickFailures = 0;
      this.options.log.info({ event: 'session_renewing', sessionId: armed.session.id }, 'renewing the idle session before it expires');
      this.ensure();
    }, Math.max(0, this.remaining(armed.session) - renewBeforeExpiryMs) + 1);
    this.expiryTimer = setTimeout(() => {
      if (this.idle !== armed) return;
      this.options.log.warn({ event: 'session_retired', sessionId: armed.session.id }, 'idle session too close to expiry; no replacement yet');
      this.idle = undefined;
      void this.closeIdle(armed, CloseCode.normal, 'session expiring');
      this.setStatus(this.failures > 0 ? { state: 'offline', detail: 'no session could be renewed' } : { state: 'arming' });
      this.ensure();
    }, Math.max(0, this.remaining(armed.session) - minRemainingToStartMs) + 1);
  }

  /** While idle, the backend should say nothing; anything it says is handled here. */
  private watchIdle(armed: ArmedSession, armedAt: number): void {
    const handle = (arrival: Arrival): boolean => {
      if (this.idle !== armed) return false;
      this.idle = undefined;
      // The same id and secret may be retried (spec §5 rule 2), but a session that fails again after a
      // reconnect is replaced rather than retried until it expires.
      const backendEnded = arrival.kind !== 'closed';
      this.reusable = backendEnded && armed.reuses > 0 ? undefined : { session: armed.session, reuses: armed.reuses + 1 };
      switch (arrival.kind) {
        case 'closed':
          this.options.log.warn({ event: 'idle_socket_closed', sessionId: armed.session.id, code: arrival.closed.code }, 'idle session socket closed; re-arming');
          break;
        case 'violation':
          this.options.log.warn(
            { event: 'protocol_violation', sessionId: armed.session.id, kind: arrival.violation.kind, detail: arrival.violation.detail, phase: 'idle' },
            'invalid message while idle',
          );
          void this.trackClose(armed, armed.channel.close(closeCodeForViolation(arrival.violation.kind), `protocol violation: ${arrival.violation.kind}`));
          this.idleFailed({ code: 'protocol_violation', detail: `${arrival.violation.kind}: ${arrival.violation.detail}` });
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
          } else {
            const op = arrival.message.type === 'step_request' ? arrival.message.op : undefined;
            this.options.log.warn(
              { event: 'protocol_violation', sessionId: armed.session.id, kind: 'out_of_sequence', type: arrival.message.type, op, phase: 'idle' },
              'message before any tap or scan',
            );
            void this.trackClose(armed, armed.channel.close(CloseCode.protocolError, 'protocol violation: out_of_sequence'));
            this.idleFailed({ code: 'protocol_violation', detail: `out_of_sequence: ${arrival.message.type}${op ? ` ${op}` : ''} before any tap or scan` });
          }
          break;
      }
      clearTimeout(this.renewTimer);
      clearTimeout(this.expiryTimer);
      if (this.now() - armedAt < QUICK_FAILURE_MS) this.quickFailures++;
      else this.quickFailures = 0;
      if (this.quickFailures >= 2) {
        // Lost again and again right after arming: back off instead of reconnecting in a tight loop.
        this.scheduleRetry('the backend keeps ending the idle session right after it is engaged');
      } else {
        this.setStatus({ state: 'arming' });
        this.ensure();
      }
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
