/**
 * `npm run package:dry-run`: packs both flavours the way a release does, minus what this network cannot
 * fetch, and asserts what each package carries.
 *
 * electron-builder downloads Electron from GitHub; instead it is given a stand-in Electron distribution
 * (`electronDist`): an executable that holds Electron's fuse sentinel and wire (so the fuse flipping is
 * real and read back), the licence files and `version`. `--dir --linux --x64` runs the whole pipeline
 * up to the unpacked app (files → app.asar + app.asar.unpacked, package.json rewrite, app-update.yml,
 * the afterPack hook, fuses, executable rename) with the same configuration a release uses — nothing is
 * rebuilt (`npmRebuild: false`: every addon is N-API). Installers (deb, AppImage, NSIS, DMG) are not built:
 * their tools are downloaded from GitHub too.
 *
 * The afterPack hook (tools/package/after-pack.ts) runs in each pack as in a release: every packed native
 * addon against Electron's ABI, the node_modules against tools/package/production-modules.json. Then, per
 * flavour, the archive is listed with @electron/asar and checked again here (`flavourProblems`, the same
 * packed-app checks plus the layout), the fuse wire is read back from the packaged executable, the
 * production package's node_modules are loaded in plain Node (every package that ships, the PC/SC and HCI
 * addons included), and the QA package is extracted and a plain-Node program bundled like its entry
 * (tools/build/qa-bundle-smoke.ts) runs one whole verification with only the packaged node_modules.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { buildApp, entriesFromEnv, type AppEntries } from '../build/app.js';
import { BuilderMissingError, builderRequire as resolveBuilder, loadAsar } from './builder-require.js';
import { CONFIG_FILES, FLAVOUR_MAIN, REQUIRED_FUSES, type Flavour } from './builder-config.js';
import { HOOK_TAG } from './after-pack.js';
import { buildPackagingHook } from './hook-build.js';
import { checkPackedApp, packagedPackages, parseAsarListing, type PackEntry, type PackedAppReport } from './packed-app.js';
import { loadProductionModules, type ProductionModules } from './production-modules.js';
import { conditionedCommand, conditionedEnv, type BuildConditions } from './build-conditions.js';
import { normaliseTree, sourceDateEpoch } from './reproducible.js';
import { inspectInstalledAsar } from '../../src/main/installed-asar.js';

export { packagedPackages, parseAsarListing, type PackEntry } from './packed-app.js';

export const ELECTRON_VERSION = '45.4.1';
/** The update feed the packaged app-update.yml gets in the dry run (`.invalid` never resolves: RFC 2606). */
export const DRY_RUN_UPDATE_URL = 'https://updates.invalid/mdl-kiosk';
/** The simulators and their libraries: never in the production package (the QA one inlines them). */
export const SIMULATOR_PACKAGES = [
  '@owf/mdoc',
  '@peculiar/x509',
  'cbor-x',
  'jpeg-js',
  'reflect-metadata',
  'tsyringe',
  'qrcode',
  '@cornerstonejs/codec-openjpeg',
] as const;
const EXECUTABLE: Readonly<Record<Flavour, string>> = { production: 'mdl-kiosk', qa: 'mdl-kiosk-qa' };
const UPDATE_CHANNEL: Readonly<Record<Flavour, string>> = { production: 'latest', qa: 'qa' };
const PACK_TIMEOUT_MS = 120_000;

/** Electron's fuse wire marker (@electron/fuses constants; electronjs.org/docs/latest/tutorial/fuses). */
const FUSE_SENTINEL = 'dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX';
const FUSE_ENABLE = 0x31;
const FUSE_DISABLE = 0x30;
/** Fuse order of wire version 1, and the states Electron ships with (before the build flips them). */
const FUSE_WIRE_V1 = [
  ['runAsNode', true],
  ['enableCookieEncryption', false],
  ['enableNodeOptionsEnvironmentVariable', true],
  ['enableNodeCliInspectArguments', true],
  ['enableEmbeddedAsarIntegrityValidation', false],
  ['onlyLoadAppFromAsar', false],
  ['loadBrowserProcessSpecificV8Snapshot', false],
  ['grantFileProtocolExtraPrivileges', true],
] as const;

export class DryRunError extends Error {
  override readonly name = 'DryRunError';
}

function builderRequire(root: string): NodeJS.Require {
  try {
    return resolveBuilder(root);
  } catch (e) {
    throw e instanceof BuilderMissingError ? new DryRunError(e.message) : e;
  }
}

/** A stand-in for an unpacked Electron for Linux x64: enough for `electron-builder --dir`, not to run. */
export async function makeFakeElectronDist(dir: string): Promise<void> {
  await mkdir(join(dir, 'resources'), { recursive: true });
  const wire = Buffer.from([1, FUSE_WIRE_V1.length, ...FUSE_WIRE_V1.map(([, on]) => (on ? FUSE_ENABLE : FUSE_DISABLE))]);
  const script = Buffer.from('#!/bin/sh\necho "stand-in Electron for packaging tests: it cannot run the app" >&2\nexit 1\n');
  await writeFile(join(dir, 'electron'), Buffer.concat([script, Buffer.from(`#${FUSE_SENTINEL}`), wire, Buffer.from('\n')]));
  await chmod(join(dir, 'electron'), 0o755);
  await writeFile(join(dir, 'chrome-sandbox'), '');
  await writeFile(join(dir, 'LICENSE'), 'stand-in\n');
  await writeFile(join(dir, 'LICENSES.chromium.html'), '<p>stand-in</p>\n');
  await writeFile(join(dir, 'version'), `v${ELECTRON_VERSION}\n`);
}

/** The fuse states in an executable, by the names electron-builder's `electronFuses` uses. */
export function readFuses(executable: string): Record<string, boolean | 'removed' | 'inherit'> {
  const bytes = readFileSync(executable);
  const at = bytes.indexOf(FUSE_SENTINEL);
  if (at < 0) throw new DryRunError(`${executable} has no fuse wire`);
  const start = at + FUSE_SENTINEL.length;
  const length = bytes[start + 1] ?? 0;
  const states: Record<string, boolean | 'removed' | 'inherit'> = {};
  FUSE_WIRE_V1.slice(0, length).forEach(([name], i) => {
    const b = bytes[start + 2 + i];
    states[name] = b === FUSE_ENABLE ? true : b === FUSE_DISABLE ? false : b === 0x72 ? 'removed' : 'inherit';
  });
  return states;
}

function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, output });
    });
  });
}

export interface PackedFlavour {
  readonly flavour: Flavour;
  readonly appOutDir: string;
  readonly asar: string;
  /** Files only (directories left out). */
  readonly files: readonly PackEntry[];
  readonly packageJson: Record<string, unknown>;
  /** `name@version` of every package in node_modules. */
  readonly packages: readonly string[];
  readonly fuses: Record<string, boolean | 'removed' | 'inherit'>;
  readonly updateConfig: string | undefined;
  /** What the afterPack hook said of this pack (its one line), if it ran. */
  readonly hookReport: string | undefined;
  /** Bytes of app.asar and of everything in app.asar.unpacked. */
  readonly asarBytes: number;
  readonly unpackedBytes: number;
  readonly milliseconds: number;
}

async function bytesUnder(dir: string): Promise<number> {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? await bytesUnder(path) : (await stat(path)).size;
  }
  return total;
}

export interface PackOptions {
  /** More `-c.` overrides (tests plant files this way). */
  readonly extraArgs?: readonly string[];
  /** Account, umask, time zone and locale of the pack (the reproducibility checks vary them). */
  readonly conditions?: BuildConditions;
}

/** electron-builder --dir for one flavour; throws DryRunError with its output when it fails. */
export async function packFlavour(
  root: string,
  flavour: Flavour,
  fakeDist: string,
  outDir: string,
  options: PackOptions = {},
): Promise<PackedFlavour> {
  const req = builderRequire(root);
  const cli = req.resolve('electron-builder/cli.js');
  const started = Date.now();
  const args = [
    cli,
    '--dir',
    '--linux',
    '--x64',
    '--publish',
    'never',
    '--config',
    CONFIG_FILES[flavour],
    `-c.electronDist=${fakeDist}`,
    `-c.electronVersion=${ELECTRON_VERSION}`,
    `-c.directories.output=${outDir}`,
    ...(options.extraArgs ?? []),
  ];
  const epoch = sourceDateEpoch(root);
  const conditions = options.conditions ?? {};
  const env = conditionedEnv(
    {
      ...process.env,
      MDL_KIOSK_UPDATE_URL: process.env.MDL_KIOSK_UPDATE_URL ?? DRY_RUN_UPDATE_URL,
      CSC_IDENTITY_AUTO_DISCOVERY: 'false',
      SOURCE_DATE_EPOCH: String(epoch),
    },
    conditions,
  );
  const command = conditionedCommand(process.execPath, args, conditions);
  const run = await runCommand(command.command, command.args, { cwd: root, env, timeoutMs: PACK_TIMEOUT_MS });
  if (run.code !== 0)
    throw new DryRunError(`electron-builder --dir failed for the ${flavour} flavour (exit ${String(run.code)}):\n${run.output}`);
  const appOutDir = join(outDir, 'linux-unpacked');
  // The afterPack hook normalised the folder; flipping the fuses rewrote the executable after it.
  if (existsSync(join(appOutDir, EXECUTABLE[flavour]))) {
    await normaliseTree(join(appOutDir, EXECUTABLE[flavour]), epoch);
    await utimes(appOutDir, epoch, epoch);
  }
  const asar = join(appOutDir, 'resources', 'app.asar');
  if (!existsSync(asar)) throw new DryRunError(`electron-builder produced no ${asar}:\n${run.output}`);
  const asarModule = loadAsar(root);
  const files = parseAsarListing(asarModule.listPackage(asar, { isPack: true }));
  const packageJson = z.record(z.string(), z.unknown()).parse(JSON.parse(asarModule.extractFile(asar, 'package.json').toString('utf8')));
  const updateFile = join(appOutDir, 'resources', 'app-update.yml');
  return {
    flavour,
    appOutDir,
    asar,
    files,
    packageJson,
    packages: packagedPackages(files, (file) => asarModule.extractFile(asar, file)),
    fuses: readFuses(join(appOutDir, EXECUTABLE[flavour])),
    updateConfig: existsSync(updateFile) ? readFileSync(updateFile, 'utf8') : undefined,
    hookReport: run.output
      .split('\n')
      .find((line) => line.includes(HOOK_TAG))
      ?.replace(/^\s*•\s*/, ''),
    asarBytes: (await stat(asar)).size,
    unpackedBytes: await bytesUnder(join(appOutDir, 'resources', 'app.asar.unpacked')),
    milliseconds: Date.now() - started,
  };
}

const LockSchema = z.object({
  packages: z.record(z.string(), z.object({ version: z.string().optional(), dev: z.boolean().optional() }).loose()),
});

/**
 * `name@version` of every package the lockfile has only as a dev dependency. By name and version, not
 * path: electron-builder re-hoists the production tree, so a package may sit elsewhere in the archive.
 */
export function devOnlyPackages(root: string): string[] {
  const lock = LockSchema.parse(JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')));
  const dev = new Set<string>();
  const prod = new Set<string>();
  for (const [path, entry] of Object.entries(lock.packages)) {
    const at = path.lastIndexOf('node_modules/');
    if (at < 0 || entry.version === undefined) continue;
    const id = `${path.slice(at + 'node_modules/'.length)}@${entry.version}`;
    (entry.dev === true ? dev : prod).add(id);
  }
  return [...dev].filter((id) => !prod.has(id)).sort();
}

export interface ProblemContext {
  /** `name@version` the lockfile has only as dev dependencies. */
  readonly devOnly: readonly string[];
  /** What the packages' node_modules carry (tools/package/production-modules.json). */
  readonly modules: ProductionModules;
  /** The Electron the package ships. */
  readonly electronVersion: string;
}

/** The PC/SC addon's file, which every package must carry (unpacked). */
export const PCSC_ADDON = '/node_modules/smartcard/build/Release/smartcard_napi.node';

const OWN_FORBIDDEN = /(^|\/)(src|test|tools)\/|^\/dist\/(src|test|tools)\/|(^|\/)qa(\/|$)|main-qa|\.test\.|\.spec\./;

/** What must and must not be in one packed flavour. Empty = good. */
export function flavourProblems(packed: PackedFlavour, context: ProblemContext): string[] {
  const problems: string[] = [];
  const { flavour } = packed;
  const byPath = new Map(packed.files.map((f) => [f.path, f]));
  const own = packed.files.filter((f) => !f.path.startsWith('/node_modules/'));
  const mustHave = [
    '/package.json',
    '/dist/app/main.js',
    '/dist/app/radio.js',
    '/dist/app/voice.js',
    // What voice.js loads: the engine's glue and its data (voices, dictionaries), read beside the glue.
    '/node_modules/@echogarden/espeak-ng-emscripten/espeak-ng.js',
    '/node_modules/@echogarden/espeak-ng-emscripten/espeak-ng.data',
    '/node_modules/@echogarden/espeak-ng-emscripten/COPYING',
    '/dist/app/preload.cjs',
    '/dist/app/pcsc-worker.js',
    '/dist/renderer/index.html',
  ];
  if (flavour === 'qa') mustHave.push('/dist/app/main-qa.js', '/dist/app/assets/index.html');
  for (const path of mustHave) if (!byPath.has(path)) problems.push(`${flavour}: ${path} is missing from the archive`);

  const rendererWasm = own.filter((f) => f.path.startsWith('/dist/renderer/') && f.path.endsWith('.wasm'));
  if (rendererWasm.length === 0) problems.push(`${flavour}: the renderer's .wasm (QR decoder) is missing`);
  for (const f of rendererWasm)
    if (f.unpacked) problems.push(`${flavour}: ${f.path} is unpacked; the renderer stays inside the integrity-checked archive`);

  if (packed.packageJson.main !== FLAVOUR_MAIN[flavour])
    problems.push(`${flavour}: package.json main is ${String(packed.packageJson.main)}, not ${FLAVOUR_MAIN[flavour]}`);
  if (packed.packageJson.devDependencies !== undefined) problems.push(`${flavour}: package.json still lists devDependencies`);

  for (const f of packed.files) {
    if (f.path.endsWith('.node') && !f.unpacked)
      problems.push(`${flavour}: native module ${f.path} is inside the archive (it cannot be loaded from there)`);
    if (f.path.endsWith('.node') && f.unpacked && !existsSync(join(packed.appOutDir, 'resources', 'app.asar.unpacked', f.path))) {
      problems.push(`${flavour}: native module ${f.path} is marked unpacked but missing from app.asar.unpacked`);
    }
    if (/\.(ts|tsx|mts|cts)$/.test(f.path)) problems.push(`${flavour}: TypeScript file ${f.path} is packaged`);
  }
  const pcsc = byPath.get(PCSC_ADDON);
  if (pcsc === undefined)
    problems.push(`${flavour}: the PC/SC addon (smartcard's build/Release/smartcard_napi.node) is missing: was smartcard built by npm ci?`);
  else if (!pcsc.unpacked) problems.push(`${flavour}: the PC/SC addon is not unpacked`);
  if (packed.hookReport === undefined) problems.push(`${flavour}: the afterPack hook (native addons, node_modules) did not run`);
  // The Linux app's own start check (app.asar against the digest afterPack recorded), on the packed folder.
  const selfCheck = inspectInstalledAsar(join(packed.appOutDir, 'resources'), true);
  if (selfCheck.state !== 'ok')
    problems.push(
      `${flavour}: the packaged app would refuse to start: ${selfCheck.state === 'refused' ? selfCheck.reason : 'no app.asar'}`,
    );

  if (flavour === 'production') {
    for (const f of own) {
      if (f.path === '/package.json') continue;
      if (OWN_FORBIDDEN.test(f.path)) problems.push(`production: ${f.path} must not ship (QA, sources or tests)`);
      if (
        !/^\/dist\/(app\/(main\.js|main\.js\.map|radio\.js|radio\.js\.map|voice\.js|voice\.js\.map|pcsc-worker\.js|pcsc-worker\.js\.map|preload\.cjs)$|renderer\/)/.test(
          f.path,
        )
      )
        problems.push(`production: unexpected file ${f.path}`);
    }
    for (const sim of SIMULATOR_PACKAGES) {
      if (packed.files.some((f) => f.path.startsWith(`/node_modules/${sim}/`)))
        problems.push(`production: simulator library ${sim} is in node_modules`);
    }
  }
  // Neither flavour carries a dev-only package: the QA entry inlines what it needs from them.
  const devOnly = new Set(context.devOnly);
  for (const id of packed.packages) if (devOnly.has(id)) problems.push(`${flavour}: dev-only package ${id} is packaged`);

  for (const [fuse, wanted] of Object.entries(REQUIRED_FUSES)) {
    if (packed.fuses[fuse] !== wanted)
      problems.push(`${flavour}: fuse ${fuse} is ${String(packed.fuses[fuse])} in the packaged executable, not ${String(wanted)}`);
  }
  if (packed.updateConfig === undefined) problems.push(`${flavour}: resources/app-update.yml is missing (electron-updater's feed)`);
  else {
    if (!/^provider: generic$/m.test(packed.updateConfig)) problems.push(`${flavour}: app-update.yml does not use the generic provider`);
    if (!new RegExp(`^channel: ${UPDATE_CHANNEL[flavour]}$`, 'm').test(packed.updateConfig))
      problems.push(`${flavour}: app-update.yml channel is not ${UPDATE_CHANNEL[flavour]}`);
  }
  return problems;
}

export interface SmokeResult {
  readonly ok: boolean;
  readonly output: string;
  readonly milliseconds: number;
}

/**
 * Extracts the QA archive (with its unpacked files), bundles tools/build/qa-bundle-smoke.ts into it the
 * way main-qa.js is bundled, and runs it with plain Node: only the packaged node_modules can satisfy it.
 */
export async function runQaSmoke(root: string, packed: PackedFlavour, workDir: string): Promise<SmokeResult> {
  const started = Date.now();
  const asarModule = loadAsar(root);
  const extracted = join(workDir, 'qa-app');
  asarModule.extractAll(packed.asar, extracted);
  const outDir = join(extracted, 'dist', 'smoke');
  await buildApp({ root, outDir, entries: { qa: 'tools/build/qa-bundle-smoke.ts' }, only: ['qa'] });
  const run = await runCommand(process.execPath, [join(outDir, 'main-qa.js')], {
    cwd: extracted,
    env: { ...process.env, NODE_PATH: '' },
    timeoutMs: 60_000,
  });
  return {
    ok: run.code === 0 && run.output.includes('"verdict":"verified"'),
    output: run.output.trim(),
    milliseconds: Date.now() - started,
  };
}

/**
 * What the production bundle (dist/app/main.js) loads from node_modules, and how: ES imports (`import` /
 * `import()`: the package's "import" export) and `createRequire` requires (its "require" export). Each
 * entry's own dependencies load with it. For noble and bleno the object model and the Linux HCI bindings
 * are required without creating the default instance, which would open the Bluetooth adapter.
 */
export const PRODUCTION_LOADS: readonly { readonly id: string; readonly how: 'import' | 'require' }[] = [
  { id: 'zod', how: 'import' },
  { id: 'pino', how: 'import' },
  { id: 'pino-roll', how: 'import' },
  { id: 'undici', how: 'import' },
  { id: 'ws', how: 'import' },
  { id: 'https-proxy-agent', how: 'import' },
  { id: 'tar', how: 'import' },
  { id: 'electron-updater', how: 'import' },
  { id: 'smartcard', how: 'require' },
  { id: '@stoprocent/noble/lib/noble', how: 'require' },
  // What loadPlatformBle requires for each build's noble (platform-stack.ts): builds nothing until called.
  { id: '@stoprocent/noble/lib/resolve-bindings', how: 'require' },
  { id: '@stoprocent/noble/lib/hci-socket/bindings', how: 'require' },
  { id: '@stoprocent/bleno/lib/bleno', how: 'require' },
  { id: '@stoprocent/bleno/lib/hci-socket/bindings', how: 'require' },
  { id: '@stoprocent/bluetooth-hci-socket', how: 'require' },
  // voice.js's engine (loading the glue reads nothing yet; the voice run below makes it speak).
  { id: '@echogarden/espeak-ng-emscripten', how: 'import' },
];

/**
 * Loads, in plain Node and from the extracted production package only, what main.js loads
 * (PRODUCTION_LOADS), each the way main.js does: a file the lean `files` patterns left out but a package
 * needs at load fails here. The PC/SC addon and the HCI socket's addon are loaded for real.
 */
export async function runProductionLoadSmoke(root: string, packed: PackedFlavour, workDir: string): Promise<SmokeResult> {
  const started = Date.now();
  const extracted = join(workDir, `${packed.flavour}-load`);
  loadAsar(root).extractAll(packed.asar, extracted);
  const program = [
    "import { createRequire } from 'node:module';",
    'const require = createRequire(import.meta.url);',
    `const loads = ${JSON.stringify(PRODUCTION_LOADS)};`,
    'const failed = [];',
    'for (const { id, how } of loads) {',
    '  try { if (how === "import") await import(id); else require(id); }',
    '  catch (e) { failed.push(`${how} ${id}: ${String(e && e.message).split("\\n")[0]}`); }',
    '}',
    'if (failed.length > 0) { console.error("cannot load:\\n" + failed.join("\\n")); process.exit(1); }',
    // The packed voice process, started as the browser host starts it (fork, structured clone), says a word.
    "const { fork } = await import('node:child_process');",
    "const voice = fork('dist/app/voice.js', [], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });",
    'const said = await new Promise((resolve) => {',
    '  const timer = setTimeout(() => resolve("no answer in 20 s"), 20_000);',
    '  voice.on("exit", (code) => resolve(`voice.js exited (${code})`));',
    '  voice.on("message", (m) => {',
    '    if (m.t === "ready") voice.send({ t: "speak", id: 1, text: "Hello", voice: "en-us", wpm: 175 });',
    '    else if (m.t === "audio") { clearTimeout(timer); resolve(m.pcm.byteLength > 0 ? `voice.js spoke ${m.pcm.byteLength} bytes` : "voice.js spoke silence"); }',
    '    else { clearTimeout(timer); resolve(`voice.js: ${JSON.stringify(m).slice(0, 300)}`); }',
    '  });',
    '});',
    'voice.kill();',
    'if (!said.startsWith("voice.js spoke ") || said.includes("silence")) { console.error(said); process.exit(1); }',
    'console.log(`loaded ${loads.length} entry modules as main.js does; ${said}`);',
    'process.exit(0);',
  ].join('\n');
  // Beside node_modules, as main.js is in the package (its bare specifiers resolve the same way).
  await writeFile(join(extracted, 'load-smoke.mjs'), program);
  const run = await runCommand(process.execPath, ['load-smoke.mjs'], {
    cwd: extracted,
    env: { ...process.env, NODE_PATH: '' },
    timeoutMs: 30_000,
  });
  return { ok: run.code === 0, output: run.output.trim(), milliseconds: Date.now() - started };
}

/** The packed-app checks of the afterPack hook, again, on a flavour's output (the target is this machine's Linux x64). */
export function packedAppReport(root: string, packed: PackedFlavour, context: ProblemContext): Promise<PackedAppReport> {
  return checkPackedApp({
    resourcesDir: join(packed.appOutDir, 'resources'),
    files: packed.files,
    packages: packed.packages,
    target: { platform: 'linux', cpus: ['x64'], electronVersion: context.electronVersion },
    modules: context.modules,
    extract: (file) => loadAsar(root).extractFile(packed.asar, file),
    label: packed.flavour,
  });
}

export interface DryRunResult {
  /** The temporary folder (removed unless `keep`). */
  readonly workDir: string;
  readonly packed: readonly PackedFlavour[];
  /** The packed-app checks per flavour (native addons read, packages listed). */
  readonly reports: ReadonlyMap<Flavour, PackedAppReport>;
  readonly problems: readonly string[];
  readonly smoke: SmokeResult;
  readonly loadSmoke: SmokeResult;
  readonly milliseconds: number;
}

export interface DryRunOptions {
  readonly root: string;
  readonly entries?: Partial<AppEntries>;
  /** Keep the temporary folder (for a look inside). */
  readonly keep?: boolean;
  readonly log?: (line: string) => void;
}

export async function ensureRenderer(root: string, log: (line: string) => void): Promise<void> {
  if (existsSync(join(root, 'dist', 'renderer', 'index.html'))) return;
  log('building the renderer (dist/renderer is missing)');
  // vite's package exports only its entry: its CLI is bin/vite.js beside dist/node/index.js.
  const vite = join(dirname(createRequire(join(root, 'package.json')).resolve('vite')), '..', '..', 'bin', 'vite.js');
  const run = await runCommand(process.execPath, [vite, 'build', '--config', 'src/renderer/vite.config.ts'], {
    cwd: root,
    env: process.env,
    timeoutMs: 120_000,
  });
  if (run.code !== 0) throw new DryRunError(`the renderer build failed:\n${run.output}`);
}

export async function dryRun(options: DryRunOptions): Promise<DryRunResult> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const root = resolve(options.root);
  builderRequire(root); // fail first, and plainly, without electron-builder
  await ensureRenderer(root, log);
  const built = await buildApp({ root, ...(options.entries === undefined ? {} : { entries: options.entries }) });
  log(`bundles: ${built.outputs.map((o) => `${o.file} ${o.bytes} B`).join(', ')}`);
  await buildPackagingHook(root);
  const workDir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-dry-run-'));
  try {
    const fakeDist = join(workDir, 'electron-dist');
    await makeFakeElectronDist(fakeDist);
    // Both flavours at once: they read the same project and write to their own folders.
    const packed = await Promise.all(
      (['production', 'qa'] as const).map((flavour) => packFlavour(root, flavour, fakeDist, join(workDir, flavour))),
    );
    const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
    for (const p of packed) {
      log(
        `${p.flavour}: ${p.files.length} files packed in ${p.milliseconds} ms; app.asar ${mb(p.asarBytes)}, app.asar.unpacked ${mb(p.unpackedBytes)}`,
      );
      log(`${p.flavour}: ${p.hookReport ?? 'the afterPack hook did not report'}`);
    }
    const context: ProblemContext = {
      devOnly: devOnlyPackages(root),
      modules: loadProductionModules(root),
      electronVersion: ELECTRON_VERSION,
    };
    const problems = packed.flatMap((p) => flavourProblems(p, context));
    const reports = new Map<Flavour, PackedAppReport>();
    for (const p of packed) {
      const report = await packedAppReport(root, p, context);
      reports.set(p.flavour, report);
      problems.push(...report.problems);
    }
    const production = packed.find((p) => p.flavour === 'production');
    const qa = packed.find((p) => p.flavour === 'qa');
    if (production === undefined || qa === undefined) throw new DryRunError('a flavour was not packed');
    const [loadSmoke, smoke] = await Promise.all([runProductionLoadSmoke(root, production, workDir), runQaSmoke(root, qa, workDir)]);
    log(`production package load run: ${loadSmoke.ok ? loadSmoke.output : 'FAILED'} in ${loadSmoke.milliseconds} ms`);
    if (!loadSmoke.ok) problems.push(`production: a package that ships does not load from the packaged node_modules:\n${loadSmoke.output}`);
    log(`QA package smoke run: ${smoke.ok ? 'verified' : 'FAILED'} in ${smoke.milliseconds} ms`);
    if (!smoke.ok) problems.push(`qa: the QA bundle pipeline did not run a verification from the packaged node_modules:\n${smoke.output}`);
    return { workDir, packed, reports, problems, smoke, loadSmoke, milliseconds: Date.now() - started };
  } finally {
    if (options.keep === true) log(`kept ${workDir}`);
    else await rm(workDir, { recursive: true, force: true });
  }
}

async function main(): Promise<number> {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const result = await dryRun({
    root,
    entries: entriesFromEnv(process.env),
    keep: process.argv.includes('--keep'),
    log: (line) => process.stdout.write(`package:dry-run: ${line}\n`),
  });
  for (const problem of result.problems) process.stderr.write(`package:dry-run: ${problem}\n`);
  process.stdout.write(
    `package:dry-run: ${result.problems.length === 0 ? 'both flavours OK' : `${result.problems.length} problem(s)`} in ${(result.milliseconds / 1000).toFixed(1)} s\n`,
  );
  return result.problems.length === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`package:dry-run: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
