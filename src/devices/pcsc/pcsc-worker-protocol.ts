/**
 * The messages between the PC/SC adapter's thread and the thread that owns the `smartcard` addon
 * (`pcsc-worker.ts`, `worker-binding.ts`). Both directions are checked: the worker is our code, but a
 * message that does not fit is a defect to report clearly, never a crash of the kiosk.
 *
 * Ids are small integers chosen by the side that creates the thing: the adapter numbers contexts and calls,
 * the worker numbers the readers it announces.
 */
import { z } from 'zod';
import { isRecord } from '../../common/is-record.js';

/** An APDU or response is at most 65,544 bytes (extended length plus status); anything bigger is refused. */
export const MAX_PCSC_BYTES = 70_000;
/** Reader names are short (PC/SC caps them at 128 bytes); a longer one is truncated on the way, then ignored by the adapter. */
const MAX_NAME = 1_000;
const MAX_MESSAGE = 2_000;

const id = z.number().int().nonnegative();
const bytes = z.instanceof(Uint8Array).refine((b) => b.byteLength <= MAX_PCSC_BYTES, `at most ${MAX_PCSC_BYTES} bytes`);

/** An error as it crosses threads: its kind decides the class the adapter sees again. */
export const WireError = z.object({
  kind: z.enum(['unavailable', 'binding', 'other']),
  message: z.string().max(MAX_MESSAGE),
});
export type WireError = z.infer<typeof WireError>;

export const ToWorker = z.discriminatedUnion('op', [
  z.object({ op: z.literal('establish'), context: id }),
  z.object({ op: z.literal('close_context'), context: id }),
  z.object({ op: z.literal('connect'), reader: id, call: id, shareMode: z.number().int(), protocol: z.number().int() }),
  z.object({ op: z.literal('disconnect'), reader: id, call: id, disposition: z.number().int() }),
  z.object({
    op: z.literal('transmit'),
    reader: id,
    call: id,
    data: bytes,
    responseLength: z.number().int().nonnegative().max(MAX_PCSC_BYTES),
    protocol: z.number().int(),
  }),
  z.object({ op: z.literal('close_reader'), reader: id }),
]);
export type ToWorker = z.infer<typeof ToWorker>;

export const ReaderConstants = z.object({
  SCARD_SHARE_SHARED: z.number().int(),
  SCARD_SHARE_EXCLUSIVE: z.number().int(),
  SCARD_PROTOCOL_T0: z.number().int(),
  SCARD_PROTOCOL_T1: z.number().int(),
  SCARD_LEAVE_CARD: z.number().int(),
});
export type ReaderConstants = z.infer<typeof ReaderConstants>;

export const FromWorker = z.discriminatedUnion('ev', [
  z.object({ ev: z.literal('established'), context: id }),
  z.object({ ev: z.literal('establish_failed'), context: id, error: WireError }),
  z.object({ ev: z.literal('context_error'), context: id, error: WireError }),
  /** The context's native resources are released (after `close_context`). */
  z.object({ ev: z.literal('context_closed'), context: id }),
  z.object({ ev: z.literal('reader'), context: id, reader: id, name: z.string().max(MAX_NAME), constants: ReaderConstants }),
  z.object({ ev: z.literal('status'), reader: id, state: z.number().int().nonnegative(), atr: bytes.optional() }),
  z.object({ ev: z.literal('reader_error'), reader: id, error: WireError }),
  z.object({ ev: z.literal('end'), reader: id }),
  z.object({
    ev: z.literal('reply'),
    call: id,
    error: WireError.optional(),
    protocol: z.number().int().optional(),
    response: bytes.optional(),
  }),
]);
export type FromWorker = z.infer<typeof FromWorker>;

// ---------------------------------------------------------------- the per-APDU messages, checked by hand

// zod's `.int()` means a safe integer: 2^53 and beyond are refused.
const isId = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
// Typed as the schema's `z.instanceof(Uint8Array)` types it.
const isBytes = (v: unknown): v is Uint8Array<ArrayBuffer> => v instanceof Uint8Array && v.byteLength <= MAX_PCSC_BYTES;

/**
 * An APDU crosses the threads twice: `transmit` in, `reply` out. Their schemas' zod run was the largest
 * part of the PC/SC path's own code in bench:pcsc's profile (issue 34), so these two shapes are checked by
 * hand first, with the schema's rules: a message that does not pass goes through the schema, which then
 * accepts or names what is wrong. Whatever passes here the schema accepts with the same fields
 * (test/unit/devices/pcsc/worker-protocol-fast.test.ts checks it against the schema with fast-check).
 */
export function parseToWorker(raw: unknown): ReturnType<typeof ToWorker.safeParse> {
  if (
    isRecord(raw) &&
    raw.op === 'transmit' &&
    isId(raw.reader) &&
    isId(raw.call) &&
    isBytes(raw.data) &&
    isId(raw.responseLength) &&
    raw.responseLength <= MAX_PCSC_BYTES &&
    isInt(raw.protocol)
  ) {
    const { reader, call, data, responseLength, protocol } = raw;
    return { success: true, data: { op: 'transmit', reader, call, data, responseLength, protocol } };
  }
  return ToWorker.safeParse(raw);
}

/** The worker's messages, with a successful `reply` (a response, no error) checked by hand first. */
export function parseFromWorker(raw: unknown): ReturnType<typeof FromWorker.safeParse> {
  // A key present with `undefined` is kept as such by the schema: only absent keys are handled here.
  if (isRecord(raw) && raw.ev === 'reply' && isId(raw.call) && isBytes(raw.response) && !('error' in raw)) {
    const { call, response, protocol } = raw;
    if (!('protocol' in raw)) return { success: true, data: { ev: 'reply', call, response } };
    if (isInt(protocol)) return { success: true, data: { ev: 'reply', call, response, protocol } };
  }
  return FromWorker.safeParse(raw);
}
