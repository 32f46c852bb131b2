/**
 * What the counter's screen shows through a customer's visit, and when it changes: the idle view as the
 * backend and the devices change, "hold still" and progress while a verification runs, then the outcome or
 * the error, "remove your phone", and idle again. The view is published by view-publisher.ts, the time on
 * screen kept by screen-timer.ts; this decides which screen comes next.
 */
import type { ErrorView, OutcomeView, PromptKey, Transport } from '../../common/kiosk-view.js';
import type { NfcCard } from '../../devices/ports.js';
import type { KioskConfig } from '../../platform/config.js';
import type { DeviceWatch } from '../device-watch.js';
import type { IdleFailure, KeeperStatus } from '../session-keeper.js';
import type { RunProgress } from '../verification/results.js';
import { backendStateFor, canServe, idleView } from './idle-view.js';
import type { ScreenTimer } from './screen-timer.js';
import type { ViewPublisher } from './view-publisher.js';

export interface CounterScreenParts {
  readonly view: ViewPublisher;
  readonly timer: ScreenTimer;
  readonly devices: DeviceWatch;
  /** The session keeper's status now. */
  readonly keeperStatus: () => KeeperStatus;
  /** The request profile in use, by name. */
  readonly profile: () => string;
  readonly session: KioskConfig['session'];
}

export class CounterScreen {
  /** A verification runs. */
  private busy = false;
  /** The backend answered since the last failure: in standby (no session kept) it still counts as reached. */
  private backendAnswered = false;

  constructor(private readonly parts: CounterScreenParts) {}

  /** No verification runs and no outcome, error or "remove your phone" is on screen. */
  get idle(): boolean {
    return !this.busy && this.parts.timer.current.kind === 'none';
  }

  /** A verification starts: whatever was on screen is over. */
  verificationStarts(): void {
    this.parts.timer.clear();
    this.busy = true;
  }

  verificationEnds(): void {
    this.busy = false;
  }

  showIdle(status: KeeperStatus = this.parts.keeperStatus()): void {
    const { view, devices, profile, session } = this.parts;
    view.update(
      idleView({ status, backendAnswered: this.backendAnswered, profile: profile(), deviceRefusal: () => devices.refusal(), session }),
    );
  }

  /** Nothing on screen any more: the idle view. */
  backToIdle(): void {
    this.parts.timer.clear();
    this.showIdle();
  }

  keeperStatusChanged(status: KeeperStatus): void {
    if (status.state === 'armed') this.backendAnswered = true;
    else if (status.state === 'offline' || status.state === 'config_error') this.backendAnswered = false;
    const { view } = this.parts;
    const backend = backendStateFor(status, this.backendAnswered);
    if (this.idle) this.showIdle(status);
    else if (view.current.backend !== backend) view.update({ backend });
  }

  /** The backend ended the idle session: shown while nothing else is on screen (the keeper re-arms meanwhile). */
  idleFailure(failure: IdleFailure): void {
    if (this.idle) this.showError({ ...failure, retryable: true }, undefined);
  }

  /** A device port announced a change: idle, what the kiosk may invite depends on its devices (readinessGate). */
  devicesChanged(): void {
    if (this.idle) this.showIdle();
    else this.parts.view.update({});
  }

  /** While a verification runs or its outcome is on screen, the view keeps the profile it asked with. */
  profileChanged(name: string): void {
    if (this.idle) this.parts.view.update({ profile: name });
  }

  /** A tap or scan was taken: the customer is told to hold still. */
  engaging(transport: Transport): void {
    this.parts.view.update({
      phase: 'engaging',
      prompt: 'hold_still',
      transport,
      role: null,
      outcome: null,
      error: null,
      progress: { step: 1, apdus: 0, bleMessages: 0 },
    });
  }

  progress(p: RunProgress): void {
    this.parts.view.progress(p);
  }

  showResult(outcome: OutcomeView, card: NfcCard | undefined): void {
    const { view, timer } = this.parts;
    const prompt: PromptKey = outcome.verdict;
    view.update({ phase: 'result', prompt, outcome, error: null, progress: { ...view.current.progress, step: 4 } });
    timer.showResult(card);
  }

  showError(error: ErrorView, card: NfcCard | undefined): void {
    this.parts.view.update({ phase: 'error', prompt: 'try_again', outcome: null, error });
    this.parts.timer.showError(card);
  }

  /** The outcome, error or "remove your phone" on screen is done. */
  afterScreen(): void {
    const { timer, keeperStatus, devices } = this.parts;
    const screen = timer.current;
    // "Lift your phone and tap again" only when a tap again can work: offline or needing staff, the
    // idle screen says why (the phone on the reader is not read again either way).
    if (
      screen.kind === 'timed' &&
      screen.card?.present &&
      (screen.after === 'result' || canServe(keeperStatus(), () => devices.refusal()))
    ) {
      this.askToRemove(screen.card, screen.after);
      return;
    }
    this.backToIdle();
  }

  /** Back to waiting after the customer's own cancel; a phone still on the reader must leave first. */
  afterCustomerCancel(card: NfcCard | undefined): void {
    if (card?.present) {
      this.askToRemove(card, 'error');
      return;
    }
    this.backToIdle();
  }

  stopped(): void {
    this.parts.view.update({
      phase: 'stopped',
      prompt: 'stopped',
      transport: null,
      role: null,
      outcome: null,
      error: null,
      backend: 'stopped',
    });
  }

  /**
   * The phone still lies on the reader, and each presence is read once. After an outcome that is the
   * goodbye; after a failure the customer is told to lift it and tap again (a "thank you" would read as
   * success).
   */
  private askToRemove(card: NfcCard, after: 'result' | 'error'): void {
    this.parts.timer.showRemovePhone(card);
    this.parts.view.update({
      phase: 'remove_phone',
      prompt: after === 'result' ? 'remove_phone' : 'remove_to_retry',
      outcome: null,
      error: null,
    });
  }
}
