/**
 * The QA flavour's virtual phone page in an ordinary window of its own: not kiosk, sandboxed, no preload
 * (it talks to its own loopback server, not to the kiosk), its own in-memory session partition (no
 * cookies or storage shared with the kiosk screen, and no camera: the lockdown gives that session no
 * permission), and the same navigation lockdown as the kiosk window, held to the page's loopback origin.
 */
import { BrowserWindow, type WebContents } from 'electron';
import type { Logger } from '../platform/log.js';

/** In-memory (no `persist:` prefix): nothing of the phone page outlives the run. */
export const PHONE_PAGE_PARTITION = 'qa-virtual-phone';

export interface PhoneWindowOptions {
  readonly url: string;
  /** Registers the window's contents with the lockdown, held to the page's origin. */
  readonly confine: (contents: WebContents) => void;
  readonly log: Logger;
}

export function openPhoneWindow(options: PhoneWindowOptions): BrowserWindow {
  const window = new BrowserWindow({
    show: true,
    title: 'Virtual phone (QA)',
    width: 460,
    height: 900,
    autoHideMenuBar: true,
    webPreferences: {
      partition: PHONE_PAGE_PARTITION,
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
      devTools: true,
    },
  });
  options.confine(window.webContents);
  window.loadURL(options.url).catch((e: unknown) => {
    options.log.warn(
      { event: 'phone_window_load_failed' },
      `the virtual phone page failed to load: ${e instanceof Error ? e.message.slice(0, 200) : 'unknown error'}`,
    );
  });
  return window;
}
