/**
 * The kiosk's JSON log (pino) in rotating files in the app's log folder, for support and fleet tooling:
 * `mdl-kiosk.<yyyy-MM-dd>.<n>.log`, a new file every day and whenever one reaches `maxFileMegabytes`.
 *
 * Retention, both ways: pino-roll keeps at most `retentionDays` files besides the current one when it rolls
 * (a bound on disk use of about (retentionDays + 1) × maxFileMegabytes, whatever the log rate; the size
 * is checked after each write, so a file may pass it by one write buffer), and files last changed more than
 * `retentionDays` days ago are deleted when the log opens and every few hours after (a kiosk that was off
 * for a while, or that logs little). Only files named like ours are ever deleted.
 *
 * pino-roll runs in this process as a plain destination stream (no worker-thread transport): one stream
 * fewer to keep alive, and nothing to bundle separately into the Electron main. The folder is created
 * 0700 and the files 0600 where the OS has POSIX modes. What goes in is already redacted by the logger
 * (src/platform/log.ts), and the kiosk logs events, never data.
 */
import { chmod, mkdir, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { DestinationStream } from 'pino';
import pinoRoll from 'pino-roll';
import { osCapabilities } from '../platform/os.js';

export interface LogFiles {
  readonly destination: DestinationStream;
  readonly dir: string;
  close(): Promise<void>;
}

export const LOG_FILE_BASE = 'mdl-kiosk';
/** Our files and only ours: `mdl-kiosk.2025-06-01.3.log`. */
export const LOG_FILE_NAME = /^mdl-kiosk\.[0-9]{4}-[0-9]{2}-[0-9]{2}\.[0-9]+\.log$/;
const DAY_MS = 24 * 60 * 60 * 1_000;
const SWEEP_EVERY_MS = 6 * 60 * 60 * 1_000;

/** Deletes our log files last changed more than `retentionDays` days before `now`; returns their names. */
export async function removeExpiredLogFiles(dir: string, retentionDays: number, now: number = Date.now()): Promise<string[]> {
  const cutoff = now - retentionDays * DAY_MS;
  const removed: string[] = [];
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!LOG_FILE_NAME.test(name)) continue;
    const path = join(dir, name);
    try {
      const info = await stat(path);
      if (!info.isFile() || info.mtimeMs >= cutoff) continue;
      await unlink(path);
      removed.push(name);
    } catch {
      // Gone meanwhile, or locked by another process (Windows): the next sweep tries again.
    }
  }
  return removed;
}

async function tightenModes(dir: string): Promise<void> {
  if (!osCapabilities().posixFileModes) return; // Windows: the folder's ACL applies
  await chmod(dir, 0o700).catch(() => undefined);
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (LOG_FILE_NAME.test(name)) await chmod(join(dir, name), 0o600).catch(() => undefined);
  }
}

export async function openLogFiles(options: { dir: string; retentionDays: number; maxFileMegabytes: number }): Promise<LogFiles> {
  const { dir, retentionDays, maxFileMegabytes } = options;
  if (!Number.isInteger(retentionDays) || retentionDays < 1)
    throw new RangeError('retentionDays must be a whole number of days, at least 1');
  if (!Number.isInteger(maxFileMegabytes) || maxFileMegabytes < 1)
    throw new RangeError('maxFileMegabytes must be a whole number, at least 1');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await removeExpiredLogFiles(dir, retentionDays);
  const stream = await pinoRoll({
    file: join(dir, LOG_FILE_BASE),
    extension: 'log',
    frequency: 'daily',
    dateFormat: 'yyyy-MM-dd',
    size: `${maxFileMegabytes}m`,
    limit: { count: retentionDays, removeOtherLogFiles: true },
    mode: 0o600,
    mkdir: true,
  });
  // A full disk or a vanished folder must not take the kiosk down (an 'error' without a listener would):
  // say so once on stderr and carry on; the diagnostics keep their own copy of recent events.
  let reported = false;
  stream.on('error', (e: Error) => {
    if (reported) return;
    reported = true;
    process.stderr.write(`mdl-kiosk: writing the log files in ${dir} failed: ${e.message}\n`);
  });
  await new Promise<void>((resolve) => {
    // SonicBoom opens its file asynchronously; files that existed keep their mode unless tightened here.
    stream.once('ready', resolve);
    stream.once('error', () => resolve());
  });
  await tightenModes(dir);
  const sweep = setInterval(() => void removeExpiredLogFiles(dir, retentionDays), SWEEP_EVERY_MS);
  sweep.unref();

  let closing: Promise<void> | undefined;
  return {
    destination: stream,
    dir,
    close() {
      closing ??= new Promise<void>((resolve) => {
        clearInterval(sweep);
        stream.once('close', () => resolve());
        stream.once('error', () => resolve());
        stream.end();
      });
      return closing;
    },
  };
}
