/**
 * A forward proxy on loopback for tests: answers HTTP CONNECT by opening a TCP tunnel to the target and
 * records each tunnel (target, Proxy-Authorization). With `credentials` it asks for Basic authentication
 * (407) like a corporate proxy; with `refuse` it answers every CONNECT with that status (403: a policy
 * that does not allow the target). A target it cannot connect to gets 502, as squid and most proxies answer.
 * With `tls` it is an https:// proxy (TLS to the proxy, then CONNECT inside it). Anything but CONNECT gets
 * 405: the kiosk must tunnel, never hand the proxy a request to forward.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface ConnectProxy {
  readonly url: string;
  readonly port: number;
  /** Every CONNECT, in order: its target, the Proxy-Authorization header it carried, and whether it was let through. */
  readonly tunnels: { readonly target: string; readonly authorization: string | undefined; readonly accepted: boolean }[];
  /** Requests that were not CONNECT. */
  readonly plainRequests: string[];
  stop(): Promise<void>;
}

export interface ConnectProxyOptions {
  readonly credentials?: { readonly user: string; readonly password: string };
  /** Answer every CONNECT with this status instead of opening a tunnel. */
  readonly refuse?: number;
  /** Serve https:// with this key and certificate chain. */
  readonly tls?: { readonly key: string; readonly cert: string };
}

export async function startConnectProxy(options: ConnectProxyOptions = {}): Promise<ConnectProxy> {
  const tunnels: ConnectProxy['tunnels'] = [];
  const plainRequests: string[] = [];
  const open = new Set<Socket | Duplex>();
  const expected = options.credentials
    ? `Basic ${Buffer.from(`${options.credentials.user}:${options.credentials.password}`).toString('base64')}`
    : undefined;
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    plainRequests.push(`${req.method ?? ''} ${req.url ?? ''}`);
    res.writeHead(405, { Connection: 'close' });
    res.end('this proxy only tunnels (CONNECT)');
  };
  const server: Server = options.tls
    ? createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, onRequest)
    : createServer(onRequest);
  // A TLS handshake the client gave up on (an untrusted certificate) is no failure of the proxy's.
  server.on('tlsClientError', () => undefined);
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => undefined);
    const target = req.url ?? '';
    const authorization = req.headers['proxy-authorization'];
    const authenticated = expected === undefined || authorization === expected;
    tunnels.push({ target, authorization, accepted: authenticated && options.refuse === undefined });
    if (!authenticated) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
      );
      return;
    }
    if (options.refuse !== undefined) {
      client.end(`HTTP/1.1 ${options.refuse} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    const colon = target.lastIndexOf(':');
    const upstream = connect({ host: target.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(target.slice(colon + 1)) });
    open.add(upstream);
    upstream.on('close', () => open.delete(upstream));
    let established = false;
    upstream.on('error', () => {
      if (established) client.destroy();
      else client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
    client.on('error', () => upstream.destroy());
    upstream.once('connect', () => {
      established = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    tunnels,
    plainRequests,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
