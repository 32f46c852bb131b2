/**
 * The `ScreenState` stream: what every screen shows, owned here on the main side (the screen renders it
 * and sends intents back). It is the Kiosk's view (or the service's own while no Kiosk runs) with the
 * customer's language and its reset, the camera, the result's countdown, the session's freshness and the
 * staff session. It also ends a customer's visit on screen: back to the default language.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Language, ScreenState, SessionFreshness } from '../common/kiosk-api.js';
import type { KioskView, ReplacedOutcome } from '../common/kiosk-view.js';
import type { Availability, AvailabilitySource, DevicePorts } from '../devices/ports.js';
import type { KioskConfig } from '../platform/config.js';
import type { Logger } from '../platform/log.js';
import { availableProfiles } from '../kiosk/profiles.js';
import { originOf } from './api-key-binding.js';
import type { CameraStatus } from './camera-status.js';
import { SERVICE_SCREEN } from './service-options.js';
import type { StaffGate } from './staff-pin.js';

/** Phases in which a verification runs: nothing is rebuilt under it. */
export const BUSY_PHASES: ReadonlySet<KioskView['phase']> = new Set(['engaging', 'awaiting_card', 'ble_connecting', 'transferring']);
/** Phases that end a customer's visit on screen. */
export const VISIT_END_PHASES: ReadonlySet<KioskView['phase']> = new Set(['result', 'error', 'remove_phone']);
/** Phases in which a scan is taken (the core waits `armWaitMs` for a session while connecting or offline). */
export const WAITING_PHASES: ReadonlySet<KioskView['phase']> = new Set(['ready', 'connecting', 'offline']);
/** Phases with no customer at the counter. */
export const IDLE_PHASES: ReadonlySet<KioskView['phase']> = new Set(['ready', 'connecting', 'offline', 'config_error', 'cannot_verify']);

export const EMPTY_DEVICES: DevicePorts = {};

export function deviceStatus(ports: DevicePorts): KioskView['devices'] {
  const status = (port: AvailabilitySource | undefined): { usable: boolean; reason?: string } => {
    if (!port) return { usable: false, reason: 'not_configured' };
    try {
      const a: Availability = port.availability();
      return a.reason === undefined ? { usable: a.usable } : { usable: a.usable, reason: a.reason };
    } catch {
      return { usable: false, reason: 'adapter_error' };
    }
  };
  return { nfc: status(ports.nfc), qr: status(ports.qr), bleCentral: status(ports.bleCentral), blePeripheral: status(ports.blePeripheral) };
}

/** A view of the service's own, for the times no Kiosk runs (starting, rebuilding, configuration error). */
export function serviceView(
  phase: 'starting' | 'config_error' | 'stopped',
  profile: string,
  devices: KioskView['devices'],
  at: number,
  detail?: string,
): KioskView {
  return {
    phase,
    prompt: phase,
    transport: null,
    role: null,
    progress: { step: 0, apdus: 0, bleMessages: 0 },
    outcome: null,
    error: phase === 'config_error' ? { code: 'config_error', detail: detail ?? 'the kiosk is not configured', retryable: false } : null,
    profile,
    devices,
    backend: phase === 'config_error' ? 'needs_staff' : phase === 'stopped' ? 'stopped' : 'connecting',
    at,
  };
}

export interface ScreenStateOptions {
  /** The effective configuration (language, camera, backend origin, profiles). */
  readonly config: () => KioskConfig;
  /** The timeouts of the kiosk that runs (saved settings reach it with the next rebuild). */
  readonly kioskTimeouts: () => KioskConfig['timeouts'];
  /** The running Kiosk's session freshness; undefined while none runs. */
  readonly sessionFreshness: () => SessionFreshness | undefined;
  /** The outcome a new customer replaced, while the running Kiosk keeps it (until it would have cleared). */
  readonly replacedOutcome: () => ReplacedOutcome | null;
  readonly staff: Pick<StaffGate, 'state' | 'anyUnlocked'>;
  readonly camera: CameraStatus;
  readonly testMode: boolean;
  readonly languageResetMs: number;
  /** The view left the busy phases: whoever waits for that may go on. */
  readonly onNotBusy: () => void;
  readonly now: () => number;
  readonly log: () => Logger;
}

export class ScreenStateStream {
  private shown: KioskView;
  private language: Language = 'en';
  /** "Try again" on an error: the same customer goes on, so the visit's end keeps their language once. */
  private keepLanguageOnce = false;
  /** The visit's end screens included an outcome: leaving them ends the visit (language). */
  private outcomeShown = false;
  /** The staff session as last published: opening or closing it ends the customer's visit (language). */
  private staffWasUnlocked = false;
  private clearsAt: number | null = null;
  private freshness: SessionFreshness = { state: 'none', createdAt: null, expiresAt: null };
  private readonly listeners = new Set<(state: ScreenState) => void>();
  private current: ScreenState;
  private languageTimer: NodeJS.Timeout | undefined;
  private sessionTimer: NodeJS.Timeout | undefined;
  /** Publishes again when the replaced outcome's record ends, so the staff view drops it on time. */
  private replacedTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: ScreenStateOptions,
    view: KioskView,
  ) {
    this.shown = view;
    // No Kiosk runs yet while the service is being built: nothing can have been replaced.
    this.current = this.build(false);
  }

  get view(): KioskView {
    return this.shown;
  }

  get state(): ScreenState {
    return this.current;
  }

  onState(listener: (state: ScreenState) => void): () => void {
    this.listeners.add(listener);
    this.safeCall(listener, this.current);
    return () => this.listeners.delete(listener);
  }

  /** Calls a listener; one that throws is logged and does not stop the others. */
  safeCall<T>(listener: (value: T) => void, value: T): void {
    try {
      listener(value);
    } catch (e) {
      this.options.log().error({ event: 'listener_failed' }, `a listener threw: ${e instanceof Error ? e.name : 'unknown'}`);
    }
  }

  publish(): void {
    this.current = this.build();
    for (const listener of this.listeners) this.safeCall(listener, this.current);
  }

  setView(view: KioskView): void {
    const { options } = this;
    const previous = this.shown.phase;
    if (view.phase !== previous) {
      const { resultDisplayMs, errorDisplayMs } = options.kioskTimeouts();
      this.clearsAt =
        view.phase === 'result' ? options.now() + resultDisplayMs : view.phase === 'error' ? options.now() + errorDisplayMs : null;
      if (view.phase === 'result') this.outcomeShown = true;
      // The visit ended with an outcome and the kiosk waits for the next customer: back to the default
      // language (unless the customer pressed "Try again": the same person goes on). An error does not end
      // the visit, whether dismissed or cleared by itself: the customer is likely still there and tries
      // again, in their language; if nobody does, Ready's idle reset (`languageResetMs`) brings it back.
      if (VISIT_END_PHASES.has(previous) && !VISIT_END_PHASES.has(view.phase)) {
        if (!BUSY_PHASES.has(view.phase) && !this.keepLanguageOnce && this.outcomeShown)
          this.language = options.config().ui.defaultLanguage;
        this.keepLanguageOnce = false;
        this.outcomeShown = false;
      }
    }
    this.shown = view;
    this.freshness = options.sessionFreshness() ?? this.freshness;
    if (!BUSY_PHASES.has(view.phase)) options.onNotBusy();
    this.scheduleLanguageReset();
    this.publish();
  }

  /** "More time" on an error: the core keeps it `leftMs` from now, and the countdown says so. */
  extendClearsAt(leftMs: number): void {
    if (this.shown.phase !== 'error') return;
    this.clearsAt = this.options.now() + leftMs;
    this.publish();
  }

  /** The profile changed while no Kiosk runs: the service's own view names it. */
  showProfile(profile: string): void {
    this.shown = { ...this.shown, profile };
  }

  /** The customer chose a language: it stays until the visit ends (or Ready has waited long enough). */
  chooseLanguage(language: Language): void {
    this.language = language;
    clearTimeout(this.languageTimer);
    this.languageTimer = undefined;
    this.scheduleLanguageReset();
    this.publish();
  }

  /** Back to the default language (at start, or when staff change the default on Ready). */
  resetLanguage(): void {
    this.language = this.options.config().ui.defaultLanguage;
  }

  /** "Try again" on a visit's end screen: the same customer goes on in their language. */
  keepLanguageForRetry(): void {
    if (VISIT_END_PHASES.has(this.shown.phase)) this.keepLanguageOnce = true;
  }

  /**
   * The staff session opened or closed: the customer's visit is over (staff took the counter), so the
   * staff screens and the next customer get the default language, not the last customer's.
   */
  staffChanged(): void {
    // Any screen's session: staff at the counter end the customer's visit, whichever screen they use.
    const unlocked = this.options.staff.anyUnlocked();
    if (unlocked !== this.staffWasUnlocked) {
      this.staffWasUnlocked = unlocked;
      this.resetLanguage();
      this.keepLanguageOnce = false;
      this.scheduleLanguageReset();
    }
    this.publish();
  }

  /** Re-reads the session's freshness every `ms` (it ages without any event). */
  refreshSessionEvery(ms: number): void {
    clearInterval(this.sessionTimer);
    this.sessionTimer = setInterval(() => this.refreshSession(), ms);
    this.sessionTimer.unref();
  }

  /** Ends the timers (a later setView schedules no language reset off Ready). */
  dispose(): void {
    clearInterval(this.sessionTimer);
    clearTimeout(this.languageTimer);
    clearTimeout(this.replacedTimer);
  }

  private refreshSession(): void {
    const freshness = this.options.sessionFreshness();
    if (freshness === undefined || isDeepStrictEqual(freshness, this.freshness)) return;
    this.freshness = freshness;
    this.publish();
  }

  private scheduleLanguageReset(): void {
    const needed = this.shown.phase === 'ready' && this.language !== this.options.config().ui.defaultLanguage;
    if (!needed) {
      clearTimeout(this.languageTimer);
      this.languageTimer = undefined;
      return;
    }
    if (this.languageTimer) return;
    this.languageTimer = setTimeout(() => {
      this.languageTimer = undefined;
      if (this.shown.phase !== 'ready') return;
      this.resetLanguage();
      this.publish();
    }, this.options.languageResetMs);
    this.languageTimer.unref();
  }

  private scheduleReplacedEnd(replaced: ReplacedOutcome | null): void {
    clearTimeout(this.replacedTimer);
    this.replacedTimer = undefined;
    if (replaced === null) return;
    // A little after the end, so the Kiosk's own clock has passed it when the state is built again.
    this.replacedTimer = setTimeout(() => this.publish(), Math.max(0, replaced.clearsAt - this.options.now()) + 20);
    this.replacedTimer.unref();
  }

  private build(kioskRuns = true): ScreenState {
    const config = this.options.config();
    const view = this.shown;
    const replaced = kioskRuns ? this.options.replacedOutcome() : null;
    this.scheduleReplacedEnd(replaced);
    const profiles = Object.values(availableProfiles(config))
      .slice(0, 100)
      .map((p) => ({ name: p.name.slice(0, 100), label: p.label.slice(0, 200) }));
    return {
      view,
      profiles,
      language: this.language,
      defaultLanguage: config.ui.defaultLanguage,
      camera: {
        scanning: view.phase === 'ready',
        deviceId: config.ui.cameraDeviceId ?? null,
        state: this.options.camera.state,
        maxDecodesPerSecond: config.ui.qrDecodesPerSecond,
      },
      clearsAt: this.clearsAt,
      session: this.freshness,
      staff: this.options.staff.state(SERVICE_SCREEN),
      testMode: this.options.testMode,
      backendOrigin: originOf(config.backend.baseUrl),
      replaced,
      ...(config.ui.readerPosition === undefined ? {} : { readerPosition: config.ui.readerPosition }),
      speech: config.speech,
    };
  }
}
