/**
 * A bare PC/SC handle on one reader, outside the kiosk, and timed batches of transmits through it: the
 * baseline sides of `npm run bench:pcsc` (in the bench's process through the binding's worker thread, and
 * in `pcsc-direct-child.ts` on the addon directly).
 */
import { performance } from 'node:perf_hooks';
import { ReaderState, type BindingFactory, type BindingReader } from '../../src/devices/pcsc/pcsc-binding.js';
import { RECEIVE_BUFFER_BYTES } from '../../src/devices/pcsc/pcsc-nfc-reader.js';
import { apduCommand, b64, instantCard } from './bench-protocol.js';

export interface BareHandle {
  readonly reader: BindingReader;
  readonly protocol: number;
  close(): void;
}

/** A second, shared handle on the card on `readerName`, with a PC/SC context of its own. */
export async function openBareHandle(readerName: string, factory: BindingFactory): Promise<BareHandle> {
  const context = await factory();
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
    close: () =>
      reader.disconnect(reader.SCARD_LEAVE_CARD, () => {
        reader.close();
        context.close();
      }),
  };
}

/** APDUs `first`…`first + count − 1` through the handle, each checked; their round trips go to `samples`. */
export async function bareBatch(handle: BareHandle, first: number, count: number, samples: number[] | undefined): Promise<void> {
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
    if (b64(response) !== b64(instantCard(command)))
      throw new Error(`direct APDU ${i}: unexpected answer ${response.toString('hex').slice(0, 40)}`);
  }
}
