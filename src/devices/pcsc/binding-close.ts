/** Closing the binding's objects (a context, a reader) without ever blocking the JS thread on a native lock. */
import { errorMessage } from '../shared/abort.js';
import type { PcscLog } from './reader-options.js';
import type { ReaderEntry } from './reader-state.js';

/**
 * Closes a binding object on a later macrotask, never from inside one of its own events: a binding may hold
 * a native lock while it emits them (pcsclite 1.0.1 did, and `close()` under it deadlocked the JS thread).
 * `setImmediate` runs after any such lock was released.
 */
export function closeLater(what: string, target: { close(): void }, log: PcscLog): Promise<void> {
  return new Promise((resolve) => {
    setImmediate(() => {
      try {
        target.close();
      } catch (e) {
        log.debug({ event: 'pcsc_close_failed', what, detail: errorMessage(e) }, `closing the ${what} failed`);
      }
      resolve();
    });
  });
}

/**
 * Closes a reader's binding object. `close()` takes the binding's reader mutex on the JS thread, which a
 * stuck transmit holds until the card leaves: then the close happens once the transmit has returned.
 */
export function closeBindingReader(entry: ReaderEntry, log: PcscLog): Promise<void> {
  if (entry.transmits === 0) return closeLater('reader', entry.binding, log);
  log.warn(
    { event: 'pcsc_reader_close_deferred', reader: entry.label },
    'an exchange with the card has not returned; the reader is closed once it does',
  );
  void entry.idle().then(() => closeLater('reader', entry.binding, log));
  return Promise.resolve();
}
