/**
 * Messages between the screen and the portrait decoder worker (JPEG 2000 only; JPEG and PNG are decoded
 * by the browser). Both sides check what they receive: a reply that does not match is a failure.
 */
import type { ImageKind } from './bytes.js';

export interface DecodeRequest {
  readonly id: number;
  readonly kind: Extract<ImageKind, 'jp2' | 'j2k'>;
  /** Transferred, not copied. */
  readonly bytes: ArrayBuffer;
}

export type DecodeReply =
  | { readonly id: number; readonly ok: true; readonly width: number; readonly height: number; readonly rgba: ArrayBuffer }
  | { readonly id: number; readonly ok: false; readonly error: string };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export function parseDecodeRequest(value: unknown): DecodeRequest | undefined {
  if (!isObject(value) || typeof value.id !== 'number' || !(value.bytes instanceof ArrayBuffer)) return undefined;
  if (value.kind !== 'jp2' && value.kind !== 'j2k') return undefined;
  return { id: value.id, kind: value.kind, bytes: value.bytes };
}

export function parseDecodeReply(value: unknown): DecodeReply | undefined {
  if (!isObject(value) || typeof value.id !== 'number') return undefined;
  if (value.ok === false)
    return { id: value.id, ok: false, error: typeof value.error === 'string' ? value.error.slice(0, 300) : 'unknown error' };
  const { width, height, rgba } = value;
  if (value.ok !== true || typeof width !== 'number' || typeof height !== 'number' || !(rgba instanceof ArrayBuffer)) return undefined;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || rgba.byteLength !== width * height * 4)
    return undefined;
  return { id: value.id, ok: true, width, height, rgba };
}
