/**
 * The app's own log: rolling files in Electron's log folder (stderr when they cannot be opened), the
 * launch's problems said on stderr and in the log, and a managed configuration file that other users could
 * read, reported where staff will see it.
 */
import type { DestinationStream } from 'pino';
import { createLogger, type Logger } from '../platform/log.js';
import { openLogFiles, type LogFiles } from '../service/log-files.js';
import { managedFileExposure } from '../service/managed-file-mode.js';
import type { KioskAppDependencies } from './app-dependencies.js';
import type { EarlyConfig } from './app-settings.js';
import { errorText } from '../common/error-text.js';

export interface AppLog {
  readonly log: Logger;
  /** Where the service logs too: the files, or stderr. */
  readonly destination: DestinationStream;
  readonly logFiles: LogFiles | undefined;
  /** The managed configuration file is readable by others (in words), or undefined. */
  readonly exposure: string | undefined;
}

export async function openAppLog(options: {
  readonly logsDir: string;
  readonly early: EarlyConfig;
  readonly flavour: 'production' | 'qa';
  readonly version: string;
  /** What the command line got wrong, in words. */
  readonly problems: readonly string[];
  readonly deps: Pick<KioskAppDependencies, 'stderr' | 'managedConfigFile' | 'platform'>;
}): Promise<AppLog> {
  const { logsDir, early, problems, deps } = options;
  for (const problem of problems) deps.stderr.write(`mdl-kiosk: ${problem}\n`);
  let logFiles: LogFiles | undefined;
  try {
    logFiles = await openLogFiles({ dir: logsDir, ...early.app.logs });
  } catch (e) {
    deps.stderr.write(`mdl-kiosk: the log files in ${logsDir} cannot be opened (logging to stderr): ${errorText(e)}\n`);
  }
  const destination: DestinationStream = logFiles?.destination ?? deps.stderr;
  const log = createLogger({ level: early.logLevel, name: 'mdl-kiosk-app' }, destination);
  log.info({ event: 'app_starting', kind: options.flavour, version: options.version }, 'the kiosk app is starting');
  for (const problem of problems) log.warn({ event: 'command_line_ignored' }, problem);
  const exposure = managedFileExposure(deps.managedConfigFile, deps.platform);
  if (exposure !== undefined) {
    deps.stderr.write(`mdl-kiosk: ${exposure}\n`);
    log.warn({ event: 'managed_config_exposed' }, exposure);
  }
  return { log, destination, logFiles, exposure };
}
