/**
 * `KioskApi` over Electron IPC, main side. One `ipcMain.handle` per intent of the contract
 * (src/common/ipc-contract.ts) plus the state request, nothing else. Every call is checked before it is
 * dispatched (electronjs.org/docs/latest/tutorial/security #17):
 *  - the sender must be the main frame of the kiosk window's own web contents, showing `app://kiosk`
 *    (a subframe, another window or a page that navigated away is refused and `ipc_sender_rejected` is
 *    logged, without the payload);
 *  - the payload must be one argument whose JSON is at most MAX_API_MESSAGE_BYTES (`too_large`);
 * then `dispatchIntent` validates the arguments and the staff gate and runs the service, exactly as the
 * browser host does. Replies travel in the envelope of src/common/ipc-reply.ts (an error thrown by a
 * handler reaches the renderer with its message only).
 *
 * States are pushed to that window only (`webContents.send(STATE_CHANNEL, state)`), never after it is
 * destroyed or while it shows anything but the kiosk screen.
 */
import type { IpcMain, IpcMainInvokeEvent, WebContents, WebFrameMain } from 'electron';
import { IPC_INTENT_NAMES, intentChannel, STATE_CHANNEL, STATE_REQUEST_CHANNEL, type IpcIntentName } from '../common/ipc-contract.js';
import { ipcFailure, ipcOk, type IpcReply } from '../common/ipc-reply.js';
import { dispatchIntent, KioskApiError, MAX_API_MESSAGE_BYTES, type KioskApiHandlers, type ScreenState } from '../common/kiosk-api.js';
import type { Logger } from '../platform/log.js';
import { isAppUrl } from './app-origin.js';

/** What the IPC layer needs of the kiosk service. */
export type IpcService = KioskApiHandlers & {
  state(): ScreenState;
  onState(listener: (state: ScreenState) => void): () => void;
  staffUnlocked(): boolean;
};

export interface KioskIpcOptions {
  readonly ipcMain: Pick<IpcMain, 'handle' | 'removeHandler'>;
  /** The kiosk window's web contents: the only sender accepted and the only receiver of states. */
  readonly contents: WebContents;
  readonly service: IpcService;
  readonly log: Logger;
}

export interface KioskIpc {
  /** Every channel this registered. */
  readonly channels: readonly string[];
  dispose(): void;
}

export class IpcSenderError extends Error {
  override readonly name = 'IpcSenderError';
}

function sameFrame(a: WebFrameMain, b: WebFrameMain): boolean {
  return a === b || (a.processId === b.processId && a.frameToken === b.frameToken);
}

/** Why `event` does not come from the kiosk screen's main frame, or `null` when it does. */
export function senderProblem(event: Pick<IpcMainInvokeEvent, 'sender' | 'senderFrame'>, contents: WebContents): string | null {
  if (contents.isDestroyed()) return 'the kiosk window is gone';
  if (event.sender !== contents) return 'not the kiosk window';
  const frame = event.senderFrame;
  if (frame === null || frame.detached) return 'the sending frame is gone';
  if (frame.parent !== null || !sameFrame(frame, contents.mainFrame)) return 'not the main frame';
  if (!isAppUrl(frame.url)) return 'the frame is not at app://kiosk';
  return null;
}

/** The size of `args` as JSON, or why it has none (a function, a cycle, a BigInt…). */
function jsonLength(args: unknown): number | 'unserialisable' {
  try {
    const text = JSON.stringify(args ?? {}) as string | undefined;
    return text === undefined ? 'unserialisable' : Buffer.byteLength(text, 'utf8');
  } catch {
    return 'unserialisable';
  }
}

export function registerKioskIpc(options: KioskIpcOptions): KioskIpc {
  const { ipcMain, contents, service, log } = options;
  let disposed = false;

  const checkSender = (event: IpcMainInvokeEvent, channel: string): void => {
    const problem = disposed ? 'the IPC layer is closed' : senderProblem(event, contents);
    if (problem === null) return;
    log.warn(
      { event: 'ipc_sender_rejected', kind: channel.slice(0, 80), reason: problem },
      'an IPC call from outside the kiosk screen was refused',
    );
    // A rejection, not an envelope: whoever sent this is not our preload.
    throw new IpcSenderError(`refused: ${problem} (only the kiosk screen at app://kiosk may call the kiosk)`);
  };

  const runIntent = async (intent: IpcIntentName, payload: unknown[]): Promise<IpcReply> => {
    if (payload.length > 1) return ipcFailure('invalid_message', `${intent}: one argument object expected, got ${payload.length}`);
    const args = payload[0];
    const size = jsonLength(args);
    if (size === 'unserialisable') return ipcFailure('invalid_message', `${intent}: the arguments are not plain JSON data`);
    if (size > MAX_API_MESSAGE_BYTES)
      return ipcFailure('too_large', `${intent}: the arguments are larger than ${MAX_API_MESSAGE_BYTES} bytes`);
    try {
      return ipcOk(await dispatchIntent(service, intent, args, () => service.staffUnlocked()));
    } catch (e) {
      if (e instanceof KioskApiError) return ipcFailure(e.code, e.message);
      log.error({ event: 'ipc_intent_failed', kind: intent }, `an intent failed: ${e instanceof Error ? e.name : 'unknown'}`);
      return ipcFailure('internal', `${intent} failed inside the kiosk; see the diagnostics`);
    }
  };

  const channels: string[] = [];
  for (const intent of IPC_INTENT_NAMES) {
    const channel = intentChannel(intent);
    ipcMain.handle(channel, (event, ...payload: unknown[]) => {
      checkSender(event, channel);
      return runIntent(intent, payload);
    });
    channels.push(channel);
  }
  ipcMain.handle(STATE_REQUEST_CHANNEL, (event) => {
    checkSender(event, STATE_REQUEST_CHANNEL);
    return ipcOk(service.state());
  });
  channels.push(STATE_REQUEST_CHANNEL);

  const push = (state: ScreenState): void => {
    if (disposed || contents.isDestroyed()) return;
    // Only to the kiosk screen: never to whatever a (refused) navigation might have left in the window.
    if (!isAppUrl(contents.getURL())) return;
    contents.send(STATE_CHANNEL, state);
  };
  const unsubscribe = service.onState(push);

  const dispose = (): void => {
    if (disposed) return;
    disposed = true;
    unsubscribe();
    for (const channel of channels) ipcMain.removeHandler(channel);
  };
  contents.once('destroyed', dispose);
  return { channels, dispose };
}
