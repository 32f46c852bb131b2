/**
 * `npm run electronegativity` (part of `npm test`): Doyensec's Electronegativity over the Electron shell.
 *
 * What is scanned: a staging copy of src/main and src/preload (the code that creates windows, sets web
 * preferences, handles permissions and IPC), src/service/security-headers.ts (the CSP the app:// scheme
 * sends) and the built screen's index.html. The TypeScript sources are parsed by Electronegativity itself
 * (@babel/parser with the typescript plugin), so findings point at real source lines. The Electron version
 * comes from node_modules/electron (the scanner cannot detect it from a staging folder).
 *
 * Offline: the AvailableSecurityFixes check is excluded (it downloads Electron's release list from GitHub);
 * Electronegativity also tries once to fetch translations, with a 1 s timeout, and falls back to its own.
 *
 * Result: every finding goes to artifacts/electronegativity.sarif; the run fails (exit 1) on any finding
 * above INFORMATIONAL that tools/package/electronegativity-allow.json does not list with a reason.
 */
import { cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** Paths (relative to the repository) copied into the scanned folder. */
export const SCANNED = ['src/main', 'src/preload', 'src/service/security-headers.ts', 'dist/renderer/index.html'] as const;
/** Needs the network (Electron's release list on GitHub): excluded. */
export const EXCLUDED_CHECKS = ['AvailableSecurityFixesGlobalCheck'] as const;
export const ALLOWLIST_FILE = 'tools/package/electronegativity-allow.json';
export const REPORT_FILE = 'artifacts/electronegativity.sarif';

const SEVERITIES = ['INFORMATIONAL', 'LOW', 'MEDIUM', 'HIGH'] as const;
type Severity = (typeof SEVERITIES)[number];

export interface Finding {
  readonly id: string;
  readonly severity: Severity;
  readonly confidence: string;
  /** Relative to the scanned folder, i.e. to the repository (`src/main/window.ts`), or `N/A` for global checks. */
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly description: string;
}

export const AllowlistSchema = z.object({
  $comment: z.string().optional(),
  allow: z.array(
    z
      .object({
        check: z.string().regex(/^[A-Z0-9_]+$/, 'a check id such as AUXCLICK_JS_CHECK'),
        /** Limits the entry to one file (as reported); absent = every file. */
        file: z.string().optional(),
        reason: z.string().min(20, 'give a reason a reviewer can check (at least 20 characters)'),
      })
      .strict(),
  ),
});
export type Allowlist = z.infer<typeof AllowlistSchema>;
type AllowEntry = Allowlist['allow'][number];

export function parseAllowlist(text: string, source = ALLOWLIST_FILE): Allowlist {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`${source} is not JSON: ${(e as Error).message}`);
  }
  const parsed = AllowlistSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${source}: ${issue === undefined ? 'invalid' : `${issue.path.join('.') || '/'}: ${issue.message}`}`);
  }
  return parsed.data;
}

export interface Verdict {
  /** Findings above INFORMATIONAL without an allowlist entry: the run fails on these. */
  readonly blocking: readonly Finding[];
  /** Findings above INFORMATIONAL excused by an entry. */
  readonly allowed: readonly { finding: Finding; entry: AllowEntry }[];
  readonly informational: readonly Finding[];
  /** Entries that matched nothing (stale: the code was fixed, remove them). */
  readonly unused: readonly AllowEntry[];
}

export function judge(findings: readonly Finding[], allowlist: Allowlist): Verdict {
  const blocking: Finding[] = [];
  const allowed: { finding: Finding; entry: AllowEntry }[] = [];
  const informational: Finding[] = [];
  const used = new Set<AllowEntry>();
  for (const finding of findings) {
    if (finding.severity === 'INFORMATIONAL') {
      informational.push(finding);
      continue;
    }
    const entry = allowlist.allow.find((e) => e.check === finding.id && (e.file === undefined || e.file === finding.file));
    if (entry === undefined) blocking.push(finding);
    else {
      used.add(entry);
      allowed.push({ finding, entry });
    }
  }
  return { blocking, allowed, informational, unused: allowlist.allow.filter((e) => !used.has(e)) };
}

const IssueSchema = z.object({
  id: z.string(),
  severity: z.object({ name: z.enum(SEVERITIES) }),
  confidence: z.object({ name: z.string() }),
  file: z.string(),
  location: z.object({ line: z.number(), column: z.number() }),
  description: z.string().optional(),
});
const RunResultSchema = z.object({
  issues: z.array(IssueSchema),
  errors: z.array(z.object({ file: z.string(), message: z.string(), tolerable: z.boolean() })),
});

type Runner = (options: Record<string, unknown>, forCli?: boolean) => Promise<unknown>;

/** Copies what is scanned into a temporary folder with the repository's layout. */
async function stage(root: string, into: string): Promise<void> {
  for (const path of SCANNED) {
    const from = join(root, path);
    if (!existsSync(from)) throw new Error(`${path} does not exist${path.startsWith('dist/') ? ' (run `npm run build:renderer`)' : ''}`);
    await mkdir(dirname(join(into, path)), { recursive: true });
    await cp(from, join(into, path), { recursive: true });
  }
}

export interface ScanResult {
  readonly findings: readonly Finding[];
  /** Files Electronegativity could not parse: a scan that silently skips code proves nothing. */
  readonly parseErrors: readonly string[];
}

export interface ScanOptions {
  /** Where the scanned files come from (SCANNED, relative to it). */
  readonly root: string;
  /** Where Electronegativity and electron are installed; default `root`. */
  readonly toolsRoot?: string;
  /** SARIF report to write. */
  readonly reportFile?: string;
}

export async function scan(options: ScanOptions): Promise<ScanResult> {
  const { root, reportFile } = options;
  const req = createRequire(join(options.toolsRoot ?? root, 'package.json'));
  const run = req('@doyensec/electronegativity') as Runner;
  const electron = z.object({ version: z.string() }).parse(JSON.parse(await readFile(req.resolve('electron/package.json'), 'utf8')));
  const staging = await mkdtemp(join(tmpdir(), 'mdl-kiosk-electronegativity-'));
  try {
    await stage(root, staging);
    if (reportFile !== undefined) await mkdir(dirname(reportFile), { recursive: true });
    const raw = await run(
      {
        input: staging,
        ...(reportFile === undefined ? {} : { output: reportFile, isSarif: true }),
        isRelative: true,
        customScan: [],
        excludeFromScan: [...EXCLUDED_CHECKS],
        electronVersionOverride: electron.version,
        parserPlugins: [],
      },
      false,
    );
    const result = RunResultSchema.parse(raw);
    return {
      findings: result.issues.map((i) => ({
        id: i.id,
        severity: i.severity.name,
        confidence: i.confidence.name,
        file: i.file,
        line: i.location.line,
        column: i.location.column,
        description: i.description ?? '',
      })),
      parseErrors: result.errors.filter((e) => !e.tolerable).map((e) => `${e.file}: ${e.message}`),
    };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

function where(f: Finding): string {
  return f.file === 'N/A' ? '(whole app)' : `${f.file}:${f.line}:${f.column}`;
}

async function main(): Promise<number> {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const allowlist = parseAllowlist(await readFile(join(root, ALLOWLIST_FILE), 'utf8'));
  const started = Date.now();
  // Electronegativity prints a line when its translation download fails; keep our output readable.
  // eslint-disable-next-line no-console -- muting the scanner's own console output while it runs
  const log = console.log;
  // eslint-disable-next-line no-console -- as above
  console.log = (): void => undefined;
  let result: ScanResult;
  try {
    result = await scan({ root, reportFile: join(root, REPORT_FILE) });
  } finally {
    // eslint-disable-next-line no-console -- restoring it
    console.log = log;
  }
  const verdict = judge(result.findings, allowlist);
  const out = (line: string): boolean => process.stdout.write(`electronegativity: ${line}\n`);
  for (const { finding, entry } of verdict.allowed) out(`allowed  ${finding.id} ${finding.severity} ${where(finding)}: ${entry.reason}`);
  for (const f of verdict.informational) out(`info     ${f.id} ${where(f)}`);
  for (const e of verdict.unused)
    out(`warning: allowlist entry ${e.check}${e.file === undefined ? '' : ` (${e.file})`} matched nothing; remove it`);
  for (const f of verdict.blocking)
    process.stderr.write(`electronegativity: FINDING ${f.id} ${f.severity}/${f.confidence} ${where(f)}: ${f.description}\n`);
  for (const e of result.parseErrors) process.stderr.write(`electronegativity: could not parse ${e}\n`);
  const failed = verdict.blocking.length > 0 || result.parseErrors.length > 0;
  out(
    `${result.findings.length} finding(s): ${verdict.blocking.length} blocking, ${verdict.allowed.length} allowed with a reason, ` +
      `${verdict.informational.length} informational; report ${REPORT_FILE}; ${Date.now() - started} ms`,
  );
  return failed ? 1 : 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`electronegativity: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
