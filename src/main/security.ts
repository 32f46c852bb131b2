/**
 * The lockdown every web page of the app gets, whichever window it is in (Electron security checklist,
 * electronjs.org/docs/latest/tutorial/security):
 *  #13 navigation: `will-navigate`, `will-frame-navigate` and `will-redirect` are refused unless they stay
 *      on the page's own origin (`app://kiosk` for the kiosk screen);
 *  #14 new windows: `setWindowOpenHandler` denies every one;
 *  #12 `<webview>`: `will-attach-webview` is prevented (the tag is off as well);
 *   #5 permissions: the request AND the check handler grant one thing only, the camera (`media`, video,
 *      no audio) to the kiosk screen's main frame at `app://kiosk`; everything else is denied (Electron's
 *      default approves every request). Device pickers and device permissions (Web Bluetooth, HID, serial,
 *      USB) are refused too: the devices are the main process's business;
 *  #15 nothing here, or anywhere in the app, calls `shell.openExternal`.
 * `installLockdown` applies it to every web contents as it is created (`web-contents-created`), so no
 * window, frame or popup can be missed.
 */
import type { App, PermissionCheckHandlerHandlerDetails, PermissionRequest, Session, WebContents } from 'electron';
import type { Logger } from '../platform/log.js';
import { APP_ORIGIN, originOf } from './app-origin.js';

type PermissionName = Parameters<Parameters<Session['setPermissionRequestHandler']>[0] & object>[1];
type RequestDetails = Parameters<Parameters<Session['setPermissionRequestHandler']>[0] & object>[3];

/** The camera, for the kiosk screen's main frame, at its own origin. */
export function permissionRequestGranted(permission: PermissionName, details: RequestDetails, fromKioskScreen: boolean): boolean {
  if (permission !== 'media' || !fromKioskScreen) return false;
  const request = details as PermissionRequest & { mediaTypes?: ('video' | 'audio')[]; securityOrigin?: string };
  if (!request.isMainFrame || originOf(request.requestingUrl) !== APP_ORIGIN) return false;
  if (request.securityOrigin !== undefined && originOf(request.securityOrigin) !== APP_ORIGIN) return false;
  const types = request.mediaTypes ?? [];
  return types.length > 0 && types.every((t) => t === 'video');
}

/** The synchronous check (e.g. `enumerateDevices`, `permissions.query`): the same rule as requests. */
export function permissionCheckGranted(
  permission: PermissionName,
  requestingOrigin: string,
  details: PermissionCheckHandlerHandlerDetails,
  fromKioskScreen: boolean,
): boolean {
  if (permission !== 'media' || !fromKioskScreen) return false;
  if (!details.isMainFrame || details.embeddingOrigin !== undefined) return false;
  if (originOf(requestingOrigin) !== APP_ORIGIN) return false;
  if (details.securityOrigin !== undefined && originOf(details.securityOrigin) !== APP_ORIGIN) return false;
  if (details.requestingUrl !== undefined && originOf(details.requestingUrl) !== APP_ORIGIN) return false;
  return details.mediaType === 'video';
}

/** Which pages may do what; resolved when an event fires, so windows can be registered after creation. */
export interface LockdownPolicy {
  /** The one origin this web contents may navigate within, or `null` for none. */
  navigationOrigin(contents: WebContents): string | null;
  /** The kiosk screen's own web contents (the only one that may have the camera). */
  isKioskScreen(contents: WebContents): boolean;
}

function describeOrigin(url: string): string {
  return (originOf(url) ?? url.split(':', 1)[0] ?? 'unknown').slice(0, 100);
}

/** Navigation, new windows, webviews, Bluetooth picker and unload blocking for one web contents. */
export function lockDownContents(contents: WebContents, policy: LockdownPolicy, log: Logger): void {
  const guard =
    (kind: string) =>
    (event: { url: string; preventDefault(): void }): void => {
      const allowed = policy.navigationOrigin(contents);
      if (allowed !== null && originOf(event.url) === allowed) return;
      event.preventDefault();
      log.warn({ event: 'navigation_blocked', kind, target: describeOrigin(event.url) }, 'a page tried to leave its origin; refused');
    };
  contents.on('will-navigate', guard('will-navigate'));
  contents.on('will-frame-navigate', guard('will-frame-navigate'));
  contents.on('will-redirect', guard('will-redirect'));
  contents.setWindowOpenHandler((details) => {
    log.warn({ event: 'window_open_blocked', target: describeOrigin(details.url) }, 'a page tried to open a window; refused');
    return { action: 'deny' };
  });
  contents.on('will-attach-webview', (event) => {
    event.preventDefault();
    log.warn({ event: 'webview_blocked' }, 'a page tried to attach a <webview>; refused');
  });
  // Web Bluetooth's device picker: no device is ever chosen (Bluetooth belongs to the main process).
  contents.on('select-bluetooth-device', (event, _devices, callback) => {
    event.preventDefault();
    callback('');
  });
  // A page's `beforeunload` must not be able to hold the app open when it quits or relaunches.
  contents.on('will-prevent-unload', (event) => {
    event.preventDefault();
  });
}

/** Permission and device handlers of one session; `camera` only for the kiosk screen's session. */
export function lockDownSession(session: Session, policy: Pick<LockdownPolicy, 'isKioskScreen'> & { camera: boolean }, log: Logger): void {
  session.setPermissionRequestHandler((contents, permission, callback, details) => {
    const granted = policy.camera && permissionRequestGranted(permission, details, policy.isKioskScreen(contents));
    if (!granted) log.info({ event: 'permission_denied', kind: permission }, 'a page asked for a permission; denied');
    callback(granted);
  });
  session.setPermissionCheckHandler(
    (contents, permission, requestingOrigin, details) =>
      policy.camera && contents !== null && permissionCheckGranted(permission, requestingOrigin, details, policy.isKioskScreen(contents)),
  );
  session.setDevicePermissionHandler(() => false);
  session.setBluetoothPairingHandler((_details, callback) => callback({ confirmed: false }));
  session.on('select-hid-device', (event, _details, callback) => {
    event.preventDefault();
    callback();
  });
  session.on('select-serial-port', (event, _ports, _contents, callback) => {
    event.preventDefault();
    callback('');
  });
  session.on('select-usb-device', (event, _details, callback) => {
    event.preventDefault();
    callback();
  });
  // Nothing is ever downloaded through a page.
  session.on('will-download', (event) => {
    event.preventDefault();
    log.warn({ event: 'download_blocked' }, 'a page tried to download a file; refused');
  });
}

/**
 * Locks down every web contents the app creates from now on, and the session of each (once). Call before
 * the first window is created. `cameraSession` is the kiosk screen's session (the default one).
 */
export function installLockdown(app: Pick<App, 'on'>, policy: LockdownPolicy & { cameraSession: Session }, log: Logger): void {
  const lockedSessions = new WeakSet<Session>();
  const lockSession = (session: Session): void => {
    if (lockedSessions.has(session)) return;
    lockedSessions.add(session);
    lockDownSession(session, { isKioskScreen: (c) => policy.isKioskScreen(c), camera: session === policy.cameraSession }, log);
  };
  lockSession(policy.cameraSession);
  app.on('web-contents-created', (_event, contents) => {
    lockDownContents(contents, policy, log);
    lockSession(contents.session);
  });
}

/** The kiosk screen's policy: its window navigates within `app://kiosk`; extra windows register theirs. */
export class OriginRegistry implements LockdownPolicy {
  private readonly origins = new WeakMap<WebContents, string>();
  private kiosk: WebContents | undefined;

  /** The kiosk screen's contents: origin `app://kiosk`, camera allowed. */
  setKioskScreen(contents: WebContents): void {
    this.kiosk = contents;
    this.origins.set(contents, APP_ORIGIN);
  }

  /** Another window's contents, confined to `origin` (e.g. the QA phone page's loopback origin). */
  confine(contents: WebContents, origin: string): void {
    this.origins.set(contents, origin);
  }

  navigationOrigin(contents: WebContents): string | null {
    // Anything not registered is held to the kiosk origin: a stray popup or devtools page goes nowhere else.
    return this.origins.get(contents) ?? APP_ORIGIN;
  }

  isKioskScreen(contents: WebContents): boolean {
    return this.kiosk !== undefined && contents === this.kiosk && !contents.isDestroyed();
  }
}
