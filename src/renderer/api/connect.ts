/**
 * Chooses how the screen reaches the kiosk: the Electron preload's `window.kiosk` when present, else the
 * browser host's WebSocket. Either way the screen gets a `KioskApi` built by `createKioskApiClient`, so
 * every result and state is validated here before anything renders it.
 */
import { createKioskApiClient, INTENT_NAMES, type IntentName, type KioskApi } from '../../common/kiosk-api.js';
import { apiUrlFor, SocketTransport, tokenFromHash, type ConnectionStatus, type SocketFactory } from './socket-transport.js';

export interface KioskConnection {
  readonly api: KioskApi;
  /** Connection to the kiosk; the preload's is always open. */
  readonly onStatus: (listener: (status: ConnectionStatus) => void) => () => void;
  readonly stop: () => void;
}

type PreloadKiosk = Record<IntentName, (args: unknown) => Promise<unknown>> & {
  onState: (listener: (state: unknown) => void) => () => void;
};

/** The preload's bridge, if it looks like one (every intent and `onState` are functions). */
export function preloadKiosk(scope: object): PreloadKiosk | null {
  const candidate: unknown = (scope as { kiosk?: unknown }).kiosk;
  if (typeof candidate !== 'object' || candidate === null) return null;
  const record = candidate as Record<string, unknown>;
  if (typeof record.onState !== 'function') return null;
  for (const intent of INTENT_NAMES) if (typeof record[intent] !== 'function') return null;
  return candidate as PreloadKiosk;
}

export function connectViaPreload(bridge: PreloadKiosk): KioskConnection {
  let problem: string | null = null;
  const listeners = new Set<(status: ConnectionStatus) => void>();
  const api = createKioskApiClient({
    call: (intent, args) => bridge[intent](args),
    onState: (listener) => bridge.onState(listener),
    onInvalidState: (error) => {
      problem = error.message;
      for (const l of listeners) l({ kind: 'open', lastProblem: problem });
    },
  });
  return {
    api,
    onStatus: (listener) => {
      listeners.add(listener);
      listener({ kind: 'open', lastProblem: problem });
      return () => listeners.delete(listener);
    },
    stop: () => undefined,
  };
}

export function connectViaSocket(options: {
  url: string;
  token: string;
  createSocket?: SocketFactory;
  probeHost?: () => Promise<boolean>;
}): KioskConnection {
  const transport = new SocketTransport(options);
  const api = createKioskApiClient({
    call: (intent, args) => transport.call(intent, args),
    onState: (listener) => transport.onState(listener),
    onInvalidState: (error) => {
      transport.reportProblem(error.message);
    },
  });
  transport.start();
  return { api, onStatus: (listener) => transport.onStatus(listener), stop: () => transport.stop() };
}

/** What the page uses: the preload if there is one, else the host's socket with the token from the URL. */
export function connectToKiosk(win: Window): KioskConnection | { readonly missingToken: true } {
  const bridge = preloadKiosk(win);
  if (bridge) return connectViaPreload(bridge);
  const token = tokenFromHash(win.location.hash);
  if (!token) return { missingToken: true };
  // The page's own address answers when the host runs: then a socket it keeps refusing means a wrong token.
  const probeHost = (): Promise<boolean> =>
    fetch(new URL('./', win.location.href), { method: 'HEAD', cache: 'no-store', credentials: 'omit' }).then(
      (response) => response.ok,
      () => false,
    );
  return connectViaSocket({ url: apiUrlFor(win.location), token, probeHost });
}
