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
import { dirname, join, resolve } from 'node:path';
import { app, powerSaveBlocker, protocol, systemPreferences, type BrowserWindow } from 'electron';
import type { UpdateStatus } from '../common/kiosk-api.js';
import { MANAGED_ONLY_KEYS, type KioskConfig } from '../platform/config.js';
import type { Logger } from '../platform/log.js';
import { HealthRecorder } from '../service/health-record.js';
import type { KioskService } from '../service/kiosk-service.js';
import { SettingsStore } from '../service/settings-store.js';
import { appDependencies, type KioskAppDependencies } from './app-dependencies.js';
import { openAppLog } from './app-log.js';
import { registerAppScheme } from './app-scheme.js';
import { appStatusOf, createAppService } from './app-service.js';
import { startAppUpdates } from './app-updates.js';
import { appArguments, parseCommandLine, type CommandLine } from './command-line.js';
import { embeddedBanner, kioskLink, type EmbeddedDefault, type EmbeddedSetup } from './embedded-default.js';
import { showFatalScreen } from './fatal-screen.js';
import { openKioskScreen, openVirtualPhonePage } from './kiosk-screen.js';
import { readLaunchConfig } from './launch-config.js';
import { AppLifecycle, applyStartAtLogin, claimSingleInstance, type LifecycleOptions } from './lifecycle.js';
import { inspectInstalledAsar } from './installed-asar.js';
import {
  refuseModifiedApp,
  refusedDangerousSwitches,
  runProvisioningLaunch,
  runSupportBundleLaunch,
  showUsage,
} from './one-shot-launches.js';
import { ensureCameraAccess } from './os-consent.js';
import { RelaunchGuard } from './relaunch-guard.js';
import { logChildProcessDeaths } from './renderer-watch.js';
import { answerSupportBundleLaunches } from './support-bundle-command.js';
import type { Updater } from './updater.js';
import { errorText } from '../common/error-text.js';

export type { KioskAppDependencies } from './app-dependencies.js';
export { EXIT_REFUSED_SWITCH } from './one-shot-launches.js';

type Flavour = 'production' | 'qa';

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

/** The parts as they start: the lifecycle's shutdown and the phone page's callbacks read them later. */
interface AppParts {
  window?: BrowserWindow;
  service?: KioskService;
  embedded?: EmbeddedSetup;
  updater?: Updater;
  health?: HealthRecorder;
  /** Undone at shutdown, last first. */
  readonly stops: (() => void | Promise<void>)[];
}

/**
 * Moves the data folder to `--data-dir`, called only after the single-instance lock: the lock is taken in
 * the account's default data folder, since Electron keeps it in the data folder current when it is asked
 * for, so after a --data-dir two launches with different folders would both run and fight over the reader
 * and the radio.
 */
function dataFolderMover(cli: CommandLine): () => void {
  return () => {
    if (cli.dataDir !== undefined) app.setPath('userData', resolve(cli.dataDir));
  };
}

/** The staff saved a backend address on the settings screen. */
async function savedBackend(dataDir: string): Promise<boolean> {
  const loaded = await new SettingsStore(dataDir).load();
  return loaded.settings.backendUrl !== undefined;
}

/** Crash recovery, relaunch and an orderly shutdown of whatever has started (`parts`), then the log files. */
function startLifecycle(
  parts: AppParts,
  options: {
    deps: KioskAppDependencies;
    dataDir: string;
    logsDir: string;
    restartBy: LifecycleOptions['restartBy'];
    log: Logger;
    closeLog: () => Promise<void>;
  },
): AppLifecycle {
  const { deps, log } = options;
  const lifecycle = new AppLifecycle({
    app,
    powerSaveBlocker,
    log,
    guard: new RelaunchGuard({ file: join(options.dataDir, 'relaunches.json') }),
    restartBy: options.restartBy,
    window: () => parts.window,
    process: deps.process,
    showFatal: (message) => {
      if (!showFatalScreen(parts.window, message, options.logsDir))
        deps.stderr.write(`mdl-kiosk: stopped after repeated errors: ${message}\n`);
    },
    shutdown: async () => {
      parts.updater?.stop();
      for (const stop of parts.stops.splice(0).reverse()) await stop();
      await parts.service?.stop();
      await parts.health?.stop();
      await parts.embedded?.stop();
      log.info({ event: 'app_stopped' }, 'the kiosk app stopped');
      await options.closeLog();
    },
  });
  lifecycle.start();
  return lifecycle;
}

/** QA with no backend anywhere: the embedded mock backend and virtual counter, or undefined (the kiosk still starts and shows staff what to configure). */
async function startEmbeddedDefault(
  embedded: EmbeddedDefault,
  parts: AppParts,
  deps: KioskAppDependencies,
  log: Logger,
): Promise<EmbeddedSetup | undefined> {
  try {
    const setup = await embedded.start(
      log.child({ component: 'embedded' }),
      kioskLink(() => parts.service),
    );
    deps.stdout.write(embeddedBanner(setup));
    return setup;
  } catch (e) {
    const why = `the embedded mock backend and virtual counter could not start: ${errorText(e)}`;
    log.error({ event: 'embedded_default_failed' }, why);
    deps.stderr.write(`mdl-kiosk: ${why}\n`);
    return undefined;
  }
}

/** The health record a supervisor or fleet tool reads (and the metrics file when one is configured), written every few seconds. */
function startHealthRecord(
  service: KioskService,
  options: { file: string; flavour: Flavour; health: KioskConfig['app']['health']; updates: () => UpdateStatus },
): HealthRecorder {
  const { health } = options;
  const recorder = new HealthRecorder({
    service,
    file: options.file,
    flavour: options.flavour,
    everySeconds: health.everySeconds,
    ...(health.metricsFile === undefined ? {} : { metricsFile: health.metricsFile }),
    updates: options.updates,
  });
  recorder.start();
  return recorder;
}

/** The updater of a production app (in the app's own folder), or undefined when updates are off here. */
async function startUpdates(
  service: KioskService,
  options: {
    deps: KioskAppDependencies;
    flavour: Flavour;
    config: KioskConfig['app']['updates'];
    log: Logger;
    onStatus: (status: UpdateStatus) => void;
  },
): Promise<Updater | undefined> {
  return startAppUpdates({
    flavour: options.flavour,
    config: options.config,
    loadUpdater: options.deps.loadUpdater,
    isIdle: () => service.isIdle(),
    platform: options.deps.platform,
    installDir: dirname(app.getPath('exe')),
    log: options.log.child({ component: 'updater' }),
    onStatus: options.onStatus,
  });
}

/** Starts the app. Resolves once the kiosk window is up, or with `null` when this launch must end. */
export async function runKioskApp(options: RunKioskAppOptions): Promise<RunningKioskApp | null> {
  const deps = appDependencies(options.dependencies);
  const { flavour } = options;
  const args = appArguments(options.argv ?? process.argv, deps.defaultApp);
  const cli = parseCommandLine(args);
  if (cli.help) return showUsage(deps);
  // A packaged production app is locked down whatever its launcher or the kiosk user's files say; the QA
  // flavour and unpackaged runs keep the debugging switches and every config source.
  const development = flavour === 'qa' || !app.isPackaged;
  if (!development && refusedDangerousSwitches(args, deps)) return null;
  // Before anything else is loaded or opened. Only Linux has a recorded digest to compare (installed-asar.ts).
  const installed = inspectInstalledAsar(deps.resourcesPath, !development && deps.platform === 'linux');
  if (installed.state === 'refused' && !development) return refuseModifiedApp(installed.reason, deps);
  const asarSha256 = installed.state === 'unpackaged' ? undefined : installed.sha256;
  const managedOnly = development ? undefined : MANAGED_ONLY_KEYS;
  const moveDataFolder = dataFolderMover(cli);
  if (cli.provision) return runProvisioningLaunch(cli, deps, moveDataFolder);
  if (cli.supportBundle !== undefined)
    return runSupportBundleLaunch({ cli, target: cli.supportBundle, deps, flavour, managedOnly, moveDataFolder });
  if (!claimSingleInstance(app)) return null;
  moveDataFolder();
  registerAppScheme(protocol);

  // The configuration is read before Electron is ready: some of it (hardware acceleration) only takes effect then.
  const dataDir = app.getPath('userData');
  const launch = readLaunchConfig({ cli, dataDir, env: deps.env, managedConfigFile: deps.managedConfigFile, development, managedOnly });
  // A kiosk PC whose GPU driver is broken shows a black window: the fleet can turn the GPU off.
  if (!launch.early.app.hardwareAcceleration) app.disableHardwareAcceleration();

  await app.whenReady();
  const problems = [
    ...cli.problems,
    ...(cli.noKiosk && !development ? ['--no-kiosk is only honoured in the QA flavour or an unpackaged run (ignored)'] : []),
  ];
  const logsDir = app.getPath('logs');
  const { log, logFiles, destination, exposure } = await openAppLog({
    logsDir,
    early: launch.early,
    flavour,
    version: app.getVersion(),
    problems,
    deps,
  });

  const parts: AppParts = { stops: [] };
  const lifecycle = startLifecycle(parts, {
    deps,
    dataDir,
    logsDir,
    restartBy: launch.early.app.restartBy,
    log,
    closeLog: async () => logFiles?.close(),
  });
  logChildProcessDeaths(app, log);
  applyStartAtLogin(app, { openAtLogin: launch.early.app.startAtLogin, platform: deps.platform, log });
  if (flavour === 'qa' && options.embedded && !launch.early.backendConfigured && !(await savedBackend(dataDir))) {
    parts.embedded = await startEmbeddedDefault(options.embedded, parts, deps, log);
  }
  // Before the kiosk window can cover the system prompt (macOS asks here; the answer goes to diagnostics).
  const cameraAccess = await ensureCameraAccess(systemPreferences, deps.platform, log);

  let updateStatus: UpdateStatus = { state: 'disabled' };
  const healthFile = join(dataDir, 'health.json');
  const appStatus = appStatusOf({ flavour, logFiles, updates: () => updateStatus, healthFile, cameraAccess, exposure });
  const { embedded } = parts;
  const service = await createAppService({
    deps,
    flavour,
    dataDir,
    logsDir,
    launch,
    managedOnly,
    embedded,
    logDestination: destination,
    appStatus,
    asarSha256,
  });
  parts.service = service;
  answerSupportBundleLaunches(app, () => parts.service, deps.defaultApp, log);
  await service.start();
  const config = service.config.app;

  const screen = openKioskScreen({
    service,
    deps,
    // With the virtual phone in a window of its own, the kiosk window must not cover the screen.
    kioskMode: config.kioskMode && embedded === undefined,
    devTools: config.devTools && development,
    contentProtection: flavour === 'production',
    isQuitting: () => lifecycle.quitting,
    onCrashLoop: () => lifecycle.relaunch('renderer_crash_loop', 'the kiosk screen kept crashing'),
    onClosed: () => {
      parts.window = undefined;
    },
    log,
  });
  parts.window = screen.window;
  parts.stops.push(...screen.stops);
  if (embedded) openVirtualPhonePage(embedded.phonePageUrl, screen.registry, log);

  parts.health = startHealthRecord(service, { file: healthFile, flavour, health: config.health, updates: () => updateStatus });
  parts.updater = await startUpdates(service, {
    deps,
    flavour,
    config: config.updates,
    log,
    onStatus: (status) => {
      updateStatus = status;
    },
  });

  log.info({ event: 'app_started', kind: flavour, state: service.state().view.phase }, 'the kiosk app is up');
  return { window: screen.window, service, lifecycle, log, embedded };
}
