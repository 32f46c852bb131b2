import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entriesFromEnv } from '../../tools/build/app.js';
import { loadWithElectronBuilder, REQUIRED_FUSES } from '../../tools/package/builder-config.js';
import {
  devOnlyPackages,
  dryRun,
  DryRunError,
  ELECTRON_VERSION,
  flavourProblems,
  makeFakeElectronDist,
  packedAppReport,
  packFlavour,
  parseAsarListing,
  PCSC_ADDON,
  readFuses,
  SIMULATOR_PACKAGES,
  type DryRunResult,
  type PackedFlavour,
  type ProblemContext,
} from '../../tools/package/dry-run.js';
import { nodeModuleExclusions, shippedAddons } from '../../tools/package/package-targets.js';
import { nameOfId } from '../../tools/package/packed-app.js';
import { loadProductionModules } from '../../tools/package/production-modules.js';
import { compileAddon } from '../support/native-fixtures.js';
import { inspectInstalledAsar, RECORDED_DIGEST_FILE } from '../../src/main/installed-asar.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODULES = loadProductionModules(REPO);

let result: DryRunResult;
let production: PackedFlavour;
let qa: PackedFlavour;

// One packaging run for the whole file: both flavours through `electron-builder --dir` (about 15 s).
beforeAll(async () => {
  // Kept until afterAll, so the tests can look at the unpacked files too.
  result = await dryRun({ root: REPO, entries: entriesFromEnv(process.env), keep: true });
  const byFlavour = new Map(result.packed.map((p) => [p.flavour, p]));
  production = byFlavour.get('production') as PackedFlavour;
  qa = byFlavour.get('qa') as PackedFlavour;
}, 180_000);

const paths = (p: PackedFlavour): string[] => p.files.map((f) => f.path);
const own = (p: PackedFlavour): string[] => paths(p).filter((f) => !f.startsWith('/node_modules/'));

describe('electron-builder --dir on a stand-in Electron, both flavours', () => {
  it('packs both flavours with every check passing', () => {
    expect(result.problems).toEqual([]);
    expect(result.packed.map((p) => p.flavour)).toEqual(['production', 'qa']);
  });

  it('production carries the bundles and the screen, with the QR decoder’s wasm inside the archive', () => {
    expect(own(production).filter((f) => !f.startsWith('/dist/renderer/assets/'))).toEqual([
      '/dist/app/main.js',
      '/dist/app/main.js.map',
      '/dist/app/pcsc-worker.js',
      '/dist/app/pcsc-worker.js.map',
      '/dist/app/preload.cjs',
      '/dist/app/radio.js',
      '/dist/app/radio.js.map',
      '/dist/app/voice.js',
      '/dist/app/voice.js.map',
      '/dist/renderer/THIRD-PARTY-NOTICES.txt',
      '/dist/renderer/index.html',
      '/package.json',
    ]);
    const wasm = production.files.filter((f) => f.path.startsWith('/dist/renderer/') && f.path.endsWith('.wasm'));
    expect(wasm.map((f) => f.path)).toEqual(expect.arrayContaining([expect.stringMatching(/zxing_reader-.*\.wasm$/)]));
    expect(wasm.every((f) => !f.unpacked)).toBe(true);
    expect(production.packageJson).toMatchObject({ main: 'dist/app/main.js', productName: 'mDL Kiosk', desktopName: 'mdl-kiosk.desktop' });
    expect(production.packageJson).not.toHaveProperty('devDependencies');
  });

  it('production has no QA entry, QA assets, sources, tests, TypeScript, simulators or dev packages', () => {
    const all = paths(production);
    expect(
      all.filter((f) => /main-qa|\/assets\/phone|\/qa\/|^\/(src|test|tools)\/|^\/dist\/(src|test|tools)\/|\.(ts|tsx)$/.test(f)),
    ).toEqual([]);
    for (const sim of SIMULATOR_PACKAGES) expect(all.some((f) => f.startsWith(`/node_modules/${sim}/`))).toBe(false);
    for (const dev of ['vite', 'react', 'vitest', 'electron', 'electron-builder', 'esbuild', 'typescript']) {
      expect(all.some((f) => f.startsWith(`/node_modules/${dev}/`))).toBe(false);
    }
    // …while the production dependencies are there.
    for (const dep of [
      'ws',
      'zod',
      'pino',
      'pino-roll',
      'electron-updater',
      '@stoprocent/noble',
      '@stoprocent/bleno',
      'smartcard',
      '@echogarden/espeak-ng-emscripten',
    ]) {
      expect(all).toContain(`/node_modules/${dep}/package.json`);
    }
  });

  it('the node_modules of both packages are exactly the packages tools/package/production-modules.json says ship', () => {
    for (const p of [production, qa]) {
      expect([...new Set(p.packages.map(nameOfId))].sort()).toEqual(Object.keys(MODULES.ships).sort());
      expect(result.reports.get(p.flavour)?.problems).toEqual([]);
    }
  });

  it('lean: no USB or serial HCI drivers, no build tool, no other OS’s or musl builds, no docs, tests, sources or unused module formats', () => {
    const all = paths(production);
    for (const left of [
      'usb',
      'serialport',
      '@serialport/bindings-cpp',
      'patch-package',
      'open',
      'cross-spawn',
      'node-addon-api',
      'argparse',
      'async',
    ]) {
      expect(
        all.some((f) => f.startsWith(`/node_modules/${left}/`) || f.includes(`/node_modules/${left}/`)),
        left,
      ).toBe(false);
    }
    const leftovers = all.filter(
      (f) =>
        f.startsWith('/node_modules/') &&
        (/\/prebuilds\/(?!linux-x64\/)/.test(f) ||
          /\.musl\.node$|\.(map|md|cpp|h|gyp|ts)$|\/(test|tests|docs|examples?|src\/.*\.cc)\//i.test(
            f.replace(/\/(LICEN[CS]E|licen[cs]e)[^/]*$/, ''),
          ) ||
          /\/build\/(?!Release\/[^/]+\.node$)/.test(f) ||
          /\/date-fns\/.*\.js$|\/date-fns\/locale\/(?!en-US|_lib)/.test(f) ||
          /\/zod\/.*\.cjs$|\/zod\/v3\//.test(f) ||
          /\/(tar|minipass|minizlib|chownr|yallist|@isaacs\/fs-minipass)\/dist\/commonjs\//.test(f)),
    );
    expect(leftovers).toEqual([]);
    // Licence texts stay, Markdown ones included.
    expect(all).toContain('/node_modules/date-fns/LICENSE.md');
  });

  it('native modules: only the PC/SC addon and the HCI socket’s Linux x64 build, unpacked; the afterPack hook read them as N-API', async () => {
    const natives = production.files.filter((f) => f.path.endsWith('.node'));
    expect(natives).toEqual([
      {
        path: '/node_modules/@stoprocent/bluetooth-hci-socket/prebuilds/linux-x64/@stoprocent+bluetooth-hci-socket.glibc.node',
        unpacked: true,
      },
      { path: PCSC_ADDON, unpacked: true },
    ]);
    expect(existsSync(join(production.appOutDir, 'resources/app.asar.unpacked', PCSC_ADDON))).toBe(true);
    // The same files the package script's check predicts from the files patterns (tools/package/package-targets.ts),
    // which the tests of the other OS and CPU targets rely on.
    const config = await loadWithElectronBuilder(REPO, 'electron-builder.yml');
    expect(natives.map((f) => f.path.slice(1))).toEqual(
      shippedAddons(REPO, nodeModuleExclusions(config, 'linux'), { os: 'linux', arch: 'x64' }, MODULES),
    );
    for (const p of [production, qa]) {
      expect(p.hookReport).toMatch(
        /mdl-kiosk afterPack: mDL Kiosk( QA)?: 2 native addon\(s\) load in Electron 45\.4\.1 on linux-x64 \(elf x64 N-API\)/,
      );
      expect(result.reports.get(p.flavour)?.addons.map((a) => a.description)).toEqual(['elf x64 N-API', 'elf x64 N-API']);
    }
  });

  it('what main.js loads from node_modules loads from the packed production app in plain Node (the PC/SC and HCI addons too)', () => {
    expect(result.loadSmoke.ok, result.loadSmoke.output).toBe(true);
    // …and the packed voice process (dist/app/voice.js with the engine from the packed node_modules) spoke.
    expect(result.loadSmoke.output).toMatch(/^loaded 16 entry modules as main\.js does; voice\.js spoke \d+ bytes$/m);
  });

  it('the QA flavour adds its entry, the phone page and the codec wasm, and starts from main-qa.js', () => {
    expect(own(qa)).toEqual(
      expect.arrayContaining([
        '/dist/app/main-qa.js',
        '/dist/app/main.js',
        '/dist/app/preload.cjs',
        '/dist/app/assets/index.html',
        '/dist/app/openjpegwasm.wasm',
      ]),
    );
    expect(qa.packageJson).toMatchObject({
      main: 'dist/app/main-qa.js',
      name: 'mdl-kiosk-qa',
      productName: 'mDL Kiosk QA',
      desktopName: 'mdl-kiosk-qa.desktop',
    });
    // The simulators are inlined in main-qa.js: their packages are not shipped in QA either.
    for (const sim of SIMULATOR_PACKAGES) expect(paths(qa).some((f) => f.startsWith(`/node_modules/${sim}/`))).toBe(false);
  });

  it('the fuses are flipped in both packaged executables (read back from the binary)', async () => {
    expect(production.fuses).toEqual(REQUIRED_FUSES);
    expect(qa.fuses).toEqual(REQUIRED_FUSES);
    // The stand-in starts with Electron's own defaults, so the flip is real, not a no-op.
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-fuses-'));
    try {
      await makeFakeElectronDist(dir);
      expect(readFuses(join(dir, 'electron'))).toMatchObject({
        runAsNode: true,
        enableNodeOptionsEnvironmentVariable: true,
        onlyLoadAppFromAsar: false,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('each flavour gets its update feed (generic provider, own channel)', () => {
    expect(production.updateConfig).toMatch(/^provider: generic$/m);
    expect(production.updateConfig).toMatch(/^channel: latest$/m);
    expect(qa.updateConfig).toMatch(/^channel: qa$/m);
  });

  it('the QA bundle pipeline runs a whole verification with only the packaged node_modules', () => {
    expect(result.smoke.ok).toBe(true);
    expect(result.smoke.output).toContain('"verdict":"verified"');
  });

  it('…and that smoke run fails without the data files copied beside the bundle', async () => {
    const smokeDir = join(result.workDir, 'qa-app', 'dist', 'smoke');
    await rm(join(smokeDir, 'assets'), { recursive: true, force: true });
    const run = await new Promise<{ code: number | null; stderr: string }>((done) => {
      execFile(process.execPath, [join(smokeDir, 'main-qa.js')], { cwd: join(result.workDir, 'qa-app') }, (error, _stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stderr });
      });
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/ENOENT.*assets/);
  });
});

describe('the archive checks fail when they should', () => {
  const context = (): ProblemContext => ({ devOnly: devOnlyPackages(REPO), modules: MODULES, electronVersion: ELECTRON_VERSION });

  it('a planted wrong-ABI addon (node_register_module_v115, as a NAN addon built by npm ci for Node 20) stops the packaging, naming the file', async () => {
    const plant = join(result.workDir, 'plant');
    await mkdir(plant, { recursive: true });
    await compileAddon(plant, 'node115', 'reader.node');
    const error = await packFlavour(REPO, 'production', join(result.workDir, 'electron-dist'), join(result.workDir, 'planted-abi'), {
      // A file set (a bare path outside the project would match nothing): copied into resources/ before afterPack.
      extraArgs: [`-c.extraResources.from=${plant}`, '-c.extraResources.filter=reader.node'],
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DryRunError);
    expect(String(error)).toContain(
      'mDL Kiosk: native module resources/reader.node registers node_register_module_v115: built for NODE_MODULE_VERSION 115, but Electron 45.4.1 (NODE_MODULE_VERSION 150) on linux-x64 loads only 150 or N-API',
    );
    // Stopped in afterPack, before the fuses are flipped (then signing, then installers).
    expect(readFuses(join(result.workDir, 'planted-abi', 'linux-unpacked', 'mdl-kiosk'))).toMatchObject({
      runAsNode: true,
      onlyLoadAppFromAsar: false,
    });
  }, 120_000);

  it('a planted unexpected production module, a left-out one and a missing one are each named', async () => {
    const planted: PackedFlavour = {
      ...production,
      packages: [...production.packages.filter((id) => nameOfId(id) !== 'ws'), 'left-pad@1.3.0', 'usb@2.18.0'],
    };
    const report = await packedAppReport(REPO, planted, context());
    expect(report.problems).toEqual([
      expect.stringMatching(
        /^production: unexpected package node_modules\/left-pad: the kiosk's package carries only what tools\/package\/production-modules\.json lists under "ships"/,
      ),
      expect.stringMatching(
        /^production: node_modules\/usb is packaged although tools\/package\/production-modules\.json leaves it out \(the HCI socket's USB driver/,
      ),
      expect.stringMatching(
        /^production: node_modules\/ws is missing \(the session WebSocket\); if npm ci could not build it, it left it out and still succeeded: run npm ci --foreground-scripts/,
      ),
    ]);
  });

  it('a QA entry, a simulator, a packed addon, a dev package, a TypeScript file and a fuse left on are each named', () => {
    const devOnly = context().devOnly;
    const vite = devOnly.find((id) => id.startsWith('vite@')) ?? 'vite@0';
    const broken: PackedFlavour = {
      ...production,
      files: [
        ...production.files,
        { path: '/dist/app/main-qa.js', unpacked: false },
        { path: '/node_modules/cbor-x/index.js', unpacked: false },
        { path: '/node_modules/x/build/Release/x.node', unpacked: false },
        { path: '/src/main/index.ts', unpacked: false },
      ],
      packages: [...production.packages, vite],
      fuses: { ...production.fuses, runAsNode: true },
    };
    expect(flavourProblems(broken, context())).toEqual(
      expect.arrayContaining([
        'production: /dist/app/main-qa.js must not ship (QA, sources or tests)',
        'production: simulator library cbor-x is in node_modules',
        'production: native module /node_modules/x/build/Release/x.node is inside the archive (it cannot be loaded from there)',
        'production: TypeScript file /src/main/index.ts is packaged',
        `production: dev-only package ${vite} is packaged`,
        'production: fuse runAsNode is true in the packaged executable, not false',
      ]),
    );
  });

  it("a flipped byte in a packed app.asar: the app's start check (app.asar.sha256, recorded by afterPack) refuses it", async () => {
    const resources = join(production.appOutDir, 'resources');
    const recorded = (await readFile(join(resources, RECORDED_DIGEST_FILE), 'utf8')).trim();
    expect(recorded).toBe(
      createHash('sha256')
        .update(await readFile(production.asar))
        .digest('hex'),
    );
    // A copy of the packed folder's resources, so the other tests keep the real one.
    const copy = await mkdtemp(join(tmpdir(), 'mdl-kiosk-flipped-'));
    try {
      await mkdir(join(copy, 'resources'));
      const bytes = await readFile(production.asar);
      const at = Math.floor(bytes.length / 2);
      bytes[at] = (bytes[at] ?? 0) ^ 0x01;
      await writeFile(join(copy, 'resources', 'app.asar'), bytes);
      await copyFile(join(resources, RECORDED_DIGEST_FILE), join(copy, 'resources', RECORDED_DIGEST_FILE));
      expect(inspectInstalledAsar(join(copy, 'resources'), true)).toMatchObject({
        state: 'refused',
        reason: expect.stringContaining(`recorded at build time: ${recorded}`) as string,
      });
      expect(flavourProblems({ ...production, appOutDir: copy }, context())).toEqual(
        expect.arrayContaining([expect.stringContaining('production: the packaged app would refuse to start:')]),
      );
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });

  it('a missing main bundle and a wrong entry are named', () => {
    const broken: PackedFlavour = {
      ...qa,
      files: qa.files.filter((f) => f.path !== '/dist/app/main-qa.js'),
      packageJson: { ...qa.packageJson, main: 'dist/app/main.js' },
    };
    expect(flavourProblems(broken, context())).toEqual([
      'qa: /dist/app/main-qa.js is missing from the archive',
      'qa: package.json main is dist/app/main.js, not dist/app/main-qa.js',
    ]);
  });

  it('stops at once, and says why, where electron-builder is not installed', async () => {
    const root = await mkdtemp(join(tmpdir(), 'mdl-kiosk-no-builder-'));
    try {
      await expect(dryRun({ root })).rejects.toThrow('electron-builder is not installed (it is a devDependency): run `npm ci`');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('reads asar listings as files with their packed state', () => {
    expect(
      parseAsarListing([
        'pack   : /dist',
        'pack   : /dist/app',
        'pack   : /dist/app/main.js',
        'unpack : /node_modules/a',
        'unpack : /node_modules/a/a.node',
      ]),
    ).toEqual([
      { path: '/dist/app/main.js', unpacked: false },
      { path: '/node_modules/a/a.node', unpacked: true },
    ]);
  });
});

afterAll(async () => {
  await rm(result.workDir, { recursive: true, force: true });
  // One line for the CI log: how long packaging takes here.
  process.stdout.write(
    `package dry run: ${(result.milliseconds / 1000).toFixed(1)} s (${result.packed.map((p) => `${p.flavour} ${(p.milliseconds / 1000).toFixed(1)} s`).join(', ')}, QA smoke ${(result.smoke.milliseconds / 1000).toFixed(1)} s)\n`,
  );
});
