/**
 * The browser host's transport: one WebSocket at `/api` carrying the `ClientMessage`/`HostMessage`
 * envelopes of kiosk-api.ts. It reconnects with backoff, keeps the latest raw state for late listeners,
 * and rejects calls while disconnected instead of queueing them (an intent sent minutes later, to a
 * different customer's session, would be wrong).
 */
import { HostMessage, KioskApiError, MAX_HOST_MESSAGE_BYTES, type ApiErrorBody, type IntentName } from '../../common/kiosk-api.js';
import { errorText } from '../../common/error-text.js';

/** The subset of the DOM WebSocket this transport uses, so tests can drive it with a fake. */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((ev: Event) => unknown) | null;
  onmessage: ((ev: MessageEvent) => unknown) | null;
  onclose: ((ev: CloseEvent) => unknown) | null;
  onerror: ((ev: Event) => unknown) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}
export type SocketFactory = (url: string, protocols: string[]) => SocketLike;

/**
 * `refused`: the host answers this page's origin but keeps refusing its socket — the address (its
 * per-launch token) is not valid for this kiosk, e.g. a page left open across a restart of the host.
 */
export type ConnectionStatus =
  | { readonly kind: 'connecting'; readonly attempt: number; readonly lastProblem: string | null; readonly refused?: boolean }
  | { readonly kind: 'open'; readonly lastProblem: string | null }
  | {
      readonly kind: 'waiting';
      readonly attempt: number;
      readonly retryAt: number;
      readonly lastProblem: string | null;
      readonly refused?: boolean;
    }
  | { readonly kind: 'stopped'; readonly lastProblem: string | null };

/** The host keeps refusing this page's token: waiting will not help, the address is wrong. */
export function addressRefused(connection: ConnectionStatus): boolean {
  return (connection.kind === 'waiting' || connection.kind === 'connecting') && connection.refused === true;
}

/** Thrown by a call made while the screen has no connection to the kiosk. */
export class KioskDisconnectedError extends Error {
  override readonly name = 'KioskDisconnectedError';
}

export const SUBPROTOCOL = 'mdl-kiosk.v1';
const OPEN = 1;

export interface SocketTransportOptions {
  readonly url: string;
  readonly token: string;
  readonly createSocket?: SocketFactory;
  /** First reconnect delay; doubles up to `maxBackoffMs`. */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** A call with no reply by then is rejected (the host answers loopback calls in milliseconds). */
  readonly callTimeoutMs?: number;
  readonly now?: () => number;
  /**
   * Whether the host's web server answers (the page's own origin). After handshakes that fail in a row,
   * a host that answers it is refusing this page's token, not away: the screen says the address is wrong.
   */
  readonly probeHost?: () => Promise<boolean>;
}

/** Handshakes failed in a row before the host is probed. */
const REFUSALS_BEFORE_PROBE = 2;

interface Pending {
  readonly intent: IntentName;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

export class SocketTransport {
  private socket: SocketLike | null = null;
  private status: ConnectionStatus = { kind: 'connecting', attempt: 1, lastProblem: null };
  /** Connection attempts since the last one that opened (1 while the first is under way). */
  private attempt = 0;
  /** Attempts in a row that failed: the backoff doubles with each. */
  private failures = 0;
  /** Handshakes in a row that closed before the socket opened. */
  private handshakeFailures = 0;
  private refused = false;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private latestState: unknown = undefined;
  private readonly stateListeners = new Set<(state: unknown) => void>();
  private readonly statusListeners = new Set<(status: ConnectionStatus) => void>();
  private stopped = false;
  private readonly createSocket: SocketFactory;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly callTimeoutMs: number;
  private readonly now: () => number;

  constructor(private readonly options: SocketTransportOptions) {
    this.createSocket = options.createSocket ?? ((url, protocols) => new WebSocket(url, protocols));
    this.initialBackoffMs = options.initialBackoffMs ?? 250;
    this.maxBackoffMs = options.maxBackoffMs ?? 5_000;
    this.callTimeoutMs = options.callTimeoutMs ?? 15_000;
    this.now = options.now ?? Date.now;
  }

  start(): void {
    if (this.socket || this.stopped) return;
    this.open();
  }

  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      this.detach(socket);
      socket.close(1000, 'screen closed');
    }
    this.failPending('the screen closed its connection to the kiosk');
    this.setStatus({ kind: 'stopped', lastProblem: this.status.lastProblem });
  }

  get connection(): ConnectionStatus {
    return this.status;
  }

  call(intent: IntentName, args: unknown): Promise<unknown> {
    const socket = this.socket;
    if (!socket || socket.readyState !== OPEN || this.status.kind !== 'open') {
      return Promise.reject(new KioskDisconnectedError(`${intent}: not connected to the kiosk (reconnecting)`));
    }
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new KioskDisconnectedError(`${intent}: the kiosk did not answer within ${Math.round(this.callTimeoutMs / 1000)} s`));
      }, this.callTimeoutMs);
      this.pending.set(id, { intent, resolve, reject, timer });
      try {
        socket.send(JSON.stringify({ type: 'call', id, intent, args }));
      } catch {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new KioskDisconnectedError(`${intent}: the connection to the kiosk failed while sending`));
      }
    });
  }

  onState(listener: (state: unknown) => void): () => void {
    this.stateListeners.add(listener);
    if (this.latestState !== undefined) listener(this.latestState);
    return () => this.stateListeners.delete(listener);
  }

  onStatus(listener: (status: ConnectionStatus) => void): () => void {
    this.statusListeners.add(listener);
    listener(this.status);
    return () => this.statusListeners.delete(listener);
  }

  /** A state the host sent that failed validation: kept for staff, never shown to customers. */
  reportProblem(problem: string): void {
    this.setStatus({ ...this.status, lastProblem: problem });
  }

  // ------------------------------------------------------------ internals

  private open(): void {
    this.attempt++;
    this.setStatus({ kind: 'connecting', attempt: this.attempt, lastProblem: this.status.lastProblem, refused: this.refused });
    let socket: SocketLike;
    try {
      socket = this.createSocket(this.options.url, [SUBPROTOCOL, `auth.${this.options.token}`]);
    } catch (e) {
      this.scheduleReconnect(`could not open the connection: ${errorText(e)}`);
      return;
    }
    this.socket = socket;
    let opened = false;
    socket.onopen = () => {
      opened = true;
      this.attempt = 0;
      this.failures = 0;
      this.handshakeFailures = 0;
      this.refused = false;
      this.setStatus({ kind: 'open', lastProblem: this.status.lastProblem });
    };
    socket.onmessage = (ev) => {
      this.receive(ev.data);
    };
    socket.onerror = () => {
      // The close event follows and carries the code; nothing more to learn here.
    };
    socket.onclose = (ev) => {
      if (this.socket !== socket) return;
      this.detach(socket);
      this.socket = null;
      this.latestState = undefined;
      this.failPending('the connection to the kiosk was lost');
      this.scheduleReconnect(`connection closed (code ${ev.code}${ev.reason ? `: ${ev.reason.slice(0, 120)}` : ''})`);
      if (!opened) this.handshakeRefused();
    };
  }

  /** A handshake failed: after a few in a row, ask whether the host is there at all (see `refused`). */
  private handshakeRefused(): void {
    this.handshakeFailures++;
    const probe = this.options.probeHost;
    if (probe === undefined || this.refused || this.handshakeFailures < REFUSALS_BEFORE_PROBE) return;
    void probe().then(
      (answers) => {
        if (!answers || this.stopped || this.status.kind === 'open' || this.handshakeFailures < REFUSALS_BEFORE_PROBE) return;
        this.refused = true;
        const status = this.status;
        if (status.kind === 'waiting' || status.kind === 'connecting') this.setStatus({ ...status, refused: true });
      },
      () => undefined,
    );
  }

  private detach(socket: SocketLike): void {
    socket.onopen = null;
    socket.onmessage = null;
    socket.onclose = null;
    socket.onerror = null;
  }

  private scheduleReconnect(problem: string): void {
    if (this.stopped) return;
    this.failures++;
    const delay = Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** Math.min(this.failures - 1, 20));
    // `attempt` in the status is the number of the attempt that comes next.
    this.setStatus({
      kind: 'waiting',
      attempt: this.attempt + 1,
      retryAt: this.now() + delay,
      lastProblem: problem,
      refused: this.refused,
    });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.open();
    }, delay);
  }

  private receive(data: unknown): void {
    if (typeof data !== 'string') {
      this.reportProblem('the host sent a binary frame (ignored)');
      return;
    }
    if (data.length > MAX_HOST_MESSAGE_BYTES) {
      this.reportProblem(`the host sent an oversized message (${data.length} characters, ignored)`);
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      this.reportProblem('the host sent a message that is not JSON (ignored)');
      return;
    }
    const parsed = HostMessage.safeParse(json);
    if (!parsed.success) {
      this.reportProblem('the host sent a message of unknown shape (ignored)');
      return;
    }
    const message = parsed.data;
    switch (message.type) {
      case 'state':
        this.latestState = message.state;
        for (const listener of [...this.stateListeners]) listener(message.state);
        return;
      case 'refused':
        this.reportProblem(`the host refused a message: ${message.error.code}: ${message.error.message}`);
        return;
      case 'reply': {
        const pending = this.pending.get(message.id);
        if (!pending) return;
        this.pending.delete(message.id);
        clearTimeout(pending.timer);
        if (message.ok) pending.resolve(message.result);
        else pending.reject(apiError(message.error));
        return;
      }
    }
  }

  private failPending(why: string): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new KioskDisconnectedError(`${p.intent}: ${why}`));
      this.pending.delete(id);
    }
  }

  private setStatus(status: ConnectionStatus): void {
    this.status = status;
    for (const listener of [...this.statusListeners]) listener(status);
  }
}

function apiError(body: ApiErrorBody): KioskApiError {
  return new KioskApiError(body.code, body.message);
}

/** `#token=…` of the page URL printed by the host; null when absent or malformed. */
export function tokenFromHash(hash: string): string | null {
  const params = new URLSearchParams(hash.startsWith('#') ? hash.slice(1) : hash);
  const token = params.get('token');
  // The token travels in a subprotocol name: only token characters (RFC 6455 / RFC 7230) are possible.
  return token && /^[A-Za-z0-9._~-]{8,256}$/.test(token) ? token : null;
}

/** `ws://host/api` (or `wss:`) on the page's own origin. */
export function apiUrlFor(location: { protocol: string; host: string }): string {
  return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/api`;
}
