/**
 * The mock backend's service side (spec §3, §4, §5, §7, §8) with a scripted reader engine: HTTP
 * endpoints and API keys, WebSocket auth and 401/404/409, expiry, strict sequencing with a distinct error
 * text per cause, PC/SC classification and the retry limit, reset after `error`, the read-request rule,
 * `complete` and `GET /sessions/{id}`, fault injection and the redacted protocol log.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { BleActions, NfcStep, ReaderEngine, ReaderEngineFactory } from '../../../../src/qa/sim/mock-backend/engine.js';
import type { ProtocolLogEntry } from '../../../../src/qa/sim/mock-backend/protocol-log.js';
import {
  startMockBackend,
  type MockBackend,
  type MockBackendOptions,
  type RequestArrival,
} from '../../../../src/qa/sim/mock-backend/server.js';
import type { BleModeWire, OutcomeWire } from '../../../../src/qa/sim/mock-backend/wire.js';

const KEY = 'qa-key-1';
const STATE = '00000001-a123-48ce-896b-4c76973373e6';
const C2S = '00000002-a123-48ce-896b-4c76973373e6';
const S2C = '00000003-a123-48ce-896b-4c76973373e6';
const P_STATE = '00000005-a123-48ce-896b-4c76973373e6';
const P_C2S = '00000006-a123-48ce-896b-4c76973373e6';
const P_S2C = '00000007-a123-48ce-896b-4c76973373e6';
const IDENT = '00000008-a123-48ce-896b-4c76973373e6';
const MODES: BleModeWire[] = [
  {
    role: 'central',
    service_uuid: '11111111-2222-4333-8444-555555555555',
    characteristics: {
      state: { uuid: STATE, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
      c2s: { uuid: C2S, operations: ['write_without_response'], permissions: ['writeable'] },
      s2c: { uuid: S2C, operations: ['notify'], permissions: [] },
    },
  },
  {
    role: 'peripheral',
    service_uuid: '11111111-2222-4333-8444-555555555555',
    characteristics: {
      state: { uuid: P_STATE, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
      c2s: { uuid: P_C2S, operations: ['write_without_response'], permissions: ['writeable'] },
      s2c: { uuid: P_S2C, operations: ['notify'], permissions: [] },
      ident: { uuid: IDENT, operations: ['read'], permissions: ['readable'] },
    },
  },
];
const OUTCOME: OutcomeWire = {
  response: { 'org.iso.18013.5.1': { age_over_21: true } },
  doc_types: ['org.iso.18013.5.1.mDL'],
  issuer_authentication: 'Valid',
  device_authentication: 'Valid',
  errors: {},
  warnings: {},
};
const APDU1 = Uint8Array.of(0x00, 0xa4, 0x04, 0x00);
const APDU2 = Uint8Array.of(0x00, 0xb0, 0x00, 0x00, 0x0f);
const b64 = (b: Uint8Array | number[]): string => Buffer.from(b).toString('base64');

/** Scripted engine: two APDUs then the modes; BLE central: 0x01 then END notification completes. */
class ScriptedEngine implements ReaderEngine {
  apdus = 0;
  disposed = false;
  constructor(readonly namespaces: Record<string, string[]>) {}
  qrScanned(text: string): Promise<{ kind: 'modes'; modes: BleModeWire[] } | { kind: 'failed'; reason: string }> {
    return Promise.resolve(
      text.startsWith('mdoc:') ? { kind: 'modes', modes: MODES } : { kind: 'failed', reason: 'not an mdoc engagement' },
    );
  }
  nfcStart(): NfcStep {
    return { kind: 'apdu', apdu: APDU1 };
  }
  nfcResponse(): Promise<NfcStep> {
    this.apdus++;
    return Promise.resolve(this.apdus === 1 ? { kind: 'apdu', apdu: APDU2 } : { kind: 'done', modes: MODES });
  }
  bleConnected(role: 'central' | 'peripheral'): Promise<BleActions> {
    return Promise.resolve({ writes: role === 'central' ? [{ char: STATE, data: Uint8Array.of(1) }] : [] });
  }
  bleNotified(_char: string, data: Uint8Array): Promise<BleActions> {
    if (Buffer.from(data).toString() === 'END')
      return Promise.resolve({ writes: [{ char: STATE, data: Uint8Array.of(2) }], outcome: OUTCOME });
    return Promise.resolve({ writes: [] });
  }
  bleWritten(char: string, data: Uint8Array): Promise<BleActions> {
    if (char.toLowerCase() === P_STATE && data[0] === 1)
      return Promise.resolve({ writes: [{ char: P_S2C, data: Uint8Array.of(0, 0x11) }] });
    if (Buffer.from(data).toString() === 'END')
      return Promise.resolve({ writes: [{ char: P_STATE, data: Uint8Array.of(2) }], outcome: OUTCOME });
    return Promise.resolve({ writes: [] });
  }
  bleReadRequest(char: string): Uint8Array {
    return char.toLowerCase() === IDENT ? Uint8Array.of(9, 9, 9) : new Uint8Array();
  }
  dispose(): void {
    this.disposed = true;
  }
}

let backend: MockBackend | undefined;
let engines: ScriptedEngine[] = [];
let logLines: ProtocolLogEntry[] = [];
const sockets: WebSocket[] = [];

async function start(options: Partial<MockBackendOptions> = {}): Promise<MockBackend> {
  engines = [];
  logLines = [];
  const factory: ReaderEngineFactory = (ctx) => {
    const engine = new ScriptedEngine(ctx.namespaces);
    engines.push(engine);
    return engine;
  };
  backend = await startMockBackend({
    apiKeys: [KEY],
    engineFactory: factory,
    protocolLog: (e) => logLines.push(e),
    closeGraceMs: 200,
    ...options,
  });
  return backend;
}

afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await backend?.stop();
  backend = undefined;
});

async function http(method: string, path: string, key: string | null = KEY): Promise<{ status: number; body: Record<string, unknown> }> {
  if (!backend) throw new Error('no backend');
  const res = await fetch(`${backend.url}${path}`, { method, headers: key === null ? {} : { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function createSession(): Promise<{ id: string; secret: string }> {
  const { status, body } = await http('POST', '/sessions');
  expect(status).toBe(201);
  return { id: body.id as string, secret: body.client_secret as string };
}

class Client {
  private inbox: Record<string, unknown>[] = [];
  private waiters: ((m: Record<string, unknown>) => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      let m: Record<string, unknown>;
      try {
        m = JSON.parse(data.toString()) as Record<string, unknown>;
      } catch {
        m = { type: '<malformed>', raw: data.toString() };
      }
      const w = this.waiters.shift();
      if (w) w(m);
      else this.inbox.push(m);
    });
    this.closed = new Promise((resolve) => ws.on('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })));
  }
  next(timeoutMs = 3_000): Promise<Record<string, unknown>> {
    const queued = this.inbox.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no message from the mock backend')), timeoutMs);
      this.waiters.push((m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
  }
  send(message: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(message));
  }
  step(op: string, fields: Record<string, unknown> = {}): void {
    this.send({ type: 'step_result', op, status: 'ok', ...fields });
  }
  async error(): Promise<string> {
    const m = await this.next();
    expect(m.type).toBe('error');
    return m.message as string;
  }
}

function connect(id: string, auth: { header?: string; token?: string }): Promise<Client> {
  if (!backend) throw new Error('no backend');
  const url = new URL(`${backend.url.replace('http', 'ws')}/sessions/${encodeURIComponent(id)}/mdoc-proximity/ws`);
  if (auth.token !== undefined) url.searchParams.set('token', auth.token);
  const ws = new WebSocket(url, { headers: auth.header === undefined ? {} : { authorization: `Bearer ${auth.header}` } });
  sockets.push(ws);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(new Client(ws)));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode ?? 0}`)));
    ws.once('error', reject);
  });
}

async function engaged(): Promise<{ client: Client; id: string; secret: string }> {
  const { id, secret } = await createSession();
  const client = await connect(id, { header: secret });
  client.step('engage', { namespaces: { 'org.iso.18013.5.1': ['age_over_21'] } });
  return { client, id, secret };
}

describe('HTTP endpoints (spec §4.1, §5)', () => {
  it('POST /sessions needs the API key and answers id, client_secret, iframe_url', async () => {
    await start();
    expect((await http('POST', '/sessions', null)).status).toBe(401);
    expect((await http('POST', '/sessions', 'wrong')).status).toBe(401);
    const { status, body } = await http('POST', '/sessions');
    expect(status).toBe(201);
    expect(Object.keys(body).sort()).toEqual(['client_secret', 'id', 'iframe_url']);
    expect([typeof body.id, typeof body.client_secret, typeof body.iframe_url]).toEqual(['string', 'string', 'string']);
  });

  it('GET /sessions/{id}: pending before a verification, 404 for unknown ids, 401 without the key', async () => {
    await start();
    const { id } = await createSession();
    expect(await http('GET', `/sessions/${id}`)).toEqual({
      status: 200,
      body: { status: 'pending', response: {}, errors: {}, warnings: {} },
    });
    expect((await http('GET', '/sessions/nope')).status).toBe(404);
    expect((await http('GET', `/sessions/${id}`, null)).status).toBe(401);
    expect((await http('GET', '/sessions/%E0%A4%A')).status).toBe(404);
  });

  it('sessions expire lifetimeMs after creation: GET and WebSocket answer 404 (spec §8, §7.1)', async () => {
    await start({ lifetimeMs: 150 });
    const { id, secret } = await createSession();
    await new Promise((r) => setTimeout(r, 250));
    expect((await http('GET', `/sessions/${id}`)).status).toBe(404);
    await expect(connect(id, { header: secret })).rejects.toThrow('HTTP 404');
  });
});

describe('WebSocket authentication and limits (spec §4.2, §5, §7.1)', () => {
  it('accepts the client secret in the Authorization header or the token query; refuses a wrong one with 401', async () => {
    await start();
    const a = await createSession();
    const b = await createSession();
    expect(await connect(a.id, { header: a.secret })).toBeInstanceOf(Client);
    expect(await connect(b.id, { token: b.secret })).toBeInstanceOf(Client);
    const c = await createSession();
    await expect(connect(c.id, { header: 'wrong' })).rejects.toThrow('HTTP 401');
    await expect(connect(c.id, { token: a.secret })).rejects.toThrow('HTTP 401');
    await expect(connect('unknown', { header: c.secret })).rejects.toThrow('HTTP 404');
  });

  it('a second concurrent connection gets 409; after the first closes the session can be reconnected', async () => {
    await start();
    const { id, secret } = await createSession();
    const first = await connect(id, { header: secret });
    await expect(connect(id, { header: secret })).rejects.toThrow('HTTP 409');
    first.ws.close();
    await first.closed;
    await new Promise((r) => setTimeout(r, 50));
    expect(await connect(id, { header: secret })).toBeInstanceOf(Client);
  });
});

describe('sequencing and error texts (spec §3, §7.2)', () => {
  it('each cause of §7.2 has its own error text', async () => {
    await start();
    const texts = new Map<string, string>();
    const run = async (name: string, act: (c: Client) => void, engage = true): Promise<void> => {
      const { id, secret } = await createSession();
      const client = await connect(id, { header: secret });
      if (engage) client.step('engage', { namespaces: {} });
      act(client);
      texts.set(name, await client.error());
    };
    await run('malformed', (c) => c.ws.send('{nope'));
    await run('binary', (c) => c.ws.send(Buffer.from([1, 2, 3])));
    await run('unknown type', (c) => c.send({ type: 'hello' }));
    await run('unknown op', (c) => c.step('fly'));
    await run('missing field', (c) => c.send({ type: 'step_result', op: 'qr_scanned', status: 'ok' }));
    await run('invalid base64', (c) => c.send({ type: 'step_result', op: 'ble_notified', char: S2C, data: 'abc' }));
    await run('out of sequence', (c) => c.step('nfc_rapdu', { data: b64([0x90, 0]) }));
    await run('engage not first', (c) => c.step('qr_scanned', { data: 'mdoc:x' }), false);
    expect(texts.get('malformed')).toMatch(/^malformed JSON/);
    expect(texts.get('binary')).toMatch(/^malformed JSON/);
    expect(texts.get('unknown type')).toBe('unknown message type: hello');
    expect(texts.get('unknown op')).toBe('unknown op: fly');
    expect(texts.get('missing field')).toBe('missing required field: data (qr_scanned)');
    expect(texts.get('invalid base64')).toMatch(/^invalid field: data \(ble_notified\)/);
    expect(texts.get('out of sequence')).toBe('out-of-sequence message: nfc_rapdu in phase engaged');
    expect(texts.get('engage not first')).toBe('out-of-sequence message: qr_scanned in phase socket_open');
  });

  it('after error the backend closes if the kiosk does not, and the same credentials start over from engage', async () => {
    await start();
    const { client, id, secret } = await engaged();
    client.step('fly');
    await client.error();
    expect((await client.closed).code).toBe(1000);
    expect(engines[0]?.disposed).toBe(true);
    const again = await connect(id, { header: secret });
    again.step('engage', { namespaces: {} });
    again.step('qr_scanned', { data: 'mdoc:abc' });
    expect((await again.next()).op).toBe('ble_exchange');
  });

  it('rule 3: the backend accepts no ble_written or ble_read_request before ble_connected', async () => {
    await start();
    const { client } = await engaged();
    client.step('qr_scanned', { data: 'mdoc:abc' });
    await client.next();
    client.send({ type: 'step_result', op: 'ble_written', char: P_C2S, data: b64([1]) });
    expect(await client.error()).toBe('out-of-sequence message: ble_written in phase ble_exchange');
  });
});

describe('NFC handover relay (spec §3, §7.3)', () => {
  it('APDUs in order, then ble_exchange; a recoverable reason → nfc_await_card → the failed APDU again', async () => {
    await start();
    const { client } = await engaged();
    client.step('nfc_card_present');
    expect(await client.next()).toEqual({ type: 'step_request', op: 'nfc_apdu', params: { data: b64(APDU1) } });
    client.step('nfc_rapdu', { data: b64([0x90, 0]) });
    expect((await client.next()).params).toEqual({ data: b64(APDU2) });
    client.send({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'RemovedCard' });
    expect(await client.next()).toEqual({ type: 'step_request', op: 'nfc_await_card', params: {} });
    client.step('nfc_card_present');
    expect((await client.next()).params).toEqual({ data: b64(APDU2) });
    client.step('nfc_rapdu', { data: b64([0x90, 0]) });
    expect((await client.next()).op).toBe('ble_exchange');
  });

  it('a fatal reason ends with "fatal PC/SC error"; more recoverable failures than the limit end with "NFC retries exhausted"', async () => {
    await start({ nfcRetryLimit: 2 });
    const first = await engaged();
    first.client.step('nfc_card_present');
    await first.client.next();
    first.client.send({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'SharingViolation' });
    expect(await first.client.error()).toBe('fatal PC/SC error: SharingViolation');

    const { client } = await engaged();
    client.step('nfc_card_present');
    await client.next();
    for (let i = 0; i < 2; i++) {
      client.send({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'NotTransacted' });
      expect((await client.next()).op).toBe('nfc_await_card');
      client.step('nfc_card_present');
      await client.next();
    }
    client.send({ type: 'step_result', op: 'nfc_rapdu', status: 'error', reason: 'NotTransacted' });
    expect(await client.error()).toBe('NFC retries exhausted (2 allowed)');
  });
});

describe('BLE transfer and completion (spec §3, §4.3–4.5)', () => {
  it('central: ble_connected → ble_write 0x01; the END notification → 0x02 then complete; GET returns the same result', async () => {
    await start();
    const { client, id } = await engaged();
    client.step('qr_scanned', { data: 'mdoc:abc' });
    expect((await client.next()).params).toEqual({ modes: MODES });
    client.step('ble_connected', { role: 'central' });
    expect(await client.next()).toEqual({ type: 'step_request', op: 'ble_write', params: { char: STATE, data: b64([1]) } });
    client.send({ type: 'step_result', op: 'ble_notified', char: S2C.toUpperCase(), data: b64(Buffer.from('END')) });
    expect(await client.next()).toEqual({ type: 'step_request', op: 'ble_write', params: { char: STATE, data: b64([2]) } });
    expect(await client.next()).toEqual({ type: 'complete', outcome: OUTCOME });
    const { body } = await http('GET', `/sessions/${id}`);
    expect(body).toMatchObject({ status: 'success', response: OUTCOME.response, errors: {}, warnings: {} });
  });

  it('peripheral: the read request is answered at once with Ident; empty bytes for other characteristics', async () => {
    await start();
    const { client } = await engaged();
    client.step('qr_scanned', { data: 'mdoc:abc' });
    await client.next();
    client.step('ble_connected', { role: 'peripheral' });
    client.send({ type: 'step_result', op: 'ble_read_request', char: IDENT });
    expect(await client.next()).toEqual({ type: 'step_request', op: 'ble_read_response', params: { data: b64([9, 9, 9]) } });
    client.send({ type: 'step_result', op: 'ble_read_request', char: P_STATE });
    expect(await client.next()).toEqual({ type: 'step_request', op: 'ble_read_response', params: { data: '' } });
    client.send({ type: 'step_result', op: 'ble_written', char: P_STATE, data: b64([1]) });
    expect((await client.next()).params).toEqual({ char: P_S2C, data: b64([0, 0x11]) });
  });

  it('ble_connected with a role that was not offered, ble_notified in peripheral role, ble_connected error → error texts', async () => {
    await start();
    const roleCase = await engaged();
    roleCase.client.step('nfc_card_present');
    await roleCase.client.next();
    roleCase.client.step('nfc_rapdu', { data: b64([0x90, 0]) });
    await roleCase.client.next();
    roleCase.client.step('nfc_rapdu', { data: b64([0x90, 0]) });
    await roleCase.client.next();
    roleCase.client.step('ble_connected', { role: 'central' });
    await roleCase.client.next();
    roleCase.client.send({ type: 'step_result', op: 'ble_written', char: C2S, data: b64([1]) });
    expect(await roleCase.client.error()).toBe('out-of-sequence message: ble_written in phase ble_transfer (role central)');

    const setup = await engaged();
    setup.client.step('qr_scanned', { data: 'mdoc:abc' });
    await setup.client.next();
    setup.client.send({ type: 'step_result', op: 'ble_connected', status: 'error', role: 'central', reason: 'scan timed out' });
    expect(await setup.client.error()).toBe('BLE setup failed on the kiosk: scan timed out');
  });
});

describe('fault injection (QA)', () => {
  it('closeAtPhase, errorOnOp, fatalAfterApdu, malformedNext, conflictNextConnect, delayMs; settable over HTTP', async () => {
    const mock = await start();
    mock.faults.set({ closeAtPhase: 'nfc_handover' });
    const closed = await engaged();
    closed.client.step('nfc_card_present');
    expect((await closed.client.closed).code).toBe(1011);

    mock.faults.set({ errorOnOp: 'qr_scanned' });
    const onOp = await engaged();
    onOp.client.step('qr_scanned', { data: 'mdoc:abc' });
    expect(await onOp.client.error()).toBe('injected fault: error on qr_scanned');

    mock.faults.set({ fatalAfterApdu: 1 });
    const fatal = await engaged();
    fatal.client.step('nfc_card_present');
    await fatal.client.next();
    fatal.client.step('nfc_rapdu', { data: b64([0x90, 0]) });
    expect(await fatal.client.error()).toBe('injected fault: fatal error after APDU 1');

    mock.faults.set({ malformedNext: true });
    const malformed = await engaged();
    malformed.client.step('qr_scanned', { data: 'mdoc:abc' });
    expect((await malformed.client.next()).type).toBe('<malformed>');
    expect(mock.faults.current.malformedNext).toBe(false);

    mock.faults.set({ conflictNextConnect: true });
    const { id, secret } = await createSession();
    await expect(connect(id, { header: secret })).rejects.toThrow('HTTP 409');
    expect(await connect(id, { header: secret })).toBeInstanceOf(Client);

    const res = await fetch(`${mock.url}/__mock/faults`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ delayMs: { ble_exchange: 150 } }),
    });
    expect(res.status).toBe(200);
    const delayed = await engaged();
    const sentAt = Date.now();
    delayed.client.step('qr_scanned', { data: 'mdoc:abc' });
    await delayed.client.next();
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(140);
    const bad = await fetch(`${mock.url}/__mock/faults`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
      body: '{"nope": 1}',
    });
    expect(bad.status).toBe(400);
  });
});

describe('protocol log', () => {
  it('records every message in both directions with secrets and disclosed data redacted', async () => {
    await start();
    const { client, secret } = await engaged();
    client.step('qr_scanned', { data: 'mdoc:abc' });
    await client.next();
    client.step('ble_connected', { role: 'central' });
    await client.next();
    client.send({ type: 'step_result', op: 'ble_notified', char: S2C, data: b64(Buffer.from('END')) });
    await client.next();
    await client.next();
    const text = JSON.stringify(logLines);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(KEY);
    expect(text).not.toContain('age_over_21":true');
    const messages = logLines.filter((l) => l.event === 'message');
    expect(messages.filter((m) => m.direction === 'in').length).toBeGreaterThanOrEqual(4);
    expect(messages.filter((m) => m.direction === 'out').length).toBeGreaterThanOrEqual(4);
  });
});

describe('fault injection for the soak (QA)', () => {
  /** The handshake's status and Retry-After, or `open` when it was accepted. */
  function handshake(id: string, secret: string): Promise<{ status: number | 'open'; retryAfter?: string }> {
    if (!backend) throw new Error('no backend');
    const ws = new WebSocket(`${backend.url.replace('http', 'ws')}/sessions/${encodeURIComponent(id)}/mdoc-proximity/ws`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    sockets.push(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve({ status: 'open' }));
      ws.once('unexpected-response', (_req, res) => {
        const retryAfter = res.headers['retry-after'];
        resolve({ status: res.statusCode ?? 0, ...(typeof retryAfter === 'string' ? { retryAfter } : {}) });
      });
      ws.once('error', reject);
    });
  }

  it('terminateAtPhase drops the connection without a close frame; dropConnections closes (1011) or terminates (1006) every open socket', async () => {
    const mock = await start();
    mock.faults.set({ terminateAtPhase: 'nfc_handover' });
    const terminated = await engaged();
    terminated.client.step('nfc_card_present');
    expect((await terminated.client.closed).code).toBe(1006);

    mock.faults.clear();
    const a = await engaged();
    const b = await engaged();
    await new Promise((r) => setTimeout(r, 20)); // both handshakes registered on the server side
    expect(mock.dropConnections('close')).toBe(2);
    expect((await a.client.closed).code).toBe(1011);
    expect((await b.client.closed).code).toBe(1011);
    const c = await engaged();
    await new Promise((r) => setTimeout(r, 20));
    expect(mock.dropConnections('terminate')).toBe(1);
    expect((await c.client.closed).code).toBe(1006);
  });

  it('closeIdleConnections closes the keep-alive connections that carry no request, and leaves a session socket open (the soak counts sockets after it)', async () => {
    const mock = await start();
    const live = await engaged();
    // A keep-alive connection of its own, idle once its answer has come.
    const agent = new HttpAgent({ keepAlive: true });
    const idle = await new Promise<Socket>((resolve, reject) => {
      const req = httpRequest(`${mock.url}/sessions`, { method: 'POST', agent, headers: { authorization: `Bearer ${KEY}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve(req.socket as Socket));
      });
      req.on('error', reject);
      req.end();
    });
    // Node's server would close it by itself after its keep-alive timeout (5 s): well before that, or it was not us.
    const closed = new Promise<'closed'>((resolve) => idle.once('close', () => resolve('closed')));
    const keptAlive = new Promise<'kept alive'>((resolve) => setTimeout(() => resolve('kept alive'), 2_000).unref());
    await new Promise((r) => setImmediate(r)); // the answer ended on the server side too
    mock.closeIdleConnections();
    expect(await Promise.race([closed, keptAlive])).toBe('closed');
    agent.destroy();
    // The session socket is still open and answers a ping.
    expect(live.client.ws.readyState).toBe(WebSocket.OPEN);
    const pong = new Promise<void>((resolve) => live.client.ws.once('pong', () => resolve()));
    live.client.ws.ping();
    await pong;
  });

  it('conflictConnects answers that many handshakes with 409; notFoundNextConnect one with 404; both clear themselves', async () => {
    const mock = await start();
    const { id, secret } = await createSession();
    mock.faults.set({ conflictConnects: 2, notFoundNextConnect: true });
    expect(await handshake(id, secret)).toEqual({ status: 404 });
    expect(await handshake(id, secret)).toEqual({ status: 409 });
    expect(await handshake(id, secret)).toEqual({ status: 409 });
    expect(mock.faults.current.conflictConnects).toBe(0);
    expect(mock.faults.current.notFoundNextConnect).toBe(false);
    expect(await handshake(id, secret)).toEqual({ status: 'open' });
  });

  it('httpFailures answer POST /sessions, GET /sessions/{id} and the handshake with the planned status (and Retry-After) the planned number of times', async () => {
    const mock = await start();
    const { id, secret } = await createSession();
    mock.faults.set({
      httpFailures: {
        create: { status: 503, times: 2, retryAfterS: 1 },
        result: { status: 500, times: 1 },
        upgrade: { status: 502, times: 1, retryAfterS: 2 },
      },
    });
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${mock.url}/sessions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
    }
    expect((await http('POST', '/sessions')).status).toBe(201);
    expect((await http('GET', `/sessions/${id}`)).status).toBe(500);
    expect((await http('GET', `/sessions/${id}`)).status).toBe(200);
    expect(await handshake(id, secret)).toEqual({ status: 502, retryAfter: '2' });
    expect(await handshake(id, secret)).toEqual({ status: 'open' });
    expect(mock.faults.current.httpFailures).toEqual({});
    // The API key is still checked first: a wrong key is 401 whatever the plan.
    mock.faults.set({ httpFailures: { create: { status: 500, times: 1 } } });
    expect((await http('POST', '/sessions', 'wrong')).status).toBe(401);
    expect(mock.faults.current.httpFailures.create?.times).toBe(1);
  });

  it('httpDelayMs holds the answer back; stop() leaves no delayed answer behind', async () => {
    const mock = await start();
    mock.faults.set({ httpDelayMs: { create: 150 } });
    const sentAt = Date.now();
    expect((await http('POST', '/sessions')).status).toBe(201);
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(140);
    mock.faults.set({ httpDelayMs: { create: 60_000 } });
    const pending = fetch(`${mock.url}/sessions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } }).then(
      (r) => r.status,
      () => 'failed' as const,
    );
    await new Promise((r) => setTimeout(r, 50));
    await mock.stop();
    backend = undefined;
    expect(await pending).toBe('failed');
  });

  it('closeAtExpiry closes an open socket (1001) when its session expires; without it the socket stays open', async () => {
    const mock = await start({ lifetimeMs: 150 });
    const open = await engaged();
    await new Promise((r) => setTimeout(r, 300));
    expect(open.client.ws.readyState).toBe(WebSocket.OPEN);
    mock.faults.set({ closeAtExpiry: true });
    const closing = await engaged();
    const closed = await closing.client.closed;
    expect(closed).toEqual({ code: 1001, reason: 'session expired' });
  });

  it('sessions.onCreated reports every new session until unsubscribed', async () => {
    const mock = await start();
    const seen: string[] = [];
    const stop = mock.sessions.onCreated((s) => seen.push(s.clientSecret));
    const a = await createSession();
    const b = await createSession();
    stop();
    await createSession();
    expect(seen).toEqual([a.secret, b.secret]);
  });

  it('onRequest sees every request on arrival: the exchange, the session addressed and which API key, refused ones too', async () => {
    const arrivals: RequestArrival[] = [];
    await start({ apiKeys: ['other-key', KEY], onRequest: (a) => arrivals.push(a) });
    const before = Date.now();
    const { id, secret } = await createSession();
    await http('GET', `/sessions/${id}`);
    await http('POST', '/sessions', 'wrong');
    await http('GET', '/nowhere');
    (await connect(id, { header: secret })).ws.close();
    await expect(connect('unknown-id', { header: secret })).rejects.toThrow('HTTP 404');
    expect(arrivals.map(({ exchange, sessionId, apiKeyIndex }) => ({ exchange, sessionId, apiKeyIndex }))).toEqual([
      { exchange: 'create', sessionId: undefined, apiKeyIndex: 1 },
      { exchange: 'result', sessionId: id, apiKeyIndex: 1 },
      { exchange: 'create', sessionId: undefined, apiKeyIndex: -1 },
      { exchange: 'other', sessionId: undefined, apiKeyIndex: 1 },
      { exchange: 'upgrade', sessionId: id, apiKeyIndex: -1 },
      { exchange: 'upgrade', sessionId: 'unknown-id', apiKeyIndex: -1 },
    ]);
    for (const a of arrivals) expect(a.at).toBeGreaterThanOrEqual(before);
  });

  it('an onRequest that throws changes nothing the backend answers', async () => {
    await start({
      onRequest: () => {
        throw new Error('observer failed');
      },
    });
    const { id, secret } = await createSession();
    (await connect(id, { header: secret })).ws.close();
  });
});
