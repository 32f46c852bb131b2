import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Configuration } from 'electron-builder';
import { afterAll, describe, expect, it } from 'vitest';
import { checkFlavour, loadWithElectronBuilder, policyProblems, schemaProblems } from '../../tools/package/builder-config.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const temps: string[] = [];
afterAll(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

async function tempYaml(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-builder-config-'));
  temps.push(dir);
  const file = join(dir, 'bad.yml');
  await writeFile(file, text);
  return file;
}

describe('electron-builder configuration, both flavours', () => {
  it.each(['production', 'qa'] as const)('%s: valid for the schema, for electron-builder and for the packaging policy', async (flavour) => {
    const check = await checkFlavour(REPO, flavour);
    expect(check.problems).toEqual([]);
    expect(check.config?.electronFuses).toEqual({
      runAsNode: false,
      enableNodeOptionsEnvironmentVariable: false,
      enableNodeCliInspectArguments: false,
      enableEmbeddedAsarIntegrityValidation: true,
      onlyLoadAppFromAsar: true,
      enableCookieEncryption: true,
      grantFileProtocolExtraPrivileges: false,
      loadBrowserProcessSpecificV8Snapshot: false,
    });
  });

  it('the QA flavour is the production file plus its entry, under its own identity', async () => {
    const production = await loadWithElectronBuilder(REPO, 'electron-builder.yml');
    const qa = await loadWithElectronBuilder(REPO, 'electron-builder.qa.yml');
    expect(qa.appId).not.toBe(production.appId);
    expect(qa.productName).toBe('mDL Kiosk QA');
    expect(qa.extraMetadata).toMatchObject({ main: 'dist/app/main-qa.js', name: 'mdl-kiosk-qa' });
    expect(production.extraMetadata).toMatchObject({ main: 'dist/app/main.js', productName: 'mDL Kiosk' });
    expect(qa.linux?.executableName).toBe('mdl-kiosk-qa');
    expect(qa.deb?.depends).toEqual(production.deb?.depends);
    expect(qa.nsis).toEqual(production.nsis);
  });

  it('fails loudly, not silently, where electron-builder is not installed', async () => {
    const root = dirname(await tempYaml('{}\n'));
    await writeFile(join(root, 'package.json'), '{"name":"x","version":"1.0.0"}');
    expect(() => schemaProblems(root, 'bad.yml')).toThrow('electron-builder is not installed (it is a devDependency): run `npm ci`');
  });

  it('the schema check names a misspelt and an unknown key', async () => {
    const file = await tempYaml('appId: x.y\nkiosk: true\nlinux:\n  categroy: Utility\nasar: "yes please"\n');
    const problems = schemaProblems(REPO, file);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/\/ must NOT have additional properties \{"additionalProperty":"kiosk"\}/),
        expect.stringMatching(/\/linux must NOT have additional properties \{"additionalProperty":"categroy"\}/),
        expect.stringMatching(/\/asar must be null,boolean/),
      ]),
    );
  });

  it('electron-builder’s own validator rejects the same file', async () => {
    const file = await tempYaml('appId: x.y\nkiosk: true\n');
    await expect(loadWithElectronBuilder(REPO, file)).rejects.toThrow(/unknown property 'kiosk'/);
  });

  it('the policy catches a fuse left on, QA or sources in the production files, a lost dependency and a missing script', async () => {
    const config = await loadWithElectronBuilder(REPO, 'electron-builder.yml');
    const broken: Configuration = {
      ...config,
      electronFuses: { ...config.electronFuses, runAsNode: true },
      files: ['package.json', 'dist/app/main.js', 'dist/app/main-qa.js', 'dist/app/preload.cjs', 'dist/renderer/**', 'src/**'],
      npmRebuild: true,
      afterPack: null,
      linux: { ...config.linux, files: ['!**/node_modules/x'] },
      asarUnpack: ['**/*.node'],
      deb: { ...config.deb, depends: ['libgtk-3-0'], afterInstall: 'build/linux/nowhere.sh' },
    };
    expect(policyProblems(REPO, 'production', broken)).toEqual([
      'electron-builder.yml: electronFuses.runAsNode must be false (is true)',
      'electron-builder.yml: files must list dist/app/radio.js',
      'electron-builder.yml: files must list dist/app/voice.js',
      'electron-builder.yml: the production package must not include dist/app/main-qa.js',
      'electron-builder.yml: the production package must not include src/**',
      'electron-builder.yml: npmRebuild must be false: every addon is N-API, and a rebuild at packaging would ship a binary no test ran',
      'electron-builder.yml: afterPack must be ./dist/package-hooks/after-pack.cjs (the native-addon and node_modules checks)',
      expect.stringMatching(
        /^electron-builder\.yml: files must exclude the packages tools\/package\/production-modules\.json leaves out, as one pattern: !\*\*\/node_modules\/\{@serialport,/,
      ),
      'electron-builder.yml: linux.files must not be set (put the pattern in the top-level files)',
      'electron-builder.yml: asarUnpack must include **/*.wasm',
      'electron-builder.yml: deb.depends must include pcscd',
      'electron-builder.yml: deb.depends must include libpcsclite1',
      'electron-builder.yml: deb.depends must include bluez',
      'electron-builder.yml: build/linux/nowhere.sh does not exist',
    ]);
  });
});

describe('icons and the Linux desktop name', () => {
  it('both flavours name their .desktop file after desktopName, which follows the executable', async () => {
    const production = await loadWithElectronBuilder(REPO, 'electron-builder.yml');
    const qa = await loadWithElectronBuilder(REPO, 'electron-builder.qa.yml');
    expect(production.extraMetadata).toMatchObject({ desktopName: 'mdl-kiosk.desktop' });
    expect(qa.extraMetadata).toMatchObject({ desktopName: 'mdl-kiosk-qa.desktop' });
    expect(production.linux).toMatchObject({ syncDesktopName: true, icon: 'build/icons' });
    expect([production.win?.icon, production.mac?.icon]).toEqual(['build/icon.ico', 'build/icon.icns']);
  });

  it('the policy names a missing or wrong icon and a desktop name that does not follow the executable', async () => {
    const config = await loadWithElectronBuilder(REPO, 'electron-builder.yml');
    const broken: Configuration = {
      ...config,
      extraMetadata: { ...(config.extraMetadata as object), desktopName: 'kiosk.desktop' },
      win: { ...config.win, icon: 'build/icon.svg' },
      mac: { ...config.mac, icon: 'build/nowhere.icns' },
      linux: { ...config.linux, icon: 'build/icon.png', syncDesktopName: false },
    };
    const problems = policyProblems(REPO, 'production', broken);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^electron-builder\.yml: Windows icon build\/icon\.svg cannot be read \(not an \.ico file\)$/),
        'electron-builder.yml: macOS icon build/nowhere.icns does not exist',
        'electron-builder.yml: Linux icon build/icon.png must be a folder of NxN.png files',
        'electron-builder.yml: extraMetadata.desktopName must be mdl-kiosk.desktop (is kiosk.desktop)',
        'electron-builder.yml: linux.syncDesktopName must be true (the .desktop file named after desktopName)',
      ]),
    );
  });
});
