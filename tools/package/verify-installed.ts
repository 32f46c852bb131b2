/**
 * What `npm run package:verify` compares (tools/package/verify.ts): the digests of an installed app —
 * app.asar and every .node the resources folder holds, as `packageSubjects` names them at build time —
 * against the subjects of a provenance statement. Pure apart from reading the files; the command line,
 * its exit codes and `--rebuild` are in verify.ts.
 */
import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { errorText } from '../../src/common/error-text.js';
import { ProvenanceSchema, packageSubjects, type Provenance } from './provenance.js';

/** A problem with the input (not a mismatch): exit 2. */
export class VerifyInputError extends Error {
  override readonly name = 'VerifyInputError';
}

export type SubjectVerdict =
  | { readonly name: string; readonly state: 'ok'; readonly sha256: string }
  | { readonly name: string; readonly state: 'different'; readonly expected: string; readonly actual: string }
  | { readonly name: string; readonly state: 'missing'; readonly expected: string }
  | { readonly name: string; readonly state: 'unlisted'; readonly actual: string };

interface Digest {
  readonly name: string;
  readonly sha256: string;
}

/** One verdict per name in either list, in name order. */
export function compareSubjects(expected: readonly Digest[], actual: readonly Digest[]): SubjectVerdict[] {
  const want = new Map(expected.map((s) => [s.name, s.sha256]));
  const have = new Map(actual.map((s) => [s.name, s.sha256]));
  const names = [...new Set([...want.keys(), ...have.keys()])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return names.map((name): SubjectVerdict => {
    const e = want.get(name);
    const a = have.get(name);
    if (e === undefined) return { name, state: 'unlisted', actual: a ?? '' };
    if (a === undefined) return { name, state: 'missing', expected: e };
    return e === a ? { name, state: 'ok', sha256: a } : { name, state: 'different', expected: e, actual: a };
  });
}

export function verdictLine(v: SubjectVerdict, labels: { readonly expected: string; readonly actual: string }): string {
  switch (v.state) {
    case 'ok':
      return `ok                    ${v.name} (sha256 ${v.sha256})`;
    case 'different':
      return `DIFFERENT             ${v.name}: ${labels.expected} sha256 ${v.expected}, ${labels.actual} sha256 ${v.actual}`;
    case 'missing':
      return `MISSING               ${v.name}: in the ${labels.expected} (sha256 ${v.expected}), not in the ${labels.actual}`;
    case 'unlisted':
      return `NOT IN THE ${labels.expected.toUpperCase()}  ${v.name}: in the ${labels.actual} (sha256 ${v.actual}), not in the ${labels.expected}`;
  }
}

export const allOk = (verdicts: readonly SubjectVerdict[]): boolean => verdicts.every((v) => v.state === 'ok');

/**
 * The resources folder of an installed app, given app.asar itself, the resources folder, the app folder
 * (`resources/`: Linux and Windows) or a macOS `.app` (`Contents/Resources/`).
 */
export function resourcesFolder(path: string): string {
  if (!existsSync(path)) throw new VerifyInputError(`${path} does not exist`);
  if (statSync(path).isFile()) {
    if (basename(path) !== 'app.asar') throw new VerifyInputError(`${path} is a file but not app.asar`);
    return dirname(path);
  }
  for (const candidate of [path, join(path, 'resources'), join(path, 'Contents', 'Resources')])
    if (existsSync(join(candidate, 'app.asar'))) return candidate;
  throw new VerifyInputError(`no app.asar in ${path}, ${join(path, 'resources')} or ${join(path, 'Contents', 'Resources')}`);
}

/** The statement in `file`, checked against ProvenanceSchema; what is wrong with it, by field, otherwise. */
export async function readStatement(file: string): Promise<Provenance> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new VerifyInputError(`cannot read ${file}: ${errorText(e)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new VerifyInputError(`${file} is not JSON: ${errorText(e)}`);
  }
  const parsed = ProvenanceSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(top)'}: ${i.message}`);
    throw new VerifyInputError(`${file} is not an mDL Kiosk provenance statement:\n${issues.join('\n')}`);
  }
  return parsed.data;
}

/** The installed app's digests against the statement's subjects. */
export async function verifyInstalled(installed: string, statement: Provenance): Promise<SubjectVerdict[]> {
  const actual = await packageSubjects(resourcesFolder(installed));
  return compareSubjects(
    statement.subject.map((s) => ({ name: s.name, sha256: s.digest.sha256 })),
    actual,
  );
}
