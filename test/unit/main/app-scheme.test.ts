/**
 * The `app://kiosk` scheme (Electron security checklist #18: a custom protocol instead of file://; #7: the
 * CSP sent as a response header; #1: the screen loads only bundled files and connects to nothing but
 * itself).
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { APP_SCHEME_PRIVILEGES, createAppRequestHandler, registerAppScheme, serveAppScheme } from '../../../src/main/app-scheme.js';
import { app, protocol, resetFakeElectron } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js'));

let root: string;
let renderer: string;
const handle = (url: string, init?: RequestInit): Promise<Response> => createAppRequestHandler(renderer)(new Request(url, init));

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mdl-kiosk-app-scheme-'));
  renderer = join(root, 'renderer');
  await mkdir(join(renderer, 'assets'), { recursive: true });
  await writeFile(join(renderer, 'index.html'), '<!doctype html><title>kiosk</title>');
  await writeFile(join(renderer, 'assets', 'index-abc.js'), 'console.log(1)');
  await writeFile(join(renderer, 'assets', 'zxing_reader.wasm'), Buffer.from([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
  await writeFile(join(renderer, 'assets', 'index.css'), 'body{}');
  await writeFile(join(root, 'secret.txt'), 'TOP-SECRET-CONTENT');
  await symlink(join(root, 'secret.txt'), join(renderer, 'assets', 'link.txt'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

beforeEach(() => {
  resetFakeElectron();
});

describe('#18 the renderer comes from a privileged custom scheme, not file://', () => {
  it('registers app: as standard, secure and fetch-capable, without bypassing the CSP or enabling CORS', () => {
    registerAppScheme(protocol);
    expect(protocol.privileged).toEqual([{ scheme: 'app', privileges: { ...APP_SCHEME_PRIVILEGES } }]);
    const privileges = protocol.privileged?.[0]?.privileges;
    expect(privileges).toMatchObject({
      standard: true,
      secure: true,
      supportFetchAPI: true,
      bypassCSP: false,
      corsEnabled: false,
      allowServiceWorkers: false,
    });
  });

  it('must be registered before the app is ready (Electron refuses it later)', () => {
    app.becomeReady();
    expect(() => registerAppScheme(protocol as never)).toThrow(/before app is ready/);
  });

  it('serves through protocol.handle once ready', async () => {
    app.becomeReady();
    serveAppScheme(protocol, renderer);
    const handler = protocol.handlers.get('app');
    expect(handler).toBeTypeOf('function');
    const res = await handler?.(new Request('app://kiosk/index.html'));
    expect(res?.status).toBe(200);
  });
});

describe('#7 every response carries the strict CSP and hardening headers', () => {
  it('index.html: CSP with connect-src self only, no unsafe-inline or unsafe-eval', async () => {
    const res = await handle('app://kiosk/index.html');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self' 'wasm-unsafe-eval'");
    expect(csp).toMatch(/connect-src 'self'(;|$)/);
    expect(csp).not.toMatch(/ws:|http:|https:/);
    expect(csp).not.toMatch(/unsafe-inline|'unsafe-eval'/);
    expect(csp).toContain("object-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('permissions-policy')).toBe('camera=(self), microphone=()');
    expect(await res.text()).toContain('<title>kiosk</title>');
  });

  it('error answers carry the headers too', async () => {
    const res = await handle('app://kiosk/missing.js');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-security-policy')).toMatch(/connect-src 'self'/);
  });
});

describe('#1 content types and paths', () => {
  it('the root is index.html', async () => {
    const res = await handle('app://kiosk/');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('kiosk');
  });

  it('.wasm is application/wasm (streaming compilation needs it), .js and .css theirs', async () => {
    const wasm = await handle('app://kiosk/assets/zxing_reader.wasm');
    expect(wasm.headers.get('content-type')).toBe('application/wasm');
    expect(new Uint8Array(await wasm.arrayBuffer())).toEqual(new Uint8Array([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
    expect((await handle('app://kiosk/assets/index-abc.js')).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await handle('app://kiosk/assets/index.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('query and fragment do not change the file', async () => {
    const res = await handle('app://kiosk/index.html?x=1#frag');
    expect(res.status).toBe(200);
  });

  it('missing files are 404, directories are not listed', async () => {
    expect((await handle('app://kiosk/nothing.html')).status).toBe(404);
    expect((await handle('app://kiosk/assets')).status).toBe(404);
  });

  it('refuses traversal: encoded separators, backslashes, NUL and symbolic links that lead out', async () => {
    for (const path of ['/assets/..%2f..%2fsecret.txt', '/..%5csecret.txt', '/assets/%00index.css', '/%2e%2e/secret.txt']) {
      const res = await handle(`app://kiosk${path}`);
      expect([400, 403, 404], path).toContain(res.status);
      expect(await res.text()).not.toContain('TOP-SECRET-CONTENT');
    }
    const link = await handle('app://kiosk/assets/link.txt');
    expect(link.status).toBe(403);
    expect(await link.text()).not.toContain('TOP-SECRET-CONTENT');
  });

  it('serves only the kiosk host: another host, or a port are not ours', async () => {
    for (const url of ['app://other/index.html', 'app://kiosk:8080/index.html', 'app://KIOSK.evil/index.html']) {
      expect((await handle(url)).status, url).toBe(404);
    }
  });

  it('GET only', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'HEAD']) {
      const res = await handle('app://kiosk/index.html', { method, ...(method === 'POST' || method === 'PUT' ? { body: 'x' } : {}) });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('GET');
    }
  });

  it('an unbuilt screen says how to build it', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'mdl-kiosk-app-scheme-empty-'));
    try {
      const res = await createAppRequestHandler(empty)(new Request('app://kiosk/index.html'));
      expect(res.status).toBe(503);
      expect(await res.text()).toContain('npm run build:renderer');
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
