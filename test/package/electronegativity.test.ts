import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ALLOWLIST_FILE, judge, parseAllowlist, scan, type Finding } from '../../tools/package/electronegativity.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const temps: string[] = [];
afterAll(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

/** A repository layout with a deliberately unsafe main process, scanned with the project's tools. */
async function unsafeApp(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'mdl-kiosk-electronegativity-'));
  temps.push(root);
  const files: Record<string, string> = {
    'src/main/window.ts': [
      "import { BrowserWindow } from 'electron';",
      'export function open(): BrowserWindow {',
      '  const window = new BrowserWindow({ webPreferences: { nodeIntegration: true, contextIsolation: false, sandbox: false, webSecurity: false } });',
      "  void window.loadURL('http://example.com/');",
      '  return window;',
      '}',
    ].join('\n'),
    'src/preload/index.ts': 'export const nothing = 0;\n',
    'src/service/security-headers.ts': "export const csp = '';\n",
    'dist/renderer/index.html': '<!doctype html><html><head><title>x</title></head><body></body></html>\n',
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

const finding = (over: Partial<Finding>): Finding => ({
  id: 'NODE_INTEGRATION_JS_CHECK',
  severity: 'HIGH',
  confidence: 'FIRM',
  file: 'src/main/window.ts',
  line: 1,
  column: 1,
  description: 'x',
  ...over,
});

describe('Electronegativity in CI', () => {
  it('finds an unsafe window in TypeScript sources, offline, and blocks on it despite the project allowlist', async () => {
    const root = await unsafeApp();
    const result = await scan({ root, toolsRoot: REPO });
    expect(result.parseErrors).toEqual([]);
    const ids = result.findings.map((f) => f.id);
    expect(ids).toEqual(
      expect.arrayContaining([
        'CONTEXT_ISOLATION_JS_CHECK',
        'SANDBOX_JS_CHECK',
        'WEB_SECURITY_JS_CHECK',
        'HTTP_RESOURCES_JS_CHECK',
        'LIMIT_NAVIGATION_GLOBAL_CHECK',
        'PERMISSION_REQUEST_HANDLER_GLOBAL_CHECK',
      ]),
    );
    const located = result.findings.find((f) => f.id === 'CONTEXT_ISOLATION_JS_CHECK');
    expect(located).toMatchObject({ file: 'src/main/window.ts', line: 3 });
    const allowlist = parseAllowlist(await readFile(join(REPO, ALLOWLIST_FILE), 'utf8'));
    const verdict = judge(result.findings, allowlist);
    expect(verdict.blocking.map((f) => f.id)).toEqual(
      expect.arrayContaining(['CONTEXT_ISOLATION_JS_CHECK', 'SANDBOX_JS_CHECK', 'LIMIT_NAVIGATION_GLOBAL_CHECK']),
    );
  }, 60_000);

  it('the project allowlist is well formed: every entry names a check and gives a reason', async () => {
    const allowlist = parseAllowlist(await readFile(join(REPO, ALLOWLIST_FILE), 'utf8'));
    expect(allowlist.allow.length).toBeGreaterThan(0);
    for (const entry of allowlist.allow) expect(entry.reason.length).toBeGreaterThanOrEqual(20);
  });

  it('an allowlist entry excuses only its check (and file), informational findings never block, unused entries are reported', () => {
    const allowlist = parseAllowlist(
      JSON.stringify({
        allow: [
          { check: 'AUXCLICK_JS_CHECK', file: 'src/main/window.ts', reason: 'middle click cannot open windows: denied by the handler' },
          { check: 'CSP_GLOBAL_CHECK', reason: 'the CSP is a response header of the protocol handler' },
        ],
      }),
    );
    const verdict = judge(
      [
        finding({ id: 'AUXCLICK_JS_CHECK', severity: 'MEDIUM' }),
        finding({ id: 'AUXCLICK_JS_CHECK', severity: 'MEDIUM', file: 'src/main/other.ts' }),
        finding({ id: 'NODE_INTEGRATION_JS_CHECK' }),
        finding({ id: 'OPEN_EXTERNAL_JS_CHECK', severity: 'INFORMATIONAL' }),
      ],
      allowlist,
    );
    expect(verdict.allowed.map((a) => a.finding.file)).toEqual(['src/main/window.ts']);
    expect(verdict.blocking.map((f) => `${f.id} ${f.file}`)).toEqual([
      'AUXCLICK_JS_CHECK src/main/other.ts',
      'NODE_INTEGRATION_JS_CHECK src/main/window.ts',
    ]);
    expect(verdict.informational.map((f) => f.id)).toEqual(['OPEN_EXTERNAL_JS_CHECK']);
    expect(verdict.unused.map((e) => e.check)).toEqual(['CSP_GLOBAL_CHECK']);
  });

  it('an allowlist entry without a real reason is refused, naming the key', () => {
    expect(() => parseAllowlist(JSON.stringify({ allow: [{ check: 'CSP_GLOBAL_CHECK', reason: 'fine' }] }))).toThrow(
      /allow\.0\.reason: give a reason/,
    );
    expect(() => parseAllowlist(JSON.stringify({ allow: [{ check: 'csp', reason: 'a reason that is long enough to read' }] }))).toThrow(
      /allow\.0\.check/,
    );
    expect(() => parseAllowlist('{')).toThrow(/is not JSON/);
  });
});
