/**
 * The kiosk's private files — `settings.json` (the staff PIN hash) and the secret store's file (the API
 * key) — are written 0600, but a copy, a backup restore or a hand edit can leave one readable by the
 * group or by everyone. At start each one found so is set back to 0600 and reported: staff see it in the
 * diagnostics, because what was readable may have been read (change the PIN, rotate the key).
 * POSIX modes only: Windows keeps access in ACLs, which the installer guide covers.
 */
import { chmod, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { currentPlatform, osCapabilities } from '../platform/os.js';

/** What to do about a file of this name that others could read. */
function advice(path: string): string {
  return basename(path) === 'settings.json'
    ? 'the staff PIN hash may have been read: change the PIN'
    : 'the API key may have been read: rotate it at the backend and save the new one';
}

/**
 * One problem per file that the group or others could read (mode & 0o077), after setting it to 0600;
 * missing files are fine. Never throws: a file that cannot be checked is reported as such.
 */
export async function tightenPrivateFiles(paths: readonly string[], platform: NodeJS.Platform = currentPlatform()): Promise<string[]> {
  if (!osCapabilities(platform).posixFileModes) return [];
  const problems: string[] = [];
  for (const path of paths) {
    let mode: number;
    try {
      mode = (await stat(path)).mode & 0o777;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      problems.push(`${path} cannot be checked: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
      continue;
    }
    if ((mode & 0o077) === 0) continue;
    const was = mode.toString(8).padStart(4, '0');
    try {
      await chmod(path, 0o600);
      problems.push(`${path} was readable by other users (mode ${was}); set to 0600 — ${advice(path)}`);
    } catch (e) {
      problems.push(
        `${path} is readable by other users (mode ${was}) and could not be set to 0600 (${(e as NodeJS.ErrnoException).code ?? 'error'}): ${advice(path)}`,
      );
    }
  }
  return problems;
}
