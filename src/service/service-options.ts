/**
 * What the parts of the kiosk service (kiosk-service.ts and the parts it is made of) share: its options,
 * the argument and answer shapes of the `KioskApi` intents, and a few small helpers.
 */
import type { ChildLauncher } from '../devices/shared/child-launcher.js';
import type { RemovableVolumes } from './removable-volumes.js';
import type { DestinationStream } from 'pino';
import type { z } from 'zod';
import type { AppStatus, IntentName, KIOSK_INTENTS } from '../common/kiosk-api.js';
import type { DevicePorts } from '../devices/ports.js';
import type { QrScanQueue } from '../devices/qr/qr-scan-queue.js';
import type { KioskConfig } from '../platform/config.js';
import type { Logger } from '../platform/log.js';
import type { ManagedConfig } from './managed-config.js';
import type { SecretStore } from './secret-store.js';
import type { ScryptParams } from './staff-pin.js';

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

export type Json = Record<string, unknown>;

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
  /**
   * SHA-256 of the app.asar this packaged app runs from, computed once at start (src/main/installed-asar.ts);
   * unset when not run from a package. The support bundle records it, so a fleet can see which kiosks run
   * which bytes (`npm run package:verify` compares it with a build's provenance).
   */
  readonly installedAsarSha256?: string;
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
   * false: load the configuration, settings and secrets but open no device and start no kiosk (a support
   * bundle made while another copy of the kiosk owns the reader and the radio, and must not be disturbed).
   */
  readonly runKiosk?: boolean;
  /** Where removable volumes are found for the support bundle (default: this OS's adapter, removable-volumes.ts). */
  readonly removableVolumes?: RemovableVolumes;
  /**
   * What the shell adds to a support bundle: its log folder, files such as the health and relaunch
   * records (by name in the bundle), secrets of its own to scrub (the browser host's token), and where
   * the staff screen's bundles go (default `<dataDir>/support`). Both shells build it with
   * `shellSupport` (service-support.ts), so their bundles hold the same.
   */
  readonly support?: () => {
    readonly logDir?: string;
    readonly files?: Record<string, string>;
    readonly secrets?: readonly string[];
    readonly dir?: string;
  };
  /**
   * Starts the built-in voice's process (eSpeak NG, devices/speech/): Node's `fork` in the browser host,
   * Electron's utility process in the app. Undefined: no built-in voice (`synthesizeSpeech` says so).
   */
  readonly voiceLauncher?: ChildLauncher;
  readonly now?: () => number;
}

/** The arguments of an intent, as its schema gives them. */
export type Args<K extends IntentName> = z.infer<(typeof KIOSK_INTENTS)[K]['args']>;
export type Ok = { ok: true };

/** The connection id of the service's own handlers (tests, the QA demo's scanner link). */
export const SERVICE_SCREEN = 'service';
