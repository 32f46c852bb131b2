/**
 * One APDU exchange on a connected card: receive buffer 65,538 bytes (extended APDUs: 65,536 data bytes +
 * SW1 SW2), a per-APDU timeout of our own (vpcd and some drivers never time out), failures mapped to the
 * canonical variant:
 * - a response longer than the receive buffer → `InsufficientBuffer` (never handed on);
 * - a binding error carrying an SCARD code → that code's variant (`scard-errors.ts`);
 * - no answer within the timeout → `Timeout` (SCARD_E_TIMEOUT's variant; the backend ends the session,
 *   a re-tap does not cure a phone that has stopped answering while lying still on the reader);
 * - a response shorter than SW1 SW2 → `UnresponsiveCard` (vpcd reports a card that left mid-APDU as an
 *   empty success rather than an error — vpcd's own behaviour, and a reply without a status word is no reply from any reader; recoverable, so the customer is asked to tap again);
 * - the binding's own "not connected" error (no code) → `RemovedCard` when the card has left, else
 *   `InvalidHandle`; any other error without a code → `UnknownError`, as the `pcsc` crate masks codes.
 *
 * After a failed exchange the handle is released (a stale one breaks the next connect, `card-handles.ts`).
 */
import { MAX_RAPDU_BYTES, NfcTransmitError, type TransmitOptions } from '../ports.js';
import { abortedError, errorMessage } from '../shared/abort.js';
import { withDeadline } from './pcsc-card.js';
import type { Connection } from './reader-state.js';
import { formatScardCode, parseScardCode, scardVariant, type ScardPlatform } from './scard-errors.js';

/** Extended APDU response: up to 65,536 data bytes plus SW1 SW2 (ISO/IEC 7816-4 §5.1, Le up to 65,536). */
export const RECEIVE_BUFFER_BYTES = MAX_RAPDU_BYTES;

/**
 * A response longer than any R-APDU can be. The native layer caps what it copies at the receive
 * buffer, but a binding or driver that does not is not trusted with it: refused as SCARD_E_INSUFFICIENT_BUFFER's
 * variant, the error SCardTransmit gives for a response that does not fit, which the backend treats as fatal
 * (docs/protocol.md §7.3).
 */
function oversizeResponse(length: number): NfcTransmitError {
  return new NfcTransmitError(
    'InsufficientBuffer',
    `the card answered ${length} bytes; an R-APDU is at most ${RECEIVE_BUFFER_BYTES} (65,536 data bytes + SW1 SW2, ISO/IEC 7816-4 extended length)`,
  );
}

export interface ExchangeContext {
  readonly platform: ScardPlatform;
  /** Releases the card's handle (`CardHandles.release`). */
  readonly release: (connection: Connection) => Promise<void>;
}

/**
 * Exchanges on one handle run one after another (the relay sends one at a time anyway). The usual case —
 * nothing queued on the handle and no native transmit left running on the reader — goes to the card in
 * the same turn, without the queue's and the idle wait's promise hops (issue 34); otherwise it waits its turn.
 */
export function transmit(
  connection: Connection,
  command: Uint8Array,
  options: TransmitOptions,
  context: ExchangeContext,
): Promise<Uint8Array> {
  const ready = connection.exchanges === 0 && connection.entry.transmits === 0;
  connection.exchanges++;
  const run = ready
    ? exchangeNow(connection, command, options, context)
    : connection.queue.then(() => exchange(connection, command, options, context));
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  connection.queue = settled;
  void settled.then(() => {
    connection.exchanges--;
  });
  return run;
}

async function exchange(
  connection: Connection,
  command: Uint8Array,
  options: TransmitOptions,
  context: ExchangeContext,
): Promise<Uint8Array> {
  const entry = connection.entry;
  const started = performance.now();
  try {
    checkUsable(connection, options.signal);
    // A native transmit still running after an earlier timeout holds the reader: wait for it, bounded.
    await withDeadline(entry.idle(), options.timeoutMs, options.signal, 'the previous exchange with the card has not returned');
  } catch (e) {
    throw failed(connection, context, e);
  }
  const remaining = Math.max(1, options.timeoutMs - (performance.now() - started));
  // Checked again there: the card may have left, or a newer card taken the reader, while this one waited.
  return exchangeNow(connection, command, options, context, remaining);
}

/** The exchange itself, once nothing runs before it on the handle or the reader; `timeoutMs` is what is left of the APDU's. */
function exchangeNow(
  connection: Connection,
  command: Uint8Array,
  options: TransmitOptions,
  context: ExchangeContext,
  timeoutMs = options.timeoutMs,
): Promise<Uint8Array> {
  try {
    checkUsable(connection, options.signal);
  } catch (e) {
    return Promise.reject(failed(connection, context, e));
  }
  return nativeTransmit(connection, command, options, timeoutMs, context.platform).catch((e: unknown) => {
    throw failed(connection, context, e);
  });
}

/** After a failed exchange the handle is not trusted again; a re-tap gets a fresh one. Returns the error. */
function failed(connection: Connection, context: ExchangeContext, e: unknown): Error {
  if (e instanceof NfcTransmitError) {
    connection.lose(e.reason, e.message);
    void context.release(connection);
  }
  return e instanceof Error ? e : new Error(errorMessage(e));
}

function checkUsable(connection: Connection, signal: AbortSignal): void {
  if (connection.lost !== undefined) {
    throw connection.presence.removed
      ? new NfcTransmitError('RemovedCard', 'the card is no longer on the reader')
      : new NfcTransmitError('InvalidHandle', `the card handle is no longer valid (${connection.lost})`);
  }
  if (signal.aborted) throw abortedError('NFC transmit');
}

/**
 * The binding's transmit, settled by whichever comes first: its answer, the timeout, the abort, or the
 * connection being lost (`failInFlight`). The reader counts it as running until the native call returns,
 * however late (`ReaderEntry.transmitStarted`/`transmitEnded`): it holds the binding's reader mutex till then.
 */
function nativeTransmit(
  connection: Connection,
  command: Uint8Array,
  options: TransmitOptions,
  timeoutMs: number,
  platform: ScardPlatform,
): Promise<Uint8Array> {
  const entry = connection.entry;
  const reader = entry.binding;
  return new Promise<Uint8Array>((resolve, reject) => {
    const finish = (): void => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      connection.failInFlight = undefined;
    };
    const onAbort = (): void => {
      finish();
      reject(abortedError('NFC transmit'));
    };
    connection.failInFlight = (error) => {
      finish();
      reject(error);
    };
    const timer = setTimeout(() => {
      finish();
      reject(new NfcTransmitError('Timeout', `the card did not answer within ${options.timeoutMs} ms`));
    }, timeoutMs);
    options.signal.addEventListener('abort', onAbort, { once: true });
    let returned = false;
    const nativeReturned = (): boolean => {
      if (returned) return false;
      returned = true;
      entry.transmitEnded();
      return connection.failInFlight !== undefined; // false: already settled (timeout, abort, removal)
    };
    entry.transmitStarted();
    try {
      reader.transmit(
        Buffer.from(command.buffer, command.byteOffset, command.byteLength),
        RECEIVE_BUFFER_BYTES,
        connection.protocol,
        (error, data) => {
          if (!nativeReturned()) return;
          finish();
          if (error) reject(transmitError(connection, error, platform));
          else if (!data || data.length < 2) reject(new NfcTransmitError('UnresponsiveCard', 'the response has no status word'));
          else if (data.length > RECEIVE_BUFFER_BYTES) reject(oversizeResponse(data.length));
          else resolve(data);
        },
      );
    } catch (e) {
      nativeReturned();
      finish();
      reject(transmitError(connection, e, platform));
    }
  });
}

function transmitError(connection: Connection, error: unknown, platform: ScardPlatform): NfcTransmitError {
  const code = parseScardCode(error);
  if (code !== undefined) return new NfcTransmitError(scardVariant(code, platform), `SCardTransmit failed (${formatScardCode(code)})`);
  if (/not connected/i.test(errorMessage(error))) {
    return connection.presence.removed
      ? new NfcTransmitError('RemovedCard', 'the card is no longer on the reader')
      : new NfcTransmitError('InvalidHandle', 'the reader holds no handle for the card');
  }
  return new NfcTransmitError('UnknownError', `SCardTransmit failed: ${errorMessage(error)}`);
}
