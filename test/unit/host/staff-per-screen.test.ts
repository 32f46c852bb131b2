/**
 * Staff sessions belong to the screen connection that entered the PIN: on the browser host every socket is
 * a screen of its own. A second connection (another tab, or another program that holds the token) never
 * reads settings because some other screen is unlocked, and the session ends when its socket closes.
 * Also here: the host checks `Host` on the WebSocket upgrade, not only on plain requests, and refuses a
 * screen of another OS user (the token alone, readable in Chromium's command line, does not admit one).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HostMessage, type ScreenState } from '../../../src/common/kiosk-api.js';
import { QrScanQueue } from '../../../src/devices/qr/qr-scan-queue.js';
import { createLogger } from '../../../src/platform/log.js';
import { loopbackPeerUser } from '../../../src/host/peer-user.js';
import { startHost, type RunningHost } from '../../../src/host/server.js';
import { KioskService } from '../../../src/service/kiosk-service.js';
import { MemorySecretStore } from '../../../src/service/secret-store.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { TEST_SCRYPT } from '../service/service-fixture.js';

const PIN = '582046';
const require = createRequire(import.meta.url);
let root: string;
let service: KioskService;
let host: RunningHost;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mdl-kiosk-host-staff-'));
  const qr = new QrScanQueue();
  service = new KioskService({
    devices: () => Promise.resolve({ ports: { qr }, qr, close: () => Promise.resolve() }),
    dataDir: join(root, 'data'),
    env: {},
    overrides: { staff: { pinHash: await hashPin(PIN, TEST_SCRYPT) } },
    secrets: new MemorySecretStore(),
    logDestination: { write: () => true },
    pinScrypt: TEST_SCRYPT,
  });
  await service.start();
  host = await startHost({ service, rendererDir: join(root, 'renderer'), log: createLogger({ level: 'silent' }) });
});

afterAll(async () => {
  await host.stop();
  await service.stop();
  await rm(root, { recursive: true, force: true });
});

interface Screen {
  readonly ws: WebSocket;
  call(intent: string, args?: unknown): Promise<Extract<HostMessage, { type: 'reply' }>>;
  latest(): ScreenState;
  until(pred: (s: ScreenState) => boolean): Promise<ScreenState>;
  close(): Promise<void>;
}

async function openScreen(): Promise<Screen> {
  const ws = new WebSocket(`ws://127.0.0.1:${host.port}/api`, ['mdl-kiosk.v1', `auth.${host.token}`], { origin: host.origin });
  const states: ScreenState[] = [];
  const replies = new Map<number, (m: Extract<HostMessage, { type: 'reply' }>) => void>();
  let watchers: (() => void)[] = [];
  ws.on('message', (data: Buffer) => {
    const message = HostMessage.parse(JSON.parse(data.toString('utf8')));
    if (message.type === 'state') states.push(message.state as ScreenState);
    if (message.type === 'reply') replies.get(message.id)?.(message);
    for (const watch of watchers) watch();
  });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let id = 0;
  const screen: Screen = {
    ws,
    call(intent, args = {}) {
      const callId = ++id;
      return new Promise((resolve) => {
        replies.set(callId, resolve);
        ws.send(JSON.stringify({ type: 'call', id: callId, intent, args }));
      });
    },
    latest() {
      const last = states.at(-1);
      if (!last) throw new Error('no state yet');
      return last;
    },
    until(pred) {
      const found = states.findLast(pred);
      if (found && found === states.at(-1)) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no such state; last staff ${JSON.stringify(states.at(-1)?.staff)}`)), 5_000);
        const watch = (): void => {
          const last = states.at(-1);
          if (last && pred(last)) {
            clearTimeout(timer);
            watchers = watchers.filter((w) => w !== watch);
            resolve(last);
          }
        };
        watchers.push(watch);
      });
    },
    close() {
      return new Promise((resolve) => {
        ws.once('close', () => resolve());
        ws.close();
      });
    },
  };
  await screen.until(() => true);
  return screen;
}

describe('browser host: staff sessions per connection', () => {
  it('an unlock opens the staff screens on that connection only; the others stay locked and see it locked', async () => {
    const a = await openScreen();
    const b = await openScreen();
    expect(await a.call('unlock', { pin: PIN })).toMatchObject({ ok: true, result: { ok: true } });
    await a.until((s) => s.staff.unlocked);
    expect(await a.call('getSettings')).toMatchObject({ ok: true });
    expect(await b.call('getSettings')).toMatchObject({ ok: false, error: { code: 'staff_required' } });
    expect(await b.call('getDiagnostics')).toMatchObject({ ok: false, error: { code: 'staff_required' } });
    expect(await b.call('saveSettings', { defaultLanguage: 'fr' })).toMatchObject({ ok: false, error: { code: 'staff_required' } });
    // B is told nothing of A's session: its states say locked, with no expiry.
    expect(b.latest().staff).toMatchObject({ unlocked: false, unlockedUntil: null });
    // B's Lock (its screen leaves the staff pages, say) does not end A's session.
    expect(await b.call('lock')).toMatchObject({ ok: true });
    expect(await a.call('getSettings')).toMatchObject({ ok: true });
    expect(a.latest().staff.unlocked).toBe(true);
    await a.close();
    await b.close();
  });

  it('the session ends when its connection closes: no staff session is left open, and a new connection is locked', async () => {
    const a = await openScreen();
    expect(await a.call('unlock', { pin: PIN })).toMatchObject({ ok: true, result: { ok: true } });
    expect(service.staffUnlockedAnywhere()).toBe(true);
    expect(service.isIdle()).toBe(false);
    await a.close();
    await expect.poll(() => service.staffUnlockedAnywhere()).toBe(false);
    const c = await openScreen();
    expect(c.latest().staff.unlocked).toBe(false);
    expect(await c.call('getSettings')).toMatchObject({ ok: false, error: { code: 'staff_required' } });
    await c.close();
  });

  it("a wrong PIN on another connection is still counted (the lockout is the kiosk's, so a reload buys no attempts)", async () => {
    const a = await openScreen();
    const b = await openScreen();
    expect(await b.call('unlock', { pin: '000000' })).toMatchObject({
      ok: true,
      result: { ok: false, reason: 'wrong_pin', attemptsLeft: 4 },
    });
    expect(await a.call('unlock', { pin: '111111' })).toMatchObject({
      ok: true,
      result: { ok: false, reason: 'wrong_pin', attemptsLeft: 3 },
    });
    expect(await a.call('unlock', { pin: PIN })).toMatchObject({ ok: true, result: { ok: true } });
    await a.close();
    await b.close();
  });
});

describe('browser host: Host on the WebSocket upgrade', () => {
  it("refuses an upgrade whose Host is not the host's own, even with the right Origin and token (DNS rebinding)", async () => {
    for (const hostHeader of ['evil.example', `evil.example:${host.port}`, `127.0.0.1:${host.port + 1}`]) {
      const ws = new WebSocket(`ws://127.0.0.1:${host.port}/api`, ['mdl-kiosk.v1', `auth.${host.token}`], {
        origin: host.origin,
        headers: { host: hostHeader },
      });
      const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        ws.on('open', () => reject(new Error(`the upgrade with Host ${hostHeader} was accepted`)));
        ws.on('error', () => undefined);
        ws.on('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
      });
      expect(refused).toEqual({ status: 403, body: 'forbidden: wrong Host header' });
    }
  });
});

describe('browser host: screens of another OS user are refused (Linux)', () => {
  // Root can start a client as another user; CI runs as root, so there this always runs.
  const asRoot = process.getuid?.() === 0;
  it.runIf(process.platform === 'linux' && (asRoot || process.env.CI === 'true'))(
    "a client of uid 65534 with the right token and Origin gets 403; the host's own user gets in",
    async () => {
      const script = `
      const WebSocket = require(${JSON.stringify(require.resolve('ws'))});
      const ws = new WebSocket(process.argv[1], ['mdl-kiosk.v1', 'auth.' + process.argv[2]], { origin: process.argv[3] });
      ws.on('open', () => { console.log('open'); ws.close(); });
      ws.on('error', () => undefined);
      ws.on('unexpected-response', (_q, res) => { let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => console.log(res.statusCode + ' ' + b)); });
    `;
      const run = (uid: number | undefined): Promise<string> =>
        new Promise((resolve, reject) => {
          const child = spawn(process.execPath, ['-e', script, `ws://127.0.0.1:${host.port}/api`, host.token, host.origin], {
            stdio: ['ignore', 'pipe', 'pipe'],
            ...(uid === undefined ? {} : { uid, gid: uid }),
          });
          let out = '';
          let err = '';
          child.stdout.on('data', (c: Buffer) => (out += c.toString()));
          child.stderr.on('data', (c: Buffer) => (err += c.toString()));
          child.on('error', reject);
          child.on('exit', () => (out.trim() === '' ? reject(new Error(`no answer: ${err}`)) : resolve(out.trim())));
        });
      expect(await run(65534)).toBe(
        "403 forbidden: the screen runs as another user than the kiosk host (run the browser as the host's user)",
      );
      expect(await run(undefined)).toBe('open');
    },
  );

  it('reads the client end of a loopback connection from /proc/net/tcp (and tcp6)', () => {
    const tcp = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:2116 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0 100 0 0 10 0',
      '   1: 0100007F:D431 0100007F:2116 01 00000000:00000000 00:00000000 00000000  1000        0 1002 1 0 20 4 30 10 -1',
      '   2: 0100007F:2116 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0 20 4 30 10 -1',
    ].join('\n');
    const tables: Record<string, string> = { '/proc/net/tcp': tcp };
    const read = (path: string): string => {
      const text = tables[path];
      if (text === undefined) throw new Error('ENOENT');
      return text;
    };
    // Server port 0x2116 = 8470, client port 0xD431 = 54321.
    expect(loopbackPeerUser(8470, 54321, read)).toEqual({ uid: 1000 });
    expect(loopbackPeerUser(8470, 54322, read)).toEqual({ unknown: 'the connection is not in /proc/net/tcp' });
    expect(
      loopbackPeerUser(8470, 54321, () => {
        throw new Error('EACCES');
      }),
    ).toEqual({ unknown: '/proc/net/tcp cannot be read' });
  });
});
