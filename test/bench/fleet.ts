/**
 * A fleet of kiosk session keepers against the mock backend, through outages: the core of
 * `npm run bench:fleet` (fleet-bench.ts) and of its small version in `npm test`
 * (test/e2e-sim/fleet-outage.test.ts). Issue 27, item 4; docs/fleet.md.
 *
 * - The backend is the mock backend with its real reader engine in a child process
 *   (fleet-backend-child.ts) on 127.0.0.1, which timestamps every request on arrival and reports it here.
 *   An outage stops that process's listener and destroys every connection (kiosks then meet refused
 *   connections), and the child exits; the backend comes back as a NEW process on the same port, which
 *   knows none of the old sessions (404 on their upgrade).
 * - Each kiosk is the real `SessionKeeper` with its own `SessionClient` (own API key, own connection pool)
 *   and `WsRelayConnector`, wired as src/kiosk/compose.ts does. Thin wrappers note the time of every
 *   request a kiosk sends (refused ones included, which the backend cannot see) and which kiosk owns
 *   which session (so that the backend's upgrades are attributed); the real retry policy, subclassed only
 *   to note it, tells when its budget admitted each request.
 * - Figures: per second after each recovery, requests reaching the backend and kiosks arriving (their first
 *   request after the recovery); the time until 50/99/100 % of keepers are armed again; the requests per
 *   kiosk per minute during the outage. Nothing about time is asserted.
 * - Failures (the only things asserted): a kiosk over `session.maxRequestsPerMinute` requests in a 60 s
 *   window — a request sent that its budget did not admit just before, more admitted than the budget in
 *   60 s, or more received by the backend in 60 s (less the lag measured below) — and a keeper not armed
 *   again within 3 backoff caps + 60 s of a recovery (liveness, not speed).
 *
 * Why admissions: 1,000 keepers share this event loop, so a request the budget admits now may leave tens
 * or hundreds of milliseconds later, after the other keepers' work queued meanwhile (at start-up, all of
 * them). A lone kiosk has no such lag. So the window is checked where the kiosk decides (admission, the
 * time the budget itself uses), every request sent is matched to its admission, and the lag between the
 * two is measured and printed; the backend's view is checked with that lag and loopback transit allowed.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { backendEndpoints } from '../../src/kiosk/backend-endpoints.js';
import { resolveProfile } from '../../src/kiosk/profiles.js';
import type { RelayConnector } from '../../src/kiosk/relay-link.js';
import { relayConnectorFor } from '../../src/kiosk/compose.js';
import { HEALTHY_AFTER_MS, RetryPolicy, WINDOW_MS, retrySettingsOf } from '../../src/kiosk/retry-policy.js';
import { SessionClient } from '../../src/kiosk/session-client.js';
import { SessionKeeper, type KeeperStatus, type SessionFactory } from '../../src/kiosk/session-keeper.js';
import { parseConfig, type KioskConfig } from '../../src/platform/config.js';
import { createLogger } from '../../src/platform/log.js';
import { percentile } from './bench-tools.js';
import {
  fleetApiKey,
  isFleetChildReport,
  type Exchange,
  type FleetChildCommand,
  type FleetChildReport,
  type WireArrival,
} from './fleet-protocol.js';

// ---------------------------------------------------------------- settings

export interface FleetSettings {
  readonly kiosks: number;
  /** `session.offlineBackoffMinMs` (the backoff base). */
  readonly backoffMinMs: number;
  /** `session.offlineBackoffMaxMs` (the backoff cap). */
  readonly backoffMaxMs: number;
  /** `session.maxRequestsPerMinute`. */
  readonly maxRequestsPerMinute: number;
}

export interface FleetRunOptions {
  readonly settings: FleetSettings;
  /** Outages, one after another on the same fleet (each once the fleet is armed and healthy again), in ms. */
  readonly outagesMs: readonly number[];
  /** Progress lines (what the run is waiting for). */
  readonly progress?: (line: string) => void;
}

/**
 * Between a kiosk sending a request and the backend child reading its headers lie loopback transit and the
 * child's event loop: a request sent exactly 60 s after another may arrive a little less than 60 s after
 * it. The backend-side check allows this much on top of the admission-to-send lag measured in the run.
 */
const TRANSIT_SLACK_MS = 1_000;
/** How often waits look at the fleet. */
const POLL_MS = 50;
/** Log events kept per kiosk (the newest), shown for a keeper that did not recover. */
const EVENTS_KEPT = 60;

/** When the policy's ceiling has reached the cap: the smallest n with base·2^(n−1) ≥ cap. */
export function capStreak(settings: FleetSettings): number {
  return 1 + Math.max(0, Math.ceil(Math.log2(settings.backoffMaxMs / settings.backoffMinMs)));
}

/** The backoff ceiling after `n` failures in a row: min(cap, base·2^(n−1)). */
export function ceilingMs(settings: FleetSettings, n: number): number {
  return Math.min(settings.backoffMaxMs, settings.backoffMinMs * 2 ** Math.min(Math.max(n, 1) - 1, 30));
}

/** The liveness deadline after a start or a recovery: 3 backoff caps + one budget window. */
export function livenessDeadlineMs(settings: FleetSettings): number {
  return 3 * settings.backoffMaxMs + WINDOW_MS;
}

// ---------------------------------------------------------------- the backend child

/** A request as the backend received it, attributed to a kiosk (-1: no kiosk known for it). */
interface Arrival {
  readonly at: number;
  readonly exchange: Exchange;
  readonly kiosk: number;
}

const CHILD_FROM_SOURCE = fileURLToPath(import.meta.url).endsWith('.ts');
/** Compiled (the bench, from dist/) or TypeScript through tsx (the vitest test). */
const CHILD_SCRIPT = fileURLToPath(new URL(`./fleet-backend-child.${CHILD_FROM_SOURCE ? 'ts' : 'js'}`, import.meta.url));
const CHILD_EXEC_ARGV = CHILD_FROM_SOURCE ? ['--import', 'tsx'] : [];

type ReportOf<K extends FleetChildReport['kind']> = Extract<FleetChildReport, { kind: K }>;

/** One backend process: loaded, listening, then down (it exits). A restart is a new one. */
class BackendChild {
  private readonly waiters = new Set<(report: FleetChildReport) => boolean>();
  private exitedWith: string | undefined;
  private readonly exited: Promise<void>;
  /**
   * The IPC channel closed: every message the child sent has been read by then, so a report still awaited
   * will not come. ('exit' may be seen before the channel's last messages.)
   */
  private readonly disconnected: Promise<void>;
  private downRequested = false;
  private readonly killOnExit = (): void => void this.child.kill('SIGKILL');

  private constructor(
    private readonly child: ChildProcess,
    onArrivals: (arrivals: readonly WireArrival[]) => void,
    private readonly failures: string[],
  ) {
    // However the run ends, the child does not outlive it (it also leaves when the IPC channel closes).
    process.on('exit', this.killOnExit);
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitedWith = signal ?? `code ${code ?? '?'}`;
        if (!this.downRequested) failures.push(`backend child ${child.pid ?? '?'} exited unexpectedly (${this.exitedWith})`);
        process.off('exit', this.killOnExit);
        resolve();
      });
    });
    this.disconnected = new Promise<void>((resolve) => {
      child.once('disconnect', () => resolve());
      // A child that never started has no channel to close.
      child.once('error', () => resolve());
    });
    child.on('error', (e) => failures.push(`backend child: ${e.message}`));
    child.on('message', (message: unknown) => {
      if (!isFleetChildReport(message)) {
        failures.push(`backend child sent ${JSON.stringify(message).slice(0, 200)}`);
        return;
      }
      if (message.kind === 'arrivals') {
        onArrivals(message.arrivals);
        return;
      }
      if (message.kind === 'failure') failures.push(message.detail);
      for (const waiter of [...this.waiters]) if (waiter(message)) this.waiters.delete(waiter);
    });
  }

  static async spawn(
    kiosks: number,
    seed: string,
    onArrivals: (arrivals: readonly WireArrival[]) => void,
    failures: string[],
  ): Promise<BackendChild> {
    // Its stdout is not ours (the bench's figures); its stderr is, for a crash.
    const child = fork(CHILD_SCRIPT, ['--kiosks', String(kiosks), '--seed', seed], {
      execArgv: CHILD_EXEC_ARGV,
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'json',
    });
    const backend = new BackendChild(child, onArrivals, failures);
    try {
      await backend.next('loaded', 60_000);
    } catch (e) {
      backend.kill();
      throw e;
    }
    return backend;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Listens on 127.0.0.1:port (0: a free one); resolves with the port and the child's time of listening. */
  async listen(port: number): Promise<ReportOf<'ready'>> {
    this.send({ kind: 'listen', port });
    return this.next('ready', 30_000);
  }

  /** Stops listening and destroys every connection; resolves once the child has exited. */
  async down(): Promise<ReportOf<'down'>> {
    this.downRequested = true;
    this.send({ kind: 'down' });
    try {
      return await this.next('down', 20_000);
    } finally {
      const timer = setTimeout(() => this.kill(), 5_000);
      await this.exited;
      clearTimeout(timer);
    }
  }

  kill(): void {
    this.downRequested = true;
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (this.child.connected) await this.down().catch(() => undefined);
    this.kill();
    await this.exited;
  }

  private send(command: FleetChildCommand): void {
    if (this.child.connected) this.child.send(command);
  }

  private next<K extends FleetChildReport['kind']>(kind: K, timeoutMs: number): Promise<ReportOf<K>> {
    return new Promise<ReportOf<K>>((resolve, reject) => {
      const waiter = (report: FleetChildReport): boolean => {
        if (report.kind !== kind) return false;
        clearTimeout(timer);
        resolve(report as ReportOf<K>);
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(
          new Error(
            `fleet: no '${kind}' from the backend child within ${timeoutMs} ms${this.exitedWith ? ` (it exited: ${this.exitedWith})` : ''}`,
          ),
        );
      }, timeoutMs);
      this.waiters.add(waiter);
      void this.disconnected.then(() => {
        if (!this.waiters.delete(waiter)) return;
        clearTimeout(timer);
        reject(new Error(`fleet: the backend child left (${this.exitedWith ?? 'channel closed'}) before '${kind}'`));
      });
    });
  }
}

// ---------------------------------------------------------------- the kiosks

/** One entry of a keeper's log, as the bench keeps it. */
export interface LoggedEvent {
  readonly at: number;
  /** `event`, with the failure's kind when the entry has one (`backend_unavailable:unreachable`). */
  readonly label: string;
}

/** The kiosk's real retry policy; it only notes when its budget admitted a request. */
class ObservedPolicy extends RetryPolicy {
  constructor(
    settings: ConstructorParameters<typeof RetryPolicy>[0],
    private readonly admitted: number[],
  ) {
    super(settings);
  }

  override recordRequest(now: number): void {
    this.admitted.push(now);
    super.recordRequest(now);
  }
}

interface Kiosk {
  readonly index: number;
  readonly keeper: SessionKeeper;
  readonly client: SessionClient;
  /** Every request it sent (POST or upgrade), when it sent it: refused ones too. */
  readonly sent: number[];
  /** When its budget admitted each request (the policy's clock reading). */
  readonly admitted: number[];
  /** Each time it became armed. */
  readonly armedAt: number[];
  /** Each time it stopped being armed. */
  readonly unarmedAt: number[];
  state: KeeperStatus['state'];
  /** The newest entries of its log. */
  readonly events: LoggedEvent[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

class Fleet {
  readonly kiosks: Kiosk[] = [];
  /** Which kiosk created which session (the backend sees upgrades by session id). */
  readonly owners = new Map<string, number>();
  /** Every log entry of every keeper, `[at, kiosk, label]`, for tallies per phase. */
  readonly log: (readonly [number, number, string])[] = [];

  constructor(settings: FleetSettings, baseUrl: string, seed: string) {
    const config: KioskConfig = parseConfig({
      backend: { baseUrl },
      session: {
        offlineBackoffMinMs: settings.backoffMinMs,
        offlineBackoffMaxMs: settings.backoffMaxMs,
        maxRequestsPerMinute: settings.maxRequestsPerMinute,
      },
    });
    const endpoints = backendEndpoints(baseUrl, { allowInsecure: false });
    const namespaces = resolveProfile(config, config.profile).namespaces;
    // One logger for the fleet, one child per keeper; every line is read back as an event, nothing printed.
    const logger = createLogger({ level: 'info', name: 'fleet' }, { write: (line: string) => this.onLogLine(line) });
    for (let index = 0; index < settings.kiosks; index++) {
      const client = new SessionClient({ endpoints, apiKey: fleetApiKey(seed, index), timeoutMs: config.timeouts.httpMs });
      const socket = relayConnectorFor(config, endpoints);
      const sent: number[] = [];
      const admitted: number[] = [];
      const sessions: SessionFactory = {
        createSession: async (signal) => {
          sent.push(Date.now());
          const session = await client.createSession(signal);
          this.owners.set(session.id, index);
          return session;
        },
      };
      const connector: RelayConnector = {
        connect: (session, handlers, signal) => {
          sent.push(Date.now());
          return socket.connect(session, handlers, signal);
        },
      };
      const keeper = new SessionKeeper({
        sessions,
        connector,
        config,
        namespaces: () => namespaces,
        log: logger.child({ kiosk: index }),
        retryPolicy: new ObservedPolicy(() => retrySettingsOf(config), admitted),
      });
      const kiosk: Kiosk = { index, keeper, client, sent, admitted, armedAt: [], unarmedAt: [], state: keeper.status.state, events: [] };
      keeper.onStatus((status) => {
        const now = Date.now();
        if (status.state === 'armed') kiosk.armedAt.push(now);
        else if (kiosk.state === 'armed') kiosk.unarmedAt.push(now);
        kiosk.state = status.state;
      });
      this.kiosks.push(kiosk);
    }
  }

  start(): void {
    for (const kiosk of this.kiosks) kiosk.keeper.start();
  }

  /** Kiosks armed (again) at or after `since`. */
  armedSince(since: number): number {
    let n = 0;
    for (const kiosk of this.kiosks) if (kiosk.state === 'armed' && kiosk.armedAt.some((t) => t >= since)) n++;
    return n;
  }

  async stop(): Promise<void> {
    await Promise.all(this.kiosks.map((k) => k.keeper.stop()));
    await Promise.all(this.kiosks.map((k) => k.client.close()));
  }

  private onLogLine(line: string): void {
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch {
      return;
    }
    if (!isRecord(entry) || typeof entry.kiosk !== 'number' || typeof entry.event !== 'string') return;
    const at = typeof entry.time === 'number' ? entry.time : Date.now();
    const label = typeof entry.kind === 'string' ? `${entry.event}:${entry.kind}` : entry.event;
    this.log.push([at, entry.kiosk, label]);
    const events = this.kiosks[entry.kiosk]?.events;
    if (!events) return;
    events.push({ at, label });
    if (events.length > EVENTS_KEPT) events.splice(0, events.length - EVENTS_KEPT);
  }
}

// ---------------------------------------------------------------- figures

export interface ReadyTimes {
  /** Time from the start (or recovery) until 50 %, 99 %, 100 % of keepers were armed; Infinity: not reached. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p100Ms: number;
  /** Keepers not armed by the deadline. */
  readonly notReady: readonly number[];
}

export interface SecondBin {
  /** Seconds since the start or the recovery. */
  readonly second: number;
  readonly requests: number;
  /** Kiosks whose first request since the start or recovery reached the backend in this second. */
  readonly kiosksArriving: number;
  /** Keepers armed by the end of this second. */
  readonly armed: number;
}

export interface WaveFigures {
  readonly ready: ReadyTimes;
  /** Per second, from the start or recovery until every keeper was armed (or the deadline). */
  readonly seconds: readonly SecondBin[];
  /** Peaks within the first minute. */
  readonly peakRequestsPerSecond: number;
  readonly peakKiosksPerSecond: number;
  readonly peakKiosksSecond: number;
  /** Requests that reached the backend from the start or recovery until every keeper was armed, per kiosk. */
  readonly requestsPerKiosk: number;
  /** Log events of the keepers over the same time, by label. */
  readonly events: Readonly<Record<string, number>>;
}

export interface OutageFigures {
  /** Asked for. */
  readonly plannedDownMs: number;
  /** From the listener closing to the new one listening. */
  readonly downMs: number;
  /** Keepers that lost their armed session when the backend went down. */
  readonly noticed: number;
  /** Requests the kiosks sent while the backend was down (all refused), per kiosk per minute. */
  readonly outageRequestsPerKioskPerMinute: number;
  /** Failures in a row when the backend came back: median and the share whose backoff ceiling had reached the cap. */
  readonly medianConsecutive: number;
  readonly atCap: number;
  /** Log events of the keepers while the backend was down, by label. */
  readonly outageEvents: Readonly<Record<string, number>>;
  readonly recovery: WaveFigures;
}

export interface BoundFigures {
  readonly budget: number;
  /** The most requests one kiosk's budget admitted in any 60 s, and which kiosk. */
  readonly maxAdmittedPerMinute: number;
  readonly maxAdmittedKiosk: number;
  /** The longest time from a request's admission to its leaving (keepers sharing one event loop). */
  readonly maxLagMs: number;
  /** The most requests from one kiosk that reached the backend in any 60 s. */
  readonly maxReceivedPerMinute: number;
  /** Requests the backend received that no kiosk could be found for. */
  readonly unattributed: number;
  readonly sent: number;
  readonly received: number;
}

export interface FleetReport {
  readonly settings: FleetSettings;
  readonly startup: WaveFigures | undefined;
  /** Keepers whose policy had declared the backend healthy before each outage. */
  readonly healthyBeforeOutage: readonly number[];
  readonly outages: readonly OutageFigures[];
  readonly bound: BoundFigures | undefined;
  /** What failed the run: the request bound, liveness, or the harness itself. Empty: passed. */
  readonly failures: readonly string[];
  readonly runMs: number;
}

/** The most entries of an ascending list within any half-open window of `windowMs`. */
export function maxInWindow(sorted: readonly number[], windowMs: number): number {
  let best = 0;
  let from = 0;
  for (let to = 0; to < sorted.length; to++) {
    const end = sorted[to] ?? 0;
    while ((sorted[from] ?? end) <= end - windowMs) from++;
    best = Math.max(best, to - from + 1);
  }
  return best;
}

/** The densest window's requests, as times since the first of them (for a report of a broken bound). */
function densestWindow(sorted: readonly number[], windowMs: number): string {
  const best = maxInWindow(sorted, windowMs);
  for (let from = 0; from + best - 1 < sorted.length; from++) {
    const first = sorted[from] ?? 0;
    const last = sorted[from + best - 1] ?? 0;
    if (last - first < windowMs)
      return `${best} in ${last - first} ms: +${sorted
        .slice(from, from + best)
        .map((t) => t - first)
        .join(' +')}`;
  }
  return '';
}

function tally(log: readonly (readonly [number, number, string])[], from: number, to: number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [at, , label] of log) if (at >= from && at < to) counts[label] = (counts[label] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort((a, b) => b[1] - a[1]));
}

function readyTimes(fleet: Fleet, since: number, until: number): ReadyTimes {
  const times: number[] = [];
  const notReady: number[] = [];
  for (const kiosk of fleet.kiosks) {
    const at = kiosk.armedAt.find((t) => t >= since && t <= until);
    if (at === undefined) {
      notReady.push(kiosk.index);
      times.push(Number.POSITIVE_INFINITY);
    } else {
      times.push(at - since);
    }
  }
  times.sort((a, b) => a - b);
  return { p50Ms: percentile(times, 50), p99Ms: percentile(times, 99), p100Ms: percentile(times, 100), notReady };
}

function wave(fleet: Fleet, arrivals: readonly Arrival[], since: number, until: number): WaveFigures {
  const ready = readyTimes(fleet, since, until);
  const lastReady = Number.isFinite(ready.p100Ms) ? since + ready.p100Ms : until;
  const bins = Math.max(1, Math.ceil((lastReady - since + 1) / 1000));
  const requests = new Array<number>(bins).fill(0);
  const arriving = new Array<number>(bins).fill(0);
  const armed = new Array<number>(bins).fill(0);
  const seen = new Set<number>();
  let inWave = 0;
  for (const a of arrivals) {
    if (a.at < since || a.at > lastReady) continue;
    inWave++;
    const bin = Math.min(bins - 1, Math.floor((a.at - since) / 1000));
    requests[bin] = (requests[bin] ?? 0) + 1;
    if (a.kiosk >= 0 && !seen.has(a.kiosk)) {
      seen.add(a.kiosk);
      arriving[bin] = (arriving[bin] ?? 0) + 1;
    }
  }
  for (const kiosk of fleet.kiosks) {
    const at = kiosk.armedAt.find((t) => t >= since && t <= until);
    if (at === undefined) continue;
    const bin = Math.min(bins - 1, Math.floor((at - since) / 1000));
    armed[bin] = (armed[bin] ?? 0) + 1;
  }
  let cumulative = 0;
  const seconds = requests.map((r, second) => {
    cumulative += armed[second] ?? 0;
    return { second, requests: r, kiosksArriving: arriving[second] ?? 0, armed: cumulative };
  });
  const firstMinute = seconds.slice(0, 60);
  const peakKiosks = firstMinute.reduce(
    (best, s) => (s.kiosksArriving > best.kiosksArriving ? s : best),
    seconds[0] ?? { second: 0, requests: 0, kiosksArriving: 0, armed: 0 },
  );
  return {
    ready,
    seconds,
    peakRequestsPerSecond: Math.max(0, ...firstMinute.map((s) => s.requests)),
    peakKiosksPerSecond: peakKiosks.kiosksArriving,
    peakKiosksSecond: peakKiosks.second,
    requestsPerKiosk: inWave / fleet.kiosks.length,
    events: tally(fleet.log, since, lastReady + 1),
  };
}

// ---------------------------------------------------------------- the run

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

async function waitUntil(condition: () => boolean, deadline: number): Promise<boolean> {
  while (!condition()) {
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
  return true;
}

function describeStuck(fleet: Fleet, indices: readonly number[]): string {
  return indices
    .slice(0, 5)
    .map((i) => {
      const kiosk = fleet.kiosks[i];
      if (!kiosk) return `#${i}`;
      const last = kiosk.events
        .slice(-8)
        .map((e) => e.label)
        .join(' → ');
      return `#${i} (${kiosk.state}, ${kiosk.sent.length} requests sent; last events: ${last})`;
    })
    .join('; ');
}

/**
 * Starts the backend and the fleet, waits for every keeper to be armed and healthy, then runs each outage:
 * backend down for its time, back on the same port as a new process, every keeper armed again. Always
 * stops everything it started; failures are returned, not thrown (a broken harness is one too).
 */
export async function runFleet(options: FleetRunOptions): Promise<FleetReport> {
  const { settings } = options;
  const progress = options.progress ?? ((): void => undefined);
  const started = Date.now();
  const failures: string[] = [];
  const seed = randomBytes(4).toString('hex');
  const wire: WireArrival[] = [];
  const onArrivals = (batch: readonly WireArrival[]): void => {
    for (const arrival of batch) wire.push(arrival);
  };
  const deadlineMs = livenessDeadlineMs(settings);
  let fleet: Fleet | undefined;
  let backend: BackendChild | undefined;
  const startupWindow = { since: 0, until: 0 };
  const recoveries: { plannedDownMs: number; down: number; up: number; until: number; consecutive: number[]; noticedBy: number }[] = [];
  const healthyBeforeOutage: number[] = [];
  try {
    backend = await BackendChild.spawn(settings.kiosks, seed, onArrivals, failures);
    const { port } = await backend.listen(0);
    progress(`backend (pid ${backend.pid ?? '?'}) on 127.0.0.1:${port}; starting ${settings.kiosks} keepers`);
    const current = new Fleet(settings, `http://127.0.0.1:${port}`, seed);
    fleet = current;
    startupWindow.since = Date.now();
    current.start();
    const allArmed = await waitUntil(() => current.armedSince(startupWindow.since) === settings.kiosks, startupWindow.since + deadlineMs);
    startupWindow.until = Date.now();
    if (!allArmed) {
      const stuck = current.kiosks.filter((k) => k.state !== 'armed').map((k) => k.index);
      failures.push(
        `liveness: ${stuck.length} keeper(s) not armed within ${deadlineMs / 1000} s of the start: ${describeStuck(current, stuck)}`,
      );
    }
    let lastArmed = startupWindow.until;
    for (const plannedDownMs of options.outagesMs) {
      if (failures.length > 0) break;
      // A fleet that has been running: every policy has seen its engaged session stay up (backoff reset).
      await sleep(lastArmed + HEALTHY_AFTER_MS + 500 - Date.now());
      healthyBeforeOutage.push(current.kiosks.filter((k) => k.keeper.failureReport.consecutive === 0).length);
      progress(`backend down for ${plannedDownMs / 1000} s`);
      const { stoppingAt } = await backend.down();
      // The next backend loads while the old one is down, so that it listens on time.
      backend = await BackendChild.spawn(settings.kiosks, seed, onArrivals, failures);
      await sleep(stoppingAt + plannedDownMs - Date.now());
      const consecutive = current.kiosks.map((k) => k.keeper.failureReport.consecutive);
      const { listeningAt } = await backend.listen(port);
      progress(
        `backend back (pid ${backend.pid ?? '?'}) after ${((listeningAt - stoppingAt) / 1000).toFixed(1)} s; waiting for every keeper`,
      );
      const recovered = await waitUntil(() => current.armedSince(listeningAt) === settings.kiosks, listeningAt + deadlineMs);
      const until = Date.now();
      recoveries.push({
        plannedDownMs,
        down: stoppingAt,
        up: listeningAt,
        until,
        consecutive,
        noticedBy: current.kiosks.filter((k) => k.unarmedAt.some((t) => t >= stoppingAt && t < listeningAt)).length,
      });
      if (!recovered) {
        const stuck = current.kiosks.filter((k) => !(k.state === 'armed' && k.armedAt.some((t) => t >= listeningAt))).map((k) => k.index);
        failures.push(
          `liveness: ${stuck.length} keeper(s) not armed again within ${deadlineMs / 1000} s of the recovery after ${plannedDownMs / 1000} s down: ${describeStuck(current, stuck)}`,
        );
      }
      lastArmed = until;
    }
    // The last batch of arrivals (sent every 100 ms) before the figures.
    await sleep(300);
  } catch (e) {
    failures.push(`harness: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    await fleet?.stop().catch((e: unknown) => failures.push(`stopping the fleet: ${e instanceof Error ? e.message : String(e)}`));
    await backend?.stop();
  }
  if (!fleet)
    return { settings, startup: undefined, healthyBeforeOutage, outages: [], bound: undefined, failures, runMs: Date.now() - started };
  const done = fleet;

  // Attribution: HTTP requests by their API key, upgrades by the owner of the session they address.
  const arrivals: Arrival[] = wire
    .map(([at, exchange, keyIndex, sessionId]) => ({
      at,
      exchange,
      kiosk: exchange === 'upgrade' ? (sessionId === null ? -1 : (done.owners.get(sessionId) ?? -1)) : keyIndex,
    }))
    .sort((a, b) => a.at - b.at);

  const startup = wave(done, arrivals, startupWindow.since, startupWindow.until);
  const outages = recoveries.map((r): OutageFigures => {
    const sentDuringOutage = done.kiosks.reduce((n, k) => n + k.sent.filter((t) => t >= r.down && t < r.up).length, 0);
    const sortedConsecutive = [...r.consecutive].sort((a, b) => a - b);
    return {
      plannedDownMs: r.plannedDownMs,
      downMs: r.up - r.down,
      noticed: r.noticedBy,
      outageRequestsPerKioskPerMinute: sentDuringOutage / settings.kiosks / ((r.up - r.down) / 60_000),
      medianConsecutive: percentile(sortedConsecutive, 50),
      atCap: r.consecutive.filter((c) => c >= capStreak(settings)).length,
      outageEvents: tally(done.log, r.down, r.up),
      recovery: wave(done, arrivals, r.up, r.until),
    };
  });

  // The bound: per kiosk, what its budget admitted, what it sent, and what the backend received of it.
  const received: number[][] = done.kiosks.map(() => []);
  let unattributed = 0;
  for (const a of arrivals) {
    const list = received[a.kiosk];
    if (list) list.push(a.at);
    else if (a.exchange !== 'other') unattributed++;
  }
  const budget = settings.maxRequestsPerMinute;
  let maxAdmitted = 0;
  let maxAdmittedKiosk = -1;
  let maxLag = 0;
  const unmatched: string[] = [];
  const overAdmitted: string[] = [];
  for (const kiosk of done.kiosks) {
    // Each admission is followed by exactly one request, in order (admitRequest, then POST or upgrade).
    const { sent, admitted } = kiosk;
    if (sent.length !== admitted.length || sent.some((t, k) => t < (admitted[k] ?? Number.POSITIVE_INFINITY))) {
      unmatched.push(`#${kiosk.index} (${sent.length} sent, ${admitted.length} admitted)`);
    }
    for (let k = 0; k < Math.min(sent.length, admitted.length); k++) maxLag = Math.max(maxLag, (sent[k] ?? 0) - (admitted[k] ?? 0));
    const perMinute = maxInWindow(admitted, WINDOW_MS);
    if (perMinute > maxAdmitted) {
      maxAdmitted = perMinute;
      maxAdmittedKiosk = kiosk.index;
    }
    if (perMinute > budget) overAdmitted.push(`#${kiosk.index}: ${densestWindow(admitted, WINDOW_MS)}`);
  }
  const receivedSlackMs = maxLag + TRANSIT_SLACK_MS;
  let maxReceived = 0;
  const overReceived: string[] = [];
  for (const kiosk of done.kiosks) {
    const got = received[kiosk.index] ?? [];
    maxReceived = Math.max(maxReceived, maxInWindow(got, WINDOW_MS));
    if (maxInWindow(got, WINDOW_MS - receivedSlackMs) > budget)
      overReceived.push(`#${kiosk.index}: ${densestWindow(got, WINDOW_MS - receivedSlackMs)}`);
    if (got.length > kiosk.sent.length)
      failures.push(`attribution: the backend received ${got.length} requests of kiosk #${kiosk.index}, which sent ${kiosk.sent.length}`);
  }
  if (unmatched.length > 0) {
    failures.push(
      `request bound: ${unmatched.length} kiosk(s) sent requests their budget did not admit just before: ${unmatched.slice(0, 10).join(', ')}`,
    );
  }
  if (overAdmitted.length > 0) {
    failures.push(
      `request bound: ${overAdmitted.length} kiosk(s) had more than ${budget} requests admitted in 60 s: ${overAdmitted.slice(0, 5).join('; ')}`,
    );
  }
  if (overReceived.length > 0) {
    failures.push(
      `request bound: the backend received more than ${budget} requests of one kiosk within ${(WINDOW_MS - receivedSlackMs) / 1000} s (60 s less ${receivedSlackMs} ms of lag and transit) from ${overReceived.length} kiosk(s): ${overReceived.slice(0, 5).join('; ')}`,
    );
  }
  if (unattributed > 0) failures.push(`attribution: ${unattributed} request(s) at the backend could not be attributed to a kiosk`);
  const bound: BoundFigures = {
    budget,
    maxAdmittedPerMinute: maxAdmitted,
    maxAdmittedKiosk,
    maxLagMs: maxLag,
    maxReceivedPerMinute: maxReceived,
    unattributed,
    sent: done.kiosks.reduce((n, k) => n + k.sent.length, 0),
    received: arrivals.length,
  };
  return { settings, startup, healthyBeforeOutage, outages, bound, failures, runMs: Date.now() - started };
}

// ---------------------------------------------------------------- printing

const pct = (n: number, of: number): string => `${((100 * n) / of).toFixed(1)}%`;
const seconds = (msValue: number): string => (Number.isFinite(msValue) ? `${(msValue / 1000).toFixed(1)} s` : 'not reached');

/**
 * A keeper at the cap retries every U(cap/2, cap) (retry-policy.ts `backoff`): the fleet's attempts form a
 * renewal process, and the wait from the recovery to a keeper's next attempt has the density
 * (1 − F(t))/E[gap] (the residual time of a gap): 1/(0.75·cap) a second, flat for the first half cap, then
 * falling to 0 at one cap. So about 1 s/(0.75·cap) of the fleet arrives in each of the first seconds.
 */
function firstSecondModel(capMs: number): string {
  const share = capMs <= 1_000 ? 1 : 1_000 / (0.75 * capMs);
  return `${(100 * share).toFixed(1)}%`;
}

function eventsLine(events: Readonly<Record<string, number>>, top = 8): string {
  const entries = Object.entries(events);
  if (entries.length === 0) return 'none';
  const shown = entries.slice(0, top).map(([label, n]) => `${label} ${n}`);
  return entries.length > top ? `${shown.join(', ')}, … (${entries.length - top} more)` : shown.join(', ');
}

function waveLines(w: WaveFigures, kiosks: number): string[] {
  const lines = [
    `  armed: 50% after ${seconds(w.ready.p50Ms)}, 99% after ${seconds(w.ready.p99Ms)}, 100% after ${seconds(w.ready.p100Ms)}${w.ready.notReady.length > 0 ? ` (${w.ready.notReady.length} never)` : ''}`,
    `  peak in the first minute: ${w.peakRequestsPerSecond} requests/s (${pct(w.peakRequestsPerSecond, kiosks)} of the fleet size); ${w.peakKiosksPerSecond} kiosks arriving/s (${pct(w.peakKiosksPerSecond, kiosks)} of the fleet) in second ${w.peakKiosksSecond}`,
    `  requests at the backend per kiosk until all armed: ${w.requestsPerKiosk.toFixed(2)}`,
    `  keeper log events: ${eventsLine(w.events)}`,
    '     s  requests  kiosks arriving    armed (cumulative)',
  ];
  for (const s of w.seconds) {
    lines.push(
      `  ${String(s.second).padStart(4)}  ${String(s.requests).padStart(8)}  ${String(s.kiosksArriving).padStart(6)} ${pct(s.kiosksArriving, kiosks).padStart(6)}    ${String(s.armed).padStart(6)} ${pct(s.armed, kiosks).padStart(6)}`,
    );
  }
  return lines;
}

/** The report as printed lines (the bench prints them; the test logs them). */
export function describeFleet(report: FleetReport): string[] {
  const { settings } = report;
  const n = settings.kiosks;
  const lines: string[] = [
    `fleet of ${n} session keepers: backoff base ${settings.backoffMinMs} ms, cap ${settings.backoffMaxMs} ms (full jitter below the cap, [cap/2, cap] at it), budget ${settings.maxRequestsPerMinute} requests per 60 s`,
  ];
  if (report.startup) {
    lines.push(
      '',
      '[start-up] every keeper started in the same turn of the event loop: no jitter, spread only by this process working through them (the floor of this run)',
    );
    lines.push(...waveLines(report.startup, n));
  }
  report.outages.forEach((o, i) => {
    const r = o.recovery;
    lines.push(
      '',
      `[outage ${i + 1}] backend down ${seconds(o.downMs)} (planned ${o.plannedDownMs / 1000} s): refused connections, then a new backend on the same port`,
      `  keepers healthy before it: ${report.healthyBeforeOutage[i] ?? '?'} of ${n}; that lost their session when it went down: ${o.noticed}`,
      `  while down: ${o.outageRequestsPerKioskPerMinute.toFixed(2)} requests per kiosk per minute (all refused); log events: ${eventsLine(o.outageEvents)}`,
      `  at recovery: median ${o.medianConsecutive} failures in a row; backoff ceiling at the cap (≥ ${capStreak(settings)} in a row): ${o.atCap} (${pct(o.atCap, n)})`,
      // The model holds for a fleet at the cap; a short outage leaves the ceilings low, and the fleet returns within them.
      o.atCap >= 0.9 * n
        ? `  with every keeper at the cap (waits in [cap/2, cap]) the model is ${firstSecondModel(settings.backoffMaxMs)} of the fleet arriving in each second of the first half cap after recovery, falling to 0 one cap later`
        : `  the ceilings are below the cap (median ${(ceilingMs(settings, o.medianConsecutive) / 1000).toFixed(1)} s): the fleet comes back within them, not spread over a cap`,
    );
    if (report.startup && report.startup.peakKiosksPerSecond > 0) {
      lines.push(
        `  peak kiosks arriving/s against the un-jittered start-up's: ${(r.peakKiosksPerSecond / report.startup.peakKiosksPerSecond).toFixed(3)}`,
      );
    }
    lines.push(...waveLines(r, n));
  });
  if (report.bound) {
    const b = report.bound;
    lines.push(
      '',
      `[bound] budget ${b.budget} requests per 60 s: at most ${b.maxAdmittedPerMinute} admitted for one kiosk in any 60 s (kiosk #${b.maxAdmittedKiosk}), ${b.maxReceivedPerMinute} received from one at the backend`,
      `  ${b.sent} requests sent by the fleet (refused ones included), each after its admission (longest lag ${b.maxLagMs} ms: keepers sharing one event loop); ${b.received} received by the backend, ${b.unattributed} not attributable`,
    );
  }
  lines.push('', `run time ${seconds(report.runMs)}`);
  return lines;
}

/** The figures as one JSON-able object (the bench prints it on one line). */
export function fleetFigures(report: FleetReport): Record<string, unknown> {
  const n = report.settings.kiosks;
  const waveJson = (w: WaveFigures): Record<string, unknown> => ({
    ready_p50_s: w.ready.p50Ms / 1000,
    ready_p99_s: w.ready.p99Ms / 1000,
    ready_p100_s: Number.isFinite(w.ready.p100Ms) ? w.ready.p100Ms / 1000 : null,
    not_ready: w.ready.notReady.length,
    peak_requests_per_s: w.peakRequestsPerSecond,
    peak_kiosks_per_s: w.peakKiosksPerSecond,
    peak_kiosks_pct: (100 * w.peakKiosksPerSecond) / n,
    requests_per_kiosk: w.requestsPerKiosk,
    requests_per_s: w.seconds.map((s) => s.requests),
    kiosks_per_s: w.seconds.map((s) => s.kiosksArriving),
  });
  return {
    bench: 'fleet',
    kiosks: n,
    backoff_min_ms: report.settings.backoffMinMs,
    backoff_max_ms: report.settings.backoffMaxMs,
    max_requests_per_minute: report.settings.maxRequestsPerMinute,
    startup: report.startup ? waveJson(report.startup) : null,
    outages: report.outages.map((o) => ({
      down_s: o.downMs / 1000,
      noticed: o.noticed,
      outage_requests_per_kiosk_per_min: o.outageRequestsPerKioskPerMinute,
      median_consecutive: o.medianConsecutive,
      at_cap: o.atCap,
      ...waveJson(o.recovery),
    })),
    max_admitted_per_kiosk_60s: report.bound?.maxAdmittedPerMinute ?? null,
    max_admission_lag_ms: report.bound?.maxLagMs ?? null,
    max_received_per_kiosk_60s: report.bound?.maxReceivedPerMinute ?? null,
    failures: report.failures.length,
    run_s: report.runMs / 1000,
  };
}
