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

/**
 * Loads the `pcsclite` addon. It is an optional dependency (a machine without the PC/SC headers still
 * installs and runs the kiosk with other devices), so a missing or unbuilt addon is a clear error here.
 */
export function loadPcscliteBinding(): BindingFactory {
  const require = createRequire(import.meta.url);
  let loaded: unknown;
  try {
    loaded = require('pcsclite');
  } catch (e) {
    throw new PcscBindingUnavailableError(
      `the pcsclite native module is not available (${(e as Error).message.split('\n')[0] ?? ''}); ` +
        'install the PC/SC development files (Debian: libpcsclite-dev) and a compiler, then run npm ci again',
    );
  }
  if (typeof loaded !== 'function') throw new PcscBindingUnavailableError('the pcsclite module does not export a factory function');
  const factory = loaded as () => BindingContext;
  return () => factory();
}
