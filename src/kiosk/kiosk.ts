/**
 * The Kiosk service: owns the state machine and publishes the `KioskView` (docs/protocol.md §1, "main owns the
 * truth"). Its loop: keep a session pre-warmed → wait for a tap and a QR scan at once (spec §3 rule 2)
 * → run the verification on the pre-warmed session → show the outcome or the error → clear the screen
 * after its timeout (privacy) → ready again. Nothing it waits on is unbounded, and nothing a device
 * adapter or a listener throws can end the loop.
 *
 * A facade over its parts: the session keeper, the taps and scans (triggers.ts), the devices (device-watch.ts),
 * the screen (screen/: the view, which screen comes next, how long it stays, the replaced outcome), what the
 * loop waits for (next-event.ts) and one verification (verify-trigger.ts, current-run.ts).
 */
import type { KioskView, ReplacedOutcome } from '../common/kiosk-view.js';
import type { DevicePorts } from '../devices/ports.js';
import type { KioskConfig } from '../platform/config.js';
import type { Logger } from '../platform/log.js';
import { sleep } from './async-tools.js';
import { CurrentRun } from './current-run.js';
import { DeviceWatch } from './device-watch.js';
import { Listeners } from './listeners.js';
import { nextEvent } from './next-event.js';
import { resolveProfile, type RequestProfile } from './profiles.js';
import type { RelayConnector } from './relay-link.js';
import type { RetryPolicy, RetryReport } from './retry-policy.js';
import { CounterScreen } from './screen/counter-screen.js';
import { ReplacedOutcomeMemory } from './screen/replaced-outcome.js';
import { ScreenTimer } from './screen/screen-timer.js';
import { ViewPublisher } from './screen/view-publisher.js';
import { SessionKeeper, type RetryAttempt } from './session-keeper.js';
import type { SessionService } from './session-service.js';
import { TriggerSource } from './triggers.js';
import { verifyTrigger, type VerificationReport, type VerifyParts } from './verify-trigger.js';

export { stripScannerTerminator } from './triggers.js';
export { errorViewFor } from './run-report.js';
export { MORE_TIME_MS, MORE_TIME_PRESSES } from './screen/screen-timer.js';
export type { VerificationReport } from './verify-trigger.js';

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

/** Pause after an unexpected failure of the loop, so a persistent fault cannot spin. */
const LOOP_FAULT_PAUSE_MS = 1_000;

export class Kiosk {
  private readonly keeper: SessionKeeper;
  private readonly triggers: TriggerSource;
  private readonly devices: DeviceWatch;
  private readonly view: ViewPublisher;
  private readonly timer: ScreenTimer;
  private readonly screen: CounterScreen;
  private readonly replaced: ReplacedOutcomeMemory;
  private readonly run = new CurrentRun();
  private readonly verifyParts: VerifyParts;
  private profile: RequestProfile;
  private state: 'new' | 'running' | 'stopped' = 'new';
  private loop: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private readonly stopController = new AbortController();
  private readonly reportListeners = new Listeners<VerificationReport>();
  private readonly sessionListeners = new Listeners<undefined>();
  private readonly unsubscribers: (() => void)[] = [];
  private readonly now: () => number;

  constructor(private readonly deps: KioskDeps) {
    const { config, log } = deps;
    this.now = deps.now ?? Date.now;
    const now = this.now;
    this.profile = resolveProfile(config, config.profile);
    this.keeper = new SessionKeeper({
      sessions: deps.sessions,
      connector: deps.connector,
      config,
      namespaces: () => this.profile.namespaces,
      log,
      now,
      showBackendErrorText: config.privacy.backendErrorText,
      onSessionCreated: () => this.sessionListeners.notify(undefined),
      ...(deps.retryPolicy === undefined ? {} : { retryPolicy: deps.retryPolicy }),
    });
    this.triggers = new TriggerSource({
      nfc: deps.devices.nfc,
      qr: deps.devices.qr,
      requireMdocPrefix: config.qr.requireMdocPrefix,
      log,
      now,
    });
    this.devices = new DeviceWatch(deps.devices, deps.readinessGate ?? false);
    this.view = new ViewPublisher({ profile: this.profile.name, devices: this.devices, log, now });
    this.timer = new ScreenTimer(config.timeouts, now);
    this.replaced = new ReplacedOutcomeMemory(log, now);
    this.screen = new CounterScreen({
      view: this.view,
      timer: this.timer,
      devices: this.devices,
      keeperStatus: () => this.keeper.status,
      profile: () => this.profile.name,
      session: config.session,
    });
    this.verifyParts = {
      config,
      devices: deps.devices,
      sessions: deps.sessions,
      keeper: this.keeper,
      triggers: this.triggers,
      screen: this.screen,
      deviceRefusal: () => this.devices.refusal(),
      profile: () => this.profile,
      report: (report) => this.emit(report),
      stop: this.stopController.signal,
      log,
      now,
    };
  }

  // ------------------------------------------------------------ public API

  get currentView(): KioskView {
    return this.view.current;
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
    return this.replaced.current;
  }

  /** The request profile in use. */
  get activeProfile(): RequestProfile {
    return this.profile;
  }

  onView(listener: (view: KioskView) => void): () => void {
    return this.view.onView(listener);
  }

  onVerification(listener: (report: VerificationReport) => void): () => void {
    return this.reportListeners.add(listener);
  }

  /** After each session created with `POST /sessions` (diagnostics count them per day). */
  onSessionCreated(listener: () => void): () => void {
    return this.sessionListeners.add(listener);
  }

  start(): void {
    if (this.state === 'running') return;
    if (this.state === 'stopped') throw new Error('a stopped kiosk cannot be started again; create a new one');
    this.state = 'running';
    this.unsubscribers.push(this.keeper.onStatus((status) => this.screen.keeperStatusChanged(status)));
    this.unsubscribers.push(this.keeper.onIdleFailure((failure) => this.screen.idleFailure(failure)));
    this.unsubscribers.push(...this.devices.watch(() => this.screen.devicesChanged()));
    this.keeper.start();
    this.screen.showIdle();
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
    this.run.cancel();
    await this.loop;
    await this.keeper.stop();
    await this.deps.sessions.close?.();
    this.view.stop();
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    this.screen.stopped();
  }

  /**
   * Switches the request profile; the idle session is re-engaged with the new namespaces. While a
   * verification runs or its outcome is on screen, the view keeps the profile that verification asked
   * with (the screen reads an age answer by it); the new one shows when the kiosk is idle again.
   */
  setProfile(name: string): void {
    this.profile = resolveProfile(this.deps.config, name);
    this.keeper.namespacesChanged();
    this.screen.profileChanged(this.profile.name);
  }

  /** "Next customer": clears the outcome or error from the screen now (a replaced one stays for staff until its time). */
  dismiss(): void {
    this.timer.dismiss();
  }

  /** "Retry now" on Offline: an attempt if the retry policy allows one now, and what came of it. */
  retryBackend(timeoutMs: number): Promise<RetryAttempt> {
    return this.keeper.retryAndReport(timeoutMs);
  }

  /** Staff: try the backend again now (after a configuration error or during an offline backoff). */
  retry(): void {
    this.keeper.retryNow();
  }

  /** Staff: abandon the running verification (also while it waits for a session or recovers a result). */
  cancel(): void {
    this.run.cancel();
  }

  /**
   * The customer gives up waiting to tap again ("Cancel" on "Tap your phone again"): the verification is
   * abandoned (socket closed with 1001, the session re-armed) and the kiosk goes back to waiting without an
   * error screen — the customer chose it. Only while the kiosk waits for the re-tap; returns whether it did.
   */
  cancelTapAgain(): boolean {
    if (this.view.current.phase !== 'awaiting_card') return false;
    return this.run.cancelByCustomer();
  }

  /**
   * "More time" on an error screen (WCAG 2.2.1 Timing Adjustable): the error stays `MORE_TIME_MS` longer,
   * at most `MORE_TIME_PRESSES` times per error. Returns the time left on screen (ms), or undefined when no
   * error is on screen or its extensions are spent. Outcomes are not extended: they hold personal data.
   */
  moreTime(): number | undefined {
    if (this.view.current.phase !== 'error') return undefined;
    return this.timer.moreTime();
  }

  // ------------------------------------------------------------ main loop

  private async mainLoop(): Promise<void> {
    const stop = this.stopController.signal;
    while (!this.isStopping()) {
      try {
        await this.step();
      } catch (e) {
        if (this.isStopping()) break;
        // Nothing may end the loop: a fault shows an error and the kiosk carries on.
        this.screen.verificationEnds();
        this.deps.log.error(
          { event: 'kiosk_loop_fault', detail: e instanceof Error ? `${e.name}: ${e.message}` : 'unknown' },
          'unexpected fault; continuing',
        );
        this.screen.showError({ code: 'internal_error', detail: 'unexpected fault in the kiosk', retryable: true }, undefined);
        await sleep(LOOP_FAULT_PAUSE_MS, stop).catch(() => undefined);
      }
    }
  }

  private isStopping(): boolean {
    return this.stopController.signal.aborted;
  }

  private async step(): Promise<void> {
    const next = await nextEvent(this.timer, this.triggers, this.now, this.stopController.signal);
    if (next.kind === 'screen_done') {
      this.screen.afterScreen();
      return;
    }
    if (next.kind === 'screen_changed' || next.kind === 'takes_taps') return;
    this.replaced.remember(this.timer.current, this.view.current, next.trigger);
    this.screen.verificationStarts();
    const { trigger } = next;
    const started = this.now();
    try {
      await this.run.run(this.stopController.signal, (signal) =>
        verifyTrigger(this.verifyParts, { trigger, started, signal, takeCustomerCancel: () => this.run.takeCustomerCancel() }),
      );
    } finally {
      this.screen.verificationEnds();
    }
  }

  private emit(report: VerificationReport): void {
    this.reportListeners.notify(report, (e) => {
      this.deps.log.error({ event: 'report_listener_failed', detail: e instanceof Error ? e.message : 'unknown' }, 'report listener threw');
    });
  }
}
