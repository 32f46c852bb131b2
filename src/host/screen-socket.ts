/**
 * One screen connected over the WebSocket: a `KioskApi` of its own (a staff session opened here is this
 * socket's only, and ends with it), the screen state pushed as it changes, and every message validated and
 * dispatched. A bad message gets a clear error and the connection stays; a flood closes it (1008); a screen
 * that stops reading its socket is dropped rather than buffered without bound.
 */
import type { RawData, WebSocket } from 'ws';
import {
  ClientMessage,
  dispatchIntent,
  KioskApiError,
  type ApiErrorBody,
  type HostMessage,
  type KioskApiHandlers,
  type ScreenState,
} from '../common/kiosk-api.js';
import type { Logger } from '../platform/log.js';

/** One connected screen: the API with a staff session of its own (KioskService.connectScreen). */
export type HostedScreen = KioskApiHandlers & {
  onState(listener: (state: ScreenState) => void): () => void;
  staffUnlocked(): boolean;
  close(): void;
};

const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

export interface ScreenSocketOptions {
  /** Opens this socket's own screen of the service. */
  readonly connectScreen: () => HostedScreen;
  /** Calls per second before the socket is closed with 1008. */
  readonly maxCallsPerSecond: number;
  /** The open sockets: this one is added, and removed when it closes (the host's stop closes the rest). */
  readonly connections: Set<WebSocket>;
  readonly log: Logger;
}

function errorBody(code: ApiErrorBody['code'], message: string): ApiErrorBody {
  return { code, message: message.slice(0, 1_000) };
}

function send(ws: WebSocket, message: HostMessage | string, log: Logger): void {
  if (ws.readyState !== ws.OPEN) return;
  if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
    log.warn({ event: 'host_socket_stalled' }, 'a screen stopped reading its socket; dropping it');
    ws.terminate();
    return;
  }
  ws.send(typeof message === 'string' ? message : JSON.stringify(message));
}

/** Serves one screen on a socket that passed the gate, until it closes. */
export function serveScreen(ws: WebSocket, options: ScreenSocketOptions): void {
  const { connections, log } = options;
  const maxCalls = options.maxCallsPerSecond;
  connections.add(ws);
  log.info({ event: 'host_screen_connected', count: connections.size }, 'a screen connected');
  let windowStart = Date.now();
  let calls = 0;
  let closing = false;
  // Each socket is a screen of its own: a staff session opened here is this socket's only, and ends
  // with it (another tab, or another program holding the token, sees the staff screens locked).
  const screen = options.connectScreen();
  const unsubscribe = screen.onState((state) => send(ws, JSON.stringify({ type: 'state', state } satisfies HostMessage), log));
  ws.on('close', () => {
    connections.delete(ws);
    unsubscribe();
    screen.close();
    log.info({ event: 'host_screen_disconnected', count: connections.size }, 'a screen disconnected');
  });
  ws.on('error', (e: Error & { code?: string }) => {
    // ws closes the socket itself (1009 for a frame over maxPayload, 1002 for a protocol error).
    log.warn({ event: 'host_socket_error', code: e.code ?? 'unknown' }, 'a screen socket failed');
  });
  ws.on('message', (data: RawData, isBinary: boolean) => {
    if (closing) return;
    const now = Date.now();
    if (now - windowStart >= 1_000) {
      windowStart = now;
      calls = 0;
    }
    if (++calls > maxCalls) {
      closing = true;
      log.warn({ event: 'host_socket_flood', count: maxCalls }, 'a screen sent too many messages; closing it');
      ws.close(1008, `more than ${maxCalls} messages per second`);
      return;
    }
    if (isBinary) {
      send(ws, { type: 'refused', error: errorBody('invalid_message', 'binary frames are not accepted: send JSON text') }, log);
      return;
    }
    void handleText(
      ws,
      screen,
      Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]).toString('utf8'),
      log,
    );
  });
}

async function handleText(ws: WebSocket, screen: HostedScreen, text: string, log: Logger): Promise<void> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    send(ws, { type: 'refused', error: errorBody('invalid_message', 'the message is not JSON') }, log);
    return;
  }
  const parsed = ClientMessage.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const message = `the message is not a call: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'}`;
    const id = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>).id : undefined;
    if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0)
      send(ws, { type: 'reply', id, ok: false, error: errorBody('invalid_message', message) }, log);
    else send(ws, { type: 'refused', error: errorBody('invalid_message', message) }, log);
    return;
  }
  const { id, intent, args } = parsed.data;
  try {
    const result = await dispatchIntent(screen, intent, args, () => screen.staffUnlocked());
    send(ws, { type: 'reply', id, ok: true, result }, log);
  } catch (e) {
    if (e instanceof KioskApiError) {
      send(ws, { type: 'reply', id, ok: false, error: errorBody(e.code, e.message) }, log);
    } else {
      log.error(
        { event: 'host_intent_failed', code: intent.slice(0, 60).replace(/[^A-Za-z0-9_]/g, '') },
        `an intent failed: ${e instanceof Error ? e.name : 'unknown'}`,
      );
      send(
        ws,
        {
          type: 'reply',
          id,
          ok: false,
          error: errorBody('internal', `${intent.slice(0, 60)} failed inside the kiosk; see the diagnostics`),
        },
        log,
      );
    }
  }
}
