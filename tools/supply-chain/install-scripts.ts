/**
 * `npm run install-scripts:check` (CI: .ci/run): every installed package with an install script is either
 * allowed or denied by name in package.json's `allowScripts` (npm 11 runs a dependency's install scripts
 * only when allowScripts allows them), every allowScripts entry still matches an installed package that has
 * one, and README.md's "Supply chain" section justifies every entry (it names each one in backticks).
 *
 * "Install script" means what npm runs at install: `preinstall`, `install`, `postinstall`, `prepare` for a
 * package not from the registry (git, file), and the implicit `node-gyp rebuild` of a package with a
 * binding.gyp and neither preinstall nor install (unless `gypfile: false`) — the same rules as npm's own
 * `npm install-scripts ls`, read here from node_modules for the whole tree (dev dependencies included: their
 * scripts run on developer machines and in CI).
 *
 * Keys are `name` or `name@x.y.z`; a `false` entry wins over a `true` one. Exit 0 when all is consistent,
 * 1 otherwise, naming each package or entry.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT, formatTable, isMain, parseJson } from './common.js';
import { ManifestSchema, nameAt, readLockfile, readProjectManifest, walk, type Lockfile } from './tree.js';

export interface InstalledPackage {
  readonly name: string;
  readonly version: string;
  readonly location: string;
  /** The install-time scripts npm would run, by event (`install: node-gyp rebuild (implicit: binding.gyp)`). */
  readonly scripts: Readonly<Record<string, string>>;
  /** `production`, `production (optional)` or `dev`. */
  readonly tree: string;
}

const REGISTRY_TARBALL = /^https?:\/\/[^/]+\/.+\/-\/[^/]+-\d/;

/** npm's rules (arborist's install-scripts.js) applied to one package.json. */
export function installScriptsOf(
  manifest: { scripts?: Record<string, string> | undefined; gypfile?: boolean | undefined },
  options: { hasBindingGyp: boolean; resolved?: string | undefined },
): Record<string, string> {
  const scripts = manifest.scripts ?? {};
  const found: Record<string, string> = {};
  for (const event of ['preinstall', 'install', 'postinstall'] as const) {
    const body = scripts[event];
    if (body !== undefined && body !== '') found[event] = body;
  }
  const fromRegistry = options.resolved === undefined || REGISTRY_TARBALL.test(options.resolved);
  if (scripts.prepare !== undefined && scripts.prepare !== '' && !fromRegistry) found.prepare = scripts.prepare;
  if (found.preinstall === undefined && found.install === undefined && manifest.gypfile !== false && options.hasBindingGyp) {
    found.install = 'node-gyp rebuild (implicit: binding.gyp)';
  }
  return found;
}

/** Every installed package of the lockfile, with its install scripts (empty for most). */
export async function installedPackages(root: string, lock: Lockfile): Promise<InstalledPackage[]> {
  const production = walk(lock, ['']).nodes;
  const out: InstalledPackage[] = [];
  for (const [location, entry] of Object.entries(lock.packages)) {
    if (location === '' || entry.link === true || !location.includes('node_modules/')) continue;
    const manifestPath = join(root, location, 'package.json');
    if (!existsSync(manifestPath)) continue; // another platform's optional package
    const manifest = parseJson(await readFile(manifestPath, 'utf8'), ManifestSchema, `${location}/package.json`);
    const prod = production.get(location);
    out.push({
      name: manifest.name ?? nameAt(location),
      version: manifest.version ?? entry.version ?? '0.0.0',
      location,
      scripts: installScriptsOf(manifest, { hasBindingGyp: existsSync(join(root, location, 'binding.gyp')), resolved: entry.resolved }),
      tree: prod === undefined ? 'dev' : prod.optional ? 'production (optional)' : 'production',
    });
  }
  return out;
}

export type AllowKey = { readonly name: string; readonly version?: string } | { readonly error: string };

/** `esbuild` → any version; `@scope/pkg@1.2.3` → that version only. Ranges are not read here. */
export function parseAllowKey(key: string): AllowKey {
  const at = key.lastIndexOf('@');
  if (at <= 0) return /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(key) ? { name: key } : { error: 'not a package name' };
  const name = key.slice(0, at);
  const version = key.slice(at + 1);
  if (!/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/.test(version)) {
    return { error: `"${version}" is not an exact version: use \`${name}\` or \`${name}@x.y.z\`` };
  }
  return { name, version };
}

function matches(key: AllowKey, p: Pick<InstalledPackage, 'name' | 'version'>): boolean {
  return !('error' in key) && key.name === p.name && (key.version === undefined || key.version === p.version);
}

/** The text of a `## <title>` section of a Markdown file, up to the next `## ` heading. */
export function markdownSection(markdown: string, title: string): string | undefined {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim() === `## ${title}`);
  if (start < 0) return undefined;
  const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

export interface ScriptRow {
  readonly pkg: InstalledPackage;
  readonly decision: 'allowed' | 'denied' | 'UNREVIEWED';
  readonly entry?: string;
}

export interface ScriptsReport {
  readonly rows: readonly ScriptRow[];
  readonly problems: readonly string[];
}

export const README_SECTION = 'Supply chain';

/**
 * Pure: judges the installed packages against allowScripts and the README section (undefined = the section
 * is missing).
 */
export function checkInstallScripts(
  installed: readonly InstalledPackage[],
  allowScripts: Readonly<Record<string, boolean>>,
  readmeSection: string | undefined,
): ScriptsReport {
  const problems: string[] = [];
  const entries = Object.entries(allowScripts).map(([key, value]) => ({ key, value, parsed: parseAllowKey(key) }));
  for (const e of entries) {
    if ('error' in e.parsed) problems.push(`BAD allowScripts key "${e.key}": ${e.parsed.error}`);
  }
  const withScripts = installed.filter((p) => Object.keys(p.scripts).length > 0);
  const rows: ScriptRow[] = withScripts.map((pkg) => {
    const applying = entries.filter((e) => matches(e.parsed, pkg));
    const denial = applying.find((e) => !e.value);
    const approval = applying.find((e) => e.value);
    if (denial !== undefined) return { pkg, decision: 'denied', entry: denial.key };
    if (approval !== undefined) return { pkg, decision: 'allowed', entry: approval.key };
    return { pkg, decision: 'UNREVIEWED' };
  });
  for (const r of rows) {
    if (r.decision !== 'UNREVIEWED') continue;
    problems.push(
      `UNREVIEWED ${r.pkg.name}@${r.pkg.version} (${r.pkg.location}, ${r.pkg.tree}) has an install script (${describeScripts(r.pkg.scripts)}) ` +
        `and no allowScripts entry: read it, then \`npm install-scripts approve ${r.pkg.name}\` or \`npm install-scripts deny ${r.pkg.name}\`, ` +
        `and justify the entry in README.md "${README_SECTION}"`,
    );
  }
  for (const e of entries) {
    if ('error' in e.parsed) continue;
    const named = installed.filter((p) => matches(e.parsed, p));
    if (named.length === 0) {
      problems.push(
        `STALE allowScripts entry "${e.key}": ${String(e.value)}: no installed package matches it; remove it (\`npm install-scripts prune\`)`,
      );
    } else if (!named.some((p) => Object.keys(p.scripts).length > 0)) {
      const versions = [...new Set(named.map((p) => `${p.name}@${p.version}`))].join(', ');
      problems.push(
        `STALE allowScripts entry "${e.key}": ${String(e.value)}: ${versions} has no install script; remove it (\`npm install-scripts prune\`)`,
      );
    }
  }
  if (readmeSection === undefined) {
    problems.push(`README.md has no "## ${README_SECTION}" section justifying the allowScripts entries`);
  } else {
    for (const e of entries) {
      if (!readmeSection.includes(`\`${e.key}\``)) {
        problems.push(
          `UNJUSTIFIED allowScripts entry "${e.key}": ${String(e.value)}: README.md "${README_SECTION}" does not explain it (name it in backticks)`,
        );
      }
    }
  }
  return { rows, problems };
}

export function describeScripts(scripts: Readonly<Record<string, string>>): string {
  return Object.entries(scripts)
    .map(([event, body]) => `${event}: ${body.trim()}`)
    .join('; ');
}

export interface ScriptsRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function runInstallScriptsCheck(root: string): Promise<ScriptsRun> {
  const project = await readProjectManifest(root);
  const lock = await readLockfile(root);
  const installed = await installedPackages(root, lock);
  const readmePath = join(root, 'README.md');
  const section = existsSync(readmePath) ? markdownSection(await readFile(readmePath, 'utf8'), README_SECTION) : undefined;
  const allowScripts = project.allowScripts ?? {};
  const report = checkInstallScripts(installed, allowScripts, section);
  const table = formatTable(
    ['package', 'version', 'tree', 'allowScripts', 'install script'],
    report.rows.map((r) => [
      r.pkg.name,
      r.pkg.version,
      r.pkg.tree,
      r.entry === undefined ? r.decision : `${r.decision} ("${r.entry}")`,
      describeScripts(r.pkg.scripts),
    ]),
  );
  const count = (d: ScriptRow['decision']): number => report.rows.filter((r) => r.decision === d).length;
  const summary =
    `install-scripts: ${report.rows.length} installed packages have install scripts: ${count('allowed')} allowed, ${count('denied')} denied, ` +
    `${count('UNREVIEWED')} unreviewed; ${Object.keys(allowScripts).length} allowScripts entries; ${report.problems.length} problem(s)`;
  return {
    code: report.problems.length > 0 ? 1 : 0,
    stdout: `${table}\n${summary}\n`,
    stderr: report.problems.map((p) => `install-scripts: ${p}\n`).join(''),
  };
}

if (isMain(import.meta.url)) {
  runInstallScriptsCheck(REPO_ROOT).then(
    (r) => {
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      process.exitCode = r.code;
    },
    (e: unknown) => {
      process.stderr.write(`install-scripts: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
