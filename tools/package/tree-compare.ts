/**
 * Compares two packed app folders the way an installer would see them: every path, its kind, mode, time
 * and bytes (SHA-256), or a link's target. Used by the reproducibility test and
 * `npm run package:reproducibility` (tools/package/reproducibility-check.ts) to say which file differs,
 * and how, between two builds of one commit.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';

export interface TreeEntry {
  /** Relative to the compared folder, `/`-separated; the folder itself is `.`. */
  readonly path: string;
  readonly kind: 'file' | 'directory' | 'symlink';
  /** Permission bits (0o7777). */
  readonly mode: number;
  /** Whole seconds. */
  readonly mtime: number;
  readonly size: number;
  /** Files: SHA-256 of the bytes; links: the target. */
  readonly content: string;
}

export function sha256File(file: string): Promise<string> {
  return new Promise((done, fail) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', fail)
      .on('end', () => done(hash.digest('hex')));
  });
}

/** Every entry under `dir`, in byte order of the path. */
export async function treeManifest(dir: string): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [];
  const visit = async (abs: string, rel: string): Promise<void> => {
    const info = await lstat(abs);
    const base = { path: rel, mode: info.mode & 0o7777, mtime: Math.floor(info.mtimeMs / 1000) };
    if (info.isSymbolicLink()) entries.push({ ...base, kind: 'symlink', size: 0, content: await readlink(abs) });
    else if (info.isDirectory()) {
      entries.push({ ...base, kind: 'directory', size: 0, content: '' });
      for (const name of (await readdir(abs)).sort()) await visit(join(abs, name), rel === '.' ? name : `${rel}/${name}`);
    } else entries.push({ ...base, kind: 'file', size: info.size, content: await sha256File(abs) });
  };
  await visit(dir, '.');
  return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

const octal = (mode: number): string => `0${mode.toString(8)}`;
const when = (seconds: number): string => `${new Date(seconds * 1000).toISOString()} (${seconds})`;

/** What differs between two manifests, one line per path and property; empty when the trees are identical. */
export function compareManifests(
  a: readonly TreeEntry[],
  b: readonly TreeEntry[],
  labels: readonly [string, string] = ['first', 'second'],
): string[] {
  const differences: string[] = [];
  const inB = new Map(b.map((e) => [e.path, e]));
  const inA = new Map(a.map((e) => [e.path, e]));
  for (const x of a) {
    const y = inB.get(x.path);
    if (y === undefined) {
      differences.push(`${x.path}: only in the ${labels[0]} build`);
      continue;
    }
    if (x.kind !== y.kind) {
      differences.push(`${x.path}: a ${x.kind} in the ${labels[0]} build, a ${y.kind} in the ${labels[1]}`);
      continue;
    }
    if (x.content !== y.content || x.size !== y.size) {
      differences.push(
        x.kind === 'symlink'
          ? `${x.path}: links to ${x.content} and ${y.content}`
          : `${x.path}: content differs (${x.size} B sha256 ${x.content.slice(0, 16)}… and ${y.size} B sha256 ${y.content.slice(0, 16)}…)`,
      );
    }
    if (x.mode !== y.mode) differences.push(`${x.path}: mode ${octal(x.mode)} and ${octal(y.mode)}`);
    if (x.mtime !== y.mtime) differences.push(`${x.path}: modified ${when(x.mtime)} and ${when(y.mtime)}`);
  }
  for (const y of b) if (!inA.has(y.path)) differences.push(`${y.path}: only in the ${labels[1]} build`);
  return differences;
}

export async function compareTrees(a: string, b: string, labels?: readonly [string, string]): Promise<string[]> {
  return compareManifests(await treeManifest(a), await treeManifest(b), labels);
}
