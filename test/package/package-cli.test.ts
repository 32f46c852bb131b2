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
    execFile(process.execPath, ['--import', 'tsx', 'tools/package/package.ts', ...args], { cwd: REPO, env, timeout: 60_000 }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
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
    const mac = await packageScript(['--mac', '--unsigned', '--print-plan']);
    expect(mac.code).toBe(0);
    expect(mac.stderr).toContain('package: WARNING: building an UNSIGNED production package for macOS (--unsigned)');
    expect(mac.stdout).toContain('package: electron-builder --mac --publish never --config electron-builder.yml -c.mac.identity=null');
    const qa = await packageScript(['--win', '--qa', '--print-plan']);
    expect(qa.code).toBe(0);
    expect(qa.stdout).toContain('package: electron-builder --win --publish never --config electron-builder.qa.yml');
    const linux = await packageScript(['--linux', '--print-plan', '-c.electronDist=/opt/electron']);
    expect(linux.code).toBe(0);
    expect(linux.stdout).toContain('package: electron-builder --linux --publish never --config electron-builder.yml -c.electronDist=/opt/electron');
  });
});
