/**
 * What the keeper says of itself: its status and who hears of it, the status a retry decision calls for,
 * and the log line of each decision.
 */
import type { Logger } from '../../platform/log.js';
import type { BackendFailure } from '../backend-failure.js';
import type { RetryDecision, Standing } from '../retry-policy.js';
import type { KeeperStatus } from './keeper-types.js';
import { Listeners } from './listeners.js';

/** Log events of the ordinary endings that have names of their own (the rest log `session_rearm`). */
const RECOVERING_EVENT: Partial<Record<BackendFailure['kind'], string>> = {
  conflict: 'session_conflict',
  session_gone: 'session_gone',
  secret_expired: 'session_secret_refused',
};

export class StatusBoard {
  private value: KeeperStatus = { state: 'arming' };
  /** The status a failed renewal called for, shown if the old session retires before a renewal succeeds. */
  private deferred: KeeperStatus | undefined;
  private readonly listeners: Listeners<KeeperStatus>;

  constructor(private readonly log: Logger) {
    this.listeners = new Listeners(log);
  }

  get current(): KeeperStatus {
    return this.value;
  }

  onChange(listener: (status: KeeperStatus) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Listeners hear of a status only when it differs from the one shown. */
  set(status: KeeperStatus): void {
    const prev = this.value;
    this.value = status;
    if (prev.state !== status.state || JSON.stringify(prev) !== JSON.stringify(status)) this.listeners.emit(status);
  }

  /**
   * Logs a retry decision and shows what it calls for. While an idle session still serves (a renewal failed),
   * the kiosk stays ready, and shows it only if that session retires before a renewal succeeds.
   */
  decided(decision: RetryDecision, idleServing: boolean): void {
    const { failure } = decision;
    logDecision(this.log, decision);
    if (decision.action === 'stop') {
      this.set({ state: 'config_error', detail: failure.detail, retrying: false, kind: failure.kind });
      return;
    }
    const status = statusFor(decision.standing, failure);
    if (idleServing) this.deferred = status;
    else this.set(status);
  }

  clearDeferred(): void {
    this.deferred = undefined;
  }

  /** The idle session retired: what a failed renewal called for, or connecting. */
  showDeferred(): void {
    this.set(this.deferred ?? { state: 'arming' });
  }
}

/** How the kiosk presents itself while it waits to retry, in the screen's terms. */
export function statusFor(standing: Standing, failure: BackendFailure): KeeperStatus {
  switch (standing) {
    case 'recovering':
      return { state: 'arming' };
    case 'offline':
      if (failure.kind === 'tls') return { state: 'offline', detail: failure.detail, code: 'backend_tls' };
      // Timeouts and a silent socket: something takes the traffic and answers nothing.
      if (failure.kind === 'not_answering' || failure.kind === 'timeout')
        return { state: 'offline', detail: failure.detail, code: 'backend_not_answering' };
      return { state: 'offline', detail: failure.detail };
    case 'needs_staff':
      return { state: 'config_error', detail: failure.detail, retrying: true, kind: failure.kind };
  }
}

export function logDecision(log: Logger, decision: RetryDecision): void {
  const { failure } = decision;
  const fields = {
    kind: failure.kind,
    stage: failure.stage,
    status: failure.status,
    detail: failure.detail,
    consecutive: decision.consecutive,
  };
  if (decision.action === 'stop') {
    log.error({ event: 'backend_refused_credentials', ...fields }, 'backend refused the credentials; not retrying until staff act');
  } else if (decision.standing === 'recovering') {
    log.info(
      { event: RECOVERING_EVENT[failure.kind] ?? 'session_rearm', ...fields, retryInMs: decision.delayMs },
      'connecting the session again',
    );
  } else {
    log.warn(
      {
        event: failure.kind === 'tls' ? 'backend_tls' : decision.standing === 'needs_staff' ? 'backend_needs_staff' : 'backend_unavailable',
        ...fields,
        retryInMs: decision.delayMs,
      },
      'cannot keep a session ready',
    );
  }
}
