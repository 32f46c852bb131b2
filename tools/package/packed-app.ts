/**
 * The checks every packed app goes through before an installer is made from it (the afterPack hook,
 * tools/package/after-pack.ts) and that `npm run package:dry-run` repeats on its output:
 *
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
  /** For the messages: `production`, `qa`. */
  readonly label: string;
}

export async function checkPackedApp(options: CheckPackedAppOptions): Promise<PackedAppReport> {
  const { label } = options;
  const problems: string[] = [];
  for (const f of options.files) {
    if (f.path.endsWith('.node') && !f.unpacked) problems.push(`${label}: native module app.asar${f.path} is inside the archive, where it cannot be loaded (asarUnpack must cover it)`);
  }
  const addons: CheckedAddon[] = [];
  for (const path of await filesUnder(options.resourcesDir)) {
    if (!path.endsWith('.node')) continue;
    const file = relative(options.resourcesDir, path).split(sep).join('/');
    try {
      const info = readAddon(await readFile(path));
      const problem = addonProblem(info, options.target);
      if (problem !== undefined) problems.push(`${label}: native module resources/${file} ${problem}`);
      addons.push({ file, description: `${info.format} ${info.slices.map((s) => `${s.cpu} ${describeRegistration(s.registration)}`).join(' + ')}` });
    } catch (e) {
      if (!(e instanceof AddonReadError)) throw e;
      problems.push(`${label}: native module resources/${file} cannot be read as a native module (${e.message})`);
    }
  }
  const names = options.packages.map(nameOfId);
  problems.push(...packagedModuleProblems(names, options.modules, label));
  return { addons, packages: [...options.packages].sort(), problems };
}
