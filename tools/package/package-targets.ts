/**
 * Which CPUs each OS's package is built for (the `arch` of every target in electron-builder.yml), and which
 * native addons a build for one OS and CPU would ship: electron-builder's own file matcher
 * (app-builder-lib's FileMatcher, as it filters node_modules: `**\/*` then every `!` pattern of `files`)
 * over the installed packages, with `${platform}` and `${arch}` expanded for that target. The package
 * script checks the result before electron-builder runs (a cross-CPU build whose PC/SC addon was compiled
 * for the build machine's CPU is refused, naming the file); the afterPack hook checks the packed app again.
 *
 * `${platform}` in a `files` pattern is the BUILD machine's process.platform (app-builder-lib's
 * macroExpander), not the target's: the patterns keep the right prebuilds only on a build machine of the
 * package's OS, which the package script therefore requires. For a macOS `universal` build electron-builder
 * packs an x64 and an arm64 app (each with its own `${arch}`) and merges them: an addon identical in both —
 * every addon here, there being one node_modules — stays as it is, so it must carry both slices.
 */
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Configuration } from 'electron-builder';
import { builderRequire } from './builder-require.js';
import { addonProblem, AddonReadError, readAddon, type AddonTarget, type TargetCpu } from './native-addons.js';
import type { ProductionModules } from './production-modules.js';
import type { PackageOs } from './signing.js';

export type BuildArch = 'x64' | 'arm64' | 'ia32' | 'armv7l' | 'universal';
export const BUILD_ARCHES: readonly BuildArch[] = ['x64', 'arm64', 'ia32', 'armv7l', 'universal'];
export type Platform = AddonTarget['platform'];

export const PLATFORM_OF: Readonly<Record<PackageOs, Platform>> = { linux: 'linux', win: 'win32', mac: 'darwin' };
export const OS_NAME: Readonly<Record<PackageOs, string>> = { linux: 'Linux', win: 'Windows', mac: 'macOS' };

/** The CPUs a package of this arch runs on (a universal app: both). */
export function cpusOf(arch: BuildArch): readonly TargetCpu[] {
  return arch === 'universal' ? ['x64', 'arm64'] : arch === 'armv7l' ? ['arm'] : [arch];
}

/** The `${arch}` values electron-builder packs with: a universal app is an x64 and an arm64 pack, merged. */
function packArches(arch: BuildArch): readonly BuildArch[] {
  return arch === 'universal' ? ['x64', 'arm64'] : [arch];
}

/**
 * Packages that must ship a loadable addon, per OS (docs/packaging.md "Which CPUs"): without it the reader or
 * the Bluetooth role that OS uses is gone, and no ABI check would notice a file that is not there.
 */
export const REQUIRED_ADDONS: Readonly<Record<Platform, readonly string[]>> = {
  linux: ['smartcard', '@stoprocent/bluetooth-hci-socket'],
  win32: ['smartcard', '@stoprocent/noble'],
  darwin: ['smartcard', '@stoprocent/noble', '@stoprocent/bleno'],
};

export interface PackageTarget {
  readonly os: PackageOs;
  readonly arch: BuildArch;
}

type TargetEntry = string | { readonly target: string; readonly arch?: string | readonly string[] | null };

function targetsOf(config: Configuration, os: PackageOs): TargetEntry[] {
  const raw = (config[os] as { target?: unknown } | null | undefined)?.target;
  if (raw === undefined || raw === null) return [];
  return (Array.isArray(raw) ? raw : [raw]) as TargetEntry[];
}

/** The targets (installer formats) of one OS, by name. */
export function targetNames(config: Configuration, os: PackageOs): string[] {
  return targetsOf(config, os).map((t) => (typeof t === 'string' ? t : t.target));
}

/**
 * The arches electron-builder.yml declares for one OS. Every target must declare them, all the same: an
 * undeclared arch is the build machine's, so what a release contains would depend on who built it.
 */
export function declaredArches(config: Configuration, os: PackageOs): BuildArch[] {
  const targets = targetsOf(config, os);
  if (targets.length === 0) throw new Error(`${os}.target lists no target`);
  let arches: BuildArch[] | undefined;
  for (const t of targets) {
    const name = typeof t === 'string' ? t : t.target;
    const raw = typeof t === 'string' || t.arch === undefined || t.arch === null ? [] : typeof t.arch === 'string' ? [t.arch] : [...t.arch];
    if (raw.length === 0) throw new Error(`${os}.target ${name} declares no arch (it would be the build machine's)`);
    const unknown = raw.filter((a) => !(BUILD_ARCHES as readonly string[]).includes(a));
    if (unknown.length > 0) throw new Error(`${os}.target ${name}: unknown arch ${unknown.join(', ')}`);
    const these = raw as BuildArch[];
    if (arches !== undefined && these.join(',') !== arches.join(','))
      throw new Error(
        `${os}.target ${name} declares ${these.join(', ')}, another target ${arches.join(', ')}: every target of an OS is built for the same arches`,
      );
    arches = these;
  }
  return arches ?? [];
}

/** `files` as electron-builder takes node_modules exclusions from it: the `!` patterns, top level and per OS. */
export function nodeModuleExclusions(config: Configuration, os: PackageOs): string[] {
  const out: string[] = [];
  const add = (files: unknown): void => {
    const list = files === undefined || files === null ? [] : Array.isArray(files) ? (files as unknown[]) : [files];
    for (const entry of list) {
      if (typeof entry === 'string') {
        if (entry.startsWith('!')) out.push(entry);
      } else if (typeof entry === 'object' && entry !== null) {
        const set = entry as { from?: string; filter?: string | string[] };
        if (set.from === undefined || set.from === '.')
          out.push(...(set.filter === undefined ? [] : Array.isArray(set.filter) ? set.filter : [set.filter]));
      }
    }
  };
  add(config.files);
  add((config[os] as { files?: unknown } | null | undefined)?.files);
  return out;
}

interface FileMatcherInstance {
  createFilter(): (file: string, stat: { isDirectory(): boolean; moduleFullFilePath?: string }) => boolean;
}
type FileMatcherClass = new (
  from: string,
  to: string,
  macroExpander: (pattern: string) => string,
  patterns?: string[],
) => FileMatcherInstance;

/** `${platform}` as the target's OS (what it is on that OS's build machine), `${arch}` as the pack's. */
function expander(platform: Platform, arch: BuildArch, os: PackageOs): (pattern: string) => string {
  return (pattern) =>
    pattern.replace(/\$\{([_a-zA-Z./*+]+)\}/g, (whole, name: string) => {
      if (name === 'platform') return platform;
      if (name === 'arch') return arch;
      if (name === 'os') return os;
      if (name === '/*') return '{,/**/*}';
      throw new Error(`cannot expand ${whole} in a files pattern: only \${platform}, \${arch} and \${os} are understood here`);
    });
}

/** The package folders under node_modules that ship (top level, and nested copies inside them). */
function shippedPackageDirs(root: string, modules: ProductionModules): string[] {
  const dirs: string[] = [];
  const visit = (dir: string): void => {
    if (!existsSync(dir)) return;
    dirs.push(dir);
    const nested = join(dir, 'node_modules');
    if (!existsSync(nested)) return;
    for (const entry of readdirSync(nested)) {
      if (entry.startsWith('@')) for (const scoped of readdirSync(join(nested, entry))) visit(join(nested, entry, scoped));
      else if (!entry.startsWith('.')) visit(join(nested, entry));
    }
  };
  for (const name of Object.keys(modules.ships)) visit(join(root, 'node_modules', ...name.split('/')));
  return dirs;
}

/**
 * The `.node` files (`node_modules/…`, relative to the project) a build for `target` would put in the
 * package, given the `files` exclusions (`exclusions`, as nodeModuleExclusions returns them). Walks as
 * electron-builder does: an excluded folder is not entered.
 */
export function shippedAddons(root: string, exclusions: readonly string[], target: PackageTarget, modules: ProductionModules): string[] {
  const { FileMatcher } = builderRequire(root)('app-builder-lib/out/fileMatcher') as { FileMatcher: FileMatcherClass };
  const platform = PLATFORM_OF[target.os];
  const found = new Set<string>();
  for (const arch of packArches(target.arch)) {
    const filter = new FileMatcher(root, root, expander(platform, arch, target.os), ['**/*', ...exclusions]).createFilter();
    const walk = (dir: string, relative: string): void => {
      for (const name of readdirSync(dir).sort()) {
        if (name === 'node_modules') continue; // nested packages are walked on their own
        const path = join(dir, name);
        const rel = `${relative}/${name}`;
        const stat = lstatSync(path);
        if (!filter(path, { isDirectory: () => stat.isDirectory(), moduleFullFilePath: rel })) continue;
        if (stat.isDirectory()) walk(path, rel);
        else if (stat.isFile() && name.endsWith('.node')) found.add(rel);
      }
    };
    for (const dir of shippedPackageDirs(root, modules))
      walk(
        dir,
        dir
          .slice(root.length + 1)
          .split(/[\\/]/)
          .join('/'),
      );
  }
  return [...found].sort();
}

/** The package a `…/node_modules/<name>/…` path belongs to (the innermost one). */
export function packageOfPath(path: string): string | undefined {
  const m = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\/(?:(?!node_modules\/).)*$/.exec(path);
  return m?.[1];
}

/** Required addons (REQUIRED_ADDONS) with no file among `addonFiles`. */
export function missingAddonProblems(addonFiles: readonly string[], platform: Platform, label: string): string[] {
  const have = new Set(addonFiles.map(packageOfPath));
  return REQUIRED_ADDONS[platform]
    .filter((name) => !have.has(name))
    .map(
      (name) =>
        `${label}: no native addon of ${name} is packaged for ${platform}: it needs one (its prebuild for this OS and CPU, or for smartcard the one npm ci built)`,
    );
}

/**
 * What is wrong with the addons a build for `target` would ship (`files` from shippedAddons, read with
 * `read`, by default from the project). Empty: fine.
 */
export function shippedAddonProblems(
  root: string,
  files: readonly string[],
  target: PackageTarget,
  electronVersion: string,
  read: (file: string) => Buffer = (file) => readFileSync(join(root, file)),
): string[] {
  const platform = PLATFORM_OF[target.os];
  const addonTarget: AddonTarget = { platform, cpus: cpusOf(target.arch), electronVersion };
  const label = `${OS_NAME[target.os]} ${target.arch}`;
  const problems: string[] = [];
  for (const file of files) {
    try {
      const problem = addonProblem(readAddon(read(file)), addonTarget);
      if (problem !== undefined) problems.push(`${label}: ${file} ${problem}`);
    } catch (e) {
      if (!(e instanceof AddonReadError)) throw e;
      problems.push(`${label}: ${file} cannot be read as a native module (${e.message})`);
    }
  }
  problems.push(...missingAddonProblems(files, platform, label));
  return problems;
}

/** The build machine's CPU as electron-builder names arches (undefined: one it cannot build for). */
export function hostArch(arch: string = process.arch): BuildArch | undefined {
  return arch === 'arm'
    ? 'armv7l'
    : (BUILD_ARCHES as readonly string[]).includes(arch) && arch !== 'universal'
      ? (arch as BuildArch)
      : undefined;
}

export interface PreflightOptions {
  readonly root: string;
  readonly config: Configuration;
  readonly target: PackageTarget;
  readonly modules: ProductionModules;
  readonly electronVersion: string;
  /** process.platform of the build machine. */
  readonly hostPlatform: string;
}

/**
 * Before electron-builder runs: is this machine able to build `target`? The build machine's OS must be the
 * package's, and every addon the build would ship must load there (the PC/SC addon is compiled by npm ci
 * for the build machine's CPU). Problems name the file and say what to do; empty: go ahead.
 */
export function preflightProblems(options: PreflightOptions): string[] {
  const { root, target } = options;
  const os = OS_NAME[target.os];
  if (options.hostPlatform !== PLATFORM_OF[target.os]) {
    return [
      `a ${os} package is built on ${os}, and this machine runs ${options.hostPlatform}: the files patterns keep the Bluetooth prebuilds of the build machine's OS (\${platform}), and npm ci compiled the PC/SC addon for this machine (docs/packaging.md, "Which CPUs each OS builds")`,
    ];
  }
  const files = shippedAddons(root, nodeModuleExclusions(options.config, target.os), target, options.modules);
  const problems = shippedAddonProblems(root, files, target, options.electronVersion);
  if (problems.some((p) => p.includes('node_modules/smartcard/'))) {
    const want = cpusOf(target.arch).join(' and ');
    problems.push(
      `the PC/SC addon (smartcard) is compiled by npm ci for the CPU of the Node that ran it: build the ${os} ${target.arch} package on an ${want} machine after npm ci there` +
        (target.os === 'mac' && target.arch === 'x64' ? ' (on Apple silicon: an x64 Node under Rosetta, then npm ci)' : '') +
        ' (docs/packaging.md, "Which CPUs each OS builds")',
    );
  }
  return problems;
}
