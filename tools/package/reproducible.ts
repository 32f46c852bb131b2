/**
 * What makes two packs of the same commit byte-identical on disk (docs/packaging.md, "Reproducible
 * packages"). The archive's content already is: app.asar records no times, owners or modes beyond the
 * executable bit, esbuild and Vite write relative paths and no dates. What the files on disk still carry
 * from the build machine is their modes (the umask: 077 left app.asar 0600, which a deb would install
 * unreadable to the kiosk's account) and their times (the moment of the build), which every installer
 * format records (deb's tar, the AppImage's squashfs, zip, DMG). Both are set here: modes from the
 * executable bit alone, times from SOURCE_DATE_EPOCH (reproducible-builds.org/specs/source-date-epoch),
 * which defaults to the commit's time.
 */
import { execFileSync } from 'node:child_process';
import { chmod, lstat, lutimes, readdir, utimes } from 'node:fs/promises';
import { join } from 'node:path';

export class SourceDateEpochError extends Error {
  override readonly name = 'SourceDateEpochError';
}

/** Seconds since 1970 of a SOURCE_DATE_EPOCH value; the spec allows only a decimal integer. */
export function parseSourceDateEpoch(value: string): number {
  if (!/^\d+$/.test(value))
    throw new SourceDateEpochError(`SOURCE_DATE_EPOCH must be a whole number of seconds, not ${JSON.stringify(value)}`);
  return Number(value);
}

/** The commit time of HEAD in `root` (`git log -1 --format=%ct`). */
export function commitTime(root: string): number {
  let out: string;
  try {
    out = execFileSync('git', ['log', '-1', '--format=%ct'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new SourceDateEpochError(
      `SOURCE_DATE_EPOCH is not set and ${root} has no git commit to take it from (${(e as Error).message.split('\n')[0] ?? ''})`,
    );
  }
  return parseSourceDateEpoch(out.trim());
}

/** SOURCE_DATE_EPOCH if set, else the commit's time: the one time every file of a build gets. */
export function sourceDateEpoch(root: string, env: NodeJS.ProcessEnv = process.env): number {
  const set = env.SOURCE_DATE_EPOCH;
  return set === undefined || set === '' ? commitTime(root) : parseSourceDateEpoch(set);
}

/** The mode a packed file gets: only the owner's executable bit of the original counts. */
export function normalMode(kind: 'file' | 'directory', mode: number): number {
  if (kind === 'directory') return 0o755;
  return (mode & 0o100) !== 0 ? 0o755 : 0o644;
}

/**
 * Sets every file and folder under `dir` (and `dir` itself) to its normal mode and to `epoch`'s time;
 * symbolic links keep their target and get the time only. Children first, so nothing touches a folder
 * after its time is set.
 */
export async function normaliseTree(dir: string, epoch: number): Promise<void> {
  const info = await lstat(dir);
  if (info.isSymbolicLink()) {
    await lutimes(dir, epoch, epoch);
    return;
  }
  if (info.isDirectory()) {
    const names = (await readdir(dir)).sort();
    for (const name of names) await normaliseTree(join(dir, name), epoch);
    await chmod(dir, normalMode('directory', info.mode));
  } else {
    await chmod(dir, normalMode('file', info.mode));
  }
  await utimes(dir, epoch, epoch);
}
