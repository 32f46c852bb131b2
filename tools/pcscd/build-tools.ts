/**
 * Compiles the two C helpers of the private pcscd (the LD_PRELOAD shim and the socket-activation
 * launcher) with gcc, once per source version: the source hash is in the file name.
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

export const PCSCD_PATH = '/usr/sbin/pcscd';
export const VPCD_DRIVER_PATH = '/usr/lib/pcsc/drivers/serial/libifdvpcd.so';
export const APT_PACKAGES = 'pcscd libpcsclite-dev vsmartcard-vpcd gcc';

export interface PcscdTools {
  /** LD_PRELOAD shim: TCP_NODELAY on accepted sockets, wildcard binds moved to loopback. */
  readonly shim: string;
  /** `socket-activate SOCKET [--user NAME] [--die-with-parent] -- PROGRAM ARGS…` */
  readonly launcher: string;
}

const here = path.dirname(fileURLToPath(import.meta.url));
/** The repository root: two levels up, or three when running compiled from dist/tools/pcscd. */
const repoRoot = path.basename(path.resolve(here, '..', '..')) === 'dist' ? path.resolve(here, '..', '..', '..') : path.resolve(here, '..', '..');
/** The C sources stay in tools/pcscd (tsc copies only TypeScript to dist). */
const sourceDir = path.join(repoRoot, 'tools', 'pcscd');

interface Target {
  readonly source: string;
  readonly stem: string;
  readonly suffix: string;
  readonly flags: readonly string[];
  readonly libs: readonly string[];
}

const TARGETS = {
  shim: {
    source: 'nodelay-loopback.c',
    stem: 'libnodelay-loopback',
    suffix: '.so',
    flags: ['-shared', '-fPIC'],
    libs: ['-ldl'],
  },
  launcher: { source: 'socket-activate.c', stem: 'socket-activate', suffix: '', flags: [], libs: [] },
} as const satisfies Record<keyof PcscdTools, Target>;

async function exists(file: string, mode = fsConstants.F_OK): Promise<boolean> {
  try {
    await access(file, mode);
    return true;
  } catch {
    return false;
  }
}

async function findGcc(): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    if (dir !== '' && (await exists(path.join(dir, 'gcc'), fsConstants.X_OK))) return path.join(dir, 'gcc');
  }
  return undefined;
}

/** node_modules/.cache of this repository, or a temp dir of our own when that is not writable. */
async function cacheDir(): Promise<string> {
  const repoCache = path.join(repoRoot, 'node_modules', '.cache', 'mdl-kiosk-pcscd');
  try {
    await mkdir(repoCache, { recursive: true, mode: 0o755 });
    await access(repoCache, fsConstants.W_OK);
    return repoCache;
  } catch {
    const dir = path.join(os.tmpdir(), `mdl-kiosk-pcscd-tools-${String(process.getuid?.() ?? 'user')}`);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    if ((await stat(dir)).uid !== process.getuid?.()) throw new Error(`private pcscd: ${dir} belongs to another user`);
    return dir;
  }
}

async function compile(gcc: string, dir: string, target: Target): Promise<string> {
  const sourcePath = path.join(sourceDir, target.source);
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

let built: Promise<PcscdTools> | undefined;

/**
 * Compiles (or finds in the cache) the shim and the launcher. Fails with the apt packages to install
 * when gcc, pcscd or the vpcd driver is missing.
 */
export function ensurePcscdTools(): Promise<PcscdTools> {
  built ??= build().catch((error: unknown) => {
    built = undefined; // let a later call retry, e.g. after apt-get install
    throw error;
  });
  return built;
}

async function build(): Promise<PcscdTools> {
  const gcc = await findGcc();
  const missing = [
    ...(gcc === undefined ? ['gcc (not in PATH)'] : []),
    ...((await exists(PCSCD_PATH, fsConstants.X_OK)) ? [] : [PCSCD_PATH]),
    ...((await exists(VPCD_DRIVER_PATH)) ? [] : [VPCD_DRIVER_PATH]),
  ];
  if (gcc === undefined || missing.length > 0) {
    throw new Error(
      `private pcscd: missing ${missing.join(', ')}. ` +
        `Install: sudo apt-get install -y --no-install-recommends ${APT_PACKAGES}`,
    );
  }
  const dir = await cacheDir();
  const [shim, launcher] = await Promise.all([compile(gcc, dir, TARGETS.shim), compile(gcc, dir, TARGETS.launcher)]);
  return { shim, launcher };
}
