/**
 * HTTP client of the session API (spec §4.1): `POST /sessions` and `GET /sessions/{id}` with the API key
 * as a bearer token. Failures become a {@link SessionApiError} with a kind the caller can act on; neither
 * the key nor response bodies ever appear in an error message.
 */
import { Agent, ProxyAgent, fetch as undiciFetch, type Dispatcher } from 'undici';
import { SessionCreated, SessionResult } from '../common/protocol/messages.js';
import type { BackendEndpoints } from './backend-endpoints.js';
import {
  describeProxyFailure,
  findProxyTunnelError,
  proxyFailureIsConfiguration,
  ProxyTunnelError,
  type BackendProxy,
  type ProxyFailureStage,
} from './backend-proxy.js';
import { TunnelProxyPool } from './proxy-tunnel.js';
import { describeTlsFailure, type TlsTrust } from './tls-trust.js';

export type SessionApiErrorKind =
  | 'unauthorized' // 401: wrong or missing API key
  | 'forbidden' // 403: key not allowed to do this
  | 'not_found' // 404: unknown or expired session
  | 'conflict' // 409
  | 'rate_limited' // 429
  | 'server' // 5xx
  | 'client' // other 4xx
  | 'network' // no HTTP answer (DNS, refused, reset)
  | 'tls' // the backend's certificate is not trusted (or the handshake failed): staff must act
  | 'proxy' // the forward proxy failed before the backend was reached (proxyStage says how; status: its refusal)
  | 'timeout' // no answer in time
  | 'bad_response' // 2xx whose body is not what the spec shows
  | 'aborted'; // the caller gave up

export class SessionApiError extends Error {
  override readonly name = 'SessionApiError';
  constructor(
    readonly kind: SessionApiErrorKind,
    message: string,
    readonly status?: number,
    /** From `Retry-After` on any error answer (409, 429, 503 …), when given. */
    readonly retryAfterMs?: number,
    /** Kind `proxy`: which part of reaching the proxy failed. */
    readonly proxyStage?: ProxyFailureStage,
  ) {
    super(message);
  }

  /** Worth trying again later without changing the configuration. */
  get transient(): boolean {
    // A proxy that is down or cannot reach the backend comes back; its refusal of our credentials does not.
    if (this.kind === 'proxy') return !proxyFailureIsConfiguration(this);
    return ['rate_limited', 'server', 'network', 'timeout', 'conflict'].includes(this.kind);
  }
}

export interface Session {
  readonly id: string;
  readonly clientSecret: string;
  /** Local clock (ms) just before `POST /sessions` was sent; the 10-minute lifetime counts from then. */
  readonly createdAt: number;
}

export interface SessionClientOptions {
  readonly endpoints: BackendEndpoints;
  readonly apiKey: string;
  readonly timeoutMs: number;
  readonly createBody?: Record<string, unknown>;
  readonly now?: () => number;
  /** The backend's TLS trust (extra CAs, pins); default: Node's bundled roots. */
  readonly tls?: TlsTrust;
  /** A forward proxy to tunnel through (src/kiosk/backend-proxy.ts); the TLS trust applies inside the tunnel. */
  readonly proxy?: BackendProxy;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * A short, safe description of a failed fetch: the system error code (ECONNREFUSED, ENOTFOUND, …) when
 * there is one. The raw message is not used: undici quotes header values in some errors, and the
 * Authorization header holds the API key.
 */
function networkCause(e: unknown): string {
  return causeCode(e) ?? 'request failed before an HTTP answer';
}

/** The error a fetch failure becomes when it is the proxy's. */
function proxyError(what: string, proxy: BackendProxy, failure: ProxyTunnelError, timeoutMs: number): SessionApiError {
  return new SessionApiError(
    'proxy',
    `${what}: ${describeProxyFailure(proxy, failure, timeoutMs)}`,
    failure.status,
    undefined,
    failure.stage,
  );
}

/** The system or TLS error code of a failed fetch (undici puts it on `cause`), when it looks like one. */
function causeCode(e: unknown): string | undefined {
  const cause = e instanceof Error ? e.cause : undefined;
  const code = typeof cause === 'object' && cause !== null && 'code' in cause ? cause.code : undefined;
  return typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? code : undefined;
}

/** Reads the body as UTF-8, refusing more than `max` bytes without buffering them. */
async function readCapped(response: Awaited<ReturnType<typeof undiciFetch>>, max: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) throw new SessionApiError('bad_response', 'response too large');
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > max) throw new SessionApiError('bad_response', 'response too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The kind of a session API error answer, by its HTTP status. */
export function sessionKindForStatus(status: number): SessionApiErrorKind {
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server';
  return 'client';
}

function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, 300_000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.min(date - Date.now(), 300_000));
}

export class SessionClient {
  private readonly now: () => number;
  /** undici's own fetch and connection pool, so the TLS policy applies to every request (keep-alive too). */
  private readonly dispatcher: Dispatcher;
  /** The client to the proxy, when there is one: it knows whether a tunnel is still being opened. */
  private proxyClient: TunnelProxyPool | undefined;

  constructor(private readonly options: SessionClientOptions) {
    this.now = options.now ?? Date.now;
    const tls = options.tls;
    const backendTls = tls ? { ...(tls.ca ? { ca: [...tls.ca] } : {}), checkServerIdentity: tls.checkServerIdentity } : {};
    const proxy = options.proxy;
    const timeoutMs = options.timeoutMs;
    this.dispatcher = proxy
      ? new ProxyAgent({
          uri: proxy.url.href,
          ...(proxy.authorization === undefined ? {} : { token: proxy.authorization }),
          // A tunnel even to a plain-http lab backend: the proxy then relays bytes, it does not rewrite requests.
          proxyTunnel: true,
          requestTls: backendTls,
          // The connection to the proxy: its own CAs (an https:// proxy), and no longer than a request may take.
          proxyTls: { ...(proxy.ca === undefined ? {} : { ca: [...proxy.ca] }), timeout: timeoutMs },
          clientFactory: (origin, opts) => (this.proxyClient = new TunnelProxyPool(origin, { ...opts, headersTimeout: timeoutMs })),
        })
      : new Agent({ connect: backendTls });
  }

  /** Closes the connection pool (idempotent). */
  async close(): Promise<void> {
    await this.dispatcher.close().catch(() => undefined);
  }

  /** `POST /sessions`. */
  async createSession(signal?: AbortSignal): Promise<Session> {
    const createdAt = this.now();
    const body = await this.request('POST', this.options.endpoints.sessionsUrl(), signal, this.options.createBody ?? {});
    const parsed = SessionCreated.safeParse(body);
    if (!parsed.success) {
      throw new SessionApiError('bad_response', 'POST /sessions: response lacks a string id and client_secret');
    }
    return { id: parsed.data.id, clientSecret: parsed.data.client_secret, createdAt };
  }

  /** `GET /sessions/{id}`. */
  async getResult(sessionId: string, signal?: AbortSignal): Promise<SessionResult> {
    const body = await this.request('GET', this.options.endpoints.sessionUrl(sessionId), signal);
    const parsed = SessionResult.safeParse(body);
    if (!parsed.success) {
      throw new SessionApiError('bad_response', 'GET /sessions/{id}: response does not have the result shape');
    }
    return parsed.data;
  }

  private async request(method: 'GET' | 'POST', url: URL, signal: AbortSignal | undefined, body?: unknown): Promise<unknown> {
    const what = method === 'POST' ? 'POST /sessions' : 'GET /sessions/{id}';
    // A per-request controller rather than AbortSignal.any(): combining with a long-lived caller signal
    // leaks on Node 20 (nodejs/node#55351), one entry per request.
    const request = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      request.abort();
    }, this.options.timeoutMs);
    const onCallerAbort = (): void => request.abort();
    if (signal?.aborted) request.abort();
    else signal?.addEventListener('abort', onCallerAbort, { once: true });
    try {
      return await this.exchange(method, url, what, request.signal, () => timedOut, signal, body);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  private async exchange(
    method: 'GET' | 'POST',
    url: URL,
    what: string,
    requestSignal: AbortSignal,
    timedOut: () => boolean,
    signal: AbortSignal | undefined,
    body?: unknown,
  ): Promise<unknown> {
    let response: Awaited<ReturnType<typeof undiciFetch>>;
    try {
      response = await undiciFetch(url, {
        method,
        headers: {
          authorization: `Bearer ${this.options.apiKey}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: requestSignal,
        redirect: 'error', // a redirect could carry the bearer token to another host
        dispatcher: this.dispatcher,
      });
    } catch (e) {
      if (signal?.aborted) throw new SessionApiError('aborted', `${what}: cancelled`);
      const proxy = this.options.proxy;
      if (timedOut()) {
        // Still waiting for the proxy to open a tunnel: the time ran out at the proxy, not the backend.
        if (proxy && (this.proxyClient?.opening ?? 0) > 0)
          throw proxyError(what, proxy, new ProxyTunnelError('timeout', undefined), this.options.timeoutMs);
        throw new SessionApiError('timeout', `${what}: no answer within ${this.options.timeoutMs} ms`);
      }
      const failure = proxy ? findProxyTunnelError(e) : undefined;
      if (proxy && failure) throw proxyError(what, proxy, failure, this.options.timeoutMs);
      const tls = describeTlsFailure(causeCode(e) ?? '');
      if (tls !== undefined) throw new SessionApiError('tls', `${what}: ${tls}`);
      // The tunnel was open (the proxy's own failures are caught above): what failed is the backend's side.
      const behind = proxy ? " from the backend, through the proxy's open tunnel" : '';
      throw new SessionApiError('network', `${what}: ${networkCause(e)}${behind}`);
    }
    let text: string;
    try {
      text = await readCapped(response, MAX_BODY_BYTES);
    } catch (e) {
      if (e instanceof SessionApiError) throw new SessionApiError(e.kind, `${what}: ${e.message}`);
      if (signal?.aborted) throw new SessionApiError('aborted', `${what}: cancelled`);
      if (timedOut()) throw new SessionApiError('timeout', `${what}: body not received within ${this.options.timeoutMs} ms`);
      throw new SessionApiError('network', `${what}: connection lost while reading the response`);
    }
    if (!response.ok) {
      throw new SessionApiError(
        sessionKindForStatus(response.status),
        `${what}: HTTP ${response.status}`,
        response.status,
        retryAfterMs(response.headers.get('retry-after')),
      );
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new SessionApiError('bad_response', `${what}: response is not JSON`);
    }
  }
}
