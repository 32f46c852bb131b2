/**
 * Small files the kiosk keeps on its own disk (settings, secrets): written to a temporary file in the same
 * directory and renamed over the old one, so a power cut leaves the old or the new file, never half of
 * one; mode 0600 because they hold a PIN hash and possibly the API key (a file meant for another reader,
 * such as the metrics for a monitoring agent, passes its own mode).
 */
import { chmod, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, join, basename } from 'node:path';

export async function writeFileAtomic(path: string, text: string, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', mode);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, path);
  } catch (e) {
    await rm(temp, { force: true });
    throw e;
  }
  // The new inode's mode, whatever the old file had (and whatever the umask took away at creation).
  await chmod(path, mode);
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
