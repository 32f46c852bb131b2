/**
 * The fleet dashboard (docs/monitoring/grafana-fleet.json) and the rules beside it name only metrics that
 * exist: every metric in every query is one the kiosk's metrics writer writes (its `# TYPE` lines, for a
 * kiosk with a backend and a failure, so every family is there) or a recording rule of
 * docs/monitoring/mdl-kiosk.rules.yml; each query is valid PromQL (promtool parses it as a rule); and the
 * dashboard shows what a fleet needs: kiosks ready, verifications by verdict and answer, errors by kind,
 * the update state, the camera state.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { healthMetricsText } from '../../../src/service/health-metrics.js';
import { HealthRecordSchema } from '../../../src/service/health-schema.js';
import { metricNames } from './kiosk-series.js';

const DASHBOARD = resolve('docs/monitoring/grafana-fleet.json');
const RULES = resolve('docs/monitoring/mdl-kiosk.rules.yml');
/** Series that are not the kiosk's: Prometheus' own `up`, node_exporter's textfile collector error. */
const NOT_THE_KIOSKS = new Set(['up', 'node_textfile_scrape_error']);

/** A record with every optional part present, so the writer writes every family it has. */
const FULL_RECORD = HealthRecordSchema.parse({
  schema: 1,
  app: 'mdl-kiosk',
  version: '1.4.2',
  flavour: 'production',
  pid: 1,
  startedAt: '2026-11-27T08:00:00.000Z',
  updatedAt: '2026-11-27T09:00:00.000Z',
  uptimeSeconds: 3_600,
  phase: 'ready',
  testMode: false,
  backendOrigin: 'https://verifier.example.com',
  devices: {
    nfc: { usable: true },
    qr: { usable: true },
    bleCentral: { usable: true },
    blePeripheral: { usable: false, reason: 'not_configured' },
  },
  outcomes: {
    total: 3,
    verified: 1,
    rejected: 1,
    undetermined: 0,
    failed: 1,
    answers: { met: 1, notMet: 0, undetermined: 0 },
    reasons: { nothing_shared: 1 },
    errors: { ble_timeout: 1 },
  },
  backend: {
    lastFailure: { kind: 'unreachable', stage: 'create', status: null, at: '2026-11-27T08:30:00.000Z' },
    consecutive: 0,
    failures: { unreachable: 1 },
    requestsLastMinute: 1,
    maxRequestsPerMinute: 20,
  },
  updates: { state: 'idle' },
  camera: { state: 'active', worked: true },
});

const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL query (or a Grafana variable query) uses: label matchers, grouping label lists,
 * ranges, strings and function names taken out; `label_values(metric, label)` keeps the metric.
 */
export function queryMetricNames(query: string): string[] {
  const q = query
    .replace(/label_values\(\s*([^,)]+)(?:,[^)]*)?\)/g, ' $1 ')
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names: string[] = [];
  // Not inside a number or a duration (`5m`, `1e3`).
  for (const m of q.matchAll(/(?<![\w.:])[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*(\(?))/g)) {
    const word = m[0];
    if (m[1] === '(' || PROMQL_WORDS.has(word.toLowerCase())) continue;
    names.push(word);
  }
  return names;
}

const Target = z.object({ expr: z.string().min(1), refId: z.string() }).loose();
const Panel = z.object({ title: z.string().min(1), type: z.string(), targets: z.array(Target).min(1) }).loose();
const Variable = z
  .object({ name: z.string(), type: z.string(), query: z.union([z.string(), z.object({ query: z.string() }).loose()]).optional() })
  .loose();
const Dashboard = z
  .object({ title: z.string(), uid: z.string(), panels: z.array(Panel).min(1), templating: z.object({ list: z.array(Variable) }) })
  .loose();
const Rules = z.object({
  groups: z.array(
    z.object({
      name: z.string(),
      rules: z.array(z.object({ record: z.string().optional(), alert: z.string().optional(), expr: z.string() }).loose()),
    }),
  ),
});

async function load(): Promise<{
  dashboard: z.infer<typeof Dashboard>;
  rules: z.infer<typeof Rules>;
  queries: { where: string; query: string }[];
}> {
  const dashboard = Dashboard.parse(JSON.parse(await readFile(DASHBOARD, 'utf8')));
  const rules = Rules.parse(yaml.load(await readFile(RULES, 'utf8')));
  const queries = [
    ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: `panel "${p.title}" ${t.refId}`, query: t.expr }))),
    ...dashboard.templating.list.flatMap((v) =>
      v.type === 'query' && v.query !== undefined
        ? [{ where: `variable ${v.name}`, query: typeof v.query === 'string' ? v.query : v.query.query }]
        : [],
    ),
  ];
  return { dashboard, rules, queries };
}

describe('the fleet dashboard and the rules name only metrics the kiosk writes', () => {
  it('the name extraction finds metrics and nothing else (so a misspelt metric is caught)', () => {
    expect(queryMetricNames('sum by (result) (increase(mdl_kiosk_verifications_total{instance=~"$instance"}[$__rate_interval]))')).toEqual([
      'mdl_kiosk_verifications_total',
    ]);
    expect(queryMetricNames('count(mdl_kiosk:cannot_verify and on (instance, job) (mdl_kiosk:uptime_seconds > 120)) or vector(0)')).toEqual(
      ['mdl_kiosk:cannot_verify', 'mdl_kiosk:uptime_seconds'],
    );
    expect(queryMetricNames('label_values(mdl_kiosk_info, instance)')).toEqual(['mdl_kiosk_info']);
    expect(queryMetricNames('label_replace(x_total == 0, "cause", "$1", "phase", "(.*)")')).toEqual(['x_total']);
    expect(queryMetricNames('time() - mdl_kiosk_start_time_seconds offset 5m')).toEqual(['mdl_kiosk_start_time_seconds']);
  });

  it('every query of the dashboard names only metrics the kiosk writes or the rules record', async () => {
    const { rules, queries } = await load();
    const written = metricNames(healthMetricsText(FULL_RECORD));
    expect(written.size).toBeGreaterThanOrEqual(17);
    const recorded = new Set(rules.groups.flatMap((g) => g.rules.flatMap((r) => (r.record === undefined ? [] : [r.record]))));
    expect(recorded.size).toBeGreaterThan(0);
    const unknown = queries.flatMap(({ where, query }) => {
      const names = queryMetricNames(query);
      if (names.length === 0) return [`${where}: no metric in ${query}`];
      return names.filter((n) => !written.has(n) && !recorded.has(n)).map((n) => `${where}: ${n}`);
    });
    expect(unknown).toEqual([]);
  });

  it("every rule names only metrics the kiosk writes, its own records, `up` and node_exporter's textfile error", async () => {
    const { rules } = await load();
    const written = metricNames(healthMetricsText(FULL_RECORD));
    const recorded = new Set(rules.groups.flatMap((g) => g.rules.flatMap((r) => (r.record === undefined ? [] : [r.record]))));
    const unknown = rules.groups.flatMap((g) =>
      g.rules.flatMap((r) =>
        queryMetricNames(r.expr)
          .filter((n) => !written.has(n) && !recorded.has(n) && !NOT_THE_KIOSKS.has(n))
          .map((n) => `${r.alert ?? r.record}: ${n}`),
      ),
    );
    expect(unknown).toEqual([]);
  });

  it('shows kiosks ready, verifications by verdict and answer, errors by kind, the update state and the camera state', async () => {
    const { dashboard, queries } = await load();
    const uses = (metric: string, by: string): boolean =>
      queries.some(({ query }) => query.includes(metric) && new RegExp(`by \\(${by}\\)`).test(query));
    expect(queries.some(({ query }) => /mdl_kiosk_phase\{phase="ready"/.test(query))).toBe(true);
    expect(uses('mdl_kiosk_verifications_total', 'result')).toBe(true);
    expect(uses('mdl_kiosk_request_answers_total', 'answer')).toBe(true);
    expect(uses('mdl_kiosk_errors_total', 'code')).toBe(true);
    expect(uses('mdl_kiosk_backend_failures_total', 'kind')).toBe(true);
    expect(uses('mdl_kiosk_update_state', 'state')).toBe(true);
    expect(uses('mdl_kiosk_camera_state', 'state')).toBe(true);
    // Every panel reads the dashboard's Prometheus variable, so it imports into any Grafana.
    for (const panel of dashboard.panels) expect(JSON.stringify(panel.datasource), panel.title).toContain('${datasource}');
  });

  it('every query is valid PromQL (promtool parses each as a recording rule)', async () => {
    const { queries } = await load();
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-dashboard-'));
    try {
      const file = join(dir, 'dashboard.rules.yml');
      const rules = queries.map(({ query }, i) => ({
        record: `dashboard:query_${i}`,
        expr: query.replace(/\$__rate_interval/g, '5m').replace(/\$instance/g, '.*'),
      }));
      await writeFile(
        file,
        JSON.stringify({ groups: [{ name: 'dashboard', rules: rules.filter((r) => !r.expr.startsWith('label_values(')) }] }),
      );
      const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 60_000 });
      if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')
        throw new Error("promtool is missing: install Debian's prometheus package (apt-get install -y --no-install-recommends prometheus)");
      expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
