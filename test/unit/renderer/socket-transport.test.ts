import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { INTENT_NAMES, KioskApiError, MAX_API_MESSAGE_BYTES, MAX_HOST_MESSAGE_BYTES } from '../../../src/common/kiosk-api.js';
import { connectViaSocket, preloadKiosk } from '../../../src/renderer/api/connect.js';
import {
  apiUrlFor,
  KioskDisconnectedError,
  SocketTransport,
  tokenFromHash,
  type ConnectionStatus,
  type SocketLike,
} from '../../../src/renderer/api/socket-transport.js';
import { screenState } from '../../support/screen-fixtures.js';

/** A scripted WebSocket: the test opens, feeds and closes it. */
class FakeSocket implements SocketLike {
  readyState = 0;
  onopen: ((ev: Event) => unknown) | null = null;
  onmessage: ((ev: MessageEvent) => unknown) | null = null;
  onclose: ((ev: CloseEvent) => unknown) | null = null;
  onerror: ((ev: Event) => unknown) | null = null;
  readonly sent: string[] = [];
  constructor(
    readonly url: string,
    readonly protocols: string[],
  ) {}
  send(data: string): void {
    this.sent.push(data);
  }
  close(): void {
    this.readyState = 3;
  }
  open(): void {
    this.readyState = 1;
    this.onopen?.(new Event('open'));
  }
  receive(data: unknown): void {
    this.onmessage?.({ data } as MessageEvent);
  }
  drop(code = 1006): void {
    this.readyState = 3;
    this.onclose?.({ code, reason: '' } as CloseEvent);
  }
  lastCall(): { id: number; intent: string; args: unknown } {
    const last = this.sent.at(-1);
    if (last === undefined) throw new Error('nothing sent');
    return JSON.parse(last) as { id: number; intent: string; args: unknown };
  }
}

function harness(options: { callTimeoutMs?: number; probeHost?: () => Promise<boolean> } = {}) {
  const sockets: FakeSocket[] = [];
  const transport = new SocketTransport({
    url: 'ws://127.0.0.1:1/api',
    token: 'tok-123456789',
    createSocket: (url, protocols) => {
      const s = new FakeSocket(url, protocols);
      sockets.push(s);
      return s;
    },
    initialBackoffMs: 100,
    maxBackoffMs: 400,
    ...options,
  });
  const statuses: ConnectionStatus[] = [];
  transport.onStatus((s) => statuses.push(s));
  const current = (): FakeSocket => {
    const s = sockets.at(-1);
    if (!s) throw new Error('no socket');
    return s;
  };
  return { transport, sockets, statuses, current };
}

describe('SocketTransport', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('handshakes refused in a row while the page\'s host answers: `refused` (a wrong address), not endless "connecting"; a host that does not answer is just away', async () => {
    let answers = true;
    const probes: number[] = [];
    const { transport, current, statuses } = harness({
      probeHost: () => {
        probes.push(1);
        return Promise.resolve(answers);
      },
    });
    transport.start();
    current().drop(1006);
    await vi.advanceTimersByTimeAsync(100);
    expect(probes).toHaveLength(0); // one failure may be a host restarting
    current().drop(1006);
    await vi.advanceTimersByTimeAsync(0);
    expect(probes).toHaveLength(1);
    expect(statuses.at(-1)).toMatchObject({ kind: 'waiting', refused: true });
    // It keeps trying (the address may be fixed by a restart of the page), and keeps saying so.
    await vi.advanceTimersByTimeAsync(400);
    expect(statuses.at(-1)).toMatchObject({ kind: 'connecting', refused: true });
    // Opening clears it.
    current().open();
    expect(statuses.at(-1)).toEqual({ kind: 'open', lastProblem: expect.any(String) as unknown });
    transport.stop();

    answers = false;
    const away = harness({ probeHost: () => Promise.resolve(answers) });
    away.transport.start();
    away.current().drop(1006);
    await vi.advanceTimersByTimeAsync(100);
    away.current().drop(1006);
    await vi.advanceTimersByTimeAsync(0);
    expect(away.statuses.some((st) => 'refused' in st && st.refused === true)).toBe(false);
    away.transport.stop();
  });

  it('a connection that opened and later dropped is not a refusal', async () => {
    const probes: number[] = [];
    const { transport, current } = harness({
      probeHost: () => {
        probes.push(1);
        return Promise.resolve(true);
      },
    });
    transport.start();
    current().open();
    current().drop(1006);
    await vi.advanceTimersByTimeAsync(100);
    current().open();
    current().drop(1001);
    await vi.advanceTimersByTimeAsync(100);
    expect(probes).toHaveLength(0);
    transport.stop();
  });

  it('opens /api with the version and token subprotocols, never putting the token in the URL', () => {
    const { transport, current } = harness();
    transport.start();
    expect(current().url).toBe('ws://127.0.0.1:1/api');
    expect(current().protocols).toEqual(['mdl-kiosk.v1', 'auth.tok-123456789']);
  });

  it('rejects calls while disconnected with a clear error instead of queueing them', async () => {
    const { transport } = harness();
    transport.start();
    await expect(transport.call('next', {})).rejects.toThrow(KioskDisconnectedError);
    await expect(transport.call('next', {})).rejects.toThrow(/not connected to the kiosk/);
  });

  it('matches replies to calls by id and turns error replies into KioskApiError', async () => {
    const { transport, current } = harness();
    transport.start();
    current().open();
    const first = transport.call('next', {});
    const firstId = current().lastCall().id;
    const second = transport.call('getSettings', {});
    const secondId = current().lastCall().id;
    expect(current().lastCall().intent).toBe('getSettings');
    current().receive(
      JSON.stringify({
        type: 'reply',
        id: secondId,
        ok: false,
        error: { code: 'staff_required', message: 'getSettings needs the staff PIN' },
      }),
    );
    current().receive(JSON.stringify({ type: 'reply', id: firstId, ok: true, result: { ok: true } }));
    await expect(first).resolves.toEqual({ ok: true });
    const error = await second.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KioskApiError);
    expect((error as KioskApiError).code).toBe('staff_required');
  });

  it('fails pending calls when the connection drops, then reconnects with growing backoff', async () => {
    const { transport, sockets, statuses, current } = harness();
    transport.start();
    current().open();
    const pending = transport.call('retry', {});
    current().drop();
    await expect(pending).rejects.toThrow(/connection to the kiosk was lost/);
    expect(statuses.at(-1)).toMatchObject({ kind: 'waiting', attempt: 1 });
    vi.advanceTimersByTime(99);
    expect(sockets).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(sockets).toHaveLength(2);
    current().drop(); // refused again before opening: the delay doubles
    vi.advanceTimersByTime(199);
    expect(sockets).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(sockets).toHaveLength(3);
    current().open();
    expect(statuses.at(-1)?.kind).toBe('open');
    // After a successful open the backoff starts again from the first delay.
    current().drop();
    vi.advanceTimersByTime(100);
    expect(sockets).toHaveLength(4);
  });

  it('caps the backoff', () => {
    const { transport, sockets, current } = harness();
    transport.start();
    for (let i = 0; i < 6; i++) {
      current().drop();
      vi.advanceTimersByTime(400);
    }
    expect(sockets).toHaveLength(7);
  });

  it('times out a call the host never answers', async () => {
    const { transport, current } = harness({ callTimeoutMs: 1_000 });
    transport.start();
    current().open();
    const call = transport.call('next', {});
    vi.advanceTimersByTime(1_000);
    await expect(call).rejects.toThrow(/did not answer/);
  });

  it('ignores binary, oversized, non-JSON and unknown frames without throwing, and records the problem', () => {
    const { transport, statuses, current } = harness();
    const states: unknown[] = [];
    transport.onState((s) => states.push(s));
    transport.start();
    current().open();
    current().receive(new ArrayBuffer(4));
    expect(statuses.at(-1)?.lastProblem).toMatch(/binary/);
    current().receive('x'.repeat(MAX_HOST_MESSAGE_BYTES + 1));
    expect(statuses.at(-1)?.lastProblem).toMatch(/oversized/);
    current().receive('{not json');
    expect(statuses.at(-1)?.lastProblem).toMatch(/not JSON/);
    current().receive(JSON.stringify({ type: 'surprise' }));
    expect(statuses.at(-1)?.lastProblem).toMatch(/unknown shape/);
    current().receive(JSON.stringify({ type: 'refused', error: { code: 'too_large', message: 'frame too large' } }));
    expect(statuses.at(-1)?.lastProblem).toMatch(/too_large: frame too large/);
    expect(states).toEqual([]);
    expect(statuses.at(-1)?.kind).toBe('open');
  });

  it('takes a state far larger than an intent may be: an outcome with a real-sized portrait (~1 MB) reaches the screen', () => {
    const { transport, current } = harness();
    const states: unknown[] = [];
    transport.onState((s) => states.push(s));
    transport.start();
    current().open();
    const state = screenState('result_identity');
    const outcome = state.view.outcome;
    if (!outcome) throw new Error('fixture without an outcome');
    const portrait = Buffer.alloc(750_000, 0xa5).toString('base64');
    const big = {
      ...state,
      view: {
        ...state.view,
        outcome: { ...outcome, response: { 'org.iso.18013.5.1': { ...outcome.response['org.iso.18013.5.1'], portrait } } },
      },
    };
    const frame = JSON.stringify({ type: 'state', state: big });
    expect(frame.length).toBeGreaterThan(MAX_API_MESSAGE_BYTES * 10);
    current().receive(frame);
    expect(states).toHaveLength(1);
  });

  it('hands the latest state to a late listener and forgets it when the connection drops', () => {
    const { transport, current } = harness();
    transport.start();
    current().open();
    current().receive(JSON.stringify({ type: 'state', state: { any: 1 } }));
    const late: unknown[] = [];
    transport.onState((s) => late.push(s));
    expect(late).toEqual([{ any: 1 }]);
    current().drop();
    const afterDrop: unknown[] = [];
    transport.onState((s) => afterDrop.push(s));
    expect(afterDrop).toEqual([]);
  });

  it('stops for good: no reconnect, calls rejected', async () => {
    const { transport, sockets, statuses } = harness();
    transport.start();
    transport.stop();
    vi.advanceTimersByTime(10_000);
    expect(sockets).toHaveLength(1);
    expect(statuses.at(-1)?.kind).toBe('stopped');
    await expect(transport.call('next', {})).rejects.toThrow(KioskDisconnectedError);
  });
});

/** The socket path of the screen's connection, on one scripted socket. */
function connectFake(url: string): { connection: ReturnType<typeof connectViaSocket>; socket: FakeSocket } {
  const sockets: FakeSocket[] = [];
  const connection = connectViaSocket({
    url,
    token: 'tok-123456789',
    createSocket: (u, protocols) => {
      const s = new FakeSocket(u, protocols);
      sockets.push(s);
      return s;
    },
  });
  const socket = sockets[0];
  if (!socket) throw new Error('no socket');
  return { connection, socket };
}

describe('connectViaSocket', () => {
  it('validates states: a valid one reaches the screen, an invalid one is reported and dropped', () => {
    const { connection, socket } = connectFake('ws://127.0.0.1:1/api');
    const states: unknown[] = [];
    const statuses: ConnectionStatus[] = [];
    connection.api.onState((s) => states.push(s.view.phase));
    connection.onStatus((s) => statuses.push(s));
    socket.open();
    socket.receive(JSON.stringify({ type: 'state', state: { view: { phase: 'ready' } } }));
    expect(states).toEqual([]);
    expect(statuses.at(-1)?.lastProblem).toMatch(/invalid state/);
    socket.receive(JSON.stringify({ type: 'state', state: screenState('ready') }));
    expect(states).toEqual(['ready']);
    connection.stop();
  });

  it('validates results: a malformed result rejects the call', async () => {
    const { connection, socket } = connectFake('ws://x/api');
    socket.open();
    const call = connection.api.qrScanned({ text: 'mdoc:x', source: 'camera' });
    socket.receive(JSON.stringify({ type: 'reply', id: socket.lastCall().id, ok: true, result: { accepted: 'yes' } }));
    await expect(call).rejects.toThrow(/invalid result/);
    connection.stop();
  });
});

describe('page address helpers', () => {
  it('reads the token from #token=…, refusing characters a subprotocol cannot carry', () => {
    expect(tokenFromHash('#token=AbC_123-xyz.~')).toBe('AbC_123-xyz.~');
    expect(tokenFromHash('')).toBeNull();
    expect(tokenFromHash('#token=short')).toBeNull();
    expect(tokenFromHash('#token=has space in it')).toBeNull();
    expect(tokenFromHash('#token=abc,defghijk')).toBeNull();
  });

  it('builds the socket URL on the page origin', () => {
    expect(apiUrlFor({ protocol: 'http:', host: '127.0.0.1:8080' })).toBe('ws://127.0.0.1:8080/api');
    expect(apiUrlFor({ protocol: 'https:', host: 'kiosk.local' })).toBe('wss://kiosk.local/api');
  });

  it('accepts a preload bridge only when every intent is a function', () => {
    expect(preloadKiosk({})).toBeNull();
    expect(preloadKiosk({ kiosk: { onState: () => undefined } })).toBeNull();
    const full: Record<string, unknown> = { onState: () => () => undefined };
    for (const k of INTENT_NAMES) full[k] = () => Promise.resolve({});
    expect(preloadKiosk({ kiosk: full })).not.toBeNull();
  });
});
