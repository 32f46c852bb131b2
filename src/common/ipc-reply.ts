/**
 * The envelope every Electron IPC reply travels in, main → preload. `ipcMain.handle` turns a thrown error
 * into a rejection whose type and fields are lost on the way (only a message survives), so main never
 * throws for an intent: it answers `{ ok: false, error: { code, message } }` and the preload turns that
 * back into a rejected `Error` carrying the code.
 *
 * Free of imports, like `ipc-contract.ts`: the sandboxed preload bundles this file and must stay tiny.
 */

export interface IpcErrorBody {
  readonly code: string;
  readonly message: string;
}

export type IpcReply = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: IpcErrorBody };

export function ipcOk(result: unknown): IpcReply {
  return { ok: true, result };
}

export function ipcFailure(code: string, message: string): IpcReply {
  return { ok: false, error: { code, message } };
}

/**
 * A failed call as the page sees it. The message starts with the code (`invalid_args: …`), because the
 * context bridge copies an Error's message but drops its other fields; `code` is there for callers on the
 * preload's side of the bridge.
 */
export class IpcCallError extends Error {
  override readonly name = 'KioskApiError';
  constructor(
    readonly code: string,
    detail: string,
  ) {
    super(`${code}: ${detail}`);
  }
}

function isErrorBody(value: unknown): value is IpcErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const body = value as Record<string, unknown>;
  return typeof body.code === 'string' && typeof body.message === 'string';
}

/** The result of a reply, or an {@link IpcCallError} for a failure or for anything that is not a reply. */
export function unwrapIpcReply(reply: unknown, what: string): unknown {
  if (typeof reply === 'object' && reply !== null) {
    const r = reply as Record<string, unknown>;
    if (r.ok === true && 'result' in r) return r.result;
    if (r.ok === false && isErrorBody(r.error)) throw new IpcCallError(r.error.code.slice(0, 60), r.error.message.slice(0, 1_000));
  }
  throw new IpcCallError('invalid_message', `${what}: the kiosk sent a reply that is not an IPC envelope`);
}
