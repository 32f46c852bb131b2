/**
 * `npm run licenses [-- --packages]` (CI: .ci/run): the licence of every package the desktop app ships —
 * the production node_modules tree (`dependencies` + `optionalDependencies`, transitively), the screen's
 * libraries Vite bundles into dist/renderer, and Electron — checked against
 * tools/supply-chain/license-allowlist.json.
 *
 * The licence is the installed package.json's (`license`, or the deprecated `license: { type }` and
 * `licenses: [...]`; the lockfile's for an optional package not installed here), read as an SPDX expression:
 * `(MIT OR Apache-2.0)` needs one allowed side, `MIT AND ISC` both. A package fails when its expression is
 * not satisfied, when it declares no licence, `UNLICENSED`, `SEE LICENSE IN …` or any text that is not an
 * SPDX expression — unless an exception names the package and that exact text with a reason. An exception
 * that matches nothing, or that the allowlist alone would make unnecessary, fails too (remove it).
 *
 * Prints a table by licence (`--packages`: by package); violations go to stderr, one line each naming the
 * package, its version, its licence and why. Exit 0 when every package passes, 1 otherwise.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { REPO_ROOT, formatTable, isMain, readJson } from './common.js';
import { declaredLicense, evaluate, parseSpdx, SpdxSyntaxError } from './spdx.js';
import { collectShipped, describeGroups, type ShipGroup, type ShippedOptions, type ShippedPackage } from './tree.js';

export const ALLOWLIST_FILE = 'tools/supply-chain/license-allowlist.json';

export const LicenseAllowlistSchema = z.strictObject({
  $comment: z.string().optional(),
  licenses: z.array(
    z.strictObject({
      id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9.+-]*( WITH [A-Za-z0-9][A-Za-z0-9.-]*)?$/, 'an SPDX licence id (or "id WITH exception")'),
      reason: z.string().min(10, 'say why this licence is acceptable'),
    }),
  ),
  exceptions: z.array(
    z.strictObject({
      package: z.string().min(1),
      /** Absent: any version (the licence text must still match). */
      version: z.string().optional(),
      /** The licence text exactly as the package declares it (after reading the deprecated forms). */
      license: z.string(),
      reason: z.string().min(20, 'give a reason a reviewer can check (at least 20 characters)'),
    }),
  ),
});
export type LicenseAllowlist = z.infer<typeof LicenseAllowlistSchema>;
type Exception = LicenseAllowlist['exceptions'][number];

export interface LicenseSubject {
  readonly name: string;
  readonly version: string;
  /** Where and how it ships, for the messages (`node_modules (optional)`, `screen`). */
  readonly shippedAs: string;
  readonly license: { readonly text: string | undefined; readonly form: string };
}

export type LicenseVerdict =
  | { readonly status: 'allowed'; readonly terms: readonly string[] }
  | { readonly status: 'exception'; readonly exception: Exception }
  | { readonly status: 'violation'; readonly problem: string };

export interface LicenseResult {
  readonly subject: LicenseSubject;
  readonly verdict: LicenseVerdict;
}

export interface LicenseReport {
  readonly results: readonly LicenseResult[];
  readonly violations: readonly LicenseResult[];
  /** Exceptions that matched no package, or that the allowlist makes unnecessary. */
  readonly staleExceptions: readonly { readonly exception: Exception; readonly why: string }[];
}

function judgeText(
  text: string | undefined,
  allowed: ReadonlySet<string>,
): { ok: true; terms: readonly string[] } | { ok: false; problem: string } {
  if (text === undefined) return { ok: false, problem: 'declares no licence' };
  if (text.toUpperCase() === 'UNLICENSED') return { ok: false, problem: 'is UNLICENSED (no licence granted)' };
  if (/^SEE LICEN[CS]E IN\b/i.test(text))
    return { ok: false, problem: `points at a licence file ("${text}") instead of an SPDX expression: read it and add an exception` };
  let parsed;
  try {
    parsed = parseSpdx(text);
  } catch (e) {
    if (e instanceof SpdxSyntaxError)
      return { ok: false, problem: `declares "${text}", which is not an SPDX licence expression (${e.message})` };
    throw e;
  }
  const result = evaluate(parsed, allowed);
  if (result.ok) return { ok: true, terms: result.terms };
  return {
    ok: false,
    problem: `is licensed "${text}": ${result.terms.join(', ')} ${result.terms.length === 1 ? 'is' : 'are'} not on the allowlist`,
  };
}

/** Judges every subject; pure, for the tests. */
export function checkLicenses(subjects: readonly LicenseSubject[], allowlist: LicenseAllowlist): LicenseReport {
  const allowed = new Set(allowlist.licenses.map((l) => l.id.toLowerCase()));
  const used = new Set<Exception>();
  const needless: { exception: Exception; why: string }[] = [];
  const results: LicenseResult[] = subjects.map((subject) => {
    const text = subject.license.text;
    const judged = judgeText(text, allowed);
    const exception = allowlist.exceptions.find(
      (x) => x.package === subject.name && (x.version === undefined || x.version === subject.version) && x.license === (text ?? ''),
    );
    if (exception !== undefined) {
      used.add(exception);
      if (judged.ok) {
        needless.push({ exception, why: `${subject.name}@${subject.version}'s "${text ?? ''}" is allowed without it` });
        return { subject, verdict: { status: 'allowed', terms: judged.terms } };
      }
      return { subject, verdict: { status: 'exception', exception } };
    }
    return { subject, verdict: judged.ok ? { status: 'allowed', terms: judged.terms } : { status: 'violation', problem: judged.problem } };
  });
  const staleExceptions = [
    ...needless,
    ...allowlist.exceptions
      .filter((x) => !used.has(x))
      .map((exception) => ({
        exception,
        why: `no shipped package ${exception.package}${exception.version === undefined ? '' : `@${exception.version}`} declares "${exception.license}"`,
      })),
  ];
  return { results, violations: results.filter((r) => r.verdict.status === 'violation'), staleExceptions };
}

export function subjectOf(p: ShippedPackage): LicenseSubject {
  const declared = p.manifest !== undefined ? declaredLicense(p.manifest) : declaredLicense({ license: p.lockLicense });
  return {
    name: p.name,
    version: p.version,
    shippedAs: describeGroups(p),
    license: {
      text: declared.text,
      form: p.manifest === undefined ? `${declared.form}, from package-lock.json (not installed here)` : declared.form,
    },
  };
}

export function violationLine(r: LicenseResult): string {
  const problem = r.verdict.status === 'violation' ? r.verdict.problem : '';
  return `licenses: VIOLATION ${r.subject.name}@${r.subject.version} (${r.subject.shippedAs}) ${problem}`;
}

/** One row per licence text: how many packages, the verdict, and (a few of) their names. */
export function licenseTable(results: readonly LicenseResult[], namesPerRow = 4): string {
  const rows = new Map<string, { verdict: string; names: string[] }>();
  for (const r of results) {
    const key = r.subject.license.text ?? '(none)';
    const verdict =
      r.verdict.status === 'allowed' ? 'allowed' : r.verdict.status === 'exception' ? `exception (${r.subject.name})` : 'VIOLATION';
    const row = rows.get(`${key}\u0000${verdict}`) ?? { verdict, names: [] };
    row.names.push(`${r.subject.name}@${r.subject.version}`);
    rows.set(`${key}\u0000${verdict}`, row);
  }
  const sorted = [...rows.entries()].sort((a, b) => b[1].names.length - a[1].names.length || (a[0] < b[0] ? -1 : 1));
  return formatTable(
    ['licence', 'packages', 'verdict', 'which'],
    sorted.map(([key, row]) => [
      key.split('\u0000')[0] ?? key,
      String(row.names.length),
      row.verdict,
      row.names.length > namesPerRow
        ? `${row.names.slice(0, namesPerRow).join(', ')} … (+${row.names.length - namesPerRow})`
        : row.names.join(', '),
    ]),
  );
}

export function packageTable(results: readonly LicenseResult[]): string {
  return formatTable(
    ['package', 'version', 'ships as', 'licence', 'verdict'],
    results.map((r) => [
      r.subject.name,
      r.subject.version,
      r.subject.shippedAs,
      r.subject.license.text ?? '(none)',
      r.verdict.status === 'allowed'
        ? `allowed (${r.verdict.terms.join(' + ')})`
        : r.verdict.status === 'exception'
          ? 'exception'
          : 'VIOLATION',
    ]),
  );
}

export interface LicensesRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface LicensesOptions {
  /** A per-package table instead of the per-licence one. */
  readonly packages?: boolean;
  /** Another allowlist file (default tools/supply-chain/license-allowlist.json under root). */
  readonly allowlistFile?: string;
  /** What counts as shipped (tests: a fake tree without a screen or Electron). */
  readonly shipped?: ShippedOptions;
}

export async function runLicenses(root: string, options: LicensesOptions = {}): Promise<LicensesRun> {
  const allowlistPath = options.allowlistFile ?? join(root, ALLOWLIST_FILE);
  const allowlist = await readJson(allowlistPath, LicenseAllowlistSchema, options.allowlistFile ?? ALLOWLIST_FILE);
  const shipped = await collectShipped(root, options.shipped);
  const out: string[] = [];
  const err: string[] = [];
  for (const e of shipped.errors) err.push(`licenses: ${e}`);
  for (const n of shipped.notes) out.push(`licenses: note: ${n}`);
  const report = checkLicenses(shipped.packages.map(subjectOf), allowlist);
  out.push(options.packages === true ? packageTable(report.results) : licenseTable(report.results));
  for (const r of report.results) {
    if (r.verdict.status === 'exception')
      out.push(
        `licenses: exception ${r.subject.name}@${r.subject.version} "${r.subject.license.text ?? ''}": ${r.verdict.exception.reason}`,
      );
  }
  for (const r of report.violations) err.push(violationLine(r));
  for (const s of report.staleExceptions)
    err.push(`licenses: STALE exception for ${s.exception.package} in ${ALLOWLIST_FILE}: ${s.why}; remove it`);
  const counts = (g: ShipGroup): number => shipped.packages.filter((p) => p.groups.has(g)).length;
  out.push(
    `licenses: ${report.results.length} packages (${counts('node_modules')} in the production node_modules, ${counts('screen')} bundled into the screen, ` +
      `${counts('runtime')} runtime): ${report.results.filter((r) => r.verdict.status === 'allowed').length} allowed, ` +
      `${report.results.filter((r) => r.verdict.status === 'exception').length} by exception, ${report.violations.length} violation(s)`,
  );
  const failed = report.violations.length > 0 || report.staleExceptions.length > 0 || shipped.errors.length > 0;
  return { code: failed ? 1 : 0, stdout: `${out.join('\n')}\n`, stderr: err.length === 0 ? '' : `${err.join('\n')}\n` };
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({ options: { packages: { type: 'boolean', default: false }, allowlist: { type: 'string' } } });
  runLicenses(REPO_ROOT, {
    packages: values.packages,
    ...(values.allowlist === undefined ? {} : { allowlistFile: values.allowlist }),
  }).then(
    (r) => {
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      process.exitCode = r.code;
    },
    (e: unknown) => {
      process.stderr.write(`licenses: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
