/**
 * The session WebSocket as the relay core sees it: text frames in and out, a close, and typed handshake
 * failures. `relay-socket.ts` implements it with `ws`; tests may implement it in memory.
 */
import type { ProxyFailureStage } from './backend-proxy.js';
import type { Session } from './session-client.js';

export type InboundFrame =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'binary'; readonly size: number }
  /** A message over the size limit; the socket closes with 1009 right after. */
  | { readonly kind: 'oversize' };

export interface LinkClosed {
  readonly code: number;
  readonly reason: string;
  /** True when the kiosk closed it. */
  readonly local: boolean;
  /** The kiosk dropped it because the backend answered no ping in time (`timeouts.pongMs`): not answering. */
  readonly unanswered?: boolean;
}

export interface RelayLinkHandlers {
  onFrame(frame: InboundFrame): void;
  /** Called once, whoever closed. */
  onClose(closed: LinkClosed): void;
}

export interface RelayLink {
  /** Sends one text frame; false if the link is no longer open. */
  send(text: string): boolean;
  /** Closes with the code and reason, waits for the closing handshake (bounded), then destroys. */
  close(code: number, reason: string): Promise<void>;
  readonly isOpen: boolean;
  /**
   * Bytes sent but not yet taken by the network (the backend reads slower than the kiosk writes), when the
   * link can tell; the relay bounds what it lets pile up (verification/ble-transfer/phone-side.ts).
   */
  readonly bufferedAmount?: number;
  /**
   * Checks now that the backend still answers (a WebSocket ping); a link that gets no answer in time closes
   * with `unanswered`. Links that cannot tell (in-memory test links) leave it out.
   */
  probe?(): void;
}

export type HandshakeFailureKind =
  | 'session_gone' // 404: expired or unknown: create a new session
  | 'conflict' // 409: another connection holds the session: back off, retry a bounded number of times
  | 'unauthorized' // 401: client secret refused: configuration or backend problem, no retry loop
  | 'forbidden' // 403
  | 'http' // any other non-101 answer
  | 'network'
  /** The backend's certificate is not trusted (or the TLS handshake failed): named for staff, retried slowly. */
  | 'tls'
  /** The forward proxy failed before the backend was reached (`proxyStage` says how; `status`: its refusal). */
  | 'proxy'
  | 'timeout'
  | 'aborted';

/** The kind of a handshake answered with an HTTP status other than 101 (spec §7.1). */
export function handshakeKindForStatus(status: number): HandshakeFailureKind {
  switch (status) {
    case 404:
      return 'session_gone';
    case 409:
      return 'conflict';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    default:
      return 'http';
  }
}

export class RelayHandshakeError extends Error {
  override readonly name = 'RelayHandshakeError';
  constructor(
    readonly kind: HandshakeFailureKind,
    message: string,
    readonly status?: number,
    /** From `Retry-After` on a 429 or 503 answer, when given. */
    readonly retryAfterMs?: number,
    /** Kind `proxy`: which part of reaching the proxy failed. */
    readonly proxyStage?: ProxyFailureStage,
  ) {
    super(message);
  }
}

export interface RelayConnector {
  /** Opens the session's WebSocket; rejects with {@link RelayHandshakeError}. */
  connect(session: Session, handlers: RelayLinkHandlers, signal: AbortSignal): Promise<RelayLink>;
}

/** WebSocket close codes the kiosk uses (RFC 6455 §7.4.1; 4000–4999 are application codes). */
export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  unsupportedData: 1003,
  invalidPayload: 1007,
  policyViolation: 1008,
  messageTooBig: 1009,
  internalError: 1011,
  /** The kiosk's watchdog gave up waiting (application code). */
  timeout: 4008,
} as const;
