/**
 * The Electron main process, wired: command line, single instance, the `app://kiosk` scheme, paths, the
 * managed configuration, OS-encrypted secrets, log files, the kiosk service with its devices, the locked
 * down window with its IPC, crash recovery, the health record and the updater. The logic lives in the
 * small modules next to this one; this file only puts them in order.
 *
 * Two flavours: `production` (the PC/SC reader and Bluetooth of this machine) and `qa` (always TEST MODE;
 * with no backend configured anywhere it runs on the embedded mock backend and virtual counter that the
 * QA entry injects, and opens the virtual phone page in a second, ordinary window).
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { app, ipcMain, powerSaveBlocker, protocol, safeStorage, session, systemPreferences, type BrowserWindow, type WebContents } from 'electron';
import type { DestinationStream } from 'pino';
import type { AppStatus, UpdateStatus } from '../common/kiosk-api.js';
import { configuredDeviceFactory } from '../service/configured-devices.js';
import { MANAGED_ONLY_KEYS, parseConfig } from '../platform/config.js';
import { createLogger, type Logger } from '../platform/log.js';
import { HealthRecorder } from '../service/health-record.js';
import { KioskService, type DeviceFactory, type KioskServiceOptions } from '../service/kiosk-service.js';
import { openLogFiles, type LogFiles } from '../service/log-files.js';
import { managedAllowsBasicTextSecrets, managedConfigPath, readManagedConfig } from '../service/managed-config.js';
import { managedFileExposure } from '../service/managed-file-mode.js';
import { SettingsStore } from '../service/settings-store.js';
import { hashPin } from '../service/staff-pin.js';
import { originOf } from './app-origin.js';
import { registerAppScheme, serveAppScheme } from './app-scheme.js';
import { readEarlyConfig } from './app-settings.js';
import { startAppUpdates } from './app-updates.js';
import { appArguments, parseCommandLine, USAGE } from './command-line.js';
import { dangerousSwitches } from './dangerous-switches.js';
import { ensureCameraAccess, runProvisioning, type CameraAccess } from './os-consent.js';
import { answerSupportBundleLaunches, appSupportFiles, runSupportBundleCommand } from './support-bundle-command.js';
import { embeddedBanner, kioskLink, type EmbeddedDefault, type EmbeddedSetup } from './embedded-default.js';
import { showFatalScreen } from './fatal-screen.js';
import { registerKioskIpc } from './ipc.js';
import { AppLifecycle, applyStartAtLogin, claimSingleInstance } from './lifecycle.js';
import { RelaunchGuard } from './relaunch-guard.js';
import { logChildProcessDeaths, watchRenderer } from './renderer-watch.js';
import { SafeStorageSecretStore } from './safe-storage-secret-store.js';
import { utilityRadioLauncher } from './radio-launcher.js';
import { openPhoneWindow } from './phone-window.js';
import { installLockdown, OriginRegistry } from './security.js';
import type { AppUpdaterLike, Updater } from './updater.js';
import { createKioskWindow, loadKioskScreen } from './window.js';
import { currentPlatform } from '../platform/os.js';

type Flavour = 'production' | 'qa';

/** Exit status of a production app that refuses a dangerous command-line switch (EX_CONFIG: a supervisor
 *  should not restart it in a loop; systemd: `RestartPreventExitStatus=78`). */
export const EXIT_REFUSED_SWITCH = 78;

/** Seams for tests and the QA entry; every one has the production default. */
export interface KioskAppDependencies {
  /** Devices of the production flavour (and of QA with a configured backend). */
  readonly devices: DeviceFactory;
  readonly env: NodeJS.ProcessEnv;
  readonly platform: NodeJS.Platform;
  /** Unpackaged run (`electron <dir>`): argv carries the app's folder as well. */
  readonly defaultApp: boolean;
  readonly process: Pick<NodeJS.Process, 'on' | 'off'>;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: DestinationStream & { write(text: string): unknown };
  readonly preloadPath: string;
  readonly rendererDir: string;
  readonly managedConfigFile: string;
  /** electron-updater's `autoUpdater`, loaded only when updates are on (it touches Electron when loaded). */
  readonly loadUpdater: () => Promise<AppUpdaterLike>;
  /** Extra service options (tests: a cheap PIN hash, a fixed clock). */
  readonly serviceOptions: Partial<KioskServiceOptions>;
}

export interface RunKioskAppOptions {
  readonly flavour: Flavour;
  readonly embedded?: EmbeddedDefault;
  readonly argv?: readonly string[];
  readonly dependencies?: Partial<KioskAppDependencies>;
}

export interface RunningKioskApp {
  readonly window: BrowserWindow;
  readonly service: KioskService;
  readonly lifecycle: AppLifecycle;
  readonly log: Logger;
  readonly embedded: EmbeddedSetup | undefined;
}

async function loadAutoUpdater(): Promise<AppUpdaterLike> {
  const updater = await import('electron-updater');
  return (updater.default as { autoUpdater: AppUpdaterLike }).autoUpdater;
}

function defaults(given: Partial<KioskAppDependencies> | undefined): KioskAppDependencies {
  const env = given?.env ?? process.env;
  const platform = given?.platform ?? currentPlatform();
  return {
    // Next to the main bundle: dist/app/main.js → dist/app/radio.js, the radio process (ble.process separate).
    devices: configuredDeviceFactory({ nfc: 'pcsc', radioLauncher: utilityRadioLauncher(fileURLToPath(new URL('./radio.js', import.meta.url))) }),
    env,
    platform,
    // Set by Electron for `electron <dir>`; absent (falsy) in an installed app.
    defaultApp: process.defaultApp,
    process,
    stdout: process.stdout,
    stderr: process.stderr,
    // Next to the main bundle: dist/app/main.js → dist/app/preload.cjs and dist/renderer/.
    preloadPath: fileURLToPath(new URL('./preload.cjs', import.meta.url)),
    rendererDir: fileURLToPath(new URL('../renderer/', import.meta.url)),
    managedConfigFile: managedConfigPath(platform, env),
    loadUpdater: loadAutoUpdater,
    serviceOptions: {},
    ...given,
  };
}

/** The staff saved a backend address on the settings screen. */
async function savedBackend(dataDir: string): Promise<boolean> {
  const loaded = await new SettingsStore(dataDir).load();
  return loaded.settings.backendUrl !== undefined;
}

/** Starts the app. Resolves once the kiosk window is up, or with `null` when this launch must end. */
export async function runKioskApp(options: RunKioskAppOptions): Promise<RunningKioskApp | null> {
  const deps = defaults(options.dependencies);
  const { flavour } = options;
  const args = appArguments(options.argv ?? process.argv, deps.defaultApp);
  const cli = parseCommandLine(args);
  if (cli.help) {
    deps.stdout.write(`${USAGE}\n`);
    app.exit(0);
    return null;
  }
  // A packaged production app is locked down whatever its launcher or the kiosk user's files say; the QA
  // flavour and unpackaged runs keep the debugging switches and every config source.
  const development = flavour === 'qa' || !app.isPackaged;
  if (!development) {
    const dangerous = dangerousSwitches(args, deps.platform, (name) => app.commandLine.hasSwitch(name));
    if (dangerous.length > 0) {
      deps.stderr.write(
        `mdl-kiosk: refusing to start: ${dangerous.map((n) => `--${n}`).join(', ')} ${dangerous.length === 1 ? 'is' : 'are'} not allowed in a production kiosk (remote debugging, or security switched off). Remove ${dangerous.length === 1 ? 'it' : 'them'} from the shortcut or service that starts the app; the QA build accepts ${dangerous.length === 1 ? 'it' : 'them'}.\n`,
      );
      app.exit(EXIT_REFUSED_SWITCH);
      return null;
    }
  }
  const managedOnly = development ? undefined : MANAGED_ONLY_KEYS;
  // The single-instance lock first, in the account's default data folder: Electron keeps the lock in the
  // data folder current when it is asked for, so after a --data-dir two launches with different folders
  // would both run and fight over the reader and the radio. The data folder moves only after the lock.
  const moveDataFolder = (): void => {
    if (cli.dataDir !== undefined) app.setPath('userData', resolve(cli.dataDir));
  };
  if (cli.provision) {
    const log = createLogger({ level: cli.logLevel ?? 'warn', name: 'mdl-kiosk-provision' }, deps.stderr);
    await runProvisioning({
      app,
      prefs: systemPreferences,
      platform: deps.platform,
      log,
      stdout: deps.stdout,
      stderr: deps.stderr,
      bluetooth: async () => {
        moveDataFolder();
        const devices = await deps.devices(parseConfig({ ble: { roles: 'both' } }), log);
        const status = (port: { availability(): { usable: boolean; reason?: string } } | undefined): { usable: boolean; reason?: string } =>
          port ? port.availability() : { usable: false, reason: 'not_available' };
        return { roles: () => ({ central: status(devices.ports.bleCentral), peripheral: status(devices.ports.blePeripheral) }), close: () => devices.close() };
      },
    });
    return null;
  }
  if (cli.supportBundle !== undefined) {
    await runSupportBundleCommand({
      app,
      target: cli.supportBundle,
      stdout: deps.stdout,
      stderr: deps.stderr,
      service: () => {
        moveDataFolder();
        const dataDir = app.getPath('userData');
        const managed = readManagedConfig(deps.managedConfigFile);
        const userConfig = join(dataDir, 'config.json');
        const configFile = cli.configFile ?? (deps.env.MDL_KIOSK_CONFIG || !existsSync(userConfig) ? undefined : userConfig);
        return new KioskService({
          devices: () => Promise.reject(new Error('no devices for a support bundle')),
          runKiosk: false,
          dataDir,
          env: deps.env,
          ...(configFile === undefined ? {} : { configFile }),
          overrides: { log: { level: cli.logLevel ?? 'silent' } },
          managed,
          secrets: new SafeStorageSecretStore({ safeStorage, dataDir, platform: deps.platform, allowBasicText: managedAllowsBasicTextSecrets(managed) }),
          ...(managedOnly ? { managedOnlyKeys: managedOnly } : {}),
          testMode: flavour === 'qa',
          version: app.getVersion(),
          appStatus: () => ({ flavour, secretsProtection: 'os-encrypted', managedKeys: [] }),
          support: () => appSupportFiles(dataDir, app.getPath('logs')),
          ...deps.serviceOptions,
        });
      },
    });
    return null;
  }
  if (!claimSingleInstance(app)) return null;
  moveDataFolder();
  registerAppScheme(protocol);

  const problems = [...cli.problems];
  // The configuration is read before Electron is ready: some of it (hardware acceleration) only takes
  // effect then.
  const dataDir = app.getPath('userData');
  const managed = readManagedConfig(deps.managedConfigFile);
  const userConfig = join(dataDir, 'config.json');
  const configFile = cli.configFile ?? (deps.env.MDL_KIOSK_CONFIG || !existsSync(userConfig) ? undefined : userConfig);
  const overrides: Record<string, unknown> = {
    ...(cli.logLevel === undefined ? {} : { log: { level: cli.logLevel } }),
    ...(cli.noKiosk && development ? { app: { kioskMode: false } } : {}),
  };
  const early = readEarlyConfig({
    env: deps.env,
    overrides,
    managed: managed.layer,
    ...(configFile === undefined ? {} : { file: configFile }),
    ...(managedOnly ? { managedOnly } : {}),
  });
  // A kiosk PC whose GPU driver is broken shows a black window: the fleet can turn the GPU off.
  if (!early.app.hardwareAcceleration) app.disableHardwareAcceleration();

  await app.whenReady();
  if (cli.noKiosk && !development) problems.push('--no-kiosk is only honoured in the QA flavour or an unpackaged run (ignored)');
  for (const problem of problems) deps.stderr.write(`mdl-kiosk: ${problem}\n`);
  const logsDir = app.getPath('logs');

  let logFiles: LogFiles | undefined;
  try {
    logFiles = await openLogFiles({ dir: logsDir, ...early.app.logs });
  } catch (e) {
    deps.stderr.write(`mdl-kiosk: the log files in ${logsDir} cannot be opened (logging to stderr): ${e instanceof Error ? e.message : String(e)}\n`);
  }
  const destination: DestinationStream = logFiles?.destination ?? deps.stderr;
  const log = createLogger({ level: early.logLevel, name: 'mdl-kiosk-app' }, destination);
  log.info({ event: 'app_starting', kind: flavour, version: app.getVersion() }, 'the kiosk app is starting');
  for (const problem of problems) log.warn({ event: 'command_line_ignored' }, problem);
  const exposure = managedFileExposure(deps.managedConfigFile, deps.platform);
  if (exposure !== undefined) {
    deps.stderr.write(`mdl-kiosk: ${exposure}\n`);
    log.warn({ event: 'managed_config_exposed' }, exposure);
  }

  // Filled in as they start; the lifecycle's shutdown and the phone page's callbacks read them later.
  const parts: { window?: BrowserWindow; service?: KioskService; embedded?: EmbeddedSetup; updater?: Updater; health?: HealthRecorder } = {};
  const stops: (() => void | Promise<void>)[] = [];
  const lifecycle = new AppLifecycle({
    app,
    powerSaveBlocker,
    log,
    guard: new RelaunchGuard({ file: join(dataDir, 'relaunches.json') }),
    restartBy: early.app.restartBy,
    window: () => parts.window,
    process: deps.process,
    showFatal: (message) => {
      if (!showFatalScreen(parts.window, message, logsDir)) deps.stderr.write(`mdl-kiosk: stopped after repeated errors: ${message}\n`);
    },
    shutdown: async () => {
      parts.updater?.stop();
      for (const stop of stops.splice(0).reverse()) await stop();
      await parts.service?.stop();
      await parts.health?.stop();
      await parts.embedded?.stop();
      log.info({ event: 'app_stopped' }, 'the kiosk app stopped');
      await logFiles?.close();
    },
  });
  lifecycle.start();
  logChildProcessDeaths(app, log);
  applyStartAtLogin(app, { openAtLogin: early.app.startAtLogin, platform: deps.platform, log });

  if (flavour === 'qa' && options.embedded && !early.backendConfigured && !(await savedBackend(dataDir))) {
    try {
      parts.embedded = await options.embedded.start(log.child({ component: 'embedded' }), kioskLink(() => parts.service));
      deps.stdout.write(embeddedBanner(parts.embedded));
    } catch (e) {
      // The kiosk still starts: with no backend it shows staff what to configure.
      const why = `the embedded mock backend and virtual counter could not start: ${e instanceof Error ? e.message : String(e)}`;
      log.error({ event: 'embedded_default_failed' }, why);
      deps.stderr.write(`mdl-kiosk: ${why}\n`);
    }
  }

  // Before the kiosk window can cover the system prompt (macOS asks here; the answer goes to diagnostics).
  const cameraAccess: CameraAccess = await ensureCameraAccess(systemPreferences, deps.platform, log);
  let updateStatus: UpdateStatus = { state: 'disabled' };
  const healthFile = join(dataDir, 'health.json');
  const appStatus = (): AppStatus => ({
    flavour,
    secretsProtection: 'os-encrypted',
    managedKeys: [],
    ...(logFiles ? { logDir: logFiles.dir } : {}),
    updates: updateStatus,
    healthFile,
    cameraAccess,
    // Staff see it on the diagnostics screen with the private files other users could read.
    ...(exposure === undefined ? {} : { permissionProblems: [exposure] }),
  });
  const { embedded } = parts;
  const service = new KioskService({
    devices: embedded?.devices ?? deps.devices,
    dataDir,
    env: deps.env,
    ...(configFile === undefined ? {} : { configFile }),
    overrides: embedded ? { ...overrides, staff: { pinHash: await hashPin(embedded.staffPin) } } : overrides,
    managed,
    secrets: new SafeStorageSecretStore({ safeStorage, dataDir, platform: deps.platform, allowBasicText: managedAllowsBasicTextSecrets(managed) }),
    ...(embedded ? { backendOverride: embedded.backendOverride } : {}),
    testMode: flavour === 'qa',
    ...(managedOnly ? { managedOnlyKeys: managedOnly } : {}),
    logDestination: destination,
    version: app.getVersion(),
    appStatus,
    support: () => appSupportFiles(dataDir, logsDir),
    ...deps.serviceOptions,
  });
  parts.service = service;
  answerSupportBundleLaunches(app, () => parts.service, deps.defaultApp, log);
  await service.start();
  const config = service.config.app;

  serveAppScheme(protocol, deps.rendererDir);
  const registry = new OriginRegistry();
  installLockdown(app, { navigationOrigin: (c) => registry.navigationOrigin(c), isKioskScreen: (c) => registry.isKioskScreen(c), cameraSession: session.defaultSession }, log);

  // With the virtual phone in a window of its own, the kiosk window must not cover the screen.
  const kioskMode = config.kioskMode && embedded === undefined;
  const kioskWindow = createKioskWindow({
    kioskMode,
    devTools: config.devTools && development,
    preloadPath: deps.preloadPath,
    contentProtection: flavour === 'production',
    isQuitting: () => lifecycle.quitting,
    log,
    platform: deps.platform,
  });
  parts.window = kioskWindow;
  registry.setKioskScreen(kioskWindow.webContents);
  // The kiosk window is one screen of the service: its staff session is its own.
  const screen = service.connectScreen();
  const ipc = registerKioskIpc({ ipcMain, contents: kioskWindow.webContents, service: screen, log });
  stops.push(() => {
    ipc.dispose();
    screen.close();
  });
  stops.push(
    watchRenderer({
      window: kioskWindow,
      contents: kioskWindow.webContents,
      log,
      isQuitting: () => lifecycle.quitting,
      onCrashLoop: () => lifecycle.relaunch('renderer_crash_loop', 'the kiosk screen kept crashing'),
    }),
  );
  // Outside kiosk mode the window can be closed: that ends the app.
  kioskWindow.on('closed', () => {
    parts.window = undefined;
    if (!lifecycle.quitting) app.quit();
  });
  void loadKioskScreen(kioskWindow, log);

  if (embedded) {
    const phoneOrigin = originOf(embedded.phonePageUrl);
    if (phoneOrigin === null) log.error({ event: 'phone_page_url_invalid' }, 'the virtual phone page has no http origin; not opening it');
    else openPhoneWindow({ url: embedded.phonePageUrl, confine: (c: WebContents) => registry.confine(c, phoneOrigin), log });
  }

  parts.health = new HealthRecorder({
    service,
    file: healthFile,
    flavour,
    everySeconds: config.health.everySeconds,
    ...(config.health.metricsFile === undefined ? {} : { metricsFile: config.health.metricsFile }),
    updates: () => updateStatus,
  });
  parts.health.start();

  parts.updater = await startAppUpdates({
    flavour,
    config: config.updates,
    loadUpdater: deps.loadUpdater,
    isIdle: () => service.isIdle(),
    platform: deps.platform,
    installDir: dirname(app.getPath('exe')),
    log: log.child({ component: 'updater' }),
    onStatus: (status) => {
      updateStatus = status;
    },
  });

  log.info({ event: 'app_started', kind: flavour, state: service.state().view.phase }, 'the kiosk app is up');
  return { window: kioskWindow, service, lifecycle, log, embedded };
}
