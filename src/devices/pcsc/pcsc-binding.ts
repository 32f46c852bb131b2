/**
 * The binding port of the PC/SC adapter: the slice of a PC/SC binding the adapter uses, typed narrowly so the
 * adapter is tested against a scripted double. The shape is event-driven — a context announces readers, a
 * reader reports status words and owns at most one card handle — and errors carry the SCARD code as
 * `(0x8010xxxx)` at the end of their message (`parseScardCode`).
 *
 * The kiosk's binding is `smartcard-binding.ts` (the N-API `smartcard` addon behind this port); why that
 * addon and not `pcsclite`, which this port was first modelled on: docs/packaging.md, "PC/SC binding".
 */
import { currentPlatform } from '../../platform/os.js';
import { errorText } from '../../common/error-text.js';

export type BindingCallbackError = Error | null | undefined;

/** One reader as the binding models it: a status monitor plus at most one card handle. */
export interface BindingReader {
  readonly name: string;
  /** The previous status word (the binding sets it after emitting `status`). */
  readonly state?: number;
  /** Whether the binding holds a card handle (stays true after the card left until it is disconnected, as in santigimeno/node-pcsclite `lib/pcsclite.js`). */
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
  transmit(
    data: Buffer,
    responseLength: number,
    protocol: number,
    callback: (error: BindingCallbackError, response?: Buffer) => void,
  ): void;
  close(): void;
}

/** One PC/SC context: announces readers, reports context failures. */
export interface BindingContext {
  on(event: 'reader', listener: (reader: BindingReader) => void): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  close(): void;
  /** Resolves once the context's native resources are released (bindings that can tell). */
  whenClosed?(): Promise<void>;
}

/**
 * Establishes a context; throws or rejects (e.g. `... (0x8010001D)`) when the service is not available. A
 * binding whose calls run on another thread answers asynchronously and may be disposed of.
 */
export type BindingFactory = (() => BindingContext | Promise<BindingContext>) & { readonly dispose?: () => void | Promise<void> };

/** A factory that answers on the calling thread (the addon itself, and test doubles). */
export type SyncBindingFactory = () => BindingContext;

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
  /** `linux-x64`, `darwin-arm64`, … */
  readonly platform: string;
}

export function currentRuntime(): NativeRuntime {
  // Typed loosely on purpose: Electron's typings declare `versions.electron` always present.
  const versions: Partial<Record<string, string>> = process.versions;
  const electron = versions.electron;
  return {
    modules: process.versions.modules,
    platform: `${currentPlatform()}-${process.arch}`,
    ...(electron === undefined ? {} : { electron }),
  };
}

/** Loader errors meaning "the addon is there but was built for another OS or CPU". */
const WRONG_BUILD =
  /invalid ELF header|wrong ELF class|Module did not self-register|not a valid Win32 application|wrong architecture|incompatible architecture|undefined symbol/i;

/**
 * A plain sentence for a failed load of a PC/SC addon (`addon`: its package name). The kiosk's addon is an
 * N-API build, which every Node and Electron ABI accepts, so what remains are an addon that was never built
 * (no PC/SC headers or compiler at `npm ci`), one built for another OS or CPU, and — should a non-N-API
 * build ever be put in its place — an ABI mismatch ("was compiled against a different Node.js version using
 * NODE_MODULE_VERSION x. This version of Node.js requires NODE_MODULE_VERSION y", nodejs.org/api/addons.html).
 */
export function pcscAddonLoadFailureMessage(addon: string, error: unknown, runtime: NativeRuntime = currentRuntime()): string {
  const text = errorText(error);
  const runtimeName = runtime.electron === undefined ? 'Node' : `Electron ${runtime.electron}`;
  const versions = [...text.matchAll(/NODE_MODULE_VERSION\s+(\d+)/g)].map((m) => m[1]);
  if (versions.length > 0 || /compiled against a different Node\.js version/i.test(text)) {
    const built = versions[0] ?? 'unknown';
    const needed = versions[1] ?? runtime.modules;
    return `${addon} is not an N-API build: it was built for NODE_MODULE_VERSION ${built}, ${runtimeName} needs ${needed}; reinstall it with npm ci (the package's own build is N-API)`;
  }
  const wrongBuild = WRONG_BUILD.exec(text);
  if (wrongBuild !== null) {
    return `${addon}'s native addon does not fit this machine (${wrongBuild[0]}; ${runtimeName} on ${runtime.platform}): build the package on a machine of this OS and CPU`;
  }
  return (
    `the ${addon} native module is not available (${text.split('\n')[0] ?? ''}); ` +
    'install the PC/SC development files (Debian: libpcsclite-dev) and a C++ compiler, then run npm ci again'
  );
}
