/**
 * The two proxy clients, wrapped where the proxy's part ends: the CONNECT answer. Through a proxy the
 * kiosk's only TCP peer is the proxy (it resolves and connects to the backend itself), so everything that
 * fails before the proxy answers 200 — connecting to it, resolving its name, its TLS, its answer — is the
 * proxy's, and is raised as a {@link ProxyTunnelError}; what fails after it (the backend's TLS inside the
 * tunnel, a reset from the backend) passes through untouched and is named as the backend's.
 *
 * - Session API: undici's `ProxyAgent` opens each tunnel with `connect()` on a client to the proxy that
 *   `clientFactory` makes; {@link TunnelProxyPool} is that client. (Left alone, undici reports a refused
 *   CONNECT as "Proxy response (407) !== 200" and a refused connection to the proxy as a bare
 *   ECONNREFUSED, the same as a backend that is down.)
 * - Session WebSocket: https-proxy-agent's `connect()` resolves once the tunnel is open (then the backend's
 *   TLS starts on it); {@link TunnelProxyAgent} wraps it. (Left alone, it replays a refusal to `ws` as if
 *   the backend had answered the upgrade with 407, and has no time limit before the upgrade starts.)
 */
import type { ClientRequest } from 'node:http';
import type { Socket } from 'node:net';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { Pool, type Dispatcher } from 'undici';
import { ProxyTunnelError, proxyTunnelFailure, type BackendProxy } from './backend-proxy.js';

type PoolConnectOptions = Omit<Dispatcher.ConnectOptions, 'origin'>;

/** undici's client to the proxy: each `connect()` is one CONNECT; non-200 answers and failures become {@link ProxyTunnelError}. */
export class TunnelProxyPool extends Pool {
  /** CONNECTs sent and not yet settled: a request that times out while one is pending was waiting for the proxy. */
  opening = 0;

  override connect(options: PoolConnectOptions): Promise<Dispatcher.ConnectData>;
  override connect(options: PoolConnectOptions, callback: (err: Error | null, data: Dispatcher.ConnectData) => void): void;
  override connect(
    options: PoolConnectOptions,
    callback?: (err: Error | null, data: Dispatcher.ConnectData) => void,
  ): Promise<Dispatcher.ConnectData> | undefined {
    const tunnel = this.openTunnel(options);
    if (callback === undefined) return tunnel;
    tunnel.then(
      (data) => callback(null, data),
      // undici's own connect() hands `{ opaque }` with an error, not a whole ConnectData.
      (e: unknown) => callback(e as Error, { opaque: null } as Dispatcher.ConnectData),
    );
    return undefined;
  }

  private async openTunnel(options: PoolConnectOptions): Promise<Dispatcher.ConnectData> {
    this.opening++;
    let data: Dispatcher.ConnectData;
    try {
      data = await super.connect(options);
    } catch (e) {
      throw proxyTunnelFailure(e);
    } finally {
      this.opening--;
    }
    if (data.statusCode !== 200) {
      data.socket.on('error', () => undefined).destroy();
      throw new ProxyTunnelError('refused', undefined, data.statusCode);
    }
    return data;
  }
}

type AgentConnectOptions = Parameters<HttpsProxyAgent<string>['connect']>[1];

/**
 * https-proxy-agent for one WebSocket connection (one tunnel): the proxy's failures become
 * {@link ProxyTunnelError}, and the tunnel must open within `timeoutMs` (ws's handshake timeout only
 * starts once it has a socket). One agent per connection so that its abort signal — which Node attaches to
 * the socket to the proxy — concerns that one tunnel.
 */
export class TunnelProxyAgent extends HttpsProxyAgent<string> {
  private readonly tunnelAbort: AbortController;

  constructor(
    proxy: BackendProxy,
    private readonly timeoutMs: number,
    tunnelAbort = new AbortController(),
  ) {
    super(proxy.url.href, {
      ...(proxy.authorization === undefined ? {} : { headers: { 'Proxy-Authorization': proxy.authorization } }),
      // Options for the connection to the proxy itself (net or tls.connect); the backend's TLS options come
      // from ws per request and apply inside the tunnel.
      ...(proxy.ca === undefined ? {} : { ca: [...proxy.ca] }),
      signal: tunnelAbort.signal,
    });
    this.tunnelAbort = tunnelAbort;
  }

  /** Gives up on the tunnel (the caller aborted): destroys the connection to the proxy if still opening. */
  cancel(): void {
    this.tunnelAbort.abort();
  }

  override async connect(req: ClientRequest, opts: AgentConnectOptions): Promise<Socket> {
    let answer: number | undefined;
    req.once('proxyConnect', (connect: { statusCode?: number }) => (answer = connect.statusCode));
    // An object, not a boolean: set from the timer, read after the awaits.
    const clock = { expired: false };
    const timer = setTimeout(() => {
      clock.expired = true;
      this.tunnelAbort.abort();
    }, this.timeoutMs);
    let socket: Socket;
    try {
      socket = await super.connect(req, opts);
    } catch (e) {
      // A proxy that ended the connection without answering leaves the socket open otherwise.
      this.tunnelAbort.abort();
      throw clock.expired ? new ProxyTunnelError('timeout', undefined) : proxyTunnelFailure(e);
    } finally {
      clearTimeout(timer);
    }
    if (clock.expired || answer !== 200) {
      // Not the library's replay of the refusal as the backend's answer: the proxy said no.
      socket.destroy();
      this.tunnelAbort.abort();
      throw clock.expired ? new ProxyTunnelError('timeout', undefined) : new ProxyTunnelError('refused', undefined, answer);
    }
    return socket;
  }
}
