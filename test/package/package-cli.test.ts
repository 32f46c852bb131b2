/**
 * The release build's entry (`npm run package:*` → tools/package/package.ts): a production build for Windows
 * or macOS without signing stops before electron-builder runs, and `--unsigned` goes ahead on purpose.
 * (`--print-plan` shows what would run; building Windows or macOS packages needs those OSes.)
 */
import { execFile } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function packageScript(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const signing = new Set(['CSC_LINK', 'WIN_CSC_LINK', 'CSC_NAME']);
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !signing.has(name)));
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'tools/package/package.ts', ...args],
      { cwd: REPO, env, timeout: 60_000 },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

describe('npm run package:win / package:mac without signing', () => {
  it.each([
    ['--win', 'Windows'],
    ['--mac', 'macOS'],
  ])('%s refuses with exit 2 and says what to configure or pass, before electron-builder runs', async (flag, os) => {
    const run = await packageScript([flag]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`package: refusing to build an unsigned production package for ${os}: no signing is configured.`);
    expect(run.stderr).toContain('pass --unsigned.');
    expect(run.stdout).not.toContain('electron-builder --');
  });

  it('--unsigned goes ahead with the warning (macOS with identity discovery off); the QA flavour and Linux need no flag', async () => {
    const mac = await packageScript(['--mac', '--unsigned', '--arm64', '--print-plan']);
    expect(mac.code).toBe(0);
    expect(mac.stderr).toContain('package: WARNING: building an UNSIGNED production package for macOS (--unsigned)');
    expect(mac.stdout).toContain(
      'package: electron-builder --mac dmg zip --arm64 --publish never --config electron-builder.yml -c.mac.identity=null',
    );
    const qa = await packageScript(['--win', '--qa', '--print-plan']);
    expect(qa.code).toBe(0);
    expect(qa.stdout).toContain('package: electron-builder --win nsis --x64 --publish never --config electron-builder.qa.yml');
    const linux = await packageScript(['--linux', '--x64', '--print-plan', '-c.electronDist=/opt/electron']);
    expect(linux.code).toBe(0);
    expect(linux.stdout).toContain(
      'package: electron-builder --linux AppImage deb --x64 --publish never --config electron-builder.yml -c.electronDist=/opt/electron',
    );
  });
});

// Each OS and CPU is built on a machine of that OS and CPU (docs/packaging.md, "Which CPUs each OS builds").
describe('one declared arch per build, on a machine that can build it', () => {
  const other = process.arch === 'arm64' ? 'x64' : 'arm64';

  it('the targets with one arch go to electron-builder (with the OS flag alone it builds every declared arch); --dir replaces the targets', async () => {
    const dir = await packageScript(['--linux', '--arm64', '--dir', '--print-plan']);
    expect(dir.code).toBe(0);
    expect(dir.stdout).toContain('package: electron-builder --linux --arm64 --publish never --config electron-builder.yml --dir');
    const host = await packageScript(['--linux', '--print-plan']);
    expect(host.stdout).toContain(`package: electron-builder --linux AppImage deb --${process.arch} --publish never`);
  });

  it('an undeclared arch and two arches in one build are refused (exit 2)', async () => {
    const win = await packageScript(['--win', '--qa', '--arm64', '--print-plan']);
    expect(win.code).toBe(2);
    expect(win.stderr).toContain('package: Windows packages are built for x64 (electron-builder.qa.yml), not arm64');
    const universal = await packageScript(['--mac', '--qa', '--universal', '--print-plan']);
    expect(universal.code).toBe(2);
    expect(universal.stderr).toContain('package: macOS packages are built for x64 and arm64 (electron-builder.qa.yml), not universal');
    const both = await packageScript(['--mac', '--x64', '--arm64']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('package: one arch per build: --x64 and --arm64');
  });

  it(`a Linux ${other} build on this ${process.arch} machine is refused before electron-builder runs: the PC/SC addon npm ci built is ${process.arch}`, async () => {
    const run = await packageScript(['--linux', `--${other}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`package: refusing to build the Linux ${other} package on this machine:`);
    expect(run.stderr).toContain(
      `Linux ${other}: node_modules/smartcard/build/Release/smartcard_napi.node is built for ${process.arch}, not ${other}`,
    );
    expect(run.stderr).toContain(`build the Linux ${other} package on an ${other} machine after npm ci there`);
    expect(run.stdout).not.toContain('afterPack');
  });

  it('a macOS or Windows build on Linux is refused, naming why', async () => {
    const run = await packageScript(['--mac', '--qa', '--arm64']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'package: refusing to build the macOS arm64 package on this machine:\n  - a macOS package is built on macOS, and this machine runs linux',
    );
  });
});
