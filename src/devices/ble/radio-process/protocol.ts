/**
 * The messages between the kiosk and its radio process (docs/ARCHITECTURE.md "The radio process"): the
 * `BleCentral` / `BlePeripheral` ports carried over a structured-clone channel (Node `fork` with
 * `serialization: 'advanced'`, Electron's `utilityProcess`). Bytes travel as `Uint8Array` (structured
 * clone keeps them binary). Both sides validate everything they receive against these schemas, with
 * bounded sizes: a message that does not parse is logged and dropped, never thrown at the receiver.
 */
import { z } from 'zod';
import { CharacteristicSpec } from '../../../common/protocol/messages.js';
import { ATT_MAX_VALUE_BYTES } from '../../ports.js';
import { isRecord } from '../../../common/is-record.js';

/** Larger than any ATT value (512), so the adapters' own size check decides (BleValueTooLargeError). */
export const MAX_DATA_BYTES = 4 * ATT_MAX_VALUE_BYTES;
const MAX_TEXT = 2_000;

const Id = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
/** A characteristic's UUID as the libraries spell it; bounded so a bad child cannot send a long text. */
const MAX_UUID_CHARS = 64;
const Uuid = z.string().min(1).max(MAX_UUID_CHARS);
const Text = z.string().max(MAX_TEXT);
const Bytes = z
  .custom<Uint8Array>((v) => v instanceof Uint8Array, { message: 'expected bytes (Uint8Array)' })
  .refine((b) => b.byteLength <= MAX_DATA_BYTES, { message: `more than ${MAX_DATA_BYTES} bytes` });

export const RadioProfile = z.strictObject({
  serviceUuid: Uuid,
  characteristics: z.strictObject({
    state: CharacteristicSpec,
    c2s: CharacteristicSpec,
    s2c: CharacteristicSpec,
    ident: CharacteristicSpec.optional(),
  }),
});

export const RadioAvailability = z.strictObject({ usable: z.boolean(), reason: z.string().max(100).optional(), detail: Text.optional() });

/** How the child builds its stack: what `loadPlatformBle` takes that can cross a process boundary. */
export const RadioInit = z.strictObject({
  central: z.boolean(),
  peripheral: z.boolean(),
  usbDongle: z.strictObject({ vid: z.number().int().min(0).max(0xffff), pid: z.number().int().min(0).max(0xffff) }).optional(),
});
export type RadioInit = z.infer<typeof RadioInit>;

/** An error as it crosses: enough to rebuild the port's error classes on the other side. */
export const RadioError = z.strictObject({
  name: z.enum(['BleSetupError', 'BleValueTooLargeError', 'AbortError', 'Error']),
  message: Text,
  reason: Text.optional(),
  operation: z.enum(['notification', 'write-without-response']).optional(),
  bytes: z.number().int().nonnegative().optional(),
  limit: z.number().int().nonnegative().optional(),
  attMtu: z.number().int().positive().optional(),
});
export type RadioError = z.infer<typeof RadioError>;

export const ParentMessage = z.discriminatedUnion('t', [
  z.strictObject({ t: z.literal('init'), init: RadioInit }),
  z.strictObject({ t: z.literal('ping'), id: Id }),
  z.strictObject({ t: z.literal('connect'), id: Id, profile: RadioProfile }),
  z.strictObject({ t: z.literal('advertise'), id: Id, profile: RadioProfile }),
  /** Cancels the request `id` (connect, advertise, write, notify, flush); its reply may still come. */
  z.strictObject({ t: z.literal('abort'), id: Id }),
  z.strictObject({ t: z.literal('write'), id: Id, link: Id, uuid: Uuid, data: Bytes }),
  z.strictObject({ t: z.literal('notify'), id: Id, session: Id, uuid: Uuid, data: Bytes }),
  z.strictObject({ t: z.literal('flush'), id: Id, link: Id }),
  z.strictObject({ t: z.literal('close'), id: Id, link: Id }),
  /** The answer to a read event: `value` to respond, none to fail it. */
  z.strictObject({ t: z.literal('read-answer'), session: Id, read: Id, value: Bytes.optional() }),
  z.strictObject({ t: z.literal('shutdown') }),
  /** QA-only commands (a planted crash or stray output); the production child refuses them. */
  z.strictObject({ t: z.literal('qa'), command: z.string().min(1).max(32) }),
]);
export type ParentMessage = z.infer<typeof ParentMessage>;

const PeripheralEventWire = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('connect') }),
  z.strictObject({ kind: z.literal('subscribe'), characteristicUuid: Uuid }),
  z.strictObject({ kind: z.literal('unsubscribe'), characteristicUuid: Uuid }),
  z.strictObject({ kind: z.literal('read'), characteristicUuid: Uuid, offset: z.number().int().nonnegative().max(0xffff), read: Id }),
  z.strictObject({ kind: z.literal('write'), characteristicUuid: Uuid, data: Bytes }),
  z.strictObject({ kind: z.literal('disconnect'), reason: Text }),
]);
export type PeripheralEventWire = z.infer<typeof PeripheralEventWire>;

export const ChildMessage = z.discriminatedUnion('t', [
  z.strictObject({
    t: z.literal('ready'),
    central: RadioAvailability.optional(),
    peripheral: RadioAvailability.optional(),
    problems: z.array(Text).max(8),
  }),
  z.strictObject({ t: z.literal('pong'), id: Id }),
  z.strictObject({ t: z.literal('availability'), role: z.enum(['central', 'peripheral']), availability: RadioAvailability }),
  z.strictObject({ t: z.literal('ok'), id: Id, link: Id.optional(), mtu: z.number().int().positive().max(0xffff).optional() }),
  z.strictObject({ t: z.literal('error'), id: Id, error: RadioError }),
  z.strictObject({ t: z.literal('notification'), link: Id, uuid: Uuid, data: Bytes }),
  z.strictObject({ t: z.literal('disconnect'), link: Id, reason: Text }),
  z.strictObject({ t: z.literal('event'), session: Id, event: PeripheralEventWire }),
  /** A log record of the child (its libraries' console, routed): the parent logs it. */
  z.strictObject({
    t: z.literal('log'),
    level: z.enum(['info', 'warn']),
    event: z.string().max(64),
    library: z.enum(['noble', 'bleno']).optional(),
    message: Text,
  }),
]);
export type ChildMessage = z.infer<typeof ChildMessage>;

/**
 * A message from the child, as `ChildMessage.safeParse` judges it, with the one per-value shape checked by
 * hand first: a `notification` crosses once per value the phone sends (thousands per verification), and
 * the schema's run was the largest part of the kiosk's own code on that path in bench:ble's profile
 * (issue 34). The hand check uses the schema's rules; anything it does not pass goes through the schema,
 * which accepts it or names what is wrong. test/unit/devices/ble/radio-protocol-fast.test.ts holds the two
 * to the same verdict and fields with fast-check.
 */
export function parseChildMessage(raw: unknown): ReturnType<typeof ChildMessage.safeParse> {
  if (isRecord(raw) && raw.t === 'notification' && Object.keys(raw).length === 4) {
    const { link, uuid, data } = raw;
    if (
      // zod's `.int()` is a safe integer (2^53 and beyond refused)
      typeof link === 'number' &&
      Number.isSafeInteger(link) &&
      link >= 0 &&
      typeof uuid === 'string' &&
      uuid.length >= 1 &&
      uuid.length <= MAX_UUID_CHARS &&
      data instanceof Uint8Array &&
      data.byteLength <= MAX_DATA_BYTES
    )
      return { success: true, data: { t: 'notification', link, uuid, data } };
  }
  return ChildMessage.safeParse(raw);
}

/** The first issue of a failed parse, short enough for a log line. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid message';
  return `${issue.path.join('.') || '(message)'}: ${issue.message}`.slice(0, 300);
}
