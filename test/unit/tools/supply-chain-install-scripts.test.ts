import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT, runNpm } from '../../../tools/supply-chain/common.js';
import {
  checkInstallScripts,
  installScriptsOf,
  installedPackages,
  markdownSection,
  parseAllowKey,
  runInstallScriptsCheck,
  type InstalledPackage,
} from '../../../tools/supply-chain/install-scripts.js';
import { readLockfile, readProjectManifest } from '../../../tools/supply-chain/tree.js';
import { cleanUpFakeProjects, writeFakeProject } from './supply-chain-fixtures.js';

afterEach(cleanUpFakeProjects);

describe("npm's notion of an install script", () => {
  it('counts preinstall/install/postinstall, the implicit node-gyp rebuild, and prepare only from a non-registry source', () => {
    expect(installScriptsOf({ scripts: { postinstall: 'node install.js', test: 'x' } }, { hasBindingGyp: false })).toEqual({
      postinstall: 'node install.js',
    });
    expect(installScriptsOf({ scripts: {} }, { hasBindingGyp: true })).toEqual({ install: 'node-gyp rebuild (implicit: binding.gyp)' });
    expect(installScriptsOf({ scripts: { install: 'node-gyp-build' } }, { hasBindingGyp: true })).toEqual({ install: 'node-gyp-build' });
    expect(installScriptsOf({ gypfile: false }, { hasBindingGyp: true })).toEqual({});
    const prepare = { scripts: { prepare: 'tsc' } };
    expect(installScriptsOf(prepare, { hasBindingGyp: false, resolved: 'https://registry.npmjs.org/a/-/a-1.0.0.tgz' })).toEqual({});
    expect(installScriptsOf(prepare, { hasBindingGyp: false, resolved: 'git+ssh://git@github.com/x/a.git#abc' })).toEqual({
      prepare: 'tsc',
    });
  });

  it('reads allowScripts keys: a name, a scoped name, an exact version; not a range', () => {
    expect(parseAllowKey('esbuild')).toEqual({ name: 'esbuild' });
    expect(parseAllowKey('@stoprocent/noble')).toEqual({ name: '@stoprocent/noble' });
    expect(parseAllowKey('@stoprocent/noble@2.8.0')).toEqual({ name: '@stoprocent/noble', version: '2.8.0' });
    expect(parseAllowKey('esbuild@^0.28')).toEqual({ error: '"^0.28" is not an exact version: use `esbuild` or `esbuild@x.y.z`' });
  });

  it('finds the section of a Markdown file up to the next level-2 heading', () => {
    const md = '# T\n## A\na\n### sub\nb\n## Supply chain\n`x` here\n### more\n`y`\n## After\n`z`\n';
    expect(markdownSection(md, 'Supply chain')).toBe('## Supply chain\n`x` here\n### more\n`y`');
    expect(markdownSection(md, 'Missing')).toBeUndefined();
  });
});

const pkg = (name: string, scripts: Record<string, string>, version = '1.0.0'): InstalledPackage => ({
  name,
  version,
  location: `node_modules/${name}`,
  scripts,
  tree: 'production',
});
const JUSTIFIED = '## Supply chain\n`native`: allowed. `banner`: denied. `pinned`: allowed.\n';

describe('the allowScripts check', () => {
  it('passes when every script is allowed or denied, every entry still applies and the README names each', () => {
    const installed = [pkg('native', { install: 'node-gyp rebuild' }), pkg('banner', { postinstall: 'node banner.js' }), pkg('plain', {})];
    const report = checkInstallScripts(installed, { native: true, banner: false }, JUSTIFIED);
    expect(report.problems).toEqual([]);
    expect(report.rows.map((r) => [r.pkg.name, r.decision])).toEqual([
      ['native', 'allowed'],
      ['banner', 'denied'],
    ]);
  });

  it('fails a package whose install script nobody reviewed, naming it and its script', () => {
    const report = checkInstallScripts(
      [pkg('native', { install: 'node-gyp rebuild' }), pkg('sneaky', { postinstall: 'curl x | sh' }, '6.6.6')],
      { native: true },
      JUSTIFIED,
    );
    expect(report.problems).toEqual([
      expect.stringMatching(
        /^UNREVIEWED sneaky@6\.6\.6 \(node_modules\/sneaky, production\) has an install script \(postinstall: curl x \| sh\) and no allowScripts entry/,
      ),
    ]);
  });

  it('fails an entry for a package that has no install script (any more), and one for a package not installed', () => {
    const report = checkInstallScripts(
      [pkg('electron', {}, '45.4.1')],
      { electron: false, gone: true },
      '## Supply chain\n`electron` `gone`\n',
    );
    expect(report.problems).toEqual([
      'STALE allowScripts entry "electron": false: electron@45.4.1 has no install script; remove it (`npm install-scripts prune`)',
      'STALE allowScripts entry "gone": true: no installed package matches it; remove it (`npm install-scripts prune`)',
    ]);
  });

  it('fails an entry the README does not justify, and a README without the section', () => {
    const installed = [pkg('native', { install: 'node-gyp rebuild' })];
    expect(checkInstallScripts(installed, { native: true }, '## Supply chain\nnative is fine\n').problems).toEqual([
      'UNJUSTIFIED allowScripts entry "native": true: README.md "Supply chain" does not explain it (name it in backticks)',
    ]);
    expect(checkInstallScripts(installed, { native: true }, undefined).problems).toEqual([
      'README.md has no "## Supply chain" section justifying the allowScripts entries',
    ]);
  });

  it('a pinned entry covers only its version; a denial wins over an approval', () => {
    const pinned = checkInstallScripts(
      [pkg('pinned', { install: 'x' }, '2.0.0')],
      { 'pinned@1.0.0': true },
      '## Supply chain\n`pinned@1.0.0`\n',
    );
    expect(pinned.problems).toEqual([
      expect.stringMatching(/^UNREVIEWED pinned@2\.0\.0/),
      'STALE allowScripts entry "pinned@1.0.0": true: no installed package matches it; remove it (`npm install-scripts prune`)',
    ]);
    const both = checkInstallScripts(
      [pkg('native', { install: 'x' })],
      { native: true, 'native@1.0.0': false },
      '## Supply chain\n`native` `native@1.0.0`\n',
    );
    expect(both.rows[0]).toMatchObject({ decision: 'denied', entry: 'native@1.0.0' });
  });

  it('reads a fake node_modules: scripts, the implicit node-gyp, the tree each package belongs to; the whole run fails naming the unreviewed one', async () => {
    const root = await writeFakeProject({
      optionalDependencies: { native: '^1' },
      devDependencies: { bundler: '^1', gyp: '^1' },
      allowScripts: { native: true, bundler: true },
      readme: '# x\n## Supply chain\n`native` compiles. `bundler` links its binary.\n',
      packages: {
        'node_modules/native': {
          version: '1.0.0',
          license: 'MIT',
          optional: true,
          scripts: { install: 'node-gyp-build' },
          bindingGyp: true,
        },
        'node_modules/bundler': { version: '1.0.0', license: 'MIT', dev: true, scripts: { postinstall: 'node install.js' } },
        'node_modules/gyp': { version: '3.0.0', license: 'MIT', dev: true, bindingGyp: true },
      },
    });
    const installed = await installedPackages(root, await readLockfile(root));
    expect(installed.map((p) => [p.name, p.tree, p.scripts])).toEqual([
      ['native', 'production (optional)', { install: 'node-gyp-build' }],
      ['bundler', 'dev', { postinstall: 'node install.js' }],
      ['gyp', 'dev', { install: 'node-gyp rebuild (implicit: binding.gyp)' }],
    ]);
    const run = await runInstallScriptsCheck(root);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^install-scripts: UNREVIEWED gyp@3\.0\.0 \(node_modules\/gyp, dev\) has an install script \(install: node-gyp rebuild \(implicit: binding\.gyp\)\)/,
    );
    expect(run.stdout).toMatch(/3 installed packages have install scripts: 2 allowed, 0 denied, 1 unreviewed/);
  });
});

describe('this repository', () => {
  it("agrees with npm's own view (`npm install-scripts ls` / `prune --dry-run`), and the README justifies every entry", async () => {
    const root = REPO_ROOT;
    const project = await readProjectManifest(root);
    const section = markdownSection(await readFile(join(root, 'README.md'), 'utf8'), 'Supply chain');
    const report = checkInstallScripts(await installedPackages(root, await readLockfile(root)), project.allowScripts ?? {}, section);

    const [ls, prune] = await Promise.all([
      runNpm(['install-scripts', 'ls', '--json'], { cwd: root, timeoutMs: 60_000 }),
      runNpm(['install-scripts', 'prune', '--dry-run', '--json'], { cwd: root, timeoutMs: 60_000 }),
    ]);
    const pending = (JSON.parse(ls.stdout) as { allowScripts: { name: string }[] }).allowScripts.map((p) => p.name).sort();
    const unreviewed = report.rows
      .filter((r) => r.decision === 'UNREVIEWED')
      .map((r) => r.pkg.name)
      .sort();
    expect(unreviewed).toEqual(pending);

    const removed = (JSON.parse(prune.stdout) as { allowScripts: { removed: { key: string }[] } }).allowScripts.removed
      .map((r) => r.key)
      .sort();
    const stale = report.problems
      .filter((p) => p.startsWith('STALE'))
      .map((p) => /"([^"]+)"/.exec(p)?.[1])
      .sort();
    expect(stale).toEqual(removed);

    expect(report.problems.filter((p) => p.startsWith('UNJUSTIFIED') || p.startsWith('README') || p.startsWith('BAD'))).toEqual([]);
    // The natives the kiosk needs are allowed; nothing that only prints or downloads is.
    const decision = Object.fromEntries(report.rows.map((r) => [r.pkg.name, r.decision]));
    expect(decision).toMatchObject({
      smartcard: 'allowed',
      '@stoprocent/noble': 'allowed',
      '@stoprocent/bleno': 'allowed',
      'es5-ext': 'denied',
    });
  });
});
