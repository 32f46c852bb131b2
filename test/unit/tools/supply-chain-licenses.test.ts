import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT, parseJson } from '../../../tools/supply-chain/common.js';
import {
  ALLOWLIST_FILE,
  LicenseAllowlistSchema,
  checkLicenses,
  runLicenses,
  type LicenseAllowlist,
  type LicenseSubject,
} from '../../../tools/supply-chain/licenses.js';
import { declaredLicense, evaluate, parseSpdx, SpdxSyntaxError } from '../../../tools/supply-chain/spdx.js';
import { collectShipped, readLockfile, runtimeSpecifiers, screenImports, walk } from '../../../tools/supply-chain/tree.js';
import { cleanUpFakeProjects, writeFakeProject } from './supply-chain-fixtures.js';

afterEach(cleanUpFakeProjects);

const ALLOW = new Set(['mit', 'isc', 'apache-2.0']);

describe('SPDX expressions', () => {
  it('reads OR, AND, parentheses, or-later and WITH', () => {
    expect(parseSpdx('MIT')).toEqual({ kind: 'license', id: 'MIT', orLater: false });
    expect(parseSpdx('(MIT OR Apache-2.0)')).toEqual({
      kind: 'or',
      left: { kind: 'license', id: 'MIT', orLater: false },
      right: { kind: 'license', id: 'Apache-2.0', orLater: false },
    });
    // AND binds tighter than OR.
    expect(parseSpdx('MIT OR ISC AND GPL-3.0-only')).toMatchObject({ kind: 'or', right: { kind: 'and' } });
    expect(parseSpdx('GPL-2.0+')).toEqual({ kind: 'license', id: 'GPL-2.0', orLater: true });
    expect(parseSpdx('Apache-2.0 WITH LLVM-exception')).toEqual({
      kind: 'license',
      id: 'Apache-2.0',
      orLater: false,
      exception: 'LLVM-exception',
    });
    expect(parseSpdx('mit or isc')).toMatchObject({ kind: 'or' });
  });

  it('refuses what is not an expression', () => {
    for (const text of ['Public Domain', 'MIT OR', '(MIT', 'MIT)', '', 'AND MIT', 'MIT WITH']) {
      expect(() => parseSpdx(text), text).toThrow(SpdxSyntaxError);
    }
  });

  it('OR needs one allowed side, AND needs both, and names what is refused', () => {
    expect(evaluate(parseSpdx('(MIT OR GPL-3.0-only)'), ALLOW)).toEqual({ ok: true, terms: ['MIT'] });
    expect(evaluate(parseSpdx('(GPL-3.0-only OR Apache-2.0)'), ALLOW)).toEqual({ ok: true, terms: ['Apache-2.0'] });
    expect(evaluate(parseSpdx('MIT AND ISC'), ALLOW)).toEqual({ ok: true, terms: ['MIT', 'ISC'] });
    expect(evaluate(parseSpdx('MIT AND GPL-3.0-only'), ALLOW)).toEqual({ ok: false, terms: ['GPL-3.0-only'] });
    expect(evaluate(parseSpdx('GPL-2.0 OR LGPL-3.0'), ALLOW)).toEqual({ ok: false, terms: ['GPL-2.0', 'LGPL-3.0'] });
    expect(evaluate(parseSpdx('Apache-2.0 WITH LLVM-exception'), ALLOW).ok).toBe(false);
    expect(evaluate(parseSpdx('Apache-2.0 WITH LLVM-exception'), new Set(['apache-2.0 with llvm-exception'])).ok).toBe(true);
  });

  it('reads the deprecated package.json forms', () => {
    expect(declaredLicense({ license: 'MIT' })).toEqual({ text: 'MIT', form: 'license' });
    expect(declaredLicense({ license: { type: 'ISC', url: 'https://x' } })).toEqual({ text: 'ISC', form: 'license object (deprecated)' });
    expect(declaredLicense({ licenses: [{ type: 'MIT' }, 'Apache-2.0'] })).toEqual({
      text: 'MIT OR Apache-2.0',
      form: 'licenses array (deprecated)',
    });
    expect(declaredLicense({ licenses: [{ type: 'MIT' }] }).text).toBe('MIT');
    expect(declaredLicense({})).toEqual({ text: undefined, form: 'none' });
    expect(declaredLicense({ license: '  ' }).text).toBeUndefined();
  });
});

const allowlist: LicenseAllowlist = {
  licenses: [
    { id: 'MIT', reason: 'permissive, keep the notice' },
    { id: 'ISC', reason: 'permissive, keep the notice' },
  ],
  exceptions: [{ package: 'pd', version: '1.0.0', license: 'Public Domain', reason: 'public-domain dedication, read and accepted' }],
};
const subject = (name: string, text: string | undefined, version = '1.0.0'): LicenseSubject => ({
  name,
  version,
  shippedAs: 'node_modules',
  license: { text, form: 'license' },
});

describe('the licence check', () => {
  it('passes allowed licences and an exception that matches name, version and exact text', () => {
    const report = checkLicenses([subject('a', 'MIT'), subject('b', '(MIT OR GPL-3.0-only)'), subject('pd', 'Public Domain')], allowlist);
    expect(report.violations).toEqual([]);
    expect(report.staleExceptions).toEqual([]);
    expect(report.results.map((r) => r.verdict.status)).toEqual(['allowed', 'allowed', 'exception']);
  });

  it('fails a disallowed licence, naming the package and its licence', () => {
    const report = checkLicenses([subject('a', 'MIT'), subject('gpl-thing', 'GPL-3.0-only', '2.1.0')], allowlist);
    expect(report.violations).toHaveLength(1);
    const [v] = report.violations;
    expect(v?.subject.name).toBe('gpl-thing');
    expect(v?.verdict).toEqual({ status: 'violation', problem: 'is licensed "GPL-3.0-only": GPL-3.0-only is not on the allowlist' });
  });

  it('fails a missing licence, UNLICENSED, a licence file pointer and a non-SPDX text', () => {
    const report = checkLicenses(
      [
        subject('none', undefined),
        subject('closed', 'UNLICENSED'),
        subject('file', 'SEE LICENSE IN LICENSE.txt'),
        subject('words', 'Public Domain'),
      ],
      allowlist,
    );
    expect(report.violations.map((r) => [r.subject.name, r.verdict.status === 'violation' ? r.verdict.problem : ''])).toEqual([
      ['none', 'declares no licence'],
      ['closed', 'is UNLICENSED (no licence granted)'],
      ['file', expect.stringContaining('points at a licence file ("SEE LICENSE IN LICENSE.txt")')],
      ['words', expect.stringContaining('declares "Public Domain", which is not an SPDX licence expression')],
    ]);
  });

  it('an exception covers only the exact text and version it names', () => {
    const report = checkLicenses([subject('pd', 'Public domain'), subject('pd', 'Public Domain', '2.0.0')], allowlist);
    expect(report.violations.map((r) => `${r.subject.name}@${r.subject.version}`)).toEqual(['pd@1.0.0', 'pd@2.0.0']);
    expect(report.staleExceptions.map((s) => s.exception.package)).toEqual(['pd']);
  });

  it('an exception the allowlist makes unnecessary is stale', () => {
    const report = checkLicenses([subject('pd', 'Public Domain'), subject('x', 'MIT')], {
      ...allowlist,
      exceptions: [...allowlist.exceptions, { package: 'x', license: 'MIT', reason: 'not needed at all, MIT is allowed' }],
    });
    expect(report.violations).toEqual([]);
    expect(report.staleExceptions.map((s) => [s.exception.package, s.why])).toEqual([['x', `x@1.0.0's "MIT" is allowed without it`]]);
  });

  it("the repository's allowlist is valid and every licence in it has a reason", async () => {
    const parsed = parseJson(await readFile(join(REPO_ROOT, ALLOWLIST_FILE), 'utf8'), LicenseAllowlistSchema, ALLOWLIST_FILE);
    expect(parsed.licenses.map((l) => l.id)).toEqual(expect.arrayContaining(['MIT', 'ISC', 'Apache-2.0', 'BSD-2-Clause', 'BSD-3-Clause']));
    // No copyleft slipped in.
    expect(parsed.licenses.filter((l) => /GPL|MPL|EPL|CDDL|EUPL/i.test(l.id))).toEqual([]);
  });
});

describe('the production tree', () => {
  it('follows dependencies and optional ones, keeps a package a dev tool also uses, and never follows devDependencies', async () => {
    const root = await writeFakeProject({
      dependencies: { app: '^1' },
      optionalDependencies: { native: '^1' },
      devDependencies: { tool: '^1' },
      packages: {
        'node_modules/app': { version: '1.0.0', license: 'MIT', dependencies: { shared: '^1', nested: '^2' } },
        'node_modules/shared': { version: '1.0.0', license: 'MIT' },
        'node_modules/app/node_modules/nested': { version: '2.0.0', license: 'MIT' },
        'node_modules/nested': { version: '1.0.0', license: 'MIT', dev: true },
        'node_modules/native': {
          version: '1.0.0',
          license: 'MIT',
          optional: true,
          dependencies: { helper: '^1' },
          optionalDependencies: { 'native-win32': '^1' },
        },
        'node_modules/helper': { version: '1.0.0', license: 'MIT', optional: true },
        'node_modules/native-win32': { version: '1.0.0', license: 'MIT', optional: true, notInstalled: true },
        'node_modules/tool': { version: '1.0.0', license: 'GPL-3.0-only', dev: true, dependencies: { shared: '^1', nested: '^1' } },
      },
    });
    const tree = walk(await readLockfile(root), ['']);
    const summary = Object.fromEntries([...tree.nodes.values()].map((n) => [n.location, n.optional]));
    expect(summary).toEqual({
      'node_modules/app': false,
      'node_modules/shared': false,
      'node_modules/app/node_modules/nested': false,
      'node_modules/native': true,
      'node_modules/helper': true,
      'node_modules/native-win32': true,
    });
    expect(tree.missing).toEqual([]);

    const shipped = await collectShipped(root, { screenDir: null, runtime: [] });
    expect(shipped.errors).toEqual([]);
    expect(shipped.notes).toEqual(['native-win32@1.0.0 (optional) is not installed on this machine']);
    expect(shipped.packages.map((p) => p.key)).toEqual([
      'app@1.0.0',
      'helper@1.0.0',
      'native-win32@1.0.0',
      'native@1.0.0',
      'nested@2.0.0',
      'shared@1.0.0',
    ]);
  });

  it('follows required peers, not optional ones, and reports a broken lockfile', async () => {
    const root = await writeFakeProject({
      dependencies: { a: '^1' },
      packages: {
        'node_modules/a': {
          version: '1.0.0',
          license: 'MIT',
          dependencies: { gone: '^1' },
          peerDependencies: { peer: '^1', extra: '^1' },
          peerDependenciesMeta: { extra: { optional: true } },
        },
        'node_modules/peer': { version: '1.0.0', license: 'MIT' },
        'node_modules/extra': { version: '1.0.0', license: 'GPL-3.0-only', dev: true },
      },
    });
    const tree = walk(await readLockfile(root), ['']);
    expect([...tree.nodes.keys()].sort()).toEqual(['node_modules/a', 'node_modules/peer']);
    expect(tree.missing).toEqual([{ from: 'node_modules/a', name: 'gone', kind: 'required' }]);
  });

  it("finds the screen's run-time imports: type-only imports out, relative imports followed, the build config skipped", async () => {
    const root = await writeFakeProject({
      devDependencies: { react: '^19', 'lib-a': '^1', 'lib-b': '^1', 'types-only': '^1', vite: '^8' },
      packages: {},
      files: {
        'src/renderer/main.tsx':
          "import { z } from 'lib-a/sub?url';\nimport type { T } from 'types-only';\nimport { shared } from '../common/shared.js';\nexport const x = <div/>;\n",
        'src/renderer/worker.ts': "const w = new Worker(new URL('./other.ts', import.meta.url));\nvoid import('@scope/lib-c/x');\n",
        'src/renderer/other.ts': 'export {};\n',
        'src/renderer/vite.config.ts': "import { defineConfig } from 'vite';\n",
        'src/common/shared.ts': "import { b } from 'lib-b';\nimport 'node:fs';\nexport const shared = b;\n",
      },
    });
    const screen = await screenImports(root);
    expect(screen.packages).toEqual(['@scope/lib-c', 'lib-a', 'lib-b', 'react']);
    expect(screen.files).toContain(join('src', 'common', 'shared.ts'));
    expect(runtimeSpecifiers('x.ts', "export type { A } from 'a';\nexport { b } from 'b';")).toEqual(['b']);
  });
});

describe('npm run licenses', () => {
  it('fails on a fake tree with a disallowed, a missing and a malformed licence deep in the production tree, naming each; dev packages are not judged', async () => {
    const root = await writeFakeProject({
      dependencies: { app: '^1' },
      devDependencies: { tool: '^1' },
      packages: {
        'node_modules/app': { version: '1.0.0', license: 'MIT', dependencies: { copyleft: '^3', bare: '^1', legacy: '^1', odd: '^1' } },
        'node_modules/odd': { version: '1.0.0', license: 42, scripts: { install: 7 } },
        'node_modules/copyleft': { version: '3.2.1', license: 'GPL-3.0-only' },
        'node_modules/bare': { version: '1.0.0' },
        'node_modules/legacy': { version: '1.0.0', licenses: [{ type: 'MIT' }, { type: 'Apache-2.0' }] },
        'node_modules/tool': { version: '1.0.0', license: 'AGPL-3.0-only', dev: true },
      },
    });
    // The repository's licences without its package exceptions: those name packages this fake tree lacks (stale here).
    const allowlist = JSON.parse(await readFile(join(REPO_ROOT, ALLOWLIST_FILE), 'utf8')) as Record<string, unknown>;
    const allowlistFile = join(root, 'allowlist.json');
    await writeFile(allowlistFile, JSON.stringify({ ...allowlist, exceptions: [] }));
    const run = await runLicenses(root, { allowlistFile, shipped: { screenDir: null, runtime: [] } });
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toEqual([
      'licenses: VIOLATION bare@1.0.0 (node_modules) declares no licence',
      'licenses: VIOLATION copyleft@3.2.1 (node_modules) is licensed "GPL-3.0-only": GPL-3.0-only is not on the allowlist',
      'licenses: VIOLATION odd@1.0.0 (node_modules) declares no licence',
    ]);
    expect(run.stderr).not.toContain('AGPL');
    expect(run.stdout).not.toContain('tool@');
    expect(run.stdout).toContain('MIT OR Apache-2.0');
    expect(run.stdout).toMatch(
      /5 packages \(5 in the production node_modules, 0 bundled into the screen, 0 runtime\): 2 allowed, 0 by exception, 3 violation\(s\)/,
    );
  });

  it('passes on this repository: every shipped package allowed, no exception needed; zod, undici and React are judged, what the package leaves out is not', async () => {
    const run = await runLicenses(REPO_ROOT, { packages: true });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^zod +\S+ +node_modules, screen +MIT +allowed/m);
    expect(run.stdout).toMatch(/^undici +\S+ +node_modules +MIT +allowed/m);
    expect(run.stdout).toMatch(/^react +\S+ +screen +MIT +allowed/m);
    expect(run.stdout).toMatch(/^electron +\S+ +runtime +MIT +allowed/m);
    // Left out of the package (tools/package/production-modules.json): patch-package's tree (jsonify, "Public
    // Domain", needed an exception while it shipped), the USB and serial HCI drivers.
    expect(run.stdout).not.toMatch(/^(jsonify|patch-package|usb|serialport|@serialport\/bindings-cpp) /m);
    expect(run.stdout).not.toMatch(/^(vitest|electron-builder|typescript) /m);
  });
});
