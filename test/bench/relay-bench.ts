/**
 * Relay benchmark: `npm run bench:relay` (compiled by `npm run build`, then `node --expose-gc dist/test/bench/relay-bench.js`).
 *
 * Real WebSockets on 127.0.0.1: the fake backend of the conformance tests, a kiosk built by `createKiosk`
 * exactly as in production (session keeper, relay socket, verification state machine) with the fake NFC
 * reader and fake BLE central, and for the APDU floor a bare `ws` echo client. Phases:
 *
 *   memory  RSS and heapUsed growth of this process over 1,000 full verifications (NFC handover of 3 APDUs →
 *           ble_exchange → central → 2 ble_write + 3 ble_notified → 0x02 → complete), after a warm-up of 300
 *           (see MEM_WARMUP). Its backend runs in a child process (memory-backend-child.ts) that plays the
 *           backend's side of the script by itself, so this process holds only the kiosk and its fake
 *           devices, which the bench drives (taps, notifications) as in the other phases. Runs first, with a
 *           kiosk of its own, so that the heap high-water mark of the notification flood cannot hide growth.
 *   apdu    nfc_apdu → nfc_rapdu round trip, timed by the backend, through the kiosk (instant fake card) and
 *           through the bare echo client (the floor), in alternating batches within one NFC handover.
 *   tap     tap → the card's first transmit with a pre-warmed session, minus the backend's own
 *           receive→send time; HTTP requests between tap and first APDU are counted (must be 0).
 *   flood   50,000 BLE notifications pushed by the fake link, forwarded as ble_notified; order checked.
 *
 * The apdu, tap and flood phases share one process with their fake backend, which timestamps the frames.
 *
 * The script prints figures and does not assert the targets. Only correctness fails the run (exit code 1):
 * notifications out of order or missing, a verification that did not end as scripted, a mismatched
 * response APDU, an HTTP request between tap and first APDU. The last line is always the RESULT line.
 *
 * `--only=apdu,tap` runs a subset (e.g. under `node --cpu-prof`); RESULT then shows NaN for the rest.
 * `--handler-times` adds each client's own receive → send time per APDU to the apdu phase (HANDLER_TIMES).
 * `--apdu-warmup=N`, `--apdu-batch=N` and `--apdu-ci-seed=N` set the apdu phase's warm-up, batch size and
 * interval seed; `--apdu-rounds=N`, `--taps=N`, `--flood=N`, `--mem-runs=N`, `--mem-warmup=N` scale the phases; `--heap-snapshots`
 * writes heap snapshots at the memory baseline and end (to the OS temp directory) for a retained-object diff;
 * `--mem-trace=N` prints memory levels every N verifications without GC and `--mem-detail` adds V8's heap
 * spaces and /proc/self/smaps_rollup to the memory levels (investigation of the RSS figure).
 */
import { once } from 'node:events';
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import WebSocket from 'ws';
import type { KioskPhase } from '../../src/common/kiosk-view.js';
import { createKiosk } from '../../src/kiosk/compose.js';
import { parseConfig } from '../../src/platform/config.js';
import type { Kiosk, VerificationReport } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import { FakeBackend } from '../support/fake-backend.js';
import { FakeBleCentral, FakeNfcReader, type FakeCentralLink } from '../support/fake-devices.js';
import {
  BackendPeer,
  Mailbox,
  delay,
  describeSummary,
  finishBench,
  intArg,
  roundTrips,
  isJsonObject,
  ms,
  rawText,
  summarize,
  yieldToLoop,
  type Inbound,
} from './bench-tools.js';
import {
  BLE_EXCHANGE,
  C2S_REQUEST,
  C2S_UUID,
  COMPLETE,
  FULL_APDUS,
  FULL_NOTIFICATIONS,
  RESET,
  RESPONSE_DATA_BYTES,
  S2C_UUID,
  STATE_UUID,
  WRITE_STATE_END,
  apduCommand,
  b64,
  fullNotification,
  instantCard,
  isChildReport,
  stepRequest,
  type ChildCommand,
  type ChildReport,
} from './bench-protocol.js';
import { describeInterval, ratioInterval, type RatioInterval } from './bench-stats.js';

// ---------------------------------------------------------------- parameters

/**
 * Per side, not measured, in alternating batches of APDU_BATCH. Both paths take ~2,000 round trips to settle:
 * traced per batch of 200 on this machine (2 CPUs, quiet), the medians fell from 39/36 µs (kiosk/floor) to
 * 14/14 µs by the tenth batch and stayed there; a 200-APDU warm-up put most of the measured rounds inside
 * that slope, where the kiosk's longer path is still being compiled (ratio 1.12–1.18 against 1.03–1.04 once
 * settled). The first batch of each side is printed as the cold figure.
 */
const APDU_WARMUP = intArg('apdu-warmup', 3_000);
const APDU_ROUNDS = intArg('apdu-rounds', 20); // each round: one kiosk batch and one floor batch, order alternating
const APDU_BATCH = intArg('apdu-batch', 200); // → 4,000 measured round trips per side
/** Seed of the bootstrap interval over rounds (printed, so an interval can be reproduced). */
const APDU_CI_SEED = intArg('apdu-ci-seed', 34);
const TAP_WARMUP = 20;
const TAPS = intArg('taps', 200);
const FLOOD_N = intArg('flood', 50_000);
const FLOOD_WARMUP = 2_000; // same transfer, not timed; the order check covers them too
const FLOOD_BURST = 64; // notifications handed to the kiosk per event-loop turn, as a BLE stack delivers a burst
const NOTIFY_BYTES = 244; // a full notification at the fake link's ATT MTU of 247
/**
 * Verifications before the memory baseline. V8 sizes its heap to the allocation rate: over the first
 * verifications its young generation (new space) doubles from 16 MB to its 32 MB maximum while heapUsed
 * after GC stays at ~14 MB, and that step (+16 MB heapTotal, +~20 MB RSS) is heap sizing, not growth.
 * Measured here (node 20.20, 2 CPUs, `--only=memory --mem-trace=25 --mem-detail`, no forced GC during
 * the warm-up): the new space reached 32 MB between verification 125 and 150; heapTotal after GC is
 * ~32 MB after 50 verifications, ~49 MB after 300 and ~50–51 MB after 1,300. 300 leaves a 2× margin; the
 * output shows the new space at both baselines, and says so if it still grew after the baseline.
 */
const MEM_WARMUP = intArg('mem-warmup', 300);
/** An early baseline, printed for transparency (it was the baseline when the backend shared the process). */
const MEM_EARLY_BASELINE = Math.min(50, MEM_WARMUP);
/** `--mem-trace=N`: memory levels every N verifications, without GC so as not to disturb V8's heap sizing (investigation). */
/** `--mem-detail`: V8 heap spaces and /proc/self/smaps_rollup with every memory level printed (investigation). */
const MEM_DETAIL = process.argv.includes('--mem-detail');
const MEM_TRACE = process.argv.some((a) => a.startsWith('--mem-trace=')) ? intArg('mem-trace', 50) : 0;
const MEM_RUNS = intArg('mem-runs', 1_000);
const HEAP_SNAPSHOTS = process.argv.includes('--heap-snapshots');
/**
 * `--handler-times`: times each client's own work per APDU, from the `message` event of its WebSocket to its
 * `send` (the kiosk: parse, queue, card, encode, serialise; the floor: the same done the bare way). Those
 * few microseconds are rarely preempted, so their medians tell one change to the kiosk's path from the next
 * on a machine shared with other work, where the round trip's ratio moves by ±0.1 between runs. It patches
 * `ws` in this process and adds the same two clock reads to both sides: off by default.
 */
const HANDLER_TIMES = process.argv.includes('--handler-times');
const MEM_CHECKPOINTS = 4; // RSS/heap after GC at each quarter, to tell steady growth from a one-off step

const PHASES = ['memory', 'apdu', 'tap', 'tap_on_demand', 'flood'] as const;
type PhaseName = (typeof PHASES)[number];

// ---------------------------------------------------------------- protocol fixtures

// The central mode, the prepared backend messages and the instant card are in bench-protocol.ts, shared
// with the memory phase's backend child process.

const APDU_COUNT = APDU_WARMUP + APDU_ROUNDS * APDU_BATCH;
/** Prepared before any timing, so the backend's work per APDU is a lookup and a send. */
const APDU_TEXTS: readonly string[] = Array.from({ length: APDU_COUNT }, (_, i) => stepRequest('nfc_apdu', { data: b64(apduCommand(i)) }));
const RAPDU_B64: readonly string[] = Array.from({ length: APDU_COUNT }, (_, i) => b64(instantCard(apduCommand(i))));

function apduText(i: number): string {
  const text = APDU_TEXTS[i];
  if (text === undefined) throw new Error(`bench: no APDU prepared for index ${i}`);
  return text;
}

// ---------------------------------------------------------------- the rig

class CorrectnessError extends Error {
  override readonly name = 'CorrectnessError';
}

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new CorrectnessError(what);
}

/** The kiosk's current phase, and waits for a phase to be reached. */
class PhaseWatch {
  phase: KioskPhase;
  private waiters: { phase: KioskPhase; resolve: () => void }[] = [];

  constructor(kiosk: Kiosk) {
    this.phase = kiosk.currentView.phase;
    kiosk.onView((view) => {
      this.phase = view.phase;
      const ready = this.waiters.filter((w) => w.phase === view.phase);
      if (ready.length === 0) return;
      this.waiters = this.waiters.filter((w) => w.phase !== view.phase);
      for (const w of ready) w.resolve();
    });
  }

  reach(phase: KioskPhase, timeoutMs: number): Promise<void> {
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
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`bench: kiosk did not reach ${phase} within ${timeoutMs} ms (now ${this.phase})`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }
}

/** A kiosk as in production, on the fake NFC reader and fake BLE central, with its views and reports watched. */
interface KioskRig {
  readonly kiosk: Kiosk;
  readonly nfc: FakeNfcReader;
  readonly central: FakeBleCentral;
  readonly phases: PhaseWatch;
  readonly reports: Mailbox<VerificationReport>;
}

/** The kiosk and the in-process fake backend, for the apdu, tap and flood phases. */
interface Rig extends KioskRig {
  readonly backend: FakeBackend;
  readonly kioskPeers: Mailbox<BackendPeer>;
  readonly floorPeers: Mailbox<BackendPeer>;
  readonly floorSessions: Set<string>;
}

/** Builds the kiosk for the backend at `baseUrl`; `start()` it once the caller's listeners are in place. */
function createBenchKiosk(baseUrl: string, apiKey: string, session: Record<string, unknown> = {}): KioskRig {
  const config = parseConfig({
    backend: { baseUrl, apiKey },
    // Session lifetimes stay at their defaults (they satisfy the schema's rules); only the backoffs shrink.
    session: { conflictBackoffMs: 2, offlineBackoffMinMs: 20, offlineBackoffMaxMs: 200, ...session },
    timeouts: {
      backendReplyMs: 5_000,
      apduMs: 1_000,
      bleSetupMs: 2_000,
      bleIdleMs: 10_000,
      bleWriteMs: 1_000,
      completionFlushMs: 1_000,
      socketCloseMs: 1_000,
      armWaitMs: 5_000,
      // Back-to-back verifications: the outcome and error screens clear at once.
      resultDisplayMs: 1,
      errorDisplayMs: 1,
      removePhoneMs: 1,
    },
    log: { level: 'silent' },
  });
  // Logs are silenced (level 'silent' and a null stream) so that serialising them does not distort the
  // figures. This hides no per-message cost: at the production level (info) the kiosk logs per event
  // (session armed, verification start, BLE connected, outcome, …), never per APDU or per BLE message.
  const log = createLogger({ level: 'silent' }, { write: () => undefined });
  const nfc = new FakeNfcReader();
  nfc.recordCommands = false; // the instant card keeps no log: only the kiosk's own work is measured
  const central = new FakeBleCentral();
  const kiosk = createKiosk(config, { nfc, bleCentral: central }, log);
  const reports = new Mailbox<VerificationReport>();
  kiosk.onVerification((report) => reports.put(report));
  const phases = new PhaseWatch(kiosk);
  return { kiosk, nfc, central, phases, reports };
}

function startRig(backend: FakeBackend, session: Record<string, unknown> = {}): Rig {
  const rig: Rig = {
    ...createBenchKiosk(backend.baseUrl, backend.apiKey, session),
    backend,
    kioskPeers: new Mailbox<BackendPeer>(),
    floorPeers: new Mailbox<BackendPeer>(),
    floorSessions: new Set<string>(),
  };
  backend.onConnection((connection) => {
    const peer = new BackendPeer(connection);
    if (rig.floorSessions.has(connection.session.id)) rig.floorPeers.put(peer);
    else rig.kioskPeers.put(peer);
  });
  rig.kiosk.start();
  return rig;
}

/** The kiosk's next pre-warmed session: its socket is open, `engage` received, the kiosk shows "ready". */
async function nextArmed(rig: Rig): Promise<BackendPeer> {
  for (;;) {
    const peer = await rig.kioskPeers.take(10_000, 'kiosk WebSocket connection');
    const engage = await peer.next(5_000);
    if (peer.isClosed) continue; // an idle socket that was replaced; not expected here
    check(engage.op === 'engage', `first message of a session was ${engage.op}, not engage`);
    await rig.phases.reach('ready', 10_000);
    return peer;
  }
}

async function nextReport(rig: KioskRig, expected: VerificationReport['result']): Promise<VerificationReport> {
  const report = await rig.reports.take(10_000, 'verification report');
  check(
    report.result === expected,
    `verification ended with ${report.result}${report.error ? ` (${report.error.code}: ${report.error.detail})` : ''}, expected ${expected}`,
  );
  return report;
}

function expectRapdu(inbound: Inbound, index: number): void {
  check(
    inbound.op === 'nfc_rapdu' && inbound.message.status === 'ok' && inbound.message.data === RAPDU_B64[index],
    `nfc_rapdu for APDU ${index} does not match: ${JSON.stringify(inbound.message).slice(0, 160)}`,
  );
}

function forceGc(): void {
  const collect = globalThis.gc;
  if (!collect) throw new Error('global.gc is not exposed: run with node --expose-gc (npm run bench:relay)');
  collect();
}

// ---------------------------------------------------------------- memory

interface MemoryResult {
  readonly rssGrowthMb: number;
  readonly heapGrowthMb: number;
  readonly lines: string[];
}

type ChildCounts = Extract<ChildReport, { kind: 'counts' }>;
type ChildReady = Extract<ChildReport, { kind: 'ready' }>;

/** The memory phase's backend: memory-backend-child.js, compiled next to this file, in a process of its own. */
interface BackendChild {
  readonly ready: ChildReady;
  /** Deviations from the script that the child reported, in arrival order. */
  readonly failures: readonly string[];
  counts(): Promise<ChildCounts>;
  /** Asks the child to stop and waits until it has exited (killed after 3 s); its last counts, if any. */
  stop(): Promise<ChildCounts | undefined>;
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bench: no ${what} within ${timeoutMs} ms`)), timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

async function startBackendChild(): Promise<BackendChild> {
  const script = fileURLToPath(new URL('./memory-backend-child.js', import.meta.url));
  // No inherited exec arguments (--expose-gc, --cpu-prof, …): the child is not what is measured. Its
  // stdout is not ours (the RESULT line stays last); its stderr is, for a crash.
  const child = fork(script, [], { execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'json' });
  const kill = (): void => void child.kill('SIGKILL');
  // However the bench ends, the child does not outlive it (it also leaves by itself when the IPC channel closes).
  process.on('exit', kill);
  const failures: string[] = [];
  let stopping = false;
  let exitedWith = '';
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exitedWith = signal ?? `code ${code ?? '?'}`;
      if (!stopping) failures.push(`backend child exited unexpectedly (${exitedWith})`);
      process.off('exit', kill);
      resolve();
    });
  });
  let lastCounts: ChildCounts | undefined;
  let onReady: ((ready: ChildReady) => void) | undefined;
  let countWaiters: ((counts: ChildCounts) => void)[] = [];
  child.on('message', (message: unknown) => {
    if (!isChildReport(message)) {
      failures.push(`backend child sent ${JSON.stringify(message).slice(0, 200)}`);
      return;
    }
    switch (message.kind) {
      case 'ready':
        onReady?.(message);
        break;
      case 'failure':
        failures.push(message.detail);
        break;
      case 'counts':
        lastCounts = message;
        for (const waiter of countWaiters.splice(0)) waiter(message);
        break;
    }
  });
  child.on('error', (e) => failures.push(`backend child: ${e.message}`));
  let ready: ChildReady;
  try {
    ready = await withTimeout(
      Promise.race([
        new Promise<ChildReady>((resolve) => (onReady = resolve)),
        exited.then(() => Promise.reject(new Error(`bench: the backend child exited (${exitedWith}) before it was ready`))),
      ]),
      10_000,
      'ready report from the backend child',
    );
  } catch (e) {
    kill();
    throw e;
  }
  const nextCounts = (timeoutMs: number): Promise<ChildCounts> => {
    let waiter: ((counts: ChildCounts) => void) | undefined;
    const counts = new Promise<ChildCounts>((resolve) => (waiter = resolve));
    if (waiter) countWaiters.push(waiter);
    return withTimeout(counts, timeoutMs, 'counts from the backend child').finally(() => {
      countWaiters = countWaiters.filter((w) => w !== waiter);
    });
  };
  return {
    ready,
    failures,
    counts: () => {
      const counts = nextCounts(5_000);
      child.send({ kind: 'counts' } satisfies ChildCommand);
      return counts;
    },
    stop: async () => {
      stopping = true;
      if (child.exitCode === null && child.signalCode === null) {
        if (child.connected) {
          nextCounts(3_000).catch(() => undefined);
          child.send({ kind: 'stop' } satisfies ChildCommand);
        }
        const timer = setTimeout(kill, 3_000);
        await exited;
        clearTimeout(timer);
      }
      return lastCounts;
    },
  };
}

/** The fakes keep every card and link for test assertions; drop the finished ones. */
function pruneDevices(rig: KioskRig): void {
  rig.nfc.cards.splice(0);
  rig.central.links.splice(0);
  rig.central.connectSignals.splice(0);
}

const sameUuid = (a: string, b: string): boolean => a.replaceAll('-', '').toLowerCase() === b.replaceAll('-', '').toLowerCase();

/**
 * The kiosk process's side of one full verification (the backend child runs the backend's side): the
 * phone is tapped with the instant card; once the kiosk has the BLE link it is lifted; once the kiosk has
 * written the request on c2s the phone answers with its notifications on s2c. Then the kiosk's report
 * and its BLE writes are checked, and the kiosk is awaited back in `ready` with its next session armed.
 */
async function kioskSideVerification(rig: KioskRig, c2sRequests: Mailbox<true>): Promise<void> {
  rig.nfc.tap(instantCard);
  const link = await withTimeout(rig.central.nextLink(), 10_000, 'BLE link from the kiosk');
  rig.nfc.lift(); // the holder takes the phone off the reader during the BLE transfer
  await c2sRequests.take(5_000, 'request written on c2s');
  for (let i = 0; i < FULL_NOTIFICATIONS; i++) link.notify(S2C_UUID, fullNotification(i));
  const report = await nextReport(rig, 'complete');
  check(report.apdus === FULL_APDUS, `the kiosk relayed ${report.apdus} APDUs, the backend sent ${FULL_APDUS}`);
  const writes = link.writes;
  const written = (i: number, uuid: string, data: Uint8Array | readonly number[]): boolean => {
    const write = writes[i];
    return write !== undefined && sameUuid(write.uuid, uuid) && b64(write.data) === b64(data);
  };
  check(
    writes.length === 3 && written(0, STATE_UUID, [0x01]) && written(1, C2S_UUID, C2S_REQUEST) && written(2, STATE_UUID, [0x02]),
    `BLE writes were ${writes.map((w) => `${w.uuid}:${b64(w.data).slice(0, 12)}`).join(',')}`,
  );
  await rig.phases.reach('ready', 10_000);
}

/** RssAnon/RssFile of /proc/self/status in bytes (Linux); zeros elsewhere. */
function rssSplit(): { anon: number; file: number } {
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    return { anon: 0, file: 0 };
  }
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { anon: kb('RssAnon'), file: kb('RssFile') };
}

/** Committed size of each V8 heap space with anything in it, in MB ("new 16.0 old 21.3 …"). */
function heapSpaces(): string {
  return getHeapSpaceStatistics()
    .filter((space) => space.space_size > 0)
    .map((space) => `${space.space_name.replace(/_space$/, '')} ${ms(mb(space.space_size), 1)}/${ms(mb(space.space_used_size), 1)}`)
    .join('  ');
}

/** /proc/self/smaps_rollup's anonymous and private figures in MB (Linux); '' elsewhere. */
function smapsRollup(): string {
  let text = '';
  try {
    text = readFileSync('/proc/self/smaps_rollup', 'utf8');
  } catch {
    return '';
  }
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return `Rss ${ms(mb(kb('Rss')), 1)} Anonymous ${ms(mb(kb('Anonymous')), 1)} Private_Dirty ${ms(mb(kb('Private_Dirty')), 1)} Private_Clean ${ms(mb(kb('Private_Clean')), 1)} Shared ${ms(mb(kb('Shared_Clean') + kb('Shared_Dirty')), 1)}`;
}

type MemorySample = NodeJS.MemoryUsage & {
  readonly rssAnon: number;
  readonly rssFile: number;
  /** Committed size of V8's young generation: its growth to the maximum is the heap sizing the warm-up waits out. */
  readonly newSpace: number;
  /** With --mem-detail: V8 heap spaces (committed/used MB) and smaps_rollup. */
  readonly detail: string;
};

/** This process's memory after GC, with the kiosk idle and armed (the same point every time). */
async function settledMemory(rig: KioskRig): Promise<MemorySample> {
  await delay(50); // let the last closes finish on both sides
  pruneDevices(rig);
  forceGc();
  await delay(20);
  forceGc();
  // V8 hands the pages freed by a full GC back to the OS from a background thread: RSS read right after
  // gc() sometimes still includes several MB that are gone a few milliseconds later (seen here: 6–8 MB
  // released within 5 ms, nothing after 100 ms). Read it once that has happened.
  await delay(100);
  return currentMemory();
}

function currentMemory(): MemorySample {
  const split = rssSplit();
  const detail = MEM_DETAIL ? `\n        spaces (committed/used MB): ${heapSpaces()}\n        smaps_rollup (MB): ${smapsRollup()}` : '';
  const newSpace = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
  return { ...process.memoryUsage(), rssAnon: split.anon, rssFile: split.file, newSpace, detail };
}

const mb = (bytes: number): number => bytes / 2 ** 20;

function describeGrowth(label: string, from: MemorySample, to: MemorySample): string {
  return `${label}: rss ${ms(mb(to.rss - from.rss), 2).padStart(7)} MB (anon ${ms(mb(to.rssAnon - from.rssAnon), 2).padStart(6)}, file ${ms(mb(to.rssFile - from.rssFile), 2).padStart(5)})  heapTotal ${ms(mb(to.heapTotal - from.heapTotal), 2).padStart(6)} MB  heapUsed ${ms(mb(to.heapUsed - from.heapUsed), 2).padStart(6)} MB`;
}

function describeLevel(label: string, m: MemorySample): string {
  return `${label}: rss ${ms(mb(m.rss), 1).padStart(6)} MB (anon ${ms(mb(m.rssAnon), 1).padStart(5)})  heapTotal ${ms(mb(m.heapTotal), 1).padStart(5)} MB  heapUsed ${ms(mb(m.heapUsed), 1).padStart(5)} MB  new space ${ms(mb(m.newSpace), 1).padStart(4)} MB  external ${ms(mb(m.external), 1)} MB${m.detail}`;
}

/**
 * RSS of this process (the kiosk, its fake NFC reader and BLE central) over MEM_RUNS full verifications
 * against the backend child. The baseline is taken after MEM_WARMUP verifications, once V8's heap sizing
 * has settled (see MEM_WARMUP); the figures from an early baseline after MEM_EARLY_BASELINE verifications
 * are printed as well.
 */
async function memoryPhase(): Promise<MemoryResult> {
  const child = await startBackendChild();
  try {
    const rig = createBenchKiosk(child.ready.baseUrl, child.ready.apiKey);
    const c2sRequests = new Mailbox<true>();
    rig.central.behaviour = {
      onWrite: (uuid) => {
        if (sameUuid(uuid, C2S_UUID)) c2sRequests.put(true);
      },
    };
    rig.kiosk.start();
    try {
      const result = await measureMemory(rig, c2sRequests, child.ready.pid);
      const counts = await child.counts();
      const expected = MEM_WARMUP + MEM_RUNS;
      check(
        counts.completed === expected && counts.failed === 0,
        `the backend child completed ${counts.completed} verifications (expected ${expected}) and saw ${counts.failed} failure(s)`,
      );
      return result;
    } finally {
      await rig.kiosk.stop();
    }
  } catch (e) {
    await child.stop();
    const detail = child.failures.length > 0 ? ` [backend child: ${child.failures.join(' | ')}]` : '';
    if (e instanceof CorrectnessError) throw new CorrectnessError(`${e.message}${detail}`);
    throw new Error(`${e instanceof Error ? e.message : String(e)}${detail}`);
  } finally {
    await child.stop();
  }
}

async function measureMemory(rig: KioskRig, c2sRequests: Mailbox<true>, childPid: number): Promise<MemoryResult> {
  const traced: string[] = [];
  let done = 0;
  /** `count` verifications, each ending with the kiosk idle and armed; with --mem-trace=N, a sample every N. */
  const verify = async (count: number, timed?: { ms: number }): Promise<void> => {
    for (let i = 0; i < count; i++) {
      const runStarted = performance.now();
      await kioskSideVerification(rig, c2sRequests);
      if (timed) timed.ms += performance.now() - runStarted;
      pruneDevices(rig);
      done++;
      if (MEM_TRACE > 0 && done % MEM_TRACE === 0) traced.push(describeLevel(`    ${String(done).padStart(5)}`, currentMemory()));
    }
  };
  await rig.phases.reach('ready', 10_000);
  await verify(MEM_EARLY_BASELINE);
  const early = await settledMemory(rig);
  await verify(MEM_WARMUP - MEM_EARLY_BASELINE);
  // Measured at the same point each time: the kiosk idle with a freshly armed session.
  const before = await settledMemory(rig);
  const snapshots: string[] = [];
  if (HEAP_SNAPSHOTS) snapshots.push(writeHeapSnapshot(join(os.tmpdir(), `relay-bench-${process.pid}-baseline.heapsnapshot`)));
  const trajectory: string[] = [];
  const started = performance.now();
  const measuring = { ms: 0 };
  let after = before;
  const step = Math.ceil(MEM_RUNS / MEM_CHECKPOINTS);
  for (let i = 0; i < MEM_RUNS; ) {
    const count = Math.min(step, MEM_RUNS - i);
    await verify(count, measuring);
    i += count;
    after = await settledMemory(rig);
    trajectory.push(describeGrowth(`    after ${String(i).padStart(5)}`, before, after));
  }
  const elapsed = performance.now() - started;
  if (HEAP_SNAPSHOTS) snapshots.push(writeHeapSnapshot(join(os.tmpdir(), `relay-bench-${process.pid}-end.heapsnapshot`)));
  const rssGrowthMb = mb(after.rss - before.rss);
  const heapGrowthMb = mb(after.heapUsed - before.heapUsed);
  return {
    rssGrowthMb,
    heapGrowthMb,
    lines: [
      `  backend in a child process (pid ${childPid}); figures are this process's only: the kiosk, its fake NFC reader and BLE central`,
      `  ${MEM_RUNS} full verifications (after ${MEM_WARMUP} warm-up) in ${ms(elapsed / 1000, 2)} s; ${ms(measuring.ms / MEM_RUNS, 2)} ms each incl. re-arming (POST /sessions + WebSocket + engage)`,
      `  baseline after ${MEM_WARMUP} warm-up verifications, by when V8's heap sizing has settled (its young generation grew to its maximum by ~150 here; see MEM_WARMUP)`,
      ...(after.newSpace > before.newSpace
        ? [
            `  NOTE: V8's new space still grew after the baseline (${ms(mb(before.newSpace), 1)} → ${ms(mb(after.newSpace), 1)} MB): the warm-up was too short for this run`,
          ]
        : []),
      `  rss       ${ms(mb(before.rss), 1)} MB → ${ms(mb(after.rss), 1)} MB  growth ${ms(rssGrowthMb, 2)} MB`,
      `  heapUsed  ${ms(mb(before.heapUsed), 1)} MB → ${ms(mb(after.heapUsed), 1)} MB  growth ${ms(heapGrowthMb, 2)} MB`,
      `  heapTotal growth ${ms(mb(after.heapTotal - before.heapTotal), 2)} MB, external ${ms(mb(after.external - before.external), 2)} MB, arrayBuffers ${ms(mb(after.arrayBuffers - before.arrayBuffers), 2)} MB`,
      `  growth after GC, from the baseline after ${MEM_WARMUP}:`,
      ...trajectory,
      `  for transparency, levels after GC and the growth from an early baseline after ${MEM_EARLY_BASELINE} verifications:`,
      describeLevel(`    after ${String(MEM_EARLY_BASELINE).padStart(5)}`, early),
      describeLevel(`    after ${String(MEM_WARMUP).padStart(5)}`, before),
      describeLevel(`    after ${String(MEM_WARMUP + MEM_RUNS).padStart(5)}`, after),
      describeGrowth(`    ${MEM_EARLY_BASELINE} → ${MEM_WARMUP + MEM_RUNS}`, early, after),
      ...(traced.length > 0
        ? [`  --mem-trace=${MEM_TRACE}: levels without GC (heapUsed includes garbage) by verifications done`, ...traced]
        : []),
      `  (fake device bookkeeping of finished cards and links is pruned after each run; the child prunes the backend's)`,
      ...snapshots.map((file) => `  heap snapshot: ${file}`),
      ...(HEAP_SNAPSHOTS
        ? [
            '  (with --heap-snapshots the RSS growth includes what writing the baseline snapshot left resident: use it for heapUsed diffs only)',
          ]
        : []),
    ],
  };
}

// ---------------------------------------------------------------- APDU round trip

/** `count` APDUs on one connection (kiosk or floor), each sent when the previous response arrived. */
function apduBatch(peer: BackendPeer, first: number, count: number, samples: number[] | undefined): Promise<void> {
  return roundTrips(
    peer,
    count,
    (i) => apduText(first + i),
    (inbound, i) => expectRapdu(inbound, first + i),
    samples,
  );
}

interface Floor {
  readonly peer: BackendPeer;
  readonly client: WebSocket;
  close(): Promise<void>;
}

/**
 * The floor: a bare `ws` client on its own session of the same backend that answers each nfc_apdu the
 * simplest way: parse the JSON, run the same instant card on the decoded command, send the nfc_rapdu.
 */
async function startFloor(rig: Rig): Promise<Floor> {
  const session = rig.backend.createSession();
  rig.floorSessions.add(session.id);
  const client = new WebSocket(`ws://127.0.0.1:${rig.backend.port}/v1/sessions/${encodeURIComponent(session.id)}/mdoc-proximity/ws`, {
    headers: { authorization: `Bearer ${session.secret}` },
    perMessageDeflate: false,
    handshakeTimeout: 5_000,
  });
  client.on('message', (data: WebSocket.RawData) => {
    const message: unknown = JSON.parse(rawText(data));
    if (!isJsonObject(message) || message.op !== 'nfc_apdu' || !isJsonObject(message.params)) return;
    const command = message.params.data;
    if (typeof command !== 'string') return;
    const response = instantCard(Buffer.from(command, 'base64'));
    client.send(JSON.stringify({ type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: Buffer.from(response).toString('base64') }));
  });
  await once(client, 'open');
  const peer = await rig.floorPeers.take(5_000, 'floor connection');
  return {
    peer,
    client,
    close: async () => {
      const closed = once(client, 'close');
      client.close(1000, 'bench done');
      await closed;
    },
  };
}

/** Receive → send times per client socket (see HANDLER_TIMES), filled while the APDU phase runs. */
class HandlerTimes {
  private readonly received = new WeakMap<WebSocket, number>();
  readonly samples = new Map<WebSocket, number[]>();

  /** Wraps `emit('message')` and `send` of every `ws` client socket in this process. */
  install(): void {
    const proto = WebSocket.prototype;
    // Kept unbound on purpose: both are called with the socket as `this`, as `ws` itself calls them.
    const emit: unknown = Reflect.get(proto, 'emit');
    const send: unknown = Reflect.get(proto, 'send');
    if (typeof emit !== 'function' || typeof send !== 'function') throw new Error('bench: ws has no emit/send to time');
    const received = this.received;
    const samples = this.samples;
    proto.emit = function (this: WebSocket, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'message') received.set(this, performance.now());
      return Reflect.apply(emit, this, [event, ...args]) === true;
    };
    const timedSend = function (this: WebSocket, ...args: unknown[]): void {
      const at = received.get(this);
      if (at !== undefined) {
        received.delete(this);
        const list = samples.get(this) ?? [];
        samples.set(this, list);
        list.push(performance.now() - at);
      }
      Reflect.apply(send, this, args);
    };
    proto.send = timedSend as WebSocket['send'];
  }

  /** Forgets the samples so far (the warm-up's). */
  reset(): void {
    for (const list of this.samples.values()) list.length = 0;
  }
}

interface ApduResult {
  readonly kiosk: ReturnType<typeof summarize>;
  readonly floor: ReturnType<typeof summarize>;
  readonly ratio: number;
  /** Geometric mean of the per-round ratios, with its bootstrap interval. */
  readonly interval: RatioInterval;
  readonly coldRatio: number;
  readonly lines: string[];
}

async function apduPhase(rig: Rig): Promise<ApduResult> {
  const handlerTimes = HANDLER_TIMES ? new HandlerTimes() : undefined;
  handlerTimes?.install();
  const floor = await startFloor(rig);
  const peer = await nextArmed(rig);
  rig.nfc.tap(instantCard);
  await peer.expect('nfc_card_present');
  const kioskSamples: number[] = [];
  const floorSamples: number[] = [];
  const roundRatios: number[] = [];
  // Warm-up in alternating batches, so both paths warm alike; the first batch of each is the cold figure.
  const coldKiosk: number[] = [];
  const coldFloor: number[] = [];
  for (let done = 0; done < APDU_WARMUP; done += APDU_BATCH) {
    const count = Math.min(APDU_BATCH, APDU_WARMUP - done);
    await apduBatch(peer, done, count, done === 0 ? coldKiosk : undefined);
    await apduBatch(floor.peer, done, count, done === 0 ? coldFloor : undefined);
  }
  handlerTimes?.reset();
  let next = APDU_WARMUP;
  for (let round = 0; round < APDU_ROUNDS; round++) {
    const k: number[] = [];
    const f: number[] = [];
    if (round % 2 === 0) {
      await apduBatch(peer, next, APDU_BATCH, k);
      await apduBatch(floor.peer, next, APDU_BATCH, f);
    } else {
      await apduBatch(floor.peer, next, APDU_BATCH, f);
      await apduBatch(peer, next, APDU_BATCH, k);
    }
    next += APDU_BATCH;
    kioskSamples.push(...k);
    floorSamples.push(...f);
    roundRatios.push(summarize(k).median / summarize(f).median);
  }
  peer.sendText(RESET); // ends the handover quickly; the kiosk re-arms the same session
  const report = await nextReport(rig, 'backend_error');
  rig.nfc.lift();
  check(report.apdus === APDU_COUNT, `the kiosk relayed ${report.apdus} APDUs, the backend sent ${APDU_COUNT}`);
  await floor.close();
  const kiosk = summarize(kioskSamples);
  const floorSummary = summarize(floorSamples);
  const ratio = kiosk.median / floorSummary.median;
  const rr = summarize(roundRatios);
  const interval = ratioInterval(roundRatios, { seed: APDU_CI_SEED });
  const cold = { kiosk: summarize(coldKiosk), floor: summarize(coldFloor) };
  const handlerLines: string[] = [];
  if (handlerTimes) {
    // The kiosk's socket is the one client socket with APDU-many samples that is not the floor's.
    const floorTimes = handlerTimes.samples.get(floor.client) ?? [];
    const kioskTimes =
      [...handlerTimes.samples].find(([socket, list]) => socket !== floor.client && list.length === floorTimes.length)?.[1] ?? [];
    const k = summarize(kioskTimes);
    const f = summarize(floorTimes);
    handlerLines.push(
      `  --handler-times: message event → send (µs): kiosk median ${ms(k.median * 1000, 2)} p90 ${ms(k.p90 * 1000, 2)} (n=${k.n}); floor median ${ms(f.median * 1000, 2)} p90 ${ms(f.p90 * 1000, 2)} (n=${f.n}); kiosk − floor ${ms((k.median - f.median) * 1000, 2)} µs`,
    );
  }
  return {
    kiosk,
    floor: floorSummary,
    ratio,
    interval,
    coldRatio: cold.kiosk.median / cold.floor.median,
    lines: [
      `  ${APDU_ROUNDS} alternating rounds of ${APDU_BATCH} per side after ${APDU_WARMUP} warm-up per side; response APDU ${RESPONSE_DATA_BYTES + 2} bytes`,
      `  cold (the first ${coldKiosk.length} of the warm-up) median kiosk ${ms(cold.kiosk.median, 4)} ms, floor ${ms(cold.floor.median, 4)} ms, ratio ${ms(cold.kiosk.median / cold.floor.median, 3)}`,
      `  kiosk  (ms) ${describeSummary(kiosk, 4)}`,
      `  floor  (ms) ${describeSummary(floorSummary, 4)}`,
      `  kiosk − floor median: ${ms((kiosk.median - floorSummary.median) * 1000, 1)} µs per APDU`,
      `  ratio of medians ${ms(ratio, 3)}; per-round ratios min ${ms(rr.min, 3)} median ${ms(rr.median, 3)} max ${ms(rr.max, 3)}`,
      `  per-round ratio, geometric mean: ${describeInterval(interval)} (bootstrap over rounds, seed ${APDU_CI_SEED})`,
      ...handlerLines,
    ],
  };
}

// ---------------------------------------------------------------- tap to first APDU

interface TapResult {
  readonly kiosk: ReturnType<typeof summarize>;
  readonly httpBetween: number;
  readonly lines: string[];
}

async function tapPhase(rig: Rig): Promise<TapResult> {
  const kioskMs: number[] = [];
  const toCardPresent: number[] = [];
  const apduToTransmit: number[] = [];
  const backendMs: number[] = [];
  const raw: number[] = [];
  let httpBetween = 0;
  let httpDuring = 0;
  for (let t = 0; t < TAP_WARMUP + TAPS; t++) {
    const peer = await nextArmed(rig);
    let cardPresentAt = 0;
    let apduSentDone = 0;
    let transmitAt = 0;
    let httpAtTransmit = -1;
    peer.hook = (inbound) => {
      if (inbound.op === 'nfc_card_present') {
        // The backend answers at once; its own receive→send time is subtracted from the kiosk's.
        cardPresentAt = inbound.at;
        peer.sendText(apduText(0));
        apduSentDone = performance.now();
        return true;
      }
      if (inbound.op === 'nfc_rapdu') {
        peer.sendText(RESET); // an early backend error ends the attempt; the session is re-armed without HTTP
        return true;
      }
      return false;
    };
    const httpAtTap = rig.backend.http.length;
    const tapAt = performance.now();
    rig.nfc.tap((command) => {
      if (transmitAt === 0) {
        transmitAt = performance.now();
        httpAtTransmit = rig.backend.http.length;
      }
      return instantCard(command);
    });
    await nextReport(rig, 'backend_error');
    rig.nfc.lift();
    peer.hook = undefined;
    check(transmitAt > 0 && cardPresentAt > 0 && apduSentDone > 0, 'tap did not reach the card');
    httpDuring += rig.backend.http.length - httpAtTap;
    if (t < TAP_WARMUP) continue;
    httpBetween += httpAtTransmit - httpAtTap;
    const backend = apduSentDone - cardPresentAt;
    raw.push(transmitAt - tapAt);
    backendMs.push(backend);
    kioskMs.push(transmitAt - tapAt - backend);
    toCardPresent.push(cardPresentAt - tapAt);
    apduToTransmit.push(transmitAt - apduSentDone);
  }
  check(httpBetween === 0, `${httpBetween} HTTP request(s) between tap and first APDU`);
  const kiosk = summarize(kioskMs);
  return {
    kiosk,
    httpBetween,
    lines: [
      `  ${TAPS} taps after ${TAP_WARMUP} warm-up, each on a pre-warmed session, ended by a backend error after the first APDU`,
      `  kiosk time (ms)              ${describeSummary(kiosk)}`,
      `    tap → nfc_card_present at backend   median ${ms(summarize(toCardPresent).median)}`,
      `    nfc_apdu sent → card transmit       median ${ms(summarize(apduToTransmit).median)}`,
      `  tap → transmit, raw (ms)     ${describeSummary(summarize(raw))}`,
      `  backend receive→send (ms)    ${describeSummary(summarize(backendMs))}`,
      `  HTTP requests between tap and first APDU: ${httpBetween} (over the whole phase, re-arming included: ${httpDuring})`,
    ],
  };
}

/**
 * The same tap with `session.prewarm: on_demand` and nothing kept warm after a customer: the kiosk shows
 * Ready with no session, so the tap waits for a connection and `engage` (and `POST /sessions` when the
 * previous session is spent) before `nfc_card_present`. Reported beside the pre-warmed figure: what a
 * fleet owner trades for fewer sessions (issue: idle session churn).
 */
async function tapOnDemandPhase(): Promise<TapResult & { readonly postsPerTap: number }> {
  // A backend of its own: a rig takes over its backend's connection handler.
  const backend = await FakeBackend.start();
  const rig = startRig(backend, { prewarm: 'on_demand', keepWarmAfterUseMs: 1 });
  try {
    const raw: number[] = [];
    let posts = 0;
    const taps = Math.max(20, Math.round(TAPS / 4));
    for (let t = 0; t < TAP_WARMUP + taps; t++) {
      await rig.phases.reach('ready', 10_000);
      const postsBefore = rig.backend.http.filter((r) => r.method === 'POST').length;
      let transmitAt = 0;
      const tapAt = performance.now();
      rig.nfc.tap((command) => {
        if (transmitAt === 0) transmitAt = performance.now();
        return instantCard(command);
      });
      const peer = await rig.kioskPeers.take(10_000, 'kiosk WebSocket connection after the tap');
      check((await peer.next(5_000)).op === 'engage', 'first message of the on-demand session was not engage');
      check((await peer.next(5_000)).op === 'nfc_card_present', 'no nfc_card_present after engage');
      peer.sendText(apduText(0));
      check((await peer.next(5_000)).op === 'nfc_rapdu', 'no nfc_rapdu');
      peer.sendText(RESET);
      await nextReport(rig, 'backend_error');
      rig.nfc.lift();
      check(transmitAt > 0, 'tap did not reach the card');
      if (t < TAP_WARMUP) continue;
      raw.push(transmitAt - tapAt);
      posts += rig.backend.http.filter((r) => r.method === 'POST').length - postsBefore;
    }
    const kiosk = summarize(raw);
    const postsPerTap = posts / taps;
    return {
      kiosk,
      httpBetween: posts,
      postsPerTap,
      lines: [
        `  ${taps} taps after ${TAP_WARMUP} warm-up with no session kept warm (session.prewarm on_demand, keepWarmAfterUseMs 1)`,
        `  tap → transmit, raw (ms)     ${describeSummary(kiosk)}   (the pre-warmed figure above excludes the backend's own time)`,
        `  POST /sessions per tap: ${ms(postsPerTap, 2)} (a session given back after an error is reconnected, not recreated)`,
        `  the fake backend is in this process on loopback: on a real network add one HTTP round trip and a WebSocket handshake`,
      ],
    };
  } finally {
    await rig.kiosk.stop();
    await backend.stop();
  }
}

// ---------------------------------------------------------------- ble_notified flood

interface FloodResult {
  readonly perSecond: number;
  readonly orderPreserved: boolean;
  readonly lines: string[];
}

async function floodPhase(rig: Rig): Promise<FloodResult> {
  const peer = await nextArmed(rig);
  rig.nfc.tap(instantCard);
  await peer.expect('nfc_card_present');
  peer.sendText(apduText(0));
  expectRapdu(await peer.next(), 0);
  peer.sendText(BLE_EXCHANGE);
  const connected = await peer.expect('ble_connected');
  check(connected.message.status === 'ok' && connected.message.role === 'central', 'ble_connected is not ok/central');
  rig.nfc.lift();
  const link: FakeCentralLink = await rig.central.nextLink();

  // The backend checks every ble_notified as it arrives: the characteristic, the payload length and the
  // sequence number in its first 4 bytes, which must continue from the previous one (warm-up included).
  const payloadB64Length = Math.ceil(NOTIFY_BYTES / 3) * 4;
  let received = 0;
  let outOfOrder = 0;
  let firstProblem = '';
  let receivedWaiter: ((at: number) => void) | undefined;
  peer.hook = (inbound) => {
    if (inbound.op !== 'ble_notified') return false;
    const { char, data } = inbound.message;
    const seq = typeof data === 'string' && data.length === payloadB64Length ? Buffer.from(data.slice(0, 8), 'base64').readUInt32BE(0) : -1;
    if (seq !== received || char !== S2C_UUID) {
      outOfOrder++;
      if (firstProblem === '') firstProblem = `message ${received}: seq ${seq}, char ${String(char)}`;
    }
    received++;
    receivedWaiter?.(inbound.at);
    return true;
  };
  /** Resolves with the arrival time of notification number `count` (1-based) at the backend. */
  const arrivalOf = (count: number): Promise<number> =>
    new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        receivedWaiter = undefined;
        reject(new CorrectnessError(`only ${received} of ${count} ble_notified arrived within 60 s`));
      }, 60_000);
      receivedWaiter = (at) => {
        if (received < count) return;
        clearTimeout(timer);
        receivedWaiter = undefined;
        resolve(at);
      };
    });

  const template = Buffer.alloc(NOTIFY_BYTES, 0xa5);
  let seq = 0;
  /** Pushes `count` notifications, FLOOD_BURST per event-loop turn; returns the time spent inside link.notify. */
  const push = async (count: number): Promise<number> => {
    let inside = 0;
    const end = seq + count;
    while (seq < end) {
      const burstAt = performance.now();
      const burstEnd = Math.min(end, seq + FLOOD_BURST);
      for (; seq < burstEnd; seq++) {
        const data = Buffer.from(template);
        data.writeUInt32BE(seq, 0);
        link.notify(S2C_UUID, data);
      }
      inside += performance.now() - burstAt;
      await yieldToLoop();
    }
    return inside;
  };

  const warmedUp = arrivalOf(FLOOD_WARMUP);
  await push(FLOOD_WARMUP);
  await warmedUp;
  const lastArrival = arrivalOf(FLOOD_WARMUP + FLOOD_N);
  const firstPushAt = performance.now();
  const insideNotify = await push(FLOOD_N);
  const pushedAt = performance.now();
  const lastAt = await lastArrival;
  peer.hook = undefined;
  const elapsed = lastAt - firstPushAt;
  const perSecond = FLOOD_N / (elapsed / 1000);
  const orderPreserved = outOfOrder === 0;

  peer.sendText(WRITE_STATE_END);
  peer.sendText(COMPLETE);
  const report = await nextReport(rig, 'complete');
  check(report.bleMessages >= FLOOD_WARMUP + FLOOD_N, `the kiosk counted ${report.bleMessages} BLE messages`);
  return {
    perSecond,
    orderPreserved,
    lines: [
      `  ${FLOOD_N} notifications of ${NOTIFY_BYTES} bytes after ${FLOOD_WARMUP} warm-up in the same transfer, ${FLOOD_BURST} per event-loop turn`,
      `  first push → last received: ${ms(elapsed, 1)} ms → ${Math.round(perSecond)} notifications/s`,
      `  all pushed after ${ms(pushedAt - firstPushAt, 1)} ms; time inside link.notify (kiosk onNotification + ws.send) ${ms(insideNotify, 1)} ms = ${ms((insideNotify / FLOOD_N) * 1000, 2)} µs each`,
      `  order preserved: ${orderPreserved ? 'yes' : `NO (${outOfOrder} out of order; first: ${firstProblem})`}`,
    ],
  };
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
  memory?: MemoryResult;
  apdu?: ApduResult;
  tap?: TapResult;
  tapOnDemand?: TapResult;
  flood?: FloodResult;
}

function resultLine(f: Figures): string {
  const field = (value: number | undefined, digits: number): string => (value === undefined ? 'NaN' : ms(value, digits));
  return `RESULT apdu_ratio=${field(f.apdu?.ratio, 3)} apdu_p99_ms=${field(f.apdu?.kiosk.p99, 3)} apdu_round_ratio=${field(f.apdu?.interval.estimate, 3)} apdu_ratio_ci_low=${field(f.apdu?.interval.low, 3)} apdu_ratio_ci_high=${field(f.apdu?.interval.high, 3)} apdu_cold_ratio=${field(f.apdu?.coldRatio, 3)} notified_per_s=${field(f.flood?.perSecond, 0)} tap_to_apdu_ms=${field(f.tap?.kiosk.median, 3)} tap_to_apdu_on_demand_ms=${field(f.tapOnDemand?.kiosk.median, 3)} rss_growth_mb=${field(f.memory?.rssGrowthMb, 2)}`;
}

/** The apdu, tap and flood phases, on the in-process fake backend. */
async function runPhases(rig: Rig, phases: Set<PhaseName>, figures: Figures, failures: string[]): Promise<void> {
  if (phases.has('apdu')) {
    console.log('\n[apdu] nfc_apdu → nfc_rapdu round trip, kiosk vs bare ws echo client');
    figures.apdu = await apduPhase(rig);
    for (const line of figures.apdu.lines) console.log(line);
  }
  if (phases.has('tap')) {
    console.log('\n[tap] tap → first APDU at the card, pre-warmed session');
    figures.tap = await tapPhase(rig);
    for (const line of figures.tap.lines) console.log(line);
  }
  if (phases.has('tap_on_demand')) {
    console.log('\n[tap_on_demand] tap → first APDU at the card, no session kept warm (session.prewarm on_demand)');
    figures.tapOnDemand = await tapOnDemandPhase();
    for (const line of figures.tapOnDemand.lines) console.log(line);
  }
  if (phases.has('flood')) {
    console.log('\n[flood] ble_notified forwarding rate, central mode');
    figures.flood = await floodPhase(rig);
    for (const line of figures.flood.lines) console.log(line);
    if (!figures.flood.orderPreserved) failures.push('ble_notified order not preserved');
  }
}

function describeError(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
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
    console.log(`relay bench: node ${process.version}, ${os.cpus().length} CPU(s), load average ${load}, phases ${[...phases].join(',')}`);
    // The memory phase has a kiosk of its own and its backend in a child process; it runs first, before
    // the in-process backend of the other phases exists.
    if (phases.has('memory')) {
      console.log('\n[memory] RSS of the kiosk process over full verifications (backend in a child process)');
      figures.memory = await memoryPhase();
      for (const line of figures.memory.lines) console.log(line);
    }
    if (phases.has('apdu') || phases.has('tap') || phases.has('tap_on_demand') || phases.has('flood')) {
      const backend = await FakeBackend.start();
      try {
        const rig = startRig(backend);
        try {
          await runPhases(rig, phases, figures, failures);
        } catch (e) {
          failures.push(describeError(e));
        } finally {
          await rig.kiosk.stop();
        }
      } finally {
        await backend.stop();
      }
    }
  } catch (e) {
    failures.push(describeError(e));
  }
  finishBench(
    'relay bench',
    started,
    failures,
    'all verifications ended as scripted, every response matched, notification order preserved',
    resultLine(figures),
  );
}

await main();
