/**
 * The messages between the screen and the QR decode worker, and their checks. Both sides validate what
 * they receive (a worker is a thread boundary: a bad message must give a clear error, never a crash), and
 * the checks are pure functions so they are unit-tested in Node.
 *
 * A frame travels as a transferred ArrayBuffer of RGBA pixels (no copy); its size is bounded so that a
 * wrong width/height can never make the worker allocate without limit.
 */

/**
 * Longest text a reply may carry: kiosk-api's MAX_QR_TEXT (a unit test keeps them equal). Not imported,
 * because kiosk-api brings zod and the whole contract into the worker's bundle.
 */
export const MAX_DECODED_TEXT = 8_192;

/** Largest frame side and pixel count the worker decodes (4K UHD; cameras are asked for 1280×720). */
export const MAX_FRAME_SIDE = 4_096;
export const MAX_FRAME_PIXELS = 3_840 * 2_160;

export interface DecodeRequest {
  readonly type: 'decode';
  /** Chosen by the sender; echoed in the reply. */
  readonly id: number;
  readonly width: number;
  readonly height: number;
  /** RGBA, `width * height * 4` bytes. */
  readonly pixels: ArrayBuffer;
}

export type DecodeReply =
  | { readonly type: 'ready' }
  /** `text` is exactly what the decoder produced, `null` when no QR code was found; `ms` is decode time only. */
  | { readonly type: 'result'; readonly id: number; readonly text: string | null; readonly ms: number }
  /** A request the worker refused or could not decode; `id` is null when the request had none. */
  | { readonly type: 'error'; readonly id: number | null; readonly message: string };

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isSide(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_FRAME_SIDE;
}

/** Worker side: checks a message from the screen. */
export function parseDecodeRequest(message: unknown): Checked<DecodeRequest> {
  if (!isRecord(message)) return { ok: false, error: 'a decode request must be an object' };
  if (message.type !== 'decode') return { ok: false, error: `unknown request type: ${describe(message.type)}` };
  const { id, width, height, pixels } = message;
  if (!isId(id)) return { ok: false, error: 'id must be a non-negative integer' };
  if (!isSide(width) || !isSide(height)) return { ok: false, error: `width and height must be integers from 1 to ${MAX_FRAME_SIDE}` };
  if (width * height > MAX_FRAME_PIXELS)
    return { ok: false, error: `frame too large: ${width}×${height} (at most ${MAX_FRAME_PIXELS} pixels)` };
  if (!(pixels instanceof ArrayBuffer)) return { ok: false, error: 'pixels must be an ArrayBuffer' };
  if (pixels.byteLength !== width * height * 4) {
    return { ok: false, error: `pixels must hold ${width}×${height}×4 = ${width * height * 4} bytes, got ${pixels.byteLength}` };
  }
  return { ok: true, value: { type: 'decode', id, width, height, pixels } };
}

/** Screen side: checks a message from the worker. */
export function parseDecodeReply(message: unknown): Checked<DecodeReply> {
  if (!isRecord(message)) return { ok: false, error: 'a worker reply must be an object' };
  switch (message.type) {
    case 'ready':
      return { ok: true, value: { type: 'ready' } };
    case 'result': {
      const { id, text, ms } = message;
      if (!isId(id)) return { ok: false, error: 'result id must be a non-negative integer' };
      if (text !== null && (typeof text !== 'string' || text.length > MAX_DECODED_TEXT)) {
        return { ok: false, error: `result text must be null or a string of at most ${MAX_DECODED_TEXT} characters` };
      }
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return { ok: false, error: 'result ms must be a non-negative number' };
      return { ok: true, value: { type: 'result', id, text, ms } };
    }
    case 'error': {
      const { id, message: text } = message;
      if (id !== null && !isId(id)) return { ok: false, error: 'error id must be null or a non-negative integer' };
      if (typeof text !== 'string') return { ok: false, error: 'error message must be a string' };
      return { ok: true, value: { type: 'error', id, message: text.slice(0, 300) } };
    }
    default:
      return { ok: false, error: `unknown reply type: ${describe(message.type)}` };
  }
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value;
}
