/**
 * tools/build/third-party-notices.ts: every package bundled into the screen gets its licence texts in
 * THIRD-PARTY-NOTICES.txt (its own files, or a supplement for a package that ships none, plus the
 * licences of native code compiled into it); a bundled package with no text anywhere is reported, so the
 * build stops instead of shipping it without its notice.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildNotices } from '../../../tools/build/third-party-notices.js';
import { REPO_ROOT } from '../../../tools/supply-chain/common.js';
import { cleanUpFakeProjects, writeFakeProject } from './supply-chain-fixtures.js';

afterEach(cleanUpFakeProjects);

const MIT_A = 'MIT License\n\nCopyright (c) 2024 Alpha Authors\n';
const SUPPLEMENTS = {
  packageLicenses: { 'lib-b': 'lib-b.LICENSE.txt' },
  embedded: [
    { package: 'lib-b', component: 'NativeCodec (compiled into lib-b)', license: 'BSD-2-Clause', file: 'native-codec.LICENSE.txt' },
  ],
};

function project(supplements: unknown, extraFiles: Record<string, string> = {}): Parameters<typeof writeFakeProject>[0] {
  return {
    dependencies: { server: '^1' },
    devDependencies: { 'lib-a': '^1', 'lib-b': '^1', 'lib-c': '^1' },
    packages: {
      'node_modules/server': { version: '1.0.0', license: 'MIT' },
      'node_modules/lib-a': { version: '1.2.0', license: 'MIT', dev: true },
      'node_modules/lib-b': { version: '2.0.0', license: 'MIT', dev: true },
      'node_modules/lib-c': { version: '3.0.0', license: 'ISC', dev: true },
    },
    files: {
      'src/renderer/main.ts': "import { a } from 'lib-a';\nimport { b } from 'lib-b';\nexport const x = [a, b];\n",
      'node_modules/lib-a/LICENSE': MIT_A,
      'tools/build/notices/supplements.json': JSON.stringify(supplements),
      'tools/build/notices/lib-b.LICENSE.txt': '# Source: example.org/lib-b @ abc123, LICENSE\nMIT License\n\nCopyright (c) 2020 Beta\n',
      'tools/build/notices/native-codec.LICENSE.txt':
        '# Source: example.org/codec @ def456, LICENSE\nCopyright (c) 2001 Codec People\nRedistribution ... permitted.\n',
      ...extraFiles,
    },
  };
}

describe('third-party notices of the screen', () => {
  it("lists exactly the screen's packages, each with its own licence file or its supplement, and the embedded code's licence", async () => {
    const root = await writeFakeProject(project(SUPPLEMENTS));
    const notices = await buildNotices(root);
    expect(notices.errors).toEqual([]);
    expect(notices.missing).toEqual([]);
    expect(notices.packages).toEqual(['lib-a@1.2.0', 'lib-b@2.0.0']); // not the server's node_modules, not the unused lib-c
    expect(notices.text).toContain('lib-a@1.2.0 — MIT');
    expect(notices.text).toContain('Copyright (c) 2024 Alpha Authors');
    expect(notices.text).toContain('Copyright (c) 2020 Beta');
    expect(notices.text).toMatch(
      /NativeCodec \(compiled into lib-b\), BSD-2-Clause \(Source: example\.org\/codec @ def456, LICENSE\)\n\nCopyright \(c\) 2001 Codec People/,
    );
    expect(notices.text).not.toContain('# Source:'); // the header line is cited in the section title, not repeated
  });

  it('reports a bundled package that carries no licence text anywhere', async () => {
    const root = await writeFakeProject(project({ packageLicenses: {}, embedded: [] }));
    const notices = await buildNotices(root);
    expect(notices.missing).toEqual(['lib-b@2.0.0']);
  });

  it('refuses a supplements file of the wrong shape, naming it', async () => {
    const root = await writeFakeProject(project({ packageLicenses: { 'lib-b': 42 }, embedded: [] }));
    await expect(buildNotices(root)).rejects.toThrow(/supplements\.json/);
  });

  it('on this repository: every package bundled into the screen has a notice, zxing-wasm with ZXing-C++ and the JPEG 2000 codec with OpenJPEG', async () => {
    const notices = await buildNotices(REPO_ROOT);
    expect(notices.errors).toEqual([]);
    expect(notices.missing).toEqual([]);
    expect(notices.packages).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^react@/),
        expect.stringMatching(/^zxing-wasm@/),
        expect.stringMatching(/^@cornerstonejs\/codec-openjpeg@/),
      ]),
    );
    expect(notices.text).toMatch(/ZXing-C\+\+ .*Apache-2\.0[\s\S]*Apache License\s+Version 2\.0/);
    expect(notices.text).toMatch(/OpenJPEG .*BSD-2-Clause[\s\S]*Universite catholique de Louvain/);
  });

  it('names where the source of the GPL voice engine is (a separate program shipped beside the app), and its package is installed', async () => {
    const notices = await buildNotices(REPO_ROOT);
    expect(notices.text).toMatch(
      /@echogarden\/espeak-ng-emscripten — GPL-3\.0[\s\S]*Source:\n\s+https:\/\/github\.com\/echogarden-project\/espeak-ng \(branch fork\)/,
    );
    expect(notices.text).toContain('https://github.com/espeak-ng/espeak-ng');
    // The COPYING the notice points at is where it says.
    expect(existsSync(join(REPO_ROOT, 'node_modules/@echogarden/espeak-ng-emscripten/COPYING'))).toBe(true);
  });
});
