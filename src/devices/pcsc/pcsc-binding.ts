/**
 * The slice of the `pcsclite` native binding (santigimeno/node-pcsclite 1.0.1) the adapter uses, typed
 * narrowly so the adapter is tested against a scripted double and loads the real addon only at run time.
 *
 * Why `pcsclite` and not `@pokusew/pcsclite` / `nfc-pcsc` (reference pcsc.md §7): it is context-aware (it
 * loads in a worker thread or an Electron utility process) and throws `SCardEstablishContext ... (0x8010001D)`
 * when the service is down, where the other spins at 100 % CPU with the event loop frozen.
 */
import { createRequire } from 'node:module';

export type BindingCallbackError = Error | null | undefined;

/** One reader as the binding models it: a status monitor plus at most one card handle. */
export interface BindingReader {
  readonly name: string;
  /** The previous status word (the binding sets it after emitting `status`). */
  readonly state?: number;
  /** Whether the binding holds a card handle (stays true after the card left, pcsc.md pitfall 7). */
  readonly connected: boolean;
  readonly SCARD_SHARE_SHARED: number;
  readonly SCARD_SHARE_EXCLUSIVE: number;
  readonly SCARD_PROTOCOL_T0: number;
  readonly SCARD_PROTOCOL_T1: number;
  readonly SCARD_LEAVE_CARD: number;
  on(event: 'status', listener: (status: { readonly state: number; readonly atr?: Uint8Array }) => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  connect(options: { share_mode: number; protocol: number }, callback: (error: BindingCallbackError, protocol?: number) => void): void;
  disconnect(disposition: number, callback: (error: BindingCallbackError) => void): void;
  transmit(data: Buffer, responseLength: number, protocol: number, callback: (error: BindingCallbackError, response?: Buffer) => void): void;
  close(): void;
}

/** One PC/SC context: announces readers, reports context failures. */
export interface BindingContext {
  on(event: 'reader', listener: (reader: BindingReader) => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  close(): void;
}

/** Establishes a context; throws (e.g. `... (0x8010001D)`) when the service is not available. */
export type BindingFactory = () => BindingContext;

/** Status word bits (pcsclite.h / winscard.h; identical on every OS). */
export const ReaderState = {
  CHANGED: 0x0002,
  UNKNOWN: 0x0004,
  UNAVAILABLE: 0x0008,
  EMPTY: 0x0010,
  PRESENT: 0x0020,
  EXCLUSIVE: 0x0080,
  INUSE: 0x0100,
  MUTE: 0x0200,
} as const;

/** pcsc-lite and Windows count card insertions and removals in the status word's upper 16 bits. */
export const eventCounter = (state: number): number => (state >>> 16) & 0xffff;

export class PcscBindingUnavailableError extends Error {
  override readonly name = 'PcscBindingUnavailableError';
}

/** What the process runs on, for naming a native-module mismatch (process.versions by default). */
export interface NativeRuntime {
  /** NODE_MODULE_VERSION of this runtime (`process.versions.modules`). */
  readonly modules: string;
  /** Set when running in Electron (`process.versions.electron`). */
  readonly electron?: string;
}

function currentRuntime(): NativeRuntime {
  // Typed loosely on purpose: Electron's typings declare `versions.electron` always present.
  const versions: Partial<Record<string, string>> = process.versions;
  const electron = versions.electron;
  return { modules: process.versions.modules, ...(electron === undefined ? {} : { electron }) };
}

/** Loader errors meaning "the addon is there but was built for another runtime, OS or CPU". */
const WRONG_BUILD = /invalid ELF header|wrong ELF class|Module did not self-register|not a valid Win32 application|wrong architecture|incompatible architecture|undefined symbol/i;

/**
 * A plain sentence for a failed `require('pcsclite')`. The common packaging mistake is an addon built for
 * plain Node (by `npm ci`) loaded by Electron, whose ABI differs: Node then throws "was compiled against
 * a different Node.js version using NODE_MODULE_VERSION x. This version of Node.js requires
 * NODE_MODULE_VERSION y" (nodejs.org/api/addons.html; electronjs.org/docs/latest/tutorial/using-native-node-modules).
 */
export function pcscliteLoadFailureMessage(error: unknown, runtime: NativeRuntime = currentRuntime()): string {
  const text = error instanceof Error ? error.message : String(error);
  const rebuild = runtime.electron === undefined ? '`npm rebuild pcsclite`' : '`npx @electron/rebuild -f -w pcsclite`';
  const versions = [...text.matchAll(/NODE_MODULE_VERSION\s+(\d+)/g)].map((m) => m[1]);
  const runtimeName = runtime.electron === undefined ? 'Node' : `Electron ${runtime.electron}`;
  if (versions.length > 0 || /compiled against a different Node\.js version/i.test(text)) {
    const built = versions[0] ?? 'unknown';
    const needed = versions[1] ?? runtime.modules;
    return `pcsclite was built for a different Node/Electron ABI (NODE_MODULE_VERSION ${built}, needs ${needed} for ${runtimeName}): rebuild it with ${rebuild}`;
  }
  const wrongBuild = WRONG_BUILD.exec(text);
  if (wrongBuild !== null) {
    return `pcsclite's native addon does not fit this runtime (${wrongBuild[0]}; ${runtimeName}, NODE_MODULE_VERSION ${runtime.modules}): rebuild it with ${rebuild}`;
  }
  return (
    `the pcsclite native module is not available (${text.split('\n')[0] ?? ''}); ` +
    'install the PC/SC development files (Debian: libpcsclite-dev) and a compiler, then run npm ci again'
  );
}

/**
 * Loads the `pcsclite` addon. It is an optional dependency (a machine without the PC/SC headers still
 * installs and runs the kiosk with other devices), so a missing, unbuilt or wrongly built addon is a clear
 * error here (`load` is replaceable for tests).
 */
export function loadPcscliteBinding(load: (id: string) => unknown = createRequire(import.meta.url)): BindingFactory {
  let loaded: unknown;
  try {
    loaded = load('pcsclite');
  } catch (e) {
    throw new PcscBindingUnavailableError(pcscliteLoadFailureMessage(e));
  }
  if (typeof loaded !== 'function') throw new PcscBindingUnavailableError('the pcsclite module does not export a factory function');
  const factory = loaded as () => BindingContext;
  return () => factory();
}
