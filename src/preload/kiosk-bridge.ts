/**
 * The page's `window.kiosk`: one function per intent of the IPC contract plus `onState`, and nothing else
 * (electronjs.org/docs/latest/tutorial/security #20). The page never sees `ipcRenderer`, an event object
 * or a channel name: every function is a closure over a fixed channel.
 *
 * Replies come in main's envelope (src/common/ipc-reply.ts) and are unwrapped here into a result or a
 * rejected Error whose message starts with the error's code (`invalid_args: …`), which survives the
 * context bridge. The screen validates results and states itself (`createKioskApiClient`).
 *
 * Imports: the contract and the envelope only (both import nothing), so the sandboxed preload bundle
 * stays a few kilobytes.
 */
import type { IpcRenderer, IpcRendererEvent } from 'electron';
import { IPC_INTENT_NAMES, intentChannel, STATE_CHANNEL, STATE_REQUEST_CHANNEL, type IpcIntentName } from '../common/ipc-contract.js';
import { unwrapIpcReply } from '../common/ipc-reply.js';

export type StateListener = (state: unknown) => void;

export type KioskBridge = { readonly [K in IpcIntentName]: (args?: unknown) => Promise<unknown> } & {
  readonly onState: (listener: StateListener) => () => void;
};

export type BridgeIpc = Pick<IpcRenderer, 'invoke' | 'on' | 'removeListener'>;

export function createKioskBridge(ipc: BridgeIpc): KioskBridge {
  const api: Record<string, unknown> = {};
  for (const intent of IPC_INTENT_NAMES) {
    const channel = intentChannel(intent);
    // Exactly one argument goes over: whatever else the page passes stays in the page.
    api[intent] = async (args?: unknown): Promise<unknown> => unwrapIpcReply(await ipc.invoke(channel, args ?? {}), intent);
  }

  // One IPC subscription however many listeners the page adds; each listener has its own record of
  // whether a push reached it, so the current state fetched at subscription never overwrites a newer one.
  const listeners = new Map<number, { listener: StateListener; pushed: boolean }>();
  let nextId = 0;
  const deliver = (entry: { listener: StateListener }, state: unknown): void => {
    try {
      entry.listener(state);
    } catch {
      // A throwing listener must not stop the others.
    }
  };
  const onPush = (_event: IpcRendererEvent, state: unknown): void => {
    for (const entry of [...listeners.values()]) {
      entry.pushed = true;
      deliver(entry, state);
    }
  };

  api.onState = (listener: StateListener): (() => void) => {
    if (typeof listener !== 'function') throw new TypeError('kiosk.onState takes a function');
    const id = nextId++;
    const entry = { listener, pushed: false };
    if (listeners.size === 0) ipc.on(STATE_CHANNEL, onPush);
    listeners.set(id, entry);
    void ipc.invoke(STATE_REQUEST_CHANNEL).then(
      (reply: unknown) => {
        if (!listeners.has(id) || entry.pushed) return;
        let state: unknown;
        try {
          state = unwrapIpcReply(reply, 'onState');
        } catch {
          return; // the next push brings the state
        }
        deliver(entry, state);
      },
      () => undefined,
    );
    return () => {
      if (!listeners.delete(id)) return;
      if (listeners.size === 0) ipc.removeListener(STATE_CHANNEL, onPush);
    };
  };
  return api as KioskBridge;
}
