/**
 * Scripted fake of the verification backend for conformance tests: the two HTTP endpoints and the
 * session WebSocket of the spec, on 127.0.0.1 with a free port. It runs no mdoc logic; each test scripts
 * what the backend says and asserts what the kiosk sends. (The real-crypto mock backend is a QA simulator
 * of its own, under src/sim.)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

export interface ReceivedMessage {
  readonly [key: string]: unknown;
  readonly type: string;
  readonly op: string;
}

export interface FakeSession {
  readonly id: string;
  readonly secret: string;
  readonly createdAt: number;
  /** What `GET /sessions/{id}` answers; 200 with this body, or the status when a number. */
  result: unknown;
  expired: boolean;
}

export interface HttpRecord {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: string;
  /** `performance.now()` when the request arrived (to time how soon the kiosk asked). */
  readonly at: number;
}

export interface HandshakeRecord {
  readonly sessionId: string;
  readonly path: string;
  readonly query: string;
  readonly authorization: string | undefined;
  readonly status: number;
  /** `performance.now()` when the handshake arrived (to time a client's back-off). */
  readonly at: number;
}

export class FakeConnection {
  private readonly inbox: unknown[] = [];
  private waiters: ((message: unknown) => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  isClosed = false;

  constructor(
    readonly socket: WebSocket,
    readonly session: FakeSession,
    readonly auth: 'header' | 'query',
  ) {
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      const text = data.toString('utf8');
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch {
        message = { type: '<invalid json>', op: '<invalid json>', raw: text };
      }
      if (isBinary) message = { type: '<binary>', op: '<binary>' };
      const waiter = this.waiters.shift();
      if (waiter) waiter(message);
      else this.inbox.push(message);
    });
    this.closed = new Promise((resolve) => {
      socket.on('close', (code: number, reason: Buffer) => {
        this.isClosed = true;
        resolve({ code, reason: reason.toString('utf8') });
      });
    });
  }

  /** Messages received and not yet taken. */
  get pending(): readonly unknown[] {
    return this.inbox;
  }

  /** The next message from the kiosk (parsed JSON); rejects after `timeoutMs`. */
  receive(timeoutMs = 5_000): Promise<ReceivedMessage> {
    const queued = this.inbox.shift();
    if (queued !== undefined) return Promise.resolve(queued as ReceivedMessage);
    return new Promise((resolve, reject) => {
      const waiter = (message: unknown): void => {
        clearTimeout(timer);
        resolve(message as ReceivedMessage);
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`fake backend: no message from the kiosk within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Receives and checks the op; returns the message. */
  async expect(op: string, timeoutMs?: number): Promise<ReceivedMessage> {
    const message = await this.receive(timeoutMs);
    if (message.op !== op) {
      throw new Error(`fake backend: expected ${op}, got ${JSON.stringify(message).slice(0, 300)}`);
    }
    return message;
  }

  /** Asserts that nothing arrives for `ms`. */
  async expectSilence(ms = 100): Promise<void> {
    const message = await this.receive(ms).catch(() => undefined);
    if (message) throw new Error(`fake backend: expected silence, got ${JSON.stringify(message).slice(0, 300)}`);
  }

  send(message: unknown): void {
    this.socket.send(JSON.stringify(message));
  }

  sendRaw(text: string): void {
    this.socket.send(text);
  }

  sendBinary(bytes: Uint8Array): void {
    this.socket.send(bytes, { binary: true });
  }

  stepRequest(op: string, params: Record<string, unknown> = {}): void {
    this.send({ type: 'step_request', op, params });
  }

  close(code = 1000, reason = ''): void {
    this.socket.close(code, reason);
  }

  terminate(): void {
    this.socket.terminate();
  }
}

export interface FakeBackendOptions {
  readonly apiKey?: string;
  /** Body for `POST /sessions` beyond id/client_secret/iframe_url (e.g. unknown fields). */
  readonly extraSessionFields?: Record<string, unknown>;
  /** Serve HTTPS and WSS with this key and certificate chain (PEM) instead of plain HTTP. */
  readonly tls?: { readonly key: string; readonly cert: string };
  /** Host name in `baseUrl` (default 127.0.0.1; `localhost` to test a certificate's DNS name). */
  readonly host?: string;
}

export class FakeBackend {
  readonly sessions = new Map<string, FakeSession>();
  readonly http: HttpRecord[] = [];
  readonly handshakes: HandshakeRecord[] = [];
  readonly connections: FakeConnection[] = [];
  /** Statuses answered to the next `POST /sessions` calls, in order (200 when empty). */
  readonly createStatuses: number[] = [];
  /** Statuses answered to the next WebSocket handshakes, in order (101 when empty). */
  readonly handshakeStatuses: number[] = [];
  /** `Retry-After` values sent with the forced statuses above, in the same order (undefined: none). */
  readonly handshakeRetryAfter: (string | undefined)[] = [];
  /** Delay before answering `POST /sessions`. */
  createDelayMs = 0;
  private counter = 0;
  private connectionWaiters: ((c: FakeConnection) => void)[] = [];
  private onConnectionHandler: ((c: FakeConnection) => void) | undefined;
  private readonly sockets = new Set<Duplex>();

  private constructor(
    private readonly server: Server,
    private readonly wss: WebSocketServer,
    private readonly options: FakeBackendOptions,
  ) {}

  static async start(options: FakeBackendOptions = {}): Promise<FakeBackend> {
    const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
    const server = options.tls ? createHttpsServer({ key: options.tls.key, cert: options.tls.cert }) : createServer();
    const backend = new FakeBackend(server, wss, options);
    server.on('request', (req, res) => backend.onRequest(req, res));
    server.on('upgrade', (req, socket, head) => backend.onUpgrade(req, socket, head));
    // With TLS the raw TCP sockets still arrive on 'connection' (https.Server is a tls.Server, itself a net.Server).
    server.on('connection', (socket: Duplex) => {
      backend.sockets.add(socket);
      socket.on('close', () => backend.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return backend;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get baseUrl(): string {
    return `${this.options.tls ? 'https' : 'http'}://${this.options.host ?? '127.0.0.1'}:${this.port}/v1`;
  }

  get apiKey(): string {
    return this.options.apiKey ?? 'test-api-key-0123456789';
  }

  /** Every live connection goes to `handler` instead of `nextConnection()` waiters. */
  onConnection(handler: ((c: FakeConnection) => void) | undefined): void {
    this.onConnectionHandler = handler;
  }

  /** The next WebSocket connection the kiosk opens (or one already open and not yet taken). */
  nextConnection(timeoutMs = 5_000): Promise<FakeConnection> {
    const taken = this.connections.find((c) => !(c as { taken?: boolean }).taken && !c.isClosed);
    if (taken) {
      (taken as { taken?: boolean }).taken = true;
      return Promise.resolve(taken);
    }
    return new Promise((resolve, reject) => {
      const waiter = (c: FakeConnection): void => {
        clearTimeout(timer);
        (c as { taken?: boolean }).taken = true;
        resolve(c);
      };
      const timer = setTimeout(() => {
        this.connectionWaiters = this.connectionWaiters.filter((w) => w !== waiter);
        reject(new Error(`fake backend: no WebSocket connection within ${timeoutMs} ms`));
      }, timeoutMs);
      this.connectionWaiters.push(waiter);
    });
  }

  /** Creates a session as `POST /sessions` would (for tests that drive the API directly). */
  createSession(): FakeSession {
    this.counter++;
    const session: FakeSession = {
      id: `sess-${this.counter}`,
      secret: `secret-${this.counter}-${Math.random().toString(36).slice(2)}`,
      createdAt: Date.now(),
      result: 404,
      expired: false,
    };
    this.sessions.set(session.id, session);
    return session;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      this.http.push({
        method: req.method ?? '',
        path: url.pathname,
        authorization: req.headers.authorization,
        body,
        at: performance.now(),
      });
      const reply = (status: number, payload?: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(payload === undefined ? '' : JSON.stringify(payload));
      };
      if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
        reply(401, { error: 'unauthorized' });
        return;
      }
      if (req.method === 'POST' && url.pathname === '/v1/sessions') {
        const status = this.createStatuses.shift() ?? 200;
        const answer = (): void => {
          if (status !== 200) {
            reply(status, { error: `status ${status}` });
            return;
          }
          const session = this.createSession();
          reply(200, {
            id: session.id,
            client_secret: session.secret,
            iframe_url: `https://example.invalid/iframe/${session.id}`,
            ...this.options.extraSessionFields,
          });
        };
        if (this.createDelayMs > 0) setTimeout(answer, this.createDelayMs);
        else answer();
        return;
      }
      const match = /^\/v1\/sessions\/([^/]+)$/.exec(url.pathname);
      if (req.method === 'GET' && match?.[1]) {
        const session = this.sessions.get(decodeURIComponent(match[1]));
        if (!session) {
          reply(404, { error: 'unknown session' });
          return;
        }
        if (typeof session.result === 'number') {
          reply(session.result, { error: 'no result' });
          return;
        }
        reply(200, session.result);
        return;
      }
      reply(404, { error: 'no such endpoint' });
    });
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const match = /^\/v1\/sessions\/([^/]+)\/mdoc-proximity\/ws$/.exec(url.pathname);
    const refuse = (status: number, retryAfter?: string): void => {
      const extra = retryAfter === undefined ? '' : `Retry-After: ${retryAfter}\r\n`;
      socket.write(`HTTP/1.1 ${status} Refused\r\nConnection: close\r\n${extra}Content-Length: 0\r\n\r\n`);
      socket.destroy();
    };
    const sessionId = match?.[1] ? decodeURIComponent(match[1]) : '';
    const record = (status: number): void => {
      this.handshakes.push({
        sessionId,
        path: url.pathname,
        query: url.search,
        authorization: req.headers.authorization,
        status,
        at: performance.now(),
      });
    };
    const forced = this.handshakeStatuses.shift();
    if (forced !== undefined && forced !== 101) {
      record(forced);
      refuse(forced, this.handshakeRetryAfter.shift());
      return;
    }
    const session = this.sessions.get(sessionId);
    if (!session || session.expired) {
      record(404);
      refuse(404);
      return;
    }
    const token = url.searchParams.get('token');
    const header = req.headers.authorization;
    let auth: 'header' | 'query';
    if (header === `Bearer ${session.secret}`) auth = 'header';
    else if (token === session.secret) auth = 'query';
    else {
      record(401);
      refuse(401);
      return;
    }
    if (this.connections.some((c) => c.session === session && !c.isClosed)) {
      record(409);
      refuse(409);
      return;
    }
    record(101);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const connection = new FakeConnection(ws, session, auth);
      this.connections.push(connection);
      if (this.onConnectionHandler) {
        (connection as { taken?: boolean }).taken = true;
        this.onConnectionHandler(connection);
        return;
      }
      const waiter = this.connectionWaiters.shift();
      if (waiter) waiter(connection);
    });
  }

  async stop(): Promise<void> {
    for (const c of this.connections) c.terminate();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
