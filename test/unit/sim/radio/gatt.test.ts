/** Virtual radio: discovery, reads (long reads with offsets), writes, subscriptions, notifications, ATT errors. */
import { afterEach, describe, expect, it } from 'vitest';
import {
  AttError,
  AttErrorCode,
  type CommandErrorEvent,
  type NotificationEvent,
  type ReadRequest,
} from '../../../../src/qa/sim/radio/virtual-radio.js';
import { turns, until } from '../../../support/radio-phone.js';
import { CHR, SVC, bytes, connected, pair, type Pair } from './radio-fixtures.js';

let current: Pair | undefined;
afterEach(() => {
  current?.radio.shutdown();
  current = undefined;
});
const setup = async (...args: Parameters<typeof pair>): Promise<Pair> => (current = await pair(...args));

/** A server whose rw characteristic holds `value`; records the offsets it was asked for. */
function valueServer(value: Uint8Array): { offsets: number[]; onRead: (r: ReadRequest) => Uint8Array } {
  const offsets: number[] = [];
  return { offsets, onRead: (r) => (offsets.push(r.offset), value.subarray(r.offset)) };
}

describe('discovery', () => {
  it('lists the services (all or filtered) with their characteristics and properties, in stack spelling', async () => {
    const p = await setup();
    const link = await connected(p);
    const all = await link.discover();
    expect(all).toEqual([
      {
        uuid: '6c1e2f3a9b8d4e5fa1b2c3d4e5f60718',
        characteristics: [
          { uuid: '0000aaa100001000800000805f9b34fb', properties: ['read', 'write'] },
          { uuid: '0000aaa200001000800000805f9b34fb', properties: ['notify'] },
          { uuid: '0000aaa300001000800000805f9b34fb', properties: ['read'] },
          { uuid: '0000aaa400001000800000805f9b34fb', properties: ['writeWithoutResponse', 'notify'] },
        ],
      },
    ]);
    expect(await link.discover([SVC.toLowerCase()])).toEqual(all);
    expect(await link.discover(['0000beef-0000-1000-8000-00805f9b34fb'])).toEqual([]);
  });
});

describe('reads', () => {
  it.each([
    { mtu: 247, length: 0, offsets: [0] },
    { mtu: 247, length: 10, offsets: [0] },
    { mtu: 247, length: 245, offsets: [0] },
    { mtu: 247, length: 246, offsets: [0, 246] }, // a full response needs one more (empty) blob
    { mtu: 247, length: 300, offsets: [0, 246] },
    { mtu: 23, length: 50, offsets: [0, 22, 44] },
    { mtu: 185, length: 512, offsets: [0, 184, 368] },
  ])(
    'a $length-byte value at MTU $mtu is read in responses of at most MTU − 1 bytes, Read Blob at offsets $offsets',
    async ({ mtu, length, offsets }) => {
      const value = bytes(length, 3);
      const server = valueServer(value);
      const p = await setup({ onRead: server.onRead }, { phoneMtu: mtu });
      const link = await connected(p);
      expect(await link.read(SVC, CHR.rw)).toEqual(value);
      expect(server.offsets).toEqual(offsets);
    },
  );

  it('a server that ignores offsets cannot make a read run past 512 bytes', async () => {
    const p = await setup({ onRead: () => bytes(246) });
    const link = await connected(p);
    await expect(link.read(SVC, CHR.rw)).rejects.toMatchObject({ code: AttErrorCode.INVALID_ATTRIBUTE_VALUE_LENGTH });
  });

  it('asynchronous answers are waited for; ATT errors from the server reach the client', async () => {
    const p = await setup({
      onRead: async (r) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        if (r.characteristicUuid.startsWith('0000aaa3')) throw new AttError(0x80, 'application error');
        return Uint8Array.of(7);
      },
    });
    const link = await connected(p);
    expect(await link.read(SVC, CHR.rw)).toEqual(Uint8Array.of(7));
    const error = await link.read(SVC, CHR.readOnly).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AttError);
    expect(error).toMatchObject({ code: 0x80 });
  });

  it('the radio refuses a read of a characteristic without the read property (0x02), unknown ones (0x0A), and a crashing handler is 0x0E', async () => {
    const logs: string[] = [];
    const p = await setup({
      onRead: () => {
        throw new Error('boom');
      },
    });
    p.radio.onLog((e) => logs.push(`${e.event} ${e.detail ?? ''}`));
    const link = await connected(p);
    await expect(link.read(SVC, CHR.notify)).rejects.toMatchObject({ code: AttErrorCode.READ_NOT_PERMITTED });
    await expect(link.read(SVC, '0000ffff-0000-1000-8000-00805f9b34fb')).rejects.toMatchObject({ code: AttErrorCode.ATTRIBUTE_NOT_FOUND });
    await expect(link.read(SVC, CHR.rw)).rejects.toMatchObject({ code: AttErrorCode.UNLIKELY_ERROR });
    expect(logs).toContain('handler_error onRead: boom');
  });
});

describe('writes', () => {
  it('write requests wait for the server; write commands only for the air; payloads up to MTU − 3', async () => {
    const got: string[] = [];
    const p = await setup({ onWrite: (r) => void got.push(`${r.withoutResponse ? 'cmd' : 'req'} ${r.data.length}`) });
    const link = await connected(p);
    await link.write(SVC, CHR.rw, bytes(244));
    expect(got).toEqual(['req 244']); // the response came back, so the server had it
    await link.write(SVC, CHR.wwr, bytes(244), { withoutResponse: true });
    await until(() => got.length === 2);
    expect(got[1]).toBe('cmd 244');
    await expect(link.write(SVC, CHR.rw, bytes(245))).rejects.toMatchObject({ code: 'payload_too_large' });
    await expect(link.write(SVC, CHR.wwr, bytes(245), { withoutResponse: true })).rejects.toMatchObject({ code: 'payload_too_large' });
    expect(got).toHaveLength(2);
  });

  it('the radio copies the payload: the sender may reuse its buffer at once', async () => {
    const got: number[][] = [];
    const p = await setup({ onWrite: (r) => void got.push([...r.data]) });
    const link = await connected(p);
    const buffer = Uint8Array.of(1, 2);
    const sent = link.write(SVC, CHR.wwr, buffer, { withoutResponse: true });
    buffer[0] = 9;
    await sent;
    await until(() => got.length === 1);
    expect(got).toEqual([[1, 2]]);
  });

  it('property and handler errors: Write Request → rejected with the ATT code; Write Command → a command-error event', async () => {
    const calls: string[] = [];
    const p = await setup({
      onWrite: (r) => {
        calls.push(r.characteristicUuid);
        if (r.data[0] === 0xff) throw new AttError(AttErrorCode.WRITE_NOT_PERMITTED);
      },
    });
    const link = await connected(p);
    const commandErrors: CommandErrorEvent[] = [];
    link.onCommandError((e) => commandErrors.push(e));
    await expect(link.write(SVC, CHR.readOnly, Uint8Array.of(1))).rejects.toMatchObject({ code: AttErrorCode.WRITE_NOT_PERMITTED });
    await expect(link.write(SVC, CHR.wwr, Uint8Array.of(1))).rejects.toMatchObject({ code: AttErrorCode.WRITE_NOT_PERMITTED }); // no 'write' property
    await link.write(SVC, CHR.rw, Uint8Array.of(1), { withoutResponse: true }); // no 'writeWithoutResponse': sent, refused there
    await link.write(SVC, CHR.wwr, Uint8Array.of(0xff), { withoutResponse: true }); // refused by the handler
    await until(() => commandErrors.length === 2);
    expect(commandErrors).toEqual([
      { serviceUuid: '6c1e2f3a9b8d4e5fa1b2c3d4e5f60718', characteristicUuid: '0000aaa100001000800000805f9b34fb', code: 0x03 },
      { serviceUuid: '6c1e2f3a9b8d4e5fa1b2c3d4e5f60718', characteristicUuid: '0000aaa400001000800000805f9b34fb', code: 0x03 },
    ]);
    expect(calls).toEqual(['0000aaa400001000800000805f9b34fb']); // only the one the properties allow reached the handler
  });
});

describe('subscriptions and notifications', () => {
  it('subscribe (CCCD) reaches the server with maxValueSize; notifications flow until unsubscribe', async () => {
    const server: string[] = [];
    let handle = -1;
    const p = await setup(
      {
        onConnect: (c) => (handle = c.handle),
        onSubscribe: (r) => void server.push(`sub ${r.maxValueSize}`),
        onUnsubscribe: () => void server.push('unsub'),
      },
      { phoneMtu: 100 },
    );
    const link = await connected(p);
    const got: NotificationEvent[] = [];
    link.onNotification((n) => got.push(n));
    await expect(p.phone.peripheral.notify(handle, SVC, CHR.notify, Uint8Array.of(1))).rejects.toMatchObject({ code: 'not_subscribed' });
    await link.subscribe(SVC, CHR.notify);
    expect(server).toEqual(['sub 97']);
    expect(p.phone.peripheral.isSubscribed(handle, SVC, CHR.notify)).toBe(true);
    await p.phone.peripheral.notify(handle, SVC, CHR.notify, bytes(97));
    await expect(p.phone.peripheral.notify(handle, SVC, CHR.notify, bytes(98))).rejects.toMatchObject({ code: 'payload_too_large' });
    await until(() => got.length === 1);
    expect(got[0]).toEqual({
      serviceUuid: '6c1e2f3a9b8d4e5fa1b2c3d4e5f60718',
      characteristicUuid: '0000aaa200001000800000805f9b34fb',
      data: bytes(97),
    });
    await link.unsubscribe(SVC, CHR.notify);
    expect(server).toEqual(['sub 97', 'unsub']);
    await expect(p.phone.peripheral.notify(handle, SVC, CHR.notify, Uint8Array.of(1))).rejects.toMatchObject({ code: 'not_subscribed' });
    await expect(link.subscribe(SVC, CHR.readOnly)).rejects.toMatchObject({ code: AttErrorCode.ATTRIBUTE_NOT_FOUND });
  });

  it('a server may refuse a subscription with an ATT error; the state stays unsubscribed', async () => {
    let handle = -1;
    const p = await setup({
      onConnect: (c) => (handle = c.handle),
      onSubscribe: () => {
        throw new AttError(0x05);
      },
    });
    const link = await connected(p);
    await expect(link.subscribe(SVC, CHR.notify)).rejects.toMatchObject({ code: 0x05 });
    expect(p.phone.peripheral.isSubscribed(handle, SVC, CHR.notify)).toBe(false);
  });
});

describe('asynchrony', () => {
  it('nothing is delivered within the caller’s call: not writes, not notifications', async () => {
    let handle = -1;
    let writes = 0;
    const p = await setup({
      onConnect: (c) => (handle = c.handle),
      onWrite: () => {
        writes++;
      },
    });
    const link = await connected(p);
    await link.subscribe(SVC, CHR.notify);
    let notified = 0;
    link.onNotification(() => notified++);
    void link.write(SVC, CHR.wwr, Uint8Array.of(1), { withoutResponse: true });
    void p.phone.peripheral.notify(handle, SVC, CHR.notify, Uint8Array.of(1));
    await Promise.resolve();
    expect([writes, notified]).toEqual([0, 0]);
    await turns(3);
    expect([writes, notified]).toEqual([1, 1]);
  });
});
