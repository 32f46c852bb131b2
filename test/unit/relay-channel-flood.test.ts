/**
 * The inbound queue of the session socket is bounded (relay-channel.ts): a backend that sends faster than
 * the phone takes its writes cannot grow the kiosk's memory without end. A million queued `ble_write`s
 * once reached 418 MB of RSS.
 */
import { describe, expect, it } from 'vitest';
import { RelayChannel, type Arrival } from '../../src/kiosk/relay-channel.js';

const write = (i: number): string =>
  JSON.stringify({
    type: 'step_request',
    op: 'ble_write',
    params: { char: '00000001-a123-48ce-896b-4c76973373e6', data: Buffer.from([i & 0xff]).toString('base64') },
  });

async function drain(channel: RelayChannel): Promise<Arrival[]> {
  const out: Arrival[] = [];
  const signal = new AbortController().signal;
  while (channel.pending.length > 0) out.push(await channel.next(1_000, signal));
  return out;
}

describe('RelayChannel queue bound', () => {
  it('queues up to the bound in order', async () => {
    const channel = new RelayChannel({ maxQueued: 100, maxQueuedChars: 1_000_000 });
    for (let i = 0; i < 100; i++) channel.onFrame({ kind: 'text', text: write(i) });
    const got = await drain(channel);
    expect(got).toHaveLength(100);
    expect(got.every((a) => a.kind === 'message')).toBe(true);
  });

  it('one message over the count: the queue is dropped for one message_flood violation, later frames are ignored, the close still arrives', async () => {
    const channel = new RelayChannel({ maxQueued: 100, maxQueuedChars: 1_000_000 });
    for (let i = 0; i < 10_000; i++) channel.onFrame({ kind: 'text', text: write(i) });
    expect(channel.pending).toHaveLength(1);
    channel.onClose({ code: 1006, reason: '', local: false });
    const got = await drain(channel);
    expect(got.map((a) => a.kind)).toEqual(['violation', 'closed']);
    expect(got[0]).toMatchObject({ kind: 'violation', violation: { kind: 'message_flood' } });
  });

  it('the character bound counts only what is still unread', async () => {
    const text = write(1);
    const channel = new RelayChannel({ maxQueued: 1_000, maxQueuedChars: text.length * 3 });
    const signal = new AbortController().signal;
    // Read as fast as they come: never more than one unread, never a flood.
    for (let i = 0; i < 50; i++) {
      channel.onFrame({ kind: 'text', text });
      expect((await channel.next(1_000, signal)).kind).toBe('message');
    }
    for (let i = 0; i < 3; i++) channel.onFrame({ kind: 'text', text });
    expect(channel.pending.every((a) => a.kind === 'message')).toBe(true);
    channel.onFrame({ kind: 'text', text });
    expect(channel.pending).toEqual([expect.objectContaining({ kind: 'violation' })]);
  });

  it('the default bound holds a whole honest exchange (a few hundred writes) with room to spare', () => {
    const channel = new RelayChannel();
    for (let i = 0; i < 1_000; i++) channel.onFrame({ kind: 'text', text: write(i) });
    expect(channel.pending).toHaveLength(1_000);
    expect(channel.pending.every((a) => a.kind === 'message')).toBe(true);
  });
});
