/**
 * The private pcscd's directory: socket, reader.conf.d, driver and shim copies, log. Everything in
 * it must be readable by the unprivileged user pcscd runs as.
 */
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { VPCD_DRIVER_PATH } from './build-tools.js';
import type { PcscdReader } from './pcscd-reader.js';

const DIR_PREFIX = 'mdl-kiosk-pcscd-';

/** The socket path of this process's private pcscd: stable for the process (see pcscd-daemon.ts). */
export function pcscSocketPathForProcess(): string {
  return path.join(os.tmpdir(), `${DIR_PREFIX}${process.pid}`, 'pcscd.comm');
}

/**
 * Default dirs of processes that are gone (a Vitest worker is killed without its 'exit' hook), unless
 * a live process (a detached pcscd) still names the dir on its command line. Best effort.
 */
export async function removeStaleDirs(): Promise<void> {
  const tmp = os.tmpdir();
  const stale = (await readdir(tmp)).filter((name) => {
    const pid = name.startsWith(DIR_PREFIX) ? /^\d+$/.exec(name.slice(DIR_PREFIX.length))?.[0] : undefined;
    return pid !== undefined && !existsSync(`/proc/${pid}`);
  });
  if (stale.length === 0) return;
  const pids = (await readdir('/proc')).filter((p) => /^\d+$/.test(p));
  const commandLines = await Promise.all(pids.map((p) => readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')));
  for (const name of stale) {
    const dir = path.join(tmp, name);
    if (commandLines.some((c) => c.includes(dir))) continue;
    if ((await stat(dir)).uid === process.getuid?.()) await rm(dir, { recursive: true, force: true });
  }
}

export interface Layout {
  readonly dir: string;
  readonly socketPath: string;
  readonly confDir: string;
  readonly logFile: string;
  readonly shim: string;
}

/** Every ancestor must be searchable by others, or a dropped-privilege pcscd cannot read its config. */
export async function assertReachableByOthers(dir: string, user: string): Promise<void> {
  for (let d = dir; ; d = path.dirname(d)) {
    const { mode } = await stat(d);
    if ((mode & 0o001) === 0) {
      throw new Error(
        `private pcscd: ${d} is not searchable by other users, so pcscd running as '${user}' cannot read ${dir}; ` +
          `choose another dir (or TMPDIR), or pass user: null to keep root`,
      );
    }
    if (d === path.dirname(d)) return;
  }
}

/** Copy, world-readable, replaced by rename: a pcscd still mapping the old file keeps its inode. */
export async function installCopy(from: string, to: string): Promise<void> {
  const tmp = `${to}.${process.pid}.tmp`;
  await copyFile(from, tmp);
  await chmod(tmp, 0o644);
  await rename(tmp, to);
}

/**
 * One reader.conf entry per pair of readers. vpcd keeps its per-slot state in a static array indexed
 * by slot only, so two entries sharing one loaded driver overwrite each other's slots (observed:
 * both "00 00" readers then wait on the second entry's port). Each extra entry therefore loads its
 * own copy of the driver (a different file, so dlopen loads it again).
 */
/** The reader.conf.d file of entry `index` (0-based; one entry per pair of readers). */
export function readerConfEntryName(index: number): string {
  return `vpcd-${index + 1}`;
}

export async function writeConfig(layout: Layout, name: string, ports: readonly number[]): Promise<PcscdReader[]> {
  await rm(layout.confDir, { recursive: true, force: true });
  await mkdir(layout.confDir, { mode: 0o755 });
  const readers: PcscdReader[] = [];
  for (const [i, port] of ports.entries()) {
    const friendly = i === 0 ? name : `${name} ${i + 1}`;
    let driver = VPCD_DRIVER_PATH;
    if (i > 0) {
      driver = path.join(layout.dir, `libifdvpcd-${i + 1}.so`);
      await installCopy(VPCD_DRIVER_PATH, driver);
    }
    const entry = `FRIENDLYNAME "${friendly}"\nDEVICENAME /dev/null:${port}\nLIBPATH ${driver}\nCHANNELID ${port}\n`;
    await writeFile(path.join(layout.confDir, readerConfEntryName(i)), entry, { mode: 0o644 });
    readers.push({ name: `${friendly} 00 00`, host: '127.0.0.1', port }, { name: `${friendly} 00 01`, host: '127.0.0.1', port: port + 1 });
  }
  return readers;
}
