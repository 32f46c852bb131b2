/**
 * The main side of the kiosk screen: implements `KioskApi` (src/common/kiosk-api.ts) over one running
 * `Kiosk`, for the browser host and the Electron main process. The main side owns the truth the screen
 * shows; the screen renders it and sends intents back. This class is the facade its callers use; the
 * work is done by its parts, one concern each:
 *
 * - service-config.ts (with config-layers.ts): the effective configuration from its layers (defaults →
 *   config file → saved settings → environment → command line → managed machine file), the saved
 *   settings and the API key bound to its backend;
 * - kiosk-runtime.ts: the devices and the Kiosk, built from that configuration and rebuilt when saved
 *   settings need it — never in the middle of a verification;
 * - screen-state.ts (with camera-status.ts): the `ScreenState` stream;
 * - customer-intents.ts and staff-intents.ts: what the screens ask, each screen with its own staff session;
 * - service-support.ts: the application status, diagnostics, self-test and support bundle.
 *
 * A configuration that cannot build a kiosk does not crash anything: the screen shows `config_error` with
 * the reason and staff can fix it in the settings. A managed file that cannot be used is the exception
 * staff cannot fix here: the kiosk stays in `config_error` naming the file and key until the file is fixed
 * and the app restarted (a policy is never silently skipped — see managed-config.ts).
 */
import { readFileSync } from 'node:fs';
import { multistream, type DestinationStream, type Level } from 'pino';
import type {
  AppStatus,
  Diagnostics,
  FieldError,
  KioskApiHandlers,
  QrScannedResult,
  RetryResult,
  SaveResult,
  ScreenState,
  SelfTestCheck,
  Settings,
  UnlockResult,
} from '../common/kiosk-api.js';
import type { SpeechAudio } from '../common/speech.js';
import type { KioskConfig } from '../platform/config.js';
import type { VerificationReport } from '../kiosk/kiosk.js';
import type { RetryReport } from '../kiosk/retry-policy.js';
import { createLogger, type Logger } from '../platform/log.js';
import { CameraStatus, type CameraHealth } from './camera-status.js';
import { customerIntents, type CustomerIntents } from './customer-intents.js';
import { DiagnosticsLog } from './diagnostics.js';
import { KioskRuntime } from './kiosk-runtime.js';
import { RendererErrorLog } from './renderer-errors.js';
import { EMPTY_DEVICES, IDLE_PHASES, ScreenStateStream, deviceStatus, serviceView } from './screen-state.js';
import { FileSecretStore } from './secret-store.js';
import { ServiceConfig } from './service-config.js';
import { SERVICE_SCREEN, type Args, type KioskServiceOptions, type Ok } from './service-options.js';
import { ServiceSupport } from './service-support.js';
import { SettingsStore } from './settings-store.js';
import { SpeechService } from './speech-service.js';
import { StaffIntents, type ScreenConnection } from './staff-intents.js';
import { StaffGate } from './staff-pin.js';
import type { SupportBundle } from './support-bundle.js';

export type { DeviceFactory, DeviceSet, KioskServiceOptions } from './service-options.js';
export type { ScreenConnection } from './staff-intents.js';

const DEFAULT_LANGUAGE_RESET_MS = 60_000;
const DEFAULT_SESSION_REFRESH_MS = 5_000;

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version.slice(0, 100) : 'unknown';
  } catch {
    return 'unknown';
  }
}

export class KioskService implements KioskApiHandlers {
  /** Version shown in diagnostics and the health record. */
  readonly version: string;
  /** When this service was created (ms since the epoch). */
  readonly startedAt: number;
  /** SHA-256 of the installed app.asar (KioskServiceOptions.installedAsarSha256); undefined when not packaged. */
  readonly installedAsarSha256: string | undefined;
  private readonly options: KioskServiceOptions;
  private readonly now: () => number;
  private readonly diagnostics: DiagnosticsLog;
  private readonly configuration: ServiceConfig;
  private readonly rendererErrors: RendererErrorLog;
  private readonly staff: StaffGate;
  private readonly screen: ScreenStateStream;
  private readonly runtime: KioskRuntime;
  private readonly support: ServiceSupport;
  private readonly customer: CustomerIntents;
  private readonly staffIntents: StaffIntents;
  private readonly camera: CameraStatus;
  private readonly speech: SpeechService;
  /** The service's own handlers (tests, the QA demo's scanner link) act as one screen of their own. */
  private readonly own: KioskApiHandlers;
  private readonly reportListeners = new Set<(report: VerificationReport) => void>();
  private log: Logger = createLogger({ level: 'silent' });
  private stopping: Promise<void> | undefined;

  constructor(options: KioskServiceOptions) {
    this.options = options;
    const now = (this.now = options.now ?? Date.now);
    const env = options.env ?? process.env;
    const log = (): Logger => this.log;
    this.diagnostics = new DiagnosticsLog({ now });
    this.version = options.version ?? packageVersion();
    this.startedAt = now();
    this.installedAsarSha256 = options.installedAsarSha256;
    const sources = { ...options, env };
    this.configuration = new ServiceConfig(
      sources,
      new SettingsStore(options.dataDir),
      options.secrets ?? new FileSecretStore(options.dataDir),
      log,
    );
    const config = (): KioskConfig => this.configuration.effective;
    this.rendererErrors = new RendererErrorLog({ log, count: (key) => this.diagnostics.count(key), now });
    const pinHash = this.configuration.managedPinHash;
    this.staff = new StaffGate({
      config: () => config().staff,
      record: this.configuration.store.currentStaff,
      persist: (record) => this.configuration.store.saveStaff(record),
      now,
      onChange: () => this.screen.staffChanged(),
      onEvent: (event, fields) => {
        const level =
          event === 'staff_locked_out' || event === 'staff_pin_hash_invalid' || event === 'staff_record_unsaved' ? 'warn' : 'info';
        this.log[level]({ event, ...fields }, event.replace(/_/g, ' '));
      },
      ...(options.pinScrypt ? { scrypt: options.pinScrypt } : {}),
      ...(pinHash === undefined ? {} : { managedPinHash: pinHash }),
    });
    const camera = (this.camera = new CameraStatus());
    this.screen = new ScreenStateStream(
      {
        config,
        kioskTimeouts: () => this.runtime.kioskTimeouts(),
        sessionFreshness: () => this.runtime.kiosk?.sessionFreshness,
        replacedOutcome: () => this.runtime.kiosk?.replacedOutcome ?? null,
        staff: this.staff,
        camera,
        testMode: options.testMode ?? false,
        languageResetMs: options.languageResetMs ?? DEFAULT_LANGUAGE_RESET_MS,
        onNotBusy: () => this.runtime.releaseIdleWaiters(),
        now,
        log,
      },
      serviceView('starting', config().profile, deviceStatus(EMPTY_DEVICES), now()),
    );
    const { screen, diagnostics, configuration } = this;
    this.runtime = new KioskRuntime({
      devices: options.devices,
      config: configuration,
      screen,
      diagnostics,
      onReport: (report) => {
        for (const listener of this.reportListeners) screen.safeCall(listener, report);
      },
      env,
      now,
      log,
      ...(options.rebuildWaitMs === undefined ? {} : { rebuildWaitMs: options.rebuildWaitMs }),
    });
    const { runtime } = this;
    this.speech = new SpeechService({ launcher: options.voiceLauncher, log });
    this.support = new ServiceSupport({
      speech: this.speech,
      service: options,
      config: configuration,
      runtime,
      screen,
      camera,
      diagnostics,
      version: this.version,
      startedAt: this.startedAt,
      now,
      log,
    });
    this.customer = customerIntents({
      config,
      reloadConfig: () => configuration.reload(),
      runtime,
      screen,
      camera,
      diagnostics,
      rendererErrors: this.rendererErrors,
      speech: this.speech,
      log,
    });
    this.staffIntents = new StaffIntents({
      staff: this.staff,
      customer: this.customer,
      config: configuration,
      runtime,
      screen,
      support: this.support,
      log,
    });
    this.own = this.staffIntents.handlersFor(SERVICE_SCREEN);
  }

  // ------------------------------------------------------------ lifecycle

  /** The effective configuration in use (it holds the API key: never send it anywhere). */
  get config(): KioskConfig {
    return this.configuration.effective;
  }

  /**
   * Loads the saved settings and secrets, builds the devices and the kiosk, and starts it. A bad
   * configuration does not throw: the state shows `config_error` with the reason.
   */
  async start(): Promise<void> {
    this.runtime.claimStart();
    const loaded = await this.configuration.loadSettings();
    this.staff.replaceRecord(loaded.staff);
    await this.configuration.loadKey();
    this.log = this.createLog(this.configuration.effective.log.level);
    await this.configuration.logLoaded(loaded);
    this.screen.resetLanguage();
    // Loaded now, so the first prompt does not wait for eSpeak NG (about 0.1–0.5 s); not at all when speech is off.
    if (this.options.runKiosk !== false && this.configuration.effective.speech.mode !== 'off') this.speech.start();
    if (this.options.runKiosk === false) {
      this.runtime.startIdle();
      this.log.info({ event: 'service_started', state: 'stopped' }, 'kiosk service started without devices or kiosk');
      return;
    }
    if (!(await this.runtime.start())) return; // stopped meanwhile
    this.screen.refreshSessionEvery(this.options.sessionRefreshMs ?? DEFAULT_SESSION_REFRESH_MS);
    this.log.info({ event: 'service_started', state: this.screen.view.phase }, 'kiosk service started');
  }

  /** Stops the kiosk, closes the devices and ends every timer. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    this.runtime.halt();
    this.rendererErrors.dispose();
    this.screen.dispose();
    this.staff.dispose();
    await Promise.all([this.runtime.close(), this.speech.close()]);
    this.screen.setView(serviceView('stopped', this.configuration.effective.profile, this.screen.view.devices, this.now()));
  }

  /** Resolves when every rebuild asked for so far has run (tests and the QA demo wait on it). */
  settled(): Promise<void> {
    return this.runtime.settled();
  }

  private createLog(level: KioskConfig['log']['level']): Logger {
    const destination = this.options.logDestination ?? process.stderr;
    const streams: { level: Level; stream: DestinationStream }[] = [{ level: 'info', stream: this.diagnostics.stream }];
    if (level !== 'silent') streams.push({ level, stream: destination });
    // The logger passes info and up to the diagnostics even when the console log is quieter.
    const loggerLevel = level === 'debug' || level === 'trace' ? level : 'info';
    return createLogger({ level: loggerLevel, name: 'mdl-kiosk' }, multistream(streams));
  }

  // ------------------------------------------------------------ state stream

  state(): ScreenState {
    return this.screen.state;
  }

  onState(listener: (state: ScreenState) => void): () => void {
    return this.screen.onState(listener);
  }

  /** The service's own screen (see `own`) has a staff session. */
  staffUnlocked(): boolean {
    return this.staff.unlocked(SERVICE_SCREEN);
  }

  /** Some screen has a staff session open. */
  staffUnlockedAnywhere(): boolean {
    return this.staff.anyUnlocked();
  }

  /**
   * Nobody is using the kiosk: no verification runs, no customer's outcome or error is on screen, and no
   * staff session is open. The updater installs only while this holds.
   */
  isIdle(): boolean {
    return this.runtime.running && IDLE_PHASES.has(this.screen.view.phase) && !this.staff.anyUnlocked();
  }

  /** Every finished verification of whichever kiosk runs (it holds disclosed data: QA and tests only). */
  onVerification(listener: (report: VerificationReport) => void): () => void {
    this.reportListeners.add(listener);
    return () => this.reportListeners.delete(listener);
  }

  /** A screen connected to the kiosk, with a staff session of its own (see staff-intents.ts). */
  connectScreen(): ScreenConnection {
    return this.staffIntents.connectScreen();
  }

  /** Writes a support bundle to `target`, or into the support folder (see service-support.ts). */
  writeSupportBundleTo(target?: string): Promise<SupportBundle> {
    return this.support.writeBundle(target);
  }

  /**
   * The running kiosk's backend failures (the last one, how many in a row, totals by kind, the request
   * budget); undefined while no kiosk runs. For the health record and the metrics file.
   */
  backendFailures(): RetryReport | undefined {
    return this.runtime.backendFailures();
  }

  /**
   * The screen's camera for the health record and the metrics file: its state (a problem kept until the
   * camera runs again) and whether it ever worked; undefined until a screen reports its camera.
   */
  cameraHealth(): CameraHealth | undefined {
    return this.camera.forHealth();
  }

  /** The application's status for diagnostics: the shell's report, completed with what the service knows. */
  appStatus(): AppStatus {
    return this.support.appStatus();
  }

  // ------------------------------------------------------------ intents of the service's own screen

  readonly qrScanned = (args: Args<'qrScanned'>): QrScannedResult => this.customer.qrScanned(args);
  readonly next = (): Ok => this.customer.next();
  readonly retry = (): RetryResult | Promise<RetryResult> => this.customer.retry();
  readonly cancel = (): { cancelled: boolean } => this.customer.cancel();
  readonly moreTime = (): { extended: boolean } => this.customer.moreTime();
  readonly setLanguage = (args: Args<'setLanguage'>): Ok => this.customer.setLanguage(args);
  readonly reportCamera = (args: Args<'reportCamera'>): Ok => this.customer.reportCamera(args);
  readonly reportError = (args: Args<'reportError'>): Ok => this.customer.reportError(args);
  readonly synthesizeSpeech = (args: Args<'synthesizeSpeech'>): Promise<SpeechAudio> => this.customer.synthesizeSpeech(args);
  readonly reportSpeech = (args: Args<'reportSpeech'>): Ok => this.customer.reportSpeech(args);
  readonly unlock = (args: Args<'unlock'>): Promise<UnlockResult> => this.staff.unlock(args.pin, SERVICE_SCREEN);
  readonly lock = (): Ok => {
    this.staff.lock(SERVICE_SCREEN);
    return { ok: true };
  };
  readonly setProfile = (args: Args<'setProfile'>): Promise<Ok> => this.own.setProfile(args) as Promise<Ok>;
  readonly getSettings = (): Settings => this.own.getSettings({}) as Settings;
  readonly saveSettings = (update: Args<'saveSettings'>): Promise<SaveResult> => this.own.saveSettings(update) as Promise<SaveResult>;
  readonly changePin = (args: Args<'changePin'>): Promise<Ok | { ok: false; errors: FieldError[] }> =>
    this.staffIntents.changePin(SERVICE_SCREEN, args);
  readonly getDiagnostics = (): Diagnostics => this.own.getDiagnostics({}) as Diagnostics;
  readonly selfTest = (): { checks: SelfTestCheck[] } => this.own.selfTest({}) as { checks: SelfTestCheck[] };
  readonly writeSupportBundle = (args: Args<'writeSupportBundle'> = {}): Promise<{ path: string; bytes: number }> =>
    this.own.writeSupportBundle(args) as Promise<{ path: string; bytes: number }>;
  readonly prepareSupportDownload = (): Promise<{ ticket: string; name: string; bytes: number }> =>
    this.own.prepareSupportDownload({}) as Promise<{ ticket: string; name: string; bytes: number }>;
  /** The browser host's `/support-bundle/<ticket>`: the bundle a ticket stands for, once. */
  readonly takeSupportDownload = (ticket: string): { path: string; name: string } | undefined => this.support.takeDownload(ticket);
  readonly listSupportVolumes = (): Promise<{ volumes: { id: string; label: string }[] }> =>
    this.own.listSupportVolumes({}) as Promise<{ volumes: { id: string; label: string }[] }>;
}
