/**
 * The bare-transmit side of `npm run bench:pcsc`, in a process of its own: the `smartcard` addon may be
 * loaded by one thread per process only (src/devices/pcsc/worker-binding.ts), and the bench's own process
 * runs the kiosk, whose adapter has it on its worker thread. This process opens a second, shared handle on
 * the reader named in argv[2] and times batches of transmits when the bench asks (IPC: `{ first, count,
 * measure }` → `{ samples }` or `{ error }`; `{ stop: true }` ends it).
 */
import { z } from 'zod';
import { loadSmartcardBinding } from '../../src/devices/pcsc/smartcard-binding.js';
import { bareBatch, openBareHandle } from './pcsc-handle.js';

const Request = z.union([
  z.object({ first: z.number().int().nonnegative(), count: z.number().int().positive(), measure: z.boolean() }),
  z.object({ stop: z.literal(true) }),
]);

const readerName = process.argv[2] ?? '';
const send = (message: object): void => void process.send?.(message);

async function main(): Promise<void> {
  const handle = await openBareHandle(readerName, loadSmartcardBinding());
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
    bareBatch(handle, first, count, measure ? samples : undefined).then(
      () => send({ samples }),
      (e: unknown) => send({ error: e instanceof Error ? e.message : String(e) }),
    );
  });
}

main().catch((e: unknown) => {
  send({ error: e instanceof Error ? e.message : String(e) });
  process.exitCode = 1;
});
