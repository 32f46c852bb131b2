/**
 * QA fault injection: set at start (CLI flags), in process (`backend.faults.set`) or over HTTP
 * (`POST {base}/__mock/faults` with the API key). One-shot faults clear themselves once used.
 */
import { z } from 'zod';

export const PHASES = ['socket_open', 'engaged', 'nfc_handover', 'awaiting_card', 'ble_exchange', 'ble_transfer', 'complete'] as const;
export type Phase = (typeof PHASES)[number];

const BACKEND_OPS = ['nfc_apdu', 'nfc_await_card', 'ble_exchange', 'ble_write', 'ble_read_response', 'complete', 'error'] as const;
const CLIENT_OPS = ['engage', 'qr_scanned', 'nfc_card_present', 'nfc_rapdu', 'ble_connected', 'ble_notified', 'ble_written', 'ble_read_request'] as const;

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
  /** Answer the next WebSocket handshake with 409 (one-shot). */
  conflictNextConnect: z.boolean().default(false),
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

  /** True once, then the one-shot flag is cleared. */
  takeConflict(): boolean {
    if (!this.plan.conflictNextConnect) return false;
    this.plan = { ...this.plan, conflictNextConnect: false };
    return true;
  }

  takeMalformed(): boolean {
    if (!this.plan.malformedNext) return false;
    this.plan = { ...this.plan, malformedNext: false };
    return true;
  }
}
