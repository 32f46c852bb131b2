/**
 * `npm run build:app` (after `tsc` and the Vite renderer build): bundles the Electron entry points with
 * esbuild into dist/app/, the names every other part relies on:
 *   main.js      ESM, src/main/index.ts        production entry; every package of `dependencies` and
 *                                              `optionalDependencies` stays external (node_modules ships them)
 *   main-qa.js   ESM, src/qa/app/main.ts       QA flavour entry; inlines the simulators (devDependencies)
 *   radio.js     ESM, src/devices/ble/radio-process/child-entry.ts
 *                                              the radio process (noble and bleno in a utility process of
 *                                              their own, docs/ARCHITECTURE.md); checked as the production main
 *   voice.js     ESM, src/devices/speech/voice-entry.ts
 *                                              the built-in voice (eSpeak NG in a utility process of its own,
 *                                              docs/speech-voice.md); checked as the production main; its
 *                                              engine package stays in node_modules (it reads its 24 MB
 *                                              espeak-ng.data beside its own module)
 *   preload.cjs  CJS, src/preload/index.ts     sandboxed preloads must be one CommonJS file
 *                                              (electronjs.org/docs/latest/tutorial/sandbox#preload-scripts)
 * and fails when a bundle breaks its contract: the preload pulls in anything but itself and the IPC
 * contract, the production main inlines QA code or any package (it must come from `dependencies`), or a
 * bundled module reads a file relative to its own URL that is not where the bundle will look for it.
 *
 * Development without the real entry files: `--main-entry`, `--qa-entry`, `--preload-entry`, `--radio-entry` (or
 * MDL_KIOSK_BUILD_{MAIN,QA,PRELOAD,RADIO}_ENTRY) point at other files; `--out-dir` at another output folder.
 */
import { cp, mkdir, readFile, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import { z } from 'zod';

export const DEFAULT_ENTRIES = {
  main: 'src/main/index.ts',
  qa: 'src/qa/app/main.ts',
  preload: 'src/preload/index.ts',
  radio: 'src/devices/ble/radio-process/child-entry.ts',
  voice: 'src/devices/speech/voice-entry.ts',
  /** The PC/SC addon's thread (src/devices/pcsc/worker-binding.ts starts `./pcsc-worker.js` beside main). */
  pcscWorker: 'src/devices/pcsc/pcsc-worker.ts',
} as const;

export type AppEntries = Record<keyof typeof DEFAULT_ENTRIES, string>;

export const OUTPUT_NAMES = {
  main: 'main.js',
  qa: 'main-qa.js',
  preload: 'preload.cjs',
  radio: 'radio.js',
  voice: 'voice.js',
  pcscWorker: 'pcsc-worker.js',
} as const;

/**
 * The only shared files a sandboxed preload may carry: the IPC contract (channel names) and the reply
 * envelope, both import-free by design (each says so), which the build also checks.
 */
export const PRELOAD_ALLOWED_SHARED = ['src/common/ipc-contract.ts', 'src/common/ipc-reply.ts'] as const;

/** Electron 45 runs Node 22 in its main process and Chromium in the (sandboxed) preload. */
const MAIN_TARGET = 'node22';
const PRELOAD_TARGET = 'es2023';

/**
 * ESM output still meets CommonJS: inlined CJS packages call `require`, emscripten glue reads `__dirname`.
 * ESM has neither, so the bundle defines them from its own URL (names chosen so they do not clash with
 * esbuild's own helpers; esbuild's `__require` shim picks up `require` from the module scope).
 */
const ESM_BANNER = [
  "import { createRequire as __mdlCreateRequire } from 'node:module';",
  "import { fileURLToPath as __mdlFileURLToPath } from 'node:url';",
  "import { dirname as __mdlDirname } from 'node:path';",
  'const require = __mdlCreateRequire(import.meta.url);',
  'const __filename = __mdlFileURLToPath(import.meta.url);',
  'const __dirname = __mdlDirname(__filename);',
].join('\n');

const ManifestSchema = z.object({
  dependencies: z.record(z.string(), z.string()).optional(),
  optionalDependencies: z.record(z.string(), z.string()).optional(),
});

export class AppBuildError extends Error {
  override readonly name = 'AppBuildError';
}

export interface BuildAppOptions {
  /** Repository root (package.json, node_modules). */
  readonly root: string;
  /** Output folder; default `<root>/dist/app`. Emptied first. */
  readonly outDir?: string;
  /** Entry files relative to `root` (or absolute); default DEFAULT_ENTRIES. */
  readonly entries?: Partial<AppEntries>;
  /** Which bundles to build; default all three. */
  readonly only?: readonly (keyof AppEntries)[];
}

export interface BuiltFile {
  readonly file: string;
  readonly bytes: number;
}

export interface BuildAppResult {
  readonly outDir: string;
  readonly outputs: readonly BuiltFile[];
  /** Data files copied next to the QA bundle (paths relative to outDir). */
  readonly copied: readonly string[];
}

/** Packages the shipped node_modules carry: they stay external (plus their sub-paths). */
export async function shippedPackages(root: string): Promise<string[]> {
  const manifest = ManifestSchema.parse(JSON.parse(await readFile(join(root, 'package.json'), 'utf8')));
  return [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.optionalDependencies ?? {})].sort();
}

/** `pkg` or `@scope/pkg` of a bare import specifier. */
export function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/** The package a `node_modules/...` input path belongs to (the innermost one). */
function packageOfInput(input: string): string | undefined {
  const at = input.lastIndexOf('node_modules/');
  return at < 0 ? undefined : packageOf(input.slice(at + 'node_modules/'.length));
}

const REQUIRE_HANDLE = /\bconst\s+([A-Za-z_$][\w$]*)\s*=\s*createRequire\(\s*import\.meta\.url\s*\)/g;

/**
 * esbuild follows `require('x')` but not a require made with `createRequire(import.meta.url)`: such a
 * call stays a run-time lookup in node_modules, which the packaged app does not have for devDependencies.
 * This rewrites those calls to plain `require(...)` for packages the bundle inlines, so they are bundled
 * too (as CommonJS: a separate module instance from an ESM import of the same package, exactly as
 * `createRequire` gives at run time). Calls to shipped packages stay run-time requires.
 */
export function rewriteCreateRequire(source: string, isExternal: (specifier: string) => boolean): string {
  const handles = [...source.matchAll(REQUIRE_HANDLE)].map((m) => m[1] ?? '').filter((name) => name !== 'require');
  let out = source.replace(/createRequire\(\s*import\.meta\.url\s*\)\(\s*(['"])([^'"]+)\1\s*\)/g, (call, _q: string, spec: string) =>
    isExternal(spec) ? call : `require(${JSON.stringify(spec)})`,
  );
  for (const name of handles) {
    const call = new RegExp(`(?<![\\w$.])${name.replace(/\$/g, '\\$')}\\(\\s*(['"])([^'"]+)\\1\\s*\\)`, 'g');
    out = out.replace(call, (whole, _q: string, spec: string) => (isExternal(spec) ? whole : `require(${JSON.stringify(spec)})`));
  }
  return out;
}

function createRequirePlugin(isExternal: (specifier: string) => boolean): Plugin {
  return {
    name: 'inline-create-require',
    setup(b) {
      b.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        if (!source.includes('createRequire')) return undefined;
        return { contents: rewriteCreateRequire(source, isExternal), loader: 'ts' };
      });
    },
  };
}

/** One `new URL('./x' | '../x', import.meta.url)` read found in a bundled source file. */
export interface RelativeRead {
  readonly source: string;
  /** The literal's static prefix, e.g. `./assets/` for `./assets/${name}`. */
  readonly path: string;
}

const RELATIVE_URL = /new URL\(\s*(['"`])(\.{1,2}\/[^'"`$]*)[^'"`]*\1\s*,\s*import\.meta\.url\s*\)/g;

export function findRelativeReads(sourceFile: string, text: string): RelativeRead[] {
  return [...text.matchAll(RELATIVE_URL)].map((m) => ({ source: sourceFile, path: m[2] ?? '' }));
}

export type RelativeReadPlan =
  | { readonly kind: 'copy'; readonly read: RelativeRead; readonly from: string; readonly to: string }
  | { readonly kind: 'bundle-relative'; readonly read: RelativeRead; readonly target: string };

/**
 * What a bundled module's relative read becomes once its code lives in `outDir`: a `./…` file beside the
 * source is copied beside the bundle; anything else is read relative to the bundle and must exist there
 * after the build: main's `./preload.cjs` and `../renderer/`, or `../../package.json`, which from
 * dist/app/ is the package's own package.json, as it is from src/<room>/.
 */
export function planRelativeRead(read: RelativeRead, outDir: string): RelativeReadPlan {
  const fromSource = resolve(dirname(read.source), read.path);
  const fromBundle = resolve(outDir, read.path);
  if (existsSync(fromSource) && fromSource !== fromBundle && read.path.startsWith('./')) {
    return { kind: 'copy', read, from: fromSource, to: fromBundle };
  }
  return { kind: 'bundle-relative', read, target: fromBundle };
}

/** Emscripten glue (`X.js`) inlined from node_modules loads `X.wasm` from `__dirname`: it goes beside the bundle. */
function wasmCompanions(root: string, metafile: Metafile): string[] {
  const found: string[] = [];
  for (const input of Object.keys(metafile.inputs)) {
    if (!input.includes('node_modules/') || !input.endsWith('.js')) continue;
    const wasm = resolve(root, input.replace(/\.js$/, '.wasm'));
    if (existsSync(wasm)) found.push(wasm);
  }
  return found;
}

function relativeToRoot(root: string, file: string): string {
  return relative(root, file).split(sep).join('/');
}

function entryPath(root: string, file: string): string {
  return resolve(root, file);
}

function inputsOf(metafile: Metafile, output: string): string[] {
  const entry = Object.entries(metafile.outputs).find(([file]) => file.endsWith(output));
  return entry === undefined ? [] : Object.keys(entry[1].inputs);
}

/**
 * The preload may carry only its entry, src/preload/** and the allowed shared files (which must import
 * nothing), and import only `electron` at run time. `inputs` maps each bundled file to what it imports.
 */
export function checkPreloadInputs(
  entry: string,
  inputs: Readonly<Record<string, readonly string[]>>,
  imports: readonly string[],
): string[] {
  const problems: string[] = [];
  for (const [input, itsImports] of Object.entries(inputs)) {
    const shared = (PRELOAD_ALLOWED_SHARED as readonly string[]).includes(input);
    const allowed = input === entry || input.startsWith('src/preload/') || shared;
    if (!allowed)
      problems.push(
        `the preload bundle pulls in ${input}: a sandboxed preload may carry only src/preload/** and ${PRELOAD_ALLOWED_SHARED.join(', ')}`,
      );
    if (shared && itsImports.length > 0)
      problems.push(`${input} must stay import-free (the preload carries it) but imports ${itsImports.join(', ')}`);
  }
  for (const imported of imports) {
    if (imported !== 'electron')
      problems.push(`the preload bundle imports ${imported} at run time: a sandboxed preload can require only 'electron'`);
  }
  return problems;
}

/** The production main inlines only our own sources, never QA code nor a package (those must be dependencies). */
export function checkProductionInputs(inputs: readonly string[]): string[] {
  const problems: string[] = [];
  for (const input of inputs) {
    if (input.startsWith('src/qa/')) problems.push(`the production bundle pulls in QA code: ${input}`);
    const pkg = packageOfInput(input);
    if (pkg !== undefined)
      problems.push(
        `the production bundle inlines the package ${pkg} (${input}): list it in "dependencies" so node_modules ships it, or stop importing it from production code`,
      );
  }
  return problems;
}

function runtimeImports(metafile: Metafile, output: string): string[] {
  const entry = Object.entries(metafile.outputs).find(([file]) => file.endsWith(output));
  if (entry === undefined) return [];
  const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  return entry[1].imports.filter((i) => i.external && !builtins.has(i.path)).map((i) => i.path);
}

async function sourceReads(root: string, metafile: Metafile): Promise<RelativeRead[]> {
  const reads: RelativeRead[] = [];
  for (const input of Object.keys(metafile.inputs)) {
    if (input.includes('node_modules/') || !input.endsWith('.ts')) continue;
    const file = resolve(root, input);
    reads.push(...findRelativeReads(file, await readFile(file, 'utf8')));
  }
  return reads;
}

export async function buildApp(options: BuildAppOptions): Promise<BuildAppResult> {
  const root = resolve(options.root);
  const outDir = resolve(options.outDir ?? join(root, 'dist', 'app'));
  const entries: AppEntries = { ...DEFAULT_ENTRIES, ...options.entries };
  const only = new Set(options.only ?? (Object.keys(DEFAULT_ENTRIES) as (keyof AppEntries)[]));
  for (const kind of only) {
    if (!existsSync(entryPath(root, entries[kind]))) {
      throw new AppBuildError(`the ${kind} entry ${entries[kind]} does not exist`);
    }
  }
  const shipped = await shippedPackages(root);
  const externalSet = new Set(['electron', ...shipped]);
  // Optional natives of inlined libraries: cbor-x tries `cbor-extract` and falls back to plain JS.
  for (const optionalNative of ['cbor-extract']) externalSet.add(optionalNative);
  const isExternal = (specifier: string): boolean => externalSet.has(packageOf(specifier));
  const external = [...externalSet].flatMap((p) => [p, `${p}/*`]);

  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });

  const common: BuildOptions = {
    absWorkingDir: root,
    bundle: true,
    metafile: true,
    logLevel: 'silent',
    legalComments: 'none',
    external,
    plugins: [createRequirePlugin(isExternal)],
  };
  const esmMain = (entry: string, outfile: string): BuildOptions => ({
    ...common,
    entryPoints: [entryPath(root, entry)],
    outfile: join(outDir, outfile),
    platform: 'node',
    format: 'esm',
    target: MAIN_TARGET,
    // Maps with paths only: stack traces resolve without shipping the sources inside the package.
    sourcemap: 'linked',
    sourcesContent: false,
    banner: { js: ESM_BANNER },
    mainFields: ['module', 'main'],
  });

  const jobs: Promise<readonly [keyof AppEntries, Metafile]>[] = [];
  const run = (kind: keyof AppEntries, opts: BuildOptions): void => {
    jobs.push(
      build(opts).then(
        (r) => [kind, r.metafile ?? { inputs: {}, outputs: {} }] as const,
        (e: unknown) => {
          throw new AppBuildError(`esbuild failed on the ${kind} bundle (${entries[kind]}): ${(e as Error).message}`);
        },
      ),
    );
  };
  if (only.has('main')) run('main', esmMain(entries.main, OUTPUT_NAMES.main));
  if (only.has('qa')) run('qa', esmMain(entries.qa, OUTPUT_NAMES.qa));
  if (only.has('radio')) run('radio', esmMain(entries.radio, OUTPUT_NAMES.radio));
  if (only.has('voice')) run('voice', esmMain(entries.voice, OUTPUT_NAMES.voice));
  if (only.has('pcscWorker')) run('pcscWorker', esmMain(entries.pcscWorker, OUTPUT_NAMES.pcscWorker));
  if (only.has('preload')) {
    run('preload', {
      ...common,
      entryPoints: [entryPath(root, entries.preload)],
      outfile: join(outDir, OUTPUT_NAMES.preload),
      // Browser platform: a Node built-in in the preload is an error here, not a `require` that the
      // sandbox refuses at run time.
      platform: 'browser',
      format: 'cjs',
      target: PRELOAD_TARGET,
      external: ['electron'],
      plugins: [],
      sourcemap: false,
    });
  }
  const built = new Map(await Promise.all(jobs));

  const problems: string[] = [];
  const copied: string[] = [];
  const preloadMeta = built.get('preload');
  if (preloadMeta !== undefined) {
    const entry = relativeToRoot(root, entryPath(root, entries.preload));
    const inputs = Object.fromEntries(
      inputsOf(preloadMeta, OUTPUT_NAMES.preload).map((i) => [i, (preloadMeta.inputs[i]?.imports ?? []).map((x) => x.path)]),
    );
    problems.push(...checkPreloadInputs(entry, inputs, runtimeImports(preloadMeta, OUTPUT_NAMES.preload)));
  }
  const mainMeta = built.get('main');
  if (mainMeta !== undefined) problems.push(...checkProductionInputs(inputsOf(mainMeta, OUTPUT_NAMES.main)));
  // The radio process ships in the production package too: the same rules as main.
  const radioMeta = built.get('radio');
  if (radioMeta !== undefined)
    problems.push(
      ...checkProductionInputs(inputsOf(radioMeta, OUTPUT_NAMES.radio)).map((p) => p.replace('the production bundle', 'the radio bundle')),
    );
  const voiceMeta = built.get('voice');
  if (voiceMeta !== undefined)
    problems.push(
      ...checkProductionInputs(inputsOf(voiceMeta, OUTPUT_NAMES.voice)).map((p) => p.replace('the production bundle', 'the voice bundle')),
    );
  const workerMeta = built.get('pcscWorker');
  if (workerMeta !== undefined) problems.push(...checkProductionInputs(inputsOf(workerMeta, OUTPUT_NAMES.pcscWorker)));

  const bundleRelative: Extract<RelativeReadPlan, { kind: 'bundle-relative' }>[] = [];
  for (const [kind, meta] of built) {
    if (kind === 'preload') continue;
    for (const read of await sourceReads(root, meta)) {
      const plan = planRelativeRead(read, outDir);
      const where = relativeToRoot(root, read.source);
      if (plan.kind === 'bundle-relative') bundleRelative.push(plan);
      else {
        if (kind === 'main' || kind === 'radio' || kind === 'voice') {
          problems.push(
            `${where} reads ${read.path} beside its source: the production package carries only the bundles and the renderer; ship that data another way`,
          );
          continue;
        }
        await cp(plan.from, plan.to, { recursive: true });
        copied.push(relativeToRoot(outDir, plan.to));
      }
    }
    if (kind === 'qa') {
      for (const wasm of wasmCompanions(root, meta)) {
        await cp(wasm, join(outDir, basename(wasm)));
        copied.push(basename(wasm));
      }
    }
  }
  // Checked after every bundle exists: main finds `./preload.cjs` and `../renderer/` beside itself.
  for (const plan of bundleRelative) {
    if (!existsSync(plan.target)) {
      problems.push(
        `${relativeToRoot(root, plan.read.source)} expects ${plan.read.path} beside its bundle (${plan.target}), which does not exist after the build`,
      );
    }
  }
  if (problems.length > 0) throw new AppBuildError(`the app bundles break their contract:\n  - ${[...new Set(problems)].join('\n  - ')}`);

  const outputs: BuiltFile[] = [];
  for (const kind of only) {
    const file = join(outDir, OUTPUT_NAMES[kind]);
    outputs.push({ file: relativeToRoot(root, file), bytes: (await stat(file)).size });
  }
  return { outDir, outputs, copied: [...new Set(copied)].sort() };
}

/** Entry overrides from MDL_KIOSK_BUILD_{MAIN,QA,PRELOAD,RADIO}_ENTRY (development before the real files exist). */
export function entriesFromEnv(env: NodeJS.ProcessEnv): Partial<AppEntries> {
  const entries: Partial<AppEntries> = {};
  if (env.MDL_KIOSK_BUILD_MAIN_ENTRY) entries.main = resolve(env.MDL_KIOSK_BUILD_MAIN_ENTRY);
  if (env.MDL_KIOSK_BUILD_QA_ENTRY) entries.qa = resolve(env.MDL_KIOSK_BUILD_QA_ENTRY);
  if (env.MDL_KIOSK_BUILD_PRELOAD_ENTRY) entries.preload = resolve(env.MDL_KIOSK_BUILD_PRELOAD_ENTRY);
  if (env.MDL_KIOSK_BUILD_RADIO_ENTRY) entries.radio = resolve(env.MDL_KIOSK_BUILD_RADIO_ENTRY);
  return entries;
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'main-entry': { type: 'string' },
      'qa-entry': { type: 'string' },
      'preload-entry': { type: 'string' },
      'radio-entry': { type: 'string' },
      'out-dir': { type: 'string' },
    },
    strict: true,
  });
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const entries = entriesFromEnv(process.env);
  if (values['main-entry'] !== undefined) entries.main = resolve(values['main-entry']);
  if (values['qa-entry'] !== undefined) entries.qa = resolve(values['qa-entry']);
  if (values['preload-entry'] !== undefined) entries.preload = resolve(values['preload-entry']);
  if (values['radio-entry'] !== undefined) entries.radio = resolve(values['radio-entry']);
  const started = Date.now();
  const result = await buildApp({ root, entries, ...(values['out-dir'] === undefined ? {} : { outDir: resolve(values['out-dir']) }) });
  for (const output of result.outputs) process.stdout.write(`  ${output.file.padEnd(24)} ${kib(output.bytes)}\n`);
  if (result.copied.length > 0) process.stdout.write(`  beside main-qa.js: ${result.copied.join(', ')}\n`);
  process.stdout.write(`build:app: bundles in ${Date.now() - started} ms\n`);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    process.stderr.write(`build:app: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
