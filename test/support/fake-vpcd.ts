/**
 * A fake vpcd (the reader side of vsmartcard's protocol) for tests: a TCP server on 127.0.0.1, port 0.
 * Each connecting card is a FakeVpcdCard through which the test plays pcscd: GET ATR, power controls,
 * C-APDUs, raw bytes. Framing is written out here, independently of src/qa/sim/vpcd, so the tests check
 * the wire format rather than the card's own encoder.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export const CTRL = { POWER_OFF: 0x00, POWER_ON: 0x01, RESET: 0x02, GET_ATR: 0x04 } as const;

export function frame(payload: Uint8Array): Buffer {
  const header = Buffer.alloc(2);
  header.writeUInt16BE(payload.length);
  return Buffer.concat([header, payload]);
}

export const fromHex = (hex: string): Buffer => Buffer.from(hex.replace(/\s+/g, ''), 'hex');
export const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex').toUpperCase();

/** vpcd's end of one card connection. */
export class FakeVpcdCard {
  readonly closed: Promise<void>;
  #closed = false;
  #buffer: Buffer = Buffer.alloc(0);
  readonly #frames: Buffer[] = [];
  readonly #waiters: { resolve: (frame: Buffer) => void; reject: (e: Error) => void }[] = [];
  /** Every frame the card sent, in order. */
  readonly received: Buffer[] = [];

  constructor(readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.#onData(chunk);
    });
    socket.on('error', () => undefined);
    this.closed = new Promise<void>((resolve) => {
      socket.on('close', () => {
        this.#closed = true;
        for (const waiter of this.#waiters.splice(0)) waiter.reject(new Error('the card disconnected'));
        resolve();
      });
    });
  }

  get isClosed(): boolean {
    return this.#closed;
  }

  /** Bytes as they are, e.g. half a frame, or several frames in one write. */
  sendRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  send(payload: Uint8Array): void {
    this.socket.write(frame(payload));
  }

  control(byte: number): void {
    this.send(Uint8Array.of(byte));
  }

  async getAtr(timeoutMs?: number): Promise<Buffer> {
    this.control(CTRL.GET_ATR);
    return this.receive(timeoutMs);
  }

  async transmit(apdu: Uint8Array | string, timeoutMs?: number): Promise<Buffer> {
    this.send(typeof apdu === 'string' ? fromHex(apdu) : apdu);
    return this.receive(timeoutMs);
  }

  /** The card's next frame. */
  receive(timeoutMs = 2_000): Promise<Buffer> {
    const queued = this.#frames.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.#closed) return Promise.reject(new Error('the card disconnected'));
    return new Promise<Buffer>((resolve, reject) => {
      const waiter = {
        resolve: (f: Buffer) => {
          clearTimeout(timer);
          resolve(f);
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(new Error(`no frame from the card within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  /** Frames received and not yet taken by `receive`. */
  get queued(): number {
    return this.#frames.length;
  }

  /** vpcd drops the card (as when pcscd stops). */
  disconnect(): void {
    this.socket.destroy();
  }

  #onData(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    while (this.#buffer.length >= 2) {
      const length = this.#buffer.readUInt16BE(0);
      if (this.#buffer.length < 2 + length) return;
      const payload = Buffer.from(this.#buffer.subarray(2, 2 + length));
      this.#buffer = this.#buffer.subarray(2 + length);
      this.received.push(payload);
      const waiter = this.#waiters.shift();
      if (waiter) waiter.resolve(payload);
      else this.#frames.push(payload);
    }
  }
}

export class FakeVpcd {
  readonly #server: Server;
  readonly #cards: FakeVpcdCard[] = [];
  readonly #unclaimed: FakeVpcdCard[] = [];
  readonly #waiters: ((card: FakeVpcdCard) => void)[] = [];

  private constructor(server: Server) {
    this.#server = server;
    server.on('connection', (socket) => {
      const card = new FakeVpcdCard(socket);
      this.#cards.push(card);
      const waiter = this.#waiters.shift();
      if (waiter) waiter(card);
      else this.#unclaimed.push(card);
    });
  }

  static async start(): Promise<FakeVpcd> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new FakeVpcd(server);
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** `127.0.0.1:port` */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Cards that connected so far. */
  get connections(): number {
    return this.#cards.length;
  }

  /** The next card to connect (or one that connected and was not taken yet). */
  nextCard(timeoutMs = 5_000): Promise<FakeVpcdCard> {
    const card = this.#unclaimed.shift();
    if (card) return Promise.resolve(card);
    return new Promise<FakeVpcdCard>((resolve, reject) => {
      const waiter = (c: FakeVpcdCard): void => {
        clearTimeout(timer);
        resolve(c);
      };
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(new Error(`no card connected within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  async close(): Promise<void> {
    for (const card of this.#cards) card.socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** A port on 127.0.0.1 with nothing listening (bound, then released). */
export async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
