/**
 * The support bundle: one `.tar.gz` with what support needs to understand a kiosk — a summary to read
 * first, who made it (the running kiosk or a separate process), the clock, the proxy and route to the
 * backend, the data folder's room, its versions, the configuration with every secret removed and the
 * source of each key, the screen's state and device states, the self-test, the diagnostics (events and
 * counts), the health and relaunch records, and the most recent log files — and nothing personal or
 * secret. The kiosk logs events, never data; on top of that, every text that goes in is scrubbed of the
 * secrets the kiosk knows (API keys, the PIN hash, proxy credentials, the browser host's token) before
 * it is written.
 *
 * Written to a temporary folder of its own (0700), packed, and renamed into place (0600): a bundle is
 * whole or absent.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { arch, release, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { create as createTar } from 'tar';
import { currentPlatform } from '../platform/os.js';

/** Log files taken: the newest, up to this much in all (support wants the last hours, not the archive). */
export const MAX_LOG_BYTES = 8 * 1024 * 1024;
const MAX_LOG_FILES = 10;
const LOG_NAME = /^mdl-kiosk[.\w-]*\.log$/;

export interface SupportBundleInput {
  /** Parts by file name: JSON (`config.json`, `diagnostics.json`, …), or text as it is for a string (`summary.txt`). */
  readonly parts: Readonly<Record<string, unknown>>;
  /** Files copied as they are when they exist (health record, relaunch record), by name in the bundle. */
  readonly files?: Readonly<Record<string, string>>;
  /** The app's log folder: its newest `mdl-kiosk*.log` files go in, up to {@link MAX_LOG_BYTES}. */
  readonly logDir?: string;
  /** Secrets the kiosk knows: removed from every text that goes in. */
  readonly secrets: readonly string[];
  readonly now?: () => number;
}

export interface SupportBundle {
  readonly path: string;
  readonly bytes: number;
  /** The names inside the archive. */
  readonly entries: readonly string[];
}

/** What every bundle says about where it was made. */
export function runtimeVersions(extra: Record<string, string> = {}): Record<string, string> {
  const versions: Record<string, string> = {
    node: process.versions.node,
    platform: currentPlatform(),
    arch: arch(),
    osRelease: release(),
    ...extra,
  };
  const electron = (process.versions as Record<string, string | undefined>).electron;
  if (electron !== undefined) versions.electron = electron;
  const chrome = (process.versions as Record<string, string | undefined>).chrome;
  if (chrome !== undefined) versions.chromium = chrome;
  return versions;
}

/** Every occurrence of each secret (at least 4 characters: shorter ones would shred ordinary text) removed. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    out = out.split(secret).join('[removed]');
  }
  return out;
}

async function newestLogs(dir: string): Promise<{ name: string; path: string }[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => LOG_NAME.test(n));
  } catch {
    return [];
  }
  const withTimes = await Promise.all(
    names.map(async (name) => {
      const path = join(dir, name);
      const info = await stat(path).catch(() => undefined);
      return info?.isFile() ? { name, path, mtime: info.mtimeMs, size: info.size } : undefined;
    }),
  );
  const files = withTimes.filter((f) => f !== undefined).sort((a, b) => b.mtime - a.mtime);
  const taken: { name: string; path: string }[] = [];
  let bytes = 0;
  for (const file of files.slice(0, MAX_LOG_FILES)) {
    if (bytes + file.size > MAX_LOG_BYTES && taken.length > 0) break;
    taken.push({ name: file.name, path: file.path });
    bytes += file.size;
  }
  return taken;
}

/** The end of a log file, at most `max` bytes, from the start of a line. */
async function logTail(path: string, max: number): Promise<string> {
  const text = await readFile(path, 'utf8');
  if (Buffer.byteLength(text) <= max) return text;
  const tail = Buffer.from(text).subarray(-max).toString('utf8');
  return tail.slice(tail.indexOf('\n') + 1);
}

/** Writes the bundle to `target` (a `.tar.gz`); returns where, how big and what is in it. */
export async function writeSupportBundle(target: string, input: SupportBundleInput): Promise<SupportBundle> {
  const path = resolve(target);
  const staging = await mkdtemp(join(tmpdir(), 'mdl-kiosk-support-'));
  const root = 'mdl-kiosk-support';
  const folder = join(staging, root);
  const entries: string[] = [];
  try {
    await mkdir(join(folder, 'logs'), { recursive: true, mode: 0o700 });
    const put = async (name: string, text: string): Promise<void> => {
      await writeFile(join(folder, name), scrub(text, input.secrets), { mode: 0o600 });
      entries.push(`${root}/${name}`);
    };
    const made = new Date((input.now ?? Date.now)()).toISOString();
    for (const [name, value] of Object.entries(input.parts))
      await put(name, typeof value === 'string' ? value : `${JSON.stringify(value, null, 2)}\n`);
    for (const [name, source] of Object.entries(input.files ?? {})) {
      const text = await readFile(source, 'utf8').catch(() => undefined);
      if (text !== undefined) await put(name, text);
    }
    let logBytes = MAX_LOG_BYTES;
    for (const log of input.logDir === undefined ? [] : await newestLogs(input.logDir)) {
      if (logBytes <= 0) break;
      const text = await logTail(log.path, logBytes).catch(() => '');
      logBytes -= Buffer.byteLength(text);
      await put(join('logs', basename(log.name)), text);
    }
    await put(
      'README.txt',
      [
        `mDL Kiosk support bundle, made ${made}.`,
        'No personal data and no secrets: the kiosk logs events, never data, and every file here was scrubbed',
        'of the API keys, the staff PIN hash, proxy credentials and the host token before it was written.',
        `Files: ${[...entries.map((e) => e.slice(root.length + 1)), 'README.txt'].join(', ')}`,
        '',
      ].join('\n'),
    );
    await mkdir(dirname(path), { recursive: true });
    const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      await createTar({ gzip: true, file: temp, cwd: staging, portable: true }, [root]);
      await chmod(temp, 0o600);
      await rename(temp, path);
    } catch (e) {
      await rm(temp, { force: true });
      throw e;
    }
    return { path, bytes: (await stat(path)).size, entries };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
