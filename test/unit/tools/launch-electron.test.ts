import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEV_APP_DIR,
  ensureElectronBinary,
  locateElectronBinary,
  missingElectronMessage,
  OVERRIDE_ENV,
  platformExecutable,
  runElectron,
  runElectronInstaller,
  writeDevApp,
  type InstallOutcome,
} from '../../../tools/start/launch-electron.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'mdl-kiosk-launch-test-'));
  dirs.push(d);
  return d;
}

/**
 * A node_modules/electron stand-in whose index.js and install.js leave a mark when run: the launcher
 * must never require the package (that would start electron's own download) and runs install.js only
 * through `runElectronInstaller`.
 */
async function fakeElectronPackage(options: { pathTxt?: string; binary?: boolean; version?: string } = {}): Promise<string> {
  const dir = join(await tempDir(), 'electron');
  await mkdir(join(dir, 'dist'), { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'electron', version: '45.4.1' }));
  await writeFile(
    join(dir, 'index.js'),
    `require('fs').writeFileSync(${JSON.stringify(join(dir, 'REQUIRED'))}, 'x'); throw new Error('downloads');\n`,
  );
  await writeFile(
    join(dir, 'install.js'),
    `require('fs').writeFileSync(${JSON.stringify(join(dir, 'INSTALLED'))}, 'x'); console.error('Error: getaddrinfo ENOTFOUND github.com'); process.exit(1);\n`,
  );
  if (options.pathTxt !== undefined) await writeFile(join(dir, 'path.txt'), options.pathTxt);
  if (options.binary === true) {
    await writeFile(join(dir, 'dist', options.pathTxt ?? 'electron'), '#!/bin/sh\nexit 0\n');
    await writeFile(join(dir, 'dist', 'version'), options.version ?? 'v45.4.1');
  }
  return dir;
}

describe('finding the Electron binary without the electron package', () => {
  it('uses dist/<path.txt> when the package installed its binary', async () => {
    const dir = await fakeElectronPackage({ pathTxt: 'electron', binary: true });
    expect(locateElectronBinary({ electronDir: dir, env: {}, platform: 'linux' })).toEqual({
      found: true,
      path: join(dir, 'dist', 'electron'),
      via: 'package',
      version: 'v45.4.1',
    });
  });

  it('reports missing when path.txt is absent (the installer never completed), even if dist/ has files', async () => {
    const dir = await fakeElectronPackage({ binary: true });
    expect(locateElectronBinary({ electronDir: dir, env: {}, platform: 'linux' })).toEqual({
      found: false,
      expected: join(dir, 'dist', 'electron'),
      via: 'package',
    });
  });

  it('reports missing when path.txt names a binary that is not there', async () => {
    const dir = await fakeElectronPackage({ pathTxt: 'electron' });
    expect(locateElectronBinary({ electronDir: dir, env: {}, platform: 'linux' })).toMatchObject({ found: false, via: 'package' });
  });

  it('honours ELECTRON_OVERRIDE_DIST_PATH with the platform executable, and does not fall back to the package', async () => {
    const dir = await fakeElectronPackage({ pathTxt: 'electron', binary: true });
    const dist = await tempDir();
    expect(locateElectronBinary({ electronDir: dir, env: { [OVERRIDE_ENV]: dist }, platform: 'linux' })).toEqual({
      found: false,
      expected: join(dist, 'electron'),
      via: 'override',
    });
    await writeFile(join(dist, 'electron'), '');
    await writeFile(join(dist, 'version'), 'v45.4.1\n');
    expect(locateElectronBinary({ electronDir: dir, env: { [OVERRIDE_ENV]: dist }, platform: 'linux' })).toEqual({
      found: true,
      path: join(dist, 'electron'),
      via: 'override',
      version: 'v45.4.1',
    });
  });

  it('knows each platform’s executable inside an Electron distribution', () => {
    expect(platformExecutable('linux')).toBe('electron');
    expect(platformExecutable('win32')).toBe('electron.exe');
    expect(platformExecutable('darwin')).toBe('Electron.app/Contents/MacOS/Electron');
  });

  it('never requires the electron package (its index.js would start a download)', async () => {
    const dir = await fakeElectronPackage({ pathTxt: 'electron' });
    const installs: number[] = [];
    const install = (): Promise<InstallOutcome> => {
      installs.push(1);
      return Promise.resolve({ ok: false, detail: 'offline' });
    };
    await ensureElectronBinary({ electronDir: dir, env: {}, platform: 'linux', install });
    expect(existsSync(join(dir, 'REQUIRED'))).toBe(false);
    // …and the launcher's own source never loads it either.
    const source = await readFile(new URL('../../../tools/start/launch-electron.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/require\(\s*['"]electron['"]\s*\)|from\s+['"]electron['"]|import\(\s*['"]electron['"]\s*\)/);
  });
});

describe('installing once', () => {
  it('tries the installer exactly once when the binary is missing, then reports what it found', async () => {
    const dir = await fakeElectronPackage();
    let calls = 0;
    const result = await ensureElectronBinary({
      electronDir: dir,
      env: {},
      platform: 'linux',
      install: async () => {
        calls++;
        // The installer "succeeds": it writes path.txt and the binary.
        await writeFile(join(dir, 'path.txt'), 'electron');
        await writeFile(join(dir, 'dist', 'electron'), '');
        return { ok: true, detail: 'installed' };
      },
    });
    expect(calls).toBe(1);
    expect(result.binary).toMatchObject({ found: true, path: join(dir, 'dist', 'electron') });
  });

  it('does not download when ELECTRON_OVERRIDE_DIST_PATH is set: the user chose a distribution', async () => {
    const dir = await fakeElectronPackage();
    let calls = 0;
    const result = await ensureElectronBinary({
      electronDir: dir,
      env: { [OVERRIDE_ENV]: await tempDir() },
      platform: 'linux',
      install: () => {
        calls++;
        return Promise.resolve({ ok: true, detail: '' });
      },
    });
    expect(calls).toBe(0);
    expect(result.binary.found).toBe(false);
    expect(result.install).toBeUndefined();
  });

  it('runs the package’s install.js with the given environment and returns its last error line', async () => {
    const dir = await fakeElectronPackage();
    const outcome = await runElectronInstaller(dir, { ...process.env, ELECTRON_MIRROR: 'https://mirror.invalid/electron/' }, 10_000);
    expect(outcome).toEqual({ ok: false, detail: 'Error: getaddrinfo ENOTFOUND github.com' });
    expect(existsSync(join(dir, 'INSTALLED'))).toBe(true);
  });

  it('stops an installer that hangs, after the time limit', async () => {
    const dir = await fakeElectronPackage();
    await writeFile(join(dir, 'install.js'), 'setInterval(() => {}, 1000);\n');
    const started = Date.now();
    const outcome = await runElectronInstaller(dir, process.env, 300);
    expect(outcome.ok).toBe(false);
    expect(outcome.detail).toMatch(/stopped after 0 s without finishing/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('the message when there is no binary', () => {
  it('names what is missing, the download that failed, both fixes and npm run demo', () => {
    const text = missingElectronMessage({
      binary: { found: false, expected: '/repo/node_modules/electron/dist/electron', via: 'package' },
      version: '45.4.1',
      root: '/repo',
      install: { ok: false, detail: 'TypeError: fetch failed' },
    });
    expect(text).toContain('the Electron 45.4.1 binary is missing (node_modules/electron/dist/electron does not exist)');
    expect(text).toContain('Tried once to download it (node node_modules/electron/install.js): TypeError: fetch failed');
    expect(text).toContain('ELECTRON_MIRROR=https://<your-mirror>/electron/ npx install-electron');
    expect(text).toContain('ELECTRON_OVERRIDE_DIST_PATH=/path/to/electron-v45.4.1-dist npm start');
    expect(text).toContain('`npm run demo` runs the same kiosk');
  });

  it('points at the override folder when that is where the binary is missing', () => {
    const text = missingElectronMessage({
      binary: { found: false, expected: '/opt/electron-45/electron', via: 'override' },
      version: '45.4.1',
      root: '/repo',
    });
    expect(text).toContain('(/opt/electron-45/electron does not exist)');
    expect(text).toContain('ELECTRON_OVERRIDE_DIST_PATH points at a folder without it');
    expect(text).not.toContain('Tried once');
  });
});

describe('launching', () => {
  it('writes the dev app folder whose main is the QA bundle and whose name is the QA flavour’s', async () => {
    const root = await tempDir();
    await writeFile(join(root, 'package.json'), JSON.stringify({ name: 'mdl-kiosk', version: '1.2.3' }));
    const dir = await writeDevApp(root);
    expect(dir).toBe(join(root, DEV_APP_DIR));
    expect(JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'))).toEqual({
      name: 'mdl-kiosk-qa',
      productName: 'mDL Kiosk QA',
      version: '1.2.3',
      private: true,
      type: 'module',
      main: '../app/main-qa.js',
    });
  });

  it('passes the app folder and arguments, and returns the exit code', async () => {
    const dir = await tempDir();
    const binary = join(dir, 'electron');
    const argsFile = join(dir, 'args');
    await writeFile(binary, `#!/bin/sh\necho "$@" > ${JSON.stringify(argsFile)}\nexit 7\n`);
    await chmod(binary, 0o755);
    expect(await runElectron(binary, '/repo/dist/app-dev', ['--config', 'x.json'], process.env)).toBe(7);
    expect((await readFile(argsFile, 'utf8')).trim()).toBe('/repo/dist/app-dev --config x.json');
  });

  it('forwards SIGTERM to the app and reports its exit code', async () => {
    const dir = await tempDir();
    const binary = join(dir, 'electron');
    const ready = join(dir, 'ready');
    // The stand-in exits 42 when it gets SIGTERM, so the code proves the signal arrived.
    await writeFile(binary, `#!/bin/sh\ntrap 'exit 42' TERM\ntouch ${JSON.stringify(ready)}\nwhile true; do sleep 0.05; done\n`);
    await chmod(binary, 0o755);
    const listenersBefore = process.listenerCount('SIGTERM');
    const exit = runElectron(binary, dir, [], process.env);
    while (!existsSync(ready)) await new Promise((r) => setTimeout(r, 20));
    expect(process.listenerCount('SIGTERM')).toBe(listenersBefore + 1);
    process.emit('SIGTERM', 'SIGTERM');
    expect(await exit).toBe(42);
    expect(process.listenerCount('SIGTERM')).toBe(listenersBefore);
  });

  it('reports a binary that cannot be started as exit code 1', async () => {
    const dir = await tempDir();
    expect(await runElectron(join(dir, 'missing'), dir, [], process.env)).toBe(1);
  });
});
