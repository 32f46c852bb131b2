/**
 * The QR decode worker (a module Web Worker): camera frames are decoded here with zxing-wasm so the UI
 * thread stays free. The wasm is the copy Vite serves with the app (`?url`): zxing-wasm's default would
 * fetch it from a CDN, which the kiosk must never do (and its CSP forbids).
 *
 * Protocol (decode-protocol.ts): `ready` once the module is compiled, then one `result` or `error` per
 * `decode` request. The screen keeps at most one frame in flight.
 */
import { prepareZXingModule, readBarcodes, type ReaderOptions } from 'zxing-wasm/reader';
import wasmUrl from 'zxing-wasm/reader/zxing_reader.wasm?url';
import { parseDecodeRequest, type DecodeReply, type DecodeRequest } from './decode-protocol.js';

/** The parts of DedicatedWorkerGlobalScope used here (the renderer's lib has DOM, not WebWorker). */
interface WorkerScope {
  onmessage: ((event: MessageEvent<unknown>) => void) | null;
  postMessage(message: DecodeReply): void;
}
const scope = self as unknown as WorkerScope;

const READER_OPTIONS: ReaderOptions = { formats: ['QRCode'], tryHarder: true, maxNumberOfSymbols: 1 };

const moduleReady = prepareZXingModule({
  overrides: { locateFile: (path: string, prefix: string) => (path.endsWith('.wasm') ? wasmUrl : prefix + path) },
  fireImmediately: true,
});

function errorMessage(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : 'unknown error';
}

async function decode(request: DecodeRequest): Promise<DecodeReply> {
  await moduleReady;
  const image = new ImageData(new Uint8ClampedArray(request.pixels), request.width, request.height);
  const started = performance.now();
  const results = await readBarcodes(image, READER_OPTIONS);
  const ms = performance.now() - started;
  const found = results.find((r) => r.isValid && r.text.length > 0);
  return { type: 'result', id: request.id, text: found?.text ?? null, ms };
}

scope.onmessage = (event) => {
  const parsed = parseDecodeRequest(event.data);
  if (!parsed.ok) {
    const data: unknown = event.data;
    const id =
      typeof data === 'object' &&
      data !== null &&
      'id' in data &&
      typeof data.id === 'number' &&
      Number.isSafeInteger(data.id) &&
      data.id >= 0
        ? data.id
        : null;
    scope.postMessage({ type: 'error', id, message: parsed.error });
    return;
  }
  decode(parsed.value).then(
    (reply) => scope.postMessage(reply),
    (e: unknown) => scope.postMessage({ type: 'error', id: parsed.value.id, message: errorMessage(e) }),
  );
};

/**
 * One throw-away decode before `ready`: the wasm functions are compiled lazily on first call, which made
 * the first real frame several times slower than the next ones, and so did growing the wasm heap (the customer's first frame counts most).
 */
async function warmUp(): Promise<void> {
  await moduleReady;
  // The camera's size: the wasm heap also grows to what a real frame needs here, not on the first frame.
  const [width, height] = [1280, 720];
  const pixels = new Uint8ClampedArray(width * height * 4);
  for (let i = 0; i < pixels.length; i += 4) {
    const v = (i >> 2) % 7 < 3 ? 40 : 220;
    pixels[i] = pixels[i + 1] = pixels[i + 2] = v;
    pixels[i + 3] = 255;
  }
  await readBarcodes(new ImageData(pixels, width, height), READER_OPTIONS);
}

warmUp().then(
  () => scope.postMessage({ type: 'ready' }),
  (e: unknown) => scope.postMessage({ type: 'error', id: null, message: `the QR decoder did not load: ${errorMessage(e)}` }),
);
