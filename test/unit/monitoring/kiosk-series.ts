/**
 * Prometheus series as a fleet's Prometheus would store them, made by the kiosk's own metrics writer: a
 * simulated kiosk runs minute by minute (its screen state, its backend's failures counted by the kiosk's
 * real RetryPolicy, its verifications counted by the real HealthRecorder, its screen's camera reports kept by
 * the real CameraStatus), each minute's record goes through
 * `healthMetricsText` (what the recorder writes to the `.prom` file) and becomes one scrape, with the
 * `instance` and `job` labels Prometheus adds. A hung app leaves its last file (node_exporter keeps serving
 * it); a computer that is off answers no scrape (`up` 0, every series stale).
 */
import type { CameraState, ScreenState, UpdateStatus } from '../../../src/common/kiosk-api.js';
import type { BackendFailure } from '../../../src/kiosk/backend-failure.js';
import type { VerificationReport } from '../../../src/kiosk/kiosk.js';
import { RetryPolicy, type RetryReport } from '../../../src/kiosk/retry-policy.js';
import { CameraStatus, type CameraHealth } from '../../../src/service/camera-status.js';
import { healthMetricsText } from '../../../src/service/health-metrics.js';
import { HealthRecorder, type HealthSource } from '../../../src/service/health-record.js';

export const JOB = 'node';
export const MINUTE_MS = 60_000;

/** One sample line of the text format: the metric name, its labels as written, the value. */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export interface Sample {
  readonly name: string;
  /** Label name → value, escaped as in the text format (and in a PromQL selector). */
  readonly labels: Readonly<Record<string, string>>;
  readonly value: string;
}

/** The samples of a text-format exposition (comments skipped; anything else unparsed is an error). */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(LABEL)) if (k !== undefined && v !== undefined) labels[k] = v;
    samples.push({ name: m[1] ?? '', labels, value: m[3] ?? '' });
  }
  return samples;
}

/** The metric names a text-format exposition holds (its `# TYPE` lines: a family may have no sample yet). */
export function metricNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^# TYPE (\S+) /.exec(line);
    if (m?.[1] !== undefined) names.add(m[1]);
  }
  return names;
}

const selector = (name: string, labels: Readonly<Record<string, string>>): string =>
  `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}}`;

/** What one scrape of the kiosk's node_exporter found. */
type Scrape = { readonly up: true; readonly text: string; readonly extra?: readonly Sample[] } | { readonly up: false };

/** The service as the recorder sees it, driven by the simulation. */
class SimSource implements HealthSource {
  readonly version = '1.4.2';
  current: ScreenState;
  failures: RetryReport | undefined;
  /** The screen's camera reports, kept as the service keeps them. */
  readonly camera = new CameraStatus();
  private readonly listeners = new Set<(r: VerificationReport) => void>();
  constructor(
    readonly startedAt: number,
    state: ScreenState,
  ) {
    this.current = state;
  }
  state(): ScreenState {
    return this.current;
  }
  onState(): () => void {
    return () => undefined;
  }
  onVerification(listener: (r: VerificationReport) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  backendFailures(): RetryReport | undefined {
    return this.failures;
  }
  cameraHealth(): CameraHealth | undefined {
    return this.camera.forHealth();
  }
  verify(report: VerificationReport): void {
    for (const l of this.listeners) l(report);
  }
}

export interface Minute {
  /** The screen state the kiosk shows this minute. */
  readonly state: ScreenState;
  /** Backend failures this minute, counted by the kiosk's RetryPolicy in order. */
  readonly failures?: readonly BackendFailure[];
  /** The backend proved healthy this minute (a session engaged and stayed up). */
  readonly healthy?: boolean;
  /** No kiosk runs (a configuration that cannot build one): no backend metrics at all. */
  readonly noKiosk?: boolean;
  readonly verifications?: readonly VerificationReport[];
  /** What the screen reports of its camera this minute, in order (none: no report this minute). */
  readonly camera?: readonly CameraState[];
  readonly updates?: UpdateStatus;
  /** Samples node_exporter adds of its own this scrape (e.g. `node_textfile_scrape_error`). */
  readonly extra?: readonly Sample[];
}

/** One simulated kiosk; each call moves it on by a minute (one scrape). */
export class SimKiosk {
  private minute = 0;
  private readonly scrapes: Scrape[] = [];
  private source: SimSource | undefined;
  private recorder: HealthRecorder | undefined;
  private policy: RetryPolicy | undefined;
  private updates: UpdateStatus | undefined;

  /**
   * @param targetLabels labels the scrape configuration gives this target (e.g. `qr_scanner`), added to
   *   every series as Prometheus does.
   */
  constructor(
    readonly instance: string,
    private readonly targetLabels: Readonly<Record<string, string>> = {},
  ) {}

  private now(): number {
    return this.minute * MINUTE_MS;
  }

  /** The app starts (again): counters and the retry policy start from zero, as in a real restart. */
  boot(state: ScreenState): this {
    void this.recorder?.stop();
    this.source = new SimSource(this.now(), state);
    this.policy = new RetryPolicy(
      () => ({ backoffMinMs: 1_000, backoffMaxMs: 30_000, conflictBackoffMs: 250, maxRequestsPerMinute: 20 }),
      () => 0.5,
    );
    this.recorder = new HealthRecorder({
      service: this.source,
      flavour: 'production',
      everySeconds: 30,
      now: () => this.now(),
      updates: () => this.updates ?? { state: 'idle' },
    });
    // Neither `file` nor `metricsFile`: start() only subscribes (and keeps a timer, unref'd, stopped in stop()).
    this.recorder.start();
    return this;
  }

  /** A minute of the running app, then its record as the metrics writer writes it. */
  run(minute: Minute, times = 1): this {
    for (let i = 0; i < times; i++) {
      const { source, recorder, policy } = this;
      if (!source || !recorder || !policy) throw new Error('boot() the kiosk first');
      for (const failure of minute.failures ?? []) policy.onFailure(failure, this.now());
      if (minute.healthy) policy.onHealthy();
      for (const report of minute.verifications ?? []) source.verify(report);
      for (const state of minute.camera ?? []) source.camera.report(state, undefined);
      source.current = minute.state;
      source.failures = minute.noKiosk ? undefined : policy.report(this.now());
      if (minute.updates) this.updates = minute.updates;
      this.scrapes.push({ up: true, text: healthMetricsText(recorder.record()), ...(minute.extra ? { extra: minute.extra } : {}) });
      this.minute++;
    }
    return this;
  }

  /** The app hangs or crashed: the file stays as it was, node_exporter serves it on. */
  hang(times = 1): this {
    const last = this.scrapes.at(-1);
    if (!last?.up) throw new Error('nothing written to hang on');
    for (let i = 0; i < times; i++) this.scrapes.push({ up: true, text: last.text });
    this.minute += times;
    void this.recorder?.stop();
    return this;
  }

  /** No kiosk file in the textfile directory (e.g. node_exporter cannot read it), only node_exporter's own samples. */
  unreadable(extra: readonly Sample[], times = 1): this {
    for (let i = 0; i < times; i++) this.scrapes.push({ up: true, text: '', extra });
    this.minute += times;
    return this;
  }

  /** The computer is off: the scrape fails. */
  off(times = 1): this {
    for (let i = 0; i < times; i++) this.scrapes.push({ up: false });
    this.minute += times;
    void this.recorder?.stop();
    return this;
  }

  async stop(): Promise<void> {
    await this.recorder?.stop();
  }

  /** The metrics texts this kiosk's writer produced, one per scrape that found one. */
  texts(): string[] {
    return this.scrapes.flatMap((s) => (s.up && s.text !== '' ? [s.text] : []));
  }

  /**
   * promtool `input_series`, one sample per minute from minute 0: `_` before a series first appears,
   * `stale` when a scrape no longer has it (Prometheus' staleness marker), `up` as Prometheus records it.
   */
  inputSeries(): { series: string; values: string }[] {
    const target = { ...this.targetLabels, instance: this.instance, job: JOB };
    const series = new Map<string, (string | undefined)[]>();
    const up: string[] = [];
    this.scrapes.forEach((scrape, i) => {
      up.push(scrape.up ? '1' : '0');
      if (!scrape.up) return;
      for (const s of [...parseSamples(scrape.text), ...(scrape.extra ?? [])]) {
        const key = selector(s.name, { ...target, ...s.labels });
        const values = series.get(key) ?? [];
        values[i] = s.value;
        series.set(key, values);
      }
    });
    const out = [{ series: selector('up', target), values: up.join(' ') }];
    for (const [key, values] of series) {
      const first = values.findIndex((v) => v !== undefined);
      const all = this.scrapes.map((_, i) => values[i] ?? (i < first ? '_' : 'stale'));
      out.push({ series: key, values: all.join(' ') });
    }
    return out;
  }
}
