/**
 * VpcdCard against a fake vpcd (test/support/fake-vpcd.ts) playing pcscd's side of the vsmartcard
 * protocol over real loopback sockets.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualRadio } from '../../../../src/qa/sim/radio/virtual-radio.js';
import {
  VpcdCard,
  VpcdConnectError,
  parseHostPort,
  type VpcdCardEvent,
  type VpcdCardOptions,
} from '../../../../src/qa/sim/vpcd/vpcd-card.js';
import { VpcdFrameDecoder, encodeVpcdFrame } from '../../../../src/qa/sim/vpcd/vpcd-framing.js';
import { NfcFieldLostError, type VirtualNfcTag } from '../../../../src/qa/sim/virtual-wallet/nfc-tag.js';
import { VirtualPhone } from '../../../../src/qa/sim/virtual-wallet/virtual-phone.js';
import { CTRL, FakeVpcd, frame, fromHex, toHex, unusedPort, type FakeVpcdCard } from '../../../support/fake-vpcd.js';

const SELECT_NDEF = '00A4040007D276000085010100';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A tag double: records field changes and commands, answers with `answer`. */
class ScriptedTag implements VirtualNfcTag {
  readonly calls: string[] = [];
  readonly commands: string[] = [];
  constructor(private readonly answer: (command: Uint8Array, n: number) => Uint8Array = () => fromHex('9000')) {}

  processApdu(command: Uint8Array): Uint8Array {
    this.commands.push(toHex(command));
    this.calls.push('apdu');
    return this.answer(command, this.commands.length);
  }

  fieldOn(): void {
    this.calls.push('on');
  }

  fieldOff(): void {
    this.calls.push('off');
  }
}

let vpcd: FakeVpcd;
const cards: VpcdCard[] = [];
let events: VpcdCardEvent[];
let lines: string[];

beforeEach(async () => {
  vpcd = await FakeVpcd.start();
  events = [];
  lines = [];
});

afterEach(async () => {
  for (const card of cards.splice(0)) await card.remove();
  await vpcd.close();
});

function newCard(options: Partial<VpcdCardOptions> = {}): VpcdCard {
  const card = new VpcdCard({
    host: '127.0.0.1',
    port: vpcd.port,
    minAwayMs: 0,
    onEvent: (e) => events.push(e),
    log: (line) => lines.push(line),
    ...options,
  });
  cards.push(card);
  return card;
}

async function insertOn(card: VpcdCard, tag: VirtualNfcTag): Promise<FakeVpcdCard> {
  const [, peer] = await Promise.all([card.insert(tag), vpcd.nextCard()]);
  return peer;
}

/** Resolves true if the card sends nothing for `ms`. */
async function silentFor(peer: FakeVpcdCard, ms: number): Promise<boolean> {
  return peer.receive(ms).then(
    () => false,
    () => true,
  );
}

describe('VpcdCard: the vpcd protocol', () => {
  it('connects on insert, calls fieldOn and answers GET ATR with 3B80800101 (or the ATR given)', async () => {
    const tag = new ScriptedTag();
    const card = newCard();
    const peer = await insertOn(card, tag);
    expect(card.inserted).toBe(true);
    expect(tag.calls).toEqual(['on']);
    expect(toHex(await peer.getAtr())).toBe('3B80800101');
    expect(toHex(await peer.getAtr())).toBe('3B80800101');
    expect(card.atrRequests).toBe(2);
    expect(events[0]).toEqual({ type: 'connected', address: `127.0.0.1:${vpcd.port}` });

    const other = newCard({ atr: fromHex('3B8F8001804F0CA0000003060300030000000068') });
    await card.remove();
    const peer2 = await insertOn(other, new ScriptedTag());
    expect(toHex(await peer2.getAtr())).toBe('3B8F8001804F0CA0000003060300030000000068');
  });

  it('relays a C-APDU to the tag byte for byte and sends its R-APDU back', async () => {
    const tag = new ScriptedTag(() => fromHex('CAFE9000'));
    const card = newCard();
    const peer = await insertOn(card, tag);
    expect(toHex(await peer.transmit(SELECT_NDEF))).toBe('CAFE9000');
    expect(tag.commands).toEqual([SELECT_NDEF]);
    expect(card.apdus).toBe(1);
    expect(events).toContainEqual({ type: 'apdu', number: 1, header: '00A40400', commandLength: 13, responseLength: 4, sw: '9000' });
  });

  it('power on / power off / reset get no answer and leave the tag alone; GET ATR in between is answered in order', async () => {
    const tag = new ScriptedTag();
    const card = newCard();
    const peer = await insertOn(card, tag);
    peer.control(CTRL.POWER_ON);
    peer.control(CTRL.RESET);
    peer.control(CTRL.POWER_OFF);
    peer.control(CTRL.POWER_ON);
    // The first frame back answers the GET ATR sent after the controls: they were not answered.
    expect(toHex(await peer.getAtr())).toBe('3B80800101');
    expect(tag.calls).toEqual(['on']);
    const powers = events.flatMap((e) => (e.type === 'power' ? [e.control] : []));
    expect(powers).toEqual(['power_on', 'reset', 'power_off', 'power_on']);
    // An APDU, a GET ATR and another APDU in one write: three answers in order (pcscd polls mid-session).
    peer.sendRaw(Buffer.concat([frame(fromHex('00B000000F')), frame(Uint8Array.of(CTRL.GET_ATR)), frame(fromHex('00B0000F02'))]));
    expect(toHex(await peer.receive())).toBe('9000');
    expect(toHex(await peer.receive())).toBe('3B80800101');
    expect(toHex(await peer.receive())).toBe('9000');
    expect(tag.commands).toEqual(['00B000000F', '00B0000F02']);
    expect(await silentFor(peer, 50)).toBe(true);
  });

  it('reassembles a frame split across chunks, byte by byte, and ignores zero-length frames', async () => {
    const tag = new ScriptedTag(() => fromHex('0102039000'));
    const card = newCard();
    const peer = await insertOn(card, tag);
    const bytes = frame(fromHex(SELECT_NDEF));
    for (const byte of bytes) {
      peer.sendRaw(Uint8Array.of(byte));
      await sleep(2);
    }
    expect(toHex(await peer.receive())).toBe('0102039000');
    expect(tag.commands).toEqual([SELECT_NDEF]);
    // A zero-length frame, then a GET ATR split in the middle of its length prefix.
    peer.sendRaw(Uint8Array.of(0x00, 0x00, 0x00));
    await sleep(5);
    peer.sendRaw(Uint8Array.of(0x01, CTRL.GET_ATR));
    expect(toHex(await peer.receive())).toBe('3B80800101');
    expect(await silentFor(peer, 50)).toBe(true);
    expect(tag.commands).toHaveLength(1);
  });

  it('answers an exception other than a field drop with 6F00 and reports it; a too-short answer too', async () => {
    const tag = new ScriptedTag((_c, n) => {
      if (n === 1) throw new Error('boom');
      return new Uint8Array(1);
    });
    const card = newCard();
    const peer = await insertOn(card, tag);
    expect(toHex(await peer.transmit('00B000000F'))).toBe('6F00');
    expect(toHex(await peer.transmit('00B000000F'))).toBe('6F00');
    expect(card.inserted).toBe(true);
    expect(events.filter((e) => e.type === 'tag_error')).toHaveLength(2);
    expect(lines.some((l) => l.includes('Error: boom'))).toBe(true);
  });

  it('a vpcd that closes the connection removes the card (fieldOff, reader_closed)', async () => {
    const tag = new ScriptedTag();
    const card = newCard();
    const peer = await insertOn(card, tag);
    peer.disconnect();
    await expect.poll(() => card.inserted).toBe(false);
    expect(tag.calls).toEqual(['on', 'off']);
    expect(events.at(-1)).toMatchObject({ type: 'removed', cause: 'reader_closed' });
  });
});

describe('VpcdCard: field drop and mute', () => {
  it('a field drop (NfcFieldLostError) removes the card without answering; answers written before still arrive', async () => {
    const tag = new ScriptedTag((_c, n) => {
      if (n === 2) throw new NfcFieldLostError(2);
      return fromHex('9000');
    });
    const card = newCard();
    const peer = await insertOn(card, tag);
    expect(toHex(await peer.transmit(SELECT_NDEF))).toBe('9000');
    // GET ATR, the dropping APDU and one more APDU in one chunk: only the ATR is answered.
    peer.sendRaw(Buffer.concat([frame(Uint8Array.of(CTRL.GET_ATR)), frame(fromHex('00B000000F')), frame(fromHex('00B000000F'))]));
    await peer.closed;
    expect(peer.received.map(toHex)).toEqual(['9000', '3B80800101']);
    expect(card.inserted).toBe(false);
    expect(tag.calls).toEqual(['on', 'apdu', 'apdu', 'off']);
    expect(card.apdus).toBe(2);
    expect(events).toContainEqual({ type: 'field_lost', number: 2, header: '00B00000', commandLength: 5 });
    expect(events.at(-1)).toMatchObject({ type: 'removed', cause: 'field_lost', apdus: 2 });
    // The customer taps again: the same tag goes back on the reader.
    const [, again] = await Promise.all([card.insert(tag), vpcd.nextCard()]);
    expect(toHex(await again.transmit(SELECT_NDEF))).toBe('9000');
  });

  it('muted, C-APDUs get no answer while GET ATR still does; unmuted, APDUs are answered again', async () => {
    const tag = new ScriptedTag();
    const card = newCard();
    const peer = await insertOn(card, tag);
    card.setMute(true);
    expect(card.muted).toBe(true);
    peer.send(fromHex(SELECT_NDEF));
    expect(await silentFor(peer, 150)).toBe(true);
    expect(toHex(await peer.getAtr())).toBe('3B80800101');
    expect(card.inserted).toBe(true);
    expect(tag.commands).toEqual([]);
    expect(card.apdus).toBe(1);
    expect(events).toContainEqual({ type: 'apdu_muted', number: 1, header: '00A40400', commandLength: 13 });
    card.setMute(false);
    expect(toHex(await peer.transmit(SELECT_NDEF))).toBe('9000');
    expect(card.apdus).toBe(2);
  });
});

describe('VpcdCard: insert, remove, reinsert', () => {
  it('remove closes the connection and calls fieldOff once; it is idempotent', async () => {
    const tag = new ScriptedTag();
    const card = newCard();
    const peer = await insertOn(card, tag);
    await card.remove();
    await peer.closed;
    expect(card.inserted).toBe(false);
    await card.remove();
    expect(tag.calls).toEqual(['on', 'off']);
    expect(events.filter((e) => e.type === 'removed')).toEqual([
      { type: 'removed', cause: 'removed', address: `127.0.0.1:${vpcd.port}`, apdus: 0 },
    ]);
  });

  it('reinsert keeps the card away awayMs, then connects again with the same tag', async () => {
    const tag = new ScriptedTag();
    const card = newCard();
    const first = await insertOn(card, tag);
    let closedAt = 0;
    void first.closed.then(() => (closedAt = performance.now()));
    const [, second] = await Promise.all([card.reinsert(tag, { awayMs: 200 }), vpcd.nextCard()]);
    const connectedAt = performance.now();
    expect(closedAt).toBeGreaterThan(0);
    expect(connectedAt - closedAt).toBeGreaterThanOrEqual(190);
    expect(tag.calls).toEqual(['on', 'off', 'on']);
    expect(toHex(await second.getAtr())).toBe('3B80800101');
    expect(vpcd.connections).toBe(2);
  });

  it('an insert soon after any removal waits out minAwayMs (pcscd must see the card gone)', async () => {
    let removedAt = Number.POSITIVE_INFINITY;
    const card = newCard({ minAwayMs: 300, onEvent: (e) => e.type === 'removed' && (removedAt = performance.now()) });
    const tag = new ScriptedTag();
    const first = await insertOn(card, tag);
    first.disconnect();
    await expect.poll(() => card.inserted).toBe(false);
    await insertOn(card, tag);
    // A little slack for timer granularity.
    expect(performance.now() - removedAt).toBeGreaterThanOrEqual(295);
  });

  it('refuses a second insert while inserted; remove() during the wait cancels an insert', async () => {
    const card = newCard({ minAwayMs: 10_000 });
    const tag = new ScriptedTag();
    await insertOn(card, tag);
    await expect(card.insert(tag)).rejects.toThrow(/already on \(or going on\) the vpcd reader/);
    await card.remove();
    const pending = card.insert(tag);
    await sleep(20);
    await card.remove();
    await expect(pending).rejects.toMatchObject({ name: 'VpcdConnectError', code: 'cancelled' });
    expect(vpcd.connections).toBe(1);
    expect(card.inserted).toBe(false);
  });

  it('connection refused: a clear error naming the address', async () => {
    const port = await unusedPort();
    const card = new VpcdCard({ host: '127.0.0.1', port });
    const error: unknown = await card.insert(new ScriptedTag()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VpcdConnectError);
    expect((error as VpcdConnectError).code).toBe('refused');
    expect((error as Error).message).toBe(`no vpcd reader listening on 127.0.0.1:${port} — is pcscd with vsmartcard-vpcd running?`);
    expect(card.inserted).toBe(false);
  });

  it('validates its options', () => {
    expect(() => new VpcdCard({ host: '127.0.0.1', port: 0 })).toThrow(RangeError);
    expect(() => new VpcdCard({ host: '127.0.0.1', port: 35963, atr: Uint8Array.of(0x3b) })).toThrow(/ATR/);
    expect(() => new VpcdCard({ host: '127.0.0.1', port: 35963, connectTimeoutMs: 0 })).toThrow(/connectTimeoutMs/);
  });
});

describe('VpcdCard: what it logs', () => {
  it('events and log lines carry at most CLA INS P1 P2, lengths and the status word', async () => {
    const secretAnswer = 'DEADBEEFC0FFEE42';
    const tag = new ScriptedTag((c, n) => {
      if (n === 2) throw new NfcFieldLostError(2);
      return fromHex(`${secretAnswer}${toHex(c).slice(-4)}9000`);
    });
    const card = newCard();
    const peer = await insertOn(card, tag);
    const secretCommand = '00D60000081122334455667788';
    await peer.transmit(secretCommand);
    card.setMute(true);
    peer.send(fromHex('00D600000899AABBCCDDEEFF01'));
    await peer.getAtr();
    card.setMute(false);
    peer.send(fromHex('00D6000008A1B2C3D4E5F60718'));
    await peer.closed;
    const logged = `${JSON.stringify(events)}\n${lines.join('\n')}`.toUpperCase();
    for (const data of [secretAnswer, '1122334455667788', '99AABBCCDDEEFF01', 'A1B2C3D4E5F60718', secretCommand])
      expect(logged).not.toContain(data);
    expect(logged).toContain('00D60000');
    expect(lines).toHaveLength(events.length);
    expect(lines.join('\n')).toMatch(/APDU #1 00D60000 \(13 bytes\) → 9000 \(12 bytes\)/);
  });
});

describe('VpcdCard with the virtual phone', () => {
  it("an android phone's HandoverTag behind vpcd: SELECT NDEF → 9000, then the capability container", async () => {
    const radio = new VirtualRadio();
    const phone = await VirtualPhone.create({ profile: 'android', radio });
    try {
      const card = newCard();
      // As virtual-rig's tap(): a fresh NFC engagement put on the reader.
      const tag = phone.tag();
      const peer = await insertOn(card, tag);
      expect(toHex(await peer.getAtr())).toBe('3B80800101');
      expect(toHex(await peer.transmit(SELECT_NDEF))).toBe('9000');
      expect(toHex(await peer.transmit('00A4000C02E103'))).toBe('9000');
      const cc = await peer.transmit('00B000000F');
      expect(cc).toHaveLength(17);
      expect(toHex(cc.subarray(15))).toBe('9000');
      await card.remove();
      await peer.closed;
      // Field off restarted the HCE session: after a re-tap nothing is selected any more.
      const [, again] = await Promise.all([card.insert(tag), vpcd.nextCard()]);
      expect(toHex(await again.transmit('00B000000F'))).toBe('6986');
    } finally {
      await phone.stop();
      radio.shutdown();
    }
  });
});

describe('vpcd framing and addresses', () => {
  it('frames are a big-endian length and the payload; the decoder handles splits and runs of frames', () => {
    expect(toHex(encodeVpcdFrame(fromHex('3B80800101')))).toBe('00053B80800101');
    expect(() => encodeVpcdFrame(new Uint8Array(0x10000))).toThrow(RangeError);
    const decoder = new VpcdFrameDecoder();
    const wire = Buffer.concat([
      frame(Uint8Array.of(4)),
      frame(new Uint8Array(0)),
      frame(fromHex(SELECT_NDEF)),
      frame(new Uint8Array(300).fill(7)),
    ]);
    const out: string[] = [];
    for (let i = 0; i < wire.length; i += 7) out.push(...decoder.push(wire.subarray(i, i + 7)).map(toHex));
    expect(out.slice(0, 3)).toEqual(['04', '', SELECT_NDEF]);
    expect(out).toHaveLength(4);
    expect(decoder.pendingBytes).toBe(0);
  });

  it('parseHostPort: host:port, bare host, bare port, [IPv6]:port; clear errors otherwise', () => {
    expect(parseHostPort('127.0.0.1:35963')).toEqual({ host: '127.0.0.1', port: 35963 });
    expect(parseHostPort('localhost')).toEqual({ host: 'localhost', port: 35963 });
    expect(parseHostPort('35964')).toEqual({ host: '127.0.0.1', port: 35964 });
    expect(parseHostPort('[::1]:40000')).toEqual({ host: '::1', port: 40000 });
    expect(() => parseHostPort('')).toThrow(/expected host:port/);
    expect(() => parseHostPort('127.0.0.1:0')).toThrow(/port 0 is not in 1..65535/);
    expect(() => parseHostPort('127.0.0.1:99999')).toThrow(/not in 1..65535/);
    expect(() => parseHostPort('127.0.0.1:abc')).toThrow(/port must be a number/);
    expect(() => parseHostPort('::1:35963')).toThrow(/IPv6 address in brackets/);
    expect(() => parseHostPort('bad host:1')).toThrow(/not a host name/);
    expect(() => parseHostPort('[nope]:1')).toThrow(/IPv6/);
  });
});
