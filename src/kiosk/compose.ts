/**
 * Wires a Kiosk from a validated configuration and the device ports that exist: endpoints, session
 * client, WebSocket connector. Used by the CLI, the hosts and the tests, so all run the same assembly.
 */
import type { DevicePorts } from '../devices/ports.js';
import { backendEndpoints, type BackendEndpoints } from './backend-endpoints.js';
import { chooseBackendRoute, proxyForLog } from './backend-proxy.js';
import { ConfigError, type KioskConfig } from '../platform/config.js';
import { Kiosk } from './kiosk.js';
import type { Logger } from '../platform/log.js';
import { WsRelayConnector, type WsRelayConnectorOptions } from './relay-socket.js';
import type { RetryPolicy } from './retry-policy.js';
import { SessionClient } from './session-client.js';
import { buildTlsTrust } from './tls-trust.js';

export interface ComposeOptions {
  /** Wall clock for session ages (defaults to `Date.now`); tests move it to age sessions without waiting. */
  readonly now?: () => number;
  /** Where `HTTPS_PROXY` / `NO_PROXY` are read (defaults to `process.env`). */
  readonly env?: NodeJS.ProcessEnv;
  /** See {@link KioskDeps.readinessGate}: the counter's hosts turn it on; the headless CLI leaves it off. */
  readonly readinessGate?: boolean;
  /** A retry policy kept across rebuilds (the service's runtime), or one with a fixed random source (tests). */
  readonly retryPolicy?: RetryPolicy;
}

/** The session WebSocket's connector as the configuration says (the fleet bench builds one per kiosk too). */
export function relayConnectorFor(
  config: KioskConfig,
  endpoints: BackendEndpoints,
  extra: Pick<WsRelayConnectorOptions, 'tls' | 'proxy'> = {},
): WsRelayConnector {
  return new WsRelayConnector({
    endpoints,
    auth: config.backend.wsAuth,
    connectTimeoutMs: config.timeouts.connectMs,
    closeTimeoutMs: config.timeouts.socketCloseMs,
    maxMessageBytes: config.backend.maxMessageBytes,
    heartbeatMs: config.timeouts.heartbeatMs,
    pongMs: config.timeouts.pongMs,
    ...extra,
  });
}

export function createKiosk(config: KioskConfig, devices: DevicePorts, log: Logger, options: ComposeOptions = {}): Kiosk {
  const { baseUrl, apiKey } = config.backend;
  if (!baseUrl) throw new ConfigError('backend.baseUrl is not set (config file, MDL_KIOSK_BACKEND_URL or --backend)');
  if (!apiKey) throw new ConfigError('backend API key is not set (MDL_KIOSK_API_KEY, backend.apiKeyFile or --api-key-file)');
  const endpoints = backendEndpoints(baseUrl, { allowInsecure: config.backend.allowInsecure });
  // A CA file that cannot be read is a configuration error (the screen names backend.tls.caFile).
  const tls =
    config.backend.tls.caFile === undefined && config.backend.tls.pinSha256 === undefined ? undefined : buildTlsTrust(config.backend.tls);
  const { proxy, bypass } = chooseBackendRoute(config.backend, endpoints.sessionsUrl(), options.env ?? process.env);
  if (bypass) {
    // A proxy was set, yet the backend is reached directly: say so, or "why is it not using the proxy?" has no answer.
    log.info(
      {
        event: 'backend_proxy_bypassed',
        backend: endpoints.origin,
        proxy: bypass.proxy,
        proxySource: bypass.proxySource,
        noProxyEntry: bypass.entry,
        noProxyFrom: bypass.list,
      },
      `${bypass.list} sends the backend direct, not through the proxy`,
    );
  }
  const sessions = new SessionClient({
    endpoints,
    apiKey,
    ...(tls ? { tls } : {}),
    timeoutMs: config.timeouts.httpMs,
    createBody: config.backend.createSessionBody,
    ...(proxy ? { proxy } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  const connector = relayConnectorFor(config, endpoints, { ...(tls ? { tls } : {}), ...(proxy ? { proxy } : {}) });
  log.info(
    {
      event: 'kiosk_configured',
      backend: endpoints.origin,
      wsAuth: config.backend.wsAuth,
      profile: config.profile,
      customCas: tls?.summary.customCas ?? 0,
      pins: tls?.summary.pins ?? 0,
      ...proxyForLog(proxy),
    },
    'kiosk configured',
  );
  return new Kiosk({
    config,
    devices,
    sessions,
    connector,
    log,
    ...(options.now ? { now: options.now } : {}),
    ...(options.readinessGate ? { readinessGate: true } : {}),
    ...(options.retryPolicy ? { retryPolicy: options.retryPolicy } : {}),
  });
}
