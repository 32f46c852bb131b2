/**
 * The mock verification backend: the service side of `docs/protocol.md` in full, for QA and tests.
 *
 * - `POST {base}/sessions` and `GET {base}/sessions/{id}` with `Authorization: Bearer <API_KEY>`;
 * - the session WebSocket `{base}/sessions/{id}/mdoc-proximity/ws`, authenticated by the `token` query or
 *   `Authorization: Bearer <CLIENT_SECRET>`; 401 wrong secret, 404 unknown or expired, 409 a second
 *   connection (spec §7.1);
 * - sessions expire `lifetimeMs` after creation (10 minutes by default, spec §8);
 * - `{base}/__mock/faults` (API key) reads and sets the QA fault plan.
 *
 * Choices where the spec says "not shown" (also in docs/qa-simulators.md): `POST /sessions` answers 201 with
 * `{id, client_secret, iframe_url}` and ignores its body; HTTP errors are JSON `{"error": text}` with 401
 * (missing or wrong key), 404 (unknown or expired session, unknown path), 405 (wrong method); a session's
 * `status` is `pending` until a verification completed on it, then `success` (whatever the verdict:
 * `errors` says whether the credential must be rejected).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { ZodError } from 'zod';
import type { ReaderEngineFactory } from './engine.js';
import { FaultController, type FaultPlanInput, type HttpExchange, type HttpFailure } from './faults.js';
import { ProtocolLog, type ProtocolLogSink } from './protocol-log.js';
import { RelaySession } from './relay-session.js';
import { SessionStore, secretMatches, type StoredSession } from './session-store.js';

export interface MockBackendOptions {
  /** Listen address; loopback by default. */
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  /** Path prefix of every endpoint (e.g. `/v1`); empty by default. */
  readonly basePath?: string;
  readonly apiKeys: readonly string[];
  readonly engineFactory: ReaderEngineFactory;
  /** Session lifetime from creation (spec §8: 10 minutes). */
  readonly lifetimeMs?: number;
  /** Recoverable PC/SC failures tolerated per verification (the spec does not show the count). */
  readonly nfcRetryLimit?: number;
  readonly faults?: FaultPlanInput;
  readonly protocolLog?: ProtocolLogSink;
  readonly logPayloads?: boolean;
  /** Wait for the kiosk to close after `error`/`complete` before closing (ms). */
  readonly closeGraceMs?: number;
  /**
   * Sees every request as its headers arrive, before any check or fault (QA: the fleet bench counts what
   * reaches the backend, test/bench/fleet.ts). Runs synchronously; what it throws is ignored.
   */
  readonly onRequest?: (arrival: RequestArrival) => void;
}

/** One request as it reached the mock backend (see {@link MockBackendOptions.onRequest}). */
export interface RequestArrival {
  /** `Date.now()` when the request's headers were read. */
  readonly at: number;
  /** `POST /sessions`, `GET /sessions/{id}`, the session WebSocket's upgrade, or anything else. */
  readonly exchange: 'create' | 'result' | 'upgrade' | 'other';
  /** The session addressed (`result`, `upgrade`); undefined otherwise. */
  readonly sessionId: string | undefined;
  /**
   * Which of `apiKeys` the bearer token is (its index), or -1: none, or an upgrade (whose bearer is the
   * session's client secret). The key itself is not handed out.
   */
  readonly apiKeyIndex: number;
}

export interface MockBackend {
  /** Base URL for the kiosk's `backend.baseUrl`. */
  readonly url: string;
  readonly port: number;
  readonly faults: FaultController;
  readonly sessions: SessionStore;
  /** Changes the lifetime of sessions created from now on (QA "short expiry"). */
  setLifetime(ms: number): void;
  /**
   * Ends every open session socket now (QA "the connection dropped"): `close` with 1011 and a close
   * frame, or `terminate` the TCP connection without one. Returns how many were open.
   */
  dropConnections(how: 'close' | 'terminate'): number;
  /**
   * Closes the keep-alive connections that carry no request now, as the server's keep-alive timeout would a
   * few seconds later (session sockets are not touched). The soak uses it before counting sockets, so a
   * client's idle pool is not taken for a leak.
   */
  closeIdleConnections(): void;
  stop(): Promise<void>;
}

export const DEFAULT_LIFETIME_MS = 10 * 60 * 1000;
export const DEFAULT_NFC_RETRY_LIMIT = 3;

function bearer(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (!header?.startsWith('Bearer ')) return undefined;
  return header.slice('Bearer '.length);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

function refuseUpgrade(socket: Duplex, status: number, text: string, retryAfterS?: number): void {
  const retryAfter = retryAfterS === undefined ? '' : `Retry-After: ${retryAfterS}\r\n`;
  socket.write(
    `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\n${retryAfter}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(JSON.stringify({ error: text }))}\r\n\r\n${JSON.stringify({ error: text })}`,
  );
  socket.destroy();
}

/** An injected HTTP failure, with `Retry-After` when the plan gives one. */
function failHttp(res: ServerResponse, failure: HttpFailure): void {
  const text = JSON.stringify({ error: `injected fault: HTTP ${failure.status}` });
  res.writeHead(failure.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...(failure.retryAfterS === undefined ? {} : { 'retry-after': String(failure.retryAfterS) }),
  });
  res.end(text);
}

export async function startMockBackend(options: MockBackendOptions): Promise<MockBackend> {
  const host = options.host ?? '127.0.0.1';
  const base = (options.basePath ?? '').replace(/\/+$/, '');
  const faults = new FaultController(options.faults);
  const log = new ProtocolLog(options.protocolLog, options.logPayloads ?? false);
  const sessions = new SessionStore(options.lifetimeMs ?? DEFAULT_LIFETIME_MS);
  const apiKeyOk = (req: IncomingMessage): boolean => {
    const given = bearer(req);
    return options.apiKeys.some((key) => secretMatches(key, given));
  };
  const observe = (arrival: Omit<RequestArrival, 'at' | 'apiKeyIndex'>, req: IncomingMessage): void => {
    const onRequest = options.onRequest;
    if (!onRequest) return;
    const given = arrival.exchange === 'upgrade' ? undefined : bearer(req);
    const apiKeyIndex = given === undefined ? -1 : options.apiKeys.findIndex((key) => secretMatches(key, given));
    try {
      onRequest({ ...arrival, at: Date.now(), apiKeyIndex });
    } catch {
      /* an observer must not change what the backend answers */
    }
  };
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 16 * 1024 * 1024 });
  const server: Server = createServer();
  const sockets = new Set<Socket>();
  /** Requests held back by an `httpDelayMs` fault, cleared on stop so none outlives the server. */
  const delayed = new Set<NodeJS.Timeout>();
  /** Runs `answer` now, or after the planned delay for `exchange`. */
  const afterDelay = (exchange: HttpExchange, answer: () => void): void => {
    const ms = faults.current.httpDelayMs[exchange] ?? 0;
    if (ms === 0) {
      answer();
      return;
    }
    const timer = setTimeout(() => {
      delayed.delete(timer);
      answer();
    }, ms);
    delayed.add(timer);
  };
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const sessionPath = new RegExp(`^${escapeRegExp(base)}/sessions/([^/]+)$`);
  const socketPath = new RegExp(`^${escapeRegExp(base)}/sessions/([^/]+)/mdoc-proximity/ws$`);

  server.on('request', (req, res) => {
    const url = new URL(req.url ?? '/', 'http://mock');
    if (options.onRequest) {
      const resultId = sessionPath.exec(url.pathname)?.[1];
      if (url.pathname === `${base}/sessions` && req.method === 'POST') observe({ exchange: 'create', sessionId: undefined }, req);
      else if (resultId !== undefined && req.method === 'GET') observe({ exchange: 'result', sessionId: safeDecode(resultId) }, req);
      else observe({ exchange: 'other', sessionId: undefined }, req);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= 1024 * 1024) chunks.push(chunk);
    });
    req.on('end', () => {
      log.event('http', { method: req.method, path: url.pathname.replace(sessionPath, `${base}/sessions/{id}`) });
      if (!apiKeyOk(req)) {
        json(res, 401, { error: 'missing or unknown API key' });
        return;
      }
      if (url.pathname === `${base}/sessions`) {
        if (req.method !== 'POST') {
          json(res, 405, { error: 'use POST' });
          return;
        }
        afterDelay('create', () => {
          const failure = faults.takeHttpFailure('create');
          if (failure) {
            log.event('fault_http', { exchange: 'create', status: failure.status });
            failHttp(res, failure);
            return;
          }
          const session = sessions.create();
          log.event('session_created', { session: session.id, expiresAt: new Date(session.expiresAt).toISOString() });
          json(res, 201, {
            id: session.id,
            client_secret: session.clientSecret,
            iframe_url: `${url.protocol}//${req.headers.host ?? host}${base}/iframe/${encodeURIComponent(session.id)}`,
          });
        });
        return;
      }
      const match = sessionPath.exec(url.pathname);
      if (match?.[1]) {
        if (req.method !== 'GET') {
          json(res, 405, { error: 'use GET' });
          return;
        }
        const id = safeDecode(match[1]);
        afterDelay('result', () => {
          const failure = faults.takeHttpFailure('result');
          if (failure) {
            log.event('fault_http', { exchange: 'result', status: failure.status });
            failHttp(res, failure);
            return;
          }
          const session = sessions.get(id);
          if (!session) {
            json(res, 404, { error: 'session unknown or expired' });
            return;
          }
          json(res, 200, resultBody(session));
        });
        return;
      }
      if (url.pathname === `${base}/__mock/faults`) {
        if (req.method === 'GET') {
          json(res, 200, faults.current);
          return;
        }
        if (req.method !== 'POST') {
          json(res, 405, { error: 'use GET or POST' });
          return;
        }
        try {
          const plan = faults.set(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as FaultPlanInput);
          log.event('faults_set', { plan });
          json(res, 200, plan);
          return;
        } catch (e) {
          json(res, 400, {
            error: e instanceof ZodError ? e.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') : 'body must be JSON',
          });
          return;
        }
      }
      json(res, 404, { error: 'no such endpoint' });
    });
  });

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://mock');
    const match = socketPath.exec(url.pathname);
    const id = match?.[1] ? safeDecode(match[1]) : undefined;
    observe({ exchange: 'upgrade', sessionId: id }, req);
    const session = id === undefined ? undefined : sessions.get(id);
    const refuse = (status: number, text: string, retryAfterS?: number): void => {
      log.event('ws_refused', { session: id ?? null, status, reason: text });
      refuseUpgrade(socket, status, text, retryAfterS);
    };
    if (!session) {
      refuse(404, 'session unknown or expired');
      return;
    }
    const header = bearer(req);
    const token = url.searchParams.get('token');
    const auth = header !== undefined ? 'header' : 'query';
    if (!secretMatches(session.clientSecret, header ?? token)) {
      refuse(401, 'wrong or missing client secret');
      return;
    }
    const failure = faults.takeHttpFailure('upgrade');
    if (failure) {
      refuse(failure.status, `injected fault: HTTP ${failure.status}`, failure.retryAfterS);
      return;
    }
    if (faults.takeNotFound()) {
      refuse(404, 'injected fault: session unknown');
      return;
    }
    if (faults.takeConflict()) {
      refuse(409, 'injected fault: conflict');
      return;
    }
    if (session.connected) {
      refuse(409, 'the session already has a connection');
      return;
    }
    // Claimed before the upgrade completes, so two simultaneous handshakes cannot both succeed.
    session.connected = true;
    let established = false;
    socket.once('close', () => {
      if (!established) session.connected = false;
    });
    wss.handleUpgrade(req, socket, head, (ws) => {
      established = true;
      log.event('ws_open', { session: session.id, auth });
      new RelaySession(ws, session, {
        engineFactory: options.engineFactory,
        nfcRetryLimit: options.nfcRetryLimit ?? DEFAULT_NFC_RETRY_LIMIT,
        faults,
        log,
        closeGraceMs: options.closeGraceMs ?? 2_000,
      });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  log.event('listening', { url: `http://${urlHost}:${port}${base}` });
  return {
    url: `http://${urlHost}:${port}${base}`,
    port,
    faults,
    sessions,
    setLifetime: (ms) => sessions.setLifetime(ms),
    dropConnections: (how) => {
      const open = [...wss.clients];
      log.event('fault_drop', { how, connections: open.length });
      for (const client of open) {
        if (how === 'terminate') client.terminate();
        else client.close(1011, 'injected fault: connection dropped');
      }
      return open.length;
    },
    closeIdleConnections: () => {
      server.closeIdleConnections();
    },
    stop: async () => {
      for (const timer of delayed) clearTimeout(timer);
      delayed.clear();
      for (const client of wss.clients) client.terminate();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function resultBody(session: StoredSession): Record<string, unknown> {
  const result = session.result;
  if (!result) return { status: 'pending', response: {}, errors: {}, warnings: {} };
  // `status`, `response`, `errors`, `warnings` (spec §2.2) plus presentation metadata (its fields are not shown).
  return {
    status: 'success',
    response: result.response,
    errors: result.errors,
    warnings: result.warnings,
    doc_types: result.doc_types,
    issuer_authentication: result.issuer_authentication,
    device_authentication: result.device_authentication,
  };
}

/** A malformed %-escape addresses no session rather than throwing out of a request handler. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return '';
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
