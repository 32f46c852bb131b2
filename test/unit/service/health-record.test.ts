/**
 * The health record for fleet monitoring: rewritten on its period and at once after each outcome, counts
 * by verdict, reason and error code, the last error, the updater's status, a schema a monitoring agent can
 * validate against, a final record at stop — and never a holder's data, a session id or a key.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ScreenState } from '../../../src/common/kiosk-api.js';
import type { OutcomeView } from '../../../src/common/kiosk-view.js';
import type { VerificationReport } from '../../../src/kiosk/kiosk.js';
import { RetryPolicy, type RetryReport } from '../../../src/kiosk/retry-policy.js';
import { healthMetricsText } from '../../../src/service/health-metrics.js';
import { HealthRecorder, type HealthSource } from '../../../src/service/health-record.js';
import { HealthRecordSchema, type HealthRecord } from '../../../src/service/health-schema.js';
import { screenState } from '../../support/screen-fixtures.js';
import { API_KEY, startServiceFixture, type ServiceFixture } from './service-fixture.js';

const HOLDER = {
  family_name: 'Holderson-Unique',
  given_name: 'Quintessa',
  document_number: 'DOC-99887766',
  portrait: '/9j/4AAQSkZJRgABAQAAAQABAAD/2wCEAAYEBQYF',
};
const SESSION_ID = '6b1f8a52-1111-4c7e-9f00-abcdefabcdef';

const dirs: string[] = [];
let fixture: ServiceFixture | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await fixture?.stop();
  fixture = undefined;
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function healthFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-health-'));
  dirs.push(dir);
  return join(dir, 'health.json');
}

async function read(file: string): Promise<HealthRecord> {
  return HealthRecordSchema.parse(JSON.parse(await readFile(file, 'utf8')));
}

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 5_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function outcome(verdict: 'verified' | 'rejected', reasons: string[] = []): OutcomeView {
  return {
    verdict,
    reasons,
    response: { 'org.iso.18013.5.1': { ...HOLDER } },
    docTypes: ['org.iso.18013.5.1.mDL'],
    issuerAuthentication: null,
    deviceAuthentication: null,
    errors: {},
    warnings: {},
    source: 'complete',
    answer: { kind: 'elements', result: verdict === 'verified' ? 'met' : 'undetermined', missing: [] },
  };
}

function report(partial: Partial<VerificationReport>): VerificationReport {
  return {
    transport: 'qr',
    sessionId: SESSION_ID,
    result: 'complete',
    outcome: null,
    error: null,
    durationMs: 1_234,
    apdus: 0,
    bleMessages: 12,
    ...partial,
  };
}

/** A service as the recorder sees it: a state, and listeners to call. */
class FakeSource implements HealthSource {
  readonly version = '1.4.2';
  readonly startedAt: number;
  current: ScreenState = screenState('ready');
  readonly reportListeners = new Set<(r: VerificationReport) => void>();
  readonly stateListeners = new Set<(s: ScreenState) => void>();
  /** What the running kiosk's retry policy reports (undefined: no kiosk runs). */
  failures: RetryReport | undefined;

  backendFailures(): RetryReport | undefined {
    return this.failures;
  }

  constructor(startedAt: number) {
    this.startedAt = startedAt;
  }

  state(): ScreenState {
    return this.current;
  }

  onState(listener: (s: ScreenState) => void): () => void {
    this.stateListeners.add(listener);
    listener(this.current);
    return () => this.stateListeners.delete(listener);
  }

  onVerification(listener: (r: VerificationReport) => void): () => void {
    this.reportListeners.add(listener);
    return () => this.reportListeners.delete(listener);
  }

  verify(r: VerificationReport): void {
    for (const l of this.reportListeners) l(r);
  }

  show(state: ScreenState): void {
    this.current = state;
    for (const l of this.stateListeners) l(state);
  }
}

describe('HealthRecorder', () => {
  beforeEach(() => {
    // Only the recorder's interval and the clock are faked; file writes and the polling below run for real.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(new Date('2025-06-02T10:00:00Z'));
  });

  it('writes at start, on its period, and at once after each outcome; counts by verdict, reason and error', async () => {
    const file = await healthFile();
    const source = new FakeSource(Date.now() - 90_000);
    let updates = { state: 'idle' as const, checkedAt: Date.now() - 1_000 };
    const recorder = new HealthRecorder({ service: source, file, flavour: 'production', everySeconds: 30, updates: () => updates });
    recorder.start();
    const first = await until(() => read(file), 'the first record');
    expect(first).toEqual({
      schema: 1,
      app: 'mdl-kiosk',
      version: '1.4.2',
      flavour: 'production',
      pid: process.pid,
      startedAt: '2025-06-02T09:58:30.000Z',
      updatedAt: '2025-06-02T10:00:00.000Z',
      uptimeSeconds: 90,
      phase: 'ready',
      testMode: source.current.testMode,
      backendOrigin: source.current.backendOrigin,
      devices: {
        nfc: source.current.view.devices.nfc,
        qr: source.current.view.devices.qr,
        bleCentral: source.current.view.devices.bleCentral,
        blePeripheral: source.current.view.devices.blePeripheral,
      },
      outcomes: {
        total: 0,
        verified: 0,
        rejected: 0,
        undetermined: 0,
        failed: 0,
        answers: { met: 0, notMet: 0, undetermined: 0 },
        reasons: {},
        errors: {},
      },
      updates: { state: 'idle', checkedAt: Date.now() - 1_000 },
    });

    // Two outcomes and an error: each written at once, without waiting for the period.
    vi.setSystemTime(new Date('2025-06-02T10:00:05Z'));
    source.verify(report({ outcome: outcome('verified') }));
    source.verify(report({ outcome: outcome('rejected', ['issuer_untrusted', 'expired']) }));
    source.verify(report({ result: 'timeout', error: { code: 'timeout', detail: `session ${SESSION_ID} timed out`, retryable: true } }));
    const counted = await until(async () => {
      const r = await read(file);
      return r.outcomes.total === 3 ? r : undefined;
    }, 'the three outcomes');
    // The answer to the request is counted apart from the verdict: a rejected document answers nothing.
    expect(counted.outcomes).toEqual({
      total: 3,
      verified: 1,
      rejected: 1,
      undetermined: 0,
      failed: 1,
      answers: { met: 1, notMet: 0, undetermined: 1 },
      reasons: { issuer_untrusted: 1, expired: 1 },
      errors: { timeout: 1 },
    });
    expect(counted.lastError).toBe('timeout');
    expect(counted.updatedAt).toBe('2025-06-02T10:00:05.000Z');

    // The period: a new updatedAt and the updater's new status, with no outcome in between.
    updates = { state: 'idle', checkedAt: Date.now() };
    vi.setSystemTime(new Date('2025-06-02T10:00:30Z'));
    await vi.advanceTimersByTimeAsync(30_000);
    const periodic = await until(async () => {
      const r = await read(file);
      return r.updatedAt === '2025-06-02T10:01:00.000Z' ? r : undefined;
    }, 'the periodic record');
    expect(periodic.uptimeSeconds).toBe(150);

    // A screen error becomes the last error.
    source.show({
      ...source.current,
      view: { ...source.current.view, phase: 'config_error', error: { code: 'config_error', detail: 'x', retryable: false } },
    });
    source.verify(report({ outcome: outcome('verified') }));
    const later = await until(async () => {
      const r = await read(file);
      return r.outcomes.total === 4 ? r : undefined;
    }, 'the fourth outcome');
    expect(later).toMatchObject({ phase: 'config_error', lastError: 'config_error', outcomes: { verified: 2 } });

    const text = await readFile(file, 'utf8');
    for (const value of [...Object.values(HOLDER), SESSION_ID]) expect(text).not.toContain(value);
    await recorder.stop();
  });

  it('stop() writes a final record and clears its timer; nothing is written after', async () => {
    const file = await healthFile();
    const source = new FakeSource(Date.now());
    const recorder = new HealthRecorder({ service: source, file, flavour: 'qa', everySeconds: 5 });
    recorder.start();
    await until(() => read(file), 'the first record');
    expect(vi.getTimerCount()).toBe(1);
    source.current = { ...source.current, view: { ...source.current.view, phase: 'stopped' } };
    vi.setSystemTime(new Date('2025-06-02T10:00:02Z'));
    await recorder.stop();
    expect(vi.getTimerCount()).toBe(0);
    const last = await read(file);
    expect(last).toMatchObject({ phase: 'stopped', flavour: 'qa', updatedAt: '2025-06-02T10:00:02.000Z' });
    expect(last.updates).toBeUndefined();
    expect(source.reportListeners.size).toBe(0);
    expect(source.stateListeners.size).toBe(0);
    source.verify(report({ outcome: outcome('verified') }));
    await new Promise((r) => setTimeout(r, 50));
    expect((await read(file)).outcomes.total).toBe(0);
  });

  it('drops count keys that are not codes, and bounds how many kinds are kept', async () => {
    const file = await healthFile();
    const source = new FakeSource(Date.now());
    const recorder = new HealthRecorder({ service: source, file, flavour: 'production', everySeconds: 60 });
    recorder.start();
    source.verify(report({ outcome: outcome('rejected', ['Name: Holderson-Unique', 'ok_reason']) }));
    for (let i = 0; i < 80; i++)
      source.verify(report({ result: 'internal_error', error: { code: `code_${i}`, detail: '', retryable: true } }));
    await recorder.stop();
    const record = await read(file);
    expect(record.outcomes.reasons).toEqual({ ok_reason: 1 });
    expect(Object.keys(record.outcomes.errors)).toHaveLength(50);
    expect(record.outcomes.failed).toBe(80);
    expect(await readFile(file, 'utf8')).not.toContain('Holderson');
  });

  it("carries the backend failures: the last one's kind, stage, status and time, in a row, totals by kind, the budget — never the detail", async () => {
    const file = await healthFile();
    const source = new FakeSource(Date.now());
    const recorder = new HealthRecorder({ service: source, file, flavour: 'production', everySeconds: 60 });
    // No kiosk runs (a configuration that cannot build one): nothing to say of a backend.
    recorder.start();
    expect((await until(() => read(file), 'the first record')).backend).toBeUndefined();
    const policy = new RetryPolicy(
      () => ({ backoffMinMs: 1_000, backoffMaxMs: 30_000, conflictBackoffMs: 250, maxRequestsPerMinute: 20 }),
      () => 0.5,
    );
    const t0 = Date.now();
    const detail = `the backend refuses the session connection (HTTP 404) — check the WebSocket route of the gateway gw-7.internal.example (session ${SESSION_ID})`;
    policy.onFailure({ kind: 'unreachable', stage: 'create', detail: 'POST /sessions: connect ECONNREFUSED' }, t0);
    for (let i = 1; i <= 3; i++) {
      policy.recordRequest(t0 + i * 1_000);
      policy.recordRequest(t0 + i * 1_000);
      policy.onFailure({ kind: 'socket_refused', stage: 'handshake', status: 404, detail }, t0 + i * 1_000);
    }
    source.failures = policy.report(t0 + 3_000);
    await recorder.stop();
    const record = await read(file);
    expect(record.backend).toEqual({
      lastFailure: { kind: 'socket_refused', stage: 'handshake', status: 404, at: new Date(t0 + 3_000).toISOString() },
      consecutive: 4,
      failures: { unreachable: 1, socket_refused: 3 },
      requestsLastMinute: 6,
      maxRequestsPerMinute: 20,
    });
    const text = await readFile(file, 'utf8');
    for (const needle of ['gw-7.internal.example', SESSION_ID, 'ECONNREFUSED', 'WebSocket route']) expect(text).not.toContain(needle);
  });

  it('the schema refuses what must never be there', () => {
    const valid: HealthRecord = {
      schema: 1,
      app: 'mdl-kiosk',
      version: '1.0.0',
      flavour: 'production',
      pid: 1,
      startedAt: '2025-06-02T10:00:00.000Z',
      updatedAt: '2025-06-02T10:00:00.000Z',
      uptimeSeconds: 0,
      phase: 'ready',
      testMode: false,
      backendOrigin: null,
      devices: {
        nfc: { usable: true },
        qr: { usable: true },
        bleCentral: { usable: false, reason: 'powered_off' },
        blePeripheral: { usable: false },
      },
      outcomes: {
        total: 0,
        verified: 0,
        rejected: 0,
        undetermined: 0,
        failed: 0,
        answers: { met: 0, notMet: 0, undetermined: 0 },
        reasons: {},
        errors: {},
      },
    };
    expect(HealthRecordSchema.safeParse(valid).success).toBe(true);
    expect(HealthRecordSchema.safeParse({ ...valid, sessionId: SESSION_ID }).success).toBe(false);
    expect(HealthRecordSchema.safeParse({ ...valid, outcomes: { ...valid.outcomes, reasons: { 'Jane Doe': 1 } } }).success).toBe(false);
    expect(HealthRecordSchema.safeParse({ ...valid, updates: { state: 'idle', url: 'https://x' } }).success).toBe(false);
    // The backend's failures: kinds from the closed list, a status and a time, no free text.
    const backend = {
      lastFailure: { kind: 'socket_refused', stage: 'handshake', status: 404, at: '2025-06-02T10:00:00.000Z' },
      consecutive: 3,
      failures: { socket_refused: 3 },
      requestsLastMinute: 6,
      maxRequestsPerMinute: 20,
    };
    expect(HealthRecordSchema.safeParse({ ...valid, backend }).success).toBe(true);
    expect(
      HealthRecordSchema.safeParse({ ...valid, backend: { ...backend, lastFailure: { ...backend.lastFailure, detail: 'gateway gw-7' } } })
        .success,
    ).toBe(false);
    expect(
      HealthRecordSchema.safeParse({ ...valid, backend: { ...backend, lastFailure: { ...backend.lastFailure, kind: 'Jane Doe' } } })
        .success,
    ).toBe(false);
    expect(
      HealthRecordSchema.safeParse({ ...valid, backend: { ...backend, failures: { socket_refused: 3, [SESSION_ID]: 1 } } }).success,
    ).toBe(false);
    expect(HealthRecordSchema.safeParse({ ...valid, backend: { ...backend, sessionId: SESSION_ID } }).success).toBe(false);
  });
});

describe('HealthRecorder on a running service', () => {
  it("carries the screen's camera: absent before a report, a problem kept while the camera is off outside Ready, never the browser's detail", async () => {
    fixture = await startServiceFixture();
    const f = fixture;
    const recorder = new HealthRecorder({ service: f.service, flavour: 'production', everySeconds: 3_600 });
    expect(recorder.record().camera).toBeUndefined();
    expect(healthMetricsText(recorder.record())).toContain('mdl_kiosk_camera_state{state="unknown"} 1');
    f.service.reportCamera({ state: 'starting' });
    expect(recorder.record().camera).toEqual({ state: 'starting', worked: false });
    f.service.reportCamera({ state: 'active' });
    // The browser's message can name the device (its label, USB ids): it stays out of the record and the metrics.
    const detail = 'NotReadableError: Logitech C920 (046d:082d) was unplugged';
    f.service.reportCamera({ state: 'unplugged', detail });
    // The screen leaves Ready and turns the camera off: the problem stays until the camera runs again.
    f.service.reportCamera({ state: 'off' });
    const broken = recorder.record();
    expect(broken.camera).toEqual({ state: 'unplugged', worked: true });
    const metrics = healthMetricsText(broken);
    expect(metrics).toContain('mdl_kiosk_camera_state{state="unplugged"} 1');
    expect(metrics).toContain('mdl_kiosk_camera_state{state="off"} 0');
    for (const needle of ['Logitech', '046d', 'NotReadableError']) {
      expect(JSON.stringify(broken)).not.toContain(needle);
      expect(metrics).not.toContain(needle);
    }
    f.service.reportCamera({ state: 'starting' });
    f.service.reportCamera({ state: 'active' });
    expect(recorder.record().camera).toEqual({ state: 'active', worked: true });
    f.service.reportCamera({ state: 'off' });
    expect(recorder.record().camera).toEqual({ state: 'off', worked: true });
  }, 30_000);

  it('a record written before the camera was added still validates (agents reading old files), and the camera is checked strictly', () => {
    const old = {
      schema: 1,
      app: 'mdl-kiosk',
      version: '1.3.0',
      flavour: 'production',
      pid: 7,
      startedAt: '2025-06-02T10:00:00.000Z',
      updatedAt: '2025-06-02T10:05:00.000Z',
      uptimeSeconds: 300,
      phase: 'ready',
      testMode: false,
      backendOrigin: null,
      devices: {
        nfc: { usable: true },
        qr: { usable: true },
        bleCentral: { usable: true },
        blePeripheral: { usable: false, reason: 'not_configured' },
      },
      outcomes: {
        total: 0,
        verified: 0,
        rejected: 0,
        undetermined: 0,
        failed: 0,
        answers: { met: 0, notMet: 0, undetermined: 0 },
        reasons: {},
        errors: {},
      },
    };
    expect(HealthRecordSchema.safeParse(old).success).toBe(true);
    expect(HealthRecordSchema.safeParse({ ...old, camera: { state: 'denied', worked: false } }).success).toBe(true);
    expect(HealthRecordSchema.safeParse({ ...old, camera: { state: 'denied', worked: false, deviceId: 'a1b2c3' } }).success).toBe(false);
    expect(HealthRecordSchema.safeParse({ ...old, camera: { state: 'denied', worked: false, detail: 'Logitech C920' } }).success).toBe(
      false,
    );
    expect(HealthRecordSchema.safeParse({ ...old, camera: { state: 'Logitech C920', worked: false } }).success).toBe(false);
  });

  it("a gateway that answers 404 on every session socket: the record names it (kind, status, count) and the screen's code, with no session id or key", async () => {
    const file = await healthFile();
    fixture = await startServiceFixture({
      config: { session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 200 } },
      backendFaults: { httpFailures: { upgrade: { status: 404, times: 1_000 } } },
    });
    const f = fixture;
    // Every session made from here on (the first may come before the listener: the others are enough).
    const secrets: string[] = [];
    f.backend.sessions.onCreated((s) => secrets.push(s.id, s.clientSecret));
    const recorder = new HealthRecorder({ service: f.service, file, flavour: 'qa', everySeconds: 1 });
    recorder.start();
    await f.waitState((s) => s.view.phase === 'config_error', 15_000, 'needs staff');
    const record = await until(async () => {
      const r = await read(file);
      return r.phase === 'config_error' && (r.backend?.consecutive ?? 0) >= 3 ? r : undefined;
    }, 'a record of the refusals');
    await recorder.stop();
    expect(record.backend).toMatchObject({
      lastFailure: { kind: 'socket_refused', stage: 'handshake', status: 404 },
      maxRequestsPerMinute: 20,
    });
    expect(record.backend?.failures.socket_refused).toBeGreaterThanOrEqual(3);
    expect(record.backend?.requestsLastMinute).toBeGreaterThanOrEqual(6);
    expect(record.lastError).toBe('backend_refuses_socket');
    const text = await readFile(file, 'utf8');
    expect(secrets.length).toBeGreaterThanOrEqual(4);
    for (const needle of [API_KEY, ...secrets]) expect(text).not.toContain(needle);
  }, 40_000);

  it('two verifications are counted, and the file holds no holder data, session id or API key', async () => {
    const file = await healthFile();
    fixture = await startServiceFixture({ config: { profile: 'full' } });
    const f = fixture;
    const sessionIds: string[] = [];
    const create = f.backend.sessions.create.bind(f.backend.sessions);
    f.backend.sessions.create = () => {
      const s = create();
      sessionIds.push(s.id);
      return s;
    };
    const recorder = new HealthRecorder({ service: f.service, file, flavour: 'qa', everySeconds: 3_600 });
    recorder.start();
    for (let i = 0; i < 2; i++) {
      await f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready');
      f.service.qrScanned({ text: f.rig.phone.presentQr(), source: 'camera' });
      await f.waitState((s) => s.view.phase === 'result', 20_000, 'a result');
      f.service.next();
    }
    const record = await until(async () => {
      const r = await read(file);
      return r.outcomes.total === 2 ? r : undefined;
    }, 'two outcomes');
    expect(record.outcomes).toMatchObject({ total: 2, verified: 2, failed: 0 });
    expect(record).toMatchObject({
      version: f.service.version,
      testMode: true,
      backendOrigin: new URL(f.backend.url).origin,
      flavour: 'qa',
    });
    await recorder.stop();
    const text = await readFile(file, 'utf8');
    const elements = Object.values(f.reports[0]?.outcome?.response ?? {}).reduce<Record<string, unknown>>(
      (all, ns) => ({ ...all, ...ns }),
      {},
    );
    const needles = [API_KEY, ...f.reports.map((r) => r.sessionId ?? 'none'), ...sessionIds];
    for (const key of ['family_name', 'given_name', 'document_number', 'portrait']) needles.push(String(elements[key]).slice(0, 40));
    expect(needles.length).toBeGreaterThan(5);
    for (const needle of needles) expect(text).not.toContain(needle);
  }, 60_000);
});
