/**
 * A TCP forwarder in front of the fake backend that can turn its live WebSocket connections half-open,
 * for the heartbeat tests: `freeze()` makes the forwarder swallow every byte of those connections in both
 * directions, and stop passing on their closes, as a NAT or load balancer that silently dropped the
 * connection would. Neither end learns anything; only a heartbeat can tell. Plain HTTP connections (the
 * session endpoints, kept alive by the HTTP client) and connections opened after the freeze are forwarded
 * normally.
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
  /** The first bytes from the client were a WebSocket upgrade request. */
  websocket: boolean;
  frozen: boolean;
}

export class FreezeGate {
  private readonly pairs = new Set<Pair>();

  private constructor(private readonly server: Server) {}

  /** Listens on a free port of 127.0.0.1 and forwards to `targetPort`. */
  static async open(targetPort: number): Promise<FreezeGate> {
    const server = createServer();
    const gate = new FreezeGate(server);
    server.on('connection', (client) => gate.forward(client, targetPort));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return gate;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Base URL of the fake backend behind the gate. */
  baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** Live WebSocket connections go silent (half-open); returns how many. */
  freeze(): number {
    let frozen = 0;
    for (const pair of this.pairs) {
      if (!pair.websocket || pair.frozen) continue;
      pair.frozen = true;
      frozen++;
    }
    return frozen;
  }

  /** Cuts every connection and stops listening. */
  async close(): Promise<void> {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    this.pairs.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private forward(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, '127.0.0.1');
    const pair: Pair = { client, upstream, websocket: false, frozen: false };
    this.pairs.add(pair);
    let first = true;
    client.on('data', (chunk: Buffer) => {
      if (first) {
        first = false;
        pair.websocket = /\r\nupgrade:\s*websocket/i.test(chunk.toString('latin1'));
      }
      if (!pair.frozen) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!pair.frozen) client.write(chunk);
    });
    // A close on one side reaches the other only while the connection is not frozen.
    const ended = (other: Socket) => (): void => {
      if (!pair.frozen) {
        other.destroy();
        this.pairs.delete(pair);
      }
    };
    client.on('error', () => undefined).on('close', ended(upstream));
    upstream.on('error', () => undefined).on('close', ended(client));
  }
}
