/**
 * What the Electron app takes from its surroundings — devices, environment, OS, streams, file places, the
 * updater — with the production default of each. Tests and the QA entry replace any of them.
 */
import { fileURLToPath } from 'node:url';
import type { DestinationStream } from 'pino';
import { currentPlatform } from '../platform/os.js';
import { configuredDeviceFactory } from '../service/configured-devices.js';
import type { DeviceFactory, KioskServiceOptions } from '../service/kiosk-service.js';
import { managedConfigPath } from '../service/managed-config.js';
import type { ChildLauncher } from '../devices/shared/child-launcher.js';
import { utilityLauncher, utilityRadioLauncher } from './radio-launcher.js';
import type { AppUpdaterLike } from './updater.js';

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
  /** Where a packaged app's app.asar lies (Electron's `process.resourcesPath`); undefined in plain Node. */
  readonly resourcesPath: string | undefined;
  /** electron-updater's `autoUpdater`, loaded only when updates are on (it touches Electron when loaded). */
  readonly loadUpdater: () => Promise<AppUpdaterLike>;
  /** Starts the built-in voice (eSpeak NG) as a utility process; undefined: none. */
  readonly voiceLauncher: ChildLauncher | undefined;
  /** Extra service options (tests: a cheap PIN hash, a fixed clock). */
  readonly serviceOptions: Partial<KioskServiceOptions>;
}

async function loadAutoUpdater(): Promise<AppUpdaterLike> {
  const updater = await import('electron-updater');
  return (updater.default as { autoUpdater: AppUpdaterLike }).autoUpdater;
}

export function appDependencies(given: Partial<KioskAppDependencies> | undefined): KioskAppDependencies {
  const env = given?.env ?? process.env;
  const platform = given?.platform ?? currentPlatform();
  return {
    // Next to the main bundle: dist/app/main.js → dist/app/radio.js, the radio process (ble.process separate).
    devices: configuredDeviceFactory({
      nfc: 'pcsc',
      radioLauncher: utilityRadioLauncher(fileURLToPath(new URL('./radio.js', import.meta.url))),
    }),
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
    resourcesPath: (process as { resourcesPath?: string }).resourcesPath,
    loadUpdater: loadAutoUpdater,
    // dist/app/voice.js beside main.js: eSpeak NG in a utility process of its own (docs/speech-voice.md).
    voiceLauncher: utilityLauncher(fileURLToPath(new URL('./voice.js', import.meta.url)), 'mDL Kiosk voice'),
    serviceOptions: {},
    ...given,
  };
}
