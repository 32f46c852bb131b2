/**
 * The app.asar this packaged app runs from: its SHA-256, computed once at start (the support bundle and the
 * metrics file name it, so a fleet sees which kiosks run which bytes), and on Linux its comparison with the
 * digest the build recorded beside it (`app.asar.sha256`, written by the afterPack hook after the folder is
 * normalised). macOS and Windows do not need the file: Electron's ASAR integrity fuse checks app.asar
 * against the hash electron-builder writes into the signed executable; on Linux that fuse checks nothing
 * (docs/packaging.md, "The app checks itself").
 *
 * The record lies beside the archive, so whoever can rewrite both can pass this check: it catches a
 * damaged, half-updated or naively swapped app.asar, not a determined attacker with write access to the
 * install folder (the package manager's own verification and `npm run package:verify` are for that).
 */
import { createHash } from 'node:crypto';
import * as nodeFs from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** The file beside app.asar holding its SHA-256 (lowercase hex, one line), Linux packages only. */
export const RECORDED_DIGEST_FILE = 'app.asar.sha256';

/**
 * Electron's `original-fs` where there is one: Electron's own `fs` shows app.asar as a folder, so reading
 * the archive's bytes needs the unpatched module (electronjs.org/docs/latest/tutorial/asar-archives);
 * plain Node (tests, tools) knows no archives and its `fs` already is that.
 */
function unpatchedFs(): typeof nodeFs {
  try {
    return createRequire(import.meta.url)('original-fs') as typeof nodeFs;
  } catch {
    return nodeFs;
  }
}

/**
 * Synchronous on purpose: it runs once, before the app registers its scheme and reads its configuration,
 * which must happen before Electron's ready; an await here would let ready overtake them. In 1 MiB reads,
 * so the archive is never whole in memory (some 0.1 s for 50 MB).
 */
function sha256Of(fs: typeof nodeFs, file: string): string {
  const hash = createHash('sha256');
  const buffer = Buffer.alloc(1 << 20);
  const fd = fs.openSync(file, 'r');
  try {
    for (let read = fs.readSync(fd, buffer); read > 0; read = fs.readSync(fd, buffer)) hash.update(buffer.subarray(0, read));
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest('hex');
}

export type InstalledAsar =
  /** Not run from a package (no `<resources>/app.asar`): nothing to check or report. */
  | { readonly state: 'unpackaged' }
  /** Matches the record, or there is no record to match on this platform. */
  | { readonly state: 'ok'; readonly sha256: string }
  /** The reason is a sentence for staff and the log. */
  | { readonly state: 'refused'; readonly sha256: string | undefined; readonly reason: string };

/**
 * Reads `<resourcesPath>/app.asar` and, when `checkRecord`, compares it with `app.asar.sha256` beside it:
 * a missing or unreadable record, or another digest, refuses.
 */
export function inspectInstalledAsar(
  resourcesPath: string | undefined,
  checkRecord: boolean,
  fs: typeof nodeFs = unpatchedFs(),
): InstalledAsar {
  const archive = resourcesPath === undefined ? undefined : join(resourcesPath, 'app.asar');
  if (archive === undefined || !fs.existsSync(archive)) return { state: 'unpackaged' };
  let sha256: string;
  try {
    sha256 = sha256Of(fs, archive);
  } catch (e) {
    return { state: 'refused', sha256: undefined, reason: `${archive} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  if (!checkRecord) return { state: 'ok', sha256 };
  const recordFile = join(archive, '..', RECORDED_DIGEST_FILE);
  let recorded: string;
  try {
    recorded = fs.readFileSync(recordFile, 'utf8').trim();
  } catch {
    return { state: 'refused', sha256, reason: `${recordFile}, the digest recorded at build time, is missing or unreadable` };
  }
  if (recorded !== sha256)
    return {
      state: 'refused',
      sha256,
      reason: `${archive} is not the file this package was built with (SHA-256 ${sha256}; recorded at build time: ${recorded.slice(0, 64)})`,
    };
  return { state: 'ok', sha256 };
}

/** What a refusing app says: what happened and what staff do about it. */
export function refusalMessage(reason: string): string {
  return (
    `The kiosk app's files have changed since it was built, so it will not start: ${reason}. ` +
    'Reinstall the package from its original source; if that does not help, send this message to support.'
  );
}
