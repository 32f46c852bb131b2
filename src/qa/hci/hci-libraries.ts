/**
 * noble and bleno on their own hci bindings over a UART tty (an emulated controller of tools/btvirt, or a
 * real controller behind a serial port): `hciDriver: 'uart'` and `bindParams.uart.port` select
 * @stoprocent/bluetooth-hci-socket's UART driver for this instance only, so several instances in one
 * process each drive their own controller. The deep `lib/resolve-bindings` entry is used so that the
 * packages' default instances (the machine's own adapter) are never constructed.
 */
import { createRequire } from 'node:module';
import type { EventEmitter } from 'node:events';
import type { Noble } from '@stoprocent/noble';
import type { Bleno } from '../../devices/ble/bleno-types.js';

const requireCjs = createRequire(import.meta.url);

type WithBindings<T> = (kind: 'hci', options: Record<string, unknown>) => T;

export interface HciOptions {
  /** The tty of the controller (a pty from socat, or a serial device). */
  readonly tty: string;
  /** Baud rate (default the driver's 1,000,000; a pty ignores it). */
  readonly baudRate?: number;
}

function hciOptions(options: HciOptions): Record<string, unknown> {
  return {
    hciDriver: 'uart',
    bindParams: { uart: { port: options.tty, ...(options.baudRate === undefined ? {} : { baudRate: options.baudRate }) } },
  };
}

/** A noble on its hci binding over `tty`. Nothing runs until the first `stateChange` listener. */
export function createHciNoble(options: HciOptions): Noble {
  const withBindings = requireCjs('@stoprocent/noble/lib/resolve-bindings') as WithBindings<Noble>;
  return withBindings('hci', hciOptions(options));
}

/** A bleno on its hci binding over `tty`. Nothing runs until the first `stateChange` listener. */
export function createHciBleno(options: HciOptions): Bleno {
  const withBindings = requireCjs('@stoprocent/bleno/lib/resolve-bindings') as WithBindings<Bleno>;
  return withBindings('hci', hciOptions(options));
}

/** Resolves once `library.state` is `poweredOn`; rejects after `ms` with the last state seen. */
export function whenPoweredOn(library: EventEmitter & { readonly state: string }, ms: number, what: string): Promise<void> {
  if (library.state === 'poweredOn') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const onState = (state: string): void => {
      if (state !== 'poweredOn') return;
      clearTimeout(timer);
      library.removeListener('stateChange', onState);
      resolve();
    };
    const timer = setTimeout(() => {
      library.removeListener('stateChange', onState);
      reject(new Error(`${what}: not poweredOn within ${ms} ms (state ${library.state})`));
    }, ms);
    library.on('stateChange', onState);
  });
}
