/**
 * `npm run audit [-- --allow-offline] [--timeout-seconds N] [--registry URL]`: the vulnerability audit of
 * the production dependencies, `npm audit --omit=dev --json`, for the release pipeline (docs/supply-chain.md).
 *
 * npm audit asks the registry's advisory service (`POST <registry>/-/npm/v1/security/advisories/bulk`, or
 * `audit-registry` when set). When that service cannot be reached — no network, a proxy or mirror that
 * refuses the POST (our machines get `405 Method Not Allowed`), a time-out — no audit happened, and this
 * script says exactly that:
 *
 *   vulnerability audit NOT run: the advisory service (<url>) is unreachable from this machine (<reason>)
 *
 * and exits 3, a code of its own, so no pipeline mistakes it for a pass or for findings. `--allow-offline`
 * (CI on machines without registry access) prints the same and exits 0. It never prints "0 vulnerabilities"
 * unless the service answered. npm is run with `--offline=false`: `npm audit --offline` reports "found 0
 * vulnerabilities" without asking anyone.
 *
 * With an answer: every vulnerable package is listed (severity, advisory, path); exit 1 when any is high or
 * critical, 0 otherwise (moderate and below are printed for review, see the doc). Exit 2: npm failed for
 * another reason (no lockfile, bad arguments), with npm's message.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { REPO_ROOT, isMain, npmDiagnostics, runNpm, type NpmResult } from './common.js';

export const ADVISORY_PATH = '-/npm/v1/security/advisories/bulk';
export const DEFAULT_REGISTRY = 'https://registry.npmjs.org/';
export const DEFAULT_TIMEOUT_SECONDS = 60;
export const EXIT = { passed: 0, findings: 1, error: 2, notRun: 3 } as const;
/** Severities that fail the release. */
export const BLOCKING = ['critical', 'high'] as const;

const SEVERITIES = ['info', 'low', 'moderate', 'high', 'critical'] as const;
type Severity = (typeof SEVERITIES)[number];

const ViaAdvisory = z.looseObject({
  source: z.number().optional(),
  name: z.string(),
  title: z.string().optional(),
  url: z.string().optional(),
  severity: z.enum(SEVERITIES),
  range: z.string().optional(),
});

export const AuditReportSchema = z.looseObject({
  auditReportVersion: z.literal(2),
  vulnerabilities: z.record(
    z.string(),
    z.looseObject({
      name: z.string(),
      severity: z.enum(SEVERITIES),
      isDirect: z.boolean(),
      via: z.array(z.union([z.string(), ViaAdvisory])),
      effects: z.array(z.string()),
      range: z.string(),
      nodes: z.array(z.string()),
      fixAvailable: z.union([z.boolean(), z.looseObject({ name: z.string().optional(), version: z.string().optional() })]),
    }),
  ),
  metadata: z.looseObject({
    vulnerabilities: z.looseObject({
      info: z.number(),
      low: z.number(),
      moderate: z.number(),
      high: z.number(),
      critical: z.number(),
      total: z.number(),
    }),
  }),
});
export type AuditReport = z.infer<typeof AuditReportSchema>;

/** What npm prints (with --json) when the request to the advisory service failed. */
const FetchErrorSchema = z.looseObject({
  message: z.string(),
  uri: z.string().optional(),
  statusCode: z.number().optional(),
});
/** What npm prints (with --json) for its other errors (ENOLOCK …). */
const NpmErrorSchema = z.looseObject({
  error: z.looseObject({ code: z.string().optional(), summary: z.string().optional(), detail: z.string().optional() }),
});

export type AuditOutcome =
  | { readonly kind: 'report'; readonly report: AuditReport }
  | { readonly kind: 'unreachable'; readonly url: string; readonly reason: string }
  | { readonly kind: 'error'; readonly message: string };

function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const ADVISORY_URL = /(https?:\/\/[^\s"']*?\/-\/npm\/v1\/security\/advisories\/bulk)/;

function advisoryUrl(registry: string): string {
  return `${registry.endsWith('/') ? registry : `${registry}/`}${ADVISORY_PATH}`;
}

/** Reads what `npm audit --json` did. `registry` only names the service when npm's output does not. */
export function classifyAudit(result: NpmResult, registry: string, timeoutSeconds: number): AuditOutcome {
  const fallbackUrl = advisoryUrl(registry);
  if (result.timedOut) {
    return { kind: 'unreachable', url: fallbackUrl, reason: `no answer within ${timeoutSeconds} s` };
  }
  const json = jsonOf(result.stdout);
  const report = AuditReportSchema.safeParse(json);
  if (report.success) return { kind: 'report', report: report.data };

  const fetchError = FetchErrorSchema.safeParse(json);
  const stderr = npmDiagnostics(result.stderr);
  const text = fetchError.success ? fetchError.data.message : stderr;
  const url = (fetchError.success ? fetchError.data.uri : undefined) ?? ADVISORY_URL.exec(text)?.[1];
  if (url !== undefined || /audit endpoint returned an error/.test(stderr)) {
    const status = fetchError.success && fetchError.data.statusCode !== undefined ? fetchError.data.statusCode : undefined;
    const network = /reason: (.+)$/m.exec(text)?.[1];
    const reason =
      status !== undefined
        ? (text.split(' - ')[0] ?? `HTTP ${status}`)
        : (network ?? text.split('\n').find((l) => l.trim() !== '') ?? 'no usable answer');
    return { kind: 'unreachable', url: url ?? fallbackUrl, reason: reason.trim() };
  }
  const npmError = NpmErrorSchema.safeParse(json);
  if (npmError.success) {
    const e = npmError.data.error;
    return { kind: 'error', message: [e.code, e.summary, e.detail].filter((s) => s !== undefined && s !== '').join(': ') };
  }
  return { kind: 'error', message: `npm audit exited ${String(result.code)} without a report${stderr === '' ? '' : `: ${stderr}`}` };
}

export function notRunMessage(url: string, reason: string): string {
  return `vulnerability audit NOT run: the advisory service (${url}) is unreachable from this machine (${reason})`;
}

export interface Finding {
  readonly name: string;
  readonly severity: Severity;
  readonly line: string;
}

export function findings(report: AuditReport): Finding[] {
  const order = (s: Severity): number => SEVERITIES.indexOf(s);
  return Object.values(report.vulnerabilities)
    .sort((a, b) => order(b.severity) - order(a.severity) || (a.name < b.name ? -1 : 1))
    .map((v) => {
      const advisories = v.via
        .map((via) =>
          typeof via === 'string'
            ? `via ${via}`
            : `${via.title ?? 'advisory'}${via.url === undefined ? '' : ` ${via.url}`}${via.range === undefined ? '' : ` (vulnerable ${via.range})`}`,
        )
        .join('; ');
      const fix =
        v.fixAvailable === false
          ? 'no fix available'
          : v.fixAvailable === true
            ? 'fix: npm audit fix'
            : `fix: ${v.fixAvailable.name ?? v.name}@${v.fixAvailable.version ?? '?'}`;
      return {
        name: v.name,
        severity: v.severity,
        line: `${v.severity.toUpperCase()} ${v.name}${v.isDirect ? ' (direct dependency)' : ''} [${v.nodes.join(', ')}]: ${advisories}; ${fix}`,
      };
    });
}

export interface AuditOptions {
  readonly allowOffline: boolean;
  readonly timeoutSeconds: number;
  /** Passed to npm as --registry (a mirror, or a test server); default: npm's own configuration. */
  readonly registry?: string;
}

export interface AuditRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Turns the outcome into output and an exit code. */
export function judgeAudit(outcome: AuditOutcome, options: Pick<AuditOptions, 'allowOffline'>): AuditRun {
  switch (outcome.kind) {
    case 'unreachable': {
      const message = `audit: ${notRunMessage(outcome.url, outcome.reason)}\n`;
      if (options.allowOffline) {
        return {
          code: EXIT.passed,
          stdout: '',
          stderr: `${message}audit: continuing because --allow-offline was given; the release pipeline runs \`npm run audit\` without it (docs/supply-chain.md)\n`,
        };
      }
      return {
        code: EXIT.notRun,
        stdout: '',
        stderr: `${message}audit: run it on a machine that reaches the advisory service before a release (docs/supply-chain.md)\n`,
      };
    }
    case 'error':
      return { code: EXIT.error, stdout: '', stderr: `audit: npm audit failed: ${outcome.message}\n` };
    case 'report': {
      const list = findings(outcome.report);
      const counts = outcome.report.metadata.vulnerabilities;
      const blocking = list.filter((f) => (BLOCKING as readonly string[]).includes(f.severity));
      const summary =
        list.length === 0
          ? 'audit: 0 vulnerabilities in the production dependencies (npm audit --omit=dev; the advisory service answered)'
          : `audit: ${list.length} vulnerable production package(s): ${counts.critical} critical, ${counts.high} high, ${counts.moderate} moderate, ${counts.low} low, ${counts.info} info`;
      const stdout = [...list.filter((f) => !blocking.includes(f)).map((f) => `audit: ${f.line}`), summary].join('\n');
      const stderr = blocking.map((f) => `audit: ${f.line}\n`).join('');
      const verdict =
        blocking.length > 0 ? `audit: FAILED: ${blocking.length} high or critical (see docs/supply-chain.md "Vulnerability audit")\n` : '';
      return { code: blocking.length > 0 ? EXIT.findings : EXIT.passed, stdout: `${stdout}\n`, stderr: stderr + verdict };
    }
  }
}

export async function runAudit(root: string, options: AuditOptions): Promise<AuditRun> {
  const timeoutMs = options.timeoutSeconds * 1000;
  const args = [
    'audit',
    '--omit=dev',
    '--json',
    '--offline=false',
    '--fetch-retries=1',
    `--fetch-timeout=${Math.max(1000, Math.floor(timeoutMs / 2))}`,
    ...(options.registry === undefined ? [] : [`--registry=${options.registry}`]),
  ];
  const result = await runNpm(args, { cwd: root, timeoutMs });
  return judgeAudit(classifyAudit(result, options.registry ?? DEFAULT_REGISTRY, options.timeoutSeconds), options);
}

const ArgsSchema = z.strictObject({
  'allow-offline': z.boolean(),
  'timeout-seconds': z.coerce.number().int().min(1).max(3600),
  registry: z.url().optional(),
});

export function parseAuditArgs(argv: readonly string[]): AuditOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'allow-offline': { type: 'boolean', default: false },
      'timeout-seconds': { type: 'string', default: String(DEFAULT_TIMEOUT_SECONDS) },
      registry: { type: 'string' },
    },
    strict: true,
  });
  const parsed = ArgsSchema.parse(values);
  return {
    allowOffline: parsed['allow-offline'],
    timeoutSeconds: parsed['timeout-seconds'],
    ...(parsed.registry === undefined ? {} : { registry: parsed.registry }),
  };
}

if (isMain(import.meta.url)) {
  let options: AuditOptions;
  try {
    options = parseAuditArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(
      `audit: ${e instanceof Error ? e.message : String(e)}\nusage: npm run audit -- [--allow-offline] [--timeout-seconds N] [--registry URL]\n`,
    );
    process.exit(EXIT.error);
  }
  runAudit(REPO_ROOT, options).then(
    (r) => {
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      process.exitCode = r.code;
    },
    (e: unknown) => {
      process.stderr.write(`audit: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exitCode = EXIT.error;
    },
  );
}
