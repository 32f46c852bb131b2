/**
 * Headers on every response of the browser host: the strict content security policy the Electron shell
 * will use too (`'self'` plus `'wasm-unsafe-eval'` for the QR and JPEG 2000 decoders, no inline script or
 * style), and the usual hardening. `connect-src` names the host's own WebSocket origins explicitly, as not
 * every browser lets `'self'` cover `ws:`.
 */
import type { ServerResponse } from 'node:http';

export function contentSecurityPolicy(port: number): string {
  return [
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "style-src 'self'",
    "img-src 'self' blob: data:",
    "media-src 'self' blob: mediastream:",
    `connect-src 'self' ws://127.0.0.1:${port} ws://localhost:${port}`,
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'none'",
  ].join('; ');
}

export function securityHeaders(port: number): Record<string, string> {
  return {
    'Content-Security-Policy': contentSecurityPolicy(port),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'X-Frame-Options': 'DENY',
    'Permissions-Policy': 'camera=(self), microphone=()',
  };
}

export function applySecurityHeaders(res: ServerResponse, port: number): void {
  for (const [name, value] of Object.entries(securityHeaders(port))) res.setHeader(name, value);
}
