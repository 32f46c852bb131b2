/**
 * Small files the kiosk keeps on its own disk (settings, secrets): written to a temporary file in the same
 * directory and renamed over the old one, so a power cut leaves the old or the new file, never half of
 * one; mode 0600 in a 0700 folder because they hold a PIN hash and possibly the API key. A file meant for
 * another reader (the metrics for node_exporter, which runs as its own user) passes its own modes.
 */
import { chmod, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, join, basename } from 'node:path';

export interface AtomicFileModes {
  /** The file's mode (default 0600). */
  readonly mode?: number;
  /** The mode of each folder this write has to create (default 0700); folders that exist are left alone. */
  readonly dirMode?: number;
}

/**
 * Creates `dir` and its missing parents with `mode` exactly: mkdir's mode passes through the umask (077
 * makes 0755 a 0700 that another user cannot enter), so each folder created here is chmod-ed afterwards.
 */
async function makeDirs(dir: string, mode: number): Promise<void> {
  const first = await mkdir(dir, { recursive: true, mode });
  if (first === undefined) return;
  const created: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    created.push(d);
    if (d === first || dirname(d) === d) break;
  }
  for (const d of created.reverse()) await chmod(d, mode);
}

export async function writeFileAtomic(path: string, text: string, modes: number | AtomicFileModes = {}): Promise<void> {
  const { mode = 0o600, dirMode = 0o700 } = typeof modes === 'number' ? { mode: modes } : modes;
  const dir = dirname(path);
  await makeDirs(dir, dirMode);
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', mode);
  try {
    await handle.writeFile(text, 'utf8');
    // The mode before the file takes its name, whatever the umask took away at creation: a chmod after the
    // rename would leave a moment in which a reader of another user (node_exporter) finds it 0600.
    await handle.chmod(mode);
    await handle.sync();
  } catch (e) {
    await handle.close();
    await rm(temp, { force: true });
    throw e;
  }
  await handle.close();
  try {
    await rename(temp, path);
  } catch (e) {
    await rm(temp, { force: true });
    throw e;
  }
}

/** The file's text, or undefined when it does not exist (any other failure is thrown). */
export async function readFileIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}
