/**
 * An HTTP server on loopback that records every request (method, path, Authorization) and answers 503:
 * a stand-in for "another server" that must never receive the kiosk's API key, or a backend whose
 * requests a test wants to see.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordingServer {
  /** `http://127.0.0.1:<port>/api` */
  readonly url: string;
  /** `METHOD /path Authorization` of each request, in order (`(none)` without the header). */
  readonly seen: string[];
  /** The Authorization header of each request (`(none)` without it). */
  readonly authorizations: string[];
  stop(): Promise<void>;
}

export async function startRecordingServer(): Promise<RecordingServer> {
  const seen: string[] = [];
  const authorizations: string[] = [];
  const server = createServer((req, res) => {
    const authorization = req.headers.authorization ?? '(none)';
    authorizations.push(authorization);
    seen.push(`${req.method ?? ''} ${req.url ?? ''} ${authorization}`);
    res.writeHead(503, { 'Content-Type': 'application/json' });
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api`,
    seen,
    authorizations,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
