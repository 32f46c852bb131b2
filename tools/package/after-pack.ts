/**
 * electron-builder's `afterPack` hook (electron-builder.yml), bundled to dist/package-hooks/after-pack.cjs
 * by `buildPackagingHook` before every packaging run (the `package:*` scripts, `npm run package:dry-run`).
 * It runs after the app folder is packed and before fuses, signing and installers: a packed app that fails
 * the checks of tools/package/packed-app.ts (a native addon that would not load in the shipped Electron,
 * an unexpected or missing package) stops the build here, naming the file or package, so no installer is
 * ever made from it. A packed app that passes gets the same modes and file times on every build machine
 * (tools/package/reproducible.ts: SOURCE_DATE_EPOCH, else the commit's time), before the fuses are flipped
 * and installers made from it. On Linux it also records app.asar's SHA-256 beside it (`app.asar.sha256`),
 * which the packaged production app compares at start (src/main/installed-asar.ts; macOS and Windows have
 * Electron's ASAR integrity fuse instead).
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import productionModules from './production-modules.json' with { type: 'json' };
import { loadAsar } from './builder-require.js';
import type { AddonTarget, TargetCpu } from './native-addons.js';
import { checkPackedApp, packagedPackages, parseAsarListing } from './packed-app.js';
import { parseProductionModules } from './production-modules.js';
import { normaliseTree, sourceDateEpoch } from './reproducible.js';
import { sha256File } from './tree-compare.js';
import { RECORDED_DIGEST_FILE } from '../../src/main/installed-asar.js';

/** What the hook reads of electron-builder's AfterPackContext. */
const ContextSchema = z.looseObject({
  appOutDir: z.string(),
  electronPlatformName: z.string(),
  arch: z.number().int(),
  packager: z.looseObject({
    appInfo: z.looseObject({ productFilename: z.string(), productName: z.string() }),
    info: z.looseObject({ projectDir: z.string(), framework: z.looseObject({ version: z.string() }) }),
  }),
});

/** builder-util's Arch enum → the CPUs the packed app must run on. */
const CPUS: Readonly<Record<number, readonly TargetCpu[]>> = { 0: ['ia32'], 1: ['x64'], 2: ['arm'], 3: ['arm64'], 4: ['x64', 'arm64'] };

export const HOOK_TAG = 'mdl-kiosk afterPack';

/** electron-builder looks for the export named after the hook (`afterPack`). */
export async function afterPack(raw: unknown): Promise<void> {
  const context = ContextSchema.parse(raw);
  const platformName = context.electronPlatformName === 'mas' ? 'darwin' : context.electronPlatformName;
  if (platformName !== 'linux' && platformName !== 'win32' && platformName !== 'darwin')
    throw new Error(`${HOOK_TAG}: unknown platform ${context.electronPlatformName}`);
  const cpus = CPUS[context.arch];
  if (cpus === undefined) throw new Error(`${HOOK_TAG}: unknown arch ${context.arch}`);
  const target: AddonTarget = { platform: platformName, cpus, electronVersion: context.packager.info.framework.version };
  const resourcesDir =
    platformName === 'darwin'
      ? join(context.appOutDir, `${context.packager.appInfo.productFilename}.app`, 'Contents', 'Resources')
      : join(context.appOutDir, 'resources');
  const archive = join(resourcesDir, 'app.asar');
  if (!existsSync(archive)) throw new Error(`${HOOK_TAG}: ${archive} does not exist (asar must stay on)`);
  const asar = loadAsar(context.packager.info.projectDir);
  const files = parseAsarListing(asar.listPackage(archive, { isPack: true }));
  const label = context.packager.appInfo.productName;
  const report = await checkPackedApp({
    resourcesDir,
    files,
    packages: packagedPackages(files, (file) => asar.extractFile(archive, file)),
    target,
    modules: parseProductionModules(JSON.stringify(productionModules)),
    extract: (file) => asar.extractFile(archive, file),
    label,
  });
  if (report.problems.length > 0) {
    throw new Error(`${HOOK_TAG}: ${label} cannot ship as packed:\n  - ${report.problems.join('\n  - ')}`);
  }
  // Linux has no ASAR integrity fuse: the app compares app.asar with this record at start (src/main/installed-asar.ts).
  if (platformName === 'linux') await writeFile(join(resourcesDir, RECORDED_DIGEST_FILE), `${await sha256File(archive)}\n`);
  // The whole app folder: what Electron brought and what was packed (the record included). Fuses and signing rewrite the
  // executable afterwards; the package script and the dry run set its time again (docs/packaging.md).
  const epoch = sourceDateEpoch(context.packager.info.projectDir);
  await normaliseTree(context.appOutDir, epoch);
  const kinds = [...new Set(report.addons.map((a) => a.description))].join(', ');
  process.stdout.write(
    `  • ${HOOK_TAG}: ${label}: ${report.addons.length} native addon(s) load in Electron ${target.electronVersion} on ${platformName}-${cpus.join('+')} (${kinds || 'none'}); ` +
      `${report.packages.length} packages in node_modules, as listed; modes and times normalised to ${new Date(epoch * 1000).toISOString()}\n`,
  );
}

export default afterPack;
