/**
 * The emulated radio's pieces: btvirt (BlueZ's controller emulator, Debian bluez-test-tools), socat, and the
 * AF_ALG shim with its checker, compiled from tools/btvirt/*.c against OpenSSL's libcrypto. A missing piece is
 * an error naming the apt packages, never a skip.
 */
import { execFile } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { promisify } from 'node:util';
import { cacheDir, compile, exists, findInPath, type CTarget } from '../build/c-helpers.js';
import { CRYPTO_VECTORS, type CryptoVector } from './crypto-vectors.js';

const run = promisify(execFile);

export const APT_PACKAGES = 'bluez-test-tools socat libssl-dev gcc';
const OPENSSL_HEADER = '/usr/include/openssl/evp.h';

export interface BtvirtTools {
  readonly btvirt: string;
  readonly socat: string;
  /** LD_PRELOAD library emulating AF_ALG for btvirt. */
  readonly shim: string;
  /** Reads "ecb|cmac KEY DATA" lines, prints results; run under the shim. */
  readonly checker: string;
}

const TARGETS = {
  shim: {
    source: 'tools/btvirt/af-alg-shim.c',
    stem: 'libaf-alg-shim',
    suffix: '.so',
    flags: ['-shared', '-fPIC'],
    libs: ['-ldl', '-lcrypto'],
  },
  checker: { source: 'tools/btvirt/af-alg-check.c', stem: 'af-alg-check', suffix: '', flags: [], libs: [] },
} as const satisfies Record<'shim' | 'checker', CTarget>;

let built: Promise<BtvirtTools> | undefined;

/** Finds btvirt and socat and compiles (or finds in the cache) the shim and its checker; checks the vectors once. */
export function ensureBtvirtTools(): Promise<BtvirtTools> {
  built ??= build().catch((error: unknown) => {
    built = undefined; // a later call retries, e.g. after apt-get install
    throw error;
  });
  return built;
}

async function build(): Promise<BtvirtTools> {
  const [gcc, btvirt, socat] = await Promise.all([findInPath('gcc'), findInPath('btvirt'), findInPath('socat')]);
  const header = await exists(OPENSSL_HEADER, fsConstants.R_OK);
  const missing = [
    ...(btvirt === undefined ? ['btvirt (bluez-test-tools)'] : []),
    ...(socat === undefined ? ['socat'] : []),
    ...(header ? [] : [`${OPENSSL_HEADER} (libssl-dev)`]),
    ...(gcc === undefined ? ['gcc'] : []),
  ];
  if (gcc === undefined || btvirt === undefined || socat === undefined || !header) {
    throw new Error(
      `emulated radio: missing ${missing.join(', ')}. Install: sudo apt-get install -y --no-install-recommends ${APT_PACKAGES}`,
    );
  }
  const dir = await cacheDir('mdl-kiosk-btvirt');
  const [shim, checker] = await Promise.all([compile(gcc, dir, TARGETS.shim), compile(gcc, dir, TARGETS.checker)]);
  const tools = { btvirt, socat, shim, checker };
  const failures = await checkVectors(tools);
  if (failures.length > 0) throw new Error(`emulated radio: the AF_ALG shim fails its test vectors: ${failures.join('; ')}`);
  return tools;
}

export interface VectorResult {
  readonly vector: CryptoVector;
  readonly got: string;
}

/** Runs every vector through the shim the way BlueZ's crypto.c calls AF_ALG. */
export async function runVectors(
  tools: Pick<BtvirtTools, 'shim' | 'checker'>,
  vectors: readonly CryptoVector[] = CRYPTO_VECTORS,
): Promise<VectorResult[]> {
  const input = vectors.map((v) => `${v.operation} ${v.key} ${v.data === '' ? '-' : v.data}\n`).join('');
  const child = run(tools.checker, [], { env: { ...process.env, LD_PRELOAD: tools.shim }, timeout: 10_000 });
  child.child.stdin?.end(input);
  const { stdout } = await child;
  const lines = stdout.split('\n');
  return vectors.map((vector, i) => ({ vector, got: lines[i] ?? '' }));
}

/** The vectors the shim gets wrong, as "source: expected X, got Y". */
export async function checkVectors(tools: Pick<BtvirtTools, 'shim' | 'checker'>): Promise<string[]> {
  const results = await runVectors(tools);
  return results
    .filter((r) => r.got !== r.vector.expected)
    .map((r) => `${r.vector.source}: expected ${r.vector.expected}, got ${r.got || '(nothing)'}`);
}
