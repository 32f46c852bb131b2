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
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { ConfigError, type KioskConfig } from '../platform/config.js';
import { readCaBundle } from './tls-trust.js';

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
  if (config.noProxy !== undefined) return { entries: config.noProxy.map((e) => e.trim().toLowerCase()).filter((e) => e !== ''), list: 'backend.proxy.noProxy' };
  const variable = config.useEnvironment ? (['NO_PROXY', 'no_proxy'] as const).find((n) => envValue(env, n) !== undefined) : undefined;
  const text = variable === undefined ? undefined : envValue(env, variable);
  return {
    entries: text === undefined ? [] : text.split(/[\s,]+/).map((e) => e.trim().toLowerCase()).filter((e) => e !== ''),
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
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${variable}: only http:// and https:// proxies are supported`);
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
  const custom = chosen.url.protocol === 'https:' && config.caFile !== undefined ? readCaBundle(config.caFile, undefined, 'backend.proxy.caFile') : [];
  return { proxy: { ...chosen, ca: custom.length === 0 ? undefined : [...rootCertificates, ...custom] }, bypass: undefined };
}

/** The proxy to reach `backendUrl` through, or undefined to connect directly (see {@link chooseBackendRoute}). */
export function resolveBackendProxy(backend: KioskConfig['backend'], backendUrl: URL, env: NodeJS.ProcessEnv): BackendProxy | undefined {
  return chooseBackendRoute(backend, backendUrl, env).proxy;
}

/**
 * The HTTP status with which the proxy refused to open the tunnel, found in a failed request's cause chain
 * (undici: "Proxy response (407) !== 200 when HTTP Tunneling"), or undefined when it was not that.
 */
export function proxyRefusalStatus(e: unknown): number | undefined {
  let current: unknown = e;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const match = /^Proxy response \((\d{3})\)/.exec(current.message);
    if (match) return Number(match[1]);
    current = current.cause;
  }
  return undefined;
}

/** Staff words for a proxy that refused the tunnel. */
export function describeProxyRefusal(status: number): string {
  if (status === 407) return 'the proxy asked for credentials (HTTP 407): check backend.proxy.credentialsFile or the user and password of HTTPS_PROXY';
  if (status === 403) return 'the proxy does not allow this backend (HTTP 403): ask for the backend\'s host and port to be allowed';
  return `the proxy refused the tunnel to the backend (HTTP ${status})`;
}

/** What the log may say about a proxy: its origin and where it was configured. */
export function proxyForLog(proxy: BackendProxy | undefined): { proxy: string; proxySource: string } | Record<string, never> {
  return proxy === undefined ? {} : { proxy: proxy.url.origin, proxySource: proxy.source };
}
