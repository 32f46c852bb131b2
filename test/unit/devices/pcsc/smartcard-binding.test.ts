/**
 * The port over the `smartcard` addon, against a scripted double of the addon's API (smartcard 3.x:
 * promise-based Context/Reader/Card, errors as fixed texts, `waitForChange` resolving `[]` on timeout and
 * `null` when cancelled). The same module against the real addon, pcscd and vpcd: test/pcsc/.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ReaderState, type BindingContext, type BindingReader } from '../../../../src/devices/pcsc/pcsc-binding.js';
import {
  PNP_NOTIFICATION,
  smartcardBindingFactory,
  type SmartcardAddon,
  type SmartcardCard,
  type SmartcardContext,
  type SmartcardReader,
} from '../../../../src/devices/pcsc/smartcard-binding.js';
import { parseScardCode } from '../../../../src/devices/pcsc/scard-errors.js';

const PRESENT = ReaderState.PRESENT;
const EMPTY = ReaderState.EMPTY;
const CHANGED = ReaderState.CHANGED;

interface Waiter {
  readonly query: readonly { name: string; state: number }[];
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** The PC/SC service as the double's contexts see it. */
class Service {
  running = true;
  /** Reader name → status word (insertion counter in the upper half). */
  readonly readers = new Map<string, number>();
  readonly contexts = new Set<FakeContext>();
  /** When set, waits do not report this reader's changes (as Windows sometimes does not flag them). */
  silent = new Set<string>();
  transmitBehaviour: (command: Buffer) => Promise<Buffer> = (command) => Promise.resolve(Buffer.from([command[0] ?? 0, 0x90, 0x00]));
  readonly transmits: { reader: string; length: number; maxRecvLength: number }[] = [];
  disconnects = 0;

  state(name: string): number {
    return this.readers.get(name) ?? ReaderState.UNKNOWN | CHANGED;
  }

  setCard(name: string, present: boolean): void {
    const old = this.readers.get(name) ?? 0;
    this.readers.set(name, ((((old >>> 16) + 1) & 0xffff) << 16) | (present ? PRESENT : EMPTY));
    this.poke();
  }

  plug(name: string): void {
    this.readers.set(name, EMPTY);
    this.poke();
  }

  unplug(name: string): void {
    this.readers.delete(name);
    this.poke();
  }

  poke(): void {
    for (const c of this.contexts) c.poke();
  }

  kill(): void {
    this.running = false;
    for (const c of this.contexts) c.lose();
  }
}

class FakeCard implements SmartcardCard {
  readonly protocol = 2;
  connected = true;
  constructor(
    private readonly service: Service,
    private readonly reader: string,
  ) {}
  transmit(command: Buffer, options: { maxRecvLength: number }): Promise<Buffer> {
    this.service.transmits.push({ reader: this.reader, length: command.length, maxRecvLength: options.maxRecvLength });
    if (!this.connected) return Promise.reject(new Error('Card is not connected'));
    if ((this.service.state(this.reader) & PRESENT) === 0) return Promise.reject(new Error('Card was removed'));
    return this.service.transmitBehaviour(command);
  }
  disconnect(): void {
    if (!this.connected) return;
    this.connected = false;
    this.service.disconnects++;
  }
}

class FakeContext implements SmartcardContext {
  valid = true;
  private waiter: Waiter | undefined;

  constructor(private readonly service: Service) {
    if (!service.running) throw new Error('PC/SC service not running');
    service.contexts.add(this);
  }

  listReaders(): SmartcardReader[] {
    if (!this.valid) throw new Error('Context is not valid');
    if (!this.service.running) throw new Error('PC/SC service not running');
    return [...this.service.readers].map(([name, state]) => ({
      name,
      state: state | CHANGED,
      connect: () => {
        if (!this.service.running) return Promise.reject(new Error('Communication error'));
        if ((this.service.state(name) & PRESENT) === 0) return Promise.reject(new Error('No smart card present'));
        return Promise.resolve(new FakeCard(this.service, name));
      },
    }));
  }

  waitForChange(query: readonly { name: string; state: number }[], timeoutMs: number): Promise<unknown> {
    if (!this.valid) return Promise.reject(new Error('Context is not valid'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve([]);
      }, timeoutMs);
      this.waiter = {
        query,
        resolve: (v) => {
          clearTimeout(timer);
          this.waiter = undefined;
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          this.waiter = undefined;
          reject(e);
        },
      };
      this.poke();
    });
  }

  /** Answers the pending wait if anything in its query differs from the service. */
  poke(): void {
    const waiter = this.waiter;
    if (waiter === undefined) return;
    const entries = waiter.query.map(({ name, state }) => {
      if (name === PNP_NOTIFICATION) {
        const now = this.service.readers.size << 16;
        return { name, state: now | (now !== state ? CHANGED : 0), changed: now !== state, atr: null };
      }
      const now = this.service.state(name);
      const changed = !this.service.silent.has(name) && (now & ~CHANGED) !== state;
      return { name, state: now | (changed ? CHANGED : 0), changed, atr: null };
    });
    if (entries.some((e) => e.changed)) waiter.resolve(entries);
  }

  lose(): void {
    this.waiter?.reject(new Error('Communication error'));
  }

  cancel(): void {
    this.waiter?.resolve(null);
  }

  close(): void {
    this.valid = false;
    this.service.contexts.delete(this);
  }
}

function fakeAddon(service: Service): SmartcardAddon {
  return {
    Context: class extends FakeContext {
      constructor() {
        super(service);
      }
    },
    SCARD_SHARE_SHARED: 2,
    SCARD_SHARE_EXCLUSIVE: 1,
    SCARD_PROTOCOL_T0: 1,
    SCARD_PROTOCOL_T1: 2,
    SCARD_LEAVE_CARD: 0,
  };
}

const opened: BindingContext[] = [];
afterEach(() => {
  for (const c of opened.splice(0)) c.close();
});

function open(
  service: Service,
  waitMs = 30,
): { context: BindingContext; readers: Map<string, BindingReader>; statuses: [string, number][]; ended: string[]; errors: unknown[] } {
  const context = smartcardBindingFactory(fakeAddon(service), { waitMs })();
  opened.push(context);
  const readers = new Map<string, BindingReader>();
  const statuses: [string, number][] = [];
  const ended: string[] = [];
  const errors: unknown[] = [];
  context.on('error', (e) => errors.push(e));
  context.on('reader', (r) => {
    readers.set(r.name, r);
    r.on('status', (s) => statuses.push([r.name, s.state]));
    r.on('end', () => ended.push(r.name));
  });
  return { context, readers, statuses, ended, errors };
}

const until = async (test: () => boolean, ms = 2_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
};

const call = <T>(start: (done: (error: Error | null | undefined, value?: T) => void) => void): Promise<T | undefined> =>
  new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))));

describe('smartcard binding: the monitor', () => {
  it('throws at once, with the service code, when the service is down', () => {
    const service = new Service();
    service.running = false;
    const factory = smartcardBindingFactory(fakeAddon(service));
    expect(() => factory()).toThrow(/PC\/SC service not running \(0x8010001d\)/);
  });

  it('announces readers after the factory returned, then reports each status word once, with the insertion counter', async () => {
    const service = new Service();
    service.plug('R1 PICC');
    const m = open(service);
    await until(() => m.statuses.length === 1);
    expect([...m.readers.keys()]).toEqual(['R1 PICC']);
    expect((m.statuses[0]?.[1] ?? 0) & ~CHANGED).toBe(EMPTY);
    service.setCard('R1 PICC', true);
    await until(() => m.statuses.length === 2);
    const [, state] = m.statuses[1] ?? ['', 0];
    expect(state & PRESENT).toBe(PRESENT);
    expect(state >>> 16).toBe(1);
    service.setCard('R1 PICC', false);
    await until(() => m.statuses.length === 3);
    expect((m.statuses[2]?.[1] ?? 0) >>> 16).toBe(2);
    await new Promise((r) => setTimeout(r, 100)); // several quiet waits: no repeated reports
    expect(m.statuses).toHaveLength(3);
  });

  it('announces a reader plugged in later and ends one unplugged', async () => {
    const service = new Service();
    const m = open(service);
    await new Promise((r) => setTimeout(r, 50));
    service.plug('R2');
    await until(() => m.readers.has('R2'));
    service.unplug('R2');
    await until(() => m.ended.includes('R2'));
    expect(m.errors).toEqual([]);
  });

  it('sees a change the wait did not flag (Windows) at the next fresh read', async () => {
    const service = new Service();
    service.plug('R1');
    const m = open(service, 20);
    await until(() => m.statuses.length === 1);
    service.silent.add('R1');
    service.setCard('R1', true);
    await until(() => m.statuses.length === 2, 500);
    expect((m.statuses[1]?.[1] ?? 0) & PRESENT).toBe(PRESENT);
  });

  it('a lost service is the context’s error, with the code the adapter rebuilds on, and the loop ends', async () => {
    const service = new Service();
    service.plug('R1');
    const m = open(service);
    await until(() => m.statuses.length === 1);
    service.kill();
    await until(() => m.errors.length === 1);
    expect(parseScardCode(m.errors[0])).toBe(0x80100013);
    expect(String(m.errors[0])).toContain('SCardGetStatusChange failed: Communication error (0x80100013)');
    expect(service.contexts.size).toBe(0); // the monitor's context is released
  });

  it('close() cancels the pending wait and releases the monitor context; nothing is reported afterwards', async () => {
    const service = new Service();
    service.plug('R1');
    const m = open(service, 10_000);
    await until(() => m.statuses.length === 1);
    m.context.close();
    await until(() => service.contexts.size === 0, 500);
    service.setCard('R1', true);
    await new Promise((r) => setTimeout(r, 30));
    expect(m.statuses).toHaveLength(1);
    expect(m.errors).toEqual([]);
  });
});

describe('smartcard binding: cards', () => {
  async function withCard(): Promise<{ service: Service; reader: BindingReader; protocol: number | undefined }> {
    const service = new Service();
    service.plug('R1');
    const m = open(service);
    await until(() => m.readers.has('R1'));
    service.setCard('R1', true);
    const reader = m.readers.get('R1') as BindingReader;
    const protocol = await call<number>((done) => reader.connect({ share_mode: reader.SCARD_SHARE_SHARED, protocol: 3 }, done));
    return { service, reader, protocol };
  }

  it('connects on a context of its own, transmits with the receive buffer asked for, and disconnects', async () => {
    const { service, reader, protocol } = await withCard();
    expect(protocol).toBe(2);
    expect(reader.connected).toBe(true);
    expect(service.contexts.size).toBe(2); // monitor + this reader's card context
    const response = await call<Buffer>((done) => reader.transmit(Buffer.from([0x5a, 0xa4]), 65_538, 2, done));
    expect(response).toEqual(Buffer.from([0x5a, 0x90, 0x00]));
    expect(service.transmits).toEqual([{ reader: 'R1', length: 2, maxRecvLength: 65_538 }]);
    await call((done) => reader.disconnect(reader.SCARD_LEAVE_CARD, done));
    expect(reader.connected).toBe(false);
    expect(service.disconnects).toBe(1);
  });

  it('the addon’s error texts become SCARD codes the adapter maps; a transmit without a handle is "not connected"', async () => {
    const { service, reader } = await withCard();
    service.transmitBehaviour = () => Promise.reject(new Error('Insufficient buffer'));
    const insufficient = await call((done) => reader.transmit(Buffer.alloc(4), 65_538, 2, done)).catch((e: unknown) => e);
    expect(parseScardCode(insufficient)).toBe(0x80100008);
    service.setCard('R1', false);
    const removed = await call((done) => reader.transmit(Buffer.alloc(4), 65_538, 2, done)).catch((e: unknown) => e);
    expect(parseScardCode(removed)).toBe(0x80100069);
    service.transmitBehaviour = () => Promise.reject(new Error('Unknown PC/SC error'));
    service.setCard('R1', true);
    const unknown = await call((done) => reader.transmit(Buffer.alloc(4), 65_538, 2, done)).catch((e: unknown) => e);
    expect(parseScardCode(unknown)).toBeUndefined();
    await call((done) => reader.disconnect(0, done));
    const noHandle = await call((done) => reader.transmit(Buffer.alloc(4), 65_538, 2, done)).catch((e: unknown) => e);
    expect(String(noHandle)).toMatch(/not connected/);
  });

  it('connect to an empty reader fails with NoSmartcard’s code', async () => {
    const service = new Service();
    service.plug('R1');
    const m = open(service);
    await until(() => m.readers.has('R1'));
    const reader = m.readers.get('R1') as BindingReader;
    const error = await call((done) => reader.connect({ share_mode: 2, protocol: 3 }, done)).catch((e: unknown) => e);
    expect(parseScardCode(error)).toBe(0x8010000c);
    expect(reader.connected).toBe(false);
  });

  it('close() during a transmit releases the handle and the card context only when the transmit returned', async () => {
    const { service, reader } = await withCard();
    let answer: (b: Buffer) => void = () => undefined;
    service.transmitBehaviour = () => new Promise((resolve) => (answer = resolve));
    const transmitted = call<Buffer>((done) => reader.transmit(Buffer.alloc(4), 65_538, 2, done));
    reader.close();
    expect(service.disconnects).toBe(0);
    expect(service.contexts.size).toBe(2);
    answer(Buffer.from([0x90, 0x00]));
    await transmitted;
    expect(service.disconnects).toBe(1);
    expect(service.contexts.size).toBe(1);
    const late = await call((done) => reader.connect({ share_mode: 2, protocol: 3 }, done)).catch((e: unknown) => e);
    expect(String(late)).toContain('the card reader is closed');
  });
});
