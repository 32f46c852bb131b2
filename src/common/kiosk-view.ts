/**
 * `KioskView`: the serialisable picture of the kiosk that the main process pushes to the UI (and the CLI
 * prints). It crosses a process boundary, so it has a runtime schema; it holds no secrets. It does hold
 * the disclosed data of a finished verification, which the UI shows and clears after a timeout.
 */
import { z } from 'zod';
import { AuthenticationResult, BleRole } from './protocol/messages.js';

export const KioskPhase = z.enum([
  'starting', // services coming up
  'connecting', // creating a session / opening its socket / sending engage
  'offline', // backend unreachable; retrying with backoff
  'config_error', // credentials refused or configuration invalid; needs staff
  'cannot_verify', // the devices cannot finish a verification (no usable Bluetooth role, no way in); needs staff
  'ready', // pre-warmed session engaged, waiting for a tap or a QR scan
  'engaging', // transport fixed: QR sent or NFC handover running
  'awaiting_card', // backend asked for a re-tap (nfc_await_card)
  'ble_connecting', // ble_exchange received, setting up Bluetooth
  'transferring', // BLE link up, data flowing; the holder may be approving on the phone
  'result', // outcome on screen
  'error', // the verification failed; retry possible
  'remove_phone', // waiting for the phone to leave the reader before the next customer
  'stopped',
]);
export type KioskPhase = z.infer<typeof KioskPhase>;

/** Customer-facing prompts; the UI translates `prompt.<key>`. */
export const PromptKey = z.enum([
  'starting',
  'connecting',
  'offline',
  'config_error',
  /** The kiosk's devices cannot finish a verification; `error.code` names the cause. */
  'cannot_verify',
  'tap_or_scan',
  'hold_still',
  'tap_again',
  'connecting_phone',
  'approve_on_phone',
  'receiving',
  'verified',
  'rejected',
  /** The result was recovered without the authentication results: neither verified nor rejected. */
  'undetermined',
  'try_again',
  'remove_phone',
  /** The phone still lies on the reader after a failed attempt: lift it, then tap again. */
  'remove_to_retry',
  'stopped',
]);
export type PromptKey = z.infer<typeof PromptKey>;

export const Transport = z.enum(['nfc', 'qr']);
export type Transport = z.infer<typeof Transport>;

/**
 * `undetermined`: the backend's result does not say whether the document is authentic (a result fetched
 * with `GET /sessions/{id}` without its authentication results). Never shown as verified (fail closed).
 */
export const Verdict = z.enum(['verified', 'rejected', 'undetermined']);
export type Verdict = z.infer<typeof Verdict>;

/**
 * The answer to what the active request asked, as the core judges it: only a verified document answers
 * (anything else is `undetermined`). `met` is the one a counter may act on.
 */
export const RequirementResult = z.enum(['met', 'not_met', 'undetermined']);
export type RequirementResult = z.infer<typeof RequirementResult>;

/** A requested element the response does not hold; `required` ones decide `not_met`. */
export const MissingElement = z.object({ namespace: z.string().max(200), identifier: z.string().max(200), required: z.boolean() });
export type MissingElement = z.infer<typeof MissingElement>;

export const RequestAnswer = z.discriminatedUnion('kind', [
  /** An age request (`age_over_NN` and at most the portrait): is the holder `threshold` or older? */
  z.object({
    kind: z.literal('age'),
    threshold: z.number().int().min(0).max(200),
    result: RequirementResult,
    missing: z.array(MissingElement).max(200),
  }),
  /** Any other request: were the required elements disclosed? */
  z.object({ kind: z.literal('elements'), result: RequirementResult, missing: z.array(MissingElement).max(200) }),
]);
export type RequestAnswer = z.infer<typeof RequestAnswer>;

export const OutcomeView = z.object({
  verdict: Verdict,
  /**
   * Why a credential was rejected (empty when verified): stable keys, e.g. `errors_reported`;
   * `nothing_shared` first when no document was checked and nothing disclosed (the holder declined).
   */
  reasons: z.array(z.string()),
  /** The answer to the request that was asked (src/kiosk/request-answer.ts). */
  answer: RequestAnswer,
  response: z.record(z.string(), z.record(z.string(), z.unknown())),
  docTypes: z.array(z.string()),
  issuerAuthentication: AuthenticationResult.nullable(),
  deviceAuthentication: AuthenticationResult.nullable(),
  errors: z.record(z.string(), z.unknown()),
  warnings: z.record(z.string(), z.unknown()),
  /** `complete` message, or recovered with `GET /sessions/{id}` after the socket dropped. */
  source: z.enum(['complete', 'recovered']),
});
export type OutcomeView = z.infer<typeof OutcomeView>;

/**
 * An outcome a new customer's tap or scan replaced before it cleared (docs/kiosk-screen.md, "Outcome
 * kept"): for staff only, until the time it would have cleared. Codes and times, never a disclosed value.
 */
export const ReplacedOutcome = z.object({
  verdict: Verdict,
  answer: z.object({
    kind: z.enum(['age', 'elements']),
    result: RequirementResult,
    threshold: z.number().int().min(0).max(200).nullable(),
  }),
  /** How the replaced outcome's customer came in. */
  transport: Transport.nullable(),
  shownAt: z.number(),
  replacedAt: z.number(),
  /** How the customer who replaced it came in. */
  replacedBy: Transport,
  /** When it would have cleared by itself: the record is gone then. */
  clearsAt: z.number(),
});
export type ReplacedOutcome = z.infer<typeof ReplacedOutcome>;

export const ErrorView = z.object({
  /** Stable machine key, e.g. `backend_error`, `protocol_violation`, `timeout`, `ble_unavailable`. */
  code: z.string(),
  /** Staff-facing detail free of secrets and personal data. */
  detail: z.string(),
  /** Whether the kiosk will re-arm on its own (true) or needs staff (false). */
  retryable: z.boolean(),
});
export type ErrorView = z.infer<typeof ErrorView>;

export const DeviceStatusView = z.object({ usable: z.boolean(), reason: z.string().optional() });

/**
 * The backend as far as the kiosk knows it: `connected` only after a successful exchange (a session
 * engaged), `on_demand` when policy keeps no session and none has been made yet, `not_answering` when it
 * takes the traffic and answers nothing (a silent backend: no pong, no reply in time), `needs_staff` when it
 * refused the credentials or the kiosk is not configured to reach one.
 */
export const BackendState = z.enum(['connecting', 'connected', 'on_demand', 'offline', 'not_answering', 'needs_staff', 'stopped']);
export type BackendState = z.infer<typeof BackendState>;

export const KioskView = z.object({
  phase: KioskPhase,
  prompt: PromptKey,
  transport: Transport.nullable(),
  role: BleRole.nullable(),
  progress: z.object({
    /** Coarse step for a progress indicator: 0 idle … 4 transfer done. */
    step: z.number().int().min(0).max(4),
    apdus: z.number().int().min(0),
    bleMessages: z.number().int().min(0),
  }),
  outcome: OutcomeView.nullable(),
  error: ErrorView.nullable(),
  profile: z.string(),
  devices: z.object({
    nfc: DeviceStatusView,
    qr: DeviceStatusView,
    bleCentral: DeviceStatusView,
    blePeripheral: DeviceStatusView,
  }),
  backend: BackendState,
  /** Milliseconds since the epoch of this view. */
  at: z.number(),
});
export type KioskView = z.infer<typeof KioskView>;
