/**
 * The health record as Prometheus metrics, for node_exporter's textfile collector (or any agent that reads
 * the Prometheus text exposition format, version 0.0.4): the same figures as `health.json`, no personal
 * data, one file rewritten atomically beside it. Counters count since the app started (Prometheus' `rate()`
 * and `increase()` handle the reset at a restart); node_exporter adds `node_textfile_mtime_seconds`, so a
 * kiosk that stopped writing shows as stale.
 */
import { CameraState, UpdateStatus } from '../common/kiosk-api.js';
import { KioskView } from '../common/kiosk-view.js';
import { BACKEND_FAILURE_KINDS } from '../common/backend-failure-kinds.js';
import type { BackendHealth, HealthRecord } from './health-schema.js';

const PHASES = KioskView.shape.phase.options;
const UPDATE_STATES = UpdateStatus.shape.state.options;
/** The camera's states, and `unknown` before a screen reports its camera (the record has none then). */
const CAMERA_STATES = [...CameraState.options, 'unknown'] as const;

/** A label value in the exposition format: backslash, double quote and newline escaped. */
function labelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labels(pairs: Record<string, string>): string {
  const entries = Object.entries(pairs);
  return entries.length === 0 ? '' : `{${entries.map(([k, v]) => `${k}="${labelValue(v)}"`).join(',')}}`;
}

class Exposition {
  private readonly lines: string[] = [];

  metric(name: string, type: 'gauge' | 'counter', help: string, samples: readonly (readonly [Record<string, string>, number])[]): void {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [pairs, value] of samples) this.lines.push(`${name}${labels(pairs)} ${Number.isFinite(value) ? String(value) : 'NaN'}`);
  }

  text(): string {
    return `${this.lines.join('\n')}\n`;
  }
}

const seconds = (iso: string): number => Date.parse(iso) / 1_000;

/**
 * The backend's failures. Every kind is written, 0 included: a counter that appears only at its first
 * failure would hide that failure from `increase()`. The last failure's kind, stage and status are labels of
 * an info-style gauge, so its timestamp stays one series whatever failed.
 */
function backendMetrics(out: Exposition, backend: BackendHealth): void {
  out.metric(
    'mdl_kiosk_backend_failures_total',
    'counter',
    'Backend failures since the app started, by kind (the retry policy counts them; see the installer guide).',
    BACKEND_FAILURE_KINDS.map((kind) => [{ kind }, backend.failures[kind] ?? 0] as const),
  );
  out.metric(
    'mdl_kiosk_backend_failures_consecutive',
    'gauge',
    'Backend failures in a row since the backend last proved healthy (0: it works).',
    [[{}, backend.consecutive]],
  );
  const last = backend.lastFailure;
  out.metric(
    'mdl_kiosk_backend_last_failure_info',
    'gauge',
    'The last backend failure: its kind, stage and HTTP status (empty without one); always 1, absent before any failure.',
    last === null ? [] : [[{ kind: last.kind, stage: last.stage, status: last.status === null ? '' : String(last.status) }, 1]],
  );
  out.metric(
    'mdl_kiosk_backend_last_failure_timestamp_seconds',
    'gauge',
    'When the last backend failure happened (Unix time); absent before any failure.',
    last === null ? [] : [[{}, seconds(last.at)]],
  );
  out.metric('mdl_kiosk_backend_requests_last_minute', 'gauge', 'Requests to the backend counted against the budget in the last 60 s.', [
    [{}, backend.requestsLastMinute],
  ]);
  out.metric(
    'mdl_kiosk_backend_request_budget_per_minute',
    'gauge',
    'The request budget: at most this many requests to the backend in any 60 s (session.maxRequestsPerMinute).',
    [[{}, backend.maxRequestsPerMinute]],
  );
}

/** What the package the app runs from is, when it runs from one. */
export interface InstalledPackage {
  /** SHA-256 of the installed app.asar (src/main/installed-asar.ts). */
  readonly asarSha256?: string | undefined;
}

/** The record's figures in the text format (every metric `mdl_kiosk_…`). */
export function healthMetricsText(record: HealthRecord, build: InstalledPackage = {}): string {
  const out = new Exposition();
  out.metric('mdl_kiosk_info', 'gauge', 'The kiosk app: version and flavour (always 1).', [
    [{ version: record.version, flavour: record.flavour }, 1],
  ]);
  if (build.asarSha256 !== undefined)
    out.metric('mdl_kiosk_build_info', 'gauge', 'The installed package: SHA-256 of its app.asar (always 1; only a packaged app).', [
      [{ asar_sha256: build.asarSha256 }, 1],
    ]);
  out.metric('mdl_kiosk_start_time_seconds', 'gauge', 'When the app started (Unix time).', [[{}, seconds(record.startedAt)]]);
  out.metric('mdl_kiosk_last_update_time_seconds', 'gauge', 'When this record was written (Unix time).', [[{}, seconds(record.updatedAt)]]);
  out.metric('mdl_kiosk_test_mode', 'gauge', '1 when the kiosk shows TEST MODE.', [[{}, record.testMode ? 1 : 0]]);
  out.metric(
    'mdl_kiosk_phase',
    'gauge',
    'The kiosk phase: 1 for the current one, 0 for the others.',
    PHASES.map((phase) => [{ phase }, phase === record.phase ? 1 : 0] as const),
  );
  out.metric(
    'mdl_kiosk_device_usable',
    'gauge',
    'Whether each device can be used (1) or not (0), with the reason when not.',
    (['nfc', 'qr', 'bleCentral', 'blePeripheral'] as const).map((device) => {
      const d = record.devices[device];
      return [{ device, reason: d.reason ?? '' }, d.usable ? 1 : 0] as const;
    }),
  );
  // Written before any report too (`unknown` 1), so a rule or a panel sees every kiosk's camera family.
  const camera = record.camera?.state ?? 'unknown';
  out.metric(
    'mdl_kiosk_camera_state',
    'gauge',
    "The screen's camera: 1 for its current state, 0 for the others; a problem (denied, missing, unplugged, error) stays until the camera runs again; unknown before the screen reports.",
    CAMERA_STATES.map((state) => [{ state }, state === camera ? 1 : 0] as const),
  );
  out.metric('mdl_kiosk_camera_worked', 'gauge', "1 when the screen's camera has delivered frames since the app started.", [
    [{}, record.camera?.worked ? 1 : 0],
  ]);
  const o = record.outcomes;
  out.metric('mdl_kiosk_verifications_total', 'counter', 'Verifications that ended since the app started, by result.', [
    [{ result: 'verified' }, o.verified],
    [{ result: 'rejected' }, o.rejected],
    [{ result: 'undetermined' }, o.undetermined],
    [{ result: 'failed' }, o.failed],
  ]);
  out.metric(
    'mdl_kiosk_request_answers_total',
    'counter',
    'Answers to the request (age met or not, elements missing) of verified documents since the app started.',
    [
      [{ answer: 'met' }, o.answers.met],
      [{ answer: 'not_met' }, o.answers.notMet],
      [{ answer: 'undetermined' }, o.answers.undetermined],
    ],
  );
  out.metric(
    'mdl_kiosk_rejection_reasons_total',
    'counter',
    'Rejection reasons since the app started (one rejection may have several).',
    Object.entries(o.reasons).map(([reason, n]) => [{ reason }, n] as const),
  );
  out.metric(
    'mdl_kiosk_errors_total',
    'counter',
    'Error codes of verifications that failed since the app started.',
    Object.entries(o.errors).map(([code, n]) => [{ code }, n] as const),
  );
  if (record.backend !== undefined) backendMetrics(out, record.backend);
  const update = record.updates?.state ?? 'disabled';
  out.metric(
    'mdl_kiosk_update_state',
    'gauge',
    'The updater state: 1 for the current one, 0 for the others.',
    UPDATE_STATES.map((state) => [{ state }, state === update ? 1 : 0] as const),
  );
  return out.text();
}
