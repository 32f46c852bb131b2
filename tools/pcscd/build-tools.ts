/**
 * Compiles the two C helpers of the private pcscd (the LD_PRELOAD shim and the socket-activation
 * launcher) with gcc, once per source version: the source hash is in the file name.
 */
import { constants as fsConstants } from 'node:fs';
import { cacheDir, compile, exists, findInPath, type CTarget } from '../build/c-helpers.js';

export const PCSCD_PATH = '/usr/sbin/pcscd';
export const VPCD_DRIVER_PATH = '/usr/lib/pcsc/drivers/serial/libifdvpcd.so';
export const APT_PACKAGES = 'pcscd libpcsclite-dev vsmartcard-vpcd gcc';

export interface PcscdTools {
  /** LD_PRELOAD shim: TCP_NODELAY on accepted sockets, wildcard binds moved to loopback. */
  readonly shim: string;
  /** `socket-activate SOCKET [--user NAME] [--die-with-parent] -- PROGRAM ARGS…` */
  readonly launcher: string;
}

const TARGETS = {
  shim: {
    source: 'tools/pcscd/nodelay-loopback.c',
    stem: 'libnodelay-loopback',
    suffix: '.so',
    flags: ['-shared', '-fPIC'],
    libs: ['-ldl'],
  },
  launcher: { source: 'tools/pcscd/socket-activate.c', stem: 'socket-activate', suffix: '', flags: [], libs: [] },
} as const satisfies Record<keyof PcscdTools, CTarget>;

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
  const gcc = await findInPath('gcc');
  const missing = [
    ...(gcc === undefined ? ['gcc (not in PATH)'] : []),
    ...((await exists(PCSCD_PATH, fsConstants.X_OK)) ? [] : [PCSCD_PATH]),
    ...((await exists(VPCD_DRIVER_PATH)) ? [] : [VPCD_DRIVER_PATH]),
  ];
  if (gcc === undefined || missing.length > 0) {
    throw new Error(
      `private pcscd: missing ${missing.join(', ')}. ` + `Install: sudo apt-get install -y --no-install-recommends ${APT_PACKAGES}`,
    );
  }
  const dir = await cacheDir('mdl-kiosk-pcscd');
  const [shim, launcher] = await Promise.all([compile(gcc, dir, TARGETS.shim), compile(gcc, dir, TARGETS.launcher)]);
  return { shim, launcher };
}
