/**
 * The one kiosk window: full screen and in kiosk mode (by configuration), shown only once its first frame
 * is painted, with every web preference that matters set explicitly rather than left to defaults
 * (electronjs.org/docs/latest/tutorial/security #2–4, #6, #8–12), no application menu, and the keyboard
 * shortcuts that would reload, inspect, zoom or close it blocked in production.
 */
import { BrowserWindow, Menu } from 'electron';
import type { Logger } from '../platform/log.js';
import { APP_START_URL } from './app-origin.js';
import { blockedShortcut, type BlockedShortcut } from './shortcuts.js';
import { currentPlatform } from '../platform/os.js';

export interface KioskWindowOptions {
  /** Kiosk + full screen (config `app.kioskMode`); off only for QA and development runs. */
  readonly kioskMode: boolean;
  /** The developer tools may open (QA flavour, or an unpackaged run with `app.devTools`). */
  readonly devTools: boolean;
  /** Absolute path of the sandboxed CommonJS preload (`dist/app/preload.cjs`). */
  readonly preloadPath: string;
  /**
   * Keep the window out of screenshots, screen recording and remote-desktop capture (Windows and macOS;
   * no effect on Linux): the screen shows a customer's portrait and licence data, which must not be
   * copied off the counter (electronjs.org/docs/latest/api/browser-window#winsetcontentprotectionenable).
   */
  readonly contentProtection: boolean;
  /** The app is quitting: closing the window is then allowed in kiosk mode. */
  readonly isQuitting: () => boolean;
  readonly log: Logger;
  readonly platform?: NodeJS.Platform;
  /** Show the window after this long even if `ready-to-show` never came (a kiosk is never left blank). */
  readonly showFallbackMs?: number;
}

/** With the developer tools allowed (QA), reload and the tools' shortcuts work; the rest stays blocked. */
const ALLOWED_WITH_DEVTOOLS: ReadonlySet<BlockedShortcut> = new Set<BlockedShortcut>(['reload', 'devtools']);

const ZOOM_WHEEL_MODIFIERS: ReadonlySet<string> = new Set(['control', 'ctrl', 'meta', 'command', 'cmd']);

export function isZoomWheel(modifiers: readonly string[]): boolean {
  return modifiers.some((m) => ZOOM_WHEEL_MODIFIERS.has(m));
}

export function createKioskWindow(options: KioskWindowOptions): BrowserWindow {
  const platform = options.platform ?? currentPlatform();
  // No menu: also removes Electron's default accelerators (reload, devtools, zoom, quit).
  Menu.setApplicationMenu(null);
  const window = new BrowserWindow({
    show: false,
    title: 'mDL Kiosk',
    kiosk: options.kioskMode,
    fullscreen: options.kioskMode,
    autoHideMenuBar: true,
    width: 1280,
    height: 800,
    backgroundColor: '#000000',
    webPreferences: {
      preload: options.preloadPath,
      // Spelled out in each window on purpose (not a shared constant): Electronegativity checks the
      // literal options of every BrowserWindow, and a spread hides them from it.
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      experimentalFeatures: false,
      webviewTag: false,
      navigateOnDragDrop: false,
      spellcheck: false,
      // A middle click opens nothing anyway (new windows are denied); this removes the event itself.
      disableBlinkFeatures: 'Auxclick',
      devTools: options.devTools,
      safeDialogs: true,
      // Speech for a blind customer must start without a gesture on the screen (a headset plugged in, or
      // speech always on): Chromium would otherwise keep the page's AudioContext suspended until a touch.
      autoplayPolicy: 'no-user-gesture-required',
    },
  });
  const contents = window.webContents;

  let shown = false;
  const show = (): void => {
    if (shown || window.isDestroyed()) return;
    shown = true;
    clearTimeout(fallback);
    window.show();
    window.focus();
  };
  window.once('ready-to-show', show);
  const fallback = setTimeout(() => {
    options.log.warn({ event: 'window_shown_without_paint' }, 'the kiosk screen did not paint in time; showing the window anyway');
    show();
  }, options.showFallbackMs ?? 15_000);
  fallback.unref();
  window.on('closed', () => clearTimeout(fallback));

  if (options.contentProtection) window.setContentProtection(true);

  // Pinch zoom off; Ctrl/Cmd+wheel (browser zoom) never reaches the page.
  void contents.setVisualZoomLevelLimits(1, 1).catch(() => undefined);
  contents.on('before-mouse-event', (event, mouse) => {
    if (mouse.type === 'mouseWheel' && isZoomWheel(mouse.modifiers ?? [])) event.preventDefault();
  });

  contents.on('before-input-event', (event, input) => {
    const kind = blockedShortcut(input, platform);
    if (kind === null) return;
    if (options.devTools && ALLOWED_WITH_DEVTOOLS.has(kind)) return;
    event.preventDefault();
    if (input.type === 'keyDown') options.log.info({ event: 'shortcut_blocked', kind }, 'a blocked keyboard shortcut was pressed');
  });

  if (options.kioskMode) {
    window.on('close', (event) => {
      if (options.isQuitting()) return;
      event.preventDefault();
      options.log.info({ event: 'window_close_refused' }, 'the kiosk window stays open (quit the app to close it)');
    });
  }

  contents.on('did-fail-load', (_event, errorCode, errorDescription, _url, isMainFrame) => {
    if (isMainFrame)
      options.log.error(
        { event: 'window_load_failed', code: errorCode },
        `the kiosk screen failed to load: ${errorDescription.slice(0, 200)}`,
      );
  });
  return window;
}

/** Loads the kiosk screen; a failure is logged (the window stays, crash recovery reloads it). */
export function loadKioskScreen(window: BrowserWindow, log: Logger): Promise<void> {
  return window.loadURL(APP_START_URL).catch((e: unknown) => {
    log.error(
      { event: 'window_load_failed' },
      `the kiosk screen failed to load: ${e instanceof Error ? e.message.slice(0, 200) : 'unknown error'}`,
    );
  });
}
