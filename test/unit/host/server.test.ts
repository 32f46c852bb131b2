import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HostMessage, MAX_API_MESSAGE_BYTES, ScreenState } from '../../../src/common/kiosk-api.js';
import { QrScanQueue } from '../../../src/devices/qr/qr-scan-queue.js';
import { createLogger } from '../../../src/platform/log.js';
import { HostConfigError, startHost, type RunningHost } from '../../../src/host/server.js';
import { KioskService } from '../../../src/service/kiosk-service.js';
import { MemorySecretStore } from '../../../src/service/secret-store.js';
import { LogCapture } from '../../support/harness.js';

/** Asymmetric matchers, typed as the strings they stand for. */
const matching = (pattern: RegExp): string => expect.stringMatching(pattern) as string;
const containing = (text: string): string => expect.stringContaining(text) as string;

const CSP =
  "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' blob: data:; media-src 'self' blob: mediastream:; connect-src 'self' ws://127.0.0.1:PORT ws://localhost:PORT; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

let root: string;
let rendererDir: string;
let service: KioskService;
let host: RunningHost;
const logs = new LogCapture();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mdl-kiosk-host-'));
  rendererDir = join(root, 'renderer');
  await mkdir(join(rendererDir, 'assets', 'sub'), { recursive: true });
  await writeFile(
    join(rendererDir, 'index.html'),
    '<!doctype html><title>kiosk</title><script type="module" src="./assets/app.js"></script>',
  );
  await writeFile(join(rendererDir, 'assets', 'app.js'), 'console.log(1)');
  await writeFile(join(rendererDir, 'assets', 'codec.wasm'), Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
  await writeFile(join(rendererDir, 'assets', 'style.css'), 'body{}');
  await writeFile(join(root, 'secret.txt'), 'TOP-SECRET-CONTENT');
  await symlink(join(root, 'secret.txt'), join(rendererDir, 'assets', 'link.txt'));
  const qr = new QrScanQueue();
  service = new KioskService({
    devices: () => Promise.resolve({ ports: { qr }, qr, close: () => Promise.resolve() }),
    dataDir: join(root, 'data'),
    env: {},
    secrets: new MemorySecretStore(),
    logDestination: logs,
  });
  await service.start();
  host = await startHost({ service, rendererDir, port: 0, log: createLogger({ level: 'debug' }, logs), maxCallsPerSecond: 50 });
});

afterAll(async () => {
  await host.stop();
  await service.stop();
  await rm(root, { recursive: true, force: true });
});

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw request: the path goes on the wire as given (no client-side normalisation). */
function get(path: string, options: { method?: string; host?: string; port?: number } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: options.port ?? host.port,
        path,
        method: options.method ?? 'GET',
        headers: { host: options.host ?? `127.0.0.1:${host.port}` },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function connect(options: { protocols?: string[]; origin?: string | null; path?: string } = {}): WebSocket {
  const protocols = options.protocols ?? ['mdl-kiosk.v1', `auth.${host.token}`];
  const origin = options.origin === undefined ? host.origin : options.origin;
  return new WebSocket(`ws://127.0.0.1:${host.port}${options.path ?? '/api'}`, protocols, origin === null ? {} : { origin });
}

function refusal(ws: WebSocket): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    ws.on('open', () => reject(new Error('the connection was accepted')));
    ws.on('error', () => undefined);
    ws.on('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
  });
}

/** An open screen connection with its messages in order. */
async function screen(): Promise<{
  ws: WebSocket;
  messages: HostMessage[];
  next: (pred?: (m: HostMessage) => boolean) => Promise<HostMessage>;
  closed: Promise<{ code: number; reason: string }>;
}> {
  const ws = connect();
  const messages: HostMessage[] = [];
  let waiters: { pred: (m: HostMessage) => boolean; resolve: (m: HostMessage) => void }[] = [];
  const taken = new Set<HostMessage>();
  ws.on('message', (data: Buffer) => {
    const message = HostMessage.parse(JSON.parse(data.toString('utf8')));
    messages.push(message);
    const hit = waiters.find((w) => w.pred(message));
    if (hit) {
      waiters = waiters.filter((w) => w !== hit);
      taken.add(message);
      hit.resolve(message);
    }
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return {
    ws,
    messages,
    closed,
    next(pred = () => true) {
      const found = messages.find((m) => !taken.has(m) && pred(m));
      if (found) {
        taken.add(found);
        return Promise.resolve(found);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching message; got ${JSON.stringify(messages.slice(-3))}`)), 5_000);
        waiters.push({
          pred,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
  };
}

describe('browser host: files', () => {
  it('serves the screen with the strict CSP and hardening headers on every response', async () => {
    const index = await get('/');
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.body).toContain('<title>kiosk</title>');
    for (const reply of [index, await get('/nope.js'), await get('/../secret.txt')]) {
      expect(reply.headers['content-security-policy']).toBe(CSP.replace(/PORT/g, String(host.port)));
      expect(reply.headers['x-content-type-options']).toBe('nosniff');
      expect(reply.headers['referrer-policy']).toBe('no-referrer');
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(reply.headers['cross-origin-opener-policy']).toBe('same-origin');
      expect(reply.headers['permissions-policy']).toBe('camera=(self), microphone=()');
    }
  });

  it('gives each file its MIME type (.wasm as application/wasm)', async () => {
    expect((await get('/assets/codec.wasm')).headers['content-type']).toBe('application/wasm');
    expect((await get('/assets/app.js')).headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect((await get('/assets/style.css?v=2')).headers['content-type']).toBe('text/css; charset=utf-8');
    expect((await get('/index.html', { method: 'HEAD' })).status).toBe(200);
  });

  it('lists no directories and refuses paths out of the screen', async () => {
    expect((await get('/assets/')).status).toBe(404);
    expect((await get('/assets/sub')).status).toBe(404);
    for (const path of [
      '/../secret.txt',
      '/assets/../../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/..%2f..%2fsecret.txt',
      '/assets/link.txt',
    ]) {
      const reply = await get(path);
      expect(reply.status, path).toBe(403);
      expect(reply.body).not.toContain('TOP-SECRET-CONTENT');
    }
    expect((await get('/assets/%00app.js')).status).toBe(400);
    expect((await get('/%E0%A4%A')).status).toBe(400);
    expect((await get('/', { method: 'POST' })).status).toBe(405);
  });

  it('answers only to its own Host (no DNS rebinding)', async () => {
    const reply = await get('/', { host: 'evil.example:80' });
    expect(reply.status).toBe(403);
    expect(reply.body).toMatch(/wrong Host/);
  });

  it('says how to build the screen when it is missing', async () => {
    const empty = await startHost({ service, rendererDir: join(root, 'missing'), log: createLogger({ level: 'silent' }) });
    try {
      const reply = await get('/', { port: empty.port, host: `127.0.0.1:${empty.port}` });
      expect(reply.status).toBe(503);
      expect(reply.body).toContain('npm run build:renderer');
    } finally {
      await empty.stop();
    }
  });

  it('listens on loopback only', async () => {
    await expect(startHost({ service, host: '0.0.0.0', log: createLogger({ level: 'silent' }) })).rejects.toThrow(HostConfigError);
    expect(host.url).toBe(`http://127.0.0.1:${host.port}/#token=${host.token}`);
    expect(host.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe('browser host: the API socket', () => {
  it('refuses a missing or wrong token (401), a wrong or missing Origin (403) and other paths, before the upgrade', async () => {
    const missing = await refusal(connect({ protocols: ['mdl-kiosk.v1'] }));
    expect(missing).toEqual({ status: 401, body: matching(/token is missing/) });
    const wrong = await refusal(connect({ protocols: ['mdl-kiosk.v1', `auth.${'A'.repeat(43)}`] }));
    expect(wrong).toEqual({ status: 401, body: 'unauthorized: wrong token' });
    const origin = await refusal(connect({ origin: 'http://evil.example' }));
    expect(origin).toEqual({ status: 403, body: matching(/Origin/) });
    const otherPort = await refusal(connect({ origin: `http://127.0.0.1:${host.port + 1}` }));
    expect(otherPort.status).toBe(403);
    const noOrigin = await refusal(connect({ origin: null }));
    expect(noOrigin).toEqual({ status: 403, body: matching(/Origin header is missing/) });
    const path = await refusal(connect({ path: '/other' }));
    expect(path.status).toBe(404);
    const localhost = new WebSocket(`ws://127.0.0.1:${host.port}/api`, ['mdl-kiosk.v1', `auth.${host.token}`], {
      origin: `http://localhost:${host.port}`,
    });
    await new Promise((resolve, reject) => {
      localhost.once('open', resolve);
      localhost.once('error', reject);
    });
    expect(localhost.protocol).toBe('mdl-kiosk.v1');
    localhost.close();
  });

  it('pushes the state at once and on every change, to every screen; a call round-trips', async () => {
    const a = await screen();
    const b = await screen();
    const first = await a.next((m) => m.type === 'state');
    expect(first.type === 'state' && ScreenState.parse(first.state).view.phase).toBe('config_error');
    await b.next((m) => m.type === 'state');
    a.ws.send(JSON.stringify({ type: 'call', id: 7, intent: 'setLanguage', args: { language: 'fr' } }));
    expect(await a.next((m) => m.type === 'reply')).toEqual({ type: 'reply', id: 7, ok: true, result: { ok: true } });
    for (const s of [a, b]) {
      const pushed = await s.next((m) => m.type === 'state' && (m.state as { language: string }).language === 'fr');
      expect(pushed.type).toBe('state');
    }
    a.ws.send(JSON.stringify({ type: 'call', id: 8, intent: 'setLanguage', args: { language: 'en' } }));
    await a.next((m) => m.type === 'reply' && m.id === 8);
    a.ws.close();
    b.ws.close();
  });

  it('answers bad messages with clear errors and keeps the connection', async () => {
    const s = await screen();
    s.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    expect(await s.next((m) => m.type === 'refused')).toEqual({
      type: 'refused',
      error: { code: 'invalid_message', message: 'binary frames are not accepted: send JSON text' },
    });
    s.ws.send('{not json');
    expect(await s.next((m) => m.type === 'refused')).toEqual({
      type: 'refused',
      error: { code: 'invalid_message', message: 'the message is not JSON' },
    });
    s.ws.send(JSON.stringify({ type: 'call', id: 3, intent: 'next', args: {}, extra: 1 }));
    expect(await s.next((m) => m.type === 'reply')).toMatchObject({ id: 3, ok: false, error: { code: 'invalid_message' } });
    s.ws.send(JSON.stringify({ type: 'hello' }));
    expect(await s.next((m) => m.type === 'refused')).toMatchObject({
      error: { code: 'invalid_message', message: containing('not a call') },
    });
    s.ws.send(JSON.stringify({ type: 'call', id: 4, intent: 'launchMissiles', args: {} }));
    expect(await s.next((m) => m.type === 'reply')).toEqual({
      type: 'reply',
      id: 4,
      ok: false,
      error: { code: 'unknown_intent', message: 'unknown intent: "launchMissiles"' },
    });
    s.ws.send(JSON.stringify({ type: 'call', id: 5, intent: 'setLanguage', args: { language: 'xx' } }));
    expect(await s.next((m) => m.type === 'reply')).toMatchObject({
      id: 5,
      ok: false,
      error: { code: 'invalid_args', message: containing('language') },
    });
    s.ws.send(JSON.stringify({ type: 'call', id: 6, intent: 'getSettings', args: {} }));
    expect(await s.next((m) => m.type === 'reply')).toMatchObject({ id: 6, ok: false, error: { code: 'staff_required' } });
    s.ws.send(JSON.stringify({ type: 'call', id: 9, intent: 'unlock', args: { pin: '1234' } }));
    expect(await s.next((m) => m.type === 'reply')).toEqual({ type: 'reply', id: 9, ok: true, result: { ok: false, reason: 'no_pin' } });
    expect(s.ws.readyState).toBe(WebSocket.OPEN);
    s.ws.close();
  });

  it('closes a connection that sends a frame over the limit (1009) and keeps serving others', async () => {
    const s = await screen();
    s.ws.send(
      JSON.stringify({ type: 'call', id: 1, intent: 'qrScanned', args: { text: 'x'.repeat(MAX_API_MESSAGE_BYTES), source: 'paste' } }),
    );
    expect((await s.closed).code).toBe(1009);
    const other = await screen();
    other.ws.send(JSON.stringify({ type: 'call', id: 2, intent: 'next', args: {} }));
    expect(await other.next((m) => m.type === 'reply')).toEqual({ type: 'reply', id: 2, ok: true, result: { ok: true } });
    other.ws.close();
  });

  it('closes a flooding connection with 1008', async () => {
    const s = await screen();
    for (let i = 0; i < 80; i++) s.ws.send(JSON.stringify({ type: 'call', id: i, intent: 'next', args: {} }));
    const closed = await s.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(/more than 50 messages per second/);
    expect(logs.text()).not.toContain(host.token);
  });
});
