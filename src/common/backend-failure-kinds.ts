/**
 * The names of the backend's failures, as one closed list. The session keeper classifies every failure into
 * one of these kinds (src/kiosk/backend-failure.ts says which failure is which); diagnostics, health.json,
 * the metrics file and the support bundle carry them as keys. They live here, below every room, because the
 * staff screen and the health schema validate them too. What each means for monitoring:
 * docs/installer-guide.md §12.
 */
import { z } from 'zod';

export const BACKEND_FAILURE_KINDS = [
  /** No HTTP answer: connection refused or reset, name not resolved (POST or WebSocket upgrade). */
  'unreachable',
  /** No answer in time (POST or upgrade). */
  'timeout',
  /**
   * An open session socket whose backend stopped answering without closing it: no pong within
   * `timeouts.pongMs`, or no first reply within `timeouts.firstReplyMs` after a tap or a scan.
   */
  'not_answering',
  /** The backend's certificate is not trusted, or its TLS handshake failed. */
  'tls',
  /** The forward proxy cannot be reached (refused, unresolvable, its own TLS failed). */
  'proxy_unreachable',
  /** The forward proxy refused the tunnel (407, 403, …): its configuration or credentials. */
  'proxy_refused',
  /** HTTP 5xx (POST or upgrade). */
  'server_error',
  /** HTTP 429 (POST or upgrade). */
  'rate_limited',
  /** `POST /sessions` answered 2xx without a usable session (not JSON, no id or secret). */
  'bad_response',
  /** 401/403 on `POST /sessions`, or on the upgrade of a session never used before: the API key. */
  'credentials_refused',
  /** `POST /sessions` answered another 4xx (404, 405, 400 …): the session API is not at this address. */
  'api_rejected',
  /** The upgrade of a new session answered 3xx or 4xx (404 included): a gateway that does not route it. */
  'socket_refused',
  /** Upgrade 404 on a session that was in use (expired or forgotten): a new one is due. */
  'session_gone',
  /** Upgrade 401/403 on an older session: its secret may have expired (spec §5 rule 4). */
  'secret_expired',
  /** Upgrade 409: another connection still holds the session. */
  'conflict',
  /** The session socket closed or was reset (before `engage`, or while idle). */
  'socket_lost',
  /** The backend sent `error` on the idle socket. */
  'idle_error',
  /** The backend sent something invalid, or anything at all, on the idle socket. */
  'idle_violation',
  /** A verification gave its session back to be re-armed after it failed. */
  'verification_failed',
] as const;

export const BackendFailureKind = z.enum(BACKEND_FAILURE_KINDS);
export type BackendFailureKind = z.infer<typeof BackendFailureKind>;

/** Where in the keeper's work a failure happened. */
export const FailureStage = z.enum(['create', 'handshake', 'socket', 'verification']);
export type FailureStage = z.infer<typeof FailureStage>;

/**
 * The screen's error code (`ErrorView.code`) for a configuration failure the keeper keeps probing: staff must
 * fix it, and the kiosk turns ready by itself once they have. Refused credentials stay `config_error` (the
 * keeper waits for staff's retry then).
 */
export const NEEDS_STAFF_CODES = {
  socket_refused: 'backend_refuses_socket',
  api_rejected: 'backend_api_rejected',
  proxy_refused: 'proxy_refused',
} as const satisfies Partial<Record<BackendFailureKind, string>>;
export type NeedsStaffCode = (typeof NEEDS_STAFF_CODES)[keyof typeof NEEDS_STAFF_CODES];
export const NEEDS_STAFF_CODE_LIST: readonly NeedsStaffCode[] = Object.values(NEEDS_STAFF_CODES);

/** The code of a probed configuration failure of this kind; undefined for every other kind. */
export function needsStaffCode(kind: BackendFailureKind): NeedsStaffCode | undefined {
  return (NEEDS_STAFF_CODES as Partial<Record<BackendFailureKind, NeedsStaffCode>>)[kind];
}

export function isNeedsStaffCode(code: string | undefined): code is NeedsStaffCode {
  return code !== undefined && (NEEDS_STAFF_CODE_LIST as readonly string[]).includes(code);
}
