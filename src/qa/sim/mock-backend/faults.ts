/**
 * QA fault injection: set at start (CLI flags), in process (`backend.faults.set`) or over HTTP
 * (`POST {base}/__mock/faults` with the API key). One-shot faults clear themselves once used.
 */
import { z } from 'zod';

export const PHASES = ['socket_open', 'engaged', 'nfc_handover', 'awaiting_card', 'ble_exchange', 'ble_transfer', 'complete'] as const;
export type Phase = (typeof PHASES)[number];

const BACKEND_OPS = ['nfc_apdu', 'nfc_await_card', 'ble_exchange', 'ble_write', 'ble_read_response', 'complete', 'error'] as const;
const CLIENT_OPS = [
  'engage',
  'qr_scanned',
  'nfc_card_present',
  'nfc_rapdu',
  'ble_connected',
  'ble_notified',
  'ble_written',
  'ble_read_request',
] as const;

/** The HTTP exchanges a fault can hit: `POST /sessions`, `GET /sessions/{id}`, the WebSocket handshake. */
export const HTTP_EXCHANGES = ['create', 'result', 'upgrade'] as const;
export type HttpExchange = (typeof HTTP_EXCHANGES)[number];

/** The next `times` requests of one exchange are answered with `status` (a failing or overloaded service). */
const HttpFailureSchema = z.strictObject({
  status: z.number().int().min(400).max(599),
  times: z.number().int().min(1).max(1_000),
  /** Sent as `Retry-After` (seconds) when given. */
  retryAfterS: z.number().int().min(0).max(3_600).optional(),
});
export type HttpFailure = z.infer<typeof HttpFailureSchema>;

export const FaultPlanSchema = z.strictObject({
  /** Delay before sending each message of these ops (backend → kiosk), in ms. */
  delayMs: z.partialRecord(z.enum(BACKEND_OPS), z.number().int().min(0).max(600_000)).default({}),
  /** Send `error` once the kiosk has answered this many APDUs successfully. */
  fatalAfterApdu: z.number().int().min(0).optional(),
  /**
   * Replace the n-th APDU of a handover (1-based) by a 70,000-byte one, longer than any PC/SC stack carries
   * (pcsc-lite refuses it with SCARD_E_INSUFFICIENT_BUFFER): a fatal reader error through a real pcscd.
   */
  oversizeApduAt: z.number().int().min(1).optional(),
  /** Send `error` when the kiosk sends this op. */
  errorOnOp: z.enum(CLIENT_OPS).optional(),
  /** Close the socket (1011) on entering this phase. */
  closeAtPhase: z.enum(PHASES).optional(),
  /** Destroy the TCP connection (no close frame, as a network drop) on entering this phase. */
  terminateAtPhase: z.enum(PHASES).optional(),
  /** Answer the next WebSocket handshake with 409 (one-shot). */
  conflictNextConnect: z.boolean().default(false),
  /** Answer the next this many WebSocket handshakes with 409 (counts down; after `conflictNextConnect`). */
  conflictConnects: z.number().int().min(0).max(100).default(0),
  /** Answer the next WebSocket handshake with 404, as for an unknown or expired session (one-shot). */
  notFoundNextConnect: z.boolean().default(false),
  /** HTTP failures per exchange (each counts down and clears itself). */
  httpFailures: z.partialRecord(z.enum(HTTP_EXCHANGES), HttpFailureSchema).default({}),
  /** Delay before answering each request of these exchanges, in ms (a slow service). */
  httpDelayMs: z.partialRecord(z.enum(HTTP_EXCHANGES), z.number().int().min(0).max(600_000)).default({}),
  /**
   * Close a session's socket (1001) when the session expires. The spec only says that connecting to an
   * expired session answers 404 (§3); a service that also ends the open connection is one QA can ask for.
   */
  closeAtExpiry: z.boolean().default(false),
  /** Send the next backend message as malformed JSON (one-shot). */
  malformedNext: z.boolean().default(false),
});
export type FaultPlan = z.infer<typeof FaultPlanSchema>;
export type FaultPlanInput = z.input<typeof FaultPlanSchema>;

export class FaultController {
  private plan: FaultPlan;

  constructor(initial: FaultPlanInput = {}) {
    this.plan = FaultPlanSchema.parse(initial);
  }

  get current(): FaultPlan {
    return this.plan;
  }

  /** Replaces the plan (validated); throws a ZodError on bad input. */
  set(plan: FaultPlanInput): FaultPlan {
    this.plan = FaultPlanSchema.parse(plan);
    return this.plan;
  }

  clear(): void {
    this.plan = FaultPlanSchema.parse({});
  }

  /** True once, then the one-shot flag is cleared; then true while `conflictConnects` counts down. */
  takeConflict(): boolean {
    if (this.plan.conflictNextConnect) {
      this.plan = { ...this.plan, conflictNextConnect: false };
      return true;
    }
    if (this.plan.conflictConnects <= 0) return false;
    this.plan = { ...this.plan, conflictConnects: this.plan.conflictConnects - 1 };
    return true;
  }

  takeNotFound(): boolean {
    if (!this.plan.notFoundNextConnect) return false;
    this.plan = { ...this.plan, notFoundNextConnect: false };
    return true;
  }

  /** The failure to answer this request of `exchange` with, if one is planned (counted down). */
  takeHttpFailure(exchange: HttpExchange): HttpFailure | undefined {
    const failure = this.plan.httpFailures[exchange];
    if (failure === undefined) return undefined;
    const rest = Object.fromEntries(Object.entries(this.plan.httpFailures).filter(([key]) => key !== exchange));
    this.plan = {
      ...this.plan,
      httpFailures: failure.times > 1 ? { ...rest, [exchange]: { ...failure, times: failure.times - 1 } } : rest,
    };
    return failure;
  }

  takeMalformed(): boolean {
    if (!this.plan.malformedNext) return false;
    this.plan = { ...this.plan, malformedNext: false };
    return true;
  }
}
