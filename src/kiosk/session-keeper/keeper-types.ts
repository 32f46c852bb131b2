/**
 * The shapes the session keeper's callers see (re-exported by session-keeper.ts): what it hands out, what
 * it says of itself, what it is told back, and what it is built from.
 */
import type { Namespaces } from '../../common/protocol/messages.js';
import type { KioskConfig } from '../../platform/config.js';
import type { Logger } from '../../platform/log.js';
import type { BackendFailure } from '../backend-failure.js';
import type { RelayChannel } from '../relay-channel.js';
import type { RelayConnector } from '../relay-link.js';
import type { RetryPolicy } from '../retry-policy.js';
import type { Session } from '../session-client.js';

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

export class ArmTimeoutError extends Error {
  override readonly name = 'ArmTimeoutError';
}
