/**
 * End-to-end benchmark: `npm run bench:e2e` (compiled by `npm run build`, then `node dist/test/bench/e2e-bench.js`).
 *
 * The whole chain with real ISO 18013-5 crypto on loopback, no hardware (test/support/e2e-stack.ts): the
 * kiosk built by `createKiosk` exactly as shipped, the virtual rig (virtual radio, virtual phone, virtual
 * NFC reader, QR queue, BLE ports) and the mock backend with its ISO reader engine. Logging is off
 * (`captureLogs: false`). Phases:
 *
 *   qr          QR → kiosk central (android phone in peripheral server mode, kiosk without a peripheral
 *               role): on ONE long-lived counter, after a warm-up, each run waits for the kiosk to be
 *               `ready` (pre-warmed session engaged, as in production), then times `rig.showQr()` → the
 *               kiosk's verification report: engagement, BLE setup over the virtual radio, session
 *               establishment, DeviceResponse, verification on the backend, `complete`.
 *   nfc         NFC static handover → kiosk central (android), likewise from `rig.tap()` to the report;
 *               the phone is lifted after each run so that the next tap is a new presence.
 *   concurrent  N counters (kiosk + rig + phone each, all on ONE shared virtual radio) against ONE mock
 *               backend, every counter armed, then all triggered in the same event-loop turn (even
 *               counters QR → central, odd ones NFC static → central). Counts verified reports (ok)
 *               against anything else (failed, with reasons); verifications per second = N / (last
 *               report − start); peak RSS sampled every 50 ms over the phase (setup included). Kiosks,
 *               phones, radio and backend all share this process.
 *
 * Every sequential run must end `complete` with verdict `verified`, issuer and device authentication
 * `Valid`, no errors, exactly the requested elements (profile `identity`) and the kiosk in the central
 * role; anything else is a correctness failure (exit code 1). Failures in the concurrent phase are a
 * figure, not a correctness failure; their reasons are printed. The targets are not asserted. The last
 * line is always the RESULT line.
 *
 * Between runs the result screen is cleared after `resultDisplayMs` (shortened to RESULT_SCREEN_MS here:
 * it is not part of any measured interval, only of the time between runs).
 *
 * `--only=qr,nfc` runs a subset (e.g. under `node --cpu-prof`); RESULT shows NaN for the rest.
 * `--runs=N`, `--warmup=N`, `--counters=N` scale the phases.
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { KioskPhase, KioskView } from '../../src/common/kiosk-view.js';
import type { VerificationReport } from '../../src/kiosk/kiosk.js';
import { resolveProfile } from '../../src/kiosk/profiles.js';
import { createIsoReaderEngineFactory } from '../../src/qa/sim/mock-backend/reader/index.js';
import { startMockBackend, type MockBackend } from '../../src/qa/sim/mock-backend/server.js';
import { VirtualRadio } from '../../src/qa/sim/radio/virtual-radio.js';
import { getTestCredential } from '../../src/qa/sim/virtual-wallet/credential.js';
import { getTestPki } from '../../src/qa/sim/virtual-wallet/pki.js';
import { E2E_API_KEY, startE2e, type E2eOptions, type E2eStack } from '../support/e2e-stack.js';
import { describeSummary, finishBench, intArg, ms, percentile, summarize, type Summary } from './bench-tools.js';

// ---------------------------------------------------------------- parameters

const RUNS = intArg('runs', 50);
const WARMUP = intArg('warmup', 5);
const COUNTERS = intArg('counters', 100);
/** Result screen between sequential runs (not measured); production shows it for 20 s, the e2e tests 300 ms. */
const RESULT_SCREEN_MS = 20;
/** One sequential flow, trigger to report; far above any expected figure. */
const RUN_TIMEOUT_MS = 20_000;
/** The concurrent phase from the trigger to the last report. */
const CONCURRENT_TIMEOUT_MS = 60_000;
/** The kiosk back to `ready` (session re-armed) between runs, or all counters armed. */
const READY_TIMEOUT_MS = 30_000;
/** Sequential phases stop after this many correctness failures (the run has already failed). */
const MAX_FAILURES_PER_PHASE = 3;
const RSS_SAMPLE_MS = 50;

const PHASES = ['qr', 'nfc', 'concurrent'] as const;
type PhaseName = (typeof PHASES)[number];
type FlowKind = 'qr' | 'nfc';

const PROFILE = 'identity';
const REQUESTED = resolveProfile({ profiles: {} }, PROFILE).namespaces;

/** Stack options per flow, as in test/e2e-sim/flows.test.ts. */
function flowOptions(kind: FlowKind): E2eOptions {
  const common = {
    profile: 'android',
    captureLogs: false,
    config: { profile: PROFILE, timeouts: { resultDisplayMs: RESULT_SCREEN_MS } },
  } as const;
  // QR → central: the kiosk has no peripheral role, so the android phone's peripheral server mode is used.
  return kind === 'qr' ? { ...common, ble: { peripheral: false } } : common;
}

// ---------------------------------------------------------------- one counter, observed

/** What one flow produced: its duration, its report and where it went. */
interface RunOutcome {
  readonly ms: number;
  /** performance.now() when the report reached the listener. */
  readonly at: number;
  readonly report: VerificationReport;
  readonly roles: ReadonlySet<string>;
  /** performance.now() offsets from the trigger at which each phase was first shown. */
  readonly phaseAt: ReadonlyMap<KioskPhase, number>;
}

/**
 * A stack's kiosk as the benchmark sees it: the current phase (waits for one), and one flow at a time,
 * timed from the trigger to the verification report (taken inside the kiosk's report listener).
 */
class Counter {
  private phase: KioskPhase;
  private phaseWaiters: { phase: KioskPhase; resolve: () => void }[] = [];
  private current:
    | { startedAt: number; roles: Set<string>; phaseAt: Map<KioskPhase, number>; resolve: (o: RunOutcome) => void }
    | undefined;
  /** Reports that arrived with no flow running (after a timed-out run, say). */
  readonly stray: VerificationReport[] = [];

  constructor(readonly stack: E2eStack) {
    this.phase = stack.kiosk.currentView.phase;
    stack.kiosk.onView((v: KioskView) => {
      this.phase = v.phase;
      const run = this.current;
      if (run) {
        if (v.role !== null) run.roles.add(v.role);
        if (!run.phaseAt.has(v.phase)) run.phaseAt.set(v.phase, performance.now() - run.startedAt);
      }
      const ready = this.phaseWaiters.filter((w) => w.phase === v.phase);
      if (ready.length === 0) return;
      this.phaseWaiters = this.phaseWaiters.filter((w) => w.phase !== v.phase);
      for (const w of ready) w.resolve();
    });
    stack.kiosk.onVerification((report) => {
      const at = performance.now();
      const run = this.current;
      if (!run) {
        this.stray.push(report);
        return;
      }
      this.current = undefined;
      run.resolve({ ms: at - run.startedAt, at, report, roles: run.roles, phaseAt: run.phaseAt });
    });
  }

  get currentPhase(): KioskPhase {
    return this.phase;
  }

  waitForPhase(phase: KioskPhase, timeoutMs: number): Promise<void> {
    if (this.phase === phase) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        phase,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.phaseWaiters = this.phaseWaiters.filter((w) => w !== waiter);
        reject(new Error(`kiosk not ${phase} within ${timeoutMs} ms (phase ${this.phase})`));
      }, timeoutMs);
      this.phaseWaiters.push(waiter);
    });
  }

  /** Fires the trigger now and resolves with the report of the flow it started. */
  run(trigger: (rig: E2eStack['rig']) => void, timeoutMs: number): Promise<RunOutcome> {
    if (this.current) return Promise.reject(new Error('bench: a flow is already running on this counter'));
    return new Promise<RunOutcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.current = undefined;
        reject(new Error(`no verification report within ${timeoutMs} ms (phase ${this.phase})`));
      }, timeoutMs);
      this.current = {
        startedAt: performance.now(),
        roles: new Set(),
        phaseAt: new Map(),
        resolve: (outcome) => {
          clearTimeout(timer);
          resolve(outcome);
        },
      };
      trigger(this.stack.rig);
    });
  }
}

function triggerOf(kind: FlowKind): (rig: E2eStack['rig']) => void {
  return kind === 'qr' ? (rig) => void rig.showQr() : (rig) => rig.tap();
}

/** Why a flow does not count as a verified flow to the kiosk central, or undefined when it does. */
function problemOf(outcome: RunOutcome): string | undefined {
  const { report } = outcome;
  if (report.result !== 'complete') {
    return `result ${report.result}${report.error ? ` (${report.error.code}: ${report.error.detail})` : ''}`;
  }
  const o = report.outcome;
  if (!o) return 'complete without an outcome';
  if (o.verdict !== 'verified') return `verdict ${o.verdict} (${o.reasons.join(', ')})`;
  if (o.issuerAuthentication !== 'Valid' || o.deviceAuthentication !== 'Valid') {
    return `issuer ${String(o.issuerAuthentication)}, device ${String(o.deviceAuthentication)}`;
  }
  if (Object.keys(o.errors).length > 0) return `errors ${JSON.stringify(o.errors).slice(0, 200)}`;
  for (const [ns, elements] of Object.entries(REQUESTED)) {
    const got = Object.keys(o.response[ns] ?? {})
      .sort()
      .join(',');
    const want = [...elements].sort().join(',');
    if (got !== want) return `elements of ${ns}: got [${got}], requested [${want}]`;
  }
  if (!outcome.roles.has('central') || outcome.roles.size !== 1)
    return `kiosk role(s) ${[...outcome.roles].join(',') || 'none'}, expected central`;
  return undefined;
}

function describeError(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

// ---------------------------------------------------------------- sequential flows

interface FlowResult {
  readonly summary: Summary;
  readonly p95: number;
  readonly failures: string[];
  readonly lines: string[];
}

function sorted(samples: readonly number[]): number[] {
  return [...samples].sort((a, b) => a - b);
}

function medianOf(samples: readonly number[]): number {
  return percentile(sorted(samples), 50);
}

async function flowPhase(kind: FlowKind): Promise<FlowResult> {
  const failures: string[] = [];
  const samples: number[] = [];
  /** The kiosk's own `durationMs` of each measured run (a cross-check of the bench's clock). */
  const kioskDurations: number[] = [];
  /** Per measured run: trigger → phase first shown, for the breakdown. */
  const stages = new Map<KioskPhase, number[]>();
  const setupAt = performance.now();
  const stack = await startE2e(flowOptions(kind));
  const counter = new Counter(stack);
  let stopped = false;
  try {
    await counter.waitForPhase('ready', READY_TIMEOUT_MS);
    const setupMs = performance.now() - setupAt;
    const trigger = triggerOf(kind);
    for (let i = 0; i < WARMUP + RUNS && failures.length < MAX_FAILURES_PER_PHASE; i++) {
      const measured = i >= WARMUP;
      const label = measured ? `run ${i - WARMUP + 1}` : `warm-up ${i + 1}`;
      try {
        await counter.waitForPhase('ready', READY_TIMEOUT_MS);
        const outcome = await counter.run(trigger, RUN_TIMEOUT_MS);
        if (kind === 'nfc') stack.rig.lift();
        const problem = problemOf(outcome);
        if (problem !== undefined) {
          failures.push(`${kind} ${label}: ${problem}`);
          continue;
        }
        if (!measured) continue;
        samples.push(outcome.ms);
        kioskDurations.push(outcome.report.durationMs);
        for (const [phase, at] of outcome.phaseAt) {
          const list = stages.get(phase) ?? [];
          list.push(at);
          stages.set(phase, list);
        }
      } catch (e) {
        if (kind === 'nfc') stack.rig.lift();
        failures.push(`${kind} ${label}: ${describeError(e)}`);
      }
    }
    if (counter.stray.length > 0) failures.push(`${kind}: ${counter.stray.length} report(s) with no flow running`);
    stopped = true;
    await stack.stop();
    const summary = summarize(samples);
    const p95 = percentile(sorted(samples), 95);
    const stage = (phase: KioskPhase): string => {
      const list = stages.get(phase);
      return list && list.length > 0 ? ms(medianOf(list), 1) : '—';
    };
    return {
      summary,
      p95,
      failures,
      lines: [
        `  ${samples.length} measured runs after ${WARMUP} warm-up on one counter (stack up and armed in ${ms(setupMs, 0)} ms)`,
        `  ${kind === 'qr' ? 'showQr' : 'tap'} → report (ms)  median=${ms(summary.median, 1)} p95=${ms(p95, 1)} min=${ms(summary.min, 1)} max=${ms(summary.max, 1)} mean=${ms(summary.mean, 1)}`,
        `  medians from the trigger (ms): engaging ${stage('engaging')}, ble_connecting ${stage('ble_connecting')}, transferring ${stage('transferring')}, report ${ms(summary.median, 1)}`,
        `  the kiosk's own durationMs of the same runs: median ${ms(medianOf(kioskDurations), 0)}`,
      ],
    };
  } finally {
    if (!stopped) await stack.stop().catch((e: unknown) => failures.push(`${kind}: stop: ${describeError(e)}`));
  }
}

// ---------------------------------------------------------------- concurrent counters

interface ConcurrentResult {
  readonly ok: number;
  readonly failed: number;
  readonly lines: string[];
}

/** Samples this process's RSS every RSS_SAMPLE_MS; `stop()` returns the peak (bytes) and the sample count. */
function sampleRss(): { stop(): { peak: number; samples: number; maxGap: number } } {
  let peak = process.memoryUsage.rss();
  let samples = 1;
  let last = performance.now();
  let maxGap = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
    peak = Math.max(peak, process.memoryUsage.rss());
    samples++;
  }, RSS_SAMPLE_MS);
  return {
    stop: () => {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage.rss());
      return { peak, samples: samples + 1, maxGap };
    },
  };
}

const mb = (bytes: number): string => (bytes / (1024 * 1024)).toFixed(1);

async function concurrentPhase(): Promise<ConcurrentResult> {
  const rssBefore = process.memoryUsage.rss();
  const rss = sampleRss();
  const lines: string[] = [];
  const reasons = new Map<string, number>();
  const fail = (reason: string): void => void reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  const radio = new VirtualRadio({ seed: 0x42 });
  const credential = await getTestCredential();
  const backend: MockBackend = await startMockBackend({
    apiKeys: [E2E_API_KEY],
    engineFactory: createIsoReaderEngineFactory({ trustedIacaCertificates: [credential.pki.iaca.der] }),
  });
  const stacks: E2eStack[] = [];
  const kinds: FlowKind[] = Array.from({ length: COUNTERS }, (_, i) => (i % 2 === 0 ? 'qr' : 'nfc'));
  let ok = 0;
  try {
    const setupAt = performance.now();
    const started = await Promise.allSettled(
      kinds.map((kind, i) => startE2e({ ...flowOptions(kind), backend, radio, name: `counter${i}` })),
    );
    const counters: (Counter | undefined)[] = started.map((s) => {
      if (s.status === 'rejected') {
        fail(`counter did not start: ${describeError(s.reason)}`);
        return undefined;
      }
      stacks.push(s.value);
      return new Counter(s.value);
    });
    const armed = await Promise.allSettled(counters.map((c) => (c ? c.waitForPhase('ready', READY_TIMEOUT_MS) : Promise.resolve())));
    armed.forEach((a, i) => {
      if (a.status === 'rejected' && counters[i]) {
        fail(`counter not armed: ${describeError(a.reason)}`);
        counters[i] = undefined;
      }
    });
    const setupMs = performance.now() - setupAt;
    const rssArmed = process.memoryUsage.rss();

    // Every armed counter is triggered in the same event-loop turn.
    const startAt = performance.now();
    let lastReportAt = startAt;
    const runs = counters.map(async (counter, i) => {
      if (!counter) return undefined;
      const kind = kinds[i] ?? 'qr';
      const outcome = await counter.run(triggerOf(kind), CONCURRENT_TIMEOUT_MS);
      lastReportAt = Math.max(lastReportAt, outcome.at);
      if (kind === 'nfc') counter.stack.rig.lift();
      return { kind, outcome };
    });
    const settled = await Promise.allSettled(runs);
    const wallMs = lastReportAt - startAt;
    const latencies: Record<FlowKind, number[]> = { qr: [], nfc: [] };
    for (const s of settled) {
      if (s.status === 'rejected') {
        fail(describeError(s.reason));
        continue;
      }
      if (!s.value) continue; // not started or not armed: already counted
      const problem = problemOf(s.value.outcome);
      if (problem !== undefined) {
        fail(`${s.value.kind}: ${problem}`);
        continue;
      }
      ok++;
      latencies[s.value.kind].push(s.value.outcome.ms);
    }
    const failed = COUNTERS - ok;
    const all = summarize([...latencies.qr, ...latencies.nfc]);
    lines.push(
      `  ${COUNTERS} counters (${kinds.filter((k) => k === 'qr').length} QR → central, ${kinds.filter((k) => k === 'nfc').length} NFC static → central) on one virtual radio, one mock backend; set up and armed in ${ms(setupMs, 0)} ms`,
      `  verified ${ok}, failed ${failed}; first trigger → last report ${ms(wallMs, 0)} ms → ${ms(COUNTERS / (wallMs / 1000), 1)} verifications/s (${ms(ok / (wallMs / 1000), 1)} verified/s)`,
      `  per-counter trigger → report (ms) ${describeSummary(all, 0)}`,
      `    QR  median ${ms(summarize(latencies.qr).median, 0)}, NFC median ${ms(summarize(latencies.nfc).median, 0)}`,
    );
    if (reasons.size > 0) {
      lines.push('  failure reasons:');
      for (const [reason, count] of [...reasons].sort((a, b) => b[1] - a[1])) lines.push(`    ${count} × ${reason}`);
    }
    const stray = counters.reduce((n, c) => n + (c?.stray.length ?? 0), 0);
    if (stray > 0) lines.push(`  ${stray} late report(s) after their run timed out`);
    // Stopped inside the phase so that teardown is part of "everything stopped" (not of the RSS figure).
    const memory = rss.stop();
    lines.push(
      `  RSS (MB): before the phase ${mb(rssBefore)}, all armed ${mb(rssArmed)}, peak ${mb(memory.peak)} (${memory.samples} samples every ${RSS_SAMPLE_MS} ms, longest gap ${ms(memory.maxGap, 0)} ms); process maxRSS so far ${mb(process.resourceUsage().maxRSS * 1024)}`,
    );
    return { ok, failed, lines };
  } finally {
    rss.stop();
    const stops = await Promise.allSettled(stacks.map((s) => s.stop()));
    const stopFailures = stops.filter((s) => s.status === 'rejected').length;
    if (stopFailures > 0) lines.push(`  ${stopFailures} counter(s) failed to stop cleanly`);
    await backend.stop();
    radio.shutdown();
  }
}

// ---------------------------------------------------------------- main

function selectedPhases(): Set<PhaseName> {
  const arg = process.argv.find((a) => a.startsWith('--only='));
  if (!arg) return new Set(PHASES);
  const wanted = arg.slice('--only='.length).split(',');
  const unknown = wanted.filter((w) => !(PHASES as readonly string[]).includes(w));
  if (unknown.length > 0) throw new Error(`unknown phase(s) ${unknown.join(', ')}; known: ${PHASES.join(', ')}`);
  return new Set(PHASES.filter((p) => wanted.includes(p)));
}

interface Figures {
  qr?: FlowResult;
  nfc?: FlowResult;
  concurrent?: ConcurrentResult;
}

function resultLine(f: Figures): string {
  const field = (value: number | undefined, digits: number): string => (value === undefined ? 'NaN' : ms(value, digits));
  return `RESULT qr_central_median_ms=${field(f.qr?.summary.median, 1)} nfc_static_central_median_ms=${field(f.nfc?.summary.median, 1)} concurrent_ok=${field(f.concurrent?.ok, 0)} concurrent_failed=${field(f.concurrent?.failed, 0)}`;
}

async function main(): Promise<void> {
  const figures: Figures = {};
  const failures: string[] = [];
  const started = performance.now();
  try {
    const phases = selectedPhases();
    const load = os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    console.log(`e2e bench: node ${process.version}, ${os.cpus().length} CPU(s), load average ${load}, phases ${[...phases].join(',')}`);
    // The first VirtualPhone.create would issue the test PKI and credential: do it before any timing.
    const issuedAt = performance.now();
    await getTestPki();
    await getTestCredential();
    console.log(`test PKI and credential issued in ${ms(performance.now() - issuedAt, 0)} ms (not timed)`);
    if (phases.has('qr')) {
      console.log('\n[qr] QR → kiosk central (android phone, peripheral server mode), pre-warmed session');
      figures.qr = await flowPhase('qr');
      for (const line of figures.qr.lines) console.log(line);
      failures.push(...figures.qr.failures);
    }
    if (phases.has('nfc')) {
      console.log('\n[nfc] NFC static handover → kiosk central (android phone), pre-warmed session, lifted after each run');
      figures.nfc = await flowPhase('nfc');
      for (const line of figures.nfc.lines) console.log(line);
      failures.push(...figures.nfc.failures);
    }
    if (phases.has('concurrent')) {
      console.log(`\n[concurrent] ${COUNTERS} counters started at once against one mock backend`);
      figures.concurrent = await concurrentPhase();
      for (const line of figures.concurrent.lines) console.log(line);
    }
  } catch (e) {
    failures.push(describeError(e));
  }
  finishBench(
    'e2e bench',
    started,
    failures,
    'every sequential flow ended complete, verified (Valid/Valid, no errors), with the requested elements, kiosk central',
    resultLine(figures),
  );
}

await main();
