/**
 * The kiosk screen is served from the custom scheme `app://kiosk/`, not from `file://`
 * (electronjs.org/docs/latest/tutorial/security #18): a real origin for the CSP's `'self'`, the permission
 * handlers and the IPC sender check, and nothing else on disk reachable from the page.
 *
 * Privileges (electronjs.org/docs/latest/api/protocol#protocolregisterschemesasprivilegedcustomschemes):
 * `standard` (an origin, relative URLs, storage), `secure` (a secure context, which `getUserMedia` needs),
 * `supportFetchAPI` (the QR decoder fetches its `.wasm`). Not `bypassCSP`: the page keeps its CSP. Not
 * `corsEnabled`: it only matters for cross-origin requests to the scheme, and nothing else may read it.
 *
 * Every response carries the browser host's CSP and hardening headers (src/service/security-headers.ts,
 * `connect-src 'self'` only: the screen talks to main over IPC).
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Privileges, Protocol } from 'electron';
import { securityHeaders } from '../service/security-headers.js';
import { mimeTypeFor, resolveStatic } from '../service/static-files.js';
import { APP_HOST, APP_SCHEME } from './app-origin.js';

export const APP_SCHEME_PRIVILEGES: Readonly<Privileges> = Object.freeze({
  standard: true,
  secure: true,
  supportFetchAPI: true,
  bypassCSP: false,
  corsEnabled: false,
  allowServiceWorkers: false,
  stream: false,
});

/** Must run before the app's `ready` event (Electron refuses it later) and only once. */
export function registerAppScheme(protocol: Pick<Protocol, 'registerSchemesAsPrivileged'>): void {
  protocol.registerSchemesAsPrivileged([{ scheme: APP_SCHEME, privileges: { ...APP_SCHEME_PRIVILEGES } }]);
}

const NOT_BUILT =
  'The kiosk screen is not built: run `npm run build:renderer` (`npm start` builds it first), or reinstall the application.';

function textResponse(status: number, text: string, extra: Record<string, string> = {}): Response {
  return new Response(text, { status, headers: { ...securityHeaders(null), 'Content-Type': 'text/plain; charset=utf-8', ...extra } });
}

/**
 * Answers `app://kiosk/<path>` from `rendererDir`: GET only, this one host only, nothing outside the
 * directory (`..`, encoded separators, NUL and symbolic links that lead out are refused by the browser
 * host's own resolver), the right content types (`application/wasm` for streaming compilation), 404 for
 * anything missing.
 */
export function createAppRequestHandler(rendererDir: string): (request: Request) => Promise<Response> {
  return async (request) => {
    if (request.method !== 'GET') return textResponse(405, 'method not allowed', { Allow: 'GET' });
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return textResponse(400, 'bad request: malformed URL');
    }
    if (url.protocol !== `${APP_SCHEME}:` || url.hostname !== APP_HOST || url.port !== '' || url.username !== '' || url.password !== '') {
      return textResponse(404, 'not found');
    }
    const index = await resolveStatic(rendererDir, '/');
    if ('status' in index) return textResponse(503, NOT_BUILT);
    // The URL's own path, still percent-encoded: the resolver decodes it once and refuses what leads out.
    const found = await resolveStatic(rendererDir, url.pathname);
    if ('status' in found) return textResponse(found.status, found.message);
    let body: Buffer;
    try {
      body = await readFile(found.file);
    } catch {
      return textResponse(404, 'not found');
    }
    return new Response(body, {
      status: 200,
      headers: { ...securityHeaders(null), 'Content-Type': mimeTypeFor(found.file) },
    });
  };
}

/** Serves the screen on `app://kiosk/`; call once the app is ready. */
export function serveAppScheme(protocol: Pick<Protocol, 'handle'>, rendererDir: string): void {
  protocol.handle(APP_SCHEME, createAppRequestHandler(rendererDir));
}

/** Where the built screen sits relative to the main bundle (`dist/app/main.js` → `dist/renderer/`). */
export function defaultRendererDir(mainModuleUrl: string): string {
  return fileURLToPath(new URL('../renderer/', mainModuleUrl));
}
