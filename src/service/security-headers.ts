/**
 * Headers on every response of the browser host and of the Electron shell's `app://kiosk` scheme: the
 * strict content security policy (`'self'` plus `'wasm-unsafe-eval'` for the QR and JPEG 2000 decoders, no
 * inline script or style) and the usual hardening. For the browser host `connect-src` names the host's own
 * WebSocket origins explicitly, as not every browser lets `'self'` cover `ws:`; the Electron screen talks
 * to main over IPC only, so it gets `connect-src 'self'` and nothing else (port `null`).
 */
import type { ServerResponse } from 'node:http';

/** `port`: the browser host's loopback port (its WebSocket), or `null` for a screen with no socket. */
export function contentSecurityPolicy(port: number | null): string {
  return [
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "style-src 'self'",
    "img-src 'self' blob: data:",
    "media-src 'self' blob: mediastream:",
    port === null ? "connect-src 'self'" : `connect-src 'self' ws://127.0.0.1:${port} ws://localhost:${port}`,
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'none'",
  ].join('; ');
}

export function securityHeaders(port: number | null): Record<string, string> {
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
