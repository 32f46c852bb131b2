/**
 * The private pcscd harness against the real pcscd + vpcd, driven through the real `smartcard` addon.
 * Needs the Debian packages pcscd, vsmartcard-vpcd, libpcsclite-dev and gcc: without them these
 * tests fail (ensurePcscdTools names the packages), they never skip.
 */
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReaderState, type BindingContext, type BindingReader } from '../../../src/devices/pcsc/pcsc-binding.js';
import { loadSmartcardBinding } from '../../../src/devices/pcsc/smartcard-binding.js';
import { listeningSocketsOf, listeningTcpSockets } from '../../../tools/pcscd/net.js';
import { pcscSocketPathForProcess, startPrivatePcscd, type PrivatePcscd } from '../../../tools/pcscd/pcscd-daemon.js';

// Driven through the kiosk's own binding (the `smartcard` addon behind the adapter's port).
const binding = loadSmartcardBinding();
const PRESENT = ReaderState.PRESENT;

const SELECT_NDEF = Buffer.from('00A4040007D276000085010100', 'hex');
const ATR = Buffer.from('3B80800101', 'hex');

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 3_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A binding context that records readers, their latest status and every error. */
class Client {
  readonly pcsc: BindingContext = binding();
  readonly readers = new Map<string, BindingReader>();
  readonly states = new Map<string, number>();
  readonly errors: string[] = [];

  constructor() {
    this.pcsc.on('error', (e) => this.errors.push(String(e)));
    this.pcsc.on('reader', (reader) => {
      this.readers.set(reader.name, reader);
      reader.on('error', (e) => this.errors.push(`${reader.name}: ${String(e)}`));
      reader.on('status', (s) => this.states.set(reader.name, s.state));
    });
  }

  reader(name: string): Promise<BindingReader> {
    return until(`reader ${name}`, () => this.readers.get(name));
  }

  /** Waits for a status with `flag` set (the upper 16 bits hold pcscd's event counter). */
  status(name: string, flag: number, timeoutMs = 3_000): Promise<number> {
    return until(
      `${name} state & 0x${flag.toString(16)}`,
      () => {
        const state = this.states.get(name);
        return state !== undefined && (state & flag) !== 0 ? state : undefined;
      },
      timeoutMs,
    );
  }

  /** Readers hold their own card contexts: close those too. */
  close(): void {
    for (const reader of this.readers.values()) reader.close();
    this.pcsc.close();
  }
}

/** A minimal vpcd card (frankmorgner/vsmartcard `vpcd.c`): uint16 BE framing, GET ATR answered, APDUs get 9000. */
async function insertCard(port: number): Promise<net.Socket> {
  const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
  const send = (payload: Buffer): void => {
    const header = Buffer.alloc(2);
    header.writeUInt16BE(payload.length);
    socket.write(Buffer.concat([header, payload]));
  };
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 2) {
      const length = pending.readUInt16BE(0);
      if (pending.length < 2 + length) return;
      const message = pending.subarray(2, 2 + length);
      pending = pending.subarray(2 + length);
      if (length !== 1) send(Buffer.from([0x90, 0x00]));
      else if (message[0] === 0x04) send(ATR); // 0x00 off, 0x01 on, 0x02 reset: no reply
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve).once('error', reject);
  });
  return socket;
}

function connect(reader: BindingReader): Promise<number> {
  return new Promise((resolve, reject) => {
    reader.connect(
      { share_mode: reader.SCARD_SHARE_SHARED, protocol: reader.SCARD_PROTOCOL_T0 | reader.SCARD_PROTOCOL_T1 },
      (err, protocol) => {
        if (err || protocol === undefined) reject(err ?? new Error('no protocol'));
        else resolve(protocol);
      },
    );
  });
}

function transmit(reader: BindingReader, apdu: Buffer, protocol: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    reader.transmit(apdu, 258, protocol, (err, data) => {
      if (err || data === undefined) reject(err ?? new Error('no response'));
      else resolve(data);
    });
  });
}

function disconnect(reader: BindingReader): Promise<void> {
  return new Promise((resolve) => {
    reader.disconnect(reader.SCARD_LEAVE_CARD, () => {
      resolve();
    });
  });
}

const alive = (pid: number): boolean => existsSync(`/proc/${pid}`);

describe('private pcscd (real pcscd + vpcd)', () => {
  // Each test awaits the start, so a missing pcscd or gcc fails every test with its message.
  let started: Promise<PrivatePcscd>;

  beforeAll(() => {
    started = startPrivatePcscd();
    started.catch(() => undefined);
  });

  afterAll(async () => {
    await started.then(
      (daemon) => daemon.stop(),
      () => undefined,
    );
  });

  it('runs on the per-process socket and sets PCSCLITE_CSOCK_NAME', async () => {
    const daemon = await started;
    expect(daemon.socketPath).toBe(pcscSocketPathForProcess());
    expect(process.env.PCSCLITE_CSOCK_NAME).toBe(daemon.socketPath);
    expect(existsSync(daemon.socketPath)).toBe(true);
    expect(alive(daemon.pid)).toBe(true);
    const [first, second] = daemon.readers;
    expect(daemon.readers).toHaveLength(2);
    expect(first?.name).toBe('Virtual PCD 00 00');
    expect(second).toEqual({ name: 'Virtual PCD 00 01', host: '127.0.0.1', port: (first?.port ?? 0) + 1 });
  });

  it('listens on loopback only and drops root', async () => {
    const daemon = await started;
    const ports = daemon.readers.map((r) => r.port);
    const own = await listeningSocketsOf(daemon.pid);
    expect(own.map((s) => s.port).sort((a, b) => a - b)).toEqual(ports);
    const onPorts = (await listeningTcpSockets()).filter((s) => ports.includes(s.port));
    expect(onPorts.map((s) => s.address)).toEqual(['127.0.0.1', '127.0.0.1']);
    if (process.getuid?.() === 0) {
      const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'))?.[1];
      expect(uid).not.toBe('0');
    }
  });

  it('refuses a second daemon on the same socket in this process', async () => {
    await started;
    await expect(startPrivatePcscd()).rejects.toThrow(/already runs one/);
  });

  it('serves the PC/SC binding: readers, a card insertion, SELECT and fast transmits (NODELAY shim)', async () => {
    const daemon = await started;
    const client = new Client();
    const card = await insertCard(daemon.readers[0]?.port ?? 0);
    try {
      const reader = await client.reader('Virtual PCD 00 00');
      await client.reader('Virtual PCD 00 01');
      const present = await client.status(reader.name, PRESENT);
      expect(present & 0xffff).toBe(0x22); // CHANGED | PRESENT
      const protocol = await connect(reader);
      expect((await transmit(reader, SELECT_NDEF, protocol)).toString('hex')).toBe('9000');

      const times: number[] = [];
      for (let i = 0; i < 50; i++) {
        const start = performance.now();
        await transmit(reader, SELECT_NDEF, protocol);
        times.push(performance.now() - start);
      }
      times.sort((a, b) => a - b);
      const median = times[25] ?? Infinity;
      expect(median, `median ${median.toFixed(2)} ms; ~44 ms means the shim is not active`).toBeLessThan(5);
      await disconnect(reader);
    } finally {
      card.destroy();
      client.close();
    }
    expect(client.errors).toEqual([]);
  });

  it('stop() ends the pid; restart() reuses the socket path and ports', async () => {
    const daemon = await started;
    const { pid, socketPath } = daemon;
    const ports = daemon.readers.map((r) => r.port);
    await daemon.stop();
    await daemon.stop(); // idempotent
    expect(alive(pid)).toBe(false);
    expect(daemon.running).toBe(false);
    expect(existsSync(socketPath)).toBe(false);

    await daemon.restart();
    expect(daemon.pid).not.toBe(pid);
    expect(daemon.socketPath).toBe(socketPath);
    expect((await listeningSocketsOf(daemon.pid)).map((s) => s.port).sort((a, b) => a - b)).toEqual(ports);
    const client = new Client();
    try {
      await client.reader('Virtual PCD 00 01');
    } finally {
      client.close();
    }
  });

  it('kill() breaks existing contexts (0x80100013); after restart() a new one sees the readers', async () => {
    const daemon = await started;
    const before = new Client();
    try {
      await before.reader('Virtual PCD 00 00');
      const pid = daemon.pid;
      await daemon.kill();
      expect(alive(pid)).toBe(false);
      await until('the transport error', () => (before.errors.some((e) => e.includes('0x80100013')) ? true : undefined));
      expect(() => binding()).toThrow(/0x8010001D/i);

      await daemon.restart();
      const after = new Client();
      try {
        const reader = await after.reader('Virtual PCD 00 00');
        const card = await insertCard(daemon.readers[0]?.port ?? 0);
        try {
          await after.status(reader.name, PRESENT);
          const protocol = await connect(reader);
          expect((await transmit(reader, SELECT_NDEF, protocol)).toString('hex')).toBe('9000');
          await disconnect(reader);
        } finally {
          card.destroy();
        }
      } finally {
        after.close();
      }
      expect(after.errors).toEqual([]);
    } finally {
      before.close();
    }
  });
});

describe('private pcscd with more than two readers', () => {
  let started: Promise<PrivatePcscd>;

  beforeAll(() => {
    started = startPrivatePcscd({ readers: 3 });
    started.catch(() => undefined);
  });

  afterAll(async () => {
    await started.then(
      (daemon) => daemon.stop(),
      () => undefined,
    );
  });

  it('rounds up to pairs; each pair has its own driver copy and ports', async () => {
    const daemon = await started;
    const names = daemon.readers.map((r) => r.name);
    expect(names).toEqual(['Virtual PCD 00 00', 'Virtual PCD 00 01', 'Virtual PCD 2 00 00', 'Virtual PCD 2 00 01']);
    const client = new Client();
    const target = daemon.readers[2];
    const card = await insertCard(target?.port ?? 0);
    try {
      for (const name of names) await client.reader(name);
      const reader = await client.reader('Virtual PCD 2 00 00');
      await client.status(reader.name, PRESENT);
      expect((client.states.get('Virtual PCD 00 00') ?? 0) & PRESENT).toBe(0);
      const protocol = await connect(reader);
      expect((await transmit(reader, SELECT_NDEF, protocol)).toString('hex')).toBe('9000');
      await disconnect(reader);
    } finally {
      card.destroy();
      client.close();
    }
    expect(client.errors).toEqual([]);
  });

  it('unplug(): pcscd comes back without that reader pair (its vpcd ports closed); replug() brings it back', async () => {
    const daemon = await started;
    const ports = daemon.readers.map((r) => r.port);
    const sorted = (list: readonly number[]): number[] => [...list].sort((a, b) => a - b);
    await daemon.unplug('Virtual PCD 2 00 00');
    expect(daemon.pluggedReaders.map((r) => r.name)).toEqual(['Virtual PCD 00 00', 'Virtual PCD 00 01']);
    expect(sorted((await listeningSocketsOf(daemon.pid)).map((s) => s.port))).toEqual(sorted(ports.slice(0, 2)));
    const without = new Client();
    try {
      await without.reader('Virtual PCD 00 01');
      expect([...without.readers.keys()].sort()).toEqual(['Virtual PCD 00 00', 'Virtual PCD 00 01']);
    } finally {
      without.close();
    }
    await daemon.unplug('Virtual PCD 2 00 01'); // already out: nothing to do
    await daemon.replug();
    expect(daemon.pluggedReaders).toEqual(daemon.readers);
    expect(sorted((await listeningSocketsOf(daemon.pid)).map((s) => s.port))).toEqual(sorted(ports));
    const back = new Client();
    try {
      const reader = await back.reader('Virtual PCD 2 00 00');
      const card = await insertCard(daemon.readers[2]?.port ?? 0);
      try {
        await back.status(reader.name, PRESENT);
      } finally {
        card.destroy();
      }
    } finally {
      back.close();
    }
    await expect(daemon.unplug('No Such Reader')).rejects.toThrow(/no reader named/);
  });
});
