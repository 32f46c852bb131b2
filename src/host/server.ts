/**
 * The browser host: serves the built kiosk screen and carries `KioskApi` over a WebSocket, on loopback
 * only. It is how QA and the end-to-end tests run the screen in Chromium, and a deployment option for
 * Linux thin kiosks (Chromium in kiosk mode on the same machine).
 *
 * Who may talk to it: a page of the host's own origin (`Origin` checked on the upgrade, `Host` checked on
 * every request against DNS rebinding) that knows the per-launch token (32 random bytes, carried only in
 * the WebSocket subprotocol `auth.<token>`, never in a URL the server sees). Everything that arrives is
 * validated; a bad message gets a clear error and the connection stays, a flood closes it (1008).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import {
  ClientMessage,
  dispatchIntent,
  KioskApiError,
  MAX_API_MESSAGE_BYTES,
  type ApiErrorBody,
  type HostMessage,
  type KioskApiHandlers,
  type ScreenState,
} from '../common/kiosk-api.js';
import type { Logger } from '../platform/log.js';
import { loopbackPeerUser, type PeerUser } from './peer-user.js';
import { applySecurityHeaders, securityHeaders } from '../service/security-headers.js';
import { serveStatic } from '../service/static-files.js';
import { osCapabilities } from '../platform/os.js';

/** One connected screen: the API with a staff session of its own (KioskService.connectScreen). */
export type HostedScreen = KioskApiHandlers & {
  onState(listener: (state: ScreenState) => void): () => void;
  staffUnlocked(): boolean;
  close(): void;
};

/** What the host needs of the main side (KioskService satisfies it). */
export interface HostedService {
  connectScreen(): HostedScreen;
  /** The support bundle a download ticket (`prepareSupportDownload`) stands for, once; absent: no downloads. */
  takeSupportDownload?(ticket: string): { path: string; name: string } | undefined;
}

export interface HostOptions {
  readonly service: HostedService;
  /** The built renderer (default: `dist/renderer` of this package). */
  readonly rendererDir?: string;
  /** 0 (default): a free port. */
  readonly port?: number;
  /** Loopback only: `127.0.0.1` (default), `::1` or `localhost`; anything else is refused. */
  readonly host?: string;
  readonly log: Logger;
  /** Calls per second one connection may make before it is closed with 1008 (default 50). */
  readonly maxCallsPerSecond?: number;
  /**
   * Who is at the other end of a connection (default on Linux: src/host/peer-user.ts; elsewhere not
   * known). A screen of another OS user than the host's is refused.
   */
  readonly peerUser?: (serverPort: number, clientPort: number) => PeerUser;
}

export interface RunningHost {
  /** The page to open: `http://127.0.0.1:<port>/#token=<token>`. */
  readonly url: string;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  readonly port: number;
  readonly token: string;
  stop(): Promise<void>;
}

export const API_PATH = '/api';
export const API_SUBPROTOCOL = 'mdl-kiosk.v1';
const TOKEN_PREFIX = 'auth.';
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost']);
/** A screen that does not read its socket is dropped rather than buffered without bound. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
const DEFAULT_MAX_CALLS_PER_SECOND = 50;

/** Where the staff's browser fetches a support bundle by its one-time ticket. */
export const DOWNLOAD_PREFIX = '/support-bundle/';

export class HostConfigError extends Error {
  override readonly name = 'HostConfigError';
}

/** `dist/renderer` of the package this file belongs to (found by walking up to its package.json). */
export function defaultRendererDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist', 'renderer');
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return join(process.cwd(), 'dist', 'renderer');
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

function errorBody(code: ApiErrorBody['code'], message: string): ApiErrorBody {
  return { code, message: message.slice(0, 1_000) };
}

export async function startHost(options: HostOptions): Promise<RunningHost> {
  const hostName = options.host ?? '127.0.0.1';
  if (!LOOPBACK_HOSTS.has(hostName)) {
    throw new HostConfigError(`the kiosk host listens on loopback only (127.0.0.1, ::1 or localhost), not ${hostName}`);
  }
  const { service, log } = options;
  const rendererDir = options.rendererDir ?? defaultRendererDir();
  const maxCalls = options.maxCallsPerSecond ?? DEFAULT_MAX_CALLS_PER_SECOND;
  const token = randomBytes(32).toString('base64url');
  const ownUid = process.getuid?.();
  // Only where the kernel tells (Linux); elsewhere the token alone admits a screen (docs/browser-host.md).
  const peerUser = options.peerUser ?? (osCapabilities().loopbackPeerUser && ownUid !== undefined ? loopbackPeerUser : undefined);
  let peerUnknownLogged = false;
  let port = 0;
  const allowedHosts = (): Set<string> => new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
  const allowedOrigins = (): Set<string> => new Set([`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]);

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    applySecurityHeaders(res, port);
    if (!allowedHosts().has(req.headers.host ?? '')) {
      res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('forbidden: wrong Host header (the kiosk host answers only to 127.0.0.1 and localhost)');
      return;
    }
    if ((req.url ?? '').startsWith(DOWNLOAD_PREFIX)) {
      serveSupportDownload(req, res).catch((e: unknown) => {
        log.error({ event: 'support_bundle_failed' }, e instanceof Error ? e.name : 'unknown');
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end('internal error');
      });
      return;
    }
    serveStatic(req, res, rendererDir).catch((e: unknown) => {
      log.error({ event: 'host_static_failed' }, e instanceof Error ? e.name : 'unknown');
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('internal error');
    });
  });

  /**
   * `GET /support-bundle/<ticket>`: the staff's own browser saves a support bundle. The ticket (32 random
   * bytes) was handed out over the token-authenticated socket to an unlocked staff session and is good for
   * one download within a minute; a request another site's page makes (`Sec-Fetch-Site`, `Origin`) is refused.
   */
  async function serveSupportDownload(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refuse = (status: number, text: string): void => {
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(text);
    };
    if (req.method !== 'GET') {
      refuse(405, 'use GET');
      return;
    }
    const site = req.headers['sec-fetch-site'];
    const origin = req.headers.origin;
    if ((site !== undefined && site !== 'same-origin' && site !== 'none') || (origin !== undefined && !allowedOrigins().has(origin))) {
      refuse(403, 'forbidden: not from the kiosk page');
      return;
    }
    const ticket = (req.url ?? '').slice(DOWNLOAD_PREFIX.length).split('?', 1)[0] ?? '';
    const bundle = /^[A-Za-z0-9_-]{43}$/.test(ticket) ? options.service.takeSupportDownload?.(ticket) : undefined;
    if (bundle === undefined) {
      refuse(404, 'no such download: it was used already or has expired; write a new one');
      return;
    }
    const info = await stat(bundle.path);
    const name = bundle.name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 200);
    res.writeHead(200, {
      'Content-Type': 'application/gzip',
      'Content-Length': String(info.size),
      'Content-Disposition': `attachment; filename="${name}"`,
      'Cache-Control': 'no-store',
    });
    log.info({ event: 'support_bundle_downloaded', count: info.size }, 'support bundle downloaded by the staff browser');
    await pipeline(createReadStream(bundle.path), res);
  }

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_API_MESSAGE_BYTES,
    perMessageDeflate: false,
    handleProtocols: (protocols) => (protocols.has(API_SUBPROTOCOL) ? API_SUBPROTOCOL : false),
  });

  const refuseUpgrade = (socket: Duplex, status: number, reason: string): void => {
    log.warn({ event: 'host_socket_refused', status }, reason);
    const headers = { ...securityHeaders(port), 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(Buffer.byteLength(reason)), Connection: 'close' };
    const head = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n');
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${head}\r\n\r\n${reason}`);
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== API_PATH) {
      refuseUpgrade(socket, 404, `no WebSocket endpoint at ${String(path).slice(0, 100)}; use ${API_PATH}`);
      return;
    }
    if (!allowedHosts().has(req.headers.host ?? '')) {
      refuseUpgrade(socket, 403, 'forbidden: wrong Host header');
      return;
    }
    const origin = req.headers.origin;
    if (origin === undefined) {
      refuseUpgrade(socket, 403, 'forbidden: the Origin header is missing');
      return;
    }
    if (!allowedOrigins().has(origin)) {
      refuseUpgrade(socket, 403, 'forbidden: Origin is not the kiosk host\'s own');
      return;
    }
    const protocols = subprotocols(req);
    const auth = protocols.find((p) => p.startsWith(TOKEN_PREFIX));
    if (auth === undefined) {
      refuseUpgrade(socket, 401, `unauthorized: the token is missing (subprotocol ${TOKEN_PREFIX}<token>)`);
      return;
    }
    if (!tokensEqual(auth.slice(TOKEN_PREFIX.length), token)) {
      refuseUpgrade(socket, 401, 'unauthorized: wrong token');
      return;
    }
    if (!protocols.includes(API_SUBPROTOCOL)) {
      refuseUpgrade(socket, 400, `bad request: the subprotocol ${API_SUBPROTOCOL} is required`);
      return;
    }
    const peer = peerUser?.(port, req.socket.remotePort ?? 0);
    if (peer !== undefined && 'uid' in peer && peer.uid !== ownUid) {
      refuseUpgrade(socket, 403, 'forbidden: the screen runs as another user than the kiosk host (run the browser as the host\'s user)');
      return;
    }
    if (peer !== undefined && 'unknown' in peer && !peerUnknownLogged) {
      peerUnknownLogged = true;
      log.warn({ event: 'host_peer_user_unknown' }, `the user of a screen connection cannot be told: ${peer.unknown}`);
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      onConnection(ws);
    });
  });

  const connections = new Set<WebSocket>();

  function send(ws: WebSocket, message: HostMessage | string): void {
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      log.warn({ event: 'host_socket_stalled' }, 'a screen stopped reading its socket; dropping it');
      ws.terminate();
      return;
    }
    ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  function onConnection(ws: WebSocket): void {
    connections.add(ws);
    log.info({ event: 'host_screen_connected', count: connections.size }, 'a screen connected');
    let windowStart = Date.now();
    let calls = 0;
    let closing = false;
    // Each socket is a screen of its own: a staff session opened here is this socket's only, and ends
    // with it (another tab, or another program holding the token, sees the staff screens locked).
    const screen = service.connectScreen();
    const unsubscribe = screen.onState((state) => send(ws, JSON.stringify({ type: 'state', state } satisfies HostMessage)));
    ws.on('close', () => {
      connections.delete(ws);
      unsubscribe();
      screen.close();
      log.info({ event: 'host_screen_disconnected', count: connections.size }, 'a screen disconnected');
    });
    ws.on('error', (e: Error & { code?: string }) => {
      // ws closes the socket itself (1009 for a frame over maxPayload, 1002 for a protocol error).
      log.warn({ event: 'host_socket_error', code: e.code ?? 'unknown' }, 'a screen socket failed');
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (closing) return;
      const now = Date.now();
      if (now - windowStart >= 1_000) {
        windowStart = now;
        calls = 0;
      }
      if (++calls > maxCalls) {
        closing = true;
        log.warn({ event: 'host_socket_flood', count: maxCalls }, 'a screen sent too many messages; closing it');
        ws.close(1008, `more than ${maxCalls} messages per second`);
        return;
      }
      if (isBinary) {
        send(ws, { type: 'refused', error: errorBody('invalid_message', 'binary frames are not accepted: send JSON text') });
        return;
      }
      void handleText(ws, screen, Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]).toString('utf8'));
    });
  }

  async function handleText(ws: WebSocket, screen: HostedScreen, text: string): Promise<void> {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      send(ws, { type: 'refused', error: errorBody('invalid_message', 'the message is not JSON') });
      return;
    }
    const parsed = ClientMessage.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const message = `the message is not a call: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'}`;
      const id = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>).id : undefined;
      if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) send(ws, { type: 'reply', id, ok: false, error: errorBody('invalid_message', message) });
      else send(ws, { type: 'refused', error: errorBody('invalid_message', message) });
      return;
    }
    const { id, intent, args } = parsed.data;
    try {
      const result = await dispatchIntent(screen, intent, args, () => screen.staffUnlocked());
      send(ws, { type: 'reply', id, ok: true, result });
    } catch (e) {
      if (e instanceof KioskApiError) {
        send(ws, { type: 'reply', id, ok: false, error: errorBody(e.code, e.message) });
      } else {
        log.error({ event: 'host_intent_failed', code: intent.slice(0, 60).replace(/[^A-Za-z0-9_]/g, '') }, `an intent failed: ${e instanceof Error ? e.name : 'unknown'}`);
        send(ws, { type: 'reply', id, ok: false, error: errorBody('internal', `${intent.slice(0, 60)} failed inside the kiosk; see the diagnostics`) });
      }
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, hostName, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const urlHost = hostName === '::1' ? '[::1]' : hostName;
  const origin = `http://${urlHost}:${port}`;
  log.info({ event: 'host_started', count: port }, 'kiosk host listening on loopback');

  let stopping: Promise<void> | undefined;
  return {
    url: `${origin}/#token=${token}`,
    origin,
    port,
    token,
    stop() {
      stopping ??= (async () => {
        for (const ws of connections) ws.close(1001, 'the kiosk host is stopping');
        await new Promise<void>((resolve) => {
          wss.close(() => resolve());
        });
        // Sockets that do not finish their closing handshake promptly are cut.
        const deadline = setTimeout(() => {
          for (const ws of connections) ws.terminate();
        }, 1_000);
        deadline.unref();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        clearTimeout(deadline);
        for (const ws of connections) ws.terminate();
      })();
      return stopping;
    },
  };
}
