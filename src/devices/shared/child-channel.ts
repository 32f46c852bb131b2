/**
 * A child process's side of its channel to the kiosk: Electron's `process.parentPort` in a utility
 * process, Node's IPC (`process.send`) under `fork`. Both structured-clone. Used by the radio process and
 * the built-in voice's.
 */
export interface ChildChannel<Out> {
  send(message: Out): void;
  onMessage(listener: (message: unknown) => void): void;
}

/** The channel to the parent in this process; throws when the process was not started by the kiosk. */
export function channelOfThisProcess<Out>(what: string): ChildChannel<Out> {
  const parentPort = (
    process as { parentPort?: { postMessage(m: unknown): void; on(event: 'message', l: (e: { data: unknown }) => void): void } }
  ).parentPort;
  if (parentPort) {
    return { send: (m) => parentPort.postMessage(m), onMessage: (l) => parentPort.on('message', (e) => l(e.data)) };
  }
  if (!process.send) throw new Error(`${what} must be started by the kiosk (no IPC channel)`);
  return {
    send: (m) => void process.send?.(m, undefined, undefined, () => undefined),
    onMessage: (l) => process.on('message', l),
  };
}
