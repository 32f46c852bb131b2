import { chmod, lstat, mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { conditionedCommand } from '../../../tools/package/build-conditions.js';
import {
  normaliseTree,
  normalMode,
  parseSourceDateEpoch,
  sourceDateEpoch,
  SourceDateEpochError,
} from '../../../tools/package/reproducible.js';
import { compareManifests, treeManifest, type TreeEntry } from '../../../tools/package/tree-compare.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'mdl-kiosk-reproducible-unit-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('SOURCE_DATE_EPOCH', () => {
  it('is taken from the environment when set, else from a git commit, and must be whole seconds', async () => {
    expect(sourceDateEpoch('/nonexistent', { SOURCE_DATE_EPOCH: '1700000000' })).toBe(1_700_000_000);
    expect(() => parseSourceDateEpoch('1700000000.5')).toThrow(SourceDateEpochError);
    expect(() => parseSourceDateEpoch('yesterday')).toThrow('SOURCE_DATE_EPOCH must be a whole number of seconds, not "yesterday"');
    const notGit = await tempDir();
    expect(() => sourceDateEpoch(notGit, {})).toThrow(/SOURCE_DATE_EPOCH is not set and .* has no git commit to take it from/);
  });
});

describe('normaliseTree', () => {
  it('gives folders 0755, files 0755 or 0644 by the owner’s executable bit, and every entry the one time', async () => {
    const root = await tempDir();
    await mkdir(join(root, 'a', 'b'), { recursive: true, mode: 0o700 });
    await writeFile(join(root, 'a', 'b', 'data'), 'x', { mode: 0o600 });
    await writeFile(join(root, 'a', 'tool'), 'x', { mode: 0o700 });
    await writeFile(join(root, 'odd'), 'x');
    await chmod(join(root, 'odd'), 0o4777);
    await symlink('a/tool', join(root, 'link'));
    await normaliseTree(root, 1_000_000_000);
    const modes = Object.fromEntries((await treeManifest(root)).map((e) => [e.path, [e.kind, e.mode.toString(8), e.mtime]]));
    expect(modes).toEqual({
      '.': ['directory', '755', 1_000_000_000],
      a: ['directory', '755', 1_000_000_000],
      'a/b': ['directory', '755', 1_000_000_000],
      'a/b/data': ['file', '644', 1_000_000_000],
      'a/tool': ['file', '755', 1_000_000_000],
      link: ['symlink', '777', 1_000_000_000],
      odd: ['file', '755', 1_000_000_000],
    });
    expect((await lstat(join(root, 'link'))).isSymbolicLink()).toBe(true);
    expect((await stat(join(root, 'a', 'b', 'data'))).size).toBe(1);
    expect(normalMode('file', 0o100600)).toBe(0o644);
  });
});

describe('compareManifests', () => {
  const entry = (path: string, over: Partial<TreeEntry> = {}): TreeEntry => ({
    path,
    kind: 'file',
    mode: 0o644,
    mtime: 0,
    size: 1,
    content: 'a'.repeat(64),
    ...over,
  });

  it('names each path that is missing, of another kind, other bytes, mode or time', () => {
    const a = [entry('same'), entry('only-a'), entry('kind'), entry('bytes'), entry('mode'), entry('time')];
    const b = [
      entry('same'),
      entry('kind', { kind: 'directory', size: 0, content: '' }),
      entry('bytes', { content: 'b'.repeat(64), size: 2 }),
      entry('mode', { mode: 0o600 }),
      entry('time', { mtime: 60 }),
      entry('only-b'),
    ];
    expect(compareManifests(a, b, ['A', 'B'])).toEqual([
      'only-a: only in the A build',
      'kind: a file in the A build, a directory in the B',
      `bytes: content differs (1 B sha256 ${'a'.repeat(16)}… and 2 B sha256 ${'b'.repeat(16)}…)`,
      'mode: mode 0644 and 0600',
      'time: modified 1970-01-01T00:00:00.000Z (0) and 1970-01-01T00:01:00.000Z (60)',
      'only-b: only in the B build',
    ]);
  });
});

describe('conditionedCommand', () => {
  it('wraps a command in a shell for the umask and in runuser for the account', () => {
    expect(conditionedCommand('node', ['x.js'], {})).toEqual({ command: 'node', args: ['x.js'] });
    expect(conditionedCommand('node', ['x.js'], { umask: 0o077, user: 'nobody' })).toEqual({
      command: 'runuser',
      args: ['-u', 'nobody', '--', '/bin/sh', '-c', 'umask 077 && exec "$0" "$@"', 'node', 'x.js'],
    });
  });
});
