/**
 * The kiosk service as the Electron app runs it: its devices (or QA's embedded ones), the configuration
 * sources of this launch, secrets kept with the OS's `safeStorage`, the app's status for diagnostics, and
 * the support files of this app.
 */
import { app, safeStorage } from 'electron';
import type { DestinationStream } from 'pino';
import type { AppStatus, UpdateStatus } from '../common/kiosk-api.js';
import { KioskService } from '../service/kiosk-service.js';
import type { LogFiles } from '../service/log-files.js';
import { managedAllowsBasicTextSecrets } from '../service/managed-config.js';
import { hashPin } from '../service/staff-pin.js';
import type { KioskAppDependencies } from './app-dependencies.js';
import type { EmbeddedSetup } from './embedded-default.js';
import type { LaunchConfig } from './launch-config.js';
import type { CameraAccess } from './os-consent.js';
import { SafeStorageSecretStore } from './safe-storage-secret-store.js';
import { appSupportFiles } from './support-bundle-command.js';

/** What the shell tells the diagnostics screen about itself. */
export function appStatusOf(options: {
  readonly flavour: 'production' | 'qa';
  readonly logFiles: LogFiles | undefined;
  readonly updates: () => UpdateStatus;
  readonly healthFile: string;
  readonly cameraAccess: CameraAccess;
  /** The managed file is readable by others (in words). */
  readonly exposure: string | undefined;
}): () => AppStatus {
  const { flavour, logFiles, healthFile, cameraAccess, exposure } = options;
  return () => ({
    flavour,
    secretsProtection: 'os-encrypted',
    managedKeys: [],
    ...(logFiles ? { logDir: logFiles.dir } : {}),
    updates: options.updates(),
    healthFile,
    cameraAccess,
    // Staff see it on the diagnostics screen with the private files other users could read.
    ...(exposure === undefined ? {} : { permissionProblems: [exposure] }),
  });
}

/** The service, not started yet. */
export async function createAppService(options: {
  readonly deps: KioskAppDependencies;
  readonly flavour: 'production' | 'qa';
  readonly dataDir: string;
  readonly logsDir: string;
  readonly launch: LaunchConfig;
  readonly managedOnly: readonly string[] | undefined;
  /** QA's embedded backend and virtual counter, when this launch runs on them. */
  readonly embedded: EmbeddedSetup | undefined;
  readonly logDestination: DestinationStream;
  readonly appStatus: () => AppStatus;
  /** SHA-256 of the app.asar this packaged app runs from (installed-asar.ts); undefined when not packaged. */
  readonly asarSha256: string | undefined;
}): Promise<KioskService> {
  const { deps, dataDir, embedded, managedOnly } = options;
  const { managed, configFile, overrides } = options.launch;
  return new KioskService({
    devices: embedded?.devices ?? deps.devices,
    dataDir,
    env: deps.env,
    ...(configFile === undefined ? {} : { configFile }),
    overrides: embedded ? { ...overrides, staff: { pinHash: await hashPin(embedded.staffPin) } } : overrides,
    managed,
    secrets: new SafeStorageSecretStore({
      safeStorage,
      dataDir,
      platform: deps.platform,
      allowBasicText: managedAllowsBasicTextSecrets(managed),
    }),
    ...(embedded ? { backendOverride: embedded.backendOverride } : {}),
    testMode: options.flavour === 'qa',
    ...(managedOnly ? { managedOnlyKeys: managedOnly } : {}),
    logDestination: options.logDestination,
    version: app.getVersion(),
    appStatus: options.appStatus,
    support: () => appSupportFiles(dataDir, options.logsDir),
    ...(options.asarSha256 === undefined ? {} : { installedAsarSha256: options.asarSha256 }),
    ...(deps.voiceLauncher === undefined ? {} : { voiceLauncher: deps.voiceLauncher }),
    ...deps.serviceOptions,
  });
}
