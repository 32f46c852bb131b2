/**
 * Updates without a person: electron-updater on a generic feed (a folder of `latest*.yml` and installers
 * served over https), with a channel for staged rings. It checks on a jittered schedule, downloads in the
 * background, and installs only when the kiosk has been idle for a quiet period — never during a
 * verification — and, when a maintenance window is configured, only inside it.
 *
 * electron-updater verifies what it downloads (the sha512 in the feed; on Windows the installer's
 * signature against the publisher; on macOS Squirrel checks the code signature): any failure, like an
 * unreachable feed, becomes status `error` with a short, cleaned message, is logged, and is retried at the
 * next check; the kiosk keeps verifying throughout. Sources: electron.build/auto-update,
 * electron.build/configuration/publish (generic provider), electron-updater's AppUpdater typings.
 *
 * A download waits for its moment, and the channel may change meanwhile (a release pulled, a rollout
 * paused). electron-updater keeps what it downloaded and installs it on `quitAndInstall` whatever the feed
 * says by then (node_modules/electron-updater/out/AppUpdater.js: doCheckForUpdates leaves the downloaded
 * file alone when nothing is available; BaseUpdater.js install() only needs the file). So right before
 * installing, the channel is asked again (without downloading): the download is installed only if the
 * channel still offers that version with the same files (sha512); otherwise it is dropped and the kiosk
 * goes on as the channel says. A channel that cannot be asked (feed unreachable) installs nothing: a pulled
 * release must not reach the kiosks that happen to be offline when it is pulled; the kiosk asks again after
 * the check interval and keeps verifying on the version it runs.
 */
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { AppUpdater } from 'electron-updater';
import type { KioskConfig } from '../platform/config.js';
import { insideWindow } from '../platform/time-window.js';
import type { Logger } from '../platform/log.js';
import type { UpdateStatus } from '../common/kiosk-api.js';

export type { UpdateStatus } from '../common/kiosk-api.js';

/** The parts of electron-updater's `autoUpdater` this module uses. */
export type AppUpdaterLike = Pick<
  AppUpdater,
  | 'setFeedURL'
  | 'channel'
  | 'autoDownload'
  | 'allowDowngrade'
  | 'autoInstallOnAppQuit'
  | 'checkForUpdates'
  | 'quitAndInstall'
  | 'on'
  | 'off'
  | 'logger'
>;

type UpdatesConfig = KioskConfig['app']['updates'];

/** First check this long after start (plus jitter), so start-up is not slowed and a fleet's reboot does not stampede. */
export const FIRST_CHECK_MS = 60_000;
/** Spread of the first check, and ± spread of each later one as a share of the interval. */
export const FIRST_CHECK_JITTER_MS = 5 * 60_000;
export const INTERVAL_JITTER = 0.1;
/** The kiosk must have been idle this long, without a break, before an install. */
export const QUIET_MS = 60_000;
/** How often a downloaded update looks for its moment. */
export const INSTALL_POLL_MS = 10_000;
const MAX_ERROR = 300;

// The window rule is shared with the pre-warm policy's business hours.
export { insideWindow } from '../platform/time-window.js';

// eslint-disable-next-line no-control-regex -- removing control characters is the point
const CONTROL = /\u001B\[[0-?]*[ -/]*[@-~]|[\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;

/**
 * An updater error for staff and the log: its first line (electron-updater appends response headers and
 * bodies), credentials in URLs removed, control characters and escapes dropped, bounded.
 */
export function updateErrorText(e: unknown): string {
  const raw = e instanceof Error ? e.message : typeof e === 'string' ? e : 'unknown error';
  const firstLine = raw.split(/\r?\n/, 1)[0] ?? '';
  const text = firstLine
    .replace(CONTROL, '')
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, '$1')
    .trim();
  const bounded = text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR - 1)}…` : text;
  return bounded === '' ? 'unknown error' : bounded;
}

/** The version a feed announced: what the feed says is not trusted to be a string of any length. */
function versionOf(info: unknown): string {
  const version = typeof info === 'object' && info !== null ? (info as { version?: unknown }).version : undefined;
  return typeof version === 'string' && version !== '' ? version.slice(0, 100) : 'unknown';
}

/** What a channel offers, as far as deciding that a download is still the one offered: its version and files. */
const Offer = z.object({
  version: z.string().min(1).max(100),
  files: z
    .array(z.object({ url: z.string().max(2_000), sha512: z.string().max(200) }).loose())
    .max(50)
    .default([]),
  // The older single-file form of a channel file (electron-updater reads it too).
  path: z.string().max(2_000).optional(),
  sha512: z.string().max(200).optional(),
});

/** A comparable fingerprint of what a feed offers (version and every file's sha512), undefined when unreadable. */
function offerOf(info: unknown): string | undefined {
  const offer = Offer.safeParse(info);
  if (!offer.success) return undefined;
  const files = offer.data.files.map((f) => `${f.url} ${f.sha512}`);
  if (offer.data.path !== undefined && offer.data.sha512 !== undefined) files.push(`${offer.data.path} ${offer.data.sha512}`);
  return JSON.stringify([offer.data.version, [...new Set(files)].sort()]);
}

/** The parts of a `checkForUpdates()` result the confirmation reads (electron-updater's UpdateCheckResult). */
const CheckResult = z.object({ isUpdateAvailable: z.boolean().optional(), updateInfo: z.unknown() }).loose();

export interface UpdaterOptions {
  readonly updater: AppUpdaterLike;
  readonly config: UpdatesConfig;
  /** True while no verification runs and none is about to (the service's phase is not busy). */
  readonly isIdle: () => boolean;
  readonly log: Logger;
  readonly now?: () => number;
  readonly onStatus?: (status: UpdateStatus) => void;
  /** [0, 1) for the jitter (tests fix it). */
  readonly random?: () => number;
}

export interface Updater {
  status(): UpdateStatus;
  stop(): void;
}

export function startUpdater(options: UpdaterOptions): Updater {
  const { updater, config, isIdle, log } = options;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  let current: UpdateStatus = { state: 'disabled' };
  const setStatus = (next: UpdateStatus): void => {
    // electron-updater's events repeat what a check already said ('checking-for-update'): report changes only.
    if (isDeepStrictEqual(next, current) && next.state !== 'disabled') return;
    current = next;
    try {
      options.onStatus?.(next);
    } catch {
      // A listener's failure must not break updating.
    }
  };

  if (!config.enabled) {
    setStatus({ state: 'disabled' });
    log.info({ event: 'updates_disabled' }, 'automatic updates are off (app.updates.enabled)');
    return { status: () => current, stop: () => undefined };
  }

  // Without app.updates.url the feed the package was built with stands (app-update.yml, written by
  // electron-builder from its `publish` settings); a run without one reports that as its update error.
  if (config.url !== undefined) updater.setFeedURL({ provider: 'generic', url: config.url, channel: config.channel });
  log.info({ event: 'updates_feed', source: config.url === undefined ? 'package' : 'config' }, 'automatic updates are on');
  // Setting the channel turns allowDowngrade on (electron-updater does so for channel switches), so the
  // order matters: a kiosk never goes back to an older build by itself.
  updater.channel = config.channel;
  updater.autoDownload = true;
  updater.allowDowngrade = false;
  // Installing at quit would install whenever the app happens to quit (a crash relaunch, a staff restart).
  updater.autoInstallOnAppQuit = false;
  updater.logger = {
    info: () => undefined,
    warn: (message?: unknown) => log.debug({ event: 'updater_note' }, updateErrorText(message)),
    error: () => undefined, // errors arrive as 'error' events, handled below
  };

  let stopped = false;
  let checkTimer: NodeJS.Timeout | undefined;
  let installTimer: NodeJS.Timeout | undefined;
  let idleSince: number | undefined;
  let lastErrorAt = Number.NEGATIVE_INFINITY;
  /** What the waiting download is (offerOf its update-downloaded info). */
  let downloadedOffer: string | undefined;
  /** The channel is being asked whether the download is still offered: electron-updater's events are the answer, not news. */
  let confirming = false;
  /** After the channel could not be asked, the next time to ask (not at every poll). */
  let confirmNotBefore = Number.NEGATIVE_INFINITY;

  const fail = (e: unknown, during: string): void => {
    // electron-updater both emits 'error' and rejects the promise for one failure: log it once.
    const at = now();
    if (current.state === 'error' && at - lastErrorAt < 1_000) return;
    lastErrorAt = at;
    const error = updateErrorText(e);
    setStatus({
      state: 'error',
      error,
      ...(current.version === undefined ? {} : { version: current.version }),
      ...(current.checkedAt === undefined ? {} : { checkedAt: current.checkedAt }),
    });
    log.warn({ event: 'update_failed', phase: during }, `update ${during} failed (retried at the next check): ${error}`);
  };

  const schedule = (delayMs: number): void => {
    clearTimeout(checkTimer);
    if (stopped) return;
    checkTimer = setTimeout(() => void check(), delayMs);
    checkTimer.unref();
  };
  const intervalMs = config.checkEveryMinutes * 60_000;
  const nextDelay = (): number => Math.round(intervalMs * (1 - INTERVAL_JITTER + 2 * INTERVAL_JITTER * random()));

  const check = async (): Promise<void> => {
    if (stopped) return;
    schedule(nextDelay());
    // A download in progress or one waiting for its moment needs no new check.
    if (current.state === 'downloading' || current.state === 'downloaded' || current.state === 'installing') return;
    setStatus({ state: 'checking', ...(current.checkedAt === undefined ? {} : { checkedAt: current.checkedAt }) });
    try {
      const result = await updater.checkForUpdates();
      if (result === null && current.state === 'checking') {
        // electron-updater skips checks in an unpackaged app (development, tests of the shell).
        setStatus({ state: 'idle', error: 'the updater is inactive in an unpackaged app' });
      }
    } catch (e) {
      fail(e, 'check');
    }
  };

  const tryInstall = (): void => {
    if (stopped || current.state !== 'downloaded') return;
    const at = now();
    if (!isIdle()) {
      idleSince = undefined;
      return;
    }
    idleSince ??= at;
    if (at - idleSince < QUIET_MS) return;
    if (config.maintenanceWindow !== undefined && !insideWindow(config.maintenanceWindow, new Date(at))) return;
    if (at < confirmNotBefore) return;
    void confirmAndInstall();
  };

  /** Ask the channel once more; install only what it still offers (see the header). */
  const confirmAndInstall = async (): Promise<void> => {
    if (confirming) return;
    confirming = true;
    const version = current.version;
    let answer: { available: boolean; offer: string | undefined; version: string } | undefined;
    let failure: unknown;
    // Only ask: a download now would race the install (electron-updater downloads on a check when autoDownload is on).
    updater.autoDownload = false;
    try {
      const result = CheckResult.safeParse(await updater.checkForUpdates());
      if (result.success)
        answer = {
          available: result.data.isUpdateAvailable === true,
          offer: offerOf(result.data.updateInfo),
          version: versionOf(result.data.updateInfo),
        };
      else failure = new Error('the updater gave no answer (inactive)');
    } catch (e) {
      failure = e;
    } finally {
      updater.autoDownload = true;
      confirming = false;
    }
    if (stopped || current.state !== 'downloaded') return;
    const at = now();
    const versionField = version === undefined ? {} : { version };
    if (answer === undefined) {
      confirmNotBefore = at + nextDelay();
      const error = `not installed: the update feed could not confirm it still offers this version (${updateErrorText(failure)}); asked again later`;
      setStatus({ ...current, error });
      log.warn({ event: 'update_unconfirmed', ...versionField }, error);
      return;
    }
    confirmNotBefore = Number.NEGATIVE_INFINITY;
    if (!answer.available || answer.offer === undefined || answer.offer !== downloadedOffer) {
      // Pulled (nothing newer, or an older version: allowDowngrade stays off), paused, or replaced by another build.
      clearInterval(installTimer);
      installTimer = undefined;
      downloadedOffer = undefined;
      const replaced = answer.available && answer.offer !== undefined;
      log.warn(
        { event: 'update_withdrawn', ...versionField, ...(replaced ? { offered: answer.version.replace(/[^0-9A-Za-z.+-]/g, '') } : {}) },
        replaced
          ? 'the channel now offers another build: the download is dropped and the offered one downloaded'
          : 'the channel no longer offers the downloaded update: it is dropped, nothing is installed',
      );
      setStatus({ state: 'idle', checkedAt: at });
      if (replaced) void check();
      return;
    }
    // The check took a while: a customer may have come meanwhile, and the window may have closed.
    if (!isIdle()) {
      idleSince = undefined;
      return;
    }
    if (config.maintenanceWindow !== undefined && !insideWindow(config.maintenanceWindow, new Date(at))) return;
    clearInterval(installTimer);
    installTimer = undefined;
    setStatus({ state: 'installing', ...versionField, checkedAt: at });
    log.info({ event: 'update_installing', ...versionField }, 'installing the downloaded update and restarting');
    try {
      // Silent install, then run the app again (electron.build/auto-update: quitAndInstall).
      updater.quitAndInstall(true, true);
    } catch (e) {
      fail(e, 'install');
    }
  };

  const handlers = {
    'checking-for-update': (): void => {
      if (confirming) return;
      setStatus({ state: 'checking', ...(current.checkedAt === undefined ? {} : { checkedAt: current.checkedAt }) });
    },
    'update-not-available': (): void => {
      if (confirming) return;
      setStatus({ state: 'idle', checkedAt: now() });
    },
    'update-available': (info: unknown): void => {
      if (confirming) return;
      const version = versionOf(info);
      setStatus({ state: 'downloading', version, checkedAt: now() });
      log.info(
        { event: 'update_available', version: version.replace(/[^0-9A-Za-z.+-]/g, '') },
        'an update is available; downloading in the background',
      );
    },
    'update-downloaded': (info: unknown): void => {
      const version = versionOf(info);
      downloadedOffer = offerOf(info);
      confirmNotBefore = Number.NEGATIVE_INFINITY;
      setStatus({ state: 'downloaded', version, ...(current.checkedAt === undefined ? {} : { checkedAt: current.checkedAt }) });
      log.info(
        { event: 'update_downloaded', version: version.replace(/[^0-9A-Za-z.+-]/g, '') },
        'update downloaded; it installs when the kiosk is idle',
      );
      idleSince = undefined;
      clearInterval(installTimer);
      installTimer = setInterval(tryInstall, INSTALL_POLL_MS);
      installTimer.unref();
      tryInstall();
    },
    error: (e: Error): void => {
      // The confirmation's failure is its own (the promise rejects too): it is not the download's.
      if (confirming) return;
      fail(e, current.state === 'downloading' ? 'download' : 'check');
    },
  };
  updater.on('checking-for-update', handlers['checking-for-update']);
  updater.on('update-not-available', handlers['update-not-available']);
  updater.on('update-available', handlers['update-available']);
  updater.on('update-downloaded', handlers['update-downloaded']);
  updater.on('error', handlers.error);

  setStatus({ state: 'idle' });
  log.info({ event: 'updates_enabled', channel: config.channel, checkEveryMinutes: config.checkEveryMinutes }, 'automatic updates on');
  schedule(FIRST_CHECK_MS + Math.round(random() * FIRST_CHECK_JITTER_MS));

  return {
    status: () => current,
    stop: () => {
      stopped = true;
      clearTimeout(checkTimer);
      clearInterval(installTimer);
      updater.off('checking-for-update', handlers['checking-for-update']);
      updater.off('update-not-available', handlers['update-not-available']);
      updater.off('update-available', handlers['update-available']);
      updater.off('update-downloaded', handlers['update-downloaded']);
      updater.off('error', handlers.error);
    },
  };
}
