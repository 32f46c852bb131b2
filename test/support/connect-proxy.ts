/**
 * A forward proxy on loopback for tests: answers HTTP CONNECT by opening a TCP tunnel to the target and
 * records each tunnel (target, Proxy-Authorization). With `credentials` it asks for Basic authentication
 * (407) like a corporate proxy. Anything but CONNECT gets 405: the kiosk must tunnel, never hand the proxy
 * a request to forward.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface ConnectProxy {
  readonly url: string;
  readonly port: number;
  /** Every CONNECT, in order: its target and the Proxy-Authorization header it carried. */
  readonly tunnels: { readonly target: string; readonly authorization: string | undefined; readonly accepted: boolean }[];
  /** Requests that were not CONNECT. */
  readonly plainRequests: string[];
  stop(): Promise<void>;
}

export async function startConnectProxy(options: { credentials?: { user: string; password: string } } = {}): Promise<ConnectProxy> {
  const tunnels: ConnectProxy['tunnels'] = [];
  const plainRequests: string[] = [];
  const open = new Set<Socket | Duplex>();
  const expected = options.credentials ? `Basic ${Buffer.from(`${options.credentials.user}:${options.credentials.password}`).toString('base64')}` : undefined;
  const server: Server = createServer((req, res) => {
    plainRequests.push(`${req.method ?? ''} ${req.url ?? ''}`);
    res.writeHead(405, { Connection: 'close' });
    res.end('this proxy only tunnels (CONNECT)');
  });
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => undefined);
    const target = req.url ?? '';
    const authorization = req.headers['proxy-authorization'];
    const accepted = expected === undefined || authorization === expected;
    tunnels.push({ target, authorization, accepted });
    if (!accepted) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    const colon = target.lastIndexOf(':');
    const upstream = connect({ host: target.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(target.slice(colon + 1)) });
    open.add(upstream);
    upstream.on('close', () => open.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
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
