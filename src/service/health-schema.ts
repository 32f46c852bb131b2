/**
 * The form of `health.json` (see health-record.ts): strict, so it can hold no session id, secret or
 * disclosed data, and every count key must look like a code. Agents validate a record with
 * {@link HealthRecordSchema}; the recorder and the Prometheus text both read this type.
 */
import { z } from 'zod';
import { BackendFailureKind, FailureStage } from '../common/backend-failure-kinds.js';
import { KioskView } from '../common/kiosk-view.js';
import { CameraState, UpdateStatus } from '../common/kiosk-api.js';

export const CODE = /^[A-Za-z0-9_.:-]{1,64}$/;
const Code = z.string().regex(CODE);
/** Distinct reasons and error codes counted at most (a misbehaving backend cannot grow the file). */
export const MAX_KINDS = 50;
const Counts = z
  .record(Code, z.number().int().min(0))
  .refine((r) => Object.keys(r).length <= MAX_KINDS, { error: `at most ${MAX_KINDS} keys` });
const Device = z.object({ usable: z.boolean(), reason: Code.optional() }).strict();
const Count = z.number().int().min(0);

/**
 * The backend's failures as the retry policy counts them: codes, an HTTP status and a time, never the
 * staff detail (free text that can name hosts; it is in the diagnostics and the support bundle).
 */
export const BackendHealthSchema = z
  .object({
    /** The last failure: its kind, where it happened, the HTTP status (null without one), when (ISO 8601). */
    lastFailure: z
      .object({
        kind: BackendFailureKind,
        stage: FailureStage,
        status: z.number().int().min(100).max(599).nullable(),
        at: z.iso.datetime(),
      })
      .strict()
      .nullable(),
    /** Failures in a row since the backend last proved healthy (0: it works). */
    consecutive: Count,
    /** Every failure since start, by kind (only the kinds that happened). */
    failures: z.partialRecord(BackendFailureKind, Count),
    /** Requests counted against the budget in the last 60 s, and the budget (`session.maxRequestsPerMinute`). */
    requestsLastMinute: Count,
    maxRequestsPerMinute: z.number().int().min(1),
  })
  .strict();
export type BackendHealth = z.infer<typeof BackendHealthSchema>;

export const HealthRecordSchema = z
  .object({
    schema: z.literal(1),
    app: z.literal('mdl-kiosk'),
    version: z.string().max(100),
    flavour: z.enum(['production', 'qa']),
    pid: z.number().int().positive(),
    /** ISO 8601 times. */
    startedAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    uptimeSeconds: z.number().int().min(0),
    phase: KioskView.shape.phase,
    testMode: z.boolean(),
    /** Origin only (`https://verifier.example.com`), or null when no backend is configured. */
    backendOrigin: z.string().max(300).nullable(),
    devices: z.object({ nfc: Device, qr: Device, bleCentral: Device, blePeripheral: Device }).strict(),
    /**
     * The screen's camera: its state (a problem — denied, missing, unplugged, error — is kept until the
     * camera runs again, though the screen turns it off outside Ready) and whether it ever delivered frames
     * since start. Never the device id, label or the browser's message: they can identify the machine.
     * Absent until a screen reports its camera (starting, headless); optional, so records written before
     * it existed still validate.
     */
    camera: z.object({ state: CameraState, worked: z.boolean() }).strict().optional(),
    outcomes: z
      .object({
        /** Verifications that ended, however they ended. */
        total: z.number().int().min(0),
        verified: z.number().int().min(0),
        rejected: z.number().int().min(0),
        /** A result without the authentication results: neither verified nor rejected. */
        undetermined: z.number().int().min(0),
        /** Ended without a verdict (an error). */
        failed: z.number().int().min(0),
        /**
         * The answer to the request, of the verifications with an outcome: `met` (e.g. 21 or older), `notMet`
         * (authentic but under age, or a required element withheld), `undetermined` (not verified, or the
         * age statement absent or contradictory).
         */
        answers: z
          .object({ met: z.number().int().min(0), notMet: z.number().int().min(0), undetermined: z.number().int().min(0) })
          .strict(),
        /** Rejection reasons (one rejection may have several). */
        reasons: Counts,
        /** Error codes of the verifications that failed. */
        errors: Counts,
      })
      .strict(),
    /** The code of the last error: a failed verification's, or the screen's (`config_error`, …). */
    lastError: Code.optional(),
    /** The backend's failures; absent while no kiosk runs (a configuration that cannot build one). */
    backend: BackendHealthSchema.optional(),
    updates: UpdateStatus.strict().optional(),
  })
  .strict();
export type HealthRecord = z.infer<typeof HealthRecordSchema>;
