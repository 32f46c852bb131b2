/**
 * The kiosk screen's own origin, `app://kiosk`, and how to compare a URL against an allowed origin.
 *
 * WHATWG `URL.origin` is `"null"` for schemes it does not know (such as `app:`), while Chromium treats a
 * scheme registered as standard like `https:`; so the origin of an `app:` URL is computed here the way
 * Chromium does: scheme and host, with no credentials and no port.
 */

export const APP_SCHEME = 'app';
export const APP_HOST = 'kiosk';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;
/** What the kiosk window loads. */
export const APP_START_URL = `${APP_ORIGIN}/index.html`;

/** The origin of `url` (`app://kiosk`, `http://127.0.0.1:5173`…), or `null` when it has none we accept. */
export function originOf(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.username !== '' || parsed.password !== '') return null;
  if (parsed.protocol === `${APP_SCHEME}:`) {
    return parsed.host === '' || parsed.port !== '' ? null : `${APP_SCHEME}://${parsed.hostname}`;
  }
  if (parsed.protocol === 'http:' || parsed.protocol === 'https:') return parsed.origin;
  return null;
}

/** `url` belongs to `origin` (exactly: scheme, host and port). */
export function isSameOrigin(url: string, origin: string): boolean {
  return originOf(url) === origin;
}

/** `url` is a page of the kiosk screen. */
export function isAppUrl(url: string): boolean {
  return isSameOrigin(url, APP_ORIGIN);
}
