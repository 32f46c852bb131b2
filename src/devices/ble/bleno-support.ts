/**
 * Small helpers for the bleno adapter: UUID spelling, availability from bleno's state, and waiting for
 * one of bleno's events without leaving a listener behind.
 */
import type { EventEmitter } from 'node:events';
import type { Availability } from '../ports.js';
import { abortedError } from '../shared/abort.js';
import type { BlenoState } from './bleno-types.js';
import { currentPlatform, osCapabilities } from '../../platform/os.js';

const HEX = /^[0-9a-f]+$/;

/**
 * bleno strips dashes but keeps the case, and its hci GATT compares UUID strings exactly (docs/ble-libraries.md §4):
 * hand it lower case without dashes. Throws on anything that is not a 16-, 32- or 128-bit UUID.
 */
export function blenoUuid(uuid: string): string {
  const s = uuid.replaceAll('-', '').toLowerCase();
  if (!HEX.test(s) || (s.length !== 4 && s.length !== 8 && s.length !== 32)) throw new Error(`not a UUID: ${JSON.stringify(uuid)}`);
  return s;
}

/** The bleno binding underneath: raw HCI (Linux, and Windows over a USB dongle) or CoreBluetooth. */
export type BlenoBindingKind = 'hci' | 'mac';

/**
 * The binding bleno's index picks (lib/resolve-bindings.js:18-33): CoreBluetooth on macOS unless an HCI
 * UART is asked for, raw HCI everywhere else (on Windows through a USB dongle, bluetooth-hci-socket's
 * index.js:20-30).
 */
export function blenoBindingKind(platform: NodeJS.Platform = currentPlatform(), env: NodeJS.ProcessEnv = process.env): BlenoBindingKind {
  const uart = Boolean(env.BLUETOOTH_HCI_SOCKET_UART_PORT) || Boolean(env.BLUETOOTH_HCI_SOCKET_FORCE_UART);
  return uart ? 'hci' : osCapabilities(platform).blenoBinding;
}

/**
 * Availability for a bleno state on a binding. By binding, not by `bleno.platform`: the mac binding never
 * reports one (bleno.js keeps 'unknown'; lib/mac/src/callbacks.mm has no platform event).
 */
export function blenoAvailability(state: BlenoState, binding: BlenoBindingKind): Availability {
  switch (state) {
    case 'poweredOn':
      return { usable: true };
    case 'poweredOff':
      return { usable: false, reason: 'powered_off', detail: 'Bluetooth is switched off' };
    case 'resetting':
      return { usable: false, reason: 'starting', detail: 'Bluetooth adapter is resetting' };
    case 'unauthorized':
      return { usable: false, reason: 'unauthorized', detail: 'no permission to use the Bluetooth adapter as a peripheral' };
    case 'unsupported':
      // hci: no adapter, or a kernel without Bluetooth (docs/ble-libraries.md §1); CoreBluetooth: this Mac cannot be a peripheral.
      return binding === 'mac'
        ? { usable: false, reason: 'unsupported_platform', detail: 'this computer cannot act as a BLE peripheral' }
        : { usable: false, reason: 'no_adapter', detail: 'no Bluetooth LE adapter usable as a peripheral' };
    case 'unknown':
      return { usable: false, reason: 'starting', detail: 'Bluetooth adapter state not known yet' };
  }
}

export interface AwaitEventOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
  /** Label for errors. */
  readonly what: string;
  /** Only an event whose arguments pass counts (e.g. the `disconnect` of one handle). */
  readonly filter?: (args: unknown[]) => boolean;
}

/**
 * Calls `trigger` and resolves with the arguments of the next `event` (rejects on `errorEvent`, abort or
 * timeout). Own listeners instead of bleno's callback arguments: those stay registered (`onceExclusive`)
 * when a wait is given up, and nothing would remove them.
 */
export function awaitEvent(
  emitter: EventEmitter,
  event: string,
  errorEvent: string | undefined,
  trigger: () => void,
  options: AwaitEventOptions,
): Promise<unknown[]> {
  const { signal, timeoutMs, what, filter } = options;
  if (signal?.aborted) return Promise.reject(abortedError(what));
  return new Promise<unknown[]>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      emitter.removeListener(event, onEvent);
      if (errorEvent) emitter.removeListener(errorEvent, onError);
      signal?.removeEventListener('abort', onAbort);
      if (timer) clearTimeout(timer);
    };
    const onEvent = (...args: unknown[]): void => {
      if (filter && !filter(args)) return;
      done();
      resolve(args);
    };
    const onError = (error: unknown): void => {
      done();
      reject(error instanceof Error ? error : new Error(`${what}: ${String(error)}`));
    };
    const onAbort = (): void => {
      done();
      reject(abortedError(what));
    };
    emitter.on(event, onEvent);
    if (errorEvent) emitter.on(errorEvent, onError);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (timeoutMs !== undefined) timer = setTimeout(() => onError(new Error(`${what}: no answer within ${timeoutMs} ms`)), timeoutMs);
    try {
      trigger();
    } catch (e) {
      onError(e);
    }
  });
}
