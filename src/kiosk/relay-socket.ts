/**
 * `RelayConnector` over the `ws` library: the session WebSocket of spec §4.2.
 *
 * - The client secret goes in `Authorization: Bearer` by default, or in the `token` query when configured
 *   for proxies that strip headers. The URL with a token is never logged or put in an error message.
 * - Handshake answers map to {@link RelayHandshakeError} kinds (404 → session gone, 409 → conflict, …).
 * - Compression is off: frames are small and latency matters more than bytes.
 * - A heartbeat (WebSocket ping every `heartbeatMs`, each answered within `pongMs`: heartbeat.ts) finds a
 *   silent backend or a half-open connection — an idle pre-warmed socket behind a NAT or load balancer that
 *   dropped it, a backend that stopped answering without closing — before a customer's tap does. The
 *   socket is then destroyed and its close says `unanswered`, so the keeper and the verification can tell
 *   "not answering" from "closed". `probe()` pings at once (a tap or a scan asks for it).
 */
import { Heartbeat } from './heartbeat.js';
import { describeTlsFailure, type TlsTrust } from './tls-trust.js';
import WebSocket from 'ws';
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { BackendEndpoints } from './backend-endpoints.js';
import { describeProxyFailure, ProxyTunnelError, type BackendProxy } from './backend-proxy.js';
import { TunnelProxyAgent } from './proxy-tunnel.js';
import { RelayHandshakeError, handshakeKindForStatus, type RelayConnector, type RelayLink, type RelayLinkHandlers } from './relay-link.js';
import type { Session } from './session-client.js';

export interface WsRelayConnectorOptions {
  readonly endpoints: BackendEndpoints;
  readonly auth: 'header' | 'query';
  readonly connectTimeoutMs: number;
  readonly closeTimeoutMs: number;
  readonly maxMessageBytes: number;
  /** Interval of the ping heartbeat; 0 turns it off. */
  readonly heartbeatMs: number;
  /** How long each ping may wait for its pong before the connection is dropped as silent. */
  readonly pongMs: number;
  /** The backend's TLS trust (extra CAs, pins); default: Node's bundled roots. */
  readonly tls?: TlsTrust;
  /** A forward proxy to tunnel through (HTTP CONNECT); the TLS trust applies inside the tunnel. */
  readonly proxy?: BackendProxy;
}

/** RFC 6455 §5.5: a close reason is at most 123 bytes of UTF-8. */
function closeReason(reason: string): string {
  let out = reason;
  while (Buffer.byteLength(out, 'utf8') > 123) out = out.slice(0, -1);
  return out;
}

function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, 300_000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.min(date - Date.now(), 300_000));
}

class WsRelayLink implements RelayLink {
  /** Set when the kiosk asked to close, so the close event can say who closed. */
  closedLocally = false;
  /** Set when a ping went unanswered and the kiosk dropped the socket for it. */
  unanswered = false;
  private closing: Promise<void> | undefined;
  private closedPromise: Promise<void>;

  private readonly heartbeat: Heartbeat;

  constructor(
    private readonly ws: WebSocket,
    private readonly closeTimeoutMs: number,
    heartbeatMs: number,
    pongMs: number,
  ) {
    this.closedPromise = new Promise((resolve) => ws.once('close', () => resolve()));
    this.heartbeat = new Heartbeat({
      intervalMs: heartbeatMs,
      pongMs,
      ping: () => {
        if (ws.readyState !== WebSocket.OPEN) return false;
        ws.ping();
        return true;
      },
      onSilent: () => {
        this.unanswered = true;
        ws.terminate(); // no pong in time: the backend is not answering (or the connection is gone)
      },
    });
    ws.on('pong', () => this.heartbeat.pong());
    ws.once('close', () => this.heartbeat.stop());
  }

  /** Pings now; no pong within `pongMs` and the socket is dropped as unanswered. */
  probe(): void {
    this.heartbeat.probe();
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  send(text: string): boolean {
    if (this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(text);
    return true;
  }

  close(code: number, reason: string): Promise<void> {
    this.closedLocally = true;
    this.closing ??= this.doClose(code, reason);
    return this.closing;
  }

  private async doClose(code: number, reason: string): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(code, closeReason(reason));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.closeTimeoutMs);
    });
    const result = await Promise.race([this.closedPromise, timedOut]);
    clearTimeout(timer);
    if (result === 'timeout') this.ws.terminate();
  }
}

export class WsRelayConnector implements RelayConnector {
  constructor(private readonly options: WsRelayConnectorOptions) {}

  connect(session: Session, handlers: RelayLinkHandlers, signal: AbortSignal): Promise<RelayLink> {
    const url = this.options.endpoints.relaySocketUrl(session.id);
    const headers: Record<string, string> = {};
    if (this.options.auth === 'query') url.searchParams.set('token', session.clientSecret);
    else headers.authorization = `Bearer ${session.clientSecret}`;

    return new Promise<RelayLink>((resolve, reject) => {
      if (signal.aborted) {
        reject(new RelayHandshakeError('aborted', 'connect cancelled'));
        return;
      }
      const proxy = this.options.proxy;
      // A tunnel agent per socket: it opens one CONNECT tunnel and the backend's TLS runs inside it.
      const agent = proxy ? new TunnelProxyAgent(proxy, this.options.connectTimeoutMs) : undefined;
      const ws = new WebSocket(url, {
        headers,
        handshakeTimeout: this.options.connectTimeoutMs,
        maxPayload: this.options.maxMessageBytes,
        perMessageDeflate: false,
        followRedirects: false,
        ...(agent ? { agent } : {}),
        ...(this.options.tls
          ? { ...(this.options.tls.ca ? { ca: [...this.options.tls.ca] } : {}), checkServerIdentity: this.options.tls.checkServerIdentity }
          : {}),
      });
      let settled = false;
      const fail = (error: RelayHandshakeError): void => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        reject(error);
      };
      const onAbort = (): void => {
        fail(new RelayHandshakeError('aborted', 'connect cancelled'));
        ws.terminate();
        agent?.cancel();
      };
      signal.addEventListener('abort', onAbort, { once: true });

      ws.on('unexpected-response', (req: ClientRequest, res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        res.resume();
        req.destroy();
        fail(
          new RelayHandshakeError(
            handshakeKindForStatus(status),
            `WebSocket handshake refused: HTTP ${status}`,
            status,
            retryAfterMs(res.headers['retry-after']),
          ),
        );
      });
      ws.on('error', (error: Error & { code?: string }) => {
        // After the handshake, errors (oversized or invalid frames) are followed by 'close', handled below.
        if (settled) {
          if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') handlers.onFrame({ kind: 'oversize' });
          return;
        }
        if (proxy && error instanceof ProxyTunnelError) {
          fail(
            new RelayHandshakeError(
              'proxy',
              `WebSocket: ${describeProxyFailure(proxy, error, this.options.connectTimeoutMs)}`,
              error.status,
              undefined,
              error.stage,
            ),
          );
          return;
        }
        const tls = describeTlsFailure(error.code ?? '');
        if (tls !== undefined) {
          fail(new RelayHandshakeError('tls', `WebSocket: ${tls}`));
          return;
        }
        const timedOut = /timed out|timeout/i.test(error.message);
        // With a proxy, its own failures are ProxyTunnelErrors (above): this one came after the tunnel opened.
        const behind = proxy ? " (from the backend, through the proxy's open tunnel)" : '';
        fail(
          new RelayHandshakeError(
            timedOut ? 'timeout' : 'network',
            timedOut
              ? `WebSocket handshake: no answer within ${this.options.connectTimeoutMs} ms`
              : `WebSocket: ${sanitize(error.message)}${behind}`,
          ),
        );
      });
      ws.on('open', () => {
        if (settled) {
          ws.terminate();
          return;
        }
        settled = true;
        signal.removeEventListener('abort', onAbort);
        const link = new WsRelayLink(ws, this.options.closeTimeoutMs, this.options.heartbeatMs, this.options.pongMs);
        ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
          if (isBinary) handlers.onFrame({ kind: 'binary', size: rawSize(data) });
          else handlers.onFrame({ kind: 'text', text: rawText(data) });
        });
        ws.once('close', (code: number, reason: Buffer) => {
          handlers.onClose({
            code,
            reason: reason.toString('utf8'),
            local: link.closedLocally,
            ...(link.unanswered ? { unanswered: true } : {}),
          });
        });
        resolve(link);
      });
    });
  }
}

function rawSize(data: WebSocket.RawData): number {
  if (Array.isArray(data)) return data.reduce((n, b) => n + b.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}

function rawText(data: WebSocket.RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  // A view, not a copy: this runs for every message.
  return (data instanceof ArrayBuffer ? Buffer.from(data) : data).toString('utf8');
}

/** Node's socket errors can quote the request target; keep the message but drop anything URL-like. */
function sanitize(message: string): string {
  return message.replace(/\b(?:wss?|https?):\/\/\S+/gi, '<url>').replace(/token=[^&\s]+/gi, 'token=<redacted>');
}
