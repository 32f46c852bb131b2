/**
 * Compiles the small C helpers of the test tools (tools/pcscd, tools/btvirt) with gcc, once per source
 * version: the hash of the source and the flags is in the output's file name, so an edited source is
 * rebuilt and parallel test processes share one build.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { access, mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

const here = path.dirname(fileURLToPath(import.meta.url));
/** The repository root: two levels up, or three when running compiled from dist/tools/build. */
export const repoRoot =
  path.basename(path.resolve(here, '..', '..')) === 'dist' ? path.resolve(here, '..', '..', '..') : path.resolve(here, '..', '..');

export interface CTarget {
  /** Path of the C source relative to the repository root (tsc copies only TypeScript to dist). */
  readonly source: string;
  readonly stem: string;
  readonly suffix: '' | '.so';
  readonly flags: readonly string[];
  readonly libs: readonly string[];
}

export async function exists(file: string, mode = fsConstants.F_OK): Promise<boolean> {
  try {
    await access(file, mode);
    return true;
  } catch {
    return false;
  }
}

/** `name` in PATH, executable, or undefined. */
export async function findInPath(name: string, extra: readonly string[] = []): Promise<string | undefined> {
  for (const dir of [...(process.env.PATH ?? '/usr/bin:/bin').split(':'), ...extra]) {
    if (dir !== '' && (await exists(path.join(dir, name), fsConstants.X_OK))) return path.join(dir, name);
  }
  return undefined;
}

/** node_modules/.cache/<name> of this repository, or a temp dir of our own when that is not writable. */
export async function cacheDir(name: string): Promise<string> {
  const repoCache = path.join(repoRoot, 'node_modules', '.cache', name);
  try {
    await mkdir(repoCache, { recursive: true, mode: 0o755 });
    await access(repoCache, fsConstants.W_OK);
    return repoCache;
  } catch {
    const dir = path.join(os.tmpdir(), `${name}-tools-${String(process.getuid?.() ?? 'user')}`);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    if ((await stat(dir)).uid !== process.getuid?.()) throw new Error(`${name}: ${dir} belongs to another user`);
    return dir;
  }
}

export async function compile(gcc: string, dir: string, target: CTarget): Promise<string> {
  const sourcePath = path.join(repoRoot, target.source);
  const source = await readFile(sourcePath);
  const hash = createHash('sha256')
    .update(source)
    .update(JSON.stringify([target.flags, target.libs]))
    .digest('hex')
    .slice(0, 16);
  const out = path.join(dir, `${target.stem}-${hash}${target.suffix}`);
  if (await exists(out)) return out;
  // Compile to a private name, then rename: parallel test processes may build at the same time.
  const tmp = `${out}.${process.pid}.tmp`;
  try {
    await run(gcc, ['-O2', '-Wall', '-Wextra', ...target.flags, '-o', tmp, sourcePath, ...target.libs]);
    await rename(tmp, out);
  } catch (error) {
    await rm(tmp, { force: true });
    const stderr = (error as { stderr?: unknown }).stderr;
    throw new Error(`gcc failed on ${sourcePath}: ${typeof stderr === 'string' ? stderr : String(error)}`);
  }
  return out;
}
