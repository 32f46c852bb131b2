/**
 * The kiosk's screen in Electron: the `app://kiosk` files, the lockdown of every window, the kiosk window
 * with its IPC to a screen of the service and its renderer watch, and (QA) the virtual phone page in a
 * window of its own.
 */
import { app, ipcMain, protocol, session, type BrowserWindow, type WebContents } from 'electron';
import type { Logger } from '../platform/log.js';
import type { KioskService } from '../service/kiosk-service.js';
import type { KioskAppDependencies } from './app-dependencies.js';
import { originOf } from './app-origin.js';
import { serveAppScheme } from './app-scheme.js';
import { registerKioskIpc } from './ipc.js';
import { openPhoneWindow } from './phone-window.js';
import { watchRenderer } from './renderer-watch.js';
import { installLockdown, OriginRegistry } from './security.js';
import { createKioskWindow, loadKioskScreen } from './window.js';

export interface KioskScreen {
  readonly window: BrowserWindow;
  /** Which origin each window may show (the phone page is confined through it). */
  readonly registry: OriginRegistry;
  /** Undo the IPC and the renderer watch, in the order they were set up (the shutdown runs them backwards). */
  readonly stops: readonly (() => void | Promise<void>)[];
}

export function openKioskScreen(options: {
  readonly service: KioskService;
  readonly deps: Pick<KioskAppDependencies, 'rendererDir' | 'preloadPath' | 'platform'>;
  readonly kioskMode: boolean;
  readonly devTools: boolean;
  readonly contentProtection: boolean;
  readonly isQuitting: () => boolean;
  /** The screen kept crashing: relaunch the app. */
  readonly onCrashLoop: () => void;
  /** The window is gone (outside kiosk mode it can be closed). */
  readonly onClosed: () => void;
  readonly log: Logger;
}): KioskScreen {
  const { service, log } = options;
  serveAppScheme(protocol, options.deps.rendererDir);
  const registry = new OriginRegistry();
  installLockdown(
    app,
    {
      navigationOrigin: (c) => registry.navigationOrigin(c),
      isKioskScreen: (c) => registry.isKioskScreen(c),
      cameraSession: session.defaultSession,
    },
    log,
  );
  const kioskWindow = createKioskWindow({
    kioskMode: options.kioskMode,
    devTools: options.devTools,
    preloadPath: options.deps.preloadPath,
    contentProtection: options.contentProtection,
    isQuitting: options.isQuitting,
    log,
    platform: options.deps.platform,
  });
  registry.setKioskScreen(kioskWindow.webContents);
  // The kiosk window is one screen of the service: its staff session is its own.
  const screen = service.connectScreen();
  const ipc = registerKioskIpc({ ipcMain, contents: kioskWindow.webContents, service: screen, log });
  const stops = [
    () => {
      ipc.dispose();
      screen.close();
    },
    watchRenderer({
      window: kioskWindow,
      contents: kioskWindow.webContents,
      log,
      isQuitting: options.isQuitting,
      onCrashLoop: options.onCrashLoop,
    }),
  ];
  // Outside kiosk mode the window can be closed: that ends the app.
  kioskWindow.on('closed', () => {
    options.onClosed();
    if (!options.isQuitting()) app.quit();
  });
  void loadKioskScreen(kioskWindow, log);
  return { window: kioskWindow, registry, stops };
}

/** QA: the virtual phone page in an ordinary window, confined to its own origin. */
export function openVirtualPhonePage(url: string, registry: OriginRegistry, log: Logger): void {
  const phoneOrigin = originOf(url);
  if (phoneOrigin === null) log.error({ event: 'phone_page_url_invalid' }, 'the virtual phone page has no http origin; not opening it');
  else openPhoneWindow({ url, confine: (c: WebContents) => registry.confine(c, phoneOrigin), log });
}
