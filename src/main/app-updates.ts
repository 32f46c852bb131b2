/**
 * Starts electron-updater for the production flavour when `app.updates.enabled` is set (src/main/updater.ts
 * does the work). electron-updater is loaded only then: it reaches into Electron as it loads. A failure to
 * start is a status for staff and the health record, never a crash.
 */
import { randomBytes } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { KioskConfig } from '../platform/config.js';
import type { UpdateStatus } from '../common/kiosk-api.js';
import type { Logger } from '../platform/log.js';
import { startUpdater, type AppUpdaterLike, type Updater } from './updater.js';
import { osCapabilities } from '../platform/os.js';
import { errorText } from '../common/error-text.js';

export interface AppUpdatesOptions {
  readonly flavour: 'production' | 'qa';
  readonly config: KioskConfig['app']['updates'];
  readonly loadUpdater: () => Promise<AppUpdaterLike>;
  readonly isIdle: () => boolean;
  readonly log: Logger;
  readonly onStatus: (status: UpdateStatus) => void;
  readonly platform?: NodeJS.Platform;
  /** The folder the app is installed in (the executable's): on Windows the updater must be able to write it. */
  readonly installDir?: string;
  /** Whether this account can create a file in a folder (default: tries to). */
  readonly canWrite?: (dir: string) => Promise<boolean>;
}

/**
 * Whether this account can create a file in `dir`: tried, not asked (on Windows `fs.access` ignores the
 * folder's ACL, which is what decides for `C:\Program Files`).
 */
export async function canCreateFileIn(dir: string): Promise<boolean> {
  const probe = join(dir, `.mdl-kiosk-write-check-${randomBytes(6).toString('hex')}`);
  try {
    const handle = await open(probe, 'wx');
    await handle.close();
    await rm(probe, { force: true });
    return true;
  } catch {
    return false;
  }
}

/** The running updater, or undefined when updates are off here (QA packages are never auto-updated). */
export async function startAppUpdates(options: AppUpdatesOptions): Promise<Updater | undefined> {
  if (options.flavour !== 'production' || !options.config.enabled) return undefined;
  // A per-machine install on a standard account: the installer would need elevation, so quitAndInstall
  // would quit into a UAC prompt nobody at the counter can answer, and leave no app on screen.
  if (
    osCapabilities(options.platform).updateWritesInstallDir &&
    options.installDir !== undefined &&
    !(await (options.canWrite ?? canCreateFileIn)(options.installDir))
  ) {
    const error = `updates are off: this account cannot write ${options.installDir} (a per-machine install on a standard account needs an administrator to update; use your software-distribution tool)`;
    options.onStatus({ state: 'disabled', error: error.slice(0, 500) });
    options.log.warn({ event: 'updates_unsupported' }, error);
    return undefined;
  }
  try {
    return startUpdater({
      updater: await options.loadUpdater(),
      config: options.config,
      isIdle: options.isIdle,
      log: options.log,
      onStatus: options.onStatus,
    });
  } catch (e) {
    const error = `the updater could not start: ${errorText(e)}`.slice(0, 500);
    options.onStatus({ state: 'error', error });
    options.log.error({ event: 'updater_failed' }, error);
    return undefined;
  }
}
