/** The `NfcCard` the adapter hands to the relay, and the bounded wait its exchanges use. */
import { NfcTransmitError, type NfcCard, type TransmitOptions } from '../ports.js';
import { abortedError } from '../shared/abort.js';
import type { Connection } from './reader-state.js';

/** Waits for `promise`, at most `ms` (then `Timeout`), or until `signal` aborts. */
export function withDeadline(promise: Promise<void>, ms: number, signal: AbortSignal | undefined, timeoutMessage: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      reject(new NfcTransmitError('Timeout', timeoutMessage));
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortedError('NFC transmit'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    void promise.then(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

export interface CardOps {
  transmit(command: Uint8Array, options: TransmitOptions): Promise<Uint8Array>;
  release(): Promise<void>;
}

/** One connected presence, handed to the relay. */
export class PcscCard implements NfcCard {
  constructor(
    private readonly connection: Connection,
    private readonly ops: CardOps,
  ) {}

  get present(): boolean {
    return !this.connection.presence.removed;
  }

  transmit(command: Uint8Array, options: TransmitOptions): Promise<Uint8Array> {
    return this.ops.transmit(command, options);
  }

  waitForRemoval(signal: AbortSignal): Promise<void> {
    const presence = this.connection.presence;
    if (presence.removed) return Promise.resolve();
    if (signal.aborted) return Promise.reject(abortedError('NFC waitForRemoval'));
    return new Promise<void>((resolve, reject) => {
      const stop = presence.onRemoval(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
      const onAbort = (): void => {
        stop();
        reject(abortedError('NFC waitForRemoval'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  release(): Promise<void> {
    return this.ops.release().catch(() => undefined);
  }
}
