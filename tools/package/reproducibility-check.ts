/**
 * `npm run package:reproducibility [-- --user NAME] [--commit REV] [--keep]`: the full two-build
 * comparison (docs/packaging.md, "Reproducible packages"). The commit (default HEAD) is cloned into two
 * different folders; each clone gets its own `npm ci`, `npm run build:app` and a pack of both flavours
 * (electron-builder --dir on the stand-in Electron, as the dry run) — the first with umask 022, TZ UTC and
 * the C locale, the second minutes later with umask 077, TZ Pacific/Auckland, another locale and, with
 * `--user` (root only), as another account. Then every file of both app folders is compared (bytes,
 * modes, times) and each difference printed. Exit 0 identical, 1 different, 2 a build failed.
 * The package test (test/package/reproducible.test.ts) does the same from this checkout within CI's time.
 *
 * Internal: `--pack-into DIR` packs both flavours of the checkout it runs in into DIR.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  conditionedCommand,
  conditionedEnv,
  describeConditions,
  otherLocale,
  otherUserUnavailable,
  type BuildConditions,
} from './build-conditions.js';
import { makeFakeElectronDist, packFlavour } from './dry-run.js';
import { buildPackagingHook } from './hook-build.js';
import { compareTrees } from './tree-compare.js';

const FLAVOURS = ['production', 'qa'] as const;

function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  conditions: BuildConditions = {},
): Promise<number> {
  const wrapped = conditionedCommand(command, args, conditions);
  return new Promise((done, fail) => {
    const child = spawn(wrapped.command, wrapped.args, {
      cwd,
      env: conditionedEnv(env, conditions),
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', fail);
    child.on('close', (code) => done(code ?? 1));
  });
}

/** Both flavours of the checkout at `root`, packed into `outDir/<flavour>/linux-unpacked`. */
async function packInto(root: string, outDir: string): Promise<void> {
  await buildPackagingHook(root);
  const fakeDist = join(outDir, 'electron-dist');
  await makeFakeElectronDist(fakeDist);
  for (const flavour of FLAVOURS) await packFlavour(root, flavour, fakeDist, join(outDir, flavour));
}

export interface Side {
  readonly label: string;
  readonly dir: string;
  readonly conditions: BuildConditions;
}

/** Clones `commit` of `source` into `side.dir`, then npm ci, build:app and both flavours packed into `side.dir/../packed`. */
export async function buildSide(source: string, commit: string, side: Side, npmrc: string | undefined): Promise<boolean> {
  process.stdout.write(`\n== ${side.label} build in ${side.dir} (${describeConditions(side.conditions)})\n`);
  await mkdir(dirname(side.dir), { recursive: true });
  if ((await run('git', ['clone', '--quiet', '--no-hardlinks', source, side.dir], tmpdir(), process.env)) !== 0) return false;
  if ((await run('git', ['-c', 'advice.detachedHead=false', 'checkout', '--quiet', commit], side.dir, process.env)) !== 0) return false;
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_cache: join(side.dir, '..', 'npm-cache') };
  if (npmrc !== undefined) env.NPM_CONFIG_USERCONFIG = npmrc;
  if (side.conditions.user !== undefined) {
    // The clone and its npm cache belong to the account that builds in them.
    env.HOME = join(side.dir, '..');
    if ((await run('chown', ['-R', `${side.conditions.user}:`, dirname(side.dir)], tmpdir(), process.env)) !== 0) return false;
  }
  const steps: readonly (readonly string[])[] = [
    ['npm', 'ci', '--no-audit', '--no-fund'],
    ['npm', 'run', 'build:app', '--silent'],
    ['npx', 'tsx', 'tools/package/reproducibility-check.ts', '--pack-into', join(side.dir, '..', 'packed')],
  ];
  for (const [command, ...args] of steps) {
    if (command === undefined) continue;
    if ((await run(command, args, side.dir, env, side.conditions)) !== 0) {
      process.stderr.write(`package:reproducibility: ${side.label} build: ${[command, ...args].join(' ')} failed\n`);
      return false;
    }
  }
  return true;
}

/** The caller's npm configuration (registry, nodedir for the addons npm ci compiles), copied into `work` readable by every build account. */
export async function callerNpmrc(work: string): Promise<string | undefined> {
  const userNpmrc = join(homedir(), '.npmrc');
  if (!existsSync(userNpmrc)) return undefined;
  const npmrc = join(work, 'npmrc');
  await copyFile(userNpmrc, npmrc);
  await chmod(npmrc, 0o644);
  return npmrc;
}

/** Where buildSide leaves a flavour's packed resources folder. */
export function packedResources(side: Side, flavour: (typeof FLAVOURS)[number]): string {
  return join(side.dir, '..', 'packed', flavour, 'linux-unpacked', 'resources');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { user: { type: 'string' }, commit: { type: 'string' }, keep: { type: 'boolean' }, 'pack-into': { type: 'string' } },
    strict: true,
  });
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  if (values['pack-into'] !== undefined) {
    await packInto(root, resolve(values['pack-into']));
    return 0;
  }
  // One commit for both clones, fixed now: `HEAD` may move while the first one builds.
  const commit = execFileSync('git', ['rev-parse', '--verify', `${values.commit ?? 'HEAD'}^{commit}`], {
    cwd: root,
    encoding: 'utf8',
  }).trim();
  process.stdout.write(`package:reproducibility: commit ${commit}\n`);
  const work = await mkdtemp(join(tmpdir(), 'mdl-kiosk-reproducibility-'));
  await chmod(work, 0o755);
  try {
    const npmrc = await callerNpmrc(work);
    const user = values.user;
    if (user !== undefined) {
      const why = otherUserUnavailable(user);
      if (why !== undefined) {
        process.stderr.write(`package:reproducibility: cannot build as ${user}: ${why}\n`);
        return 2;
      }
    } else
      process.stdout.write(
        'package:reproducibility: both builds run as this account (as root, pass --user NAME to build the second as another)\n',
      );
    const sides: Side[] = [
      { label: 'first', dir: join(work, 'a', 'mdl-kiosk'), conditions: { umask: 0o022, timeZone: 'UTC', locale: 'C' } },
      {
        label: 'second',
        dir: join(work, 'elsewhere', 'b', 'kiosk'),
        conditions: { ...(user === undefined ? {} : { user }), umask: 0o077, timeZone: 'Pacific/Auckland', locale: otherLocale() },
      },
    ];
    for (const side of sides) if (!(await buildSide(root, commit, side, npmrc))) return 2;
    let differences = 0;
    for (const flavour of FLAVOURS) {
      const [a, b] = sides.map((s) => dirname(packedResources(s, flavour))) as [string, string];
      const found = await compareTrees(a, b, ['first', 'second']);
      differences += found.length;
      process.stdout.write(
        `\n${flavour}: ${found.length === 0 ? 'identical (every file: bytes, mode, time)' : `${found.length} difference(s):`}\n`,
      );
      for (const line of found) process.stdout.write(`  ${line}\n`);
    }
    return differences === 0 ? 0 : 1;
  } finally {
    if (values.keep === true) process.stdout.write(`package:reproducibility: kept ${work}\n`);
    else await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`package:reproducibility: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(2);
    },
  );
}
