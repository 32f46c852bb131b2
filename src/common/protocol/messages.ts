/**
 * The relay protocol's messages (docs/protocol.md §2.3–2.5, §4.2–4.4) as runtime schemas and types.
 *
 * Wire shapes only: binary fields stay base64 strings here, validated as strict RFC 4648 base64.
 * Unknown extra fields are dropped (forward compatibility); unknown `type` or `op` values, missing or
 * mistyped fields are rejected. Parsing into categorised violations lives in `parse.ts`.
 */
import { z } from 'zod';
import { base64ByteLength, isStrictBase64 } from './base64.js';
import { jsonBoundsProblem } from './json-bounds.js';
import { isUuid } from './uuid.js';

export const Base64String = z.string().refine(isStrictBase64, { error: 'not standard padded base64 (RFC 4648)' });
export const UuidString = z.string().refine(isUuid, { error: 'not a 128-bit UUID' });

// ---------------------------------------------------------------- shared resources (§2)

/** Requested namespaces (§2.3): namespace → element identifiers. */
export const Namespaces = z.record(z.string().min(1), z.array(z.string().min(1)));
export type Namespaces = z.infer<typeof Namespaces>;

export const MDL_DOCTYPE = 'org.iso.18013.5.1.mDL';

export const AuthenticationResult = z.enum(['Valid', 'Invalid', 'Unchecked']);
export type AuthenticationResult = z.infer<typeof AuthenticationResult>;

/** JSON object whose inner structure the spec does not show (errors, warnings, disclosed values). */
const JsonObject = z.record(z.string(), z.unknown());

/**
 * Refuses a backend object too deep or too large to show or print safely (json-bounds.ts). Checked on the
 * raw value before zod walks it, so a hostile object costs one bounded, iterative pass.
 */
const BoundedJsonObject = z
  .unknown()
  .superRefine((value, ctx) => {
    const problem = jsonBoundsProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, abort: true });
  })
  .pipe(JsonObject);
const BoundedResponse = z
  .unknown()
  .superRefine((value, ctx) => {
    const problem = jsonBoundsProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, abort: true });
  })
  .pipe(z.record(z.string(), JsonObject));

/** Outcome, the payload of `complete` (§2.4). */
export const Outcome = z.object({
  response: BoundedResponse,
  doc_types: z.array(z.string().max(256)).max(64),
  issuer_authentication: AuthenticationResult,
  device_authentication: AuthenticationResult,
  errors: BoundedJsonObject,
  warnings: BoundedJsonObject,
});
export type Outcome = z.infer<typeof Outcome>;

export const GattOperation = z.enum(['read', 'write_without_response', 'notify']);
export type GattOperation = z.infer<typeof GattOperation>;
export const AttributePermission = z.enum(['readable', 'writeable']);
export type AttributePermission = z.infer<typeof AttributePermission>;

/** Characteristic spec (§2.5). */
export const CharacteristicSpec = z.object({
  uuid: UuidString,
  operations: z.array(GattOperation),
  permissions: z.array(AttributePermission),
});
export type CharacteristicSpec = z.infer<typeof CharacteristicSpec>;

export const BleRole = z.enum(['central', 'peripheral']);
export type BleRole = z.infer<typeof BleRole>;

/** BLE mode, an element of `ble_exchange.params.modes` (§2.5). */
export const BleMode = z.object({
  role: BleRole,
  service_uuid: UuidString,
  characteristics: z.object({
    state: CharacteristicSpec,
    c2s: CharacteristicSpec,
    s2c: CharacteristicSpec,
    ident: CharacteristicSpec.optional(),
  }),
});
export type BleMode = z.infer<typeof BleMode>;

// ---------------------------------------------------------------- backend → client (§4.4)

/**
 * Largest payload each binary field can carry (the spec shows no limits, §8; these are what the transport
 * below can take, so anything larger is refused before it is decoded):
 * - a command APDU: extended length, CLA INS P1 P2 + 3-byte Lc + 65,535 data bytes + 2-byte Le
 *   (ISO/IEC 7816-4 §5.1) = 65,544 bytes;
 * - a GATT read value: 512 bytes, the longest attribute value (Bluetooth Core 5.x Vol 3 Part F §3.2.9);
 * - a `ble_write`: 64 KiB — far above one ATT value, so the BLE layer reports an oversize write with its
 *   size and limit rather than the parser hiding the cause; the bound only stops a field of megabytes.
 */
export const MAX_APDU_BYTES = 65_544;
export const MAX_BLE_READ_BYTES = 512;
export const MAX_BLE_WRITE_BYTES = 65_536;
/** Longest backend `error` text kept (the spec shows no format, §7.2). */
export const MAX_ERROR_MESSAGE_CHARS = 16_384;

/** Base64 text of at most `bytes` bytes: 4 characters per 3 bytes, padded. */
export function base64CharsFor(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

/**
 * The rule `boundedBase64` states for the schemas, as one check for the hand-checked per-message paths
 * (`parse.ts`, `canonical-step.ts`): strict base64 of at most `bytes` bytes, the length looked at first.
 */
export function isBase64Within(text: string, bytes: number): boolean {
  return text.length <= base64CharsFor(bytes) && isStrictBase64(text) && base64ByteLength(text) <= bytes;
}

function boundedBase64(bytes: number): z.ZodType<string> {
  const max = base64CharsFor(bytes);
  return z
    .string()
    .max(max, { error: `longer than ${bytes} bytes`, abort: true })
    .refine(isStrictBase64, { error: 'not standard padded base64 (RFC 4648)', abort: true })
    .refine((text) => base64ByteLength(text) <= bytes, { error: `longer than ${bytes} bytes` });
}

export const NfcApduParams = z.object({ data: boundedBase64(MAX_APDU_BYTES) });
export const NfcAwaitCardParams = z.object({});
/** `modes` is in preference order; an empty list leaves nothing to reply with, so it is rejected. */
export const BleExchangeParams = z.object({ modes: z.array(BleMode).min(1).max(16) });
export const BleWriteParams = z.object({ char: UuidString, data: boundedBase64(MAX_BLE_WRITE_BYTES) });
export const BleReadResponseParams = z.object({ data: boundedBase64(MAX_BLE_READ_BYTES) });

export const BACKEND_OPS = ['nfc_apdu', 'nfc_await_card', 'ble_exchange', 'ble_write', 'ble_read_response'] as const;
export type BackendOp = (typeof BACKEND_OPS)[number];

export const BackendParamsSchemas = {
  nfc_apdu: NfcApduParams,
  nfc_await_card: NfcAwaitCardParams,
  ble_exchange: BleExchangeParams,
  ble_write: BleWriteParams,
  ble_read_response: BleReadResponseParams,
} as const satisfies Record<BackendOp, z.ZodType>;

export type StepRequest =
  | { type: 'step_request'; op: 'nfc_apdu'; params: z.infer<typeof NfcApduParams> }
  | { type: 'step_request'; op: 'nfc_await_card'; params: z.infer<typeof NfcAwaitCardParams> }
  | { type: 'step_request'; op: 'ble_exchange'; params: z.infer<typeof BleExchangeParams> }
  | { type: 'step_request'; op: 'ble_write'; params: z.infer<typeof BleWriteParams> }
  | { type: 'step_request'; op: 'ble_read_response'; params: z.infer<typeof BleReadResponseParams> };

export const CompleteMessage = z.object({ type: z.literal('complete'), outcome: Outcome });
export type CompleteMessage = z.infer<typeof CompleteMessage>;
export const ErrorMessage = z.object({ type: z.literal('error'), message: z.string().max(MAX_ERROR_MESSAGE_CHARS) });
export type ErrorMessage = z.infer<typeof ErrorMessage>;

export type BackendMessage = StepRequest | CompleteMessage | ErrorMessage;

// ---------------------------------------------------------------- client → backend (§4.3)

const ok = z.literal('ok');

export const EngageResult = z.object({
  type: z.literal('step_result'),
  op: z.literal('engage'),
  status: ok,
  namespaces: Namespaces,
});
export const QrScannedResult = z.object({
  type: z.literal('step_result'),
  op: z.literal('qr_scanned'),
  status: ok,
  data: z.string(),
});
export const NfcCardPresentResult = z.object({
  type: z.literal('step_result'),
  op: z.literal('nfc_card_present'),
  status: ok,
});
export const NfcRapduResult = z.union([
  z.object({ type: z.literal('step_result'), op: z.literal('nfc_rapdu'), status: ok, data: Base64String }),
  z.object({ type: z.literal('step_result'), op: z.literal('nfc_rapdu'), status: z.literal('error'), reason: z.string().min(1) }),
]);
export const BleConnectedResult = z.union([
  z.object({ type: z.literal('step_result'), op: z.literal('ble_connected'), status: ok, role: BleRole }),
  z.object({
    type: z.literal('step_result'),
    op: z.literal('ble_connected'),
    status: z.literal('error'),
    role: BleRole,
    reason: z.string().min(1),
  }),
]);
/**
 * `ble_notified`, `ble_written` and `ble_read_request` carry no `status` in the spec's shapes (§4.3: "Those
 * messages carry no status field"), so the kiosk sends none. A backend-side parser should tolerate `ok`.
 */
export const BleNotifiedResult = z.object({
  type: z.literal('step_result'),
  op: z.literal('ble_notified'),
  char: UuidString,
  data: Base64String,
});
export const BleWrittenResult = z.object({
  type: z.literal('step_result'),
  op: z.literal('ble_written'),
  char: UuidString,
  data: Base64String,
});
export const BleReadRequestResult = z.object({
  type: z.literal('step_result'),
  op: z.literal('ble_read_request'),
  char: UuidString,
});

export const CLIENT_OPS = [
  'engage',
  'qr_scanned',
  'nfc_card_present',
  'nfc_rapdu',
  'ble_connected',
  'ble_notified',
  'ble_written',
  'ble_read_request',
] as const;
export type ClientOp = (typeof CLIENT_OPS)[number];

export const ClientMessageSchemas = {
  engage: EngageResult,
  qr_scanned: QrScannedResult,
  nfc_card_present: NfcCardPresentResult,
  nfc_rapdu: NfcRapduResult,
  ble_connected: BleConnectedResult,
  ble_notified: BleNotifiedResult,
  ble_written: BleWrittenResult,
  ble_read_request: BleReadRequestResult,
} as const satisfies Record<ClientOp, z.ZodType>;

export type ClientMessage = { [K in ClientOp]: z.infer<(typeof ClientMessageSchemas)[K]> }[ClientOp];

// ---------------------------------------------------------------- HTTP resources (§2.1, §2.2, §4.1)

/** Visible ASCII only: the value travels in an HTTP header (RFC 9110 field value, no spaces or controls). */
export const HeaderToken = z.string().regex(/^[\x21-\x7e]+$/, { error: 'must be visible ASCII without spaces' });

/** `POST /sessions` response; further fields (browser SDK) are ignored. */
export const SessionCreated = z.object({
  // `.` and `..` would be collapsed as URL path segments and address another resource.
  id: z
    .string()
    .min(1)
    .refine((id) => id !== '.' && id !== '..', { error: 'not usable as a path segment' }),
  client_secret: HeaderToken,
  iframe_url: z.string().optional(),
});
export type SessionCreated = z.infer<typeof SessionCreated>;

/**
 * `GET /sessions/{id}` response. Only `status` is guaranteed to be a string; the other fields are required
 * once the session completed, and the presentation metadata is kept (passthrough) because its fields are
 * not shown — a backend that also reports `issuer_authentication` there is honoured.
 */
export const SessionResult = z.looseObject({
  status: z.string(),
  response: BoundedResponse.optional(),
  errors: BoundedJsonObject.optional(),
  warnings: BoundedJsonObject.optional(),
  doc_types: z.array(z.string().max(256)).max(64).optional(),
  issuer_authentication: z.string().optional(),
  device_authentication: z.string().optional(),
});
export type SessionResult = z.infer<typeof SessionResult>;
