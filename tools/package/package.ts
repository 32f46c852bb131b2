/**
 * `npm run package:linux|win|mac[:qa] [-- options]`: the release build (after `npm run build:app`).
 *
 *   1. bundles the afterPack hook (tools/package/hook-build.ts): every packed native addon is checked
 *      against the Electron the package ships, and the node_modules against production-modules.json;
 *   2. decides signing (tools/package/signing.ts): a production package for Windows or macOS is built
 *      only when signing is configured, or when `--unsigned` is given on purpose;
 *   3. picks ONE arch among those electron-builder.yml declares for the OS (`--x64`, `--arm64` …; by default
 *      the build machine's) and refuses a build this machine cannot make (tools/package/package-targets.ts):
 *      another OS, or an addon that would ship for the wrong CPU — the PC/SC addon is compiled by npm ci for
 *      the build machine's CPU, so each arch is built on a machine of that CPU;
 *   4. runs electron-builder for the OS, its targets, that arch and the flavour with `--publish never`;
 *   5. checks that the packed Windows or macOS executable really is signed (unless `--unsigned`);
 *   6. writes the SBOM and the provenance statement beside the installers (tools/package/build-records.ts).
 * SOURCE_DATE_EPOCH (default: the commit's time) is passed on, so every file's time is that one
 * (tools/package/reproducible.ts; the afterPack hook sets it, and so do installer tools that honour it).
 *
 * Options: `--unsigned`; an arch flag; `--print-plan` (print the electron-builder command and stop, without
 * looking at this machine); anything else goes to electron-builder unchanged (`-c.electronDist=…`, `--dir`,
 * `-c.publish.channel=pilot` …). Exit codes: 0 built; 1 electron-builder failed or the result is not signed;
 * 2 usage or refused.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builderRequire } from './builder-require.js';
import { CONFIG_FILES, loadWithElectronBuilder, type Flavour } from './builder-config.js';
import { buildPackagingHook } from './hook-build.js';
import { packedResourcesDir, writeBuildRecords } from './build-records.js';
import { sourceDateEpoch } from './reproducible.js';
import { BUILD_ARCHES, declaredArches, hostArch, OS_NAME, preflightProblems, targetNames, type BuildArch } from './package-targets.js';
import { loadProductionModules } from './production-modules.js';
import { keychainIdentity, macSignature, peSignature, signingPlan, type PackageOs, type SigningPlan } from './signing.js';

const OS_FLAG: Readonly<Record<string, PackageOs>> = { '--linux': 'linux', '--win': 'win', '--mac': 'mac' };
const BUILDER_OS: Readonly<Record<PackageOs, string>> = { linux: '--linux', win: '--win', mac: '--mac' };

export interface PackageArgs {
  readonly os: PackageOs;
  readonly flavour: Flavour;
  readonly unsigned: boolean;
  readonly printPlan: boolean;
  /** Undefined: the build machine's. */
  readonly arch: BuildArch | undefined;
  readonly builderArgs: readonly string[];
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export function parsePackageArgs(argv: readonly string[]): PackageArgs {
  let os: PackageOs | undefined;
  let flavour: Flavour = 'production';
  let unsigned = false;
  let printPlan = false;
  let arch: BuildArch | undefined;
  const builderArgs: string[] = [];
  for (const arg of argv) {
    const asOs = OS_FLAG[arg];
    if (asOs !== undefined) {
      if (os !== undefined && os !== asOs) throw new UsageError(`one OS per build: ${BUILDER_OS[os]} and ${arg}`);
      os = asOs;
    } else if (arg === '--qa') flavour = 'qa';
    else if (arg === '--unsigned') unsigned = true;
    else if (arg === '--print-plan') printPlan = true;
    else if ((BUILD_ARCHES as readonly string[]).includes(arg.slice(2)) && arg.startsWith('--')) {
      const asArch = arg.slice(2) as BuildArch;
      // Every addon compiled by npm ci is for one CPU: one arch per build, on a machine of that CPU.
      if (arch !== undefined && arch !== asArch)
        throw new UsageError(`one arch per build: --${arch} and ${arg} (build each on a machine of that CPU, docs/packaging.md)`);
      arch = asArch;
    } else if (arg === '--publish' || arg.startsWith('--publish=') || arg === '-p')
      throw new UsageError('publishing is a separate step: the package scripts always pass --publish never (docs/packaging.md, "Updates")');
    else if (arg === '--config' || arg.startsWith('--config='))
      throw new UsageError('the flavour chooses the electron-builder file: use --qa, or -c.<key>=<value> for single settings');
    else builderArgs.push(arg);
  }
  if (os === undefined) throw new UsageError('which OS: --linux, --win or --mac');
  return { os, flavour, unsigned, printPlan, arch, builderArgs };
}

/** Signing options set in the electron-builder file itself, by their key. */
function configuredSigning(config: Awaited<ReturnType<typeof loadWithElectronBuilder>>, os: PackageOs): string[] {
  const found: string[] = [];
  if (os === 'win') {
    const sign = config.win?.signtoolOptions;
    for (const key of ['certificateSubjectName', 'certificateSha1', 'certificateFile', 'sign'] as const)
      if (sign?.[key] != null) found.push(`win.signtoolOptions.${key}`);
    if (config.win?.azureSignOptions != null) found.push('win.azureSignOptions');
  } else if (os === 'mac' && config.mac?.identity != null) found.push('mac.identity');
  return found;
}

function outputDir(root: string, builderArgs: readonly string[], configured: string | undefined): string {
  const fromArgs = builderArgs.find((a) => a.startsWith('-c.directories.output='))?.slice('-c.directories.output='.length);
  return resolve(root, fromArgs ?? configured ?? 'release');
}

/** After a signed build: is the packed executable signed? Undefined when fine, else why not. */
async function unsignedResult(os: PackageOs, out: string, productFilename: string): Promise<string | undefined> {
  if (os === 'win') {
    const exe = join(out, 'win-unpacked', `${productFilename}.exe`);
    if (!existsSync(exe)) return `${exe} was not produced`;
    return peSignature(await readFile(exe)) === 'signed' ? undefined : `${exe} carries no Authenticode signature`;
  }
  if (os === 'mac') {
    const candidates = ['mac', 'mac-arm64', 'mac-universal']
      .map((d) => join(out, d, `${productFilename}.app`))
      .filter((p) => existsSync(p));
    if (candidates.length === 0) return `no ${productFilename}.app under ${out}`;
    for (const app of candidates) {
      const check = await macSignature(app);
      if (!check.ok) return `${app}: ${check.detail}`;
    }
  }
  return undefined;
}

/** The Electron the package ships, as electron-builder finds it (the installed `electron` package). */
function electronVersionOf(root: string): string {
  const path = join(root, 'node_modules', 'electron', 'package.json');
  const version = (JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown }).version;
  if (typeof version !== 'string') throw new Error(`${path} has no version`);
  return version;
}

function runBuilder(args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<number> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd, env, stdio: 'inherit' });
    child.on('error', fail);
    child.on('close', (code, signal) => done(code ?? (signal === null ? 1 : 128)));
  });
}

async function main(argv: readonly string[]): Promise<number> {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  let args: PackageArgs;
  try {
    args = parsePackageArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(
      `package: ${e.message}\nusage: npm run package:linux|win|mac[:qa] [-- --x64|--arm64] [-- --unsigned] [-- --print-plan] [-- <electron-builder options>]\n`,
    );
    return 2;
  }
  const file = CONFIG_FILES[args.flavour];
  const config = await loadWithElectronBuilder(root, file);
  const plan: SigningPlan = signingPlan({
    os: args.os,
    flavour: args.flavour,
    unsigned: args.unsigned,
    env: process.env,
    builderArgs: args.builderArgs,
    configured: configuredSigning(config, args.os),
    keychainIdentity: args.os === 'mac' ? await keychainIdentity() : undefined,
  });
  if (plan.kind === 'refused') {
    process.stderr.write(`package: ${plan.message}\n`);
    return 2;
  }
  const removed = new Set(plan.kind === 'unsigned' ? plan.envRemoved : []);
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !removed.has(name)));
  const extra: string[] = [];
  if (plan.kind === 'unsigned') {
    env.CSC_IDENTITY_AUTO_DISCOVERY = 'false';
    extra.push(...plan.builderArgs);
    process.stderr.write(`package: WARNING: ${plan.warning}\n`);
  } else if (plan.kind === 'signed') process.stdout.write(`package: signing with ${plan.how}\n`);
  else if (args.unsigned) process.stdout.write('package: Linux packages are not code-signed; --unsigned changes nothing\n');

  const declared = declaredArches(config, args.os);
  const arch = args.arch ?? hostArch();
  if (arch === undefined || !declared.includes(arch)) {
    process.stderr.write(
      `package: ${OS_NAME[args.os]} packages are built for ${declared.join(' and ')} (${file}), not ${arch ?? process.arch}` +
        (args.arch === undefined ? " (this machine's CPU): pass one of " + declared.map((a) => `--${a}`).join(', ') : '') +
        '\n',
    );
    return 2;
  }
  const cli = builderRequire(root).resolve('electron-builder/cli.js');
  // Target names with the arch: electron-builder then builds that arch only (with the OS flag alone it builds
  // every arch the file declares). `--dir` replaces the targets.
  const targets = args.builderArgs.includes('--dir') ? [] : targetNames(config, args.os);
  const builderArgv = [
    cli,
    BUILDER_OS[args.os],
    ...targets,
    `--${arch}`,
    '--publish',
    'never',
    '--config',
    file,
    ...extra,
    ...args.builderArgs,
  ];
  if (args.printPlan) {
    process.stdout.write(`package: electron-builder ${builderArgv.slice(1).join(' ')}\n`);
    return 0;
  }
  const problems = preflightProblems({
    root,
    config,
    target: { os: args.os, arch },
    modules: loadProductionModules(root),
    electronVersion: config.electronVersion ?? electronVersionOf(root),
    hostPlatform: process.platform,
  });
  if (problems.length > 0) {
    process.stderr.write(
      `package: refusing to build the ${OS_NAME[args.os]} ${arch} package on this machine:\n  - ${problems.join('\n  - ')}\n`,
    );
    return 2;
  }
  await buildPackagingHook(root);
  const epoch = sourceDateEpoch(root);
  env.SOURCE_DATE_EPOCH = String(epoch);
  const startedOn = new Date();
  const code = await runBuilder(builderArgv, env, root);
  if (code !== 0) return code;
  const out = outputDir(root, args.builderArgs, config.directories?.output ?? undefined);
  const productFilename = config.productName ?? 'mDL Kiosk';
  if (plan.kind === 'signed') {
    const problem = await unsignedResult(args.os, out, productFilename);
    if (problem !== undefined) {
      process.stderr.write(`package: signing was configured but the packed app is not signed (${problem}): do not publish ${out}\n`);
      return 1;
    }
  }
  const records = await writeBuildRecords({
    root,
    out,
    resourcesDir: packedResourcesDir(args.os, arch, out, productFilename),
    flavour: args.flavour,
    os: args.os,
    arch,
    version: (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version,
    configFile: file,
    electronVersion: config.electronVersion ?? electronVersionOf(root),
    sourceDateEpoch: epoch,
    startedOn,
  });
  process.stdout.write(
    `package: SBOM ${records.sbomFile}, provenance ${records.provenanceFile} (${records.provenance.subject.length} subjects; sign it in the release pipeline, docs/packaging.md)\n`,
  );
  return 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`package: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
