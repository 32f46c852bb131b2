/**
 * The two electron-builder configurations (production and QA flavour) and what must hold for each:
 * checked against electron-builder's own JSON schema (ajv, as electron-builder does), through
 * electron-builder's own loader and validator (which merges `extends` and catches deprecated options),
 * and against this project's packaging policy (fuses, what ships, entry per flavour).
 *
 * electron-builder's modules are loaded from where the installed electron-builder resolves them
 * (app-builder-lib, builder-util are its dependencies, not ours). Nothing here downloads anything.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import type { Configuration } from 'electron-builder';
import yaml from 'js-yaml';
import { pngSize, readIcns, readIco } from '../build/icons.js';
import { HOOK_OUTPUT } from './hook-build.js';
import { declaredArches } from './package-targets.js';
import { leftOutPattern, loadProductionModules } from './production-modules.js';

export type Flavour = 'production' | 'qa';

export const CONFIG_FILES: Readonly<Record<Flavour, string>> = {
  production: 'electron-builder.yml',
  qa: 'electron-builder.qa.yml',
};

export const FLAVOUR_MAIN: Readonly<Record<Flavour, string>> = {
  production: 'dist/app/main.js',
  qa: 'dist/app/main-qa.js',
};

/** Fuses every flavour flips (electronjs.org/docs/latest/tutorial/fuses; Electron security checklist #19, electronjs.org/docs/latest/tutorial/security). */
export const REQUIRED_FUSES = {
  runAsNode: false,
  enableNodeOptionsEnvironmentVariable: false,
  enableNodeCliInspectArguments: false,
  enableEmbeddedAsarIntegrityValidation: true,
  onlyLoadAppFromAsar: true,
  enableCookieEncryption: true,
  grantFileProtocolExtraPrivileges: false,
  loadBrowserProcessSpecificV8Snapshot: false,
} as const;

export const REQUIRED_DEB_DEPENDS = ['pcscd', 'libpcsclite1', 'bluez'] as const;

/** Linux executable per flavour: the .desktop file and desktopName follow it. */
export const FLAVOUR_EXECUTABLE: Readonly<Record<Flavour, string>> = { production: 'mdl-kiosk', qa: 'mdl-kiosk-qa' };

/** What is wrong with the icons a configuration points to (each OS's format and the sizes its packages use). */
export function iconProblems(root: string, name: string, config: Configuration): string[] {
  const problems: string[] = [];
  const read = (what: string, file: string | null | undefined, check: (bytes: Buffer) => string | undefined): void => {
    if (typeof file !== 'string' || !existsSync(join(root, file)) || !statSync(join(root, file)).isFile()) {
      problems.push(`${name}: ${what} icon ${String(file)} does not exist`);
      return;
    }
    try {
      const problem = check(readFileSync(join(root, file)));
      if (problem !== undefined) problems.push(`${name}: ${what} icon ${file} ${problem}`);
    } catch (e) {
      problems.push(`${name}: ${what} icon ${file} cannot be read (${(e as Error).message})`);
    }
  };
  read('Windows', config.win?.icon, (bytes) => {
    const entries = readIco(bytes);
    return entries.some((e) => e.width === 256) && entries.some((e) => e.width === 16) ? undefined : 'needs 16 and 256 px images';
  });
  read('macOS', config.mac?.icon, (bytes) => {
    const types = readIcns(bytes);
    return types.some((t) => t.type === 'ic10' && t.width === 1024) ? undefined : 'needs a 1024 px (ic10) image';
  });
  const linux = config.linux?.icon;
  if (typeof linux !== 'string' || !existsSync(join(root, linux)) || !statSync(join(root, linux)).isDirectory()) {
    problems.push(`${name}: Linux icon ${String(linux)} must be a folder of NxN.png files`);
  } else {
    const files = readdirSync(join(root, linux)).filter((f) => f.endsWith('.png'));
    for (const f of files) {
      const size = pngSize(readFileSync(join(root, linux, f)));
      const m = /^(\d+)x(\d+)\.png$/.exec(f);
      if (size === undefined || m === null || size.width !== Number(m[1]) || size.height !== Number(m[2]))
        problems.push(`${name}: Linux icon ${linux}/${f} is not the size its name says`);
    }
    if (!files.includes('256x256.png')) problems.push(`${name}: Linux icon folder ${linux} needs 256x256.png`);
  }
  return problems;
}

interface ConfigModule {
  getConfig(projectDir: string, configPath: string | null, configFromOptions: Configuration | null): Promise<Configuration>;
  validateConfiguration(config: Configuration, debugLogger: unknown): Promise<void>;
}
interface BuilderUtilModule {
  DebugLogger: new (isEnabled?: boolean) => unknown;
}

function builderRequire(root: string): NodeJS.Require {
  const fromProject = createRequire(join(root, 'package.json'));
  let builder: string;
  try {
    builder = fromProject.resolve('electron-builder');
  } catch {
    throw new Error('electron-builder is not installed (it is a devDependency): run `npm ci`');
  }
  return createRequire(builder);
}

export function builderSchemaPath(root: string): string {
  return builderRequire(root).resolve('app-builder-lib/scheme.json');
}

/** ajv over the file as written (before `extends` is merged): electron-builder's schema, its ajv options. */
export function schemaProblems(root: string, file: string): string[] {
  const schema = JSON.parse(readFileSync(builderSchemaPath(root), 'utf8')) as object;
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
  const config = yaml.load(readFileSync(resolve(root, file), 'utf8'));
  if (validate(config)) return [];
  return (validate.errors ?? []).map(
    (e) => `${file}: ${e.instancePath === '' ? '/' : e.instancePath} ${e.message ?? 'is invalid'} ${JSON.stringify(e.params)}`,
  );
}

/** electron-builder's own loader (merges `extends` and package.json) and validator; the merged config. */
export async function loadWithElectronBuilder(root: string, file: string): Promise<Configuration> {
  const req = builderRequire(root);
  const config = req('app-builder-lib/out/util/config/config') as ConfigModule;
  const util = req('builder-util') as BuilderUtilModule;
  const merged = await config.getConfig(root, resolve(root, file), null);
  await config.validateConfiguration(merged, new util.DebugLogger(false));
  return merged;
}

function filePatterns(config: Configuration): string[] {
  const patterns: string[] = [];
  const files = config.files === undefined || config.files === null ? [] : Array.isArray(config.files) ? config.files : [config.files];
  for (const set of files) {
    if (typeof set === 'string') patterns.push(set);
    else patterns.push(...(set.filter === undefined ? [] : Array.isArray(set.filter) ? set.filter : [set.filter]));
  }
  return patterns;
}

function asList(value: string | readonly string[] | null | undefined): string[] {
  return value === undefined || value === null ? [] : typeof value === 'string' ? [value] : [...value];
}

/** The project's packaging policy over a merged configuration. */
export function policyProblems(root: string, flavour: Flavour, config: Configuration): string[] {
  const problems: string[] = [];
  const name = CONFIG_FILES[flavour];
  const fuses = (config.electronFuses ?? {}) as Record<string, unknown>;
  for (const [fuse, wanted] of Object.entries(REQUIRED_FUSES)) {
    if (fuses[fuse] !== wanted) problems.push(`${name}: electronFuses.${fuse} must be ${String(wanted)} (is ${String(fuses[fuse])})`);
  }
  const main = (config.extraMetadata as Record<string, unknown> | null | undefined)?.main;
  if (main !== FLAVOUR_MAIN[flavour]) problems.push(`${name}: extraMetadata.main must be ${FLAVOUR_MAIN[flavour]} (is ${String(main)})`);
  const patterns = filePatterns(config);
  if (!patterns.includes(FLAVOUR_MAIN[flavour])) problems.push(`${name}: files must list ${FLAVOUR_MAIN[flavour]}`);
  for (const needed of ['dist/app/preload.cjs', 'dist/app/radio.js', 'dist/app/voice.js', 'dist/renderer/**', 'package.json']) {
    if (!patterns.includes(needed)) problems.push(`${name}: files must list ${needed}`);
  }
  if (flavour === 'production') {
    for (const p of patterns) {
      if (/qa|(^|\/)src\/|(^|\/)test\/|\.ts$|dist\/(src|test|tools)\//i.test(p) && !p.startsWith('!')) {
        problems.push(`${name}: the production package must not include ${p}`);
      }
    }
  }
  // What ships and how it is checked (docs/packaging.md "Native addons", "What ships").
  if (config.npmRebuild !== false)
    problems.push(`${name}: npmRebuild must be false: every addon is N-API, and a rebuild at packaging would ship a binary no test ran`);
  if (config.afterPack !== `./${HOOK_OUTPUT}`)
    problems.push(`${name}: afterPack must be ./${HOOK_OUTPUT} (the native-addon and node_modules checks)`);
  const leftOut = leftOutPattern(loadProductionModules(root));
  if (!patterns.includes(leftOut))
    problems.push(`${name}: files must exclude the packages tools/package/production-modules.json leaves out, as one pattern: ${leftOut}`);
  for (const platform of ['win', 'mac', 'linux'] as const) {
    // Undeclared arches are the build machine's: what a release holds would depend on who built it.
    try {
      declaredArches(config, platform);
    } catch (e) {
      problems.push(`${name}: ${(e as Error).message}`);
    }
    // A platform-level `files` turns the top-level list into a file set and every project file gets in.
    if (config[platform]?.files != null)
      problems.push(`${name}: ${platform}.files must not be set (put the pattern in the top-level files)`);
  }
  problems.push(...iconProblems(root, name, config));
  const desktopName = (config.extraMetadata as Record<string, unknown> | null | undefined)?.desktopName;
  if (desktopName !== `${FLAVOUR_EXECUTABLE[flavour]}.desktop`)
    problems.push(`${name}: extraMetadata.desktopName must be ${FLAVOUR_EXECUTABLE[flavour]}.desktop (is ${String(desktopName)})`);
  if (config.linux?.executableName !== FLAVOUR_EXECUTABLE[flavour])
    problems.push(`${name}: linux.executableName must be ${FLAVOUR_EXECUTABLE[flavour]}`);
  if (config.linux?.syncDesktopName !== true)
    problems.push(`${name}: linux.syncDesktopName must be true (the .desktop file named after desktopName)`);
  const unpack = asList(config.asarUnpack);
  for (const needed of ['**/*.node', '**/*.wasm']) {
    if (!unpack.includes(needed)) problems.push(`${name}: asarUnpack must include ${needed}`);
  }
  if (config.asar === false) problems.push(`${name}: asar must stay on (fuses only load the app from app.asar)`);
  const depends = asList(config.deb?.depends);
  for (const needed of REQUIRED_DEB_DEPENDS) {
    if (!depends.includes(needed)) problems.push(`${name}: deb.depends must include ${needed}`);
  }
  for (const file of [config.deb?.afterInstall, config.mac?.entitlements, config.mac?.entitlementsInherit]) {
    if (typeof file !== 'string' || !existsSync(join(root, file))) problems.push(`${name}: ${String(file)} does not exist`);
  }
  const info = (config.mac?.extendInfo ?? {}) as Record<string, unknown>;
  for (const key of ['NSCameraUsageDescription', 'NSBluetoothAlwaysUsageDescription']) {
    if (typeof info[key] !== 'string' || info[key] === '') problems.push(`${name}: mac.extendInfo.${key} is missing`);
  }
  const nsis = config.nsis ?? {};
  if (nsis.perMachine !== true || nsis.oneClick !== false)
    problems.push(`${name}: nsis must be a per-machine assisted installer (perMachine true, oneClick false)`);
  const publish = asList(
    (Array.isArray(config.publish) ? config.publish : config.publish === undefined || config.publish === null ? [] : [config.publish]).map(
      (p) => (typeof p === 'string' ? p : p.provider),
    ),
  );
  if (!publish.includes('generic')) problems.push(`${name}: publish must use the generic provider (electron-updater feed)`);
  return problems;
}

export interface FlavourCheck {
  readonly flavour: Flavour;
  readonly file: string;
  readonly problems: readonly string[];
  readonly config?: Configuration;
}

/** Every check of one flavour; never throws for a bad configuration (problems name the file and key). */
export async function checkFlavour(root: string, flavour: Flavour): Promise<FlavourCheck> {
  const file = CONFIG_FILES[flavour];
  const problems = schemaProblems(root, file);
  let config: Configuration | undefined;
  try {
    config = await loadWithElectronBuilder(root, file);
  } catch (e) {
    problems.push(`${file}: electron-builder rejects it: ${(e as Error).message.split('\n')[0] ?? ''}`);
  }
  if (config !== undefined) problems.push(...policyProblems(root, flavour, config));
  return { flavour, file, problems, ...(config === undefined ? {} : { config }) };
}
