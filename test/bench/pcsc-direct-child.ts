/**
 * The bare-transmit side of `npm run bench:pcsc`, in a process of its own: the `smartcard` addon may be
 * loaded by one thread per process only (src/devices/pcsc/worker-binding.ts), and the bench's own process
 * runs the kiosk, whose adapter has it on its worker thread. This process opens a second, shared handle on
 * the reader named in argv[2] and times batches of transmits when the bench asks (IPC: `{ first, count,
 * measure }` → `{ samples }` or `{ error }`; `{ stop: true }` ends it).
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { ReaderState, type BindingReader } from '../../src/devices/pcsc/pcsc-binding.js';
import { RECEIVE_BUFFER_BYTES } from '../../src/devices/pcsc/pcsc-nfc-reader.js';
import { loadSmartcardBinding } from '../../src/devices/pcsc/smartcard-binding.js';
import { apduCommand, b64, instantCard } from './bench-protocol.js';

const Request = z.union([z.object({ first: z.number().int().nonnegative(), count: z.number().int().positive(), measure: z.boolean() }), z.object({ stop: z.literal(true) })]);

const readerName = process.argv[2] ?? '';
const send = (message: object): void => void process.send?.(message);

async function openHandle(): Promise<{ reader: BindingReader; protocol: number; close(): void }> {
  const context = loadSmartcardBinding()();
  context.on('error', () => undefined); // a lost service; the bench fails on its answers anyway
  const reader = await new Promise<BindingReader>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`reader ${readerName} not announced`)), 10_000);
    context.on('reader', (r) => {
      r.on('error', () => undefined);
      if (r.name !== readerName) return;
      r.on('status', (status) => {
        if ((status.state & ReaderState.PRESENT) === 0) return;
        clearTimeout(timer);
        resolve(r);
      });
    });
  });
  const protocol = await new Promise<number>((resolve, reject) => {
    reader.connect({ share_mode: reader.SCARD_SHARE_SHARED, protocol: reader.SCARD_PROTOCOL_T0 | reader.SCARD_PROTOCOL_T1 }, (error, p) => {
      if (error || p === undefined) reject(error ?? new Error('no protocol'));
      else resolve(p);
    });
  });
  return {
    reader,
    protocol,
    close: () => {
      reader.disconnect(reader.SCARD_LEAVE_CARD, () => {
        reader.close();
        context.close();
      });
    },
  };
}

async function batch(handle: { reader: BindingReader; protocol: number }, first: number, count: number, samples: number[] | undefined): Promise<void> {
  for (let i = first; i < first + count; i++) {
    const command = apduCommand(i);
    const started = performance.now();
    const response = await new Promise<Buffer>((resolve, reject) => {
      handle.reader.transmit(Buffer.from(command), RECEIVE_BUFFER_BYTES, handle.protocol, (error, data) => {
        if (error) reject(error);
        else if (!data) reject(new Error('no response'));
        else resolve(data);
      });
    });
    samples?.push(performance.now() - started);
    if (b64(response) !== b64(instantCard(command))) throw new Error(`direct APDU ${i}: unexpected answer ${response.toString('hex').slice(0, 40)}`);
  }
}

async function main(): Promise<void> {
  const handle = await openHandle();
  send({ ready: true });
  process.on('message', (raw: unknown) => {
    const request = Request.safeParse(raw);
    if (!request.success) {
      send({ error: `bad request: ${request.error.issues[0]?.message ?? ''}` });
      return;
    }
    if ('stop' in request.data) {
      handle.close();
      process.disconnect();
      return;
    }
    const samples: number[] = [];
    const { first, count, measure } = request.data;
    batch(handle, first, count, measure ? samples : undefined).then(
      () => send({ samples }),
      (e: unknown) => send({ error: e instanceof Error ? e.message : String(e) }),
    );
  });
}

main().catch((e: unknown) => {
  send({ error: e instanceof Error ? e.message : String(e) });
  process.exitCode = 1;
});
