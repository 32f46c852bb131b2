/**
 * Every way the backend (or the road to it) can fail the session keeper, as one closed list of kinds.
 * The retry policy (retry-policy.ts) decides on these kinds alone; diagnostics, health.json, the metrics
 * file and the support bundle name them, so a kind is a stable key (docs/protocol.md §10.1).
 */
import type { BackendFailureKind, FailureStage } from '../common/backend-failure-kinds.js';
import { proxyFailureIsConfiguration } from './backend-proxy.js';
import type { RelayHandshakeError } from './relay-link.js';
import type { SessionApiError } from './session-client.js';

// The list itself is a contract the screen and the health schema read too: it lives in common/.
export { BACKEND_FAILURE_KINDS, type BackendFailureKind, type FailureStage } from '../common/backend-failure-kinds.js';

export interface BackendFailure {
  readonly kind: BackendFailureKind;
  readonly stage: FailureStage;
  /** The HTTP status, when there was one (the backend's, or the proxy's for `proxy_refused`). */
  readonly status?: number;
  /** `Retry-After`, already bounded by the HTTP clients. */
  readonly retryAfterMs?: number;
  /** Staff-facing words: free of secrets, the peer's text never quoted. */
  readonly detail: string;
}

/** What the keeper knows of the session a handshake failed for. */
export interface HandshakeContext {
  /** The session served before (it was armed at least once): a 404 or 401 on it is an ordinary ending. */
  readonly usedBefore: boolean;
}

/** Statuses that are configuration, not luck: a redirect or a client error other than the ones with a meaning. */
function gatewayRefusalDetail(status: number | undefined): string {
  if (status !== undefined && status >= 300 && status < 400) {
    return `the backend redirects the session connection (HTTP ${status}): the WebSocket address must reach the backend directly — check backend.baseUrl and the gateway`;
  }
  return `the backend refuses the session connection (HTTP ${status ?? '?'}) — check the WebSocket route of the gateway`;
}

/** A failed `POST /sessions`, classified. */
export function createFailure(e: SessionApiError): BackendFailure {
  const base = {
    stage: 'create' as const,
    detail: e.message,
    ...(e.status === undefined ? {} : { status: e.status }),
    ...(e.retryAfterMs === undefined ? {} : { retryAfterMs: e.retryAfterMs }),
  };
  switch (e.kind) {
    case 'network':
      return { ...base, kind: 'unreachable' };
    case 'timeout':
      return { ...base, kind: 'timeout' };
    case 'tls':
      return { ...base, kind: 'tls' };
    case 'server':
      return { ...base, kind: 'server_error' };
    case 'rate_limited':
      return { ...base, kind: 'rate_limited' };
    case 'bad_response':
      return { ...base, kind: 'bad_response' };
    case 'unauthorized':
    case 'forbidden':
      return { ...base, kind: 'credentials_refused', detail: `${e.message}: check the API key` };
    case 'conflict':
      // The spec gives POST /sessions no 409; it is read as the backend being busy.
      return { ...base, kind: 'server_error' };
    case 'not_found':
      return { ...base, kind: 'api_rejected', detail: `${e.message}: the session API is not at this address — check backend.baseUrl` };
    case 'client':
      return {
        ...base,
        kind: 'api_rejected',
        detail: `${e.message}: the backend refuses the request — check backend.baseUrl and backend.createSessionBody`,
      };
    case 'proxy':
      return { ...base, kind: proxyFailureIsConfiguration(e) ? 'proxy_refused' : 'proxy_unreachable' };
    case 'aborted':
      // Never classified: the keeper is stopping. Kept total for the type checker.
      return { ...base, kind: 'unreachable' };
  }
}

/** A failed WebSocket handshake, classified with what the keeper knows of the session. */
export function handshakeFailure(e: RelayHandshakeError, context: HandshakeContext): BackendFailure {
  const base = {
    stage: 'handshake' as const,
    detail: e.message,
    ...(e.status === undefined ? {} : { status: e.status }),
    ...(e.retryAfterMs === undefined ? {} : { retryAfterMs: e.retryAfterMs }),
  };
  switch (e.kind) {
    case 'session_gone':
      // A session that served is expected to end; one that never connected was refused by whatever answers.
      return context.usedBefore
        ? { ...base, kind: 'session_gone' }
        : { ...base, kind: 'socket_refused', detail: gatewayRefusalDetail(e.status) };
    case 'conflict':
      return { ...base, kind: 'conflict' };
    case 'unauthorized':
    case 'forbidden':
      return context.usedBefore
        ? { ...base, kind: 'secret_expired' }
        : {
            ...base,
            kind: 'credentials_refused',
            detail: `WebSocket handshake refused (HTTP ${e.status ?? '?'}): check the backend configuration`,
          };
    case 'http': {
      const status = e.status;
      if (status === 429) return { ...base, kind: 'rate_limited' };
      if (status !== undefined && status >= 500) return { ...base, kind: 'server_error' };
      return { ...base, kind: 'socket_refused', detail: gatewayRefusalDetail(status) };
    }
    case 'network':
      return { ...base, kind: 'unreachable' };
    case 'tls':
      return { ...base, kind: 'tls' };
    case 'timeout':
      return { ...base, kind: 'timeout' };
    case 'proxy':
      return { ...base, kind: proxyFailureIsConfiguration(e) ? 'proxy_refused' : 'proxy_unreachable' };
    case 'aborted':
      return { ...base, kind: 'unreachable' };
  }
}
