/**
 * The checks every packed app goes through before an installer is made from it (the afterPack hook,
 * tools/package/after-pack.ts) and that `npm run package:dry-run` repeats on its output:
 *
 * - the addons the package's OS needs are there (tools/package/package-targets.ts REQUIRED_ADDONS: the PC/SC
 *   addon, and the Bluetooth library that OS runs on), since a missing file fails no ABI check;
 * - every native addon in the app — inside app.asar (where it cannot load at all) or anywhere in the
 *   resources folder, app.asar.unpacked included — is read (tools/package/native-addons.ts) and must load
 *   in the Electron the package ships: the package's OS and CPU, glibc on Linux, and N-API or Electron's own
 *   NODE_MODULE_VERSION;
 * - the app's node_modules are exactly the packages tools/package/production-modules.json says ship.
 *
 * Problems name the file or the package.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { z } from 'zod';
import { addonProblem, AddonReadError, describeRegistration, readAddon, type AddonTarget } from './native-addons.js';
import { missingAddonProblems } from './package-targets.js';
import { packagedModuleProblems, type ProductionModules } from './production-modules.js';

export interface PackEntry {
  /** `/dist/app/main.js` */
  readonly path: string;
  readonly unpacked: boolean;
}

/** Lines of @electron/asar's `listPackage(…, { isPack: true })` → files with their packed/unpacked state. */
export function parseAsarListing(lines: readonly string[]): PackEntry[] {
  const entries = lines.map((line) => {
    const m = /^\s*(pack|unpack)\s*:\s*(\/.*)$/.exec(line);
    if (m === null) throw new Error(`unexpected asar listing line: ${line}`);
    return { path: m[2] ?? '', unpacked: m[1] === 'unpack' };
  });
  const paths = entries.map((e) => e.path).sort();
  const isDir = new Set<string>();
  for (let i = 0; i + 1 < paths.length; i++) {
    const p = paths[i] ?? '';
    if ((paths[i + 1] ?? '').startsWith(`${p}/`)) isDir.add(p);
  }
  return entries.filter((e) => !isDir.has(e.path));
}

const PACKAGE_MANIFEST = /^(.*\/node_modules\/(?:@[^/]+\/)?[^/@][^/]*)\/package\.json$/;
const Manifest = z.object({ name: z.string(), version: z.string() });

/** `name@version` of every package in the archive, from its own package.json. */
export function packagedPackages(files: readonly PackEntry[], extract: (file: string) => Buffer): string[] {
  const ids: string[] = [];
  for (const f of files) {
    if (PACKAGE_MANIFEST.exec(f.path) === null) continue;
    const parsed = Manifest.safeParse(JSON.parse(extract(f.path.slice(1)).toString('utf8')));
    if (parsed.success) ids.push(`${parsed.data.name}@${parsed.data.version}`);
  }
  return ids;
}

const Dependencies = z.looseObject({
  name: z.string().optional(),
  version: z.string().optional(),
  dependencies: z.record(z.string(), z.string()).optional(),
  optionalDependencies: z.record(z.string(), z.string()).optional(),
});

/**
 * Package folders of the archive that nothing reaches: starting from the app's own package.json, each
 * package's `dependencies` and `optionalDependencies` are resolved as Node resolves them (the nearest
 * node_modules up the tree), left-out names not followed. A folder no path reaches is a copy only a left-out
 * package uses (or junk): it should not ship.
 */
export function unreachablePackages(
  files: readonly PackEntry[],
  extract: (file: string) => Buffer,
  leftOut: ReadonlySet<string>,
): string[] {
  const dirs = new Set<string>();
  for (const f of files) {
    const m = PACKAGE_MANIFEST.exec(f.path);
    if (m?.[1] !== undefined) dirs.add(m[1]);
  }
  const manifest = (dir: string): z.infer<typeof Dependencies> =>
    Dependencies.parse(JSON.parse(extract(`${dir}/package.json`.slice(1)).toString('utf8')));
  const resolveFrom = (from: string, name: string): string | undefined => {
    for (let dir = from; ; ) {
      const candidate = `${dir}/node_modules/${name}`;
      if (dirs.has(candidate)) return candidate;
      if (dir === '') return undefined;
      const at = dir.lastIndexOf('/node_modules/');
      dir = at < 0 ? '' : dir.slice(0, at);
    }
  };
  const reached = new Set<string>();
  const queue: string[] = [];
  const follow = (from: string, deps: Record<string, string>): void => {
    for (const name of Object.keys(deps)) {
      if (leftOut.has(name)) continue;
      const target = resolveFrom(from, name);
      if (target !== undefined && !reached.has(target)) {
        reached.add(target);
        queue.push(target);
      }
    }
  };
  const root = manifest('');
  follow('', { ...root.dependencies, ...root.optionalDependencies });
  for (let dir = queue.shift(); dir !== undefined; dir = queue.shift()) {
    const m = manifest(dir);
    follow(dir, { ...m.dependencies, ...m.optionalDependencies });
  }
  return [...dirs].filter((d) => !reached.has(d)).sort();
}

/** `name` of `name@version` (scoped names keep their first `@`). */
export const nameOfId = (id: string): string => id.slice(0, id.lastIndexOf('@'));

export interface CheckedAddon {
  /** Relative to the resources folder, `/` separated. */
  readonly file: string;
  readonly description: string;
}

export interface PackedAppReport {
  readonly addons: readonly CheckedAddon[];
  readonly packages: readonly string[];
  readonly problems: readonly string[];
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

export interface CheckPackedAppOptions {
  /** `resources` (Linux, Windows) or `<App>.app/Contents/Resources` (macOS). */
  readonly resourcesDir: string;
  /** The archive's files (parseAsarListing of app.asar). */
  readonly files: readonly PackEntry[];
  /** `name@version` of the archive's packages (packagedPackages). */
  readonly packages: readonly string[];
  readonly target: AddonTarget;
  readonly modules: ProductionModules;
  /** Reads a file of the archive (`node_modules/x/package.json`). */
  readonly extract: (file: string) => Buffer;
  /** For the messages: `production`, `qa`. */
  readonly label: string;
}

export async function checkPackedApp(options: CheckPackedAppOptions): Promise<PackedAppReport> {
  const { label } = options;
  const problems: string[] = [];
  for (const f of options.files) {
    if (f.path.endsWith('.node') && !f.unpacked)
      problems.push(
        `${label}: native module app.asar${f.path} is inside the archive, where it cannot be loaded (asarUnpack must cover it)`,
      );
  }
  const addons: CheckedAddon[] = [];
  for (const path of await filesUnder(options.resourcesDir)) {
    if (!path.endsWith('.node')) continue;
    const file = relative(options.resourcesDir, path).split(sep).join('/');
    try {
      const info = readAddon(await readFile(path));
      const problem = addonProblem(info, options.target);
      if (problem !== undefined) problems.push(`${label}: native module resources/${file} ${problem}`);
      addons.push({
        file,
        description: `${info.format} ${info.slices.map((s) => `${s.cpu} ${describeRegistration(s.registration)}`).join(' + ')}`,
      });
    } catch (e) {
      if (!(e instanceof AddonReadError)) throw e;
      problems.push(`${label}: native module resources/${file} cannot be read as a native module (${e.message})`);
    }
  }
  problems.push(
    ...missingAddonProblems(
      addons.map((a) => a.file),
      options.target.platform,
      label,
    ),
  );
  const names = options.packages.map(nameOfId);
  problems.push(...packagedModuleProblems(names, options.modules, label));
  for (const dir of unreachablePackages(options.files, options.extract, new Set(Object.keys(options.modules.leftOut)))) {
    problems.push(
      `${label}: ${dir.slice(1)} is packaged, but nothing that ships depends on it (a copy only a left-out package uses): exclude it in electron-builder.yml`,
    );
  }
  return { addons, packages: [...options.packages].sort(), problems };
}
