/**
 * The Kiosk service: owns the state machine and publishes the `KioskView` (docs/protocol.md §1, "main owns the
 * truth"). Its loop: keep a session pre-warmed → wait for a tap and a QR scan at once (spec §3 rule 2)
 * → run the verification on the pre-warmed session → show the outcome or the error → clear the screen
 * after its timeout (privacy) → ready again. Nothing it waits on is unbounded, and nothing a device
 * adapter or a listener throws can end the loop.
 */
import { needsStaffCode } from '../common/backend-failure-kinds.js';
import type { BackendState, ErrorView, KioskView, OutcomeView, PromptKey, ReplacedOutcome, Transport } from '../common/kiosk-view.js';
import { readinessOf } from '../common/readiness.js';
import type { Availability, DevicePorts, NfcCard } from '../devices/ports.js';
import { AbortedError, deferred, sleep, withTimeout } from './async-tools.js';
import type { KioskConfig } from '../platform/config.js';
import type { Logger } from '../platform/log.js';
import { outcomeFromComplete } from './outcome.js';
import { resolveProfile, type RequestProfile } from './profiles.js';
import type { AskedRequest } from './request-answer.js';
import type { RelayConnector } from './relay-link.js';
import { slowPaceText, type RetryPolicy, type RetryReport } from './retry-policy.js';
import { recoverResult } from './result-recovery.js';
import { errorViewFor, logResult } from './run-report.js';
import { ArmTimeoutError, SessionKeeper, type ArmedSession, type KeeperStatus, type RetryAttempt } from './session-keeper.js';
import type { SessionService } from './session-service.js';
import { TriggerSource } from './triggers.js';
import { runVerification } from './verification/run-verification.js';
import { closeCodeFor, type RunProgress, type RunResult, type Trigger } from './verification/results.js';

export { stripScannerTerminator } from './triggers.js';
export { errorViewFor } from './run-report.js';

export interface KioskDeps {
  readonly config: KioskConfig;
  readonly devices: DevicePorts;
  readonly sessions: SessionService;
  readonly connector: RelayConnector;
  readonly log: Logger;
  readonly now?: () => number;
  /**
   * Invite no customer the kiosk cannot serve: while no Bluetooth role is usable (every verification ends
   * in a BLE transfer) or no way in works, the idle view is `cannot_verify` naming the cause, and a tap or
   * scan is refused at once (`not_ready`). The counter's hosts turn it on. Off (the headless CLI), a
   * verification runs to the BLE step, which reports the failure to the backend (spec §4.5); a backend
   * may still end the session with `complete`.
   */
  readonly readinessGate?: boolean;
  /** A retry policy that outlives this kiosk (its backoff and request budget survive a rebuild). */
  readonly retryPolicy?: RetryPolicy;
}

/** One finished attempt, for the CLI, diagnostics and tests. Holds the disclosed data only in `outcome`. */
export interface VerificationReport {
  readonly transport: Transport;
  readonly sessionId: string | null;
  /** `complete`, `recovered` (result fetched after a dropped socket) or the failure kind. */
  readonly result: RunResult['kind'] | 'recovered' | 'not_ready';
  readonly outcome: OutcomeView | null;
  readonly error: ErrorView | null;
  readonly durationMs: number;
  readonly apdus: number;
  readonly bleMessages: number;
}

type Screen =
  | { readonly kind: 'none' }
  /**
   * An outcome or an error on screen; what follows it depends on which (`after`). Before `takesTapsAt` no
   * tap or scan is taken: one made meanwhile waits (the phone on the reader, the scan queued) until then.
   */
  | {
      readonly kind: 'timed';
      readonly shownAt: number;
      readonly until: number;
      readonly takesTapsAt: number;
      readonly card: NfcCard | undefined;
      readonly after: 'result' | 'error';
      /** How many times "More time" was pressed (an error only). */
      readonly extended?: number;
    }
  | { readonly kind: 'remove_phone'; readonly until: number; readonly card: NfcCard };

type Next = { kind: 'trigger'; trigger: Trigger } | { kind: 'screen_done' } | { kind: 'screen_changed' } | { kind: 'takes_taps' };

const PROGRESS_INTERVAL_MS = 100;
/** Bound on releasing a card handle outside a verification (the port promises it never hangs). */
const RELEASE_MS = 2_000;
/** Pause after an unexpected failure of the loop, so a persistent fault cannot spin. */
const LOOP_FAULT_PAUSE_MS = 1_000;
/** "More time" on an error screen (WCAG 2.2.1): each press adds this much, at most `MORE_TIME_PRESSES` times. */
export const MORE_TIME_MS = 30_000;
export const MORE_TIME_PRESSES = 10;

export class Kiosk {
  private readonly keeper: SessionKeeper;
  private readonly triggers: TriggerSource;
  private profile: RequestProfile;
  private view: KioskView;
  private screen: Screen = { kind: 'none' };
  /** A screen "Next" was pressed on before the loop started waiting for its end. */
  private dismissed: Screen | undefined;
  private busy = false;
  private state: 'new' | 'running' | 'stopped' = 'new';
  private loop: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private readonly stopController = new AbortController();
  private screenKick = new AbortController();
  private screenChanged = deferred<undefined>();
  private currentRun: AbortController | undefined;
  /** The run the customer cancelled ("Cancel" on "Tap your phone again"): it ends without an error screen. */
  private customerCancelled: AbortController | undefined;
  /** The backend answered since the last failure: in standby (no session kept) it still counts as reached. */
  private backendOk = false;
  private readonly viewListeners = new Set<(view: KioskView) => void>();
  private readonly reportListeners = new Set<(report: VerificationReport) => void>();
  private readonly sessionListeners = new Set<() => void>();
  private readonly unsubscribers: (() => void)[] = [];
  private readonly now: () => number;
  private devices: KioskView['devices'];
  /** Counter-only progress (APDUs, BLE messages) is published at most every PROGRESS_INTERVAL_MS. */
  private progressTimer: NodeJS.Timeout | undefined;
  private pendingProgress: KioskView['progress'] | undefined;
  /** The outcome a new customer replaced, kept for staff until it would have cleared. */
  private replaced: ReplacedOutcome | undefined;

  constructor(private readonly deps: KioskDeps) {
    this.now = deps.now ?? Date.now;
    this.profile = resolveProfile(deps.config, deps.config.profile);
    this.keeper = new SessionKeeper({
      sessions: deps.sessions,
      connector: deps.connector,
      config: deps.config,
      namespaces: () => this.profile.namespaces,
      log: deps.log,
      now: this.now,
      showBackendErrorText: deps.config.privacy.backendErrorText,
      onSessionCreated: () => {
        for (const listener of this.sessionListeners) listener();
      },
      ...(deps.retryPolicy === undefined ? {} : { retryPolicy: deps.retryPolicy }),
    });
    this.triggers = new TriggerSource({
      nfc: deps.devices.nfc,
      qr: deps.devices.qr,
      requireMdocPrefix: deps.config.qr.requireMdocPrefix,
      log: deps.log,
      now: this.now,
    });
    this.devices = this.deviceStatus();
    this.view = {
      phase: 'starting',
      prompt: 'starting',
      transport: null,
      role: null,
      progress: { step: 0, apdus: 0, bleMessages: 0 },
      outcome: null,
      error: null,
      profile: this.profile.name,
      devices: this.devices,
      backend: 'connecting',
      at: this.now(),
    };
  }

  // ------------------------------------------------------------ public API

  get currentView(): KioskView {
    return this.view;
  }

  /** How fresh the session in use (or waiting) is; `expiresAt` from the configured lifetime (spec §8). */
  get sessionFreshness(): { state: 'none' | 'armed' | 'busy'; createdAt: number | null; expiresAt: number | null } {
    const { state, createdAt } = this.keeper.freshness;
    return { state, createdAt, expiresAt: createdAt === null ? null : createdAt + this.deps.config.session.lifetimeMs };
  }

  /** The backend's failures: the last one, how many in a row, totals by kind, the request budget. */
  get backendFailures(): RetryReport {
    return this.keeper.failureReport;
  }

  /**
   * The outcome the last new customer replaced before it cleared (staff see it until then; `null` after).
   * Codes and times only: the disclosed values went with the outcome.
   */
  get replacedOutcome(): ReplacedOutcome | null {
    const replaced = this.replaced;
    if (replaced === undefined) return null;
    if (this.now() >= replaced.clearsAt) {
      this.replaced = undefined;
      return null;
    }
    return replaced;
  }

  /** The request profile in use. */
  get activeProfile(): RequestProfile {
    return this.profile;
  }

  onView(listener: (view: KioskView) => void): () => void {
    this.viewListeners.add(listener);
    return () => this.viewListeners.delete(listener);
  }

  onVerification(listener: (report: VerificationReport) => void): () => void {
    this.reportListeners.add(listener);
    return () => this.reportListeners.delete(listener);
  }

  /** After each session created with `POST /sessions` (diagnostics count them per day). */
  onSessionCreated(listener: () => void): () => void {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  start(): void {
    if (this.state === 'running') return;
    if (this.state === 'stopped') throw new Error('a stopped kiosk cannot be started again; create a new one');
    this.state = 'running';
    this.unsubscribers.push(this.keeper.onStatus((status) => this.onKeeperStatus(status)));
    this.unsubscribers.push(
      this.keeper.onIdleFailure((failure) => {
        // Shown while nothing else is on screen; the keeper is re-arming meanwhile.
        if (!this.busy && this.screen.kind === 'none') this.showError({ ...failure, retryable: true }, undefined);
      }),
    );
    for (const port of [this.deps.devices.nfc, this.deps.devices.qr, this.deps.devices.bleCentral, this.deps.devices.blePeripheral]) {
      const unsubscribe = port?.onAvailabilityChange?.(() => {
        this.devices = this.deviceStatus();
        // Idle, what the kiosk may invite depends on its devices (readinessGate).
        if (this.isIdle()) this.showIdle();
        else this.update({});
      });
      if (unsubscribe) this.unsubscribers.push(unsubscribe);
    }
    this.keeper.start();
    this.showIdle();
    this.loop = this.mainLoop();
  }

  /** Stops waiting, cancels a running verification (socket closed with 1001) and closes the idle session. */
  stop(): Promise<void> {
    if (this.state === 'new') this.state = 'stopped';
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    this.state = 'stopped';
    this.stopController.abort();
    this.currentRun?.abort();
    await this.loop;
    await this.keeper.stop();
    await this.deps.sessions.close?.();
    clearTimeout(this.progressTimer);
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    this.update({ phase: 'stopped', prompt: 'stopped', transport: null, role: null, outcome: null, error: null, backend: 'stopped' });
  }

  /**
   * Switches the request profile; the idle session is re-engaged with the new namespaces. While a
   * verification runs or its outcome is on screen, the view keeps the profile that verification asked
   * with (the screen reads an age answer by it); the new one shows when the kiosk is idle again.
   */
  setProfile(name: string): void {
    this.profile = resolveProfile(this.deps.config, name);
    this.keeper.namespacesChanged();
    if (!this.busy && this.screen.kind === 'none') this.update({ profile: this.profile.name });
  }

  /** "Next customer": clears the outcome or error from the screen now (a replaced one stays for staff until its time). */
  dismiss(): void {
    // Remembered for the screen on show: the loop may not be waiting on it yet (closing the socket).
    if (this.screen.kind !== 'none') this.dismissed = this.screen;
    this.screenKick.abort();
  }

  /** Staff: try the backend again now (after a configuration error or during an offline backoff). */
  /** "Retry now" on Offline: an attempt if the retry policy allows one now, and what came of it. */
  retryBackend(timeoutMs: number): Promise<RetryAttempt> {
    return this.keeper.retryAndReport(timeoutMs);
  }

  retry(): void {
    this.keeper.retryNow();
  }

  /** Staff: abandon the running verification (also while it waits for a session or recovers a result). */
  cancel(): void {
    this.currentRun?.abort();
  }

  /**
   * The customer gives up waiting to tap again ("Cancel" on "Tap your phone again"): the verification is
   * abandoned (socket closed with 1001, the session re-armed) and the kiosk goes back to waiting without an
   * error screen — the customer chose it. Only while the kiosk waits for the re-tap; returns whether it did.
   */
  cancelTapAgain(): boolean {
    const run = this.currentRun;
    if (!run || this.view.phase !== 'awaiting_card') return false;
    this.customerCancelled = run;
    run.abort();
    return true;
  }

  /**
   * "More time" on an error screen (WCAG 2.2.1 Timing Adjustable): the error stays `MORE_TIME_MS` longer,
   * at most `MORE_TIME_PRESSES` times per error. Returns the time left on screen (ms), or undefined when no
   * error is on screen or its extensions are spent. Outcomes are not extended: they hold personal data.
   */
  moreTime(): number | undefined {
    const screen = this.screen;
    if (screen.kind !== 'timed' || screen.after !== 'error' || this.view.phase !== 'error') return undefined;
    const extended = (screen.extended ?? 0) + 1;
    if (extended > MORE_TIME_PRESSES) return undefined;
    const now = this.now();
    const until = Math.max(screen.until, now) + MORE_TIME_MS;
    this.setScreen({ ...screen, until, extended });
    return until - now;
  }

  // ------------------------------------------------------------ view

  private deviceStatus(): KioskView['devices'] {
    const status = (port: { availability(): Availability } | undefined): { usable: boolean; reason?: string } => {
      if (!port) return { usable: false, reason: 'not_configured' };
      try {
        const a = port.availability();
        return a.reason === undefined ? { usable: a.usable } : { usable: a.usable, reason: a.reason };
      } catch {
        return { usable: false, reason: 'adapter_error' };
      }
    };
    const { nfc, qr, bleCentral, blePeripheral } = this.deps.devices;
    return { nfc: status(nfc), qr: status(qr), bleCentral: status(bleCentral), blePeripheral: status(blePeripheral) };
  }

  private update(patch: Partial<KioskView>): void {
    const pending = this.pendingProgress;
    this.pendingProgress = undefined;
    clearTimeout(this.progressTimer);
    if (pending && !patch.progress) patch = { ...patch, progress: pending };
    // Device availability is re-read on every change of phase and on the ports' own change events.
    if (patch.phase !== undefined && patch.phase !== this.view.phase) this.devices = this.deviceStatus();
    this.view = { ...this.view, ...patch, devices: this.devices, at: this.now() };
    for (const listener of this.viewListeners) {
      try {
        listener(this.view);
      } catch (e) {
        this.deps.log.error({ event: 'view_listener_failed', detail: e instanceof Error ? e.message : 'unknown' }, 'view listener threw');
      }
    }
  }

  /** Counters change per APDU and per BLE message; the screen needs them a few times a second at most. */
  private publishProgressSoon(progress: KioskView['progress']): void {
    const scheduled = this.pendingProgress !== undefined;
    this.pendingProgress = progress;
    if (scheduled) return;
    this.progressTimer = setTimeout(() => {
      const latest = this.pendingProgress;
      if (latest) this.update({ progress: latest });
    }, PROGRESS_INTERVAL_MS);
  }

  private onProgress(p: RunProgress): void {
    const progress = { step: p.step, apdus: p.apdus, bleMessages: p.bleMessages };
    const v = this.view;
    if (v.phase === p.phase && v.prompt === p.prompt && v.role === p.role && v.progress.step === p.step) {
      this.publishProgressSoon(progress);
    } else {
      this.update({ phase: p.phase, prompt: p.prompt, transport: p.transport, role: p.role, progress });
    }
  }

  private onKeeperStatus(status: KeeperStatus): void {
    if (status.state === 'armed') this.backendOk = true;
    else if (status.state === 'offline' || status.state === 'config_error') this.backendOk = false;
    if (this.isIdle()) this.showIdle(status);
    else if (this.view.backend !== this.backendFor(status)) this.update({ backend: this.backendFor(status) });
  }

  /** No verification runs and no outcome, error or "remove your phone" is on screen. */
  private isIdle(): boolean {
    return !this.busy && this.screen.kind === 'none';
  }

  /** What the status bar may say of the backend: connected only after a successful exchange. */
  private backendFor(status: KeeperStatus): BackendState {
    switch (status.state) {
      case 'armed':
        return 'connected';
      case 'standby':
        return this.backendOk ? 'connected' : 'on_demand';
      case 'arming':
        return 'connecting';
      case 'offline':
        return status.code === 'backend_not_answering' ? 'not_answering' : 'offline';
      case 'config_error':
        return 'needs_staff';
      case 'stopped':
        return 'stopped';
    }
  }

  /** Why a customer cannot be served by these devices now (readinessGate), as the error the screen shows. */
  private deviceRefusal(): ErrorView | undefined {
    if (!this.deps.readinessGate) return undefined;
    // Read afresh: a port need not announce every change of its availability.
    this.devices = this.deviceStatus();
    const readiness = readinessOf(this.devices);
    if (readiness.blocker) return { code: readiness.blocker, detail: readiness.detail, retryable: false };
    if (!readiness.canVerify) return { code: 'starting', detail: readiness.detail, retryable: true };
    return undefined;
  }

  private showIdle(status: KeeperStatus = this.keeper.status): void {
    const base = { transport: null, role: null, outcome: null, progress: { step: 0, apdus: 0, bleMessages: 0 }, profile: this.profile.name, backend: this.backendFor(status) };
    if (status.state === 'offline' || status.state === 'arming') {
      // A cause only staff can fix (no Bluetooth) wins over one that passes by itself: "offline" or
      // "connecting" would have staff wait for nothing.
      const refusal = this.deviceRefusal();
      if (refusal !== undefined && refusal.code !== 'starting') {
        this.update({ ...base, phase: 'cannot_verify', prompt: 'cannot_verify', error: refusal });
        return;
      }
    }
    switch (status.state) {
      case 'armed':
      case 'standby': {
        // Ready only when a verification can run to the end: never a prompt the kiosk cannot honour.
        const refusal = this.deviceRefusal();
        if (refusal === undefined) this.update({ ...base, phase: 'ready', prompt: 'tap_or_scan', error: null });
        else if (refusal.code === 'starting') this.update({ ...base, phase: 'connecting', prompt: 'connecting', error: null });
        else this.update({ ...base, phase: 'cannot_verify', prompt: 'cannot_verify', error: refusal });
        break;
      }
      case 'arming':
        this.update({ ...base, phase: 'connecting', prompt: 'connecting', error: null });
        break;
      case 'offline':
        this.update({ ...base, phase: 'offline', prompt: 'offline', error: { code: status.code ?? 'backend_unavailable', detail: status.detail, retryable: true } });
        break;
      case 'config_error':
        this.update({ ...base, phase: 'config_error', prompt: 'config_error', error: this.configError(status) });
        break;
      case 'stopped':
        this.update({ ...base, phase: 'stopped', prompt: 'stopped', error: null });
        break;
    }
  }

  private showResult(outcome: OutcomeView, card: NfcCard | undefined): void {
    const prompt: PromptKey = outcome.verdict;
    this.update({ phase: 'result', prompt, outcome, error: null, progress: { ...this.view.progress, step: 4 } });
    const { resultDisplayMs, outcomeMinimumMs } = this.deps.config.timeouts;
    const shownAt = this.now();
    // Staff get at least the minimum to read it: the next customer's tap waits that long (issue 28).
    this.setScreen({ kind: 'timed', shownAt, until: shownAt + resultDisplayMs, takesTapsAt: shownAt + Math.min(outcomeMinimumMs, resultDisplayMs), card, after: 'result' });
  }

  private showError(error: ErrorView, card: NfcCard | undefined): void {
    this.update({ phase: 'error', prompt: 'try_again', outcome: null, error });
    const shownAt = this.now();
    // A failure has nothing to protect: tapping again is the way to retry.
    this.setScreen({ kind: 'timed', shownAt, until: shownAt + this.deps.config.timeouts.errorDisplayMs, takesTapsAt: shownAt, card, after: 'error' });
  }

  private setScreen(screen: Screen): void {
    this.screen = screen;
    // The main loop may be waiting with no screen to time out: let it look again.
    this.screenChanged.resolve(undefined);
  }

  // ------------------------------------------------------------ main loop

  private isStopping(): boolean {
    return this.stopController.signal.aborted;
  }

  private async mainLoop(): Promise<void> {
    while (!this.isStopping()) {
      try {
        await this.step();
      } catch (e) {
        if (this.isStopping()) break;
        // Nothing may end the loop: a fault shows an error and the kiosk carries on.
        this.busy = false;
        this.deps.log.error({ event: 'kiosk_loop_fault', detail: e instanceof Error ? `${e.name}: ${e.message}` : 'unknown' }, 'unexpected fault; continuing');
        this.showError({ code: 'internal_error', detail: 'unexpected fault in the kiosk', retryable: true }, undefined);
        await sleep(LOOP_FAULT_PAUSE_MS, this.stopController.signal).catch(() => undefined);
      }
    }
  }

  private async step(): Promise<void> {
    const next = await this.waitForNext(this.stopController.signal);
    if (next.kind === 'screen_done') {
      this.afterScreen();
      return;
    }
    if (next.kind === 'screen_changed' || next.kind === 'takes_taps') return;
    this.keepReplaced(next.trigger);
    this.screen = { kind: 'none' };
    this.busy = true;
    try {
      await this.verify(next.trigger);
    } finally {
      this.busy = false;
    }
  }

  /** An outcome replaced by a new customer before it cleared: staff see it until then (never silent). */
  private keepReplaced(trigger: Trigger): void {
    const screen = this.screen;
    const outcome = this.view.outcome;
    if (screen.kind !== 'timed' || screen.after !== 'result' || outcome === null) return;
    const { answer } = outcome;
    this.replaced = {
      verdict: outcome.verdict,
      answer: { kind: answer.kind, result: answer.result, threshold: answer.kind === 'age' ? answer.threshold : null },
      transport: this.view.transport,
      shownAt: screen.shownAt,
      replacedAt: this.now(),
      replacedBy: trigger.kind,
      clearsAt: screen.until,
    };
    this.deps.log.info({ event: 'outcome_replaced', verdict: outcome.verdict, answer: answer.result, by: trigger.kind, shownForMs: this.now() - screen.shownAt }, 'a new customer replaced the outcome on screen');
  }

  /**
   * The next tap or scan, or the end of what is on screen, whichever comes first. While an outcome is
   * younger than its minimum no tap or scan is taken (one made meanwhile is taken when the minimum ends).
   */
  private async waitForNext(stop: AbortSignal): Promise<Next> {
    const local = new AbortController();
    const onStop = (): void => local.abort();
    stop.addEventListener('abort', onStop, { once: true });
    this.screenChanged = deferred<undefined>();
    const screen = this.screen;
    const holdFor = screen.kind === 'timed' ? screen.takesTapsAt - this.now() : 0;
    const trigger = holdFor > 0 ? undefined : this.triggers.next(local.signal);
    const contenders: Promise<Next>[] = [this.screenChanged.promise.then(() => ({ kind: 'screen_changed' }) as const)];
    if (trigger) contenders.push(trigger.then((t) => ({ kind: 'trigger', trigger: t }) as const));
    else contenders.push(sleep(holdFor, local.signal).then(() => ({ kind: 'takes_taps' }) as const));
    if (screen.kind !== 'none') contenders.push(this.screenEnds(screen, local.signal).then(() => ({ kind: 'screen_done' }) as const));
    try {
      const next = await Promise.race(contenders);
      // A tap or scan that completes just as the screen changes is kept for the next round, not lost.
      if (trigger && next.kind !== 'trigger') trigger.then((t) => this.triggers.stash(t), () => undefined);
      return next;
    } finally {
      local.abort();
      stop.removeEventListener('abort', onStop);
    }
  }

  private async screenEnds(screen: Exclude<Screen, { kind: 'none' }>, signal: AbortSignal): Promise<void> {
    if (this.dismissed === screen) {
      this.dismissed = undefined;
      return;
    }
    this.screenKick = new AbortController();
    const kick = this.screenKick.signal;
    const both = AbortSignal.any([signal, kick]);
    const wait = Math.max(0, screen.until - this.now());
    try {
      if (screen.kind === 'remove_phone') {
        // The phone left, the time is up, or the reader cannot tell any more: the screen is done.
        const removed = screen.card.waitForRemoval(both).catch(() => {
          if (both.aborted) throw new AbortedError('screen wait abandoned');
        });
        await Promise.race([removed, sleep(wait, both)]);
      } else {
        await sleep(wait, both);
      }
    } catch (e) {
      if (!kick.aborted) throw e; // stopped, or a trigger won: not the end of the screen
    }
  }

  private afterScreen(): void {
    const screen = this.screen;
    // "Lift your phone and tap again" only when a tap again can work: offline or needing staff, the
    // idle screen says why (the phone on the reader is not read again either way).
    if (screen.kind === 'timed' && screen.card?.present && (screen.after === 'result' || this.canServe())) {
      this.askToRemove(screen.card, screen.after);
      return;
    }
    this.screen = { kind: 'none' };
    this.showIdle();
  }

  /**
   * The phone still lies on the reader, and each presence is read once. After an outcome that is the
   * goodbye; after a failure the customer is told to lift it and tap again (a "thank you" would read as
   * success).
   */
  private askToRemove(card: NfcCard, after: 'result' | 'error'): void {
    this.screen = { kind: 'remove_phone', until: this.now() + this.deps.config.timeouts.removePhoneMs, card };
    this.update({ phase: 'remove_phone', prompt: after === 'result' ? 'remove_phone' : 'remove_to_retry', outcome: null, error: null });
  }

  // ------------------------------------------------------------ one verification

  private async verify(trigger: Trigger): Promise<void> {
    const started = this.now();
    const transport = trigger.kind;
    const run = new AbortController();
    this.currentRun = run;
    const onStop = (): void => run.abort();
    this.stopController.signal.addEventListener('abort', onStop, { once: true });
    try {
      await this.verifyOn(trigger, started, transport, run.signal);
    } finally {
      this.currentRun = undefined;
      this.stopController.signal.removeEventListener('abort', onStop);
    }
  }

  /**
   * Why this tap or scan cannot start a verification at all, decided before the customer is told to hold
   * still: the devices cannot finish one (readinessGate), the backend is known to be unreachable (the
   * offline message at once, not a wait of `armWaitMs` on "hold still"), or it refused the credentials.
   */
  private refusal(): ErrorView | undefined {
    const devices = this.deviceRefusal();
    if (devices) return devices;
    const status = this.keeper.status;
    if (status.state === 'offline') {
      // A customer is waiting: try the backend now rather than at the end of the backoff.
      this.keeper.retryNow();
      // The report names what the Offline screen shows (a silent backend is `backend_not_answering`).
      return { code: status.code ?? 'backend_unavailable', detail: `the backend is unreachable: ${status.detail}`.slice(0, 500), retryable: true };
    }
    if (status.state === 'config_error') return this.configError(status);
    return undefined;
  }

  /** A tap now could start a verification: the devices can finish one and the backend is not known down. */
  private canServe(): boolean {
    const { state } = this.keeper.status;
    return state !== 'offline' && state !== 'config_error' && state !== 'stopped' && this.deviceRefusal() === undefined;
  }

  /**
   * What staff are told of a keeper that needs them. A configuration failure the keeper still probes (a
   * gateway refusing the session socket, a session API not at the address, a proxy refusing the tunnel) has
   * a code of its own and says how often it is checked: the kiosk turns ready by itself once it is fixed.
   * Refused credentials stay `config_error`: nothing is tried again until staff act.
   */
  private configError(status: Extract<KeeperStatus, { state: 'config_error' }>): ErrorView {
    const code = status.retrying ? needsStaffCode(status.kind) : undefined;
    if (code === undefined) return { code: 'config_error', detail: status.detail, retryable: false };
    const { offlineBackoffMaxMs, maxRequestsPerMinute } = this.deps.config.session;
    return { code, detail: `${status.detail} (checked again ${slowPaceText(offlineBackoffMaxMs, maxRequestsPerMinute)})`, retryable: false };
  }

  /**
   * Ends a tap or scan that got no session: the card is let go, the code cooled down. When the kiosk cannot
   * serve anyone now (offline, needs staff) the idle screen that says so is shown, not an error whose "Try
   * again" cannot work; otherwise (no session in time, cancelled) the error.
   */
  private async notReady(trigger: Trigger, started: number, error: ErrorView, shown: 'idle' | 'error'): Promise<void> {
    const { timeouts } = this.deps.config;
    if (trigger.kind === 'nfc') await this.releaseCard(trigger.card);
    this.triggers.ignoreInputDuringRun();
    if (trigger.kind === 'qr') this.triggers.qrFailed(trigger.text, timeouts.errorDisplayMs);
    if (this.isStopping()) return;
    this.deps.log.warn({ event: 'verification_not_ready', code: error.code }, 'no session ready for the tap');
    if (shown === 'idle') {
      this.screen = { kind: 'none' };
      this.showIdle();
    } else {
      this.showError(error, trigger.kind === 'nfc' ? trigger.card : undefined);
    }
    this.emit({ transport: trigger.kind, sessionId: null, result: 'not_ready', outcome: null, error, durationMs: this.now() - started, apdus: 0, bleMessages: 0 });
  }

  private async verifyOn(trigger: Trigger, started: number, transport: Transport, signal: AbortSignal): Promise<void> {
    const refused = this.refusal();
    if (refused) {
      this.deps.log.info({ event: 'verification_start', transport }, 'tap or scan received');
      await this.notReady(trigger, started, refused, 'idle');
      return;
    }
    this.update({ phase: 'engaging', prompt: 'hold_still', transport, role: null, outcome: null, error: null, progress: { step: 1, apdus: 0, bleMessages: 0 } });
    this.deps.log.info({ event: 'verification_start', transport }, 'tap or scan received');
    const { timeouts } = this.deps.config;

    let armed: ArmedSession;
    try {
      armed = await this.keeper.acquire(timeouts.armWaitMs, signal);
    } catch (e) {
      const status = this.keeper.status;
      const error: ErrorView = signal.aborted
        ? { code: 'cancelled', detail: 'verification cancelled', retryable: true }
        : status.state === 'config_error'
          ? this.configError(status)
          : {
              // Offline by now: the code the Offline screen shows (a silent backend is `backend_not_answering`).
              code: status.state === 'offline' ? (status.code ?? 'backend_unavailable') : 'backend_unavailable',
              detail: e instanceof ArmTimeoutError ? e.message : 'no session available',
              retryable: true,
            };
      await this.notReady(trigger, started, error, !signal.aborted && status.state !== 'armed' && status.state !== 'arming' && status.state !== 'standby' ? 'idle' : 'error');
      return;
    }
    // What this session asked (the keeper hands out only sessions engaged with the current profile).
    const asked = this.askedBy(armed);

    const log = this.deps.log.child({ sessionId: armed.session.id });
    let counters = { apdus: 0, bleMessages: 0 };
    const report = await runVerification(
      {
        channel: armed.channel,
        devices: this.deps.devices,
        timeouts,
        log,
        signal,
        onProgress: (p) => {
          counters = { apdus: p.apdus, bleMessages: p.bleMessages };
          this.onProgress(p);
        },
      },
      trigger,
    );
    this.triggers.ignoreInputDuringRun();
    counters = { apdus: report.apdus, bleMessages: report.bleMessages };
    const result = report.result;
    // The closing handshake runs while the outcome goes on screen; the session is given back after it.
    const { code, reason } = closeCodeFor(result);
    const closing = result.kind === 'dropped' ? Promise.resolve() : armed.channel.close(code, reason);
    const showText = this.deps.config.privacy.backendErrorText;
    logResult(log, result, showText);

    let outcome: OutcomeView | undefined;
    let kind: VerificationReport['result'] = result.kind;
    if (result.kind === 'complete') {
      outcome = outcomeFromComplete(result.outcome, asked);
    } else if (result.kind === 'dropped' && !signal.aborted) {
      outcome = await recoverResult(this.deps.sessions, armed.session.id, {
        transferFinished: result.transferFinished,
        pollForMs: timeouts.recoverResultMs,
        signal,
        log,
        now: this.now,
        asked,
        admit: (s) => this.keeper.admitRequest(s),
      });
      if (outcome) kind = 'recovered';
    }
    if (trigger.kind === 'qr') {
      if (outcome) this.triggers.qrUsed(trigger.text);
      else this.triggers.qrFailed(trigger.text, timeouts.errorDisplayMs);
    }
    const base = { transport, sessionId: armed.session.id, durationMs: this.now() - started, ...counters };
    if (outcome) {
      // The answer and which elements are missing are codes (never a disclosed value).
      const missing = outcome.answer.missing.filter((m) => m.required).map((m) => m.identifier);
      log.info({ event: 'verification_outcome', verdict: outcome.verdict, answer: outcome.answer.result, missing, reasons: outcome.reasons, source: outcome.source }, 'verification finished');
      this.showResult(outcome, report.card);
      this.emit({ ...base, result: kind, outcome, error: null });
    } else if (result.kind !== 'complete') {
      const error = errorViewFor(result, showText);
      if (result.kind === 'cancelled' && this.customerCancelled === this.currentRun) this.afterCustomerCancel(report.card);
      else if (result.kind !== 'cancelled' || !this.isStopping()) this.showError(error, report.card);
      this.emit({ ...base, result: kind, outcome: null, error });
    }
    await closing;
    // A transfer that ended (end byte sent) but could not be recovered is not retried on this session; a
    // backend that stopped answering is an absence the keeper waits out (offline, backoff) before re-arming.
    this.keeper.release(
      armed,
      outcome !== undefined ? 'completed' : result.kind === 'dropped' && result.transferFinished ? 'spent' : result.kind === 'not_answering' ? 'unanswered' : 'retry',
    );
  }

  /** What `armed` asked for, with the profile's required elements when the profile asked the same. */
  private askedBy(armed: ArmedSession): AskedRequest {
    const profile = this.profile;
    const same = JSON.stringify(profile.namespaces) === JSON.stringify(armed.namespaces);
    return same && profile.required !== undefined ? { namespaces: armed.namespaces, required: profile.required } : { namespaces: armed.namespaces };
  }

  /** Back to waiting after the customer's own cancel; a phone still on the reader must leave first. */
  private afterCustomerCancel(card: NfcCard | undefined): void {
    this.customerCancelled = undefined;
    if (card?.present) {
      this.askToRemove(card, 'error');
      return;
    }
    this.screen = { kind: 'none' };
    this.showIdle();
  }

  private async releaseCard(card: NfcCard): Promise<void> {
    await withTimeout(
      Promise.resolve().then(() => card.release()),
      RELEASE_MS,
      new AbortController().signal,
      'card release',
    ).catch(() => {
      this.deps.log.warn({ event: 'card_release_failed' }, 'the NFC card handle could not be released in time');
    });
  }

  private emit(report: VerificationReport): void {
    for (const listener of this.reportListeners) {
      try {
        listener(report);
      } catch (e) {
        this.deps.log.error({ event: 'report_listener_failed', detail: e instanceof Error ? e.message : 'unknown' }, 'report listener threw');
      }
    }
  }
}
