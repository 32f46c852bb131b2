/**
 * The decode worker's message checks (both directions, as pure functions) and the screen-side client that
 * keeps one frame in flight, checks replies and notices a broken worker — driven with a scripted worker.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_QR_TEXT } from '../../../src/common/kiosk-api.js';
import {
  MAX_DECODED_TEXT,
  MAX_FRAME_PIXELS,
  MAX_FRAME_SIDE,
  parseDecodeReply,
  parseDecodeRequest,
} from '../../../src/renderer/qr/decode-protocol.js';
import { QrDecoder, type WorkerLike } from '../../../src/renderer/qr/decoder-client.js';

const request = (width: number, height: number, extra: Record<string, unknown> = {}) => ({
  type: 'decode',
  id: 7,
  width,
  height,
  pixels: new ArrayBuffer(width * height * 4),
  ...extra,
});

describe('parseDecodeRequest', () => {
  it('accepts an RGBA frame of the stated size', () => {
    const checked = parseDecodeRequest(request(1280, 720));
    expect(checked.ok).toBe(true);
    if (checked.ok) expect(checked.value).toMatchObject({ type: 'decode', id: 7, width: 1280, height: 720 });
  });

  it.each([
    ['not an object', 'decode', /must be an object/],
    ['null', null, /must be an object/],
    ['an array', [1, 2], /must be an object/],
    ['an unknown type', { ...request(4, 4), type: 'exec' }, /unknown request type: "exec"/],
    ['a negative id', request(4, 4, { id: -1 }), /id must be/],
    ['a fractional id', request(4, 4, { id: 1.5 }), /id must be/],
    ['a zero width', request(4, 4, { width: 0 }), /width and height/],
    ['a fractional height', request(4, 4, { height: 2.5 }), /width and height/],
    ['a side too large', { type: 'decode', id: 1, width: MAX_FRAME_SIDE + 2, height: 2, pixels: new ArrayBuffer(8) }, /width and height/],
    ['too many pixels', { type: 'decode', id: 1, width: 4_000, height: 4_000, pixels: new ArrayBuffer(8) }, /frame too large/],
    ['pixels that are not an ArrayBuffer', request(4, 4, { pixels: new Uint8Array(64) }), /must be an ArrayBuffer/],
    ['pixels of the wrong length', request(4, 4, { pixels: new ArrayBuffer(63) }), /must hold 4×4×4 = 64 bytes, got 63/],
  ])('refuses %s with a clear error', (_name, message, error) => {
    const checked = parseDecodeRequest(message);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.error).toMatch(error);
  });

  it('bounds texts as the contract does (the worker does not import the contract, to stay small)', () => {
    expect(MAX_DECODED_TEXT).toBe(MAX_QR_TEXT);
  });

  it('bounds frames at 4K UHD', () => {
    expect(MAX_FRAME_PIXELS).toBe(3_840 * 2_160);
    expect(parseDecodeRequest(request(3_840, 2_160)).ok).toBe(true);
  });
});

describe('parseDecodeReply', () => {
  it('accepts ready, results with and without text, and errors', () => {
    expect(parseDecodeReply({ type: 'ready' })).toEqual({ ok: true, value: { type: 'ready' } });
    expect(parseDecodeReply({ type: 'result', id: 3, text: ' mdoc:x\n', ms: 9.5 })).toEqual({
      ok: true,
      value: { type: 'result', id: 3, text: ' mdoc:x\n', ms: 9.5 },
    });
    expect(parseDecodeReply({ type: 'result', id: 3, text: null, ms: 0 })).toMatchObject({ ok: true });
    expect(parseDecodeReply({ type: 'error', id: null, message: 'x'.repeat(1_000) })).toEqual({
      ok: true,
      value: { type: 'error', id: null, message: 'x'.repeat(300) },
    });
  });

  it.each([
    ['a string', 'ready', /must be an object/],
    ['an unknown type', { type: 'hello' }, /unknown reply type/],
    ['a result without id', { type: 'result', text: null, ms: 1 }, /id/],
    ['a result with a number as text', { type: 'result', id: 1, text: 42, ms: 1 }, /text/],
    ['a result with an over-long text', { type: 'result', id: 1, text: 'a'.repeat(MAX_QR_TEXT + 1), ms: 1 }, /text/],
    ['a result with a negative time', { type: 'result', id: 1, text: null, ms: -1 }, /ms/],
    ['a result with NaN time', { type: 'result', id: 1, text: null, ms: Number.NaN }, /ms/],
    ['an error without message', { type: 'error', id: 1 }, /message/],
    ['an error with a bad id', { type: 'error', id: 'x', message: 'm' }, /id/],
  ])('refuses %s', (_name, message, error) => {
    const checked = parseDecodeReply(message);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.error).toMatch(error);
  });
});

/** A worker whose replies the test writes. */
class ScriptedWorker implements WorkerLike {
  readonly posted: { message: unknown; transfer: Transferable[] }[] = [];
  terminated = false;
  #onMessage: ((event: MessageEvent<unknown>) => void)[] = [];
  #onError: ((event: ErrorEvent) => void)[] = [];

  postMessage(message: unknown, transfer: Transferable[]): void {
    this.posted.push({ message, transfer });
  }
  addEventListener(type: 'message' | 'error', listener: ((event: MessageEvent<unknown>) => void) | ((event: ErrorEvent) => void)): void {
    if (type === 'message') this.#onMessage.push(listener as (event: MessageEvent<unknown>) => void);
    else this.#onError.push(listener as (event: ErrorEvent) => void);
  }
  terminate(): void {
    this.terminated = true;
  }
  reply(data: unknown): void {
    for (const l of this.#onMessage) l({ data } as MessageEvent<unknown>);
  }
  crash(message: string): void {
    for (const l of this.#onError) l({ message } as ErrorEvent);
  }
  lastId(): number {
    const last = this.posted.at(-1)?.message as { id: number } | undefined;
    if (last === undefined) throw new Error('nothing posted');
    return last.id;
  }
}

describe('QrDecoder', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('waits for ready, sends the frame as a transferred buffer, and resolves with the text and time', async () => {
    const worker = new ScriptedWorker();
    const decoder = new QrDecoder({ worker });
    expect(decoder.ready).toBe(false);
    const ready = decoder.whenReady();
    worker.reply({ type: 'ready' });
    await ready;
    expect(decoder.ready).toBe(true);
    const pixels = new ArrayBuffer(16);
    const pending = decoder.decode(pixels, 2, 2);
    expect(pending).not.toBeNull();
    expect(worker.posted[0]).toEqual({ message: { type: 'decode', id: 0, width: 2, height: 2, pixels }, transfer: [pixels] });
    worker.reply({ type: 'result', id: 0, text: 'mdoc:abc', ms: 4.2 });
    await expect(pending).resolves.toEqual({ text: 'mdoc:abc', ms: 4.2 });
    expect(decoder.busy).toBe(false);
  });

  it('keeps one frame in flight: a second frame while busy is skipped, not queued', async () => {
    const worker = new ScriptedWorker();
    const decoder = new QrDecoder({ worker });
    const first = decoder.decode(new ArrayBuffer(4), 1, 1);
    expect(decoder.busy).toBe(true);
    expect(decoder.decode(new ArrayBuffer(4), 1, 1)).toBeNull();
    expect(worker.posted).toHaveLength(1);
    worker.reply({ type: 'result', id: 999, text: 'stale', ms: 1 }); // not ours: ignored
    expect(decoder.busy).toBe(true);
    worker.reply({ type: 'result', id: worker.lastId(), text: null, ms: 1 });
    await expect(first).resolves.toEqual({ text: null, ms: 1 });
    expect(decoder.decode(new ArrayBuffer(4), 1, 1)).not.toBeNull();
  });

  it('rejects the frame on an invalid reply or a refused request, and carries on', async () => {
    const worker = new ScriptedWorker();
    const decoder = new QrDecoder({ worker });
    const bad = decoder.decode(new ArrayBuffer(4), 1, 1);
    worker.reply({ type: 'result', id: 0, text: 5, ms: 1 });
    await expect(bad).rejects.toThrow(/invalid reply from the QR decode worker: result text/);
    const refused = decoder.decode(new ArrayBuffer(4), 1, 1);
    worker.reply({ type: 'error', id: worker.lastId(), message: 'pixels must hold …' });
    await expect(refused).rejects.toThrow('pixels must hold …');
    expect(decoder.failed).toBe(false);
  });

  it('marks itself failed when the worker cannot load its decoder or crashes, and tells onFailure', async () => {
    const failures: string[] = [];
    const worker = new ScriptedWorker();
    const decoder = new QrDecoder({ worker, onFailure: (m) => failures.push(m) });
    const pending = decoder.decode(new ArrayBuffer(4), 1, 1);
    worker.reply({ type: 'error', id: null, message: 'the QR decoder did not load: CompileError' });
    await expect(pending).rejects.toThrow(/did not load/);
    expect(decoder.failed).toBe(true);
    expect(decoder.failure).toMatch(/did not load/);
    worker.crash('boom');
    expect(failures).toEqual(['the QR decoder did not load: CompileError', 'the QR decode worker failed: boom']);
  });

  it('gives up on a frame the worker never answers and marks the worker failed', async () => {
    vi.useFakeTimers();
    const decoder = new QrDecoder({ worker: new ScriptedWorker() });
    const pending = decoder.decode(new ArrayBuffer(4), 1, 1);
    const settled = expect(pending).rejects.toThrow(/did not answer within 5000 ms/);
    vi.advanceTimersByTime(5_001);
    await settled;
    expect(decoder.failed).toBe(true);
    expect(decoder.busy).toBe(false);
  });

  it('close() terminates the worker, rejects the frame in flight and refuses new ones', async () => {
    const worker = new ScriptedWorker();
    const decoder = new QrDecoder({ worker });
    const pending = decoder.decode(new ArrayBuffer(4), 1, 1);
    decoder.close();
    await expect(pending).rejects.toThrow(/closed/);
    expect(worker.terminated).toBe(true);
    expect(decoder.decode(new ArrayBuffer(4), 1, 1)).toBeNull();
  });
});
