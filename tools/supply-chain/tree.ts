/**
 * What the desktop package ships, by package, read from package-lock.json and node_modules:
 *
 * - `node_modules`: the production dependency tree, i.e. every package reached from package.json's
 *   `dependencies` and `optionalDependencies` through `dependencies`, `optionalDependencies` and required
 *   `peerDependencies` (an optional peer is the consumer's choice: it is in the tree only if something
 *   depends on it for real). electron-builder copies exactly these into the app's node_modules.
 *   A package is `optional` when every path to it crosses an optional edge.
 * - `screen`: packages bundled into dist/renderer by Vite. They are devDependencies, yet their code ships in
 *   every package: found from the bare imports of src/renderer (and the files it reaches by relative
 *   imports, e.g. src/common), plus `react` for the automatic JSX runtime, and closed over their own
 *   dependencies like the tree above (an over-approximation: a dependency used for types only is listed).
 * - `runtime`: `electron` itself (the package is the app's runtime; its downloader dependencies do not ship).
 *
 * Why not `npm sbom --omit dev` or npm's `dev` flags: npm's query selector behind `--omit dev` drops every
 * node that ANY dev path reaches, so zod, undici, js-yaml … (used by production code and by a dev tool)
 * vanish from the "production" SBOM; and the lockfile's `devOptional` flag cannot tell a production
 * optional package from a dev one. Walking the edges is the definition itself.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve as resolvePath, sep } from 'node:path';
import ts from 'typescript';
import { z } from 'zod';
import { parseJson, readJson } from './common.js';

const Deps = z.record(z.string(), z.string());
/** A `license` value as found in the wild: an SPDX string, or the legacy `{ type, url }` object. */
export const LicenseValue = z.union([z.string(), z.looseObject({ type: z.string() })]);

export const LockEntrySchema = z.looseObject({
  name: z.string().optional(),
  version: z.string().optional(),
  resolved: z.string().optional(),
  license: LicenseValue.optional().catch(undefined),
  link: z.boolean().optional(),
  dev: z.boolean().optional(),
  optional: z.boolean().optional(),
  devOptional: z.boolean().optional(),
  hasInstallScript: z.boolean().optional(),
  dependencies: Deps.optional(),
  optionalDependencies: Deps.optional(),
  devDependencies: Deps.optional(),
  peerDependencies: Deps.optional(),
  peerDependenciesMeta: z.record(z.string(), z.looseObject({ optional: z.boolean().optional() })).optional(),
});
export type LockEntry = z.infer<typeof LockEntrySchema>;

export const LockfileSchema = z.looseObject({
  name: z.string().optional(),
  lockfileVersion: z.union([z.literal(2), z.literal(3)]),
  packages: z.record(z.string(), LockEntrySchema).refine((p) => '' in p, 'the root package ("") is missing'),
});
export type Lockfile = z.infer<typeof LockfileSchema>;

/**
 * The fields of an installed package.json the tools read. Lenient: a value of an odd type reads as absent
 * (a licence then counts as undeclared, which the licence check reports) instead of stopping every check.
 */
export const ManifestSchema = z.looseObject({
  name: z.string().optional().catch(undefined),
  version: z.string().optional().catch(undefined),
  license: LicenseValue.optional().catch(undefined),
  licenses: z.array(LicenseValue).optional().catch(undefined),
  scripts: z
    .record(z.string(), z.unknown())
    .transform((r) => Object.fromEntries(Object.entries(r).filter((e): e is [string, string] => typeof e[1] === 'string')))
    .optional()
    .catch(undefined),
  gypfile: z.boolean().optional().catch(undefined),
});
export type Manifest = z.infer<typeof ManifestSchema>;

/** The project's own package.json: here odd types are errors. */
export const ProjectManifestSchema = z.looseObject({
  name: z.string(),
  version: z.string(),
  dependencies: Deps.optional(),
  optionalDependencies: Deps.optional(),
  devDependencies: Deps.optional(),
  allowScripts: z.record(z.string(), z.boolean()).optional(),
});
export type ProjectManifest = z.infer<typeof ProjectManifestSchema>;

export async function readProjectManifest(root: string): Promise<ProjectManifest> {
  return readJson(join(root, 'package.json'), ProjectManifestSchema, 'package.json');
}

export async function readLockfile(root: string): Promise<Lockfile> {
  return readJson(join(root, 'package-lock.json'), LockfileSchema, 'package-lock.json');
}

/** The package name a lockfile location installs (`node_modules/a/node_modules/@s/b` → `@s/b`). */
export function nameAt(location: string): string {
  const at = location.lastIndexOf('node_modules/');
  return at < 0 ? location : location.slice(at + 'node_modules/'.length);
}

/** Node's resolution over lockfile locations: the nearest `node_modules/<name>` up from `from`. */
export function resolveDependency(packages: Lockfile['packages'], from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
    const entry = packages[candidate];
    if (entry !== undefined) return entry.link === true && entry.resolved !== undefined ? entry.resolved : candidate;
    if (base === '') return undefined;
    const up = base.lastIndexOf('/node_modules/');
    base = up < 0 ? '' : base.slice(0, up);
  }
}

type EdgeKind = 'required' | 'optional';

function edgesOf(entry: LockEntry): [string, EdgeKind][] {
  const out: [string, EdgeKind][] = [];
  for (const name of Object.keys(entry.dependencies ?? {})) {
    if (entry.optionalDependencies?.[name] === undefined) out.push([name, 'required']);
  }
  for (const name of Object.keys(entry.optionalDependencies ?? {})) out.push([name, 'optional']);
  for (const name of Object.keys(entry.peerDependencies ?? {})) {
    if (entry.peerDependenciesMeta?.[name]?.optional !== true) out.push([name, 'required']);
  }
  return out;
}

export interface TreeNode {
  readonly location: string;
  readonly name: string;
  readonly version: string;
  /** Every path to it crosses an optional edge. */
  readonly optional: boolean;
  /** The location it was first reached from ('' = the project). */
  readonly via: string;
}

export interface TreeProblem {
  readonly from: string;
  readonly name: string;
  readonly kind: EdgeKind;
}

export interface Walk {
  readonly nodes: Map<string, TreeNode>;
  /** Required edges with no package to resolve to: the lockfile is broken. */
  readonly missing: readonly TreeProblem[];
  /** Optional edges with nothing installed for them (another platform's binary, an absent extra). */
  readonly absentOptional: readonly TreeProblem[];
}

/**
 * Breadth-first over the lockfile from `starts` (locations, or [''] for the project's own production
 * dependencies: its devDependencies are never followed).
 */
export function walk(lock: Lockfile, starts: readonly string[], skipNames: ReadonlySet<string> = new Set()): Walk {
  const packages = lock.packages;
  const nodes = new Map<string, TreeNode>();
  const missing: TreeProblem[] = [];
  const absentOptional: TreeProblem[] = [];
  // Two passes: required edges only (what is reached that way is not optional), then every edge.
  const reach = (followOptional: boolean): Map<string, string> => {
    const seen = new Map<string, string>();
    const queue: [string, string][] = starts.map((s) => [s, '']);
    while (queue.length > 0) {
      const next = queue.shift();
      if (next === undefined) break;
      const [location, via] = next;
      if (seen.has(location)) continue;
      seen.set(location, via);
      const entry = packages[location];
      if (entry === undefined) continue;
      for (const [name, kind] of edgesOf(entry)) {
        if (kind === 'optional' && !followOptional) continue;
        if (skipNames.has(name)) continue; // left out of the package: neither it nor what only it needs ships
        const target = resolveDependency(packages, location, name);
        if (target === undefined) {
          if (followOptional) (kind === 'required' ? missing : absentOptional).push({ from: location, name, kind });
          continue;
        }
        queue.push([target, location]);
      }
    }
    return seen;
  };
  const required = reach(false);
  const all = reach(true);
  for (const [location, via] of all) {
    if (location === '') continue;
    const entry = packages[location];
    if (entry === undefined) {
      missing.push({ from: via, name: nameAt(location), kind: 'required' });
      continue;
    }
    nodes.set(location, {
      location,
      name: entry.name ?? nameAt(location),
      version: entry.version ?? '0.0.0',
      optional: !required.has(location),
      via,
    });
  }
  return { nodes, missing, absentOptional };
}

// ---------------------------------------------------------------- the screen's bundled packages

/** `react-dom/client` → `react-dom`, `@scope/pkg/x?url` → `@scope/pkg`; undefined for relative and node: specifiers. */
export function packageOfSpecifier(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:') || specifier.includes(':')) return undefined;
  const clean = specifier.split('?')[0] ?? specifier;
  const parts = clean.split('/');
  return clean.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Module specifiers a TypeScript file loads at run time: type-only imports and exports are left out. */
export function runtimeSpecifiers(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(
    fileName,
    text,
    ts.ScriptTarget.Latest,
    false,
    fileName.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      if (node.importClause?.phaseModifier !== ts.SyntaxKind.TypeKeyword) found.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!node.isTypeOnly) found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg !== undefined && ts.isStringLiteralLike(arg)) found.push(arg.text);
    } else if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'URL') {
      // new URL('./worker.ts', import.meta.url): Vite bundles what it points at.
      const [first, second] = node.arguments ?? [];
      if (first !== undefined && ts.isStringLiteralLike(first) && second !== undefined && second.getText(source) === 'import.meta.url')
        found.push(first.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

async function listSources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listSources(path)));
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

function resolveRelative(fromFile: string, specifier: string): string | undefined {
  const base = resolvePath(dirname(fromFile), specifier.split('?')[0] ?? specifier);
  const stem = base.replace(/\.[cm]?js$/, '');
  for (const candidate of [base, `${stem}.ts`, `${stem}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')]) {
    if (/\.tsx?$/.test(candidate) && existsSync(candidate)) return candidate;
  }
  return undefined;
}

export interface ScreenImports {
  /** Package names the screen's code loads, sorted. */
  readonly packages: readonly string[];
  /** Source files read (relative to the root), for the record. */
  readonly files: readonly string[];
}

/**
 * The packages the screen's sources import: every .ts/.tsx under `screenDir` except its build config, and
 * every file they reach by relative import (src/common), transitively.
 */
export async function screenImports(root: string, screenDir = 'src/renderer'): Promise<ScreenImports> {
  const dir = join(root, screenDir);
  const queue = (await listSources(dir)).filter((f) => !/(^|[\\/])vite\.config\.[cm]?ts$/.test(f));
  const seen = new Set<string>();
  const packages = new Set<string>();
  while (queue.length > 0) {
    const file = queue.shift();
    if (file === undefined) break;
    if (seen.has(file)) continue;
    seen.add(file);
    if (file.endsWith('.tsx')) packages.add('react'); // the automatic JSX runtime: react/jsx-runtime
    for (const specifier of runtimeSpecifiers(file, await readFile(file, 'utf8'))) {
      if (specifier.startsWith('.')) {
        const target = resolveRelative(file, specifier);
        if (target !== undefined && !relative(root, target).startsWith(`..${sep}`)) queue.push(target);
        continue;
      }
      const name = packageOfSpecifier(specifier);
      if (name !== undefined) packages.add(name);
    }
  }
  return { packages: [...packages].sort(), files: [...seen].map((f) => relative(root, f)).sort() };
}

// ---------------------------------------------------------------- what ships

export type ShipGroup = 'node_modules' | 'screen' | 'runtime';

export interface ShippedPackage {
  /** `name@version`, as npm's SBOM names its components. */
  readonly key: string;
  readonly name: string;
  readonly version: string;
  readonly locations: readonly string[];
  readonly groups: ReadonlySet<ShipGroup>;
  /** In the node_modules tree only through optional edges (false for the screen and the runtime). */
  readonly optional: boolean;
  /** The installed package.json, when node_modules has it. */
  readonly manifest: Manifest | undefined;
  /** The lockfile's `license`, for a package not installed on this machine. */
  readonly lockLicense: z.infer<typeof LicenseValue> | undefined;
}

export interface Shipped {
  readonly packages: readonly ShippedPackage[];
  readonly screen: ScreenImports;
  /** Inconsistencies that make any statement about the tree wrong: fail on these. */
  readonly errors: readonly string[];
  /** Things worth saying (optional packages absent on this machine). */
  readonly notes: readonly string[];
}

function sameKeys(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ka = Object.keys(a ?? {}).sort();
  const kb = Object.keys(b ?? {}).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i]);
}

export interface ShippedOptions {
  /** The screen's sources, relative to root (default src/renderer); null: no screen group. */
  readonly screenDir?: string | null;
  /** Runtime packages (default ['electron']). */
  readonly runtime?: readonly string[];
  /**
   * The packaging's lists of what the desktop package carries (default: `<root>/tools/package/production-modules.json`
   * when it exists; null: none). Packages it leaves out are not in the node_modules group, and a production
   * package it does not classify is an error.
   */
  readonly productionModules?: {
    readonly ships: Readonly<Record<string, string>>;
    readonly leftOut: Readonly<Record<string, string>>;
  } | null;
}

const PRODUCTION_MODULES = 'tools/package/production-modules.json';
const ProductionModulesLists = z.looseObject({ ships: z.record(z.string(), z.string()), leftOut: z.record(z.string(), z.string()) });

async function productionModulesOf(root: string, options: ShippedOptions): Promise<ShippedOptions['productionModules']> {
  if (options.productionModules !== undefined) return options.productionModules;
  const file = join(root, PRODUCTION_MODULES);
  return existsSync(file) ? readJson(file, ProductionModulesLists, PRODUCTION_MODULES) : null;
}

/** Everything above, checked against node_modules (versions installed = versions locked). */
export async function collectShipped(root: string, options: ShippedOptions = {}): Promise<Shipped> {
  const lock = await readLockfile(root);
  const project = await readProjectManifest(root);
  const errors: string[] = [];
  const notes: string[] = [];
  const rootEntry = lock.packages[''];
  for (const field of ['dependencies', 'optionalDependencies'] as const) {
    if (!sameKeys(rootEntry?.[field], project[field])) {
      errors.push(`package-lock.json's ${field} differ from package.json's: run \`npm install\` and commit the lockfile`);
    }
  }

  const groups = new Map<string, Set<ShipGroup>>();
  const optional = new Map<string, boolean>();
  const add = (location: string, group: ShipGroup, isOptional: boolean): void => {
    const set = groups.get(location) ?? new Set<ShipGroup>();
    set.add(group);
    groups.set(location, set);
    optional.set(location, (optional.get(location) ?? true) && isOptional);
  };

  const lists = await productionModulesOf(root, options);
  // What electron-builder.yml leaves out does not ship, and neither does what only it needs.
  const production = walk(lock, [''], new Set(lists == null ? [] : Object.keys(lists.leftOut)));
  for (const m of production.missing) errors.push(`package-lock.json has nothing for ${m.name}, which ${m.from || 'the project'} needs`);
  for (const m of production.absentOptional)
    notes.push(`optional ${m.name} (of ${m.from || 'the project'}) is not in the lockfile: not shipped`);
  for (const node of production.nodes.values()) {
    if (lists != null && !(node.name in lists.ships))
      errors.push(
        `${node.name} is in the production dependency tree but ${PRODUCTION_MODULES} does not list it as shipping (or leave it out)`,
      );
    add(node.location, 'node_modules', node.optional);
  }

  const screenDir = options.screenDir === undefined ? 'src/renderer' : options.screenDir;
  const screen = screenDir === null ? { packages: [], files: [] } : await screenImports(root, screenDir);
  const screenStarts: string[] = [];
  for (const name of screen.packages) {
    const location = resolveDependency(lock.packages, '', name);
    if (location === undefined) errors.push(`the screen imports ${name}, which package-lock.json does not have`);
    else screenStarts.push(location);
  }
  const bundled = walk(lock, screenStarts);
  for (const m of bundled.missing) errors.push(`package-lock.json has nothing for ${m.name}, which ${m.from} needs`);
  for (const node of bundled.nodes.values()) add(node.location, 'screen', false);

  for (const name of options.runtime ?? ['electron']) {
    const location = resolveDependency(lock.packages, '', name);
    if (location === undefined) errors.push(`the runtime package ${name} is not in package-lock.json`);
    else add(location, 'runtime', false);
  }

  const byKey = new Map<
    string,
    {
      name: string;
      version: string;
      locations: string[];
      groups: Set<ShipGroup>;
      optional: boolean;
      manifest?: Manifest;
      lockLicense?: z.infer<typeof LicenseValue>;
    }
  >();
  for (const [location, set] of groups) {
    const entry = lock.packages[location];
    const lockedName = entry?.name ?? nameAt(location);
    const version = entry?.version ?? '0.0.0';
    const manifestPath = join(root, location, 'package.json');
    let manifest: Manifest | undefined;
    if (existsSync(manifestPath)) {
      manifest = parseJson(await readFile(manifestPath, 'utf8'), ManifestSchema, `${location}/package.json`);
      if (manifest.version !== version) {
        errors.push(`${location} is ${manifest.version ?? 'unversioned'} but package-lock.json locks ${version}: run \`npm ci\``);
      }
    } else if (optional.get(location) === true) {
      notes.push(`${lockedName}@${version} (optional) is not installed on this machine`);
    } else {
      errors.push(`${location} is not installed: run \`npm ci\``);
    }
    const name = manifest?.name ?? lockedName;
    const key = `${name}@${version}`;
    const item = byKey.get(key) ?? { name, version, locations: [], groups: new Set<ShipGroup>(), optional: true };
    item.locations.push(location);
    for (const g of set) item.groups.add(g);
    item.optional = item.optional && optional.get(location) === true;
    item.manifest ??= manifest;
    item.lockLicense ??= entry?.license;
    byKey.set(key, item);
  }
  const packages: ShippedPackage[] = [...byKey.entries()]
    .map(([key, p]) => ({
      key,
      name: p.name,
      version: p.version,
      locations: p.locations.sort(),
      groups: p.groups,
      optional: p.optional,
      manifest: p.manifest,
      lockLicense: p.lockLicense,
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { packages, screen, errors, notes };
}

/** `node_modules, screen` / `node_modules (optional)`: how a package ships, for tables. */
export function describeGroups(p: Pick<ShippedPackage, 'groups' | 'optional'>): string {
  return [...p.groups]
    .sort()
    .map((g) => (g === 'node_modules' && p.optional ? 'node_modules (optional)' : g))
    .join(', ');
}
