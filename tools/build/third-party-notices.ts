/**
 * `THIRD-PARTY-NOTICES.txt` beside the screen (dist/renderer): the licence texts of every package Vite
 * bundles into it and of the native code compiled into its .wasm. MIT, BSD and Apache-2.0 ask that the
 * notice travel with the code, and a bundle strips the packages' LICENSE files; the production
 * node_modules keep theirs, and electron-builder adds Electron's and Chromium's (docs/supply-chain.md).
 *
 * The package list is the supply-chain tools' `screen` group (tools/supply-chain/tree.ts), so the SBOM, the
 * licence check and this file cannot disagree. A package without a licence text — in its folder or in
 * tools/build/notices/supplements.json — stops the build: shipping without its notice is the defect.
 *
 *   tsx tools/build/third-party-notices.ts [--out dist/renderer/THIRD-PARTY-NOTICES.txt]
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { isMain, parseJson } from '../supply-chain/common.js';
import { collectShipped, type ShippedPackage } from '../supply-chain/tree.js';

export const NOTICES_FILE = 'THIRD-PARTY-NOTICES.txt';
export const SUPPLEMENTS_DIR = 'tools/build/notices';

const SupplementsSchema = z.strictObject({
  $comment: z.string().optional(),
  /** Package name → a licence file in SUPPLEMENTS_DIR, for a package that ships none. */
  packageLicenses: z.record(z.string(), z.string()),
  /** Third-party code compiled into a package (its .wasm), with its own licence. */
  embedded: z.array(z.strictObject({ package: z.string(), component: z.string(), license: z.string(), file: z.string() })),
});
export type Supplements = z.infer<typeof SupplementsSchema>;

/** LICENSE, LICENCE.md, license-mit, COPYING, NOTICE …: the files a package keeps its terms in. */
const LICENSE_FILE = /^(licen[cs]e|copying|notice)([-.].*)?$/i;

export interface Notices {
  readonly text: string;
  /** Packages bundled into the screen (`name@version`). */
  readonly packages: readonly string[];
  /** Packages with no licence text anywhere: the build must not ship them. */
  readonly missing: readonly string[];
  /** Problems reading the tree (the supply-chain tools' errors). */
  readonly errors: readonly string[];
}

async function licenseFilesOf(root: string, location: string): Promise<string[]> {
  const names = await readdir(join(root, location)).catch(() => [] as string[]);
  return names.filter((n) => LICENSE_FILE.test(n)).sort();
}

/** A supplement file without its `# Source:` header lines (those say where we took it from). */
async function readSupplement(root: string, file: string): Promise<{ text: string; source: string }> {
  const raw = await readFile(join(root, SUPPLEMENTS_DIR, file), 'utf8');
  const lines = raw.split('\n');
  const header = lines.filter((l) => l.startsWith('# Source:')).map((l) => l.slice(2));
  return {
    text: lines
      .filter((l) => !l.startsWith('# Source:'))
      .join('\n')
      .trim(),
    source: header.join('; '),
  };
}

const RULE = '='.repeat(78);

/**
 * Programs the application ships and runs as separate processes (never bundled into the screen nor linked
 * into the app): their licence asks that the recipient learn where the source is. Their own licence files
 * stay beside them in node_modules.
 */
export const SEPARATE_PROGRAMS = [
  {
    package: '@echogarden/espeak-ng-emscripten',
    what: 'eSpeak NG compiled to WebAssembly: the built-in voice, run in a process of its own (dist/app/voice.js)',
    license: 'GPL-3.0 (its COPYING is in node_modules/@echogarden/espeak-ng-emscripten/)',
    source: [
      'https://github.com/echogarden-project/espeak-ng (branch fork): the eSpeak NG source this build is made from',
      'https://github.com/echogarden-project/espeak-ng-emscripten: the build scripts of the package',
      'https://github.com/espeak-ng/espeak-ng: upstream eSpeak NG',
    ],
  },
] as const;

function separatePrograms(): string {
  const lines = ['Separate programs shipped beside the application (their own processes; not part of the screen):', ''];
  for (const p of SEPARATE_PROGRAMS) {
    lines.push(`${p.package} — ${p.license}`, `  ${p.what}`, '  Source:', ...p.source.map((s) => `    ${s}`), '');
  }
  return `${lines.join('\n')}\n`;
}

function declared(p: ShippedPackage): string {
  const value = p.manifest?.license ?? p.lockLicense;
  if (typeof value === 'string') return value;
  if (value !== undefined && typeof value === 'object' && 'type' in value) return value.type;
  return 'not declared';
}

export async function buildNotices(root: string): Promise<Notices> {
  // Only the screen group matters here; the runtime (Electron) brings its own licence files.
  const shipped = await collectShipped(root, { runtime: [] });
  const supplements = parseJson(
    await readFile(join(root, SUPPLEMENTS_DIR, 'supplements.json'), 'utf8'),
    SupplementsSchema,
    `${SUPPLEMENTS_DIR}/supplements.json`,
  );
  const screen = shipped.packages.filter((p) => p.groups.has('screen'));
  const sections: string[] = [];
  const missing: string[] = [];
  for (const p of screen) {
    const location = p.locations[0] ?? '';
    const texts: string[] = [];
    for (const file of await licenseFilesOf(root, location)) {
      texts.push(`--- ${file}\n\n${(await readFile(join(root, location, file), 'utf8')).trim()}`);
    }
    const extra = supplements.packageLicenses[p.name];
    if (texts.length === 0 && extra !== undefined) {
      const s = await readSupplement(root, extra);
      texts.push(`--- licence of the package's repository (${s.source})\n\n${s.text}`);
    }
    for (const e of supplements.embedded.filter((x) => x.package === p.name)) {
      const s = await readSupplement(root, e.file);
      texts.push(`--- ${e.component}, ${e.license} (${s.source})\n\n${s.text}`);
    }
    if (texts.length === 0) missing.push(p.key);
    sections.push(`${RULE}\n${p.key} — ${declared(p)}\n${RULE}\n\n${texts.join('\n\n')}\n`);
  }
  const head =
    'Third-party software in the mDL Kiosk screen\n\n' +
    'The screen bundles the packages below. Each is listed with the licence it declares and the licence\n' +
    'texts it carries (and of the native code compiled into it). The packages the application loads from\n' +
    "its node_modules keep their own licence files there; Electron's and Chromium's are beside the\n" +
    'application (LICENSE.electron.txt, LICENSES.chromium.html).\n\n';
  return { text: head + separatePrograms() + sections.join('\n'), packages: screen.map((p) => p.key), missing, errors: shipped.errors };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' }, root: { type: 'string' } } });
  const root = resolve(values.root ?? '.');
  const out = resolve(root, values.out ?? join('dist/renderer', NOTICES_FILE));
  const notices = await buildNotices(root);
  for (const e of notices.errors) process.stderr.write(`third-party notices: ${e}\n`);
  for (const m of notices.missing)
    process.stderr.write(
      `third-party notices: ${m} is bundled into the screen but carries no licence text; add one to ${SUPPLEMENTS_DIR}/supplements.json\n`,
    );
  if (notices.errors.length > 0 || notices.missing.length > 0) {
    process.exitCode = 1;
    return;
  }
  await writeFile(out, notices.text);
  process.stdout.write(`third-party notices: ${notices.packages.length} packages → ${out}\n`);
}

if (isMain(import.meta.url)) {
  main().catch((e: unknown) => {
    process.stderr.write(`third-party notices: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
