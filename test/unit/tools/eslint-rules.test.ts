import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

// The project's eslint.config.js, with type-aware parsing off so that snippets for files that do not
// exist can be linted; the rules under test are syntactic.
let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({
    cwd: REPO,
    overrideConfig: [
      {
        files: ['**/*.ts'],
        ...tseslint.configs.disableTypeChecked,
        languageOptions: { parserOptions: { projectService: false, project: null } },
      },
    ],
  });
});

async function lint(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(REPO, file) });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`);
}

const DANGEROUS_WINDOW = [
  "import { BrowserWindow, shell } from 'electron';",
  'export const w = new BrowserWindow({ webPreferences: { nodeIntegration: true, nodeIntegrationInWorker: true, contextIsolation: false, sandbox: false, webviewTag: true, webSecurity: false } });',
  "void shell.openExternal('https://example.com');",
].join('\n');

describe('ESLint: Electron lockdown in src/main and src/preload', () => {
  it.each(['src/main/probe.ts', 'src/preload/probe.ts'])(
    '%s: every unsafe window option and shell.openExternal is an error',
    async (file) => {
      const messages = await lint(file, DANGEROUS_WINDOW);
      expect(messages.filter((m) => m.startsWith('no-restricted-syntax'))).toEqual([
        'no-restricted-syntax: node integration stays off in every renderer (security checklist #2)',
        'no-restricted-syntax: node integration stays off in every renderer (security checklist #2)',
        'no-restricted-syntax: context isolation stays on (security checklist #3)',
        'no-restricted-syntax: the renderer stays sandboxed (security checklist #4)',
        'no-restricted-syntax: <webview> stays off (security checklist #12)',
        'no-restricted-syntax: web security stays on (security checklist #6)',
        'no-restricted-syntax: shell.openExternal is not used by the kiosk (security checklist #15)',
      ]);
    },
  );

  it('the locked-down options themselves pass', async () => {
    const safe =
      "import { BrowserWindow } from 'electron';\nexport const w = new BrowserWindow({ webPreferences: { nodeIntegration: false, contextIsolation: true, sandbox: true, webviewTag: false } });\n";
    expect(await lint('src/main/probe.ts', safe)).toEqual([]);
  });

  it('ipcRenderer is for src/preload only', async () => {
    const code = "import { ipcRenderer } from 'electron';\nvoid ipcRenderer;\n";
    expect(await lint('src/preload/probe.ts', code)).toEqual([]);
    for (const file of ['src/main/probe.ts', 'src/qa/app/probe.ts', 'src/cli/probe.ts']) {
      expect(await lint(file, code)).toEqual([
        expect.stringMatching(/^no-restricted-imports: 'ipcRenderer' import from 'electron' is restricted/),
      ]);
    }
  });
});

describe('ESLint: Electron stays out of the plain rooms', () => {
  it.each([
    'src/common/probe.ts',
    'src/platform/probe.ts',
    'src/kiosk/probe.ts',
    'src/devices/probe.ts',
    'src/service/probe.ts',
    'src/host/probe.ts',
    'src/renderer/probe.ts',
  ])('%s cannot import electron, not even its types', async (file) => {
    expect(await lint(file, "import type { App } from 'electron';\nexport type A = App;\n")).toEqual([
      expect.stringMatching(
        /^no-restricted-imports: 'electron' import is restricted from being used by a pattern\. Electron belongs to src\/main and src\/preload/,
      ),
    ]);
  });

  it('the production rooms still cannot import QA code', async () => {
    // The floors refuse it too (test/unit/architecture/floors.test.ts); this is the QA rule's own message.
    for (const file of ['src/service/probe.ts', 'src/main/probe.ts', 'src/platform/probe.ts']) {
      const messages = await lint(file, "export { defaultQaPkiDir } from '../qa/index.js';\n");
      expect(messages.filter((m) => m.startsWith('no-restricted-imports'))).toEqual([
        expect.stringMatching(/must not import QA-only code/),
      ]);
    }
  });
});
