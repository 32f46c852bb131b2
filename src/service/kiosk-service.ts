/**
 * The main side of the kiosk screen: implements `KioskApi` (src/common/kiosk-api.ts) over one running
 * `Kiosk`, for the browser host today and the Electron main process next. It owns the truth the screen
 * shows (DESIGN §2): the `ScreenState` stream (the Kiosk's view plus language, camera, countdown, session
 * freshness, staff state), the staff PIN and settings, diagnostics and the self-test.
 *
 * It owns the Kiosk runtime too: the kiosk and its devices are built from the effective configuration
 * (defaults → config file → saved settings → environment → command line → managed machine file) and
 * rebuilt when saved settings need it — never in the middle of a verification. A configuration that cannot
 * build a kiosk does not crash anything: the screen shows `config_error` with the reason and staff can fix
 * it in the settings. A managed file that cannot be used is the exception staff cannot fix here: the kiosk
 * stays in `config_error` naming the file and key until the file is fixed and the app restarted (a
 * policy is never silently skipped — see managed-config.ts).
 */
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { multistream, type DestinationStream, type Level } from 'pino';
import type { z } from 'zod';
import {
  KioskApiError,
  type AppStatus,
  type CameraState,
  type Diagnostics,
  type FieldError,
  type IntentName,
  type KIOSK_INTENTS,
  type KioskApiHandlers,
  type Language,
  type LockSource,
  type QrScannedResult,
  type SaveResult,
  type ScreenState,
  type SelfTestCheck,
  type SessionFreshness,
  type Settings,
  type UnlockResult,
} from '../common/kiosk-api.js';
import type { KioskView } from '../common/kiosk-view.js';
import { HeaderToken } from '../common/protocol/messages.js';
import type { Availability, AvailabilitySource, DevicePorts } from '../devices/ports.js';
import { QrScanQueue } from '../devices/qr/qr-scan-queue.js';
import { backendEndpoints } from '../kiosk/backend-endpoints.js';
import { createKiosk } from '../kiosk/compose.js';
import { engagementTextProblem } from '../kiosk/engagement-text.js';
import { KioskConfigSchema, mergeConfig, mergeConfigSources, parseConfig, readApiKeyFile, type KioskConfig } from '../kiosk/config.js';
import { stripScannerTerminator, type Kiosk, type VerificationReport } from '../kiosk/kiosk.js';
import { createLogger, type Logger } from '../kiosk/log.js';
import { availableProfiles } from '../kiosk/profiles.js';
import { DiagnosticsLog } from './diagnostics.js';
import { managedKeys, type ManagedConfig } from './managed-config.js';
import { RendererErrorLog } from './renderer-errors.js';
import { API_KEY_SECRET, FileSecretStore, type SecretStore } from './secret-store.js';
import { runSelfTest } from './self-test.js';
import {
  applyUpdate,
  lockedErrors,
  lockSources,
  PersistedSettings,
  SettingsStore,
  settingKeyFor,
  settingsLayer,
  settingsView,
  updatedKeys,
} from './settings-store.js';
import { ManagedPinError, StaffGate, type ScryptParams } from './staff-pin.js';

/** The devices one kiosk runtime uses; `qr` is the queue the screen's scans are pushed into. */
export interface DeviceSet {
  readonly ports: DevicePorts;
  readonly qr: QrScanQueue;
  close(): Promise<void>;
}

/**
 * Builds the devices for a configuration. Called at start and again when saved settings change the
 * reader or the Bluetooth roles (the previous set is closed first).
 */
export type DeviceFactory = (config: KioskConfig, log: Logger) => Promise<DeviceSet>;

type Json = Record<string, unknown>;

export interface KioskServiceOptions {
  readonly devices: DeviceFactory;
  /** Directory of `settings.json` and (with the default secret store) `secrets.json`. */
  readonly dataDir: string;
  /** JSON configuration file (else `MDL_KIOSK_CONFIG`). */
  readonly configFile?: string;
  /** Environment (default `process.env`). */
  readonly env?: NodeJS.ProcessEnv;
  /** Command-line values in the config's own shape: above the environment, shown as locked. */
  readonly overrides?: Json;
  /**
   * The managed machine file (src/service/managed-config.ts): its layer is the highest precedence, above
   * the command line too, because it is the fleet's policy (a local script or shortcut must not undo it);
   * every key it sets is locked; `staff.pinHash` in it is the staff PIN (not changeable here). A `problem`
   * keeps the kiosk in `config_error`, naming the file and the key.
   */
  readonly managed?: ManagedConfig;
  /**
   * The application around the service (the Electron shell), for diagnostics. The service fills in what
   * it knows better itself: the secret store's protection and problem, and the managed file's path and keys.
   */
  readonly appStatus?: () => AppStatus;
  /** Where the API key is kept (default: a {@link FileSecretStore} in `dataDir`). */
  readonly secrets?: SecretStore;
  /** The QA demo's embedded mock backend; the backend URL and API key then show as locked. */
  readonly backendOverride?: { readonly baseUrl: string; readonly apiKey: string };
  /** The screen shows TEST MODE. */
  readonly testMode?: boolean;
  /** Where the JSON log goes (default stderr); it is also tee'd into the diagnostics. */
  readonly logDestination?: DestinationStream;
  /** Version shown in diagnostics (default: the package's). */
  readonly version?: string;
  /** A non-default language on Ready goes back to the default after this long (default 60 s). */
  readonly languageResetMs?: number;
  /** Longest wait for a verification to end before a rebuild goes ahead (default verificationMs + 10 s). */
  readonly rebuildWaitMs?: number;
  /** How often session freshness is re-read for the screen (default 5 s). */
  readonly sessionRefreshMs?: number;
  /** scrypt cost of new PIN hashes (tests use a cheaper one). */
  readonly pinScrypt?: ScryptParams;
  readonly now?: () => number;
}

/** Phases in which a verification runs: nothing is rebuilt under it. */
const BUSY_PHASES: ReadonlySet<KioskView['phase']> = new Set(['engaging', 'awaiting_card', 'ble_connecting', 'transferring']);
/** Phases that end a customer's visit on screen. */
const VISIT_END_PHASES: ReadonlySet<KioskView['phase']> = new Set(['result', 'error', 'remove_phone']);
/** Phases in which a scan is taken (the core waits `armWaitMs` for a session while connecting or offline). */
const WAITING_PHASES: ReadonlySet<KioskView['phase']> = new Set(['ready', 'connecting', 'offline']);
/** Phases with no customer at the counter. */
const IDLE_PHASES: ReadonlySet<KioskView['phase']> = new Set(['ready', 'connecting', 'offline', 'config_error', 'cannot_verify']);
const MDOC_PREFIX = /^mdoc:/i;
const DEFAULT_LANGUAGE_RESET_MS = 60_000;
const DEFAULT_SESSION_REFRESH_MS = 5_000;

type Args<K extends IntentName> = z.infer<(typeof KIOSK_INTENTS)[K]['args']>;
type Ok = { ok: true };

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version.slice(0, 100) : 'unknown';
  } catch {
    return 'unknown';
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function deviceStatus(ports: DevicePorts): KioskView['devices'] {
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
function serviceView(phase: 'starting' | 'config_error' | 'stopped', profile: string, devices: KioskView['devices'], at: number, detail?: string): KioskView {
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

function originOf(baseUrl: string | undefined): string | null {
  if (baseUrl === undefined) return null;
  try {
    const origin = new URL(baseUrl).origin;
    return origin === 'null' ? null : origin.slice(0, 300);
  } catch {
    return null;
  }
}

/** The part of a configuration a running Kiosk depends on (the screen's and staff's keys are live). */
function kioskPart(config: KioskConfig): Json {
  const { backend, session, timeouts, profiles, qr, pcsc, ble, privacy } = config;
  return { backend, session, timeouts, profiles, qr, pcsc, ble, privacy };
}

const EMPTY_DEVICES: DevicePorts = {};

/** A staff PIN hash set above the saved settings: the managed file's, else the command line's. */
function managedPinHash(...layers: (Json | undefined)[]): string | undefined {
  for (const layer of layers) {
    const staff = layer?.staff;
    if (typeof staff !== 'object' || staff === null) continue;
    const hash = (staff as Json).pinHash;
    if (typeof hash === 'string') return hash;
  }
  return undefined;
}

const CAMERA_PROBLEMS: ReadonlySet<CameraState> = new Set<CameraState>(['denied', 'missing', 'unplugged', 'error']);

export class KioskService implements KioskApiHandlers {
  private readonly options: KioskServiceOptions;
  private readonly now: () => number;
  private readonly env: NodeJS.ProcessEnv;
  private readonly store: SettingsStore;
  private readonly secrets: SecretStore;
  private readonly diagnostics: DiagnosticsLog;
  /** Version shown in diagnostics and the health record. */
  readonly version: string;
  /** When this service was created (ms since the epoch). */
  readonly startedAt: number;
  private readonly locked: readonly string[];
  private readonly lockedBy: ReadonlyMap<string, LockSource>;
  private readonly rendererErrors: RendererErrorLog;
  private readonly staff: StaffGate;
  private log: Logger;
  private effective: KioskConfig = parseConfig({});
  private configProblem: string | undefined;
  private settingsProblem: string | undefined;
  /** The managed file cannot be used: not cleared by a save (staff cannot fix it here). */
  private readonly managedProblem: string | undefined;
  /** The stored API key cannot be read; the kiosk still runs when the key comes from another source. */
  private secretsProblem: string | undefined;
  private apiKey: string | undefined;
  private devices: DeviceSet | undefined;
  private kiosk: Kiosk | undefined;
  private kioskUnsubscribers: (() => void)[] = [];
  private view: KioskView;
  private language: Language = 'en';
  /** "Try again" on an error: the same customer goes on, so the visit's end keeps their language once. */
  private keepLanguageOnce = false;
  /** The staff session as last published: opening or closing it ends the customer's visit (language). */
  private staffWasUnlocked = false;
  private clearsAt: number | null = null;
  private cameraReport: { state: CameraState; detail?: string } | undefined;
  /**
   * The last camera problem the screen reported, kept until the camera runs again: the screen turns the
   * camera off whenever it leaves Ready, and that must not hide a blocked or unplugged camera from staff.
   */
  private cameraProblem: { state: CameraState; detail?: string } | undefined;
  /** The camera has delivered frames since this service started. */
  private cameraWorked = false;
  /** Saves run one at a time: each starts from what the previous one stored. */
  private saving: Promise<unknown> = Promise.resolve();
  private freshness: SessionFreshness = { state: 'none', createdAt: null, expiresAt: null };
  private readonly stateListeners = new Set<(state: ScreenState) => void>();
  private readonly reportListeners = new Set<(report: VerificationReport) => void>();
  private current: ScreenState;
  private languageTimer: NodeJS.Timeout | undefined;
  private sessionTimer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private pendingRebuild: 'kiosk' | 'devices' | undefined;
  private idleWaiters: (() => void)[] = [];
  private phase: 'new' | 'starting' | 'running' | 'stopped' = 'new';
  private stopping: Promise<void> | undefined;

  constructor(options: KioskServiceOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.env = options.env ?? process.env;
    this.store = new SettingsStore(options.dataDir);
    this.secrets = options.secrets ?? new FileSecretStore(options.dataDir);
    this.diagnostics = new DiagnosticsLog({ now: this.now });
    this.version = options.version ?? packageVersion();
    this.startedAt = this.now();
    this.log = createLogger({ level: 'silent' });
    this.lockedBy = lockSources({
      env: this.env,
      ...(options.overrides ? { overrides: options.overrides } : {}),
      ...(options.managed ? { managed: options.managed.layer } : {}),
      backendOverride: options.backendOverride !== undefined,
    });
    this.locked = [...this.lockedBy.keys()];
    this.managedProblem = options.managed?.problem;
    this.rendererErrors = new RendererErrorLog({ log: () => this.log, count: (key) => this.diagnostics.count(key), now: this.now });
    this.staff = new StaffGate({
      config: () => this.effective.staff,
      record: this.store.currentStaff,
      persist: (record) => this.store.saveStaff(record),
      now: this.now,
      onChange: () => this.onStaffChange(),
      onEvent: (event, fields) => {
        const level = event === 'staff_locked_out' || event === 'staff_pin_hash_invalid' ? 'warn' : 'info';
        this.log[level]({ event, ...fields }, event.replace(/_/g, ' '));
      },
      ...(options.pinScrypt ? { scrypt: options.pinScrypt } : {}),
      ...(managedPinHash(options.managed?.layer, options.overrides) === undefined ? {} : { managedPinHash: managedPinHash(options.managed?.layer, options.overrides) }),
    });
    this.view = serviceView('starting', this.effective.profile, deviceStatus(EMPTY_DEVICES), this.now());
    this.current = this.buildState();
  }

  // ------------------------------------------------------------ lifecycle

  /** The effective configuration in use (it holds the API key: never send it anywhere). */
  get config(): KioskConfig {
    return this.effective;
  }

  /**
   * Loads the saved settings and secrets, builds the devices and the kiosk, and starts it. A bad
   * configuration does not throw: the state shows `config_error` with the reason.
   */
  async start(): Promise<void> {
    if (this.phase !== 'new') throw new Error('KioskService.start() may be called once');
    this.phase = 'starting';
    const loaded = await this.store.load();
    this.staff.replaceRecord(loaded.staff);
    this.settingsProblem = loaded.problems[0];
    try {
      this.apiKey = await this.secrets.get(API_KEY_SECRET);
    } catch (e) {
      // Not fatal by itself: the kiosk runs on a key from another source (managed file, environment),
      // staff see the problem, and saving a key on the settings screen replaces the unreadable one.
      this.secretsProblem = `the stored API key cannot be read: ${errorText(e)}`.slice(0, 500);
    }
    const resolved = this.resolve(this.store.currentSettings, this.apiKey);
    this.effective = resolved.config;
    this.configProblem = resolved.problem;
    this.log = this.createLog(this.effective.log.level);
    if (this.managedProblem !== undefined) this.log.error({ event: 'managed_config_invalid' }, this.managedProblem);
    if (this.secretsProblem !== undefined) this.log.warn({ event: 'secret_store_failed' }, this.secretsProblem);
    for (const problem of loaded.problems) this.log.warn({ event: 'settings_file_invalid' }, problem);
    this.language = this.effective.ui.defaultLanguage;
    this.devices = await this.buildDevices();
    if (this.isStopped()) return; // stopped meanwhile
    this.phase = 'running';
    this.buildKiosk();
    this.sessionTimer = setInterval(() => this.refreshSession(), this.options.sessionRefreshMs ?? DEFAULT_SESSION_REFRESH_MS);
    this.sessionTimer.unref();
    this.log.info({ event: 'service_started', state: this.view.phase }, 'kiosk service started');
  }

  private isStopped(): boolean {
    return this.phase === 'stopped';
  }

  /** Stops the kiosk, closes the devices and ends every timer. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    this.phase = 'stopped';
    this.rendererErrors.dispose();
    this.releaseIdleWaiters();
    clearInterval(this.sessionTimer);
    clearTimeout(this.languageTimer);
    this.staff.dispose();
    await this.chain;
    const kiosk = this.detachKiosk();
    await kiosk?.stop();
    await this.devices?.close().catch((e: unknown) => this.log.warn({ event: 'devices_close_failed' }, errorText(e)));
    this.setView(serviceView('stopped', this.effective.profile, this.view.devices, this.now()));
  }

  /** Resolves when every rebuild asked for so far has run (tests and the QA demo wait on it). */
  settled(): Promise<void> {
    return this.chain;
  }

  // ------------------------------------------------------------ state stream

  state(): ScreenState {
    return this.current;
  }

  onState(listener: (state: ScreenState) => void): () => void {
    this.stateListeners.add(listener);
    this.safeCall(listener, this.current);
    return () => this.stateListeners.delete(listener);
  }

  staffUnlocked(): boolean {
    return this.staff.unlocked();
  }

  /**
   * Nobody is using the kiosk: no verification runs, no customer's outcome or error is on screen, and no
   * staff session is open. The updater installs only while this holds.
   */
  isIdle(): boolean {
    return this.phase === 'running' && IDLE_PHASES.has(this.view.phase) && !this.staff.unlocked();
  }

  /** Every finished verification of whichever kiosk runs (it holds disclosed data: QA and tests only). */
  onVerification(listener: (report: VerificationReport) => void): () => void {
    this.reportListeners.add(listener);
    return () => this.reportListeners.delete(listener);
  }

  private safeCall<T>(listener: (value: T) => void, value: T): void {
    try {
      listener(value);
    } catch (e) {
      this.log.error({ event: 'listener_failed' }, `a listener threw: ${e instanceof Error ? e.name : 'unknown'}`);
    }
  }

  private buildState(): ScreenState {
    const config = this.effective;
    const profiles = Object.values(availableProfiles(config))
      .slice(0, 100)
      .map((p) => ({ name: p.name.slice(0, 100), label: p.label.slice(0, 200) }));
    return {
      view: this.view,
      profiles,
      language: this.language,
      defaultLanguage: config.ui.defaultLanguage,
      camera: {
        scanning: this.view.phase === 'ready',
        deviceId: config.ui.cameraDeviceId ?? null,
        state: this.cameraProblem?.state ?? this.cameraReport?.state ?? 'off',
        maxDecodesPerSecond: config.ui.qrDecodesPerSecond,
      },
      clearsAt: this.clearsAt,
      session: this.freshness,
      staff: this.staff.state(),
      testMode: this.options.testMode ?? false,
      backendOrigin: originOf(config.backend.baseUrl),
    };
  }

  private publish(): void {
    this.current = this.buildState();
    for (const listener of this.stateListeners) this.safeCall(listener, this.current);
  }

  private setView(view: KioskView): void {
    const previous = this.view.phase;
    if (view.phase !== previous) {
      const { resultDisplayMs, errorDisplayMs } = this.kioskTimeouts();
      this.clearsAt = view.phase === 'result' ? this.now() + resultDisplayMs : view.phase === 'error' ? this.now() + errorDisplayMs : null;
      // The visit's screen ended and the kiosk waits for the next customer: back to the default language
      // (unless the customer pressed "Try again": the same person goes on).
      if (VISIT_END_PHASES.has(previous) && !VISIT_END_PHASES.has(view.phase)) {
        if (!BUSY_PHASES.has(view.phase) && !this.keepLanguageOnce) this.language = this.effective.ui.defaultLanguage;
        this.keepLanguageOnce = false;
      }
    }
    this.view = view;
    if (this.kiosk) this.freshness = this.kiosk.sessionFreshness;
    if (!BUSY_PHASES.has(view.phase)) this.releaseIdleWaiters();
    this.scheduleLanguageReset();
    this.publish();
  }

  /** The timeouts of the kiosk that runs (saved settings reach it with the next rebuild). */
  private kioskTimeouts(): KioskConfig['timeouts'] {
    return this.runningConfig?.timeouts ?? this.effective.timeouts;
  }

  private runningConfig: KioskConfig | undefined;

  private scheduleLanguageReset(): void {
    const needed = this.view.phase === 'ready' && this.language !== this.effective.ui.defaultLanguage;
    if (!needed) {
      clearTimeout(this.languageTimer);
      this.languageTimer = undefined;
      return;
    }
    if (this.languageTimer) return;
    this.languageTimer = setTimeout(() => {
      this.languageTimer = undefined;
      if (this.view.phase !== 'ready') return;
      this.language = this.effective.ui.defaultLanguage;
      this.publish();
    }, this.options.languageResetMs ?? DEFAULT_LANGUAGE_RESET_MS);
    this.languageTimer.unref();
  }

  /**
   * The staff session opened or closed: the customer's visit is over (staff took the counter), so the
   * staff screens and the next customer get the default language, not the last customer's.
   */
  private onStaffChange(): void {
    const unlocked = this.staff.unlocked();
    if (unlocked !== this.staffWasUnlocked) {
      this.staffWasUnlocked = unlocked;
      this.language = this.effective.ui.defaultLanguage;
      this.keepLanguageOnce = false;
      this.scheduleLanguageReset();
    }
    this.publish();
  }

  private refreshSession(): void {
    if (!this.kiosk) return;
    const freshness = this.kiosk.sessionFreshness;
    if (isDeepStrictEqual(freshness, this.freshness)) return;
    this.freshness = freshness;
    this.publish();
  }

  // ------------------------------------------------------------ configuration

  private createLog(level: KioskConfig['log']['level']): Logger {
    const destination = this.options.logDestination ?? process.stderr;
    const streams: { level: Level; stream: DestinationStream }[] = [{ level: 'info', stream: this.diagnostics.stream }];
    if (level !== 'silent') streams.push({ level, stream: destination });
    // The logger passes info and up to the diagnostics even when the console log is quieter.
    const loggerLevel = level === 'debug' || level === 'trace' ? level : 'info';
    return createLogger({ level: loggerLevel, name: 'mdl-kiosk' }, multistream(streams));
  }

  /**
   * The top of the stack: the managed file's layer, and above it the QA demo's embedded backend (which
   * only runs when no backend is configured; its key must never go to another backend's address).
   */
  private topLayer(): Json | undefined {
    const { managed, backendOverride } = this.options;
    const layer = managed?.layer;
    if (!backendOverride) return layer;
    return mergeConfig(layer ?? {}, { backend: { baseUrl: backendOverride.baseUrl, apiKey: backendOverride.apiKey } });
  }

  /** The configuration with these saved settings; on failure the defaults and the reason. */
  private resolve(settings: PersistedSettings, apiKey: string | undefined): { config: KioskConfig; problem?: string; errors: FieldError[] } {
    const { overrides } = this.options;
    const top = this.topLayer();
    let merged: Json;
    try {
      merged = mergeConfigSources({
        ...(this.options.configFile ? { file: this.options.configFile } : {}),
        env: this.env,
        persisted: settingsLayer(settings, apiKey),
        ...(overrides ? { overrides } : {}),
        ...(top ? { managed: top } : {}),
      });
    } catch (e) {
      const problem = errorText(e);
      return { config: parseConfig({}), problem, errors: [{ key: '(config file)', message: problem }] };
    }
    const parsed = KioskConfigSchema.safeParse(merged);
    if (!parsed.success) {
      const errors = parsed.error.issues.slice(0, 20).map((i) => ({ key: settingKeyFor(i.path), message: i.message.slice(0, 500) }));
      return { config: parseConfig({}), problem: `invalid configuration: ${errors.map((e) => `${e.key}: ${e.message}`).join('; ')}`, errors };
    }
    try {
      const config = readApiKeyFile(parsed.data);
      return { config, errors: [] };
    } catch (e) {
      const problem = errorText(e);
      return { config: parseConfig({}), problem, errors: [{ key: 'apiKey', message: problem }] };
    }
  }

  /** Field errors of a candidate configuration beyond its schema: the TLS rule and the profile's existence. */
  private candidateErrors(config: KioskConfig): FieldError[] {
    const errors: FieldError[] = [];
    if (config.backend.baseUrl !== undefined) {
      try {
        backendEndpoints(config.backend.baseUrl, { allowInsecure: config.backend.allowInsecure });
      } catch (e) {
        errors.push({ key: 'backendUrl', message: errorText(e).slice(0, 500) });
      }
    }
    if (!Object.hasOwn(availableProfiles(config), config.profile)) {
      errors.push({ key: 'profile', message: `unknown request profile; choose one of ${Object.keys(availableProfiles(config)).join(', ')}`.slice(0, 500) });
    }
    return errors;
  }

  // ------------------------------------------------------------ devices and kiosk

  private async buildDevices(): Promise<DeviceSet> {
    try {
      return await this.options.devices(this.effective, this.log.child({ component: 'devices' }));
    } catch (e) {
      // The screen and the staff still work; the kiosk runs with what it has (the screen's QR queue).
      this.log.error({ event: 'devices_failed' }, `devices could not be set up: ${errorText(e)}`);
      const qr = new QrScanQueue({ freshMs: this.effective.qr.scanFreshMs });
      return { ports: { qr }, qr, close: () => Promise.resolve() };
    }
  }

  private buildKiosk(): void {
    const ports = this.devices?.ports ?? EMPTY_DEVICES;
    // An unreadable stored key only stops the kiosk when no other source gives one.
    const keyProblem = this.effective.backend.apiKey === undefined ? this.secretsProblem : undefined;
    const problem = this.managedProblem ?? this.settingsProblem ?? this.configProblem ?? keyProblem;
    if (problem !== undefined) {
      this.showConfigError(problem);
      return;
    }
    let kiosk: Kiosk;
    try {
      // The counter never invites a customer its devices cannot serve (Needs staff instead of Ready).
      kiosk = createKiosk(this.effective, ports, this.log.child({ component: 'kiosk' }), { now: this.now, readinessGate: true });
    } catch (e) {
      this.showConfigError(errorText(e));
      return;
    }
    this.kiosk = kiosk;
    this.runningConfig = this.effective;
    this.kioskUnsubscribers = [
      kiosk.onView((view) => this.setView(view)),
      kiosk.onVerification((report) => {
        this.diagnostics.countVerification(report);
        for (const listener of this.reportListeners) this.safeCall(listener, report);
      }),
      kiosk.onSessionCreated(() => this.diagnostics.sessionCreated(this.now())),
    ];
    kiosk.start();
    this.setView(kiosk.currentView);
  }

  private showConfigError(detail: string): void {
    this.runningConfig = undefined;
    this.log.warn({ event: 'kiosk_config_error' }, 'the kiosk cannot run with this configuration; staff must fix it in the settings');
    this.setView(serviceView('config_error', this.effective.profile, deviceStatus(this.devices?.ports ?? EMPTY_DEVICES), this.now(), detail.slice(0, 1_000)));
  }

  private detachKiosk(): Kiosk | undefined {
    const kiosk = this.kiosk;
    this.kiosk = undefined;
    for (const unsubscribe of this.kioskUnsubscribers.splice(0)) unsubscribe();
    return kiosk;
  }

  private requestRebuild(kind: 'kiosk' | 'devices'): void {
    const queued = this.pendingRebuild !== undefined;
    this.pendingRebuild = this.pendingRebuild === 'devices' || kind === 'devices' ? 'devices' : 'kiosk';
    if (queued) return;
    const run = this.chain.then(async () => {
      await this.waitUntilIdle();
      const what = this.pendingRebuild;
      this.pendingRebuild = undefined;
      if (this.phase !== 'running' || what === undefined) return;
      await this.rebuild(what === 'devices');
    });
    this.chain = run.catch((e: unknown) => {
      this.log.error({ event: 'rebuild_failed' }, `rebuild failed: ${errorText(e)}`);
    });
  }

  private waitUntilIdle(): Promise<void> {
    if (!BUSY_PHASES.has(this.view.phase) || this.phase !== 'running') return Promise.resolve();
    const bound = this.options.rebuildWaitMs ?? this.effective.timeouts.verificationMs + 10_000;
    return new Promise((resolve) => {
      const timer = setTimeout(done, bound);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.idleWaiters.push(done);
    });
  }

  private releaseIdleWaiters(): void {
    for (const done of this.idleWaiters.splice(0)) done();
  }

  private async rebuild(devicesToo: boolean): Promise<void> {
    this.log.info({ event: 'kiosk_rebuild', rebuild: devicesToo ? 'devices' : 'kiosk' }, 'applying saved settings');
    const old = this.detachKiosk();
    this.setView(serviceView('starting', this.effective.profile, this.view.devices, this.now()));
    await old?.stop();
    if (devicesToo) {
      await this.devices?.close().catch((e: unknown) => this.log.warn({ event: 'devices_close_failed' }, errorText(e)));
      this.devices = undefined;
      this.devices = await this.buildDevices();
    }
    if (this.phase !== 'running') return;
    this.buildKiosk();
  }

  // ------------------------------------------------------------ intents: customer

  readonly qrScanned = (args: Args<'qrScanned'>): QrScannedResult => {
    const result = this.takeScan(args.text);
    this.diagnostics.count(`scan.${args.source}.${result.accepted ? 'accepted' : result.reason}`);
    return result;
  };

  private takeScan(text: string): QrScannedResult {
    const stripped = stripScannerTerminator(text);
    if (stripped.trim() === '') return { accepted: false, reason: 'empty' };
    if (this.effective.qr.requireMdocPrefix && !MDOC_PREFIX.test(stripped)) return { accepted: false, reason: 'not_mdoc' };
    // Cut short or damaged (a scanner dropped characters): say so, rather than spend a session on it.
    if (this.effective.qr.requireMdocPrefix && engagementTextProblem(stripped) !== undefined) return { accepted: false, reason: 'unreadable' };
    if (!this.kiosk || !this.devices || !WAITING_PHASES.has(this.view.phase)) return { accepted: false, reason: 'not_waiting' };
    // Unmodified: the core strips a scanner's terminator itself (spec §4.3).
    this.devices.qr.push(text);
    return { accepted: true };
  }

  readonly next = (): Ok => {
    this.kiosk?.dismiss();
    return { ok: true };
  };

  readonly retry = (): Ok => {
    if (VISIT_END_PHASES.has(this.view.phase)) this.keepLanguageOnce = true;
    if (this.kiosk) {
      this.kiosk.retry();
      this.kiosk.dismiss();
    } else if (this.phase === 'running') {
      // No kiosk (configuration error): read the configuration again, it may have been fixed.
      const resolved = this.resolve(this.store.currentSettings, this.apiKey);
      this.effective = resolved.config;
      this.configProblem = resolved.problem;
      this.requestRebuild('kiosk');
    }
    return { ok: true };
  };

  readonly cancel = (): { cancelled: boolean } => ({ cancelled: this.kiosk?.cancelTapAgain() ?? false });

  readonly setLanguage = (args: Args<'setLanguage'>): Ok => {
    this.language = args.language;
    clearTimeout(this.languageTimer);
    this.languageTimer = undefined;
    this.scheduleLanguageReset();
    this.publish();
    return { ok: true };
  };

  readonly reportCamera = (args: Args<'reportCamera'>): Ok => {
    const changed = this.cameraReport?.state !== args.state;
    const report = args.detail === undefined ? { state: args.state } : { state: args.state, detail: args.detail };
    this.cameraReport = report;
    const problem = CAMERA_PROBLEMS.has(args.state);
    if (problem) this.cameraProblem = report;
    if (args.state === 'active') {
      this.cameraProblem = undefined;
      this.cameraWorked = true;
    }
    if (changed) {
      // On and off happen for every customer; only problems are worth the diagnostics' limited memory.
      if (problem) this.log.warn({ event: 'camera_state', state: args.state }, 'camera problem reported by the screen');
      else this.log.debug({ event: 'camera_state', state: args.state }, 'camera state reported by the screen');
      this.publish();
    }
    return { ok: true };
  };

  // ------------------------------------------------------------ intents: staff

  readonly unlock = (args: Args<'unlock'>): Promise<UnlockResult> => this.staff.unlock(args.pin);

  readonly lock = (): Ok => {
    this.staff.lock();
    return { ok: true };
  };

  readonly setProfile = async (args: Args<'setProfile'>): Promise<Ok> => {
    this.staff.touch();
    if (this.locked.includes('profile')) {
      const refused = lockedErrors({ profile: args.name }, this.locked, this.lockedBy, this.options.managed?.path)[0];
      throw new KioskApiError('invalid_args', `setProfile: ${refused?.message ?? 'the profile cannot be changed here'}`);
    }
    if (!Object.hasOwn(availableProfiles(this.effective), args.name)) throw new KioskApiError('invalid_args', 'setProfile: unknown request profile');
    await this.store.saveSettings({ ...this.store.currentSettings, profile: args.name });
    this.effective = { ...this.effective, profile: args.name };
    if (this.runningConfig) this.runningConfig = { ...this.runningConfig, profile: args.name };
    this.kiosk?.setProfile(args.name);
    this.log.info({ event: 'profile_changed', profile: args.name }, 'request profile changed');
    if (!this.kiosk) this.view = { ...this.view, profile: args.name };
    this.publish();
    return { ok: true };
  };

  readonly getSettings = (): Settings => {
    this.staff.touch();
    return settingsView(this.effective, this.locked, this.lockedBy);
  };

  readonly saveSettings = (update: Args<'saveSettings'>): Promise<SaveResult> => {
    const run = this.saving.then(() => this.save(update));
    this.saving = run.catch(() => undefined);
    return run;
  };

  private async save(update: Args<'saveSettings'>): Promise<SaveResult> {
    this.staff.touch();
    const refused = lockedErrors(update, this.locked, this.lockedBy, this.options.managed?.path);
    if (refused.length > 0) return { ok: false, errors: refused };
    if (update.apiKey !== undefined && update.clearApiKey) {
      return { ok: false, errors: [{ key: 'apiKey', message: 'give a new API key or clear it, not both' }] };
    }
    // Never echo the key: the message says what is wrong with it, not what it is.
    if (update.apiKey !== undefined && !HeaderToken.safeParse(update.apiKey).success) {
      return { ok: false, errors: [{ key: 'apiKey', message: 'an API key is visible ASCII without spaces' }] };
    }
    const nextSettings = PersistedSettings.safeParse(applyUpdate(this.store.currentSettings, update));
    if (!nextSettings.success) {
      return { ok: false, errors: nextSettings.error.issues.slice(0, 20).map((i) => ({ key: i.path.map(String).join('.'), message: i.message })) };
    }
    const nextKey = update.clearApiKey ? undefined : (update.apiKey ?? this.apiKey);
    const candidate = this.resolve(nextSettings.data, nextKey);
    // The stored key belongs to the backend it was entered for: it is never sent to another one, so a new
    // backend address needs its key in the same save (else whoever may edit the address could collect it).
    if (update.apiKey === undefined && !update.clearApiKey && this.apiKey !== undefined && originOf(candidate.config.backend.baseUrl) !== originOf(this.effective.backend.baseUrl)) {
      return { ok: false, errors: [{ key: 'apiKey', message: 'the backend address changed: enter the API key for the new backend (the stored key is only ever sent to the backend it was entered for)' }] };
    }
    const errors = candidate.problem === undefined ? this.candidateErrors(candidate.config) : candidate.errors;
    if (errors.length > 0) return { ok: false, errors };

    // The key first: a secret store that refuses it (no OS keyring, say) leaves everything as it was.
    try {
      if (update.apiKey !== undefined) await this.secrets.set(API_KEY_SECRET, update.apiKey);
      else if (update.clearApiKey) await this.secrets.delete(API_KEY_SECRET);
    } catch (e) {
      const message = `the API key could not be stored: ${errorText(e)}`.slice(0, 1_000);
      this.log.error({ event: 'secret_store_failed' }, message);
      return { ok: false, errors: [{ key: 'apiKey', message }] };
    }
    if (update.apiKey !== undefined || update.clearApiKey) this.secretsProblem = undefined;
    await this.store.saveSettings(nextSettings.data);
    this.apiKey = nextKey;
    this.settingsProblem = undefined;
    this.configProblem = undefined;
    const before = this.runningConfig;
    this.effective = candidate.config;
    this.log.info({ event: 'settings_saved', keys: updatedKeys(update) }, 'settings saved');

    const devicesChanged = !before || !isDeepStrictEqual(before.pcsc, candidate.config.pcsc) || before.ble.roles !== candidate.config.ble.roles;
    if (!this.kiosk || !before || !isDeepStrictEqual(kioskPart(before), kioskPart(candidate.config))) {
      this.requestRebuild(devicesChanged ? 'devices' : 'kiosk');
    } else if (before.profile !== candidate.config.profile) {
      this.kiosk.setProfile(candidate.config.profile);
      this.runningConfig = { ...before, profile: candidate.config.profile };
    }
    if (update.defaultLanguage !== undefined && this.view.phase === 'ready') this.language = candidate.config.ui.defaultLanguage;
    this.publish();
    return { ok: true, settings: settingsView(candidate.config, this.locked, this.lockedBy) };
  }

  readonly changePin = async (args: Args<'changePin'>): Promise<Ok | { ok: false; errors: FieldError[] }> => {
    // The current PIN again: an unlocked screen left alone must not let the next person take the PIN over.
    const check = await this.staff.unlock(args.current);
    if (!check.ok) {
      if (check.reason === 'locked_out') this.staff.lock();
      const message = check.reason === 'wrong_pin' ? `wrong PIN (${check.attemptsLeft ?? 0} attempts left)` : check.reason === 'locked_out' ? 'too many wrong PINs: the staff screens are locked' : 'no staff PIN is set';
      return { ok: false, errors: [{ key: 'current', message }] };
    }
    try {
      await this.staff.setPin(args.next);
    } catch (e) {
      const why = e instanceof ManagedPinError ? e.message : `the PIN could not be stored: ${errorText(e)}`;
      return { ok: false, errors: [{ key: 'next', message: why.slice(0, 1_000) }] };
    }
    this.staff.touch();
    return { ok: true };
  };

  readonly getDiagnostics = (): Diagnostics => {
    this.staff.touch();
    return { ...this.diagnostics.snapshot(this.version, this.startedAt, this.now()), app: this.appStatus() };
  };

  /** The application's status for diagnostics: the shell's report, completed with what the service knows. */
  appStatus(): AppStatus {
    let reported: AppStatus | undefined;
    try {
      reported = this.options.appStatus?.();
    } catch (e) {
      this.log.warn({ event: 'app_status_failed' }, `the application status could not be read: ${errorText(e)}`);
    }
    const managedPath = this.options.managed?.path ?? reported?.managedConfigPath;
    const keys = this.options.managed ? managedKeys(this.options.managed) : (reported?.managedKeys ?? []);
    const secretsProblem = this.secretsProblem ?? reported?.secretsProblem;
    const status: AppStatus = {
      ...reported,
      flavour: reported?.flavour ?? (this.options.testMode ? 'qa' : 'production'),
      secretsProtection: this.secrets.protection,
      managedKeys: keys.slice(0, 100).map((k) => k.slice(0, 200)),
    };
    if (managedPath !== undefined) status.managedConfigPath = managedPath.slice(0, 1_000);
    if (secretsProblem !== undefined) status.secretsProblem = secretsProblem.slice(0, 500);
    return status;
  }

  readonly reportError = (args: Args<'reportError'>): Ok => {
    this.rendererErrors.report(args);
    return { ok: true };
  };

  readonly selfTest = (): { checks: SelfTestCheck[] } => {
    this.staff.touch();
    const camera = this.cameraProblem ?? this.cameraReport;
    const checks = runSelfTest({ view: this.view, ports: this.devices?.ports ?? EMPTY_DEVICES, camera: camera && { ...camera, worked: this.cameraWorked } });
    this.log.info({ event: 'self_test', count: checks.filter((c) => !c.ok).length }, 'self-test run');
    return { checks };
  };
}
