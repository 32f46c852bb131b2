/**
 * The outbound proxy to the backend, for kiosks in shops and offices whose network lets nothing out but a
 * forward proxy. One decision for both the session API (undici) and the session WebSocket (ws), so both
 * take the same way out:
 *
 * - `backend.proxy.url` (config) wins; else the conventional environment variables: `HTTPS_PROXY` /
 *   `https_proxy` for an https backend, `HTTP_PROXY` / `http_proxy` for a plain-http lab backend.
 * - `backend.proxy.noProxy` (config), else `NO_PROXY` / `no_proxy` (only while `useEnvironment` is true),
 *   lists hosts reached directly: `*` for all, a host name (matching it and its subdomains; a leading dot
 *   is the same), an IP address, each optionally with `:port`. When one sends the backend direct, the
 *   route says which entry of which list did it, for the log.
 * - Proxy credentials: `backend.proxy.credentialsFile` (first line `user:password`, kept like the API key
 *   file), or the user and password of an environment proxy URL. They go only into the
 *   `Proxy-Authorization` header of the tunnel request, never into a log or a message.
 * - An https:// proxy's own certificate is checked against the bundled roots plus `backend.proxy.caFile`.
 *
 * Through the proxy the kiosk asks for a tunnel (HTTP CONNECT) to the backend and runs TLS inside it, so
 * the backend's certificate is checked exactly as without a proxy: the bundled roots or `backend.tls.caFile`,
 * and the SPKI pins. The proxy sees the backend's host name and port, nothing else.
 *
 * Failures are told apart by when they happen: through a proxy the kiosk's only TCP peer is the proxy, and
 * until the proxy answers the CONNECT with 200 every failure is the proxy's (a {@link ProxyTunnelError},
 * raised by the wrappers in proxy-tunnel.ts); after that answer, failures are the backend's, as without one.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { ConfigError, type KioskConfig } from '../platform/config.js';
import { describeProxyTlsFailure, isTlsFailureCode, readCaBundle } from './tls-trust.js';

export interface BackendProxy {
  /** The proxy, without credentials. */
  readonly url: URL;
  /** `Basic …` for `Proxy-Authorization`, when the proxy needs credentials. Never log it. */
  readonly authorization: string | undefined;
  /** Where it was configured (for the log and the staff). */
  readonly source: 'backend.proxy.url' | 'environment';
  /** Trust for an https:// proxy's own certificate: bundled roots plus `backend.proxy.caFile`; undefined: Node's defaults. */
  readonly ca?: readonly string[] | undefined;
}

/** The backend sent direct by a no-proxy entry although a proxy was set: what the log says about it. */
export interface ProxyBypass {
  /** The proxy that was not used (origin only: never credentials). */
  readonly proxy: string;
  readonly proxySource: BackendProxy['source'];
  /** The entry that matched, as written (lower-cased). */
  readonly entry: string;
  /** Where the entry came from. */
  readonly list: 'backend.proxy.noProxy' | 'NO_PROXY' | 'no_proxy';
}

export interface BackendRoute {
  /** The proxy to tunnel through; undefined: connect directly. */
  readonly proxy: BackendProxy | undefined;
  /** Set when a proxy was configured and a no-proxy entry sent the backend direct anyway. */
  readonly bypass: ProxyBypass | undefined;
}

type ProxyConfig = KioskConfig['backend']['proxy'];

function envValue(env: NodeJS.ProcessEnv, ...names: string[]): string | undefined {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') return value.trim();
  }
  return undefined;
}

/**
 * The no-proxy entries and where they came from: the config list, else (only while the environment may be
 * used) the `NO_PROXY` text. `useEnvironment: false` must ignore `NO_PROXY` too: a fleet's "always through
 * this proxy" would otherwise be undone by a variable set on the machine.
 */
function noProxyEntries(config: ProxyConfig, env: NodeJS.ProcessEnv): { entries: string[]; list: ProxyBypass['list'] } {
  if (config.noProxy !== undefined)
    return { entries: config.noProxy.map((e) => e.trim().toLowerCase()).filter((e) => e !== ''), list: 'backend.proxy.noProxy' };
  const variable = config.useEnvironment ? (['NO_PROXY', 'no_proxy'] as const).find((n) => envValue(env, n) !== undefined) : undefined;
  const text = variable === undefined ? undefined : envValue(env, variable);
  return {
    entries:
      text === undefined
        ? []
        : text
            .split(/[\s,]+/)
            .map((e) => e.trim().toLowerCase())
            .filter((e) => e !== ''),
    list: variable ?? 'NO_PROXY',
  };
}

/** The target is reached directly by one of the entries. */
export function bypassesProxy(target: URL, entries: readonly string[]): boolean {
  return matchingNoProxyEntry(target, entries) !== undefined;
}

/** The first entry that sends the target direct, or undefined. */
export function matchingNoProxyEntry(target: URL, entries: readonly string[]): string | undefined {
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = target.port || (target.protocol === 'https:' || target.protocol === 'wss:' ? '443' : '80');
  for (const raw of entries) {
    if (raw === '*') return raw;
    let entry = raw;
    let entryPort: string | undefined;
    const portMatch = /^(.*):(\d{1,5})$/.exec(entry);
    // An IPv6 address without brackets has colons of its own: only `[…]:port` carries a port then.
    if (portMatch && (isIP(portMatch[1]?.replace(/^\[|\]$/g, '') ?? '') !== 0 || !entry.includes('::'))) {
      entry = portMatch[1] ?? entry;
      entryPort = portMatch[2];
    }
    entry = entry.replace(/^\[|\]$/g, '').replace(/^\*?\./, '');
    if (entryPort !== undefined && entryPort !== port) continue;
    if (isIP(entry) !== 0 || isIP(host) !== 0) {
      if (entry === host) return raw;
      continue;
    }
    if (host === entry || host.endsWith(`.${entry}`)) return raw;
  }
  return undefined;
}

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

function credentialsFromFile(path: string): string {
  let first: string;
  try {
    first = readFileSync(path, 'utf8').split(/\r?\n/, 1)[0]?.trim() ?? '';
  } catch (e) {
    throw new ConfigError(`backend.proxy.credentialsFile: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const colon = first.indexOf(':');
  // Never quote the line: it holds the password.
  if (colon <= 0) throw new ConfigError(`backend.proxy.credentialsFile: the first line of ${path} must be user:password`);
  return basic(first.slice(0, colon), first.slice(colon + 1));
}

/** A proxy address from the environment: parsed, credentials moved out of it. */
function environmentProxy(text: string, variable: string): { url: URL; authorization: string | undefined } {
  let url: URL;
  try {
    url = new URL(text.includes('://') ? text : `http://${text}`);
  } catch {
    // The value may hold a password: name the variable only.
    throw new ConfigError(`${variable} is not a proxy address (http://host:port)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`${variable}: only http:// and https:// proxies are supported`);
  const authorization = url.username === '' ? undefined : basic(decodeURIComponent(url.username), decodeURIComponent(url.password));
  url.username = '';
  url.password = '';
  return { url, authorization };
}

/**
 * How to reach `backendUrl`: through which proxy, or directly (and then whether a no-proxy entry overrode a
 * configured proxy). Throws {@link ConfigError} (naming the key or variable, never a credential) when the
 * proxy settings cannot be used.
 */
export function chooseBackendRoute(backend: KioskConfig['backend'], backendUrl: URL, env: NodeJS.ProcessEnv): BackendRoute {
  const config = backend.proxy;
  const fileAuthorization = config.credentialsFile === undefined ? undefined : credentialsFromFile(config.credentialsFile);
  let chosen: { url: URL; authorization: string | undefined; source: BackendProxy['source'] } | undefined;
  if (config.url !== undefined) {
    chosen = { url: new URL(config.url), authorization: fileAuthorization, source: 'backend.proxy.url' };
  } else if (config.useEnvironment) {
    const secure = backendUrl.protocol === 'https:';
    const names = secure ? ['HTTPS_PROXY', 'https_proxy'] : ['HTTP_PROXY', 'http_proxy'];
    const text = envValue(env, ...names);
    if (text !== undefined) {
      const variable = names.find((n) => envValue(env, n) !== undefined) ?? names[0] ?? 'HTTPS_PROXY';
      const parsed = environmentProxy(text, variable);
      chosen = { url: parsed.url, authorization: fileAuthorization ?? parsed.authorization, source: 'environment' };
    }
  }
  if (chosen === undefined) return { proxy: undefined, bypass: undefined };
  const { entries, list } = noProxyEntries(config, env);
  const entry = matchingNoProxyEntry(backendUrl, entries);
  if (entry !== undefined) return { proxy: undefined, bypass: { proxy: chosen.url.origin, proxySource: chosen.source, entry, list } };
  // Only an https:// proxy has a certificate to check; for an http:// one the key has nothing to apply to.
  const custom =
    chosen.url.protocol === 'https:' && config.caFile !== undefined ? readCaBundle(config.caFile, undefined, 'backend.proxy.caFile') : [];
  return { proxy: { ...chosen, ca: custom.length === 0 ? undefined : [...rootCertificates, ...custom] }, bypass: undefined };
}

/** The proxy to reach `backendUrl` through, or undefined to connect directly (see {@link chooseBackendRoute}). */
export function resolveBackendProxy(backend: KioskConfig['backend'], backendUrl: URL, env: NodeJS.ProcessEnv): BackendProxy | undefined {
  return chooseBackendRoute(backend, backendUrl, env).proxy;
}

/** What the log may say about a proxy: its origin and where it was configured. */
export function proxyForLog(proxy: BackendProxy | undefined): { proxy: string; proxySource: string } | Record<string, never> {
  return proxy === undefined ? {} : { proxy: proxy.url.origin, proxySource: proxy.source };
}

/**
 * Which part of reaching the proxy failed, before it opened the tunnel:
 * - `unreachable`: no connection to it (refused, no route, timed out connecting);
 * - `unresolved`: its host name does not resolve;
 * - `tls`: an https:// proxy's certificate or TLS handshake;
 * - `closed`: it closed or reset the connection before answering the CONNECT;
 * - `refused`: it answered the CONNECT with another status than 200 (`status`);
 * - `timeout`: no tunnel within the kiosk's time limit.
 */
export type ProxyFailureStage = 'unreachable' | 'unresolved' | 'tls' | 'closed' | 'refused' | 'timeout';

/** Raised by the tunnel wrappers (proxy-tunnel.ts) for any failure before the proxy opened the tunnel. */
export class ProxyTunnelError extends Error {
  override readonly name = 'ProxyTunnelError';
  /** Not the cause's code: undici treats some codes (ERR_TLS_CERT_ALTNAME_INVALID, UND_ERR_SOCKET) specially. */
  readonly code = 'ERR_KIOSK_PROXY_TUNNEL';
  constructor(
    readonly stage: ProxyFailureStage,
    /** The system or TLS error code of the cause (ECONNREFUSED, ENOTFOUND, …), when it has one that looks like one. */
    readonly causeCode: string | undefined,
    /** The proxy's answer to the CONNECT (stage `refused`). */
    readonly status?: number,
  ) {
    super(
      `proxy tunnel failed: ${stage}${status === undefined ? '' : ` (HTTP ${status})`}${causeCode === undefined ? '' : ` (${causeCode})`}`,
    );
  }
}

const UNRESOLVED = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'ETIMEDOUT',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The first code in an error's cause chain that looks like a system or TLS error code. */
function errorCode(e: unknown): string | undefined {
  let current: unknown = e;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const code = 'code' in current ? current.code : undefined;
    if (typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code)) return code;
    current = 'cause' in current ? current.cause : undefined;
  }
  return undefined;
}

/** A failure before the tunnel opened, as the proxy's: which stage, from the cause's code. */
export function proxyTunnelFailure(e: unknown): ProxyTunnelError {
  if (e instanceof ProxyTunnelError) return e;
  const code = errorCode(e);
  if (code === undefined) return new ProxyTunnelError('closed', undefined);
  if (UNRESOLVED.has(code)) return new ProxyTunnelError('unresolved', code);
  if (UNREACHABLE.has(code)) return new ProxyTunnelError('unreachable', code);
  if (isTlsFailureCode(code)) return new ProxyTunnelError('tls', code);
  return new ProxyTunnelError('closed', code);
}

/** The proxy's failure in an error's cause chain (undici wraps what the connector raised), if it is one. */
export function findProxyTunnelError(e: unknown): ProxyTunnelError | undefined {
  let current: unknown = e;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof ProxyTunnelError) return current;
    current = current.cause;
  }
  return undefined;
}

/**
 * Staff words for a proxy's failure, naming the proxy by its origin (never credentials) and the cause's
 * code. 502, 503 and 504 are the proxy saying it could not reach the backend: the words say so, since
 * then the backend (or the network behind the proxy) is what is down.
 */
export function describeProxyFailure(proxy: BackendProxy, failure: ProxyTunnelError, timeoutMs: number): string {
  const origin = proxy.url.origin;
  const code = failure.causeCode === undefined ? '' : ` (${failure.causeCode})`;
  switch (failure.stage) {
    case 'unreachable':
      return `the proxy ${origin} cannot be reached${code}`;
    case 'unresolved':
      return `the proxy ${origin} cannot be reached: its host name does not resolve${code}`;
    case 'tls':
      return describeProxyTlsFailure(failure.causeCode ?? '', origin) ?? `the TLS handshake with the proxy ${origin} failed${code}`;
    case 'closed':
      return `the proxy ${origin} closed the connection before opening the tunnel${code}`;
    case 'timeout':
      return `the proxy ${origin} did not open the tunnel within ${timeoutMs} ms`;
    case 'refused':
      return describeProxyRefusal(origin, failure.status ?? 0, proxy.source);
  }
}

function describeProxyRefusal(origin: string, status: number, source: BackendProxy['source']): string {
  if (status === 407) {
    const where =
      source === 'environment' ? 'the user and password of HTTPS_PROXY, or backend.proxy.credentialsFile' : 'backend.proxy.credentialsFile';
    return `the proxy ${origin} asked for credentials (HTTP 407): check ${where}`;
  }
  if (status === 403)
    return `the proxy ${origin} does not allow this backend (HTTP 403): ask for the backend's host and port to be allowed`;
  if (status === 502 || status === 503 || status === 504)
    return `the proxy ${origin} cannot reach the backend (HTTP ${status} from the proxy)`;
  return `the proxy ${origin} refused the tunnel to the backend (HTTP ${status})`;
}

/**
 * A proxy failure that only a configuration change fixes, so retrying soon is pointless: the proxy's
 * certificate, or a 4xx refusal (credentials, a policy not allowing the backend) other than 408 and 429.
 * Unreachable, unresolved, closed, timed out and 5xx (the proxy could not reach the backend) pass.
 */
export function proxyFailureIsConfiguration(failure: {
  readonly status?: number | undefined;
  readonly proxyStage?: ProxyFailureStage | undefined;
}): boolean {
  if (failure.proxyStage === 'tls') return true;
  const status = failure.status;
  return failure.proxyStage === 'refused' && status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
}
