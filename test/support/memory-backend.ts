/**
 * In-memory verification backend for fast property tests: a `RelayConnector` (the session WebSocket as
 * the relay core sees it) and a `SessionService` (`POST /sessions`, `GET /sessions/{id}`), with no
 * sockets and no HTTP. Frames travel asynchronously, one macrotask each, in order, like a real socket;
 * a burst delivers several frames back to back in one task, as `ws` does for frames that arrive in one
 * TCP segment. Handler exceptions are not caught here: they surface as uncaught exceptions, exactly as
 * they would from a `ws` event handler.
 *
 * Tests script what the backend says (`MemoryConnection.sendText`, `close`, `drop`, …) and read what the
 * kiosk sent (`next()`, `received`, `until()`).
 */
import type { SessionResult } from '../../src/common/protocol/messages.js';
import type { SessionService } from '../../src/kiosk/session-service.js';
import {
  RelayHandshakeError,
  type HandshakeFailureKind,
  type InboundFrame,
  type LinkClosed,
  type RelayConnector,
  type RelayLink,
  type RelayLinkHandlers,
} from '../../src/kiosk/relay-link.js';
import { SessionApiError, type Session, type SessionApiErrorKind } from '../../src/kiosk/session-client.js';

/** One message the kiosk sent, with its JSON parsed when it parses to an object. */
export interface ClientFrame {
  readonly text: string;
  readonly message: Readonly<Record<string, unknown>> | undefined;
  readonly op: string | undefined;
}

export interface ConnectionClosed {
  readonly code: number;
  readonly reason: string;
  /** Who started the close. */
  readonly by: 'kiosk' | 'backend';
}

export interface MemorySession {
  readonly id: string;
  readonly secret: string;
  readonly createdAt: number;
}

/** What `GET /sessions/{id}` does. */
export type ResultBehaviour =
  | { readonly kind: 'result'; readonly result: SessionResult }
  | { readonly kind: 'error'; readonly error: SessionApiErrorKind };

type Delivery =
  | { readonly kind: 'frames'; readonly frames: readonly InboundFrame[] }
  | { readonly kind: 'close'; readonly code: number; readonly reason: string; readonly local: boolean };

const nextTask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
/** Read through a call, so that the compiler does not assume it unchanged across an `await`. */
const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted ?? false;

function parseClient(text: string): ClientFrame {
  let message: Record<string, unknown> | undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) message = value as Record<string, unknown>;
  } catch {
    message = undefined;
  }
  const op = message?.op;
  return { text, message, op: typeof op === 'string' ? op : undefined };
}

/** One session WebSocket: the kiosk's end is {@link MemoryConnection.link}, the rest is the backend's end. */
export class MemoryConnection {
  readonly received: ClientFrame[] = [];
  readonly link: RelayLink;
  closeInfo: ConnectionClosed | undefined;
  readonly closed: Promise<ConnectionClosed>;
  private state: 'open' | 'closing' | 'closed' = 'open';
  private cursor = 0;
  private readonly outbox: Delivery[] = [];
  private pumping = false;
  private closing: Promise<void> | undefined;
  private resolveClosed!: (closed: ConnectionClosed) => void;

  constructor(
    readonly index: number,
    readonly session: MemorySession,
    private readonly handlers: RelayLinkHandlers,
    private readonly changed: () => void,
  ) {
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    this.link = new MemoryLink(this);
  }

  /** True until the close reached the kiosk. */
  get isOpen(): boolean {
    return this.state === 'open';
  }

  get isClosed(): boolean {
    return this.state === 'closed';
  }

  /** Frames (and a close) sent by the backend that have not reached the kiosk yet. */
  get undelivered(): number {
    return this.outbox.length;
  }

  /** Messages the kiosk sent and {@link next} has not returned yet. */
  get unread(): number {
    return this.received.length - this.cursor;
  }

  // ------------------------------------------------------------ backend → kiosk

  sendText(text: string): boolean {
    return this.enqueue({ kind: 'frames', frames: [{ kind: 'text', text }] });
  }

  send(message: unknown): boolean {
    return this.sendText(JSON.stringify(message));
  }

  sendBinary(size: number): boolean {
    return this.enqueue({ kind: 'frames', frames: [{ kind: 'binary', size }] });
  }

  /** Several frames handed to the kiosk back to back, in one task. */
  sendBurst(frames: readonly InboundFrame[]): boolean {
    return this.enqueue({ kind: 'frames', frames });
  }

  /** A clean close by the backend, after the frames already sent. */
  close(code = 1000, reason = ''): boolean {
    if (this.state !== 'open') return false;
    this.state = 'closing';
    this.closeInfo = { code, reason, by: 'backend' };
    this.outbox.push({ kind: 'close', code, reason, local: false });
    this.pump();
    return true;
  }

  /** @internal Closed by the backend before the kiosk got the link (see {@link MemoryBackend.greetings}). */
  closeNow(code: number, reason: string): void {
    this.state = 'closed';
    this.closeInfo = { code, reason, by: 'backend' };
    this.resolveClosed(this.closeInfo);
    this.handlers.onClose({ code, reason, local: false });
  }

  /** The connection is lost (reset): frames not yet delivered are lost too; the kiosk sees 1006. */
  drop(): boolean {
    if (this.state === 'closed') return false;
    const local = this.closeInfo?.by === 'kiosk';
    this.state = 'closing';
    this.closeInfo ??= { code: 1006, reason: '', by: 'backend' };
    this.outbox.length = 0;
    this.outbox.push({ kind: 'close', code: 1006, reason: '', local });
    this.pump();
    return true;
  }

  // ------------------------------------------------------------ kiosk → backend

  /** The next message from the kiosk, or undefined once the connection is closed and everything was read. */
  async next(signal?: AbortSignal): Promise<ClientFrame | undefined> {
    for (;;) {
      const frame = this.received[this.cursor];
      if (frame) {
        this.cursor++;
        return frame;
      }
      if (this.state === 'closed' || signal?.aborted) return undefined;
      await this.waitForChange(signal);
    }
  }

  private readonly changeWaiters = new Set<() => void>();

  private waitForChange(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.changeWaiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.changeWaiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  private notify(): void {
    for (const waiter of [...this.changeWaiters]) waiter();
    this.changed();
  }

  /** @internal The kiosk sends a text frame. */
  fromKiosk(text: string): boolean {
    if (this.state !== 'open') return false;
    this.received.push(parseClient(text));
    this.notify();
    return true;
  }

  /** @internal The kiosk closes. */
  closeFromKiosk(code: number, reason: string): Promise<void> {
    if (this.closing) return this.closing;
    if (this.state === 'closed') return Promise.resolve();
    if (this.state === 'open') {
      this.state = 'closing';
      this.closeInfo = { code, reason, by: 'kiosk' };
      this.outbox.push({ kind: 'close', code, reason, local: true });
      this.pump();
    }
    this.closing = this.closed.then(() => undefined);
    return this.closing;
  }

  // ------------------------------------------------------------ delivery

  private enqueue(delivery: Delivery): boolean {
    if (this.state !== 'open') return false;
    this.outbox.push(delivery);
    this.pump();
    return true;
  }

  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    setImmediate(() => this.deliverOne());
  }

  private deliverOne(): void {
    this.pumping = false;
    const delivery = this.outbox.shift();
    if (!delivery || this.state === 'closed') return;
    if (this.outbox.length > 0) this.pump();
    if (delivery.kind === 'frames') {
      // Not caught: an exception here is an uncaught exception, as it would be inside `ws`.
      for (const frame of delivery.frames) this.handlers.onFrame(frame);
      return;
    }
    this.state = 'closed';
    this.outbox.length = 0;
    const closed: LinkClosed = { code: delivery.code, reason: delivery.reason, local: delivery.local };
    this.resolveClosed(this.closeInfo ?? { code: delivery.code, reason: delivery.reason, by: delivery.local ? 'kiosk' : 'backend' });
    this.notify();
    this.handlers.onClose(closed);
  }
}

/** The kiosk's end of a {@link MemoryConnection}. */
class MemoryLink implements RelayLink {
  constructor(private readonly connection: MemoryConnection) {}

  get isOpen(): boolean {
    return this.connection.isOpen;
  }

  send(text: string): boolean {
    return this.connection.fromKiosk(text);
  }

  close(code: number, reason: string): Promise<void> {
    return this.connection.closeFromKiosk(code, reason);
  }
}

export interface MemoryBackendOptions {
  /** Refuse a second connection to a session whose previous one is not closed yet (HTTP 409), as the spec says. */
  readonly conflicts?: boolean;
}

export class MemoryBackend implements RelayConnector, SessionService {
  readonly sessions = new Map<string, MemorySession>();
  readonly connections: MemoryConnection[] = [];
  /** Failures of the next handshakes, in order (then they succeed). */
  readonly handshakeFailures: HandshakeFailureKind[] = [];
  /**
   * What the backend sends the moment the next connections open, in order: frames, or `close` (it closes
   * at once). They reach the kiosk before `connect()` resolves, as with `ws` when they arrive in the same
   * TCP segment as the 101 answer.
   */
  readonly greetings: (readonly InboundFrame[] | 'close')[] = [];
  /**
   * Failures of the next `POST /sessions` calls, in order: a kind, or a kind with the HTTP status and the
   * `Retry-After` the session client would have read from the answer.
   */
  readonly createFailures: (
    | SessionApiErrorKind
    | { readonly kind: SessionApiErrorKind; readonly status?: number; readonly retryAfterMs?: number }
  )[] = [];
  /** When each `POST /sessions` call arrived (`Date.now()`: the fake clock in tests that fake it). */
  readonly createTimes: number[] = [];
  /** What `GET /sessions/{id}` answers. */
  result: ResultBehaviour = { kind: 'error', error: 'not_found' };
  /** Delay before `GET /sessions/{id}` answers (a slow backend). */
  resultDelayMs = 0;
  createCount = 0;
  resultCount = 0;
  private counter = 0;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly options: MemoryBackendOptions = {}) {}

  /** The most recent connection, open or not. */
  get latest(): MemoryConnection | undefined {
    return this.connections.at(-1);
  }

  // ------------------------------------------------------------ SessionService

  async createSession(signal?: AbortSignal): Promise<Session> {
    await nextTask();
    if (signal?.aborted) throw new SessionApiError('aborted', 'POST /sessions: cancelled');
    this.createCount++;
    this.createTimes.push(Date.now());
    const failure = this.createFailures.shift();
    if (typeof failure === 'string') throw new SessionApiError(failure, `POST /sessions: ${failure}`);
    if (failure !== undefined)
      throw new SessionApiError(
        failure.kind,
        `POST /sessions: HTTP ${failure.status ?? failure.kind}`,
        failure.status,
        failure.retryAfterMs,
      );
    this.counter++;
    const session: MemorySession = { id: `mem-${this.counter}`, secret: `mem-secret-${this.counter}`, createdAt: Date.now() };
    this.sessions.set(session.id, session);
    return { id: session.id, clientSecret: session.secret, createdAt: session.createdAt };
  }

  async getResult(sessionId: string, signal?: AbortSignal): Promise<SessionResult> {
    this.resultCount++;
    if (this.resultDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.resultDelayMs));
    else await nextTask();
    if (signal?.aborted) throw new SessionApiError('aborted', 'GET /sessions/{id}: cancelled');
    if (!this.sessions.has(sessionId)) throw new SessionApiError('not_found', 'GET /sessions/{id}: HTTP 404', 404);
    const behaviour = this.result;
    if (behaviour.kind === 'error') throw new SessionApiError(behaviour.error, `GET /sessions/{id}: ${behaviour.error}`);
    return behaviour.result;
  }

  // ------------------------------------------------------------ RelayConnector

  async connect(session: Session, handlers: RelayLinkHandlers, signal: AbortSignal): Promise<RelayLink> {
    if (signal.aborted) throw new RelayHandshakeError('aborted', 'connect cancelled');
    await nextTask();
    if (isAborted(signal)) throw new RelayHandshakeError('aborted', 'connect cancelled');
    const failure = this.handshakeFailures.shift();
    if (failure !== undefined) throw new RelayHandshakeError(failure, `WebSocket handshake failed: ${failure}`);
    const known = this.sessions.get(session.id);
    if (!known || known.secret !== session.clientSecret) {
      throw new RelayHandshakeError('session_gone', 'WebSocket handshake refused: HTTP 404', 404);
    }
    if (this.options.conflicts && this.connections.some((c) => c.session === known && !c.isClosed)) {
      throw new RelayHandshakeError('conflict', 'WebSocket handshake refused: HTTP 409', 409);
    }
    const connection = new MemoryConnection(this.connections.length, known, handlers, () => this.changed());
    this.connections.push(connection);
    const greeting = this.greetings.shift();
    if (greeting === 'close') connection.closeNow(1000, 'greeting close');
    else if (greeting) for (const frame of greeting) handlers.onFrame(frame);
    this.changed();
    return connection.link;
  }

  // ------------------------------------------------------------ observation

  /** Resolves with the first non-undefined value of `probe`, re-evaluated after every change; undefined when `signal` aborts. */
  until<T>(probe: () => T | undefined, signal?: AbortSignal): Promise<T | undefined> {
    const now = probe();
    if (now !== undefined || signal?.aborted) return Promise.resolve(now);
    return new Promise((resolve) => {
      const check = (): void => {
        const value = probe();
        if (value === undefined && !signal?.aborted) return;
        this.listeners.delete(check);
        signal?.removeEventListener('abort', check);
        resolve(value);
      };
      this.listeners.add(check);
      signal?.addEventListener('abort', check, { once: true });
    });
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
