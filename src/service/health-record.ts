/**
 * A small health record for fleet monitoring: `health.json` in the data folder, rewritten atomically every
 * `everySeconds` and at once after each verification, so an agent (a script, a monitoring daemon, an MDM
 * check) can tell whether the kiosk runs, what state it is in, whether its devices are usable and how its
 * verifications end — without the staff screen and without any personal data.
 *
 * It holds: the app and version, the flavour, pid, start and update times and uptime, the kiosk's phase,
 * TEST MODE, the backend's origin (never a path, key or token), each device's usability, the screen's
 * camera (its state and whether it ever worked; no device id or label), counts of
 * outcomes by verdict, by the answer to the request, by rejection reason and error code since start, the
 * last error code, the backend's failures as the retry policy counts them (the last one's kind, stage,
 * HTTP status and time, how many in a row, totals by kind, the request budget in use), and the updater's
 * status. It never holds a session id, a client secret, the API key, disclosed data or a portrait: the
 * schema (health-schema.ts) is strict, and every count key must look like a code.
 *
 * An agent should treat a record whose `updatedAt` is older than a few periods as "the kiosk is not
 * running" (the file stays after a crash), and validate it with {@link HealthRecordSchema}.
 */
import type { UpdateStatus } from '../common/kiosk-api.js';
import type { VerificationReport } from '../kiosk/kiosk.js';
import { backendHealth } from './backend-report.js';
import { writeFileAtomic } from './atomic-file.js';
import { healthMetricsText } from './health-metrics.js';
import type { KioskService } from './kiosk-service.js';
import { CODE, HealthRecordSchema, MAX_KINDS, type HealthRecord } from './health-schema.js';
import { errorText } from '../common/error-text.js';

/** What the recorder reads of the service. */
export type HealthSource = Pick<KioskService, 'state' | 'onState' | 'onVerification' | 'version' | 'startedAt' | 'backendFailures'> &
  /** Absent: no screen can report a camera (the record then has none, as before any report); no package digest. */
  Partial<Pick<KioskService, 'cameraHealth' | 'installedAsarSha256'>>;

export interface HealthRecorderOptions {
  readonly service: HealthSource;
  /** Where the record is written (usually `<data dir>/health.json`); unset: only the metrics file. */
  readonly file?: string;
  readonly flavour: 'production' | 'qa';
  readonly everySeconds: number;
  /**
   * Also write the figures as Prometheus text here (node_exporter's textfile collector: a `.prom` file in
   * its directory), mode 0644 so the collector's user can read it (a missing folder is made 0755 for the
   * same reason); unset: not written.
   */
  readonly metricsFile?: string;
  readonly updates?: () => UpdateStatus;
  readonly now?: () => number;
}

function bump(counts: Record<string, number>, key: string): void {
  if (!CODE.test(key)) return;
  if (!Object.hasOwn(counts, key) && Object.keys(counts).length >= MAX_KINDS) return;
  counts[key] = (counts[key] ?? 0) + 1;
}

export class HealthRecorder {
  private readonly options: HealthRecorderOptions;
  private readonly now: () => number;
  private readonly outcomes = {
    total: 0,
    verified: 0,
    rejected: 0,
    undetermined: 0,
    failed: 0,
    reasons: {} as Record<string, number>,
    errors: {} as Record<string, number>,
  };
  private readonly answers = { met: 0, notMet: 0, undetermined: 0 };
  private lastError: string | undefined;
  private lastScreenError: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribers: (() => void)[] = [];
  /** One write at a time; a request during a write runs once after it, with the newest data. */
  private writing: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private failing = false;

  constructor(options: HealthRecorderOptions) {
    if (!Number.isInteger(options.everySeconds) || options.everySeconds < 1)
      throw new RangeError('everySeconds must be a whole number of seconds, at least 1');
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  start(): void {
    if (this.timer || this.stopped) return;
    this.unsubscribers = [
      this.options.service.onVerification((report) => {
        this.count(report);
        this.write();
      }),
      this.options.service.onState((state) => {
        // A new screen error (config_error, backend_unavailable, …) is the last error until the next one.
        const code = state.view.error?.code;
        if (code !== undefined && code !== this.lastScreenError) this.lastError = code;
        this.lastScreenError = code;
      }),
    ];
    this.timer = setInterval(() => this.write(), this.options.everySeconds * 1_000);
    this.timer.unref();
    this.write();
  }

  /** Stops the timer and writes a final record (the phase then shows how the kiosk ended). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    await this.writing;
    await this.writeOnce();
  }

  private count(report: VerificationReport): void {
    const o = this.outcomes;
    o.total++;
    if (report.outcome?.verdict === 'verified') o.verified++;
    else if (report.outcome?.verdict === 'rejected') {
      o.rejected++;
      for (const reason of report.outcome.reasons.slice(0, 10)) bump(o.reasons, reason);
    } else if (report.outcome?.verdict === 'undetermined') o.undetermined++;
    else o.failed++;
    const answer = report.outcome?.answer.result;
    if (answer === 'met') this.answers.met++;
    else if (answer === 'not_met') this.answers.notMet++;
    else if (answer === 'undetermined') this.answers.undetermined++;
    if (report.error) {
      bump(o.errors, report.error.code);
      if (CODE.test(report.error.code)) this.lastError = report.error.code;
    }
  }

  /** The record as it stands now (validated: a bug here must not write something else). */
  record(): HealthRecord {
    const state = this.options.service.state();
    const now = this.now();
    const startedAt = this.options.service.startedAt;
    const device = (d: { usable: boolean; reason?: string | undefined }): HealthRecord['devices']['nfc'] =>
      d.reason !== undefined && CODE.test(d.reason) ? { usable: d.usable, reason: d.reason } : { usable: d.usable };
    const { devices } = state.view;
    const updates = this.options.updates?.();
    const backend = backendHealth(this.options.service.backendFailures());
    const camera = this.options.service.cameraHealth?.();
    const o = this.outcomes;
    return HealthRecordSchema.parse({
      schema: 1,
      app: 'mdl-kiosk',
      version: this.options.service.version.slice(0, 100),
      flavour: this.options.flavour,
      pid: process.pid,
      startedAt: new Date(startedAt).toISOString(),
      updatedAt: new Date(now).toISOString(),
      uptimeSeconds: Math.max(0, Math.floor((now - startedAt) / 1_000)),
      phase: state.view.phase,
      testMode: state.testMode,
      backendOrigin: state.backendOrigin,
      devices: {
        nfc: device(devices.nfc),
        qr: device(devices.qr),
        bleCentral: device(devices.bleCentral),
        blePeripheral: device(devices.blePeripheral),
      },
      ...(camera === undefined ? {} : { camera: { state: camera.state, worked: camera.worked } }),
      outcomes: {
        total: o.total,
        verified: o.verified,
        rejected: o.rejected,
        undetermined: o.undetermined,
        failed: o.failed,
        answers: { ...this.answers },
        reasons: { ...o.reasons },
        errors: { ...o.errors },
      },
      ...(this.lastError === undefined ? {} : { lastError: this.lastError }),
      ...(backend === undefined ? {} : { backend }),
      ...(updates === undefined ? {} : { updates }),
    });
  }

  private write(): void {
    if (this.stopped) return;
    if (this.writing) {
      this.again = true;
      return;
    }
    this.writing = this.writeOnce().finally(() => {
      this.writing = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.write();
      }
    });
  }

  private async writeOnce(): Promise<void> {
    let record: HealthRecord;
    const file = this.options.file;
    try {
      record = this.record();
      if (file !== undefined) await writeFileAtomic(file, `${JSON.stringify(record, null, 2)}\n`);
      this.failing = false;
    } catch (e) {
      // Monitoring must never stop the kiosk; a record that cannot be written just goes stale (said once).
      if (!this.failing) process.stderr.write(`mdl-kiosk: the health record ${file ?? ''} could not be written: ${errorText(e)}\n`);
      this.failing = true;
      return;
    }
    const metricsFile = this.options.metricsFile;
    if (metricsFile === undefined) return;
    try {
      await writeFileAtomic(metricsFile, healthMetricsText(record, { asarSha256: this.options.service.installedAsarSha256 }), {
        mode: 0o644,
        dirMode: 0o755,
      });
      this.metricsFailing = false;
    } catch (e) {
      if (!this.metricsFailing) process.stderr.write(`mdl-kiosk: the metrics file ${metricsFile} could not be written: ${errorText(e)}\n`);
      this.metricsFailing = true;
    }
  }

  private metricsFailing = false;
}
