/**
 * Starts electron-updater for the production flavour when `app.updates.enabled` is set (src/main/updater.ts
 * does the work). electron-updater is loaded only then: it reaches into Electron as it loads. A failure to
 * start is a status for staff and the health record, never a crash.
 */
import type { KioskConfig } from '../kiosk/config.js';
import type { UpdateStatus } from '../common/kiosk-api.js';
import type { Logger } from '../kiosk/log.js';
import { startUpdater, type AppUpdaterLike, type Updater } from './updater.js';

export interface AppUpdatesOptions {
  readonly flavour: 'production' | 'qa';
  readonly config: KioskConfig['app']['updates'];
  readonly loadUpdater: () => Promise<AppUpdaterLike>;
  readonly isIdle: () => boolean;
  readonly log: Logger;
  readonly onStatus: (status: UpdateStatus) => void;
}

/** The running updater, or undefined when updates are off here (QA packages are never auto-updated). */
export async function startAppUpdates(options: AppUpdatesOptions): Promise<Updater | undefined> {
  if (options.flavour !== 'production' || !options.config.enabled) return undefined;
  try {
    return startUpdater({ updater: await options.loadUpdater(), config: options.config, isIdle: options.isIdle, log: options.log, onStatus: options.onStatus });
  } catch (e) {
    const error = `the updater could not start: ${e instanceof Error ? e.message : String(e)}`.slice(0, 500);
    options.onStatus({ state: 'error', error });
    options.log.error({ event: 'updater_failed' }, error);
    return undefined;
  }
}
