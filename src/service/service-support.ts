/**
 * What staff and support learn from the service: the application's status, the diagnostics, the
 * self-test, and the support bundle (support-bundle.ts) made of all of them with the configuration's
 * layers, scrubbed of every secret the kiosk knows.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { removableVolumesFor } from './removable-volumes.js';
import { basename, join } from 'node:path';
import type { AppStatus, Diagnostics, SelfTestCheck } from '../common/kiosk-api.js';
import type { Logger } from '../platform/log.js';
import { backendFailuresView } from './backend-report.js';
import type { CameraStatus } from './camera-status.js';
import type { DiagnosticsLog } from './diagnostics.js';
import type { KioskRuntime } from './kiosk-runtime.js';
import { managedKeys } from './managed-config.js';
import { EMPTY_DEVICES, type ScreenStateStream } from './screen-state.js';
import { runSelfTest } from './self-test.js';
import type { ServiceConfig } from './service-config.js';
import type { SpeechService } from './speech-service.js';
import { errorText } from '../common/error-text.js';
import type { KioskServiceOptions } from './service-options.js';
import { runtimeVersions, writeSupportBundle, type SupportBundle } from './support-bundle.js';
import { dataFolderFacts, supportReport, type BundleOrigin } from './support-report.js';

export interface ServiceSupportOptions {
  readonly service: Pick<
    KioskServiceOptions,
    'appStatus' | 'managed' | 'testMode' | 'support' | 'dataDir' | 'removableVolumes' | 'runKiosk' | 'installedAsarSha256'
  >;
  readonly config: Pick<ServiceConfig, 'effective' | 'secrets' | 'storeProblems' | 'supportFacts'>;
  readonly runtime: Pick<KioskRuntime, 'devices' | 'backendFailures'>;
  readonly screen: Pick<ScreenStateStream, 'view' | 'state'>;
  readonly camera: CameraStatus;
  readonly speech: Pick<SpeechService, 'diagnostics'>;
  readonly diagnostics: Pick<DiagnosticsLog, 'snapshot'>;
  readonly version: string;
  readonly startedAt: number;
  readonly now: () => number;
  readonly log: () => Logger;
}

/**
 * What a shell (the desktop app, the browser host) adds to every bundle, the same for both: its log
 * folder, the health record (and the desktop app's relaunch record), the secrets of its own to scrub
 * (the browser host's token), and where the staff button's bundles go.
 */
export function shellSupport(options: {
  readonly dataDir: string;
  readonly logDir?: string | undefined;
  readonly healthFile?: string | undefined;
  readonly relaunchFile?: string | undefined;
  readonly secrets?: () => readonly string[];
}): NonNullable<KioskServiceOptions['support']> {
  const files: Record<string, string> = {};
  if (options.healthFile !== undefined) files['health.json'] = options.healthFile;
  if (options.relaunchFile !== undefined) files['relaunches.json'] = options.relaunchFile;
  return () => ({
    ...(options.logDir === undefined ? {} : { logDir: options.logDir }),
    files,
    secrets: options.secrets?.() ?? [],
    dir: join(options.dataDir, 'support'),
  });
}

/** A health record rewritten this recently, by a live process, is a kiosk that runs now. */
const RUNNING_HEALTH_MS = 5 * 60_000;

/**
 * Who a bundle describes. A service that runs no kiosk (`--support-bundle` while none answered) says so,
 * and when the health record shows a kiosk running elsewhere, how to get that kiosk's own bundle.
 */
async function bundleOrigin(runKiosk: boolean, healthFile: string | undefined, now: number): Promise<BundleOrigin> {
  if (runKiosk) return { madeBy: 'running kiosk' };
  const separate =
    'made by a separate short-lived process from the configuration and the records on disk: its state, devices, self-test and diagnostics are its own (phase stopped), NOT those of a running kiosk';
  // The browser host keeps a health record only where --health-file says: without it nothing was looked at,
  // and "no running kiosk was found" would be read as "the host is down" while it runs.
  if (healthFile === undefined) {
    return {
      madeBy: 'separate process',
      note: `${separate}; whether a kiosk runs is not known: no health record was given (the browser host: add the running host's --health-file)`,
    };
  }
  const text = await readFile(healthFile, 'utf8').catch(() => undefined);
  if (text !== undefined) {
    try {
      const record = JSON.parse(text) as { pid?: unknown; updatedAt?: unknown; phase?: unknown };
      const updated = typeof record.updatedAt === 'string' ? Date.parse(record.updatedAt) : NaN;
      const pid = typeof record.pid === 'number' && Number.isInteger(record.pid) && record.pid > 0 ? record.pid : undefined;
      let alive = false;
      try {
        if (pid !== undefined && pid !== process.pid) alive = process.kill(pid, 0);
      } catch (e) {
        // EPERM: it exists under another user.
        alive = (e as NodeJS.ErrnoException).code === 'EPERM';
      }
      if (alive && record.phase !== 'stopped' && now - updated < RUNNING_HEALTH_MS) {
        return {
          madeBy: 'separate process',
          note: `${separate}. A kiosk IS running (process ${pid}, phase ${String(record.phase).slice(0, 40)} in health.json): for its live bundle use the staff screen's Diagnostics > Support bundle, or the desktop app's \`mdl-kiosk --support-bundle FILE\``,
        };
      }
    } catch {
      // Not a health record: nothing to say about a running kiosk.
    }
  }
  return { madeBy: 'separate process', note: `${separate}; no running kiosk was found (health.json absent, stopped or stale)` };
}

/** A data folder that cannot take a bundle (full, read-only) must not stop support getting one. */
const FOLDER_FAILURES = new Set(['ENOSPC', 'EROFS', 'EACCES', 'EPERM', 'EDQUOT']);

/** How long a support bundle's download ticket is good for. */
export const DOWNLOAD_TICKET_MS = 60_000;

export class ServiceSupport {
  constructor(private readonly options: ServiceSupportOptions) {}

  /** The application's status for diagnostics: the shell's report, completed with what the service knows. */
  appStatus(): AppStatus {
    const { service, config } = this.options;
    let reported: AppStatus | undefined;
    try {
      reported = service.appStatus?.();
    } catch (e) {
      this.options.log().warn({ event: 'app_status_failed' }, `the application status could not be read: ${errorText(e)}`);
    }
    const problems = config.storeProblems();
    const managedPath = service.managed?.path ?? reported?.managedConfigPath;
    const keys = service.managed ? managedKeys(service.managed) : (reported?.managedKeys ?? []);
    const secretsProblem = problems.secrets ?? reported?.secretsProblem;
    const status: AppStatus = {
      ...reported,
      flavour: reported?.flavour ?? (service.testMode ? 'qa' : 'production'),
      secretsProtection: config.secrets.protection,
      managedKeys: keys.slice(0, 100).map((k) => k.slice(0, 200)),
    };
    if (managedPath !== undefined) status.managedConfigPath = managedPath.slice(0, 1_000);
    if (secretsProblem !== undefined) status.secretsProblem = secretsProblem.slice(0, 500);
    // The app's own findings (the managed file's mode) and the service's (its private files), together.
    const permissions = [...(reported?.permissionProblems ?? []), ...problems.permissions];
    if (permissions.length > 0) status.permissionProblems = permissions.slice(0, 10).map((p) => p.slice(0, 500));
    return status;
  }

  diagnostics(): Diagnostics {
    const { version, startedAt, now } = this.options;
    const backend = backendFailuresView(this.options.runtime.backendFailures());
    return {
      ...this.options.diagnostics.snapshot(version, startedAt, now()),
      app: this.appStatus(),
      ...(backend === undefined ? {} : { backend }),
      speech: this.options.speech.diagnostics(),
    };
  }

  selfTest(): { checks: SelfTestCheck[] } {
    const { screen, runtime, camera } = this.options;
    const checks = runSelfTest({ view: screen.view, ports: runtime.devices?.ports ?? EMPTY_DEVICES, camera: camera.forSelfTest() });
    this.options.log().info({ event: 'self_test', count: checks.filter((c) => !c.ok).length }, 'self-test run');
    return { checks };
  }

  /** One-time download tickets of written bundles (browser host), by ticket. */
  private readonly downloads = new Map<string, { readonly path: string; readonly name: string; readonly until: number }>();

  /** Writes a bundle and hands out a ticket for one download of it within {@link DOWNLOAD_TICKET_MS}. */
  async prepareDownload(): Promise<{ ticket: string; name: string; bytes: number }> {
    const bundle = await this.writeBundle();
    const now = this.options.now();
    for (const [ticket, entry] of this.downloads) if (entry.until <= now) this.downloads.delete(ticket);
    const ticket = randomBytes(32).toString('base64url');
    const name = basename(bundle.path);
    this.downloads.set(ticket, { path: bundle.path, name, until: now + DOWNLOAD_TICKET_MS });
    return { ticket, name, bytes: bundle.bytes };
  }

  /** The bundle a ticket stands for, once: the ticket is spent (or found expired) here. */
  takeDownload(ticket: string): { path: string; name: string } | undefined {
    const entry = this.downloads.get(ticket);
    this.downloads.delete(ticket);
    return entry !== undefined && entry.until > this.options.now() ? { path: entry.path, name: entry.name } : undefined;
  }

  /** The removable volumes mounted now (what the screen may offer). */
  async supportVolumes(): Promise<{ volumes: { id: string; label: string }[] }> {
    const volumes = await (this.options.service.removableVolumes ?? removableVolumesFor()).list();
    return { volumes: volumes.map((v) => ({ id: v.id.slice(0, 4_096), label: v.label.slice(0, 255) })) };
  }

  /**
   * Writes the bundle onto the removable volume `id` names: looked up in a fresh listing, so only a listed
   * volume's root is ever written to (a screen cannot name another path). Fails when it is gone.
   */
  async writeBundleToVolume(id: string): Promise<SupportBundle> {
    const volume = (await (this.options.service.removableVolumes ?? removableVolumesFor()).list()).find((v) => v.id === id);
    if (volume === undefined) throw new Error('that removable volume is not mounted any more: plug it in again and choose it again');
    const stamp = new Date(this.options.now()).toISOString().replace(/[:.]/g, '-');
    return this.writeBundle(join(volume.path, `mdl-kiosk-support-${stamp}.tar.gz`));
  }

  /**
   * Writes a support bundle to `target`, or into the support folder with a name of its time: versions,
   * the configuration without secrets and each key's source, state, devices, self-test, diagnostics, the
   * shell's records and recent logs — scrubbed of every secret the kiosk knows.
   */
  async writeBundle(target?: string): Promise<SupportBundle> {
    const { service, config, now } = this.options;
    const shell = service.support?.() ?? {};
    const facts = config.supportFacts();
    const made = now();
    const report = supportReport({
      version: this.options.version,
      flavour: this.appStatus().flavour,
      config: config.effective,
      layers: facts.layers,
      ignoredKeys: facts.ignoredKeys,
      problems: facts.problems,
      state: this.options.screen.state,
      diagnostics: this.diagnostics(),
      selfTest: this.selfTest().checks,
      secrets: [...facts.secrets, ...(shell.secrets ?? [])],
      versions: runtimeVersions(),
      origin: await bundleOrigin(service.runKiosk !== false, shell.files?.['health.json'], made),
      now: made,
      dataFolder: await dataFolderFacts(service.dataDir),
      installedAsarSha256: service.installedAsarSha256,
    });
    const stamp = new Date(made).toISOString().replace(/[:.]/g, '-');
    const name = `mdl-kiosk-support-${stamp}.tar.gz`;
    const path = target ?? join(shell.dir ?? join(service.dataDir, 'support'), name);
    const input = {
      parts: report.parts,
      ...(shell.files ? { files: shell.files } : {}),
      ...(shell.logDir === undefined ? {} : { logDir: shell.logDir }),
      secrets: report.secrets,
      now,
    };
    let bundle: SupportBundle;
    try {
      bundle = await writeSupportBundle(path, input);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? '';
      if (target !== undefined || !FOLDER_FAILURES.has(code)) throw e;
      // The staff button on a full or read-only data folder: the system's temporary folder takes it.
      this.options
        .log()
        .warn(
          { event: 'support_bundle_folder_failed', code },
          `the support folder cannot take the bundle (${code}); writing it to the temporary folder`,
        );
      // A folder of its own (0700): a shared temporary folder's fixed name could be another user's.
      bundle = await writeSupportBundle(join(await mkdtemp(join(tmpdir(), 'mdl-kiosk-support-')), name), input);
    }
    this.options.log().info({ event: 'support_bundle_written', count: bundle.bytes }, `support bundle written to ${bundle.path}`);
    return bundle;
  }
}
