/**
 * A tiny scripted HTTP server on 127.0.0.1 (free port) for the session client's unit tests: each test
 * decides how every request is answered (status, headers, body, or never), and every request is recorded.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export type Responder = (request: RecordedRequest, res: ServerResponse) => void;

export class ScriptedHttpServer {
  readonly requests: RecordedRequest[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly waiters: ((request: RecordedRequest) => void)[] = [];

  private constructor(
    private readonly server: Server,
    public responder: Responder,
  ) {}

  static async start(responder: Responder): Promise<ScriptedHttpServer> {
    const server = createServer();
    const scripted = new ScriptedHttpServer(server, responder);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        const request: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
        scripted.requests.push(request);
        for (const waiter of scripted.waiters.splice(0)) waiter(request);
        scripted.responder(request, res);
      });
    });
    server.on('connection', (socket: Socket) => {
      scripted.sockets.add(socket);
      socket.on('close', () => scripted.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return scripted;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = ''): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Resolves with the next request the server receives. */
  nextRequest(): Promise<RecordedRequest> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Answers JSON with a status and optional headers. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Responder {
  return (_request, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
}

/** A port on 127.0.0.1 on which nothing listens (bound, read and released). */
export async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
