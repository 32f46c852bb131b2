/**
 * The thread that owns the `smartcard` addon (started by `worker-binding.ts`). Some of the addon's calls are
 * synchronous native calls — SCardDisconnect, SCardListReaders, SCardCancel, SCardReleaseContext — and
 * pcsc-lite's client waits for pcscd with no bound (`poll` with an infinite timeout): while pcscd holds the
 * reader for a slow card or a stuck driver, the thread that made the call stands still. Here that is this
 * thread, never the kiosk's event loop (its timers, its backend socket, the screen's IPC).
 *
 * The binding behind this thread is `smartcard-binding.ts`, unchanged; this file only carries its events
 * and calls over the thread's message port (`pcsc-worker-protocol.ts`).
 */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { z } from 'zod';
import { PcscBindingUnavailableError, type BindingContext, type BindingReader, type SyncBindingFactory } from './pcsc-binding.js';
import { FromWorker, MAX_PCSC_BYTES, parseToWorker, type ToWorker, type WireError } from './pcsc-worker-protocol.js';
import { loadSmartcardBinding } from './smartcard-binding.js';
import { PcscBindingError } from './smartcard-errors.js';
import { errorText } from '../../common/error-text.js';

const Setup = z.object({
  /** The addon's module id or path (tests name a stand-in); default the `smartcard` package. */
  addonModule: z.string().optional(),
  waitMs: z.number().positive().optional(),
});

const port = parentPort;
if (port === null) throw new Error('pcsc-worker.ts runs only as a worker thread (worker-binding.ts starts it)');
const setup = Setup.parse(workerData ?? {});

function wire(e: unknown): WireError {
  const kind = e instanceof PcscBindingUnavailableError ? 'unavailable' : e instanceof PcscBindingError ? 'binding' : 'other';
  const text = errorText(e);
  return { kind, message: text.slice(0, 2_000) };
}

function post(message: FromWorker): void {
  // Checked here too: a message the other side would refuse is a defect of this file, found in its tests.
  port?.postMessage(FromWorker.parse(message));
}

/**
 * A transmit's answer, on the per-APDU path (issue 34): not run through the schema here, because the shape is
 * fixed below and the adapter checks it by hand (`parseFromWorker`) anyway. The response is copied once out
 * of the addon's buffer and that copy is moved to the other thread, not cloned again.
 */
function postTransmitReply(call: number, response: Uint8Array): void {
  if (response.byteLength > MAX_PCSC_BYTES) {
    post({ ev: 'reply', call, error: { kind: 'other', message: `the response of ${response.byteLength} bytes is too long` } });
    return;
  }
  const copy = Uint8Array.from(response);
  port?.postMessage({ ev: 'reply', call, response: copy }, [copy.buffer]);
}

let factory: SyncBindingFactory | undefined;
const contexts = new Map<number, BindingContext>();
const readers = new Map<number, BindingReader>();
let nextReader = 0;

function load(): SyncBindingFactory {
  if (factory) return factory;
  const requireHere = createRequire(import.meta.url);
  const loader =
    setup.addonModule === undefined
      ? requireHere
      : (id: string): unknown => requireHere(id === 'smartcard' ? (setup.addonModule ?? id) : id);
  factory = loadSmartcardBinding(loader, setup.waitMs === undefined ? {} : { waitMs: setup.waitMs });
  return factory;
}

function establish(contextId: number): void {
  let context: BindingContext;
  try {
    context = load()();
  } catch (e) {
    post({ ev: 'establish_failed', context: contextId, error: wire(e) });
    return;
  }
  contexts.set(contextId, context);
  post({ ev: 'established', context: contextId });
  context.on('error', (e) => post({ ev: 'context_error', context: contextId, error: wire(e) }));
  context.on('reader', (reader) => {
    const readerId = nextReader++;
    readers.set(readerId, reader);
    const { SCARD_SHARE_SHARED, SCARD_SHARE_EXCLUSIVE, SCARD_PROTOCOL_T0, SCARD_PROTOCOL_T1, SCARD_LEAVE_CARD } = reader;
    post({
      ev: 'reader',
      context: contextId,
      reader: readerId,
      name: reader.name.slice(0, 1_000),
      constants: { SCARD_SHARE_SHARED, SCARD_SHARE_EXCLUSIVE, SCARD_PROTOCOL_T0, SCARD_PROTOCOL_T1, SCARD_LEAVE_CARD },
    });
    reader.on('status', (status) =>
      post({ ev: 'status', reader: readerId, state: status.state, ...(status.atr ? { atr: Uint8Array.from(status.atr) } : {}) }),
    );
    reader.on('error', (e) => post({ ev: 'reader_error', reader: readerId, error: wire(e) }));
    reader.on('end', () => post({ ev: 'end', reader: readerId }));
  });
}

/** A call on a reader the adapter has closed (or never had) answers with the binding's own words. */
function readerOr(readerId: number, call: number): BindingReader | undefined {
  const reader = readers.get(readerId);
  if (!reader) post({ ev: 'reply', call, error: { kind: 'other', message: 'the card reader is closed' } });
  return reader;
}

function handle(message: ToWorker): void {
  switch (message.op) {
    case 'establish':
      establish(message.context);
      return;
    case 'close_context': {
      const context = contexts.get(message.context);
      contexts.delete(message.context);
      context?.close();
      void (context?.whenClosed?.() ?? Promise.resolve()).then(() => post({ ev: 'context_closed', context: message.context }));
      return;
    }
    case 'connect': {
      const reader = readerOr(message.reader, message.call);
      reader?.connect({ share_mode: message.shareMode, protocol: message.protocol }, (error, protocol) =>
        post({
          ev: 'reply',
          call: message.call,
          ...(error ? { error: wire(error) } : {}),
          ...(protocol === undefined ? {} : { protocol }),
        }),
      );
      return;
    }
    case 'disconnect': {
      const reader = readerOr(message.reader, message.call);
      reader?.disconnect(message.disposition, (error) =>
        post({ ev: 'reply', call: message.call, ...(error ? { error: wire(error) } : {}) }),
      );
      return;
    }
    case 'transmit': {
      const reader = readerOr(message.reader, message.call);
      reader?.transmit(
        Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength),
        message.responseLength,
        message.protocol,
        (error, response) => {
          if (!error && response) postTransmitReply(message.call, response);
          else post({ ev: 'reply', call: message.call, ...(error ? { error: wire(error) } : {}) });
        },
      );
      return;
    }
    case 'close_reader': {
      const reader = readers.get(message.reader);
      readers.delete(message.reader);
      reader?.close();
      return;
    }
  }
}

port.on('message', (raw: unknown) => {
  const parsed = parseToWorker(raw);
  // Only the adapter's own thread writes here; a message that does not fit is dropped, the call it was
  // part of then ends on the adapter's own time bound.
  if (parsed.success) handle(parsed.data);
});
