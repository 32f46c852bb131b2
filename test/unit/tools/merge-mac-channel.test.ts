/**
 * One macOS channel file for both CPUs (tools/package/merge-mac-channel.ts), read by the electron-updater
 * the app ships: its own parser (`parseUpdateInfo`), file list (`resolveFiles`), CPU filter
 * (`MacUpdater.filterFilesForArch`) and ZIP choice (`findFile`) — what an Intel and an Apple-silicon kiosk
 * would download from the merged file, and what each would get from one build's file alone.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mergeMacChannelFiles, MergeError, parseMergeArgs } from '../../../tools/package/merge-mac-channel.js';
import { REPO_ROOT } from '../../../tools/supply-chain/common.js';

const require = createRequire(import.meta.url);
interface ResolvedFile {
  readonly url: URL;
  readonly info: { readonly url: string };
}
const provider = require('electron-updater/out/providers/Provider') as {
  parseUpdateInfo(raw: string, file: string, url: URL): unknown;
  resolveFiles(info: unknown, base: URL): ResolvedFile[];
  findFile(files: ResolvedFile[], extension: string, not?: string[]): ResolvedFile | undefined;
};
const { MacUpdater } = require('electron-updater/out/MacUpdater') as {
  MacUpdater: { filterFilesForArch(files: ResolvedFile[], isArm64Mac: boolean): ResolvedFile[] };
};

const FEED = new URL('https://updates.example/kiosk/');
const SHA = { x64zip: 'x'.repeat(86) + '==', x64dmg: 'y'.repeat(86) + '==', armzip: 'a'.repeat(86) + '==', armdmg: 'b'.repeat(86) + '==' };

/** A latest-mac.yml as electron-builder writes it for one CPU (artifactName mdl-kiosk-${version}-${os}-${arch}.${ext}). */
function channel(arch: 'x64' | 'arm64', version = '1.4.2', extra = ''): string {
  const zip = arch === 'x64' ? SHA.x64zip : SHA.armzip;
  const dmg = arch === 'x64' ? SHA.x64dmg : SHA.armdmg;
  return [
    `version: ${version}`,
    'files:',
    `  - url: mdl-kiosk-${version}-mac-${arch}.zip`,
    `    sha512: ${zip}`,
    '    size: 120000000',
    `  - url: mdl-kiosk-${version}-mac-${arch}.dmg`,
    `    sha512: ${dmg}`,
    '    size: 125000000',
    `path: mdl-kiosk-${version}-mac-${arch}.zip`,
    `sha512: ${zip}`,
    "releaseDate: '2026-11-28T10:00:00.000Z'",
    extra,
  ].join('\n');
}

/** The ZIP a Mac of that CPU downloads from a channel file's text, as electron-updater picks it (or why none). */
function zipFor(text: string, appleSilicon: boolean): string {
  const info = provider.parseUpdateInfo(text, 'latest-mac.yml', new URL('latest-mac.yml', FEED));
  const files = MacUpdater.filterFilesForArch(provider.resolveFiles(info, FEED), appleSilicon);
  const zip = files.length === 0 ? undefined : provider.findFile(files, 'zip', ['pkg', 'dmg']);
  return zip?.url.pathname.endsWith('.zip') === true ? (zip.url.pathname.split('/').pop() ?? '') : 'no ZIP: ERR_UPDATER_ZIP_FILE_NOT_FOUND';
}

describe('what each Mac gets', () => {
  it('from one build’s file alone: an Intel Mac none, or an Apple-silicon Mac the Intel app (why the merge is needed)', () => {
    expect(zipFor(channel('arm64'), false)).toBe('no ZIP: ERR_UPDATER_ZIP_FILE_NOT_FOUND');
    expect(zipFor(channel('x64'), true)).toBe('mdl-kiosk-1.4.2-mac-x64.zip');
  });

  it('from the merged file: each Mac its own ZIP, whichever file is given first; the legacy fields name the Intel ZIP', () => {
    for (const [first, second] of [
      ['x64', 'arm64'],
      ['arm64', 'x64'],
    ] as const) {
      const merged = mergeMacChannelFiles(
        { text: channel(first), source: `${first}.yml` },
        { text: channel(second), source: `${second}.yml` },
      );
      expect(zipFor(merged.text, false)).toBe('mdl-kiosk-1.4.2-mac-x64.zip');
      expect(zipFor(merged.text, true)).toBe('mdl-kiosk-1.4.2-mac-arm64.zip');
      expect(merged.text).toContain('path: mdl-kiosk-1.4.2-mac-x64.zip');
      expect(merged.text).toContain(`sha512: ${SHA.x64zip}\n`);
      expect(merged.zips).toEqual({ intel: 'mdl-kiosk-1.4.2-mac-x64.zip', appleSilicon: 'mdl-kiosk-1.4.2-mac-arm64.zip' });
    }
  });

  it('names shared by both files (a re-run of one build) are one entry', () => {
    const arm = `${channel('arm64')}\n`.replace(
      'files:\n',
      `files:\n  - url: mdl-kiosk-1.4.2-mac-x64.zip\n    sha512: ${SHA.x64zip}\n    size: 120000000\n`,
    );
    const merged = mergeMacChannelFiles({ text: channel('x64'), source: 'x64.yml' }, { text: arm, source: 'arm64.yml' });
    expect(merged.text.match(/url: mdl-kiosk-1\.4\.2-mac-x64\.zip/g)).toHaveLength(1);
  });
});

describe('what the merge refuses (nothing is guessed)', () => {
  const refuse = (a: string, b: string): string => {
    try {
      mergeMacChannelFiles({ text: a, source: 'first.yml' }, { text: b, source: 'second.yml' });
    } catch (e) {
      if (e instanceof MergeError) return e.message;
      throw e;
    }
    return 'merged';
  };

  it('two builds of different versions, two files under one name, differing staging, one CPU only, not a channel file', () => {
    expect(refuse(channel('x64', '1.4.2'), channel('arm64', '1.4.1'))).toMatch(/version 1\.4\.2 and second\.yml is 1\.4\.1/);
    const clash = channel('arm64').replace('files:\n', `files:\n  - url: mdl-kiosk-1.4.2-mac-x64.zip\n    sha512: ${SHA.armzip}\n`);
    expect(refuse(channel('x64'), clash)).toMatch(/both files name mdl-kiosk-1\.4\.2-mac-x64\.zip with different sha512/);
    expect(refuse(channel('x64', '1.4.2', 'stagingPercentage: 10'), channel('arm64'))).toMatch(/staging percentages differ/);
    expect(refuse(channel('x64'), channel('x64'))).toMatch(/no Apple-silicon \(arm64\) ZIP/);
    expect(refuse(channel('arm64'), channel('arm64'))).toMatch(/no Intel \(x64\) ZIP/);
    expect(refuse('version: [', channel('arm64'))).toMatch(/first\.yml is not YAML/);
    expect(refuse('just: text', channel('arm64'))).toMatch(/first\.yml is not an electron-builder channel file/);
  });

  it('arguments: two files and --out, nothing else', () => {
    expect(parseMergeArgs(['a.yml', 'b.yml', '--out', 'c.yml'])).toEqual({ inputs: ['a.yml', 'b.yml'], out: 'c.yml' });
    expect(() => parseMergeArgs(['a.yml', '--out', 'c.yml'])).toThrow(/name the two builds/);
    expect(() => parseMergeArgs(['a.yml', 'b.yml'])).toThrow(/--out/);
    expect(() => parseMergeArgs(['a.yml', 'b.yml', '--out=c.yml', '--force'])).toThrow(/unknown option --force/);
  });
});

describe('npm run release:merge-mac', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  const run = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((done) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'tools/package/merge-mac-channel.ts', ...args],
        { cwd: REPO_ROOT },
        (error, stdout, stderr) => {
          done({ code: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stdout, stderr });
        },
      );
    });

  it('writes the merged file and says which ZIP serves which Mac; a refusal writes nothing and exits 2', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'merge-mac-'));
    dirs.push(dir);
    await writeFile(join(dir, 'x64.yml'), channel('x64'));
    await writeFile(join(dir, 'arm64.yml'), channel('arm64'));
    const ok = await run([join(dir, 'x64.yml'), join(dir, 'arm64.yml'), '--out', join(dir, 'latest-mac.yml')]);
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    expect(ok.stdout).toBe(
      'release:merge-mac: latest-mac.yml: version 1.4.2 for Intel (mdl-kiosk-1.4.2-mac-x64.zip) and Apple silicon (mdl-kiosk-1.4.2-mac-arm64.zip); upload this file to the feed\n',
    );
    const written = await readFile(join(dir, 'latest-mac.yml'), 'utf8');
    expect(zipFor(written, true)).toBe('mdl-kiosk-1.4.2-mac-arm64.zip');

    const refused = await run([join(dir, 'x64.yml'), join(dir, 'x64.yml'), '--out', join(dir, 'other.yml')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/no Apple-silicon \(arm64\) ZIP.*nothing written/);
    await expect(readFile(join(dir, 'other.yml'), 'utf8')).rejects.toThrow(/ENOENT/);
  }, 30_000);
});
