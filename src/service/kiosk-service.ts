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
import { join } from 'node:path';
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
import { KioskConfigSchema, mergeConfig, mergeConfigSources, parseConfig, readApiKeyFile, type KioskConfig } from '../platform/config.js';
import { stripScannerTerminator, type Kiosk, type VerificationReport } from '../kiosk/kiosk.js';
import { createLogger, type Logger } from '../platform/log.js';
import { availableProfiles } from '../kiosk/profiles.js';
import { bindingProblem, decodeStoredApiKey, encodeStoredApiKey, originOf, type KeyBindings, type MachineKey, type StoredApiKey } from './api-key-binding.js';
import { DiagnosticsLog } from './diagnostics.js';
import { managedKeys, type ManagedConfig } from './managed-config.js';
import { tightenPrivateFiles } from './private-files.js';
import { runtimeVersions, writeSupportBundle, type SupportBundle } from './support-bundle.js';
import { supportReport } from './support-report.js';
import { RendererErrorLog } from './renderer-errors.js';
import { API_KEY_SECRET, FileSecretStore, type SecretStore } from './secret-store.js';
import { runSelfTest } from './self-test.js';
import {
  applyUpdate,
  backendUrlTiedToKey,
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

/** One screen connected to the service: the `KioskApi` with its own staff session and state stream. */
export type ScreenConnection = KioskApiHandlers & {
  state(): ScreenState;
  onState(listener: (state: ScreenState) => void): () => void;
  staffUnlocked(): boolean;
  /** The screen is gone: its staff session ends. */
  close(): void;
};

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
  /**
   * Keys honoured only from the managed file (a packaged production app passes MANAGED_ONLY_KEYS): their
   * values from any other source are ignored, and each one ignored is logged once.
   */
  readonly managedOnlyKeys?: readonly string[];
  /**
   * What the shell adds to a support bundle: its log folder, files such as the health and relaunch
   * records (by name in the bundle), secrets of its own to scrub (the browser host's token), and where
   * the staff screen's bundles go (default `<dataDir>/support`).
   */
  /**
   * false: load the configuration, settings and secrets but open no device and start no kiosk (a support
   * bundle made while another copy of the kiosk owns the reader and the radio, and must not be disturbed).
   */
  readonly runKiosk?: boolean;
  readonly support?: () => { readonly logDir?: string; readonly files?: Record<string, string>; readonly secrets?: readonly string[]; readonly dir?: string };
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
/** The connection id of the service's own handlers. */
const SERVICE_SCREEN = 'service';
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
  /** The backend address is locked because the API key's source is. */
  private readonly urlTiedToKey: boolean;
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
  /** The key saved on the settings screen, with the origin it was entered for. */
  private stored: StoredApiKey | undefined;
  /** Origin of the machine configuration's key at start, when that configuration gives no address. */
  private machineStartOrigin: string | null | undefined;
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
    const lockSourceLayers = {
      env: this.env,
      ...(options.overrides ? { overrides: options.overrides } : {}),
      ...(options.managed ? { managed: options.managed.layer } : {}),
      backendOverride: options.backendOverride !== undefined,
    };
    this.lockedBy = lockSources(lockSourceLayers);
    this.urlTiedToKey = backendUrlTiedToKey(lockSourceLayers);
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
    let legacyKey: string | undefined;
    try {
      const text = await this.secrets.get(API_KEY_SECRET);
      const decoded = text === undefined ? undefined : decodeStoredApiKey(text);
      if (decoded?.origin !== undefined) this.stored = { key: decoded.key, origin: decoded.origin };
      else legacyKey = decoded?.key;
    } catch (e) {
      // Not fatal by itself: the kiosk runs on a key from another source (managed file, environment),
      // staff see the problem, and saving a key on the settings screen replaces the unreadable one.
      this.secretsProblem = `the stored API key cannot be read: ${errorText(e)}`.slice(0, 500);
    }
    if (legacyKey !== undefined) {
      // Stored before keys were bound: bound now to the backend it has been used with.
      const unbound = this.resolve(this.store.currentSettings, legacyKey);
      this.stored = { key: legacyKey, origin: unbound.problem === undefined ? originOf(unbound.config.backend.baseUrl) : null };
    }
    const atStart = this.resolve(this.store.currentSettings, this.stored?.key);
    const machine = this.machineKey(this.store.currentSettings);
    if (machine.origin === null && machine.key !== undefined && atStart.problem === undefined && atStart.config.backend.apiKey === machine.key) {
      this.machineStartOrigin = originOf(atStart.config.backend.baseUrl);
    }
    const resolved = this.resolveBound(this.store.currentSettings, this.stored);
    this.effective = resolved.config;
    this.configProblem = resolved.problem;
    this.log = this.createLog(this.effective.log.level);
    for (const key of this.ignoredKeys) this.logIgnoredKey(...(key.split('|') as [string, string]));
    this.permissionProblems = await tightenPrivateFiles([this.store.path, ...(this.secrets.path === undefined ? [] : [this.secrets.path])]);
    for (const problem of this.permissionProblems) this.log.warn({ event: 'private_file_exposed' }, problem);
    if (legacyKey !== undefined && this.stored) await this.storeKey(this.stored);
    if (this.managedProblem !== undefined) this.log.error({ event: 'managed_config_invalid' }, this.managedProblem);
    if (this.secretsProblem !== undefined) this.log.warn({ event: 'secret_store_failed' }, this.secretsProblem);
    for (const problem of loaded.problems) this.log.warn({ event: 'settings_file_invalid' }, problem);
    this.language = this.effective.ui.defaultLanguage;
    if (this.options.runKiosk === false) {
      this.phase = 'running';
      this.setView(serviceView('stopped', this.effective.profile, deviceStatus(EMPTY_DEVICES), this.now()));
      this.log.info({ event: 'service_started', state: 'stopped' }, 'kiosk service started without devices or kiosk');
      return;
    }
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

  /** The service's own screen (see `own`) has a staff session. */
  staffUnlocked(): boolean {
    return this.staff.unlocked(SERVICE_SCREEN);
  }

  /**
   * Writes a support bundle (src/service/support-bundle.ts) to `target`, or into the support folder with a
   * name of its time: versions, the configuration without secrets and each key's source, state, devices,
   * self-test, diagnostics, the shell's records and recent logs — scrubbed of every secret the kiosk knows.
   */
  async writeSupportBundleTo(target?: string): Promise<SupportBundle> {
    const shell = this.options.support?.() ?? {};
    const machine = this.machineKey(this.store.currentSettings);
    const report = supportReport({
      version: this.version,
      flavour: this.appStatus().flavour,
      config: this.effective,
      layers: {
        ...(this.options.configFile === undefined ? {} : { configFile: this.options.configFile }),
        env: this.env,
        settings: settingsLayer(this.store.currentSettings, this.stored?.key),
        ...(this.options.overrides ? { overrides: this.options.overrides } : {}),
        ...(this.options.managed ? { managed: this.options.managed.layer } : {}),
        ...(this.options.backendOverride ? { testSetup: { backend: { baseUrl: this.options.backendOverride.baseUrl, apiKey: this.options.backendOverride.apiKey } } } : {}),
      },
      ignoredKeys: [...this.ignoredKeys].map((k) => k.replace('|', ': ')),
      problems: { managed: this.managedProblem, settings: this.settingsProblem, config: this.configProblem, secrets: this.secretsProblem },
      state: this.current,
      diagnostics: { ...this.diagnostics.snapshot(this.version, this.startedAt, this.now()), app: this.appStatus() },
      selfTest: this.runSelfTest().checks,
      secrets: [
        this.effective.backend.apiKey,
        this.stored?.key,
        machine.key,
        this.options.backendOverride?.apiKey,
        this.effective.staff.pinHash,
        this.store.currentStaff.pinHash,
        managedPinHash(this.options.managed?.layer, this.options.overrides),
        ...(shell.secrets ?? []),
      ],
      versions: runtimeVersions(),
    });
    const stamp = new Date(this.now()).toISOString().replace(/[:.]/g, '-');
    const path = target ?? join(shell.dir ?? join(this.options.dataDir, 'support'), `mdl-kiosk-support-${stamp}.tar.gz`);
    const bundle = await writeSupportBundle(path, {
      parts: report.parts,
      ...(shell.files ? { files: shell.files } : {}),
      ...(shell.logDir === undefined ? {} : { logDir: shell.logDir }),
      secrets: report.secrets,
      now: this.now,
    });
    this.log.info({ event: 'support_bundle_written', count: bundle.bytes }, `support bundle written to ${bundle.path}`);
    return bundle;
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
    return this.phase === 'running' && IDLE_PHASES.has(this.view.phase) && !this.staff.anyUnlocked();
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
      staff: this.staff.state(SERVICE_SCREEN),
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
    // Any screen's session: staff at the counter end the customer's visit, whichever screen they use.
    const unlocked = this.staff.anyUnlocked();
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
        ...(this.options.managedOnlyKeys ? { managedOnly: this.options.managedOnlyKeys, onIgnored: (source, path) => this.ignoredKey(source, path) } : {}),
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

  /** A managed-only key set elsewhere: logged once (it shows in the diagnostics' events). */
  private ignoredKey(source: string, path: string): void {
    const key = `${source}|${path}`;
    if (this.ignoredKeys.has(key)) return;
    this.ignoredKeys.add(key);
    if (this.phase !== 'new') this.logIgnoredKey(source, path);
  }

  private logIgnoredKey(source: string, path: string): void {
    this.log.warn(
      { event: 'config_key_ignored', keys: [path], source: source.replace(/ /g, '_') },
      `${path} from the ${source} is ignored: a production kiosk takes it only from the managed configuration file`,
    );
  }

  private readonly ignoredKeys = new Set<string>();
  /** Private files found readable by others at start (see private-files.ts). */
  private permissionProblems: string[] = [];

  /** The configuration with these saved settings, refused when its key would go to another backend. */
  private resolveBound(settings: PersistedSettings, stored: StoredApiKey | undefined): { config: KioskConfig; problem?: string; errors: FieldError[] } {
    const resolved = this.resolve(settings, stored?.key);
    if (resolved.problem !== undefined) return resolved;
    const problem = bindingProblem(resolved.config.backend.apiKey, resolved.config.backend.baseUrl, this.bindings(stored, settings));
    return problem === undefined ? resolved : { config: resolved.config, problem, errors: [{ key: 'apiKey', message: problem }] };
  }

  private bindings(stored: StoredApiKey | undefined, settings: PersistedSettings): KeyBindings {
    return { stored, machine: this.machineKey(settings), machineStartOrigin: this.machineStartOrigin };
  }

  /** The key and address the machine's configuration gives: every source but the settings screen. */
  private machineKey(settings: PersistedSettings): MachineKey {
    const withoutBackend: PersistedSettings = { ...settings };
    delete withoutBackend.backendUrl;
    const resolved = this.resolve(withoutBackend, undefined);
    const sources: Partial<Record<LockSource, string>> = {
      environment: 'the environment',
      command_line: 'the command line',
      managed: 'the managed configuration file',
      test_setup: 'the test setup',
    };
    const lockedBy = this.lockedBy.get('apiKey');
    return {
      key: resolved.problem === undefined ? resolved.config.backend.apiKey : undefined,
      origin: resolved.problem === undefined ? originOf(resolved.config.backend.baseUrl) : null,
      source: (lockedBy && sources[lockedBy]) ?? 'the configuration file',
    };
  }

  /** Stores the key in its bound form; a store that refuses is reported, the key still works this run. */
  private async storeKey(stored: StoredApiKey): Promise<void> {
    try {
      await this.secrets.set(API_KEY_SECRET, encodeStoredApiKey(stored));
    } catch (e) {
      this.log.warn({ event: 'secret_store_failed' }, `the API key could not be stored again with its backend: ${errorText(e)}`.slice(0, 500));
    }
  }

  /**
   * Field errors of a candidate configuration beyond its schema: the TLS rule, the profile's existence and
   * the API key's binding to its backend.
   */
  private candidateErrors(config: KioskConfig, stored: StoredApiKey | undefined, settings: PersistedSettings): FieldError[] {
    const errors: FieldError[] = [];
    const keyProblem = bindingProblem(config.backend.apiKey, config.backend.baseUrl, this.bindings(stored, settings));
    if (keyProblem !== undefined) errors.push({ key: 'apiKey', message: keyProblem.slice(0, 1_000) });
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
      kiosk = createKiosk(this.effective, ports, this.log.child({ component: 'kiosk' }), { now: this.now, env: this.env, readinessGate: true });
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
      const resolved = this.resolveBound(this.store.currentSettings, this.stored);
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

  /**
   * The `KioskApi` of one screen connection: the customer intents are the kiosk's; the staff session is
   * the connection's own (src/service/staff-pin.ts), and each staff action extends only that session.
   */
  private handlersFor(connection: string): KioskApiHandlers {
    const staffAction =
      <A extends unknown[], R>(run: (...args: A) => R) =>
      (...args: A): R => {
        this.staff.touch(connection);
        return run(...args);
      };
    return {
      qrScanned: (args) => this.qrScanned(args),
      next: () => this.next(),
      retry: () => this.retry(),
      cancel: () => this.cancel(),
      setLanguage: (args) => this.setLanguage(args),
      reportCamera: (args) => this.reportCamera(args),
      reportError: (args) => this.reportError(args),
      unlock: (args) => this.staff.unlock(args.pin, connection),
      lock: () => {
        this.staff.lock(connection);
        return { ok: true };
      },
      setProfile: staffAction((args: Args<'setProfile'>) => this.applyProfile(args)),
      getSettings: staffAction(() => settingsView(this.effective, this.locked, this.lockedBy)),
      saveSettings: staffAction((update: Args<'saveSettings'>) => this.queueSave(update)),
      changePin: (args) => this.changePinOn(connection, args),
      getDiagnostics: staffAction(() => ({ ...this.diagnostics.snapshot(this.version, this.startedAt, this.now()), app: this.appStatus() })),
      selfTest: staffAction(() => this.runSelfTest()),
      writeSupportBundle: staffAction(() => this.supportBundleIntent()),
    };
  }

  /**
   * A screen connected to the kiosk (the Electron kiosk window, a browser-host socket): the `KioskApi`
   * with a staff session of its own, and the state stream as this screen sees it. `close()` ends its
   * staff session.
   */
  connectScreen(): ScreenConnection {
    const id = `screen-${++this.screenCount}`;
    const handlers = this.handlersFor(id);
    const listeners = new Set<(state: ScreenState) => void>();
    const view = (state: ScreenState): ScreenState => ({ ...state, staff: this.staff.state(id) });
    const off = this.onState((state) => {
      for (const listener of listeners) this.safeCall(listener, view(state));
    });
    let closed = false;
    return {
      ...handlers,
      state: () => view(this.current),
      onState: (listener) => {
        listeners.add(listener);
        this.safeCall(listener, view(this.current));
        return () => listeners.delete(listener);
      },
      staffUnlocked: () => !closed && this.staff.unlocked(id),
      close: () => {
        if (closed) return;
        closed = true;
        off();
        listeners.clear();
        this.staff.lock(id);
      },
    };
  }

  private screenCount = 0;
  /** The service's own handlers (tests, the QA demo's scanner link) act as one screen of their own. */
  private readonly own = this.handlersFor(SERVICE_SCREEN);

  readonly unlock = (args: Args<'unlock'>): Promise<UnlockResult> => this.staff.unlock(args.pin, SERVICE_SCREEN);
  readonly lock = (): Ok => {
    this.staff.lock(SERVICE_SCREEN);
    return { ok: true };
  };
  readonly setProfile = (args: Args<'setProfile'>): Promise<Ok> => this.own.setProfile(args) as Promise<Ok>;
  readonly getSettings = (): Settings => this.own.getSettings({}) as Settings;
  readonly saveSettings = (update: Args<'saveSettings'>): Promise<SaveResult> => this.own.saveSettings(update) as Promise<SaveResult>;
  readonly changePin = (args: Args<'changePin'>): Promise<Ok | { ok: false; errors: FieldError[] }> => this.changePinOn(SERVICE_SCREEN, args);
  readonly getDiagnostics = (): Diagnostics => this.own.getDiagnostics({}) as Diagnostics;
  readonly selfTest = (): { checks: SelfTestCheck[] } => this.own.selfTest({}) as { checks: SelfTestCheck[] };
  readonly writeSupportBundle = (): Promise<{ path: string; bytes: number }> => this.own.writeSupportBundle({}) as Promise<{ path: string; bytes: number }>;

  private async supportBundleIntent(): Promise<{ path: string; bytes: number }> {
    const bundle = await this.writeSupportBundleTo();
    return { path: bundle.path, bytes: bundle.bytes };
  }

  private async applyProfile(args: Args<'setProfile'>): Promise<Ok> {
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
  }

  private queueSave(update: Args<'saveSettings'>): Promise<SaveResult> {
    const run = this.saving.then(() => this.save(update));
    this.saving = run.catch(() => undefined);
    return run;
  }

  private async save(update: Args<'saveSettings'>): Promise<SaveResult> {
    const refused = lockedErrors(update, this.locked, this.lockedBy, this.options.managed?.path, this.urlTiedToKey);
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
    const candidate = this.resolve(nextSettings.data, update.clearApiKey ? undefined : (update.apiKey ?? this.stored?.key));
    // A new key is bound to the backend it is entered with; any other key keeps its binding, so a new
    // backend address needs its key in the same save (else whoever may edit the address could collect it).
    const nextStored: StoredApiKey | undefined =
      update.apiKey !== undefined ? { key: update.apiKey, origin: originOf(candidate.config.backend.baseUrl) } : update.clearApiKey ? undefined : this.stored;
    const errors = candidate.problem === undefined ? this.candidateErrors(candidate.config, nextStored, nextSettings.data) : candidate.errors;
    if (errors.length > 0) return { ok: false, errors };

    // The key first: a secret store that refuses it (no OS keyring, say) leaves everything as it was.
    try {
      if (update.apiKey !== undefined && nextStored) await this.secrets.set(API_KEY_SECRET, encodeStoredApiKey(nextStored));
      else if (update.clearApiKey) await this.secrets.delete(API_KEY_SECRET);
    } catch (e) {
      const message = `the API key could not be stored: ${errorText(e)}`.slice(0, 1_000);
      this.log.error({ event: 'secret_store_failed' }, message);
      return { ok: false, errors: [{ key: 'apiKey', message }] };
    }
    if (update.apiKey !== undefined || update.clearApiKey) this.secretsProblem = undefined;
    await this.store.saveSettings(nextSettings.data);
    this.stored = nextStored;
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

  private async changePinOn(connection: string, args: Args<'changePin'>): Promise<Ok | { ok: false; errors: FieldError[] }> {
    // The current PIN again: an unlocked screen left alone must not let the next person take the PIN over.
    const check = await this.staff.unlock(args.current, connection);
    if (!check.ok) {
      if (check.reason === 'locked_out') this.staff.lock(connection);
      const message = check.reason === 'wrong_pin' ? `wrong PIN (${check.attemptsLeft ?? 0} attempts left)` : check.reason === 'locked_out' ? 'too many wrong PINs: the staff screens are locked' : 'no staff PIN is set';
      return { ok: false, errors: [{ key: 'current', message }] };
    }
    try {
      await this.staff.setPin(args.next);
    } catch (e) {
      const why = e instanceof ManagedPinError ? e.message : `the PIN could not be stored: ${errorText(e)}`;
      return { ok: false, errors: [{ key: 'next', message: why.slice(0, 1_000) }] };
    }
    this.staff.touch(connection);
    return { ok: true };
  }

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
    if (this.permissionProblems.length > 0) status.permissionProblems = this.permissionProblems.slice(0, 10).map((p) => p.slice(0, 500));
    return status;
  }

  readonly reportError = (args: Args<'reportError'>): Ok => {
    this.rendererErrors.report(args);
    return { ok: true };
  };

  private runSelfTest(): { checks: SelfTestCheck[] } {
    const camera = this.cameraProblem ?? this.cameraReport;
    const checks = runSelfTest({ view: this.view, ports: this.devices?.ports ?? EMPTY_DEVICES, camera: camera && { ...camera, worked: this.cameraWorked } });
    this.log.info({ event: 'self_test', count: checks.filter((c) => !c.ok).length }, 'self-test run');
    return { checks };
  }
}
