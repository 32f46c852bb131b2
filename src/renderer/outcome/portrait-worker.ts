/// <reference lib="webworker" />
/**
 * The JPEG 2000 portrait decoder: OpenJPEG compiled to WebAssembly (the decode-only build of
 * @cornerstonejs/codec-openjpeg), loaded once when the worker starts and reused for every portrait. The
 * .wasm is served by the kiosk itself (Vite `?url`), never fetched from elsewhere; compiling it needs the
 * CSP's 'wasm-unsafe-eval'. The image size is checked in the header before anything is allocated, and each
 * decoder instance is deleted after use so its wasm buffers are freed.
 */
import openJpegFactory from '@cornerstonejs/codec-openjpeg/decodewasmjs';
import wasmUrl from '@cornerstonejs/codec-openjpeg/decodewasm?url';
import { imageSize, jp2Codestream, sizeAllowed } from './image-header.js';
import { supportedLayout, toRgba } from './j2k-pixels.js';
import { parseDecodeRequest, type DecodeReply } from './portrait-protocol.js';

declare const self: DedicatedWorkerGlobalScope;

const quiet = (): void => undefined;
// OpenJPEG prints `[INFO]` lines for every image: nothing about a customer's portrait goes to the console.
const codec = openJpegFactory({ locateFile: () => wasmUrl, print: quiet, printErr: quiet });

async function decode(kind: 'jp2' | 'j2k', bytes: Uint8Array): Promise<{ width: number; height: number; rgba: Uint8ClampedArray }> {
  const codestream = kind === 'jp2' ? jp2Codestream(bytes) : bytes;
  if (codestream === undefined) throw new Error('no JPEG 2000 codestream in the JP2 file');
  const size = imageSize(codestream, 'j2k');
  if (size === undefined) throw new Error('unreadable JPEG 2000 header');
  if (!sizeAllowed(size)) throw new Error(`portrait too large (${size.width}×${size.height})`);
  const lib = await codec;
  const decoder = new lib.J2KDecoder();
  try {
    decoder.getEncodedBuffer(codestream.length).set(codestream);
    // The size was bounded from the SIZ marker above; this build fills the frame info only on decode().
    decoder.decode();
    const info = decoder.getFrameInfo();
    if (!sizeAllowed(info) || !supportedLayout(info))
      throw new Error(`unsupported JPEG 2000 image (${info.width}×${info.height}, ${info.componentCount}×${info.bitsPerSample} bits)`);
    return { width: info.width, height: info.height, rgba: toRgba(decoder.getDecodedBuffer(), info) };
  } finally {
    decoder.delete();
  }
}

function errorText(error: unknown): string {
  // Emscripten throws C++ exceptions as bare numbers (pointers): say what happened, not the number.
  return error instanceof Error ? error.message : 'the JPEG 2000 decoder failed';
}

self.addEventListener('message', (event: MessageEvent<unknown>) => {
  const request = parseDecodeRequest(event.data);
  if (request === undefined) return;
  decode(request.kind, new Uint8Array(request.bytes)).then(
    ({ width, height, rgba }) => {
      const reply: DecodeReply = { id: request.id, ok: true, width, height, rgba: rgba.buffer as ArrayBuffer };
      self.postMessage(reply, [rgba.buffer as ArrayBuffer]);
    },
    (error: unknown) => {
      const reply: DecodeReply = { id: request.id, ok: false, error: errorText(error) };
      self.postMessage(reply);
    },
  );
});
