/**
 * Who may open the screen's WebSocket: a page of the host's own origin (`Host` checked against DNS
 * rebinding, `Origin` against other sites) that knows the per-launch token, carried only in the
 * subprotocol `auth.<token>`; where the kernel tells (Linux), run by the host's own OS user. A refusal is
 * answered on the raw socket with a status and a reason, and logged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../platform/log.js';
import type { PeerUser } from './peer-user.js';
import { securityHeaders } from '../service/security-headers.js';

export const API_PATH = '/api';
export const API_SUBPROTOCOL = 'mdl-kiosk.v1';
const TOKEN_PREFIX = 'auth.';

/** Why an upgrade is refused: the HTTP status and the text the client reads. */
export interface Refusal {
  readonly status: number;
  readonly reason: string;
}

export interface ScreenGateOptions {
  readonly token: string;
  /** Who is at the other end of a connection; undefined where it cannot be told. */
  readonly peerUser: ((serverPort: number, clientPort: number) => PeerUser) | undefined;
  /** The host's own OS user. */
  readonly ownUid: number | undefined;
  readonly log: Logger;
}

function tokensEqual(given: string, expected: string): boolean {
  // Hash both so the comparison is constant-time whatever the lengths.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

function subprotocols(req: IncomingMessage): string[] {
  const header = req.headers['sec-websocket-protocol'];
  if (typeof header !== 'string') return [];
  return header
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/** The host's own names and origins, which it learns once it listens (port 0 until then). */
export class ScreenGate {
  #port = 0;
  private peerUnknownLogged = false;

  constructor(private readonly options: ScreenGateOptions) {}

  /** The port the host listens on (0 before it does). */
  get port(): number {
    return this.#port;
  }

  listeningOn(port: number): void {
    this.#port = port;
  }

  /** The `Host` header names this host on loopback (not a rebinding name). */
  hostAllowed(host: string | undefined): boolean {
    const port = this.#port;
    return new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]).has(host ?? '');
  }

  originAllowed(origin: string): boolean {
    const port = this.#port;
    return new Set([`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]).has(origin);
  }

  /** Why this upgrade request may not open the screen's socket, or undefined when it may. */
  refusal(req: IncomingMessage): Refusal | undefined {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== API_PATH) return { status: 404, reason: `no WebSocket endpoint at ${String(path).slice(0, 100)}; use ${API_PATH}` };
    if (!this.hostAllowed(req.headers.host)) return { status: 403, reason: 'forbidden: wrong Host header' };
    const origin = req.headers.origin;
    if (origin === undefined) return { status: 403, reason: 'forbidden: the Origin header is missing' };
    if (!this.originAllowed(origin)) return { status: 403, reason: "forbidden: Origin is not the kiosk host's own" };
    const protocols = subprotocols(req);
    const auth = protocols.find((p) => p.startsWith(TOKEN_PREFIX));
    if (auth === undefined) return { status: 401, reason: `unauthorized: the token is missing (subprotocol ${TOKEN_PREFIX}<token>)` };
    if (!tokensEqual(auth.slice(TOKEN_PREFIX.length), this.options.token)) return { status: 401, reason: 'unauthorized: wrong token' };
    if (!protocols.includes(API_SUBPROTOCOL)) return { status: 400, reason: `bad request: the subprotocol ${API_SUBPROTOCOL} is required` };
    const peer = this.options.peerUser?.(this.#port, req.socket.remotePort ?? 0);
    if (peer !== undefined && 'uid' in peer && peer.uid !== this.options.ownUid) {
      return { status: 403, reason: "forbidden: the screen runs as another user than the kiosk host (run the browser as the host's user)" };
    }
    if (peer !== undefined && 'unknown' in peer && !this.peerUnknownLogged) {
      this.peerUnknownLogged = true;
      this.options.log.warn({ event: 'host_peer_user_unknown' }, `the user of a screen connection cannot be told: ${peer.unknown}`);
    }
    return undefined;
  }

  /** Answers a refused upgrade on the raw socket (with the page's security headers) and logs it. */
  refuse(socket: Duplex, { status, reason }: Refusal): void {
    this.options.log.warn({ event: 'host_socket_refused', status }, reason);
    const headers = {
      ...securityHeaders(this.#port),
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(reason)),
      Connection: 'close',
    };
    const head = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n');
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${head}\r\n\r\n${reason}`);
  }
}
