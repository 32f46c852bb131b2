/**
 * The lockdown, item by item of Electron's security checklist (electronjs.org/docs/latest/tutorial/security,
 * numbered as in Electron's security checklist, electronjs.org/docs/latest/tutorial/security). Items set on the window (#2–4, #6, #8–10, #12)
 * are in window.test.ts, #7 and #18 in app-scheme.test.ts, #17 in ipc.test.ts, #20 in the preload tests;
 * #19 (fuses) is set at packaging (electron-builder.yml) and checked by the packaging tests.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/platform/log.js';
import { installLockdown, OriginRegistry, permissionCheckGranted, permissionRequestGranted } from '../../../src/main/security.js';
import { LogCapture } from '../../support/harness.js';
import { BrowserWindow, app, fakeEvent, resetFakeElectron, session, type FakeSession, type FakeWebContents } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js'));

let logs: LogCapture;
let registry: OriginRegistry;
let kiosk: BrowserWindow;

const KIOSK_URL = 'app://kiosk/index.html';
const video = { isMainFrame: true, requestingUrl: KIOSK_URL, securityOrigin: 'app://kiosk/', mediaTypes: ['video'] };
const checkVideo = { isMainFrame: true, requestingUrl: KIOSK_URL, securityOrigin: 'app://kiosk/', mediaType: 'video' as const };

function newWindow(partition?: string): BrowserWindow {
  return new BrowserWindow({ show: false, ...(partition ? { webPreferences: { partition } } : {}) });
}

beforeEach(async () => {
  resetFakeElectron();
  logs = new LogCapture();
  registry = new OriginRegistry();
  installLockdown(
    app as never,
    {
      navigationOrigin: (c) => registry.navigationOrigin(c),
      isKioskScreen: (c) => registry.isKioskScreen(c),
      cameraSession: session.defaultSession as never,
    },
    createLogger({ level: 'debug' }, logs),
  );
  kiosk = newWindow();
  registry.setKioskScreen(kiosk.webContents as never);
  await kiosk.webContents.loadURL(KIOSK_URL);
});

const contents = (w: BrowserWindow): FakeWebContents => w.webContents;
const request = (s: FakeSession, c: FakeWebContents, permission: string, details: Record<string, unknown>): Promise<boolean> =>
  s.requestPermission(c, permission, details);

describe('#5 permission request handler: the camera for our main frame only', () => {
  it('grants media with video only to the kiosk screen at app://kiosk', async () => {
    expect(await request(session.defaultSession, contents(kiosk), 'media', video)).toBe(true);
  });

  it('denies audio, audio+video, an empty media list, and screen capture', async () => {
    const s = session.defaultSession;
    expect(await request(s, contents(kiosk), 'media', { ...video, mediaTypes: ['audio'] })).toBe(false);
    expect(await request(s, contents(kiosk), 'media', { ...video, mediaTypes: ['video', 'audio'] })).toBe(false);
    expect(await request(s, contents(kiosk), 'media', { ...video, mediaTypes: [] })).toBe(false);
    expect(await request(s, contents(kiosk), 'display-capture', { ...video })).toBe(false);
  });

  it('denies every other permission', async () => {
    for (const permission of [
      'geolocation',
      'notifications',
      'clipboard-read',
      'midi',
      'midiSysex',
      'fullscreen',
      'pointerLock',
      'hid',
      'serial',
      'usb',
      'openExternal',
      'fileSystem',
      'unknown',
    ]) {
      expect(await request(session.defaultSession, contents(kiosk), permission, video), permission).toBe(false);
    }
    expect(logs.records.filter((r) => r.event === 'permission_denied').map((r) => r.kind)).toContain('geolocation');
  });

  it('denies subframes, other origins and other web contents', async () => {
    const s = session.defaultSession;
    expect(await request(s, contents(kiosk), 'media', { ...video, isMainFrame: false })).toBe(false);
    expect(await request(s, contents(kiosk), 'media', { ...video, requestingUrl: 'https://evil.example/' })).toBe(false);
    expect(await request(s, contents(kiosk), 'media', { ...video, securityOrigin: 'https://evil.example' })).toBe(false);
    expect(await request(s, contents(kiosk), 'media', { ...video, requestingUrl: 'file:///etc/passwd' })).toBe(false);
    const other = newWindow();
    expect(await request(s, contents(other), 'media', video)).toBe(false);
  });

  it("a session other than the kiosk screen's grants nothing, even to an app:// page", async () => {
    const phone = newWindow('qa-virtual-phone');
    const phoneSession = contents(phone).session;
    expect(phoneSession).not.toBe(session.defaultSession);
    expect(phoneSession.permissionRequestHandler).toBeTypeOf('function');
    expect(await request(phoneSession, contents(phone), 'media', video)).toBe(false);
  });
});

describe('#5 permission check handler: the same rule', () => {
  it('grants the video check for the kiosk screen and nothing else', () => {
    const s = session.defaultSession;
    expect(s.checkPermission(contents(kiosk), 'media', 'app://kiosk/', checkVideo)).toBe(true);
    expect(s.checkPermission(contents(kiosk), 'media', 'app://kiosk/', { ...checkVideo, mediaType: 'audio' })).toBe(false);
    expect(s.checkPermission(contents(kiosk), 'media', 'app://kiosk/', { ...checkVideo, mediaType: 'unknown' })).toBe(false);
    expect(s.checkPermission(contents(kiosk), 'media', 'https://evil.example/', checkVideo)).toBe(false);
    expect(s.checkPermission(contents(kiosk), 'media', 'app://kiosk/', { ...checkVideo, isMainFrame: false })).toBe(false);
    expect(s.checkPermission(contents(kiosk), 'media', 'app://kiosk/', { ...checkVideo, embeddingOrigin: 'https://evil.example' })).toBe(
      false,
    );
    expect(s.checkPermission(null, 'media', 'app://kiosk/', checkVideo)).toBe(false);
    expect(s.checkPermission(contents(newWindow()), 'media', 'app://kiosk/', checkVideo)).toBe(false);
    for (const permission of ['geolocation', 'notifications', 'hid', 'serial', 'usb', 'clipboard-read']) {
      expect(s.checkPermission(contents(kiosk), permission, 'app://kiosk/', checkVideo), permission).toBe(false);
    }
  });

  it('pure rules: request and check agree', () => {
    expect(permissionRequestGranted('media', video as never, true)).toBe(true);
    expect(permissionRequestGranted('media', video as never, false)).toBe(false);
    expect(permissionCheckGranted('media', 'app://kiosk', checkVideo, true)).toBe(true);
    expect(permissionCheckGranted('media', 'app://kiosk', checkVideo, false)).toBe(false);
  });
});

describe('#5 devices belong to main: every picker and device permission is refused', () => {
  it('device permission handler says no; HID, serial and USB pickers choose nothing', () => {
    const s = session.defaultSession;
    expect(s.devicePermissionHandler?.({ deviceType: 'usb', origin: 'app://kiosk', device: {} })).toBe(false);
    const hid = vi.fn();
    const hidEvent = fakeEvent();
    s.emit('select-hid-device', hidEvent, { deviceList: [{ deviceId: 'x' }], frame: null }, hid);
    expect(hidEvent.defaultPrevented).toBe(true);
    expect(hid).toHaveBeenCalledWith();
    const serial = vi.fn();
    const serialEvent = fakeEvent();
    s.emit('select-serial-port', serialEvent, [{ portId: 'p' }], contents(kiosk), serial);
    expect(serialEvent.defaultPrevented).toBe(true);
    expect(serial).toHaveBeenCalledWith('');
    const usb = vi.fn();
    const usbEvent = fakeEvent();
    s.emit('select-usb-device', usbEvent, { deviceList: [{ deviceId: 'u' }], frame: null }, usb);
    expect(usbEvent.defaultPrevented).toBe(true);
    expect(usb).toHaveBeenCalledWith();
  });

  it('Web Bluetooth: the picker chooses nothing and pairing is refused', () => {
    const pick = vi.fn();
    const event = fakeEvent();
    contents(kiosk).emit('select-bluetooth-device', event, [{ deviceId: 'phone', deviceName: 'Phone' }], pick);
    expect(event.defaultPrevented).toBe(true);
    expect(pick).toHaveBeenCalledWith('');
    const answer = vi.fn();
    (session.defaultSession.bluetoothPairingHandler as (d: unknown, cb: (r: unknown) => void) => void)(
      { deviceId: 'phone', pairingKind: 'confirm' },
      answer,
    );
    expect(answer).toHaveBeenCalledWith({ confirmed: false });
  });

  it('downloads are refused', () => {
    const event = fakeEvent();
    session.defaultSession.emit('will-download', event, {}, contents(kiosk));
    expect(event.defaultPrevented).toBe(true);
  });
});

describe('#11 #12 <webview> is never attached', () => {
  it('will-attach-webview is prevented', () => {
    const event = fakeEvent();
    contents(kiosk).emit('will-attach-webview', event, { nodeIntegration: true }, { src: 'https://evil.example/' });
    expect(event.defaultPrevented).toBe(true);
    expect(logs.events()).toContain('webview_blocked');
  });
});

describe("#13 navigation stays on the page's own origin", () => {
  it('the kiosk screen may move within app://kiosk only', () => {
    const c = contents(kiosk);
    for (const name of ['will-navigate', 'will-frame-navigate', 'will-redirect'] as const) {
      expect(c.navigateEvent(name, 'app://kiosk/index.html#/staff').defaultPrevented, name).toBe(false);
      for (const url of [
        'https://evil.example/',
        'file:///etc/passwd',
        'app://other/index.html',
        'app://kiosk:1/x',
        'http://127.0.0.1:8080/',
        'data:text/html,hi',
        'javascript:alert(1)',
        'about:blank',
      ]) {
        expect(c.navigateEvent(name, url).defaultPrevented, `${name} ${url}`).toBe(true);
      }
    }
    const record = logs.records.find((r) => r.event === 'navigation_blocked');
    expect(record).toMatchObject({ kind: 'will-navigate', target: 'https://evil.example' });
    // Only the origin is logged, never a path or query.
    expect(logs.text()).not.toContain('/etc/passwd');
  });

  it('a confined window (the QA phone page) may move within its loopback origin only', () => {
    const phone = newWindow('qa-virtual-phone');
    registry.confine(contents(phone) as never, 'http://127.0.0.1:4321');
    const c = contents(phone);
    expect(c.navigateEvent('will-navigate', 'http://127.0.0.1:4321/#token=x').defaultPrevented).toBe(false);
    expect(c.navigateEvent('will-navigate', 'http://127.0.0.1:4322/').defaultPrevented).toBe(true);
    expect(c.navigateEvent('will-navigate', 'app://kiosk/index.html').defaultPrevented).toBe(true);
  });

  it('any other web contents is held to the kiosk origin', () => {
    const stray = newWindow();
    expect(contents(stray).navigateEvent('will-navigate', 'https://evil.example/').defaultPrevented).toBe(true);
  });
});

describe('#14 new windows are denied', () => {
  it('setWindowOpenHandler answers deny for every URL, on every web contents', () => {
    for (const w of [kiosk, newWindow(), newWindow('qa-virtual-phone')]) {
      const handler = contents(w).windowOpenHandler;
      expect(handler).toBeTypeOf('function');
      for (const url of ['app://kiosk/index.html', 'https://evil.example/', 'about:blank']) {
        expect(
          handler?.({ url, frameName: '', features: '', disposition: 'new-window', referrer: { url: '', policy: 'default' } } as never),
        ).toEqual({ action: 'deny' });
      }
    }
  });

  it('a page cannot hold the app open with beforeunload', () => {
    const event = fakeEvent();
    contents(kiosk).emit('will-prevent-unload', event);
    expect(event.defaultPrevented).toBe(true);
  });
});

describe('web-contents-created: every web contents and session is locked down', () => {
  it('handlers are on each new contents and each new session (once)', () => {
    const w = newWindow('another');
    const c = contents(w);
    for (const name of [
      'will-navigate',
      'will-frame-navigate',
      'will-redirect',
      'will-attach-webview',
      'select-bluetooth-device',
      'will-prevent-unload',
    ]) {
      expect(c.listenerCount(name), name).toBe(1);
    }
    newWindow('another');
    expect(c.session.listenerCount('select-hid-device')).toBe(1);
    expect(c.session.permissionCheckHandler).toBeTypeOf('function');
  });
});

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && /\.(ts|tsx)$/.test(e.name)).map((e) => join(e.parentPath, e.name));
}

describe('#15 #20 no openExternal, no raw Electron in the page', () => {
  it('nothing under src/main, src/preload or src/renderer calls shell.openExternal', async () => {
    for (const dir of ['src/main', 'src/preload', 'src/renderer']) {
      for (const file of await sourceFiles(dir)) {
        const text = (await readFile(file, 'utf8')).replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
        expect(text, file).not.toMatch(/openExternal|\bshell\b\s*[.,}]/);
      }
    }
  });
});

describe('#16 a current Electron', () => {
  it('the Electron the app is built against is a supported major (45 or later)', async () => {
    const pkg = JSON.parse(await readFile('node_modules/electron/package.json', 'utf8')) as { version: string };
    expect(Number(pkg.version.split('.')[0])).toBeGreaterThanOrEqual(45);
    const manifest = JSON.parse(await readFile('package.json', 'utf8')) as {
      devDependencies?: Record<string, string>;
      dependencies?: Record<string, string>;
    };
    expect(manifest.devDependencies?.electron ?? manifest.dependencies?.electron).toMatch(/^\^?4[5-9]|^\^?[5-9][0-9]/);
  });
});
