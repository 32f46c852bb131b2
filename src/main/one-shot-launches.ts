/**
 * Launches that do one thing and end, before any kiosk starts: `--help`, a production app refusing a
 * dangerous switch, `--provision` (the OS consents) and `--support-bundle FILE`.
 */
import { app, dialog, safeStorage, systemPreferences } from 'electron';
import { parseConfig } from '../platform/config.js';
import { createLogger } from '../platform/log.js';
import { KioskService } from '../service/kiosk-service.js';
import { managedAllowsBasicTextSecrets, readManagedConfig } from '../service/managed-config.js';
import type { KioskAppDependencies } from './app-dependencies.js';
import { USAGE, type CommandLine } from './command-line.js';
import { dangerousSwitches } from './dangerous-switches.js';
import { refusalMessage } from './installed-asar.js';
import { appConfigFile } from './launch-config.js';
import { runProvisioning } from './os-consent.js';
import { SafeStorageSecretStore } from './safe-storage-secret-store.js';
import { appSupportFiles, runSupportBundleCommand } from './support-bundle-command.js';

/** Exit status of a production app that refuses a dangerous command-line switch (EX_CONFIG: a supervisor
 *  should not restart it in a loop; systemd: `RestartPreventExitStatus=78`). */
export const EXIT_REFUSED_SWITCH = 78;

type Deps = Pick<KioskAppDependencies, 'stdout' | 'stderr'>;

/** `--help`: the usage on stdout, then exit. */
export function showUsage(deps: Deps): null {
  deps.stdout.write(`${USAGE}\n`);
  app.exit(0);
  return null;
}

/** Whether a packaged production app must refuse to start: it says why on stderr and exits with {@link EXIT_REFUSED_SWITCH}. */
export function refusedDangerousSwitches(args: readonly string[], deps: Deps & Pick<KioskAppDependencies, 'platform'>): boolean {
  const dangerous = dangerousSwitches(args, deps.platform, (name) => app.commandLine.hasSwitch(name));
  if (dangerous.length === 0) return false;
  deps.stderr.write(
    `mdl-kiosk: refusing to start: ${dangerous.map((n) => `--${n}`).join(', ')} ${dangerous.length === 1 ? 'is' : 'are'} not allowed in a production kiosk (remote debugging, or security switched off). Remove ${dangerous.length === 1 ? 'it' : 'them'} from the shortcut or service that starts the app; the QA build accepts ${dangerous.length === 1 ? 'it' : 'them'}.\n`,
  );
  app.exit(EXIT_REFUSED_SWITCH);
  return true;
}

/** Exit status of a production app whose app.asar is not the one it was built with: the same as a refused switch (a supervisor must not restart it in a loop either). */
export const EXIT_MODIFIED_APP = EXIT_REFUSED_SWITCH;

/** A production app whose files changed since the build: says so on stderr and in a dialog staff see, then exits. */
export async function refuseModifiedApp(reason: string, deps: Deps): Promise<null> {
  const message = refusalMessage(reason);
  deps.stderr.write(`mdl-kiosk: refusing to start: ${message}\n`);
  await app.whenReady();
  dialog.showErrorBox('This kiosk is out of service', message);
  app.exit(EXIT_MODIFIED_APP);
  return null;
}

/** `--provision`: asks the OS for the camera and Bluetooth (starting Bluetooth so it asks), says what each answered, and ends. */
export async function runProvisioningLaunch(cli: CommandLine, deps: KioskAppDependencies, moveDataFolder: () => void): Promise<null> {
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
      return {
        roles: () => ({ central: status(devices.ports.bleCentral), peripheral: status(devices.ports.blePeripheral) }),
        close: () => devices.close(),
      };
    },
  });
  return null;
}

/** `--support-bundle FILE`: writes a support bundle from a service that runs no kiosk and opens no device, and ends. */
export async function runSupportBundleLaunch(options: {
  readonly cli: CommandLine;
  /** Where to write the bundle (`--support-bundle FILE`). */
  readonly target: string;
  readonly deps: KioskAppDependencies;
  readonly flavour: 'production' | 'qa';
  readonly managedOnly: readonly string[] | undefined;
  readonly moveDataFolder: () => void;
}): Promise<null> {
  const { cli, deps, flavour, managedOnly } = options;
  await runSupportBundleCommand({
    app,
    target: options.target,
    stdout: deps.stdout,
    stderr: deps.stderr,
    service: () => {
      options.moveDataFolder();
      const dataDir = app.getPath('userData');
      const managed = readManagedConfig(deps.managedConfigFile);
      const configFile = appConfigFile(cli, dataDir, deps.env);
      return new KioskService({
        devices: () => Promise.reject(new Error('no devices for a support bundle')),
        runKiosk: false,
        dataDir,
        env: deps.env,
        ...(configFile === undefined ? {} : { configFile }),
        overrides: { log: { level: cli.logLevel ?? 'silent' } },
        managed,
        secrets: new SafeStorageSecretStore({
          safeStorage,
          dataDir,
          platform: deps.platform,
          allowBasicText: managedAllowsBasicTextSecrets(managed),
        }),
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
