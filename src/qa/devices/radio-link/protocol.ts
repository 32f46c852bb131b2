/**
 * The radio link protocol (docs/radio-link.md): how a noble instance in one process drives a device of a
 * virtual radio living in another, over a loopback TCP socket. Framing, message schemas (zod, checked on
 * every inbound frame on both sides) and the value codec live here; the server (radio side) and the remote
 * bindings (noble side) share them.
 *
 * Framing: UTF-8 JSON, one message per line ("\n"-terminated, blank lines ignored), at most
 * {@link MAX_FRAME_BYTES} bytes per line. Values inside `args`: bytes are `{"$bytes": "<base64>"}`, errors
 * `{"$error": {"message": "…"}}`, `undefined` travels as `null`.
 */
import { z } from 'zod';
import { errorText } from '../../../common/error-text.js';

export const PROTOCOL_NAME = 'mdl-kiosk-radio-link';
export const PROTOCOL_VERSION = 1;
/** Longest frame accepted, newline excluded. A notification is ≤ 514 bytes; discovery answers are small. */
export const MAX_FRAME_BYTES = 1024 * 1024;

/** HCI reason noble gets for links lost because the radio link itself went away (connection timeout). */
export const HCI_CONNECTION_TIMEOUT = 0x08;

// ---------------------------------------------------------------- values

export type Wire = null | boolean | number | string | Wire[] | { [key: string]: Wire };

/** A binding value → its wire form (Buffer/Uint8Array → $bytes, Error → $error, undefined → null). */
export function encodeValue(value: unknown): Wire {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  if (value instanceof Error) return { $error: { message: value.message } };
  if (Array.isArray(value)) return value.map(encodeValue);
  if (typeof value === 'object') {
    const out: Record<string, Wire> = {};
    for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = encodeValue(item);
    return out;
  }
  return null;
}

const base64 = z.base64();
const bytesTag = z.strictObject({ $bytes: base64 });
const errorTag = z.strictObject({ $error: z.strictObject({ message: z.string().max(4096) }) });

/** The wire form → a binding value (null → undefined, $bytes → Buffer, $error → Error). */
export function decodeValue(value: Wire): unknown {
  if (value === null) return undefined;
  if (Array.isArray(value)) return value.map(decodeValue);
  if (typeof value === 'object') {
    const bytes = bytesTag.safeParse(value);
    if (bytes.success) return Buffer.from(bytes.data.$bytes, 'base64');
    const error = errorTag.safeParse(value);
    if (error.success) return new Error(error.data.$error.message);
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = decodeValue(item);
    return out;
  }
  return value;
}

// ---------------------------------------------------------------- call arguments (client → server)

const id = z.string().min(1).max(64);
const uuid = z.string().min(1).max(64);
const uuids = z.array(uuid).max(64).nullable();
const flag = z.boolean().nullable();
const bytes = bytesTag.transform((tag) => Buffer.from(tag.$bytes, 'base64'));
const handle = z.int().min(0).max(0xffff);

/** Argument tuples per binding method; absent trailing arguments are sent as `null` or left out. */
export const CALL_ARGS = {
  start: z.tuple([]),
  init: z.tuple([]),
  stop: z.tuple([]),
  reset: z.tuple([]),
  setScanParameters: z.tuple([z.number().nullable(), z.number().nullable()]),
  startScanning: z.tuple([uuids, flag]),
  stopScanning: z.tuple([]),
  connect: z.tuple([id, z.strictObject({ mtu: z.int().min(23).max(517).optional() }).nullable()]),
  cancelConnect: z.tuple([id]),
  disconnect: z.tuple([id]),
  updateRssi: z.tuple([id]),
  discoverServices: z.tuple([id, uuids]),
  discoverIncludedServices: z.tuple([id, uuid, uuids]),
  discoverCharacteristics: z.tuple([id, uuid, uuids]),
  read: z.tuple([id, uuid, uuid]),
  write: z.tuple([id, uuid, uuid, bytes, z.boolean()]),
  notify: z.tuple([id, uuid, uuid, z.boolean()]),
  broadcast: z.tuple([id, uuid, uuid, z.boolean()]),
  discoverDescriptors: z.tuple([id, uuid, uuid]),
  readValue: z.tuple([id, uuid, uuid, uuid]),
  writeValue: z.tuple([id, uuid, uuid, uuid, bytes]),
  readHandle: z.tuple([id, handle]),
  writeHandle: z.tuple([id, handle, bytes, flag]),
} as const;

export type CallMethod = keyof typeof CALL_ARGS;
export const CALL_METHODS = Object.keys(CALL_ARGS) as CallMethod[];

/** What the radio needs to know of bleno's table: UUIDs and the properties the radio has. */
const radioService = z.strictObject({
  uuid,
  characteristics: z
    .array(z.strictObject({ uuid, properties: z.array(z.enum(['read', 'write', 'writeWithoutResponse', 'notify'])).max(4) }))
    .max(64),
});

/** bleno role: bleno's binding calls (docs/ble-libraries.md §2) that concern the radio; GATT stays with bleno. */
export const BLENO_CALL_ARGS = {
  init: z.tuple([]),
  startAdvertising: z.tuple([z.string().max(248), z.array(uuid).max(64).nullable()]),
  stopAdvertising: z.tuple([]),
  setServices: z.tuple([z.array(radioService).max(32)]),
  disconnect: z.tuple([handle.nullable()]),
  updateRssi: z.tuple([]),
  stop: z.tuple([]),
} as const;

export type BlenoCallMethod = keyof typeof BLENO_CALL_ARGS;
export const BLENO_CALL_METHODS = Object.keys(BLENO_CALL_ARGS) as BlenoCallMethod[];

/** bleno role: the binding events the radio side emits (`servicesSet` and `mtuChange` are bleno-side). */
export const BLENO_EVENT_NAMES = [
  'platform',
  'addressChange',
  'stateChange',
  'advertisingStart',
  'advertisingStop',
  'accept',
  'disconnect',
  'rssiUpdate',
] as const;
export type BlenoEventName = (typeof BLENO_EVENT_NAMES)[number];

export const ROLES = ['noble', 'bleno'] as const;
export type Role = (typeof ROLES)[number];

/** Events of noble's binding contract (docs/ble-libraries.md §2) that the radio side forwards, in emission order. */
export const EVENT_NAMES = [
  'stateChange',
  'addressChange',
  'scanParametersSet',
  'scanStart',
  'scanStop',
  'discover',
  'connect',
  'disconnect',
  'rssiUpdate',
  'servicesDiscover',
  'includedServicesDiscover',
  'characteristicsDiscover',
  'read',
  'write',
  'broadcast',
  'notify',
  'descriptorsDiscover',
  'valueRead',
  'valueWrite',
  'handleRead',
  'handleWrite',
  'handleNotify',
  'onMtu',
] as const;
export type EventName = (typeof EVENT_NAMES)[number];

// ---------------------------------------------------------------- messages

const wireArgs = z.array(z.json()).max(16);

export const helloSchema = z.strictObject({
  type: z.literal('hello'),
  protocol: z.literal(PROTOCOL_NAME),
  version: z.int().min(1),
  role: z.enum(ROLES),
  /** Name for the device the server creates (logs: `name@address`). */
  name: z.string().min(1).max(64).optional(),
  /** Attach to this existing device (id or address) instead of creating one. */
  device: z.string().min(1).max(64).optional(),
});
export type Hello = z.infer<typeof helloSchema>;

const ALL_METHODS = [...new Set<string>([...CALL_METHODS, ...BLENO_CALL_METHODS])] as [
  CallMethod | BlenoCallMethod,
  ...(CallMethod | BlenoCallMethod)[],
];

/** A binding call; which methods a connection may call depends on its hello's role. */
export const callSchema = z.strictObject({
  type: z.literal('call'),
  method: z.enum(ALL_METHODS),
  args: wireArgs,
});

/** bleno role, both directions: one ATT PDU of one connection (central → gatt, or gatt → central). */
export const aclSchema = z.strictObject({
  type: z.literal('acl'),
  handle,
  pdu: bytesTag,
});

/** bleno role, server → client: a central connected with this (already negotiated) ATT MTU. */
export const aclOpenSchema = z.strictObject({
  type: z.literal('acl_open'),
  handle,
  address: z.string().min(1).max(64),
  mtu: z.int().min(23).max(517),
});

/** bleno role, server → client: that connection's ACL stream ended (before the `disconnect` event). */
export const aclCloseSchema = z.strictObject({ type: z.literal('acl_close'), handle });

export const byeSchema = z.strictObject({ type: z.literal('bye'), reason: z.string().max(256).optional() });

export const clientMessageSchema = z.discriminatedUnion('type', [helloSchema, callSchema, aclSchema, byeSchema]);
export type ClientMessage = z.infer<typeof clientMessageSchema>;

export const deviceInfoSchema = z.strictObject({ id: z.string(), address: z.string(), name: z.string() });

export const welcomeSchema = z.strictObject({
  type: z.literal('welcome'),
  protocol: z.literal(PROTOCOL_NAME),
  version: z.literal(PROTOCOL_VERSION),
  role: z.enum(ROLES),
  device: deviceInfoSchema,
});

export const eventSchema = z.strictObject({
  type: z.literal('event'),
  name: z.enum([...new Set<string>([...EVENT_NAMES, ...BLENO_EVENT_NAMES])] as [
    EventName | BlenoEventName,
    ...(EventName | BlenoEventName)[],
  ]),
  args: wireArgs,
});

export const ERROR_CODES = [
  'bad_frame',
  'frame_too_large',
  'bad_message',
  'unsupported_version',
  'hello_required',
  'unknown_device',
  'device_busy',
  'call_failed',
  'server_error',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const errorSchema = z.strictObject({
  type: z.literal('error'),
  code: z.enum(ERROR_CODES),
  message: z.string(),
  /** true: the sender closes the connection right after this frame. */
  fatal: z.boolean(),
  /** Versions the server speaks (with `unsupported_version`). */
  supported: z.array(z.int()).optional(),
});
export type ErrorMessage = z.infer<typeof errorSchema>;

export const serverMessageSchema = z.discriminatedUnion('type', [
  welcomeSchema,
  eventSchema,
  errorSchema,
  aclSchema,
  aclOpenSchema,
  aclCloseSchema,
  byeSchema,
]);
export type ServerMessage = z.infer<typeof serverMessageSchema>;

/** A short, single-line description of a zod failure for error frames. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}

// ---------------------------------------------------------------- framing

export class FrameTooLargeError extends Error {
  constructor(readonly size: number) {
    super(`frame exceeds ${MAX_FRAME_BYTES} bytes (${size} bytes without a newline)`);
  }
}

/** Splits a byte stream into lines; throws {@link FrameTooLargeError} when a line grows too long. */
export class LineReader {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): string[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const lines: string[] = [];
    let start = 0;
    for (let at = this.pending.indexOf(0x0a); at !== -1; at = this.pending.indexOf(0x0a, start)) {
      if (at - start > MAX_FRAME_BYTES) throw new FrameTooLargeError(at - start);
      const line = this.pending.toString('utf8', start, at).replace(/\r$/, '');
      if (line.trim() !== '') lines.push(line);
      start = at + 1;
    }
    this.pending = this.pending.subarray(start);
    if (this.pending.length > MAX_FRAME_BYTES) throw new FrameTooLargeError(this.pending.length);
    return lines;
  }
}

/** One frame: the message as a JSON line. */
export function frame(message: ServerMessage | ClientMessage | { readonly type: string }): string {
  return `${JSON.stringify(message)}\n`;
}

/** JSON.parse without throwing: the parsed value, or undefined for text that is not JSON. */
export function parseJson(line: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(line) as unknown };
  } catch (e) {
    return { ok: false, message: errorText(e) };
  }
}
