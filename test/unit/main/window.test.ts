/**
 * The kiosk window: every web preference set explicitly (Electron security checklist #2 nodeIntegration,
 * #3 contextIsolation, #4 sandbox, #6 webSecurity, #8 allowRunningInsecureContent, #9 experimental
 * features, #10 no enableBlinkFeatures, #11/#12 no webview), kiosk options, no menu, shown when painted,
 * shortcuts blocked in production, and the close guard.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/platform/log.js';
import { createKioskWindow, loadKioskScreen, type KioskWindowOptions } from '../../../src/main/window.js';
import { LogCapture } from '../../support/harness.js';
import type { BrowserWindow } from './fake-electron.js';
import { Menu, calls, resetFakeElectron, type FakeWebContents } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js'));

let logs: LogCapture;
let quitting: boolean;

function open(overrides: Partial<KioskWindowOptions> = {}): BrowserWindow {
  return createKioskWindow({
    kioskMode: true,
    devTools: false,
    preloadPath: '/app/dist/app/preload.cjs',
    contentProtection: true,
    isQuitting: () => quitting,
    log: createLogger({ level: 'debug' }, logs),
    platform: 'linux',
    ...overrides,
  }) as unknown as BrowserWindow;
}

const contentsOf = (w: BrowserWindow): FakeWebContents => w.webContents;

beforeEach(() => {
  resetFakeElectron();
  logs = new LogCapture();
  quitting = false;
});

afterEach(() => {
  vi.useRealTimers();
});

describe('web preferences, set explicitly', () => {
  it('#2 #3 #4 no node integration anywhere, context isolation, sandbox', () => {
    const prefs = open().options.webPreferences;
    expect(prefs).toMatchObject({
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      contextIsolation: true,
      sandbox: true,
    });
  });

  it('#6 #8 #9 #10 web security on, no insecure content, no experimental or Blink features', () => {
    const prefs = open().options.webPreferences;
    expect(prefs).toMatchObject({ webSecurity: true, allowRunningInsecureContent: false, experimentalFeatures: false });
    expect(prefs).not.toHaveProperty('enableBlinkFeatures');
    // Middle-click (auxclick) is switched off too: it could otherwise try to open a window.
    expect(prefs?.disableBlinkFeatures).toBe('Auxclick');
    expect(prefs).not.toHaveProperty('additionalArguments');
  });

  it('speech may start without a touch: a headset plugged in plays the prompt (autoplay without a gesture)', () => {
    expect(open().options.webPreferences?.autoplayPolicy).toBe('no-user-gesture-required');
  });

  it('#12 no <webview> tag; no spellcheck; drag-and-drop does not navigate', () => {
    expect(open().options.webPreferences).toMatchObject({ webviewTag: false, spellcheck: false, navigateOnDragDrop: false });
  });

  it('#20 the preload is the bundled one, and it is the only bridge', () => {
    expect(open().options.webPreferences?.preload).toBe('/app/dist/app/preload.cjs');
  });

  it('devtools follow the option (QA or an unpackaged run with app.devTools)', () => {
    expect(open().options.webPreferences?.devTools).toBe(false);
    expect(open({ devTools: true }).options.webPreferences?.devTools).toBe(true);
  });
});

describe('kiosk options', () => {
  it('kiosk and full screen by configuration, hidden until painted', () => {
    expect(open().options).toMatchObject({ kiosk: true, fullscreen: true, show: false, autoHideMenuBar: true });
    expect(open({ kioskMode: false }).options).toMatchObject({ kiosk: false, fullscreen: false, show: false });
  });

  it('removes the application menu before the window exists', () => {
    open();
    expect(Menu.applicationMenu).toBeNull();
    expect(calls.indexOf('Menu.setApplicationMenu')).toBeLessThan(calls.indexOf('new BrowserWindow'));
  });

  it('shows and focuses the window on ready-to-show, once', () => {
    const w = open();
    expect(w.isVisible()).toBe(false);
    w.emit('ready-to-show');
    expect(w.isVisible()).toBe(true);
    expect(w.focused).toBe(true);
  });

  it('shows the window anyway when the first paint never comes', () => {
    vi.useFakeTimers();
    const w = open({ showFallbackMs: 1_000 });
    vi.advanceTimersByTime(999);
    expect(w.isVisible()).toBe(false);
    vi.advanceTimersByTime(1);
    expect(w.isVisible()).toBe(true);
    expect(logs.events()).toContain('window_shown_without_paint');
  });

  it('content protection keeps portraits out of screen captures (when asked)', () => {
    expect(open().contentProtection).toBe(true);
    expect(open({ contentProtection: false }).contentProtection).toBeUndefined();
  });

  it('pinch zoom is limited to 1:1 and Ctrl/Cmd+wheel never reaches the page', () => {
    const c = contentsOf(open());
    expect(c.visualZoomLimits).toEqual([1, 1]);
    expect(c.wheelEvent(['control']).defaultPrevented).toBe(true);
    expect(c.wheelEvent(['meta']).defaultPrevented).toBe(true);
    expect(c.wheelEvent([]).defaultPrevented).toBe(false);
    expect(c.wheelEvent(['shift']).defaultPrevented).toBe(false);
  });

  it('loads the screen from app://kiosk', async () => {
    const w = open();
    await loadKioskScreen(w as never, createLogger({ level: 'silent' }));
    expect(contentsOf(w).loaded).toEqual(['app://kiosk/index.html']);
  });
});

describe('shortcuts in production', () => {
  const blocked = [
    { key: 'r', control: true },
    { key: 'R', control: true, shift: true },
    { key: 'F5' },
    { key: 'F12' },
    { key: 'I', control: true, shift: true },
    { key: 'J', control: true, shift: true },
    { key: 'C', control: true, shift: true },
    { key: '+', control: true },
    { key: '-', control: true },
    { key: '0', control: true },
    { key: 'w', control: true },
    { key: 'F4', control: true },
    { key: 'F4', alt: true },
  ];
  for (const input of blocked) {
    it(`blocks ${JSON.stringify(input)}`, () => {
      const c = contentsOf(open());
      expect(c.keyEvent(input).defaultPrevented).toBe(true);
    });
  }

  it('lets typing, PIN digits, Ctrl+V and Tab through', () => {
    const c = contentsOf(open());
    for (const input of [
      { key: '0' },
      { key: '-' },
      { key: 'r' },
      { key: 'v', control: true },
      { key: 'Tab' },
      { key: 'Enter' },
      { key: 'a', control: true },
    ]) {
      expect(c.keyEvent(input).defaultPrevented, JSON.stringify(input)).toBe(false);
    }
  });

  it('logs a blocked shortcut by kind only', () => {
    contentsOf(open()).keyEvent({ key: 'F12' });
    const record = logs.records.find((r) => r.event === 'shortcut_blocked');
    expect(record).toMatchObject({ kind: 'devtools' });
  });

  it('with devtools allowed (QA), reload and devtools work, zoom and close stay blocked', () => {
    const c = contentsOf(open({ devTools: true }));
    expect(c.keyEvent({ key: 'F12' }).defaultPrevented).toBe(false);
    expect(c.keyEvent({ key: 'r', control: true }).defaultPrevented).toBe(false);
    expect(c.keyEvent({ key: '+', control: true }).defaultPrevented).toBe(true);
    expect(c.keyEvent({ key: 'w', control: true }).defaultPrevented).toBe(true);
  });

  it('macOS: Cmd+W, Cmd+Q, Cmd+R, Cmd+Alt+I are blocked', () => {
    const c = contentsOf(open({ platform: 'darwin' }));
    for (const input of [
      { key: 'w', meta: true },
      { key: 'q', meta: true },
      { key: 'r', meta: true },
      { key: 'i', meta: true, alt: true },
    ]) {
      expect(c.keyEvent(input).defaultPrevented, JSON.stringify(input)).toBe(true);
    }
  });
});

describe('close guard', () => {
  it('in kiosk mode the window does not close unless the app is quitting', () => {
    const w = open();
    expect(w.close()).toBe(false);
    expect(w.isDestroyed()).toBe(false);
    expect(logs.events()).toContain('window_close_refused');
    quitting = true;
    expect(w.close()).toBe(true);
    expect(w.isDestroyed()).toBe(true);
  });

  it('outside kiosk mode (QA, development) the window closes', () => {
    const w = open({ kioskMode: false });
    expect(w.close()).toBe(true);
  });
});
