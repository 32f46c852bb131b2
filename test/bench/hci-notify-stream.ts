/**
 * What the processes of the HCI notify comparison share (ble-bench-hci.ts, its phones' child
 * hci-phone-child.ts and its bare-noble child hci-bare-noble-child.ts): the value each notification carries
 * (its index in the first 4 bytes, so order and loss are checked at the receiver), the order check, the
 * sender's window, and the messages between the bench and its children.
 */
import { z } from 'zod';

export const VALUE_BYTES = 240;
/** Bound on what one stream may ask for (the child refuses more). */
export const MAX_STREAM = 100_000;

export function notifyValue(i: number): Uint8Array {
  const out = new Uint8Array(VALUE_BYTES).fill(0xa5);
  new DataView(out.buffer).setUint32(0, i);
  return out;
}

const indexOf = (data: Uint8Array): number => new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(0);

/**
 * Takes one stream's values in order: `start(count)` arms it, `done` hears the last one; gaps and repeats
 * are failures. `received` counts the stream's values so far, for the sender's window (see WINDOW).
 */
export class OrderedSink {
  private expected = 0;
  private count = 0;
  private onDone: (() => void) | undefined;
  received = 0;
  /** Called with `received` after each value (the bench's window, the child's progress messages). */
  onValue: ((received: number) => void) | undefined;
  readonly failures: string[] = [];

  start(count: number, onDone: () => void): void {
    this.expected = 0;
    this.received = 0;
    this.count = count;
    this.onDone = onDone;
  }

  readonly receive = (data: Uint8Array): void => {
    const index = indexOf(data);
    if (index !== this.expected && this.failures.length < 20)
      this.failures.push(`notification ${index} arrived where ${this.expected} was expected`);
    this.expected = index + 1;
    this.received += 1;
    this.onValue?.(this.received);
    if (index === this.count - 1) {
      const done = this.onDone;
      this.onDone = undefined;
      done?.();
    }
  };
}

/**
 * The sender keeps at most WINDOW values ahead of what the receiver took. Without it a receiver in another
 * process falls behind the phone (the emulated controller completes a packet when it passes it on, not when
 * the host reads it), the socket and pty buffers between btvirt and the receiver fill, and values are lost
 * (first runs: gaps of 30–500 values in every receiver, rates up to 5,000/s that were the sender's, not the
 * receiver's). A real link has the same limit in the peer's buffers; the window makes the figure the rate
 * the receiver sustains. Every receiver's progress reaches the phone every PROGRESS_EVERY values (through
 * the bench), the kiosk's and the floor's alike.
 */
export const WINDOW = 64;
export const PROGRESS_EVERY = 16;

/** bench → bare-noble child. */
export const BareRequest = z.discriminatedUnion('t', [
  z.strictObject({
    t: z.literal('connect'),
    service: z.string().regex(/^[0-9a-f]{32}$/),
    characteristic: z.string().regex(/^[0-9a-f]{32}$/),
  }),
  z.strictObject({ t: z.literal('expect'), count: z.number().int().positive().max(MAX_STREAM) }),
  z.strictObject({ t: z.literal('stop') }),
]);
export type BareRequest = z.infer<typeof BareRequest>;

/** bare-noble child → bench. */
export const BareReply = z.discriminatedUnion('t', [
  z.strictObject({ t: z.literal('subscribed'), address: z.string().max(64) }),
  z.strictObject({ t: z.literal('armed') }),
  z.strictObject({ t: z.literal('progress'), received: z.number().int().nonnegative().max(MAX_STREAM) }),
  z.strictObject({ t: z.literal('done'), failures: z.array(z.string().max(200)).max(20) }),
  z.strictObject({ t: z.literal('error'), message: z.string().max(2_000) }),
]);
export type BareReply = z.infer<typeof BareReply>;

const Index = z.number().int().nonnegative().max(15);
const Uuid = z.string().min(1).max(64);

/** bench → phones' child. */
export const PhoneRequest = z.discriminatedUnion('t', [
  z.strictObject({ t: z.literal('serve'), index: Index, service: Uuid }),
  z.strictObject({ t: z.literal('stream'), index: Index, service: Uuid, count: z.number().int().positive().max(MAX_STREAM) }),
  z.strictObject({ t: z.literal('progress'), index: Index, received: z.number().int().nonnegative().max(MAX_STREAM) }),
  z.strictObject({ t: z.literal('stop') }),
]);
export type PhoneRequest = z.infer<typeof PhoneRequest>;

/** phones' child → bench. */
export const PhoneReply = z.discriminatedUnion('t', [
  z.strictObject({ t: z.literal('subscribed'), index: Index }),
  z.strictObject({ t: z.literal('error'), message: z.string().max(2_000) }),
]);
export type PhoneReply = z.infer<typeof PhoneReply>;
