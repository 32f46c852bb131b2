import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import {
  EXIT,
  classifyAudit,
  judgeAudit,
  parseAuditArgs,
  runAudit,
  type AuditOutcome,
  type AuditReport,
} from '../../../tools/supply-chain/audit.js';
import { REPO_ROOT, type NpmResult } from '../../../tools/supply-chain/common.js';

const BULK = 'https://registry.npmjs.org/-/npm/v1/security/advisories/bulk';
const npm = (stdout: string, code: number | null = 1, stderr = '', timedOut = false): NpmResult => ({ code, stdout, stderr, timedOut });

const REFUSED_405 = JSON.stringify({
  message: `405 Method Not Allowed - POST ${BULK}`,
  method: 'POST',
  uri: BULK,
  headers: { allow: ['GET,HEAD'] },
  statusCode: 405,
  body: '',
  error: { summary: '', detail: '' },
});

function report(vulnerabilities: AuditReport['vulnerabilities']): AuditReport {
  const counts = { info: 0, low: 0, moderate: 0, high: 0, critical: 0, total: 0 };
  for (const v of Object.values(vulnerabilities)) {
    counts[v.severity] += 1;
    counts.total += 1;
  }
  return { auditReportVersion: 2, vulnerabilities, metadata: { vulnerabilities: counts } };
}
const vuln = (
  name: string,
  severity: 'low' | 'moderate' | 'high' | 'critical',
  isDirect = true,
): AuditReport['vulnerabilities'][string] => ({
  name,
  severity,
  isDirect,
  via: [{ source: 1, name, title: `Bad thing in ${name}`, url: `https://github.com/advisories/GHSA-${name}`, severity, range: '<9.0.0' }],
  effects: [],
  range: '<9.0.0',
  nodes: [`node_modules/${name}`],
  fixAvailable: false,
});

describe('reading what npm audit did', () => {
  it('a refused or failed request to the advisory service is "unreachable", with the address and the reason', () => {
    expect(classifyAudit(npm(REFUSED_405), 'https://registry.npmjs.org/', 60)).toEqual({
      kind: 'unreachable',
      url: BULK,
      reason: '405 Method Not Allowed',
    });
    const refused = JSON.stringify({
      message: 'request to http://127.0.0.1:9/-/npm/v1/security/advisories/bulk failed, reason: connect ECONNREFUSED 127.0.0.1:9',
      error: { summary: '', detail: '' },
    });
    expect(classifyAudit(npm(refused), 'http://127.0.0.1:9/', 60)).toEqual({
      kind: 'unreachable',
      url: 'http://127.0.0.1:9/-/npm/v1/security/advisories/bulk',
      reason: 'connect ECONNREFUSED 127.0.0.1:9',
    });
    expect(classifyAudit(npm('', null, '', true), 'https://mirror.example/npm', 60)).toEqual({
      kind: 'unreachable',
      url: 'https://mirror.example/npm/-/npm/v1/security/advisories/bulk',
      reason: 'no answer within 60 s',
    });
    // No JSON at all, only npm's error lines.
    expect(
      classifyAudit(
        npm('', 1, 'npm warn audit getaddrinfo EAI_AGAIN registry.npmjs.org\nnpm error audit endpoint returned an error\n'),
        'https://registry.npmjs.org/',
        60,
      ),
    ).toMatchObject({
      kind: 'unreachable',
      url: BULK,
    });
  });

  it('other npm failures are errors with npm’s words; a report is a report', () => {
    const noLock = JSON.stringify({
      error: { code: 'ENOLOCK', summary: 'This command requires an existing lockfile.', detail: 'Try npm i' },
    });
    expect(classifyAudit(npm(noLock), 'https://registry.npmjs.org/', 60)).toEqual({
      kind: 'error',
      message: 'ENOLOCK: This command requires an existing lockfile.: Try npm i',
    });
    expect(classifyAudit(npm('garbage', 1, 'npm error something else'), 'https://registry.npmjs.org/', 60)).toEqual({
      kind: 'error',
      message: 'npm audit exited 1 without a report: npm error something else',
    });
    expect(classifyAudit(npm(JSON.stringify(report({})), 0), 'https://registry.npmjs.org/', 60).kind).toBe('report');
  });
});

describe('the verdict', () => {
  const unreachable: AuditOutcome = { kind: 'unreachable', url: BULK, reason: '405 Method Not Allowed' };

  it('unreachable: says plainly that no audit ran and exits 3; never "0 vulnerabilities"', () => {
    const run = judgeAudit(unreachable, { allowOffline: false });
    expect(run.code).toBe(EXIT.notRun);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(
      `audit: vulnerability audit NOT run: the advisory service (${BULK}) is unreachable from this machine (405 Method Not Allowed)`,
    );
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/0 vulnerabilities|passed/i);
  });

  it('unreachable with --allow-offline: the same message, exit 0, still no "0 vulnerabilities"', () => {
    const run = judgeAudit(unreachable, { allowOffline: true });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('vulnerability audit NOT run');
    expect(run.stderr).toContain('--allow-offline');
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/0 vulnerabilities/);
  });

  it('fails on high or critical, naming package, severity and advisory; moderate alone passes', () => {
    const bad = judgeAudit(
      { kind: 'report', report: report({ ws: vuln('ws', 'high'), 'date-fns': vuln('date-fns', 'moderate', false) }) },
      { allowOffline: true },
    );
    expect(bad.code).toBe(EXIT.findings);
    expect(bad.stderr).toContain(
      'audit: HIGH ws (direct dependency) [node_modules/ws]: Bad thing in ws https://github.com/advisories/GHSA-ws (vulnerable <9.0.0); no fix available',
    );
    expect(bad.stderr).toContain('FAILED: 1 high or critical');
    expect(bad.stdout).toContain('MODERATE date-fns');

    const critical = judgeAudit({ kind: 'report', report: report({ x: vuln('x', 'critical') }) }, { allowOffline: false });
    expect(critical.code).toBe(EXIT.findings);

    const moderate = judgeAudit({ kind: 'report', report: report({ 'date-fns': vuln('date-fns', 'moderate') }) }, { allowOffline: false });
    expect(moderate.code).toBe(0);
    expect(moderate.stdout).toContain('1 vulnerable production package(s): 0 critical, 0 high, 1 moderate');

    const clean = judgeAudit({ kind: 'report', report: report({}) }, { allowOffline: false });
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain('0 vulnerabilities in the production dependencies');
  });

  it('reads its arguments strictly', () => {
    expect(parseAuditArgs([])).toEqual({ allowOffline: false, timeoutSeconds: 60 });
    expect(parseAuditArgs(['--allow-offline', '--timeout-seconds', '5', '--registry', 'http://127.0.0.1:1/'])).toEqual({
      allowOffline: true,
      timeoutSeconds: 5,
      registry: 'http://127.0.0.1:1/',
    });
    expect(() => parseAuditArgs(['--allow-ofline'])).toThrow();
    expect(() => parseAuditArgs(['--timeout-seconds', '0'])).toThrow();
  });
});

// ---------------------------------------------------------------- the real npm against a local advisory service

type Mode = 'refuse' | 'high' | 'none' | 'hang';

interface FakeRegistry {
  readonly url: string;
  readonly audited: string[][];
  close(): Promise<void>;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((done) => s.close(done));
  }
});

async function fakeRegistry(mode: Mode): Promise<FakeRegistry> {
  const audited: string[][] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url?.startsWith('/-/npm/v1/security/advisories/bulk') === true) {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        audited.push(Object.keys(JSON.parse(body.toString('utf8')) as Record<string, unknown>));
        if (mode === 'hang') return;
        if (mode === 'refuse') {
          res.writeHead(405, { allow: 'GET,HEAD' }).end();
          return;
        }
        const advisories =
          mode === 'high'
            ? {
                ws: [
                  {
                    id: 1,
                    url: 'https://github.com/advisories/GHSA-test-ws',
                    title: 'Test DoS in ws',
                    severity: 'high',
                    vulnerable_versions: '<99.0.0',
                    cwe: [],
                    cvss: { score: 7.5, vectorString: null },
                  },
                ],
              }
            : {};
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(advisories));
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end('{}'); // packuments (fix lookup)
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    audited,
    close: () => new Promise((done) => server.close(() => done())),
  };
}

describe('npm run audit against a local advisory service (real npm)', () => {
  it('service refuses the request (as our registry does): NOT run, exit 3', async () => {
    const registry = await fakeRegistry('refuse');
    const run = await runAudit(REPO_ROOT, { allowOffline: false, timeoutSeconds: 30, registry: registry.url });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(
      `vulnerability audit NOT run: the advisory service (${registry.url}-/npm/v1/security/advisories/bulk) is unreachable from this machine (405 Method Not Allowed)`,
    );
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/0 vulnerabilities/);
  });

  it('a high advisory for a production package fails the run (--allow-offline or not), naming it; only production packages were sent', async () => {
    const registry = await fakeRegistry('high');
    const run = await runAudit(REPO_ROOT, { allowOffline: true, timeoutSeconds: 30, registry: registry.url });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^audit: HIGH ws \(direct dependency\) \[node_modules\/ws\]: Test DoS in ws https:\/\/github\.com\/advisories\/GHSA-test-ws/m,
    );
    const sent = registry.audited[0] ?? [];
    // zod and undici are also used by dev tools: npm's --omit=dev keeps them (its sbom --omit dev does not).
    expect(sent).toEqual(expect.arrayContaining(['ws', 'zod', 'undici', 'pino', 'electron-updater', 'smartcard']));
    expect(sent).not.toContain('vitest');
    expect(sent).not.toContain('electron-builder');
  });

  it('no advisories: "0 vulnerabilities", exit 0', async () => {
    const registry = await fakeRegistry('none');
    const run = await runAudit(REPO_ROOT, { allowOffline: false, timeoutSeconds: 30, registry: registry.url });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('0 vulnerabilities in the production dependencies');
  });

  it('an npmrc saying offline=true does not turn into "0 vulnerabilities" (npm audit --offline asks no one)', async () => {
    const registry = await fakeRegistry('refuse');
    const before = process.env.npm_config_offline;
    process.env.npm_config_offline = 'true';
    try {
      const run = await runAudit(REPO_ROOT, { allowOffline: false, timeoutSeconds: 30, registry: registry.url });
      expect(run.code).toBe(3);
      expect(`${run.stdout}${run.stderr}`).not.toMatch(/0 vulnerabilities/);
      expect(registry.audited).toHaveLength(1);
    } finally {
      if (before === undefined) delete process.env.npm_config_offline;
      else process.env.npm_config_offline = before;
    }
  });

  it('a service that never answers is cut off at the time limit: NOT run, exit 3', async () => {
    const registry = await fakeRegistry('hang');
    const started = Date.now();
    const run = await runAudit(REPO_ROOT, { allowOffline: false, timeoutSeconds: 3, registry: registry.url });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('vulnerability audit NOT run');
  });

  it('as a process: nothing listening → exit status 3; --allow-offline → 0', async () => {
    const registry = await fakeRegistry('none');
    const closed = registry.url;
    await registry.close();
    servers.length = 0;
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const script = join(REPO_ROOT, 'tools', 'supply-chain', 'audit.ts');
    const failure = await promisify(execFile)(tsx, [script, '--registry', closed, '--timeout-seconds', '20'], { cwd: REPO_ROOT }).then(
      () => ({ code: 0, stderr: '' }),
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(failure.code).toBe(3);
    expect(failure.stderr).toContain('vulnerability audit NOT run');
    expect(failure.stderr).toMatch(/ECONNREFUSED/);
    const allowed = await promisify(execFile)(tsx, [script, '--registry', closed, '--timeout-seconds', '20', '--allow-offline'], {
      cwd: REPO_ROOT,
    });
    expect(allowed.stderr).toContain('vulnerability audit NOT run');
  });
});
