/**
 * A kiosk wired to the fake backend and fake devices, with captured logs and views, for conformance tests.
 */
import { Writable } from 'node:stream';
import { isDeepStrictEqual } from 'node:util';
import { KioskView } from '../../src/common/kiosk-view.js';
import { QrScanQueue } from '../../src/devices/qr/qr-scan-queue.js';
import { createKiosk } from '../../src/kiosk/compose.js';
import { RetryPolicy, retrySettingsOf } from '../../src/kiosk/retry-policy.js';
import { mergeConfig, parseConfig, type KioskConfig } from '../../src/platform/config.js';
import type { Kiosk, VerificationReport } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import { FakeBackend } from './fake-backend.js';
import { FakeBleCentral, FakeBlePeripheral, FakeNfcReader } from './fake-devices.js';

export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') this.lines.push(line);
    callback();
  }
  get records(): Record<string, unknown>[] {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
  events(): string[] {
    return this.records.map((r) => String(r.event));
  }
  text(): string {
    return this.lines.join('\n');
  }
  /** Lines that name a top-level key twice (JSON.parse keeps the last silently; a log reader may keep either). */
  linesWithRepeatedKeys(): { line: string; keys: string[] }[] {
    return this.lines.map((line) => ({ line, keys: repeatedTopLevelKeys(line) })).filter((l) => l.keys.length > 0);
  }
}

/** The keys an object's JSON text names more than once at its top level. */
export function repeatedTopLevelKeys(json: string): string[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  let depth = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === '"') {
      let end = i + 1;
      while (end < json.length && json[end] !== '"') end += json[end] === '\\' ? 2 : 1;
      const text = json.slice(i, end + 1);
      let next = end + 1;
      while (json[next] === ' ') next++;
      if (depth === 1 && json[next] === ':') {
        const key = JSON.parse(text) as string;
        if (seen.has(key)) repeated.add(key);
        seen.add(key);
      }
      i = end;
    }
  }
  return [...repeated];
}

/** Timeouts short enough for tests but long enough not to fire by accident on a loaded CI machine. */
export const TEST_TIMEOUTS = {
  backendReplyMs: 3_000,
  apduMs: 1_000,
  awaitCardMs: 3_000,
  bleSetupMs: 2_000,
  bleIdleMs: 3_000,
  bleWriteMs: 1_000,
  bleReadResponseMs: 1_000,
  bleLinkLossGraceMs: 300,
  completionFlushMs: 500,
  socketCloseMs: 500,
  armWaitMs: 3_000,
  recoverResultMs: 1_500,
  resultDisplayMs: 200,
  errorDisplayMs: 200,
  removePhoneMs: 500,
};

export interface Harness {
  readonly backend: FakeBackend;
  readonly kiosk: Kiosk;
  readonly config: KioskConfig;
  readonly nfc: FakeNfcReader;
  readonly qr: QrScanQueue;
  readonly central: FakeBleCentral;
  readonly peripheral: FakeBlePeripheral;
  readonly logs: LogCapture;
  readonly views: KioskView[];
  readonly reports: VerificationReport[];
  /** Resolves with the first view (already seen or future) that matches. */
  view(predicate: (v: KioskView) => boolean, timeoutMs?: number): Promise<KioskView>;
  /** The next verification report. */
  nextReport(timeoutMs?: number): Promise<VerificationReport>;
  stop(): Promise<void>;
}

/** What a test sees of a running kiosk: every view and report, and ways to wait for them. */
export interface KioskObserver {
  readonly views: KioskView[];
  readonly reports: VerificationReport[];
  /** Resolves with the first view (already seen or future) that matches. */
  view: (predicate: (v: KioskView) => boolean, timeoutMs?: number) => Promise<KioskView>;
  /** The next verification report. */
  nextReport: (timeoutMs?: number) => Promise<VerificationReport>;
  /** Throws if any view did not match the KioskView schema or did not survive JSON. */
  assertViewsValid: () => void;
}

export function observeKiosk(kiosk: Kiosk): KioskObserver {
  const views: KioskView[] = [];
  const reports: VerificationReport[] = [];
  let viewWaiters: { predicate: (v: KioskView) => boolean; resolve: (v: KioskView) => void }[] = [];
  let reportWaiters: ((r: VerificationReport) => void)[] = [];
  let reportsTaken = 0;
  // Every view crosses a process boundary in the app: it must match its schema and survive JSON.
  const viewProblems: string[] = [];
  kiosk.onView((v) => {
    const checked = KioskView.safeParse(v);
    if (!checked.success) viewProblems.push(`view does not match the KioskView schema: ${checked.error.message}`);
    else if (!isDeepStrictEqual(JSON.parse(JSON.stringify(v)), v)) viewProblems.push('view does not survive a JSON round trip');
    views.push(v);
    const ready = viewWaiters.filter((w) => w.predicate(v));
    viewWaiters = viewWaiters.filter((w) => !w.predicate(v));
    for (const w of ready) w.resolve(v);
  });
  kiosk.onVerification((r) => {
    reports.push(r);
    const waiter = reportWaiters.shift();
    if (waiter) {
      reportsTaken++;
      waiter(r);
    }
  });
  return {
    views,
    reports,
    view(predicate, timeoutMs = 5_000) {
      const seen = views.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          viewWaiters = viewWaiters.filter((w) => w.resolve !== done);
          reject(new Error(`no matching view within ${timeoutMs} ms; last: ${JSON.stringify(views.at(-1))}`));
        }, timeoutMs);
        const done = (v: KioskView): void => {
          clearTimeout(timer);
          resolve(v);
        };
        viewWaiters.push({ predicate, resolve: done });
      });
    },
    nextReport(timeoutMs = 8_000) {
      if (reports.length > reportsTaken) return Promise.resolve(reports[reportsTaken++] as VerificationReport);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          reportWaiters = reportWaiters.filter((w) => w !== done);
          reject(new Error(`no verification report within ${timeoutMs} ms; last view: ${JSON.stringify(views.at(-1))}`));
        }, timeoutMs);
        const done = (r: VerificationReport): void => {
          clearTimeout(timer);
          resolve(r);
        };
        reportWaiters.push(done);
      });
    },
    assertViewsValid() {
      if (viewProblems.length > 0) throw new Error(`${viewProblems.length} invalid views, first: ${viewProblems[0] ?? ''}`);
    },
  };
}

export interface HarnessOptions {
  readonly config?: Record<string, unknown>;
  readonly backend?: FakeBackend;
  readonly devices?: { nfc?: boolean; qr?: boolean; central?: boolean; peripheral?: boolean };
  readonly start?: boolean;
  /** Wall clock for session ages (see `TestClock` in session-harness.ts). */
  readonly now?: () => number;
  /** The environment the kiosk reads `HTTPS_PROXY` / `NO_PROXY` from (default: none, so tests are hermetic). */
  readonly env?: NodeJS.ProcessEnv;
  /** The counter's gate: no customer invited that the devices cannot serve (the hosts turn it on). */
  readonly readinessGate?: boolean;
  /**
   * The retry policy's random source (default Math.random): a value near 1 draws every backoff at its
   * ceiling, so a test can time the schedule exactly.
   */
  readonly random?: () => number;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const backend = options.backend ?? (await FakeBackend.start());
  const logs = new LogCapture();
  const log = createLogger({ level: 'debug' }, logs);
  const config = parseConfig(
    mergeConfig(
      // These tests shorten the backoffs to milliseconds; the request budget is raised alike, except where a
      // test sets it (the budget's own tests).
      { backend: { baseUrl: backend.baseUrl, apiKey: backend.apiKey }, timeouts: TEST_TIMEOUTS, session: { maxRequestsPerMinute: 600 } },
      options.config ?? {},
    ),
  );
  const nfc = new FakeNfcReader();
  const qr = new QrScanQueue({ freshMs: config.qr.scanFreshMs });
  const central = new FakeBleCentral();
  const peripheral = new FakeBlePeripheral();
  const want = { nfc: true, qr: true, central: true, peripheral: true, ...options.devices };
  const kiosk = createKiosk(
    config,
    {
      ...(want.nfc ? { nfc } : {}),
      ...(want.qr ? { qr } : {}),
      ...(want.central ? { bleCentral: central } : {}),
      ...(want.peripheral ? { blePeripheral: peripheral } : {}),
    },
    log,
    {
      env: options.env ?? {},
      ...(options.now ? { now: options.now } : {}),
      ...(options.readinessGate ? { readinessGate: true } : {}),
      ...(options.random ? { retryPolicy: new RetryPolicy(() => retrySettingsOf(config), options.random) } : {}),
    },
  );
  const observed = observeKiosk(kiosk);
  if (options.start !== false) kiosk.start();
  return {
    backend,
    kiosk,
    config,
    nfc,
    qr,
    central,
    peripheral,
    logs,
    views: observed.views,
    reports: observed.reports,
    view: observed.view,
    nextReport: observed.nextReport,
    async stop() {
      await kiosk.stop();
      if (!options.backend) await backend.stop();
      observed.assertViewsValid();
    },
  };
}
