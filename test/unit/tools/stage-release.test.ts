/**
 * Staged rollout by percentage (tools/package/stage-release.ts): the channel file it writes, read by the
 * electron-updater the app ships — its own parser and its own staging rule (AppUpdater.isStagingMatch) —
 * for kiosks whose staging ids fall inside and outside the stage.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { parsePercent, parseStageArgs, stageChannelFile, StageError } from '../../../tools/package/stage-release.js';
import { REPO_ROOT } from '../../../tools/supply-chain/common.js';

const require = createRequire(import.meta.url);
interface UpdateInfo {
  readonly version: string;
  readonly stagingPercentage?: number;
}
const provider = require('electron-updater/out/providers/Provider') as { parseUpdateInfo(raw: string, file: string, url: URL): UpdateInfo };
const { AppUpdater } = require('electron-updater/out/AppUpdater') as {
  AppUpdater: { prototype: { isStagingMatch(this: unknown, info: UpdateInfo): Promise<boolean> } };
};

/** electron-updater's rule, run with a given kiosk staging id (the `.updaterId` in its data folder). */
function inStage(info: UpdateInfo, stagingId: string): Promise<boolean> {
  const updater = {
    stagingUserIdPromise: { value: Promise.resolve(stagingId) },
    _logger: { info: () => undefined, warn: () => undefined },
  };
  return AppUpdater.prototype.isStagingMatch.call(updater, info);
}

/** A staging id whose last four bytes put the kiosk at `fraction` of the range (the value electron-updater compares). */
const kioskAt = (fraction: number): string =>
  `6ba7b810-9dad-41d1-80b4-0000${Math.round(fraction * 0xffffffff)
    .toString(16)
    .padStart(8, '0')}`;

const CHANNEL = [
  'version: 1.4.0',
  'files:',
  '  - url: mdl-kiosk-1.4.0-linux-x86_64.AppImage',
  '    sha512: 2lp4gOr1bXd3SrGphpqVYjO6fjc0MpWuy9ryMV/bX8tqM7ShtvObBUy+Xs6mCzjxSKWE8c5pbRXvFXQ3hTvGqA==',
  '    size: 112735424',
  '    blockMapSize: 117562',
  '  - url: mdl-kiosk-1.4.0-linux-amd64.deb',
  '    sha512: 0OKM7H0HlyBC5DbIlO+yZlHMRc9rc26TmQ7MuiijFHaqNMM3ENQG3ZVpXntn4Gd2Z0HNAjrLRFVmZNlWgFhm2g==',
  '    size: 80245678',
  'path: mdl-kiosk-1.4.0-linux-x86_64.AppImage',
  'sha512: 2lp4gOr1bXd3SrGphpqVYjO6fjc0MpWuy9ryMV/bX8tqM7ShtvObBUy+Xs6mCzjxSKWE8c5pbRXvFXQ3hTvGqA==',
  "releaseDate: '2026-11-20T09:12:44.512Z'",
  '',
].join('\n');

const parse = (text: string): UpdateInfo =>
  provider.parseUpdateInfo(text, 'latest-linux.yml', new URL('https://updates.example.com/latest-linux.yml'));

const temps: string[] = [];
afterAll(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

describe('release:stage', () => {
  it('10 %: electron-updater offers the release to a kiosk at 5 % and not to one at 50 %; the rest of the file is untouched', async () => {
    const staged = stageChannelFile(CHANNEL, 10);
    const info = parse(staged.text);
    expect(info.stagingPercentage).toBe(10);
    expect(await inStage(info, kioskAt(0.05))).toBe(true);
    expect(await inStage(info, kioskAt(0.5))).toBe(false);
    const { stagingPercentage, ...rest } = yaml.load(staged.text) as Record<string, unknown>;
    expect(stagingPercentage).toBe(10);
    expect(rest).toEqual(yaml.load(CHANNEL));
  });

  it('raising the stage keeps the kiosks already in it; 0 pauses for everyone; --full removes the key (everyone)', async () => {
    const at50 = parse(stageChannelFile(stageChannelFile(CHANNEL, 10).text, 60).text);
    expect(await inStage(at50, kioskAt(0.05))).toBe(true);
    expect(await inStage(at50, kioskAt(0.5))).toBe(true);
    expect(await inStage(at50, kioskAt(0.7))).toBe(false);
    const paused = parse(stageChannelFile(CHANNEL, 0).text);
    expect(await inStage(paused, kioskAt(0.0001))).toBe(false);
    const full = stageChannelFile(stageChannelFile(CHANNEL, 10).text, null);
    expect(full.before).toBe(10);
    expect(full.text).not.toContain('stagingPercentage');
    expect(await inStage(parse(full.text), kioskAt(0.99))).toBe(true);
  });

  it('refuses what electron-updater would silently read as "everyone" (it lets an unreadable value through)', async () => {
    // electron-updater's own behaviour with a hand-written typo: every kiosk updates.
    expect(await inStage(parse(`${CHANNEL}stagingPercentage: ten\n`), kioskAt(0.99))).toBe(true);
    for (const bad of ['ten', '10%', '10.5', '150', '-1', '']) expect(() => parsePercent(bad), bad).toThrow(StageError);
    expect(parsePercent('0')).toBe(0);
    expect(parsePercent('100')).toBe(100);
    expect(() => stageChannelFile('version: 1.0.0\n', 10, 'latest.yml')).toThrow('latest.yml is not an electron-builder channel file');
    expect(() => parseStageArgs(['latest.yml'])).toThrow('say how far: --percent N (0–100) or --full');
    expect(() => parseStageArgs(['--percent', '10'])).toThrow('name the channel file(s)');
  });

  it('npm run release:stage rewrites the file whole and says what it did; bad input exits 2', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-stage-'));
    temps.push(dir);
    const file = join(dir, 'latest-linux.yml');
    await writeFile(file, CHANNEL);
    const run = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
      new Promise((done) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', 'tools/package/stage-release.ts', ...args],
          { cwd: REPO_ROOT, timeout: 30_000 },
          (error, stdout, stderr) => {
            done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
          },
        );
      });
    const ok = await run([file, '--percent', '25']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe(
      'release:stage: latest-linux.yml: version 1.4.0 now offered to 25 % of kiosks (was every kiosk); upload this file to the feed\n',
    );
    expect(parse(await readFile(file, 'utf8')).stagingPercentage).toBe(25);
    const bad = await run([file, '--percent', '25%']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('release:stage: --percent must be a whole number from 0 to 100, not "25%"');
    expect(parse(await readFile(file, 'utf8')).stagingPercentage).toBe(25);
  });
});
