/**
 * The health record as Prometheus text for node_exporter's textfile collector: parsed back with a
 * Prometheus text-format parser from npm, the same figures as health.json, label values escaped, the file
 * written atomically and readable by the collector's user (0644), off unless configured.
 */
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { BACKEND_FAILURE_KINDS } from '../../../src/common/backend-failure-kinds.js';
import { healthMetricsText } from '../../../src/service/health-metrics.js';
import { HealthRecorder, type HealthSource } from '../../../src/service/health-record.js';
import { HealthRecordSchema, type HealthRecord } from '../../../src/service/health-schema.js';
import { screenState } from '../../support/screen-fixtures.js';

const RECORD: HealthRecord = HealthRecordSchema.parse({
  schema: 1,
  app: 'mdl-kiosk',
  version: '1.2.3-"beta"\\x',
  flavour: 'production',
  pid: 4242,
  startedAt: '2026-11-27T08:00:00.000Z',
  updatedAt: '2026-11-27T09:30:00.000Z',
  uptimeSeconds: 5_400,
  phase: 'ready',
  testMode: false,
  backendOrigin: 'https://verifier.example.com',
  devices: {
    nfc: { usable: false, reason: 'not_configured' },
    qr: { usable: true },
    bleCentral: { usable: true },
    blePeripheral: { usable: false, reason: 'unsupported' },
  },
  outcomes: {
    total: 9,
    verified: 5,
    rejected: 2,
    undetermined: 1,
    failed: 1,
    answers: { met: 3, notMet: 2, undetermined: 0 },
    reasons: { issuer_authentication_invalid: 2, errors_reported: 1 },
    errors: { ble_timeout: 1 },
  },
  lastError: 'ble_timeout',
  backend: {
    lastFailure: { kind: 'socket_refused', stage: 'handshake', status: 404, at: '2026-11-27T09:29:41.000Z' },
    consecutive: 5,
    failures: { unreachable: 2, socket_refused: 5 },
    requestsLastMinute: 4,
    maxRequestsPerMinute: 20,
  },
  updates: { state: 'downloaded', version: '1.2.4' },
  camera: { state: 'unplugged', worked: true },
});

type Families = ReturnType<typeof parsePrometheusTextFormat>;

function value(families: Families, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = families.find((f) => f.name === name);
  const sample = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return sample?.value === undefined ? undefined : Number(sample.value);
}

describe('health metrics (Prometheus text)', () => {
  it('parse back, with HELP and TYPE for every family, the same figures as the record', () => {
    const families = parsePrometheusTextFormat(healthMetricsText(RECORD));
    expect(families.map((f) => [f.name, f.type])).toEqual([
      ['mdl_kiosk_info', 'GAUGE'],
      ['mdl_kiosk_start_time_seconds', 'GAUGE'],
      ['mdl_kiosk_last_update_time_seconds', 'GAUGE'],
      ['mdl_kiosk_test_mode', 'GAUGE'],
      ['mdl_kiosk_phase', 'GAUGE'],
      ['mdl_kiosk_device_usable', 'GAUGE'],
      ['mdl_kiosk_camera_state', 'GAUGE'],
      ['mdl_kiosk_camera_worked', 'GAUGE'],
      ['mdl_kiosk_verifications_total', 'COUNTER'],
      ['mdl_kiosk_request_answers_total', 'COUNTER'],
      ['mdl_kiosk_rejection_reasons_total', 'COUNTER'],
      ['mdl_kiosk_errors_total', 'COUNTER'],
      ['mdl_kiosk_backend_failures_total', 'COUNTER'],
      ['mdl_kiosk_backend_failures_consecutive', 'GAUGE'],
      ['mdl_kiosk_backend_last_failure_info', 'GAUGE'],
      ['mdl_kiosk_backend_last_failure_timestamp_seconds', 'GAUGE'],
      ['mdl_kiosk_backend_requests_last_minute', 'GAUGE'],
      ['mdl_kiosk_backend_request_budget_per_minute', 'GAUGE'],
      ['mdl_kiosk_update_state', 'GAUGE'],
    ]);
    for (const family of families) expect(family.help.length).toBeGreaterThan(10);
    // Label values with quotes and backslashes come back as they were.
    expect(families.find((f) => f.name === 'mdl_kiosk_info')?.metrics[0]?.labels).toEqual({
      version: '1.2.3-"beta"\\x',
      flavour: 'production',
    });
    expect(value(families, 'mdl_kiosk_start_time_seconds')).toBe(Date.parse(RECORD.startedAt) / 1_000);
    expect(value(families, 'mdl_kiosk_last_update_time_seconds')).toBe(Date.parse(RECORD.updatedAt) / 1_000);
    expect(value(families, 'mdl_kiosk_test_mode')).toBe(0);
    expect(value(families, 'mdl_kiosk_phase', { phase: 'ready' })).toBe(1);
    expect(families.find((f) => f.name === 'mdl_kiosk_phase')?.metrics.filter((m) => m.value === '1')).toHaveLength(1);
    expect(value(families, 'mdl_kiosk_device_usable', { device: 'nfc', reason: 'not_configured' })).toBe(0);
    expect(value(families, 'mdl_kiosk_device_usable', { device: 'qr' })).toBe(1);
    expect(value(families, 'mdl_kiosk_device_usable', { device: 'blePeripheral', reason: 'unsupported' })).toBe(0);
    for (const result of ['verified', 'rejected', 'undetermined', 'failed'] as const) {
      expect(value(families, 'mdl_kiosk_verifications_total', { result })).toBe(RECORD.outcomes[result]);
    }
    expect(value(families, 'mdl_kiosk_request_answers_total', { answer: 'met' })).toBe(3);
    expect(value(families, 'mdl_kiosk_request_answers_total', { answer: 'not_met' })).toBe(2);
    expect(value(families, 'mdl_kiosk_rejection_reasons_total', { reason: 'issuer_authentication_invalid' })).toBe(2);
    expect(value(families, 'mdl_kiosk_errors_total', { code: 'ble_timeout' })).toBe(1);
    // Every kind of backend failure has its counter, 0 included (increase() then sees the first one).
    const failures = families.find((f) => f.name === 'mdl_kiosk_backend_failures_total')?.metrics ?? [];
    expect(failures.map((m) => m.labels?.kind)).toEqual([...BACKEND_FAILURE_KINDS]);
    expect(value(families, 'mdl_kiosk_backend_failures_total', { kind: 'socket_refused' })).toBe(5);
    expect(value(families, 'mdl_kiosk_backend_failures_total', { kind: 'unreachable' })).toBe(2);
    expect(value(families, 'mdl_kiosk_backend_failures_total', { kind: 'tls' })).toBe(0);
    expect(value(families, 'mdl_kiosk_backend_failures_consecutive')).toBe(5);
    expect(families.find((f) => f.name === 'mdl_kiosk_backend_last_failure_info')?.metrics).toEqual([
      { labels: { kind: 'socket_refused', stage: 'handshake', status: '404' }, value: '1' },
    ]);
    expect(value(families, 'mdl_kiosk_backend_last_failure_timestamp_seconds')).toBe(Date.parse('2026-11-27T09:29:41.000Z') / 1_000);
    expect(value(families, 'mdl_kiosk_backend_requests_last_minute')).toBe(4);
    expect(value(families, 'mdl_kiosk_backend_request_budget_per_minute')).toBe(20);
    expect(value(families, 'mdl_kiosk_update_state', { state: 'downloaded' })).toBe(1);
    expect(value(families, 'mdl_kiosk_update_state', { state: 'disabled' })).toBe(0);
    expect(families.find((f) => f.name === 'mdl_kiosk_camera_state')?.metrics.filter((m) => m.value === '1')).toEqual([
      { labels: { state: 'unplugged' }, value: '1' },
    ]);
    expect(value(families, 'mdl_kiosk_camera_worked')).toBe(1);
  });

  it("the camera: every state written, 1 for the record's; `unknown` 1 while no screen has reported (the record has none)", () => {
    const states = ['off', 'starting', 'active', 'denied', 'missing', 'unplugged', 'error', 'unknown'];
    const before = parsePrometheusTextFormat(healthMetricsText({ ...RECORD, camera: undefined }));
    expect(before.find((f) => f.name === 'mdl_kiosk_camera_state')?.metrics).toEqual(
      states.map((state) => ({ labels: { state }, value: state === 'unknown' ? '1' : '0' })),
    );
    expect(value(before, 'mdl_kiosk_camera_worked')).toBe(0);
    const off = parsePrometheusTextFormat(
      healthMetricsText(HealthRecordSchema.parse({ ...RECORD, camera: { state: 'off', worked: false } })),
    );
    expect(off.find((f) => f.name === 'mdl_kiosk_camera_state')?.metrics.filter((m) => m.value === '1')).toEqual([
      { labels: { state: 'off' }, value: '1' },
    ]);
  });

  it('no backend failure yet: counters at 0, no last failure; no kiosk running: no backend metrics at all', () => {
    const healthy = HealthRecordSchema.parse({
      ...RECORD,
      backend: { lastFailure: null, consecutive: 0, failures: {}, requestsLastMinute: 2, maxRequestsPerMinute: 20 },
    });
    const families = parsePrometheusTextFormat(healthMetricsText(healthy));
    expect(families.find((f) => f.name === 'mdl_kiosk_backend_failures_total')?.metrics.every((m) => m.value === '0')).toBe(true);
    expect(value(families, 'mdl_kiosk_backend_failures_consecutive')).toBe(0);
    expect(families.find((f) => f.name === 'mdl_kiosk_backend_last_failure_info')?.metrics ?? []).toEqual([]);
    expect(families.find((f) => f.name === 'mdl_kiosk_backend_last_failure_timestamp_seconds')?.metrics ?? []).toEqual([]);
    const none = parsePrometheusTextFormat(healthMetricsText({ ...RECORD, backend: undefined }));
    expect(none.filter((f) => f.name.startsWith('mdl_kiosk_backend_'))).toEqual([]);
  });

  it('the recorder writes the metrics file beside health.json, atomically (no temporary left) and readable by the collector (0644)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-metrics-'));
    try {
      let listener: ((s: ReturnType<typeof screenState>) => void) | undefined;
      const service: HealthSource = {
        version: '9.9.9',
        startedAt: Date.now() - 1_000,
        state: () => screenState('ready'),
        onState: (l) => {
          listener = l;
          return () => undefined;
        },
        onVerification: () => () => undefined,
        backendFailures: () => ({ lastFailure: null, consecutive: 0, totals: {}, requestsLastMinute: 1, maxRequestsPerMinute: 20 }),
      };
      const metricsFile = join(dir, 'textfile', 'mdl_kiosk.prom');
      const recorder = new HealthRecorder({
        service,
        file: join(dir, 'health.json'),
        metricsFile,
        flavour: 'production',
        everySeconds: 60,
      });
      recorder.start();
      await recorder.stop();
      expect(listener).toBeDefined();
      expect((await stat(metricsFile)).mode & 0o777).toBe(0o644);
      expect((await stat(join(dir, 'health.json'))).mode & 0o777).toBe(0o600);
      const families = parsePrometheusTextFormat(await readFile(metricsFile, 'utf8'));
      expect(families.find((f) => f.name === 'mdl_kiosk_info')?.metrics[0]?.labels?.version).toBe('9.9.9');
      expect(value(families, 'mdl_kiosk_phase', { phase: 'ready' })).toBe(1);
      expect(value(families, 'mdl_kiosk_backend_requests_last_minute')).toBe(1);
      expect((await readdir(join(dir, 'textfile'))).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a packaged app exports its app.asar digest as a label of mdl_kiosk_build_info; an unpackaged run writes no such family', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-metrics-'));
    try {
      const digest = 'ab'.repeat(32);
      const service: HealthSource = {
        version: '9.9.9',
        startedAt: Date.now() - 1_000,
        state: () => screenState('ready'),
        onState: () => () => undefined,
        onVerification: () => () => undefined,
        backendFailures: () => ({ lastFailure: null, consecutive: 0, totals: {}, requestsLastMinute: 0, maxRequestsPerMinute: 20 }),
      };
      const metricsFile = join(dir, 'mdl_kiosk.prom');
      const recorder = new HealthRecorder({
        service: { ...service, installedAsarSha256: digest },
        metricsFile,
        flavour: 'production',
        everySeconds: 60,
      });
      recorder.start();
      await recorder.stop();
      const families = parsePrometheusTextFormat(await readFile(metricsFile, 'utf8'));
      expect(families.find((f) => f.name === 'mdl_kiosk_build_info')?.metrics).toEqual([{ labels: { asar_sha256: digest }, value: '1' }]);

      const unpackaged = new HealthRecorder({ service, metricsFile, flavour: 'production', everySeconds: 60 });
      unpackaged.start();
      await unpackaged.stop();
      expect(await readFile(metricsFile, 'utf8')).not.toContain('mdl_kiosk_build_info');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
