/**
 * The browser host: serves the built kiosk screen and carries `KioskApi` over a WebSocket, on loopback
 * only. It is how QA and the end-to-end tests run the screen in Chromium, and a deployment option for
 * Linux thin kiosks (Chromium in kiosk mode on the same machine).
 *
 * Who may talk to it: a page of the host's own origin (`Origin` checked on the upgrade, `Host` checked on
 * every request against DNS rebinding) that knows the per-launch token (32 random bytes, carried only in
 * the WebSocket subprotocol `auth.<token>`, never in a URL the server sees). Everything that arrives is
 * validated; a bad message gets a clear error and the connection stays, a flood closes it (1008).
 *
 * Its parts: who may open the socket (`screen-gate.ts`), one connected screen (`screen-socket.ts`), the
 * support-bundle download (`support-download.ts`); `startHost` puts them in order.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';
import { MAX_API_MESSAGE_BYTES } from '../common/kiosk-api.js';
import type { Logger } from '../platform/log.js';
import { osCapabilities } from '../platform/os.js';
import { loopbackPeerUser, type PeerUser } from './peer-user.js';
import { API_SUBPROTOCOL, ScreenGate } from './screen-gate.js';
import { serveScreen, type HostedScreen, type ScreenSocketOptions } from './screen-socket.js';
import { DOWNLOAD_PREFIX, serveSupportDownload } from './support-download.js';
import { applySecurityHeaders } from '../service/security-headers.js';
import { serveStatic } from '../service/static-files.js';

export { API_PATH, API_SUBPROTOCOL } from './screen-gate.js';
export type { HostedScreen } from './screen-socket.js';
export { DOWNLOAD_PREFIX } from './support-download.js';

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

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost']);
const DEFAULT_MAX_CALLS_PER_SECOND = 50;

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

/** The loopback name to listen on; anything else is refused (the host never listens beyond this machine). */
function loopbackHostName(host: string | undefined): string {
  const hostName = host ?? '127.0.0.1';
  if (!LOOPBACK_HOSTS.has(hostName)) {
    throw new HostConfigError(`the kiosk host listens on loopback only (127.0.0.1, ::1 or localhost), not ${hostName}`);
  }
  return hostName;
}

/** Who is at the other end of a connection: asked of the kernel only where it tells (Linux); elsewhere the token alone admits a screen (docs/browser-host.md). */
function peerUserCheck(given: HostOptions['peerUser'], ownUid: number | undefined): HostOptions['peerUser'] {
  return given ?? (osCapabilities().loopbackPeerUser && ownUid !== undefined ? loopbackPeerUser : undefined);
}

/** Plain HTTP: the screen's files and the support-bundle download, each with the security headers, to this host's own names only. */
function pageHandler(
  gate: ScreenGate,
  rendererDir: string,
  service: HostedService,
  log: Logger,
): (req: IncomingMessage, res: ServerResponse) => void {
  const internalError = (res: ServerResponse): void => {
    if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end('internal error');
  };
  return (req, res) => {
    applySecurityHeaders(res, gate.port);
    if (!gate.hostAllowed(req.headers.host)) {
      res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('forbidden: wrong Host header (the kiosk host answers only to 127.0.0.1 and localhost)');
      return;
    }
    if ((req.url ?? '').startsWith(DOWNLOAD_PREFIX)) {
      const take = (ticket: string): { path: string; name: string } | undefined => service.takeSupportDownload?.(ticket);
      serveSupportDownload(req, res, { take, originAllowed: (origin) => gate.originAllowed(origin), log }).catch((e: unknown) => {
        log.error({ event: 'support_bundle_failed' }, e instanceof Error ? e.name : 'unknown');
        internalError(res);
      });
      return;
    }
    serveStatic(req, res, rendererDir).catch((e: unknown) => {
      log.error({ event: 'host_static_failed' }, e instanceof Error ? e.name : 'unknown');
      internalError(res);
    });
  };
}

function apiSocketServer(): WebSocketServer {
  return new WebSocketServer({
    noServer: true,
    maxPayload: MAX_API_MESSAGE_BYTES,
    perMessageDeflate: false,
    handleProtocols: (protocols) => (protocols.has(API_SUBPROTOCOL) ? API_SUBPROTOCOL : false),
  });
}

/** The API's WebSocket: an upgrade the gate lets through becomes a screen of its own; the rest is refused on the raw socket. */
function apiUpgrades(
  gate: ScreenGate,
  wss: WebSocketServer,
  screens: ScreenSocketOptions,
): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    const refusal = gate.refusal(req);
    if (refusal !== undefined) {
      gate.refuse(socket, refusal);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      serveScreen(ws, screens);
    });
  };
}

async function listen(server: Server, port: number, hostName: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, hostName, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Closes every screen (1001), then the server; sockets that do not finish their closing handshake promptly are cut. */
async function closeHost(server: Server, wss: WebSocketServer, connections: ReadonlySet<WebSocket>): Promise<void> {
  for (const ws of connections) ws.close(1001, 'the kiosk host is stopping');
  await new Promise<void>((resolve) => {
    wss.close(() => resolve());
  });
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
}

export async function startHost(options: HostOptions): Promise<RunningHost> {
  const hostName = loopbackHostName(options.host);
  const { service, log } = options;
  const token = randomBytes(32).toString('base64url');
  const ownUid = process.getuid?.();
  const gate = new ScreenGate({ token, peerUser: peerUserCheck(options.peerUser, ownUid), ownUid, log });
  const connections = new Set<WebSocket>();
  const server = createServer(pageHandler(gate, options.rendererDir ?? defaultRendererDir(), service, log));
  const wss = apiSocketServer();
  const maxCallsPerSecond = options.maxCallsPerSecond ?? DEFAULT_MAX_CALLS_PER_SECOND;
  server.on('upgrade', apiUpgrades(gate, wss, { connectScreen: () => service.connectScreen(), maxCallsPerSecond, connections, log }));
  const port = await listen(server, options.port ?? 0, hostName);
  gate.listeningOn(port);
  const origin = `http://${hostName === '::1' ? '[::1]' : hostName}:${port}`;
  log.info({ event: 'host_started', count: port }, 'kiosk host listening on loopback');
  let stopping: Promise<void> | undefined;
  return {
    url: `${origin}/#token=${token}`,
    origin,
    port,
    token,
    stop: () => (stopping ??= closeHost(server, wss, connections)),
  };
}
