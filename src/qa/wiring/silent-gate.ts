/**
 * A loopback TCP forwarder that can make whatever is behind it go silent, the way real outages begin: the
 * traffic is taken and nothing comes back, and nothing is closed. `silence()` swallows every byte of the
 * open connections in both directions and holds new connections open without reaching the backend (no
 * refusal, no reset, no answer); `answer()` forwards new connections again and resets the ones that went
 * silent (their lost bytes cannot be resumed, as after a middlebox that lost its state). QA's "silent
 * backend" switch (the embedded mock backend, the phone page) and the kiosk's tests of the silent-backend
 * detection (docs/protocol.md §10.2) use it.
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

interface Pair {
  readonly client: Socket;
  /** Undefined for a connection accepted while silent: it never reaches the backend. */
  readonly upstream: Socket | undefined;
  silenced: boolean;
}

export class SilentGate {
  private readonly pairs = new Set<Pair>();
  private silentNow = false;

  private constructor(
    private readonly server: Server,
    private readonly targetPort: number,
  ) {}

  /** Listens on a free port of 127.0.0.1 and forwards to `targetPort` on 127.0.0.1. */
  static async open(targetPort: number, port = 0): Promise<SilentGate> {
    const server = createServer();
    const gate = new SilentGate(server, targetPort);
    server.on('connection', (client) => gate.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return gate;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get silent(): boolean {
    return this.silentNow;
  }

  /** From now on nothing answers: open connections swallow their bytes, new ones are held. Idempotent. */
  silence(): void {
    this.silentNow = true;
    for (const pair of this.pairs) pair.silenced = true;
  }

  /** Answers again: new connections reach the backend; the silenced ones are reset. Idempotent. */
  answer(): void {
    if (!this.silentNow) return;
    this.silentNow = false;
    for (const pair of [...this.pairs]) {
      if (pair.silenced) this.drop(pair);
    }
  }

  /** Cuts every connection and stops listening. */
  async close(): Promise<void> {
    for (const pair of [...this.pairs]) this.drop(pair);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private drop(pair: Pair): void {
    pair.client.destroy();
    pair.upstream?.destroy();
    this.pairs.delete(pair);
  }

  private accept(client: Socket): void {
    client.on('error', () => undefined);
    if (this.silentNow) {
      // Held: the handshake of TCP succeeded, and then nothing. Bytes are read (and dropped) so the kiosk's
      // writes do not back up into an error of their own.
      const held: Pair = { client, upstream: undefined, silenced: true };
      this.pairs.add(held);
      client.on('data', () => undefined);
      client.on('close', () => this.pairs.delete(held));
      return;
    }
    const upstream = connect(this.targetPort, '127.0.0.1');
    const pair: Pair = { client, upstream, silenced: false };
    this.pairs.add(pair);
    client.on('data', (chunk: Buffer) => {
      if (!pair.silenced) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!pair.silenced) client.write(chunk);
    });
    // A close on one side reaches the other only while the connection answers: a silent path says nothing.
    const ended = (other: Socket) => (): void => {
      if (pair.silenced && other === client) return;
      other.destroy();
      this.pairs.delete(pair);
    };
    upstream.on('error', () => undefined).on('close', ended(client));
    client.on('close', ended(upstream));
  }
}
