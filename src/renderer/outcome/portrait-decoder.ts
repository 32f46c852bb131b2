/**
 * Portrait decoding for the outcome screen. JPEG and PNG: the browser's own decoder
 * (`createImageBitmap` on a Blob, no object URL). JPEG 2000 (JP2 file or raw codestream): one long-lived
 * worker with OpenJPEG in wasm (portrait-worker.ts), created on first use or by `prewarmPortraitDecoder()`
 * and reused for every outcome; a crashed or stuck worker is replaced on the next portrait. The size is
 * read from the header and bounded before any decoder allocates the pixels.
 */
import type { ImageKind } from './bytes.js';
import { imageSize, sizeAllowed } from './image-header.js';
import { parseDecodeReply, type DecodeRequest } from './portrait-protocol.js';

/** A worker that has not answered within this time is treated as failed (and replaced). */
const DECODE_TIMEOUT_MS = 10_000;

export class PortraitDecodeError extends Error {
  override readonly name = 'PortraitDecodeError';
}

interface Pending {
  readonly resolve: (image: ImageData) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

class Jpeg2000Worker {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #broken = false;

  constructor() {
    this.#worker = new Worker(new URL('./portrait-worker.ts', import.meta.url), { type: 'module', name: 'portrait-decode' });
    this.#worker.addEventListener('message', (event: MessageEvent<unknown>) => {
      this.#onReply(event.data);
    });
    this.#worker.addEventListener('error', () => {
      this.#fail('the portrait decoder stopped');
    });
  }

  get broken(): boolean {
    return this.#broken;
  }

  decode(kind: 'jp2' | 'j2k', bytes: Uint8Array, signal: AbortSignal): Promise<ImageData> {
    const id = this.#nextId++;
    // A copy of our own to transfer: the caller's bytes stay intact, nothing is shared with the worker.
    const copy = bytes.slice().buffer;
    return new Promise<ImageData>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#fail('the portrait decoder did not answer');
      }, DECODE_TIMEOUT_MS);
      const settle = (): void => {
        clearTimeout(timer);
        this.#pending.delete(id);
        signal.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        settle();
        reject(new PortraitDecodeError('cancelled'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        resolve: (image) => {
          settle();
          resolve(image);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
        timer,
      });
      const request: DecodeRequest = { id, kind, bytes: copy };
      this.#worker.postMessage(request, [copy]);
    });
  }

  #onReply(data: unknown): void {
    const reply = parseDecodeReply(data);
    if (reply === undefined) return;
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return; // cancelled meanwhile: the pixels are dropped with the message
    if (reply.ok) pending.resolve(new ImageData(new Uint8ClampedArray(reply.rgba), reply.width, reply.height));
    else pending.reject(new PortraitDecodeError(reply.error));
  }

  #fail(message: string): void {
    this.#broken = true;
    this.#worker.terminate();
    for (const pending of [...this.#pending.values()]) pending.reject(new PortraitDecodeError(message));
    this.#pending.clear();
  }

  terminate(): void {
    this.#fail('the portrait decoder was closed');
  }
}

let jpeg2000Worker: Jpeg2000Worker | undefined;

function jpeg2000(): Jpeg2000Worker {
  if (jpeg2000Worker === undefined || jpeg2000Worker.broken) jpeg2000Worker = new Jpeg2000Worker();
  return jpeg2000Worker;
}

/** Starts the JPEG 2000 worker (and compiles its wasm) ahead of the first portrait. */
export function prewarmPortraitDecoder(): void {
  jpeg2000();
}

/** Ends the JPEG 2000 worker (tests, shutdown); the next portrait starts a new one. */
export function closePortraitDecoder(): void {
  jpeg2000Worker?.terminate();
  jpeg2000Worker = undefined;
}

const MIME: Readonly<Record<'jpeg' | 'png', string>> = { jpeg: 'image/jpeg', png: 'image/png' };

/**
 * The portrait as an ImageBitmap, which the caller draws and then closes. Rejects (PortraitDecodeError or
 * the browser's error) when the bytes are not a decodable image of an allowed size, or on `signal`.
 */
export async function decodePortrait(bytes: Uint8Array, kind: ImageKind, signal: AbortSignal): Promise<ImageBitmap> {
  const size = imageSize(bytes, kind);
  if (size === undefined) throw new PortraitDecodeError(`unreadable ${kind} header`);
  if (!sizeAllowed(size)) throw new PortraitDecodeError(`portrait too large (${size.width}×${size.height})`);
  let bitmap: ImageBitmap;
  if (kind === 'jp2' || kind === 'j2k') {
    bitmap = await createImageBitmap(await jpeg2000().decode(kind, bytes, signal));
  } else {
    bitmap = await createImageBitmap(new Blob([bytes.slice()], { type: MIME[kind] }));
  }
  if (signal.aborted) {
    bitmap.close();
    throw new PortraitDecodeError('cancelled');
  }
  return bitmap;
}
