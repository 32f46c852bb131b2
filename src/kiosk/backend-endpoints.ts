/**
 * Addresses of the service (spec §4): the HTTP session endpoints under `{base_url}` and the session
 * WebSocket under `{ws_base_url}`, the same host with the `wss` scheme.
 */
import { isLoopbackHost } from '../platform/loopback-host.js';

export class InsecureBackendError extends Error {
  override readonly name = 'InsecureBackendError';
}

export interface BackendEndpoints {
  /** `{base_url}/sessions` */
  sessionsUrl(): URL;
  /** `{base_url}/sessions/{id}` */
  sessionUrl(sessionId: string): URL;
  /** `{ws_base_url}/sessions/{id}/mdoc-proximity/ws`, without credentials. */
  relaySocketUrl(sessionId: string): URL;
  /** Origin for logs: scheme, host and port only. */
  readonly origin: string;
}

/**
 * Validates the base URL and derives every endpoint from it. Plain `http` is refused for hosts other than
 * loopback unless `allowInsecure` is set: the API key and the client secret would travel in clear text.
 */
export function backendEndpoints(baseUrl: string, options: { allowInsecure: boolean }): BackendEndpoints {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new InsecureBackendError(`backend base URL is not a valid URL`);
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') {
    throw new InsecureBackendError(`backend base URL must use https (got ${base.protocol})`);
  }
  if (base.protocol === 'http:' && !options.allowInsecure && !isLoopbackHost(base.hostname)) {
    throw new InsecureBackendError(`refusing plain http to ${base.hostname}: use https, or set backend.allowInsecure for a lab backend`);
  }
  if (base.username || base.password) {
    throw new InsecureBackendError('backend base URL must not carry credentials');
  }
  if (base.search || base.hash) {
    throw new InsecureBackendError('backend base URL must not carry a query or fragment');
  }
  const prefix = base.pathname.replace(/\/+$/, '');
  const at = (path: string, scheme?: 'ws:' | 'wss:'): URL => {
    const url = new URL(base.href);
    url.pathname = `${prefix}${path}`;
    if (scheme) url.protocol = scheme;
    return url;
  };
  const wsScheme = base.protocol === 'https:' ? 'wss:' : 'ws:';
  return {
    sessionsUrl: () => at('/sessions'),
    sessionUrl: (id) => at(`/sessions/${encodeURIComponent(id)}`),
    relaySocketUrl: (id) => at(`/sessions/${encodeURIComponent(id)}/mdoc-proximity/ws`, wsScheme),
    origin: base.origin,
  };
}
