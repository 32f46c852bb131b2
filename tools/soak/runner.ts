/**
 * The soak itself: one long-lived kiosk (stack.ts), run after run from the seeded plan (plan.ts), each
 * run's fault injected where the plan says, each outcome judged (oracle.ts), the kiosk back to ready
 * within a bound, resources sampled when idle (resources.ts), every byte the kiosk writes searched for
 * secrets and personal data (secrets.ts). See docs/soak.md.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeHeapSnapshot } from 'node:v8';
import type { KioskView } from '../../src/common/kiosk-view.js';
import type { VerificationReport } from '../../src/kiosk/kiosk.js';
import {
  DEFAULT_HOLDER_DATA,
  summarisePhoneOutcome,
  type PhoneOutcomeSummary,
  type PhoneSettingsChange,
  type VirtualNfcTag,
} from '../../src/qa/index.js';
import { drawPortraitJpeg, drawPortraitJpeg2000 } from '../../src/qa/sim/virtual-wallet/index.js';
import { availabilityWhen } from '../../test/support/availability-wait.js';
import { describeHciPlan, HCI_EVERY, HciLane, planHciRun } from './hci-lane.js';
import { judge, NO_FACTS, type HolderTruth, type RunFacts } from './oracle.js';
import { describePlan, FAULT_WEIGHTS, planRun, type Fault, type FaultKind, type RunPlan } from './plan.js';
import { Progress, type Goal } from './progress.js';
import {
  DEFAULT_LEAK_BOUNDS,
  gcAvailable,
  METRICS,
  ResourceTracker,
  sampleResources,
  activeSockets,
  type EventEmitterLike,
  type LeakBounds,
  type ResourceReport,
} from './resources.js';
import { middleSlice, SecretScanner } from './secrets.js';
import { SOAK_LIMITS, SOAK_SESSION, SOAK_TIMEOUTS, startSoakStack, type SoakStack } from './stack.js';
import { Trail } from './trail.js';
import { describeDevices, isReady, KioskWatch } from './watch.js';
import { errorText } from '../../src/common/error-text.js';

export interface SoakOptions {
  readonly seed: number;
  readonly goal: Goal;
  /** First run number (1-based): `--from K` replays the plan from run K on. */
  readonly from: number;
  readonly logLevel: 'info' | 'debug';
  /** Runs before the resource slopes start counting. */
  readonly warmupRuns: number;
  /** A resource sample every this many runs. */
  readonly sampleEvery: number;
  /** The kiosk must be ready again this soon after a run's report (or after its fault was lifted). */
  readonly readyBoundMs: number;
  readonly leakBounds: LeakBounds;
  /** Stop after this many failed runs. */
  readonly maxFailures: number;
  readonly weights: Readonly<Record<FaultKind, number>>;
  /** Write a heap snapshot here after warm-up and at the end (leak hunting). */
  readonly heapSnapshotDir?: string;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { readonly isTTY?: boolean; write(text: string): unknown };
}

export const DEFAULT_SOAK_OPTIONS = {
  from: 1,
  logLevel: 'debug',
  sampleEvery: 10,
  readyBoundMs: 15_000,
  leakBounds: DEFAULT_LEAK_BOUNDS,
  maxFailures: 5,
  weights: FAULT_WEIGHTS,
} as const;

export interface SoakSummary {
  readonly runs: number;
  readonly ok: number;
  readonly failed: number;
  readonly wedged: number;
  readonly faults: number;
  readonly maxBackToReadyMs: number;
  readonly resources: ResourceReport;
  readonly secretHits: number;
  readonly searchedBytes: number;
  readonly durationS: number;
  /** Problems outside any run: a leak over its bound, a secret found, an unhandled rejection. */
  readonly problems: readonly string[];
  readonly exitCode: number;
}

/** How long a run may take from the trigger to the report: the kiosk's whole-verification bound and more. */
const REPORT_BOUND_MS = SOAK_TIMEOUTS.verificationMs + 10_000;
/** The phone's own end: its wait for the reader after answering (stack.ts), and some. */
const PHONE_OUTCOME_MS = 5_000;
/** A wedged kiosk gets this much longer to come back before the soak gives up. */
const WEDGE_GRACE_MS = 60_000;
/**
 * A run that has not ended after this long is stuck somewhere the bounds above do not reach (a wait in the
 * runner or the stack itself): the soak stops with the trail instead of hanging until CI kills it.
 */
const RUN_BOUND_MS = REPORT_BOUND_MS + PHONE_OUTCOME_MS + 2 * WEDGE_GRACE_MS;
/** A customer takes a moment before tapping again. */
const RETAP_DELAY_MS = 150;
/** Before a resource sample: the count of sockets must read the same this many times, this far apart, within the bound. */
const SETTLE_STEADY_READS = 5;
const SETTLE_POLL_MS = 50;
const SETTLE_BOUND_MS = 3_000;
const SETTLE_HCI_READY_MS = 15_000;
/** Events of the kiosk's own log shown in the trail (the rest would flood it). */
const LOG_EVENTS_FOR_TRAIL =
  /^(session_gone|session_conflict|session_conflict_exhausted|backend_unavailable|session_retired|session_renewing|idle_socket_closed|socket_dropped|watchdog_timeout|protocol_violation|backend_error|ble_link_lost|ble_failed|apdu_failed|pcsc_\w+|kiosk_loop_fault|internal_error)$/;
/** Events that mean a defect whatever the run: the kiosk caught something it did not expect. */
const DEFECT_EVENTS = new Set([
  'kiosk_loop_fault',
  'internal_error',
  'view_listener_failed',
  'report_listener_failed',
  'keeper_listener_failed',
]);

interface RunResult {
  readonly ok: boolean;
  readonly problem?: string;
  readonly wedged: boolean;
  readonly report?: VerificationReport;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

export class Soak {
  private stack!: SoakStack;
  private watch!: KioskWatch;
  private readonly trail = new Trail(50);
  private readonly scanner = new SecretScanner();
  private readonly tracker: ResourceTracker;
  private readonly progress: Progress;
  private truth!: HolderTruth;
  private stopSessionWatch: (() => void) | undefined;
  private readonly sessionCreatedWaiters = new Set<() => void>();
  private readonly readyTimes: number[] = [];
  private maxBackToReady = 0;
  private readonly problems: string[] = [];
  private readonly defects: string[] = [];
  private readonly tally = new Map<string, number>();
  /** Wall time per fault kind: runs, total ms, max ms. */
  private readonly timing = new Map<string, { n: number; total: number; max: number }>();
  private readonly resultTally = new Map<string, number>();
  private runs = 0;
  private ok = 0;
  private failed = 0;
  private wedged = 0;
  private faults = 0;
  private printedTrails = 0;
  /** The HCI lane (hci-lane.ts): a second counter on BlueZ's emulated controllers, one run every HCI_EVERY. */
  private hci: HciLane | undefined;
  private hciRuns = 0;
  private hciOk = 0;
  /** The counter came up (else there is nothing to search or stop). */
  private stackStarted = false;
  private snapshotTaken = false;
  /** The current run's facts, filled in by the customer's hands and the fault timers. */
  private facts: { -readonly [K in keyof RunFacts]: RunFacts[K] } = { ...NO_FACTS };
  private reported = false;
  /** When and which session the current run's verification took (the kiosk's `session_acquired` log event). */
  private acquiredAt: number | undefined;
  private acquiredSession: string | undefined;

  constructor(private readonly options: SoakOptions) {
    this.tracker = new ResourceTracker(options.warmupRuns);
    this.progress = new Progress(options.goal, options.stderr);
  }

  // ------------------------------------------------------------ output (searched like everything else)

  private print(text: string): void {
    this.scanner.scan('soak output', text);
    this.options.stdout.write(`${text}\n`);
  }

  private note(text: string): void {
    this.trail.add(text);
  }

  // ------------------------------------------------------------ setup

  private onLogLine(line: string): void {
    this.scanner.scan('kiosk log', line);
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      this.defects.push('a log line that is not JSON');
      return;
    }
    if (typeof record !== 'object' || record === null) return;
    const { event, level } = record as { event?: unknown; level?: unknown };
    if (typeof event !== 'string') return;
    if (DEFECT_EVENTS.has(event)) this.defects.push(`the kiosk logged ${event}`);
    if (event === 'session_acquired') {
      this.acquiredAt = performance.now();
      const { sessionId } = record as { sessionId?: unknown };
      this.acquiredSession = typeof sessionId === 'string' ? sessionId : undefined;
    }
    if (LOG_EVENTS_FOR_TRAIL.test(event) && typeof level === 'number' && level >= 30) {
      const { code, reason, kind, phase } = record as { code?: unknown; reason?: unknown; kind?: unknown; phase?: unknown };
      const extra = [code, reason, kind, phase].filter((v) => typeof v === 'string' || typeof v === 'number').join(' ');
      this.note(`  log ${event}${extra === '' ? '' : ` ${extra}`}`);
    }
  }

  private watchSessions(): void {
    this.stopSessionWatch?.();
    this.stopSessionWatch = this.stack.backend().sessions.onCreated((session) => {
      this.scanner.addSecret(session.clientSecret);
      for (const wake of [...this.sessionCreatedWaiters]) wake();
    });
  }

  /** Resolves when the backend creates its next session (bounded). */
  private nextSessionCreated(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sessionCreatedWaiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(() => {
        this.sessionCreatedWaiters.delete(wake);
        reject(new Error(`the backend created no session within ${timeoutMs} ms`));
      }, timeoutMs);
      this.sessionCreatedWaiters.add(wake);
    });
  }

  private async setup(): Promise<void> {
    const portraits = { jpeg: drawPortraitJpeg(), jpeg2000: await drawPortraitJpeg2000() };
    const holder = DEFAULT_HOLDER_DATA;
    this.truth = {
      strings: {
        family_name: holder.family_name,
        given_name: holder.given_name,
        document_number: holder.document_number,
        birth_date: holder.birth_date,
      },
      birthDate: holder.birth_date,
      portraits,
    };
    this.stack = await startSoakStack({
      logLevel: this.options.logLevel,
      onLogLine: (line) => this.onLogLine(line),
      onCardEvent: (event) => {
        if (event.type === 'field_lost') this.note(`  card: field lost at APDU #${event.number}`);
        if (event.type === 'removed' && event.cause !== 'removed') this.note(`  card: removed (${event.cause})`);
      },
    });
    this.watch = new KioskWatch(this.stack.kiosk, (view) => this.onPhase(view));
    this.stackStarted = true;
    this.watchSessions();
    // What must never appear in anything the kiosk writes (issue 12 §5).
    this.scanner.addText('API key', this.stack.embedded.apiKey);
    this.scanner.addText('holder name', `"${holder.family_name}"`);
    this.scanner.addText('holder name', `"${holder.given_name}"`);
    this.scanner.addText('holder name', `${holder.given_name} ${holder.family_name}`);
    this.scanner.addText('document number', holder.document_number);
    this.scanner.addBytes('document number', Buffer.from(holder.document_number, 'utf8'));
    this.scanner.addBytes('portrait bytes', middleSlice(portraits.jpeg));
    this.scanner.addBytes('portrait bytes', middleSlice(portraits.jpeg2000));
    const selfTest = this.scanner.selfTest(middleSlice(portraits.jpeg), 'c2VsZi10ZXN0LXNlY3JldC0wMTIzNDU2Nzg5YWI');
    if (selfTest.length > 0) throw new Error(`the secrets search fails its self-test: ${selfTest.join('; ')}`);
    this.hci = await HciLane.start((line) => this.scanner.scan('hci kiosk log', line));
    const hciKey = this.hci.apiKey;
    if (hciKey !== undefined) this.scanner.addText('API key', hciKey);
    this.hci.onClientSecret((secret) => this.scanner.addSecret(secret));
    await this.watch.ready(30_000);
  }

  private onPhase(view: KioskView): void {
    const extra =
      view.phase === 'error' && view.error
        ? ` ${view.error.code}`
        : view.phase === 'result' && view.outcome
          ? ` ${view.outcome.verdict}`
          : view.role
            ? ` ${view.role}`
            : '';
    this.note(`  kiosk ${view.phase}${extra}`);
    if (view.phase === 'awaiting_card') this.facts.sawAwaitingCard = true;
  }

  // ------------------------------------------------------------ the customer's hands

  private presentQr(): void {
    const text = this.stack.counter.presentQr();
    this.stack.devices.qr.push(text);
    this.note('  customer shows the QR code');
  }

  /** Lays the phone on the reader; `wrap` lets a fault act between APDUs. */
  private async tap(tag: VirtualNfcTag): Promise<void> {
    this.note('  customer taps');
    await this.stack.card.insert(tag);
  }

  /** A re-tap after "tap again", retried while the reader is away (pcscd restarting). */
  private async retap(tag: VirtualNfcTag, until: () => boolean): Promise<void> {
    await sleep(RETAP_DELAY_MS);
    for (let attempt = 0; !until(); attempt++) {
      try {
        this.note(attempt === 0 ? '  customer taps again' : '  customer taps again (retry)');
        await this.stack.card.reinsert(tag);
        return;
      } catch (e) {
        if (attempt > 40) throw e;
        await sleep(100);
      }
    }
  }

  /** The phone's tag, watched: field drops, lifts and pcscd kills act between its APDUs. */
  private wrapTag(plan: RunPlan, tag: VirtualNfcTag, onAnswered: (n: number) => void): VirtualNfcTag {
    let apdus = 0;
    const fault = plan.fault;
    return {
      fieldOn: () => tag.fieldOn(),
      fieldOff: () => tag.fieldOff(),
      processApdu: (command) => {
        apdus++;
        try {
          const response = tag.processApdu(command);
          onAnswered(apdus);
          return response;
        } catch (e) {
          if (fault.kind === 'field_drop' || (fault.kind === 'socket_drop' && fault.phase === 'awaiting_card'))
            this.facts.fieldDropped = true;
          throw e;
        }
      },
    };
  }

  // ------------------------------------------------------------ readiness

  /**
   * Waits for the kiosk to be ready for the next customer (after `afterSeq`), records how long it took
   * from `since`, and handles a wedge: not ready within the bound is a failure; not ready after the grace
   * either ends the soak.
   */
  private async backToReady(since: number, afterSeq: number, label: string): Promise<{ wedged: boolean; problem?: string }> {
    const bound = this.options.readyBoundMs;
    let at: number | undefined;
    try {
      // `ready` answers with the moment the kiosk became ready, so a wait that starts late still measures right.
      at = await this.watch.ready(Math.max(100, bound - (performance.now() - since)), afterSeq);
    } catch {
      at = undefined;
    }
    if (at !== undefined && at - since <= bound) {
      const ms = Math.max(0, at - since);
      this.readyTimes.push(ms);
      if (this.readyTimes.length > 20_000) this.readyTimes.splice(0, 10_000); // bounded; the max is kept apart
      this.maxBackToReady = Math.max(this.maxBackToReady, ms);
      this.note(`  ready again ${ms.toFixed(0)} ms after ${label}`);
      return { wedged: false };
    }
    const view = this.watch.current;
    const problem = `WEDGED: not ready within ${bound} ms after ${label} (phase ${view.phase}, ${describeDevices(view)})`;
    this.note(problem);
    try {
      at ??= await this.watch.ready(WEDGE_GRACE_MS, afterSeq);
      this.maxBackToReady = Math.max(this.maxBackToReady, at - since);
      this.note(`  ready again ${(at - since).toFixed(0)} ms after ${label} (over the bound)`);
    } catch {
      throw new SoakAbort(`${problem}; still not ready ${WEDGE_GRACE_MS / 1000} s later`);
    }
    return { wedged: true, problem };
  }

  private phoneSettings(plan: RunPlan): PhoneSettingsChange {
    const { flow, fault } = plan;
    return {
      profile: flow.phone,
      credential: fault.kind === 'credential' ? fault.variant : 'valid',
      portrait: flow.portrait,
      deviceAuth: flow.deviceAuth,
      consent: fault.kind === 'phone_decline' ? 'decline' : 'approve',
      consentDelayMs: fault.kind === 'phone_slow' || fault.kind === 'phone_too_slow' ? fault.delayMs : 0,
      // A socket drop "while awaiting the card" needs the card to have gone first.
      fieldDropAtApdu:
        fault.kind === 'field_drop'
          ? fault.atApdu
          : fault.kind === 'socket_drop' && fault.phase === 'awaiting_card'
            ? 1 + (plan.index % 4)
            : null,
      bleDropAfterChunks: fault.kind === 'ble_drop' ? fault.afterChunks : null,
      wrongIdent: fault.kind === 'wrong_ident',
    };
  }

  /** Where the current verification stands as the backend goes away (see `RunFacts.offline`). */
  private offlineMoment(): RunFacts['offline'] {
    if (this.acquiredAt === undefined) return 'before_session';
    const session = this.acquiredSession === undefined ? undefined : this.stack.backend().sessions.get(this.acquiredSession);
    return session?.result === undefined ? 'during_run' : 'after_complete';
  }

  /** Faults that happen while the kiosk waits for a customer; each ends with the kiosk ready again. */
  private async idleFault(fault: Fault): Promise<{ wedged: boolean; problem?: string }> {
    const backend = (): ReturnType<SoakStack['backend']> => this.stack.backend();
    const seq = this.watch.seq;
    const ready = (since: number, label: string): Promise<{ wedged: boolean; problem?: string }> => this.backToReady(since, seq, label);
    const nfcDownThenUp = async (action: () => Promise<void>, label: string): Promise<{ wedged: boolean; problem?: string }> => {
      const down = availabilityWhen(this.stack.reader, (a) => !a.usable, 10_000).catch(() => undefined);
      await action();
      await down;
      return ready(performance.now(), label);
    };
    switch (fault.kind) {
      case 'idle_socket_drop':
        backend().dropConnections(fault.how);
        return ready(performance.now(), `the idle socket dropped (${fault.how})`);
      case 'handshake_drop': {
        backend().faults.set({ closeAtPhase: 'socket_open' });
        backend().dropConnections('close');
        await sleep(fault.forMs);
        backend().faults.clear();
        return ready(performance.now(), `${fault.forMs} ms of sockets closed at open`);
      }
      case 'backend_404':
        backend().faults.set({ notFoundNextConnect: true });
        backend().dropConnections('close');
        return ready(performance.now(), 'a reconnect answered 404');
      case 'backend_409':
        backend().faults.set({ conflictConnects: fault.times });
        backend().dropConnections('close');
        return ready(performance.now(), `${fault.times} reconnects answered 409`);
      case 'backend_5xx': {
        const failure = {
          status: fault.status,
          times: fault.times,
          ...(fault.retryAfterS === undefined ? {} : { retryAfterS: fault.retryAfterS }),
        };
        backend().faults.set({
          ...(fault.exchange === 'create' ? { notFoundNextConnect: true } : {}),
          httpFailures: { [fault.exchange]: failure },
        });
        backend().dropConnections('close');
        return ready(
          performance.now(),
          `${fault.times}× HTTP ${fault.status} on ${fault.exchange === 'create' ? 'POST /sessions' : 'the handshake'}`,
        );
      }
      case 'backend_slow_http': {
        backend().faults.set({ notFoundNextConnect: true, httpDelayMs: { create: fault.delayMs } });
        backend().dropConnections('close');
        return ready(performance.now(), `POST /sessions answering after ${fault.delayMs} ms`);
      }
      case 'backend_offline': {
        await this.stack.embedded.goOffline();
        await sleep(fault.forMs);
        await this.stack.embedded.comeBack();
        this.watchSessions();
        return ready(performance.now(), `the backend away for ${fault.forMs} ms`);
      }
      case 'pcscd_restart':
        return nfcDownThenUp(
          async () => {
            if (fault.how === 'kill') await this.stack.pcscd.kill();
            await this.stack.pcscd.restart();
          },
          `pcscd ${fault.how === 'kill' ? 'killed and started' : 'restarted'}`,
        );
      case 'reader_unplug':
        return nfcDownThenUp(async () => {
          await this.stack.pcscd.unplug(this.stack.slot.name);
          await sleep(fault.forMs);
          await this.stack.pcscd.replug();
        }, `the reader away for ${fault.forMs} ms`);
      case 'session_expiry': {
        // A session the backend lets live `lifetimeMs` (the kiosk believes the configured lifetime):
        // reconnect → 404 → a new session with that short life → it expires while idle → the backend
        // closes its socket → reconnect → 404 → another new session.
        backend().setLifetime(fault.lifetimeMs);
        backend().faults.set({ closeAtExpiry: true, notFoundNextConnect: true });
        const shortLived = this.nextSessionCreated(10_000);
        backend().dropConnections('close');
        await shortLived;
        backend().setLifetime(SOAK_SESSION.lifetimeMs);
        const replaced = this.nextSessionCreated(fault.lifetimeMs + 10_000);
        const first = await ready(performance.now(), 'a reconnect answered 404');
        if (first.wedged) return first;
        await replaced;
        const after = this.watch.seq;
        const result = await this.backToReady(performance.now(), after - 1, 'the idle session expired');
        backend().faults.clear();
        return result;
      }
      case 'session_renewal': {
        // The renewal prepares the new session while the old one stays usable: the view may not change.
        await this.nextSessionCreated(SOAK_LIMITS.renewAfterIdleMs + 10_000);
        await sleep(200);
        return this.backToReady(performance.now(), -1, 'the idle session was renewed');
      }
      default:
        return { wedged: false };
    }
  }

  /** Backend faults that act during the verification (cleared after the report). */
  private armRunFault(plan: RunPlan): void {
    const { fault, flow } = plan;
    const faults = this.stack.backend().faults;
    switch (fault.kind) {
      case 'socket_drop':
        faults.set(fault.how === 'close' ? { closeAtPhase: fault.phase } : { terminateAtPhase: fault.phase });
        return;
      case 'result_lost':
        faults.set({
          ...(fault.how === 'close' ? { closeAtPhase: 'complete' as const } : { terminateAtPhase: 'complete' as const }),
          httpFailures: { result: { status: fault.status, times: 1_000 } },
        });
        return;
      case 'backend_slow': {
        const d = fault.delayMs;
        faults.set({ delayMs: { nfc_apdu: d, nfc_await_card: d, ble_exchange: d, ble_write: d, ble_read_response: d, complete: d } });
        return;
      }
      case 'backend_stall':
        faults.set({ delayMs: flow.engagement === 'qr' ? { ble_exchange: fault.delayMs } : { nfc_apdu: fault.delayMs } });
        return;
      default:
        return;
    }
  }

  private async runOne(plan: RunPlan): Promise<RunResult> {
    const { flow, fault } = plan;
    this.facts = { ...NO_FACTS };
    this.reported = false;
    this.acquiredAt = undefined;
    this.acquiredSession = undefined;
    this.note(`run #${plan.index}: ${describePlan(plan)}`);
    let wedged = false;
    const problems: string[] = [];

    // The kiosk must be ready before the customer comes (the previous run waited for it; a fault of the
    // previous run may have taken it away again since, e.g. a backend that left after the report).
    if (!isReady(this.watch.current)) {
      const r = await this.backToReady(performance.now(), -1, 'the previous run');
      if (r.wedged) return { ok: false, wedged: true, ...(r.problem ? { problem: r.problem } : {}) };
    }
    if (this.stack.kiosk.activeProfile.name !== flow.profile) {
      const seq = this.watch.seq;
      this.stack.kiosk.setProfile(flow.profile);
      const r = await this.backToReady(performance.now(), seq, `profile ${flow.profile}`);
      if (r.wedged) return { ok: false, wedged: true, ...(r.problem ? { problem: r.problem } : {}) };
    }
    await this.stack.counter.reconfigurePhone(this.phoneSettings(plan));

    const idle = await this.idleFault(fault);
    if (idle.wedged) return { ok: false, wedged: true, ...(idle.problem ? { problem: idle.problem } : {}) };

    this.armRunFault(plan);
    const phone = this.stack.counter.rig.phone;
    const reportPromise = this.watch.nextReport(REPORT_BOUND_MS + (fault.kind === 'backend_offline_tap' ? fault.forMs : 0));
    reportPromise.catch(() => undefined);
    const background: Promise<unknown>[] = [];
    let liftAt = 0; // when the fault's effect ended (0: with the report)
    let liftSeq = -1; // the kiosk's view number then (-1: it was ready then, its current readiness counts)
    const lifted = (): void => {
      liftAt = performance.now();
      liftSeq = isReady(this.watch.current) ? -1 : this.watch.seq;
    };
    let tag: VirtualNfcTag | undefined;
    const stopCustomer: (() => void)[] = [];
    /** Aborted when the run ends: waits for a phase that never came are abandoned. */
    const runEnd = new AbortController();
    stopCustomer.push(() => runEnd.abort());

    // The customer follows the prompts: "tap again" → the phone is laid down again (unless it was taken away).
    let retapping: Promise<void> | undefined;
    const onView = this.stack.kiosk.onView((view) => {
      if (view.phase !== 'awaiting_card' || flow.engagement !== 'nfc' || fault.kind === 'card_lifted' || !tag || retapping) return;
      const again = tag;
      retapping = this.retap(again, () => this.reported)
        .catch((e: unknown) => this.note(`  customer could not tap again: ${errorText(e)}`))
        .finally(() => {
          retapping = undefined;
        });
      background.push(retapping);
    });
    stopCustomer.push(onView);

    // Faults timed from the trigger or the kiosk's phases.
    if (fault.kind === 'backend_offline_tap') {
      await this.stack.embedded.goOffline();
      this.facts.offline = 'before_session';
      // The customer comes once the kiosk has seen the backend go (its idle socket closed).
      await this.watch.viewWhere((v) => v.phase === 'offline' || v.phase === 'connecting', 5_000).catch(() => undefined);
      background.push(
        sleep(fault.forMs).then(async () => {
          await this.stack.embedded.comeBack();
          this.watchSessions();
          lifted();
        }),
      );
    }
    if (fault.kind === 'backend_offline_run') {
      background.push(
        sleep(fault.afterMs).then(async () => {
          if (!this.reported) this.facts.offline = this.offlineMoment();
          this.note('  backend goes away');
          await this.stack.embedded.goOffline();
          await sleep(fault.forMs);
          await this.stack.embedded.comeBack();
          this.watchSessions();
          this.note('  backend back');
          lifted();
        }),
      );
    }
    if (fault.kind === 'radio_drop') {
      const dropped = this.watch
        .viewWhere((v) => v.phase === 'transferring', REPORT_BOUND_MS, -1, runEnd.signal)
        .then(async () => {
          await sleep(fault.afterMs);
          if (this.reported) return;
          this.note('  the radio link drops');
          this.stack.counter.radioRig?.phone.device.dropLinks('soak: link dropped');
        })
        .catch(() => undefined);
      background.push(dropped);
    }

    let report: VerificationReport | undefined;
    let reportAt = performance.now();
    let seqAtReport = this.watch.seq;
    let phoneOutcome: PhoneOutcomeSummary | undefined;
    try {
      // The trigger.
      const triggeredAt = performance.now();
      if (flow.engagement === 'qr') {
        this.presentQr();
      } else {
        let pcscdRestart: Promise<void> | undefined;
        tag = this.wrapTag(plan, phone.tag(), (n) => {
          if (fault.kind === 'card_lifted' && n === fault.afterApdu) {
            if (phone.presentation?.handover === undefined) this.facts.liftedBeforeHandover = true;
            this.note(`  customer lifts the phone after APDU ${n}`);
            setImmediate(() => void this.stack.card.remove());
          }
          if (fault.kind === 'pcscd_restart_run' && n === fault.afterApdu && !pcscdRestart) {
            if (!this.reported) this.facts.pcscdKilledBeforeReport = true;
            this.note(`  pcscd killed after APDU ${n}`);
            pcscdRestart = (async () => {
              await this.stack.pcscd.kill();
              await this.stack.pcscd.restart();
              this.note('  pcscd started again');
              lifted();
            })();
            background.push(pcscdRestart);
          }
        });
        await this.tap(tag);
      }

      // The outcome.
      try {
        ({ report, at: reportAt } = await reportPromise);
      } catch (e) {
        problems.push(errorText(e));
      }
      this.reported = true;
      for (const stop of stopCustomer.splice(0)) stop();
      seqAtReport = this.watch.seq;
      if (report) {
        const detail = report.outcome
          ? `${report.outcome.verdict}${report.outcome.reasons.length > 0 ? ` (${report.outcome.reasons.join(',')})` : ''}`
          : (report.error?.code ?? '');
        this.note(
          `  report ${report.result} ${detail} in ${(reportAt - triggeredAt).toFixed(0)} ms, apdus=${report.apdus} ble=${report.bleMessages}`,
        );
        const key = `${report.result}${report.outcome ? `/${report.outcome.verdict}` : ''}`;
        this.resultTally.set(key, (this.resultTally.get(key) ?? 0) + 1);
      }
      // The customer takes the phone away (before the phone is asked what it did: a lift ends its NFC part).
      if (flow.engagement === 'nfc') await this.stack.card.remove();
      // The phone's own account decides whether a verdict could be right, and which result a drop allows; a
      // run that failed for another reason needs it only for the trail (a phone whose handover never finished
      // waits for a reader that will not come, so it is not waited for).
      const presentation = phone.presentation;
      const needPhone = report?.outcome != null || fault.kind === 'ble_drop' || fault.kind === 'radio_drop' || fault.kind === 'wrong_ident';
      phoneOutcome = presentation
        ? await Promise.race([
            presentation.outcome.then(summarisePhoneOutcome),
            sleep(needPhone ? PHONE_OUTCOME_MS : 200).then(() => undefined),
          ])
        : undefined;
      if (phoneOutcome) this.note(`  phone ${phoneOutcome.kind}${phoneOutcome.reason ? ` ${phoneOutcome.reason}` : ''}`);
    } finally {
      // Whatever happened, the run's customer and faults end here: nothing of it may reach the next run.
      this.reported = true;
      for (const stop of stopCustomer.splice(0)) stop();
      if (flow.engagement === 'nfc') await this.stack.card.remove();
      await Promise.allSettled(background);
      if (this.stack.pcscd.pluggedReaders.length !== this.stack.pcscd.readers.length) await this.stack.pcscd.replug();
      if (!this.stack.embedded.online) {
        await this.stack.embedded.comeBack();
        this.watchSessions();
      }
      this.stack.backend().faults.clear();
    }
    let verdictProblem: string | undefined;
    if (report) {
      const verdict = judge(plan, report, phoneOutcome, this.facts, this.truth);
      if (!verdict.ok) verdictProblem = verdict.problem;
    }
    if (verdictProblem) problems.push(verdictProblem);

    // Back to ready: from the report, or from the moment the fault was lifted if that came later.
    const back =
      liftAt > reportAt
        ? await this.backToReady(liftAt, liftSeq, 'the fault was lifted')
        : await this.backToReady(reportAt, seqAtReport, 'the report');
    if (back.wedged) {
      wedged = true;
      if (back.problem) problems.push(back.problem);
    }
    return {
      ok: problems.length === 0,
      wedged,
      ...(problems.length > 0 ? { problem: problems.join('; ') } : {}),
      ...(report ? { report } : {}),
    };
  }

  // ------------------------------------------------------------ the loop

  /** `runOne`, or a SoakAbort naming the run when it outlives RUN_BOUND_MS. */
  private async bounded(run: Promise<RunResult>, plan: RunPlan): Promise<RunResult> {
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.note(`run #${plan.index} still running after ${RUN_BOUND_MS / 1000} s`);
        reject(
          new SoakAbort(
            `run #${plan.index} (${describePlan(plan)}) did not end within ${RUN_BOUND_MS / 1000} s (a wait with no bound; the trail shows its last step)`,
          ),
        );
      }, RUN_BOUND_MS);
    });
    try {
      return await Promise.race([run, stuck]);
    } finally {
      clearTimeout(timer);
    }
  }

  private done(): boolean {
    const goal = this.options.goal;
    if (goal.kind === 'runs') return this.runs >= goal.runs;
    return this.progress.fraction(this.runs) >= 1;
  }

  /**
   * Lets the backends' idle keep-alive connections go first (the HTTP client pools them for a few seconds,
   * more after a busy moment: counted, they read as sockets and descriptors that come and go with the
   * traffic of the last seconds) and the HCI kiosk be ready again after its run, then waits until the
   * count of sockets stops moving.
   */
  private async settle(): Promise<void> {
    if (this.hci && !(await this.hci.settle(SETTLE_HCI_READY_MS))) this.note('resource sample: the HCI kiosk was not ready');
    this.stack.backend().closeIdleConnections();
    let last = -1;
    let steady = 0;
    for (let waited = 0; waited < SETTLE_BOUND_MS && steady < SETTLE_STEADY_READS; waited += SETTLE_POLL_MS) {
      await sleep(SETTLE_POLL_MS);
      const now = activeSockets();
      steady = now === last ? steady + 1 : 0;
      last = now;
    }
  }

  private async sample(final = false): Promise<void> {
    await this.settle();
    const { noble, bleno } = this.stack.emitters;
    const sample = sampleResources(this.runs, [noble, bleno, ...pcscEmitters(this.stack)], kioskListenerSets(this.stack));
    this.tracker.add(sample);
    const dir = this.options.heapSnapshotDir;
    if (dir !== undefined && (final || (!this.snapshotTaken && this.runs >= this.options.warmupRuns))) {
      this.snapshotTaken = true;
      const file = writeHeapSnapshot(path.join(dir, `soak-${this.options.seed}-run${this.runs}.heapsnapshot`));
      this.note(`heap snapshot ${file}`);
      process.stderr.write(`\nsoak: heap snapshot at run ${this.runs}: ${file}\n`);
    }
  }

  private failRun(plan: RunPlan, problem: string): void {
    this.failed++;
    this.problems.push(`run #${plan.index} (${describePlan(plan)}): ${problem}`);
    if (this.printedTrails >= 3) return;
    this.printedTrails++;
    this.print(`\nFAILED run #${plan.index} (seed ${this.options.seed}): ${describePlan(plan)}`);
    this.print(`  ${problem}`);
    this.print(
      `  reproduce: npm run soak -- --seed ${this.options.seed} --from ${plan.index} --runs 1   (or --from ${Math.max(1, plan.index - 20)} --runs 21 with the runs before it)`,
    );
    this.print(`  trail (last ${this.trail.lines().length} events):`);
    for (const line of this.trail.lines()) this.print(`    ${line}`);
  }

  /** One verification on the HCI lane; a wrong outcome is a failed run like any other. */
  private async runHci(index: number): Promise<void> {
    const lane = this.hci;
    if (!lane) return;
    const plan = planHciRun(this.options.seed, index);
    this.note(`run #${index} + ${describeHciPlan(plan)}`);
    const result = await lane.runOne(plan).catch((e: unknown) => ({ ok: false, problem: `the HCI run failed: ${errorText(e)}` }));
    this.hciRuns++;
    if (result.ok) {
      this.hciOk++;
      return;
    }
    this.failed++;
    this.problems.push(`run #${index} ${describeHciPlan(plan)}: ${result.problem ?? 'failed'}`);
    this.print(`\nFAILED HCI run after #${index} (seed ${this.options.seed}): ${describeHciPlan(plan)}: ${result.problem ?? 'failed'}`);
  }

  async run(): Promise<SoakSummary> {
    const started = performance.now();
    const onRejection = (reason: unknown): void => {
      this.defects.push(`unhandled rejection: ${errorText(reason)}`);
    };
    process.on('unhandledRejection', onRejection);
    let aborted: string | undefined;
    try {
      await this.setup();
      for (let index = this.options.from; !this.done(); index++) {
        const plan = planRun(this.options.seed, index, SOAK_LIMITS, this.options.weights);
        const kind = plan.fault.kind;
        this.tally.set(kind, (this.tally.get(kind) ?? 0) + 1);
        if (kind !== 'none') this.faults++;
        const defectsBefore = this.defects.length;
        const runStarted = performance.now();
        let result: RunResult;
        try {
          result = await this.bounded(this.runOne(plan), plan);
        } catch (e) {
          if (e instanceof SoakAbort) throw e;
          result = { ok: false, wedged: false, problem: `the run failed: ${errorText(e)}` };
        }
        if (this.defects.length > defectsBefore)
          result = {
            ...result,
            ok: false,
            problem: [result.problem, ...this.defects.slice(defectsBefore)].filter((p) => p !== undefined).join('; '),
          };
        if (this.watch.strayReports > 0) {
          result = {
            ...result,
            ok: false,
            problem: [result.problem, `${this.watch.strayReports} report(s) with no run waiting`].filter((p) => p !== undefined).join('; '),
          };
          this.watch.strayReports = 0;
        }
        const took = performance.now() - runStarted;
        const time = this.timing.get(kind) ?? { n: 0, total: 0, max: 0 };
        this.timing.set(kind, { n: time.n + 1, total: time.total + took, max: Math.max(time.max, took) });
        this.runs++;
        if (result.wedged) this.wedged++;
        if (result.ok) this.ok++;
        else this.failRun(plan, result.problem ?? 'failed');
        if (this.hci && index % HCI_EVERY === 0) await this.runHci(index);
        if (this.runs % this.options.sampleEvery === 0) await this.sample();
        this.progress.update({ done: this.runs, ok: this.ok, failed: this.failed, faults: this.faults });
        if (this.failed >= this.options.maxFailures) {
          aborted = `stopped after ${this.failed} failed runs`;
          break;
        }
      }
      await this.sample(true);
    } catch (e) {
      aborted = errorText(e);
      if (this.runs > 0 || e instanceof SoakAbort) {
        this.print(`\nABORTED (seed ${this.options.seed}) after ${this.runs} runs: ${aborted}`);
        this.print(`  trail (last ${this.trail.lines().length} events):`);
        for (const line of this.trail.lines()) this.print(`    ${line}`);
      }
    } finally {
      process.off('unhandledRejection', onRejection);
      this.progress.update({ done: this.runs, ok: this.ok, failed: this.failed, faults: this.faults }, true);
      this.progress.finish();
    }
    const durationS = (performance.now() - started) / 1000;
    if (this.stackStarted) {
      await this.scanFiles();
      this.watch.dispose();
      this.stopSessionWatch?.();
      await this.stack.stop().catch((e: unknown) => this.problems.push(`stopping the stack: ${errorText(e)}`));
      await this.hci?.stop().catch((e: unknown) => this.problems.push(`stopping the HCI lane: ${errorText(e)}`));
    } else if (aborted !== undefined) {
      this.print(`soak: the counter did not come up: ${aborted}`);
    }
    return this.summarise(durationS, aborted);
  }

  /** Everything the stack wrote to disk: the private pcscd's directory (its log, its configuration). */
  private async scanFiles(): Promise<void> {
    const dir = path.dirname(this.stack.pcscd.logFile);
    const files = await readdir(dir).catch(() => [] as string[]);
    for (const name of files) {
      const file = path.join(dir, name);
      const info = await stat(file).catch(() => undefined);
      if (!info?.isFile() || name.endsWith('.so') || name === 'pcscd.comm') continue;
      const text = await readFile(file, 'latin1').catch(() => '');
      // latin1 keeps every byte as one character, so binary content is searched as well.
      this.scanner.scan(name === 'pcscd.log' ? 'pcscd log' : `pcscd dir (${name})`, text);
    }
  }

  private summarise(durationS: number, aborted: string | undefined): SoakSummary {
    const resources = this.tracker.report(this.options.leakBounds);
    const problems = [...resources.problems];
    if (aborted) problems.unshift(`aborted: ${aborted}`);
    if (this.scanner.hits > 0) problems.push(`secrets or personal data found: ${this.scanner.hitSummary.join(', ')}`);
    const sorted = [...this.readyTimes].sort((a, b) => a - b);
    const seed = this.options.seed;
    const rate = this.runs / Math.max(durationS, 0.001);
    this.print('');
    this.print(
      `soak: seed ${seed}, runs ${this.options.from}…${this.options.from + this.runs - 1}, ${durationS.toFixed(1)} s, ${rate.toFixed(2)} verifications/s, node ${process.version}`,
    );
    this.print(
      `faults injected: ${[...this.tally]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}`,
    );
    this.print(
      `seconds per run, mean/max: ${[...this.timing]
        .sort((a, b) => b[1].total - a[1].total)
        .map(([k, t]) => `${k} ${(t.total / t.n / 1000).toFixed(2)}/${(t.max / 1000).toFixed(1)}`)
        .join(', ')}`,
    );
    this.print(
      `HCI lane (BlueZ's emulated controllers, one verification every ${HCI_EVERY} runs): ${this.hciOk} of ${this.hciRuns} as expected`,
    );
    this.print(
      `results: ${[...this.resultTally]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}`,
    );
    this.print(
      `back to ready (ms): median ${percentile(sorted, 50).toFixed(0)}, p95 ${percentile(sorted, 95).toFixed(0)}, max ${this.maxBackToReady.toFixed(0)} (bound ${this.options.readyBoundMs})`,
    );
    const b = resources.baseline;
    const l = resources.last;
    if (b && l) {
      this.print(
        `resources, idle and ready (early baseline at run ${b.runs} → last at run ${l.runs}; slopes from ${resources.samples} samples after run ${this.options.warmupRuns}):`,
      );
      for (const metric of METRICS) {
        const digits = metric === 'rssMb' || metric === 'heapMb' ? 1 : 0;
        const unit = metric === 'rssMb' || metric === 'heapMb' ? ' MB' : '';
        this.print(
          `  ${metric.replace('Mb', '').padEnd(9)} ${b[metric].toFixed(digits)}${unit} → ${l[metric].toFixed(digits)}${unit}  growth ${resources.growth[metric] >= 0 ? '+' : ''}${resources.growth[metric].toFixed(digits)}${unit}` +
            `  after warm-up ${resources.settledGrowth[metric] >= 0 ? '+' : ''}${resources.settledGrowth[metric].toFixed(digits)}  slope ${resources.slopePer1000[metric].toFixed(2)}${unit} per 1,000`,
        );
      }
    }
    if (!gcAvailable()) problems.push('run node with --expose-gc: the heap figures need a full collection before each sample');
    const perSource = [...this.scanner.bytesPerSource].map(([source, bytes]) => `${source} ${bytes}`).join(', ');
    this.print(
      `secrets: ${this.scanner.needleCount} strings (API key, ${this.scanner.secretsKnown} client secrets, holder name, document number, portrait slices in hex/base64/decimal) searched in ${perSource}: ${this.scanner.hits} hits`,
    );
    if (this.failed > 0) this.print(`failed runs (${this.failed}):`);
    for (const problem of this.problems.slice(0, 20)) this.print(`  ${problem}`);
    for (const problem of problems) this.print(`PROBLEM: ${problem}`);
    const exitCode = this.failed > 0 || this.wedged > 0 || problems.length > 0 ? 1 : 0;
    if (exitCode !== 0)
      this.print(
        `FAILED (seed ${seed}): reproduce with npm run soak -- --seed ${seed}${this.options.goal.kind === 'runs' ? ` --runs ${this.options.goal.runs}` : ` --minutes ${this.options.goal.minutes}`}`,
      );
    const g = resources.growth;
    const fmt = (v: number, digits: number): string => (Number.isFinite(v) ? v.toFixed(digits) : 'NaN');
    this.options.stdout.write(`SECRETS hits=${this.scanner.hits} searched_bytes=${this.scanner.searchedBytes}\n`);
    this.options.stdout.write(
      `RESULT runs=${this.runs} outcomes_ok=${this.ok} wedged=${this.wedged} max_back_to_ready_ms=${this.maxBackToReady.toFixed(0)} ` +
        `rss_growth_mb=${fmt(g.rssMb, 1)} heap_growth_mb=${fmt(g.heapMb, 1)} fd_growth=${fmt(g.fds, 0)} listener_growth=${fmt(g.listeners, 0)} ` +
        `timer_growth=${fmt(g.timers, 0)} faults=${this.faults} hci_runs=${this.hciRuns} hci_ok=${this.hciOk} seed=${seed}\n`,
    );
    return {
      runs: this.runs,
      ok: this.ok,
      failed: this.failed,
      wedged: this.wedged,
      faults: this.faults,
      maxBackToReadyMs: this.maxBackToReady,
      resources,
      secretHits: this.scanner.hits,
      searchedBytes: this.scanner.searchedBytes,
      durationS,
      problems,
      exitCode,
    };
  }
}

/**
 * The PC/SC adapter's current context and its readers (the PC/SC binding's emitters), for the listener
 * count. The adapter keeps them private; this is a read-only peek for diagnostics, checked at run time.
 */
function pcscEmitters(stack: SoakStack): EventEmitterLike[] {
  const isEmitter = (value: unknown): value is EventEmitterLike =>
    typeof value === 'object' &&
    value !== null &&
    typeof Reflect.get(value, 'eventNames') === 'function' &&
    typeof Reflect.get(value, 'listenerCount') === 'function';
  const out: EventEmitterLike[] = [];
  const context: unknown = Reflect.get(stack.reader, 'context');
  if (isEmitter(context)) out.push(context);
  const readers: unknown = Reflect.get(stack.reader, 'readers');
  if (readers instanceof Map) {
    for (const entry of readers.values() as Iterable<unknown>) {
      const binding: unknown = typeof entry === 'object' && entry !== null ? Reflect.get(entry, 'binding') : undefined;
      if (isEmitter(binding)) out.push(binding);
    }
  }
  return out;
}

/**
 * The kiosk is no EventEmitter: its listeners live in sets (its views, reports and sessions; its session
 * keeper's status and idle failures; each port's availability notifier). Read-only peeks, checked at run
 * time; a set renamed away is simply not counted.
 */
function kioskListenerSets(stack: SoakStack): number {
  const sizeOf = (owner: unknown, field: string): number => {
    const value: unknown = typeof owner === 'object' && owner !== null ? Reflect.get(owner, field) : undefined;
    return value instanceof Set ? value.size : 0;
  };
  const kiosk = stack.kiosk;
  const keeper: unknown = Reflect.get(kiosk, 'keeper');
  const ports = [stack.reader, stack.devices.ports.bleCentral, stack.devices.ports.blePeripheral];
  return (
    ['viewListeners', 'reportListeners', 'sessionListeners'].reduce((sum, f) => sum + sizeOf(kiosk, f), 0) +
    ['statusListeners', 'idleFailureListeners'].reduce((sum, f) => sum + sizeOf(keeper, f), 0) +
    ports.reduce(
      (sum, port) =>
        sum + (port === undefined ? 0 : ['notifier', 'state'].reduce((n, f) => n + sizeOf(Reflect.get(port, f), 'listeners'), 0)),
      0,
    )
  );
}

/** The kiosk stayed unusable: there is nothing more the soak can learn. */
export class SoakAbort extends Error {
  override readonly name = 'SoakAbort';
}
