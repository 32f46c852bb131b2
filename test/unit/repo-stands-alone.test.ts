/**
 * The repository needs nothing beside it: a clone alone has every file its tests read, its README and docs
 * link only to files in it, and no comment cites a document that is not in it (the developers' reference
 * folder next to a checkout, or this machine's paths). `bash .ci/run`, which runs everything in a copy of the checkout with nothing beside it, proves
 * the first in practice; this keeps all three from coming back.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  anchorsOf,
  brokenLinks,
  findOutsideReferences,
  headingAnchor,
  readText,
  repoRoot,
  trackedFiles,
} from '../support/repo-stands-alone.js';

const root = repoRoot();
const files = trackedFiles(root);

/** A repository file's text: '' for a folder, undefined when nothing is there. */
function readRepoFile(path: string): string | undefined {
  const full = join(root, path);
  if (!existsSync(full)) return undefined;
  if (statSync(full).isDirectory()) return '';
  return readText(root, path) ?? '';
}

// Planted references, assembled so this file does not match itself.
const SHARED = 'shar' + 'ed';
const SPEC = 'relay-protocol' + '.md';
const DESIGN = 'DES' + 'IGN';
const WORK = 'wo' + 'rk';
const planted = {
  relativeFolder: `const path = '../../${SHARED}/reference/annex-d-vectors.json';`,
  specSection: `// the relay protocol (${SPEC} §4.3)`,
  bleSection: `// noble's UUID spelling (${'ble' + '.md'} §3.1)`,
  designPlain: `// pre-warmed session (${DESIGN} §4)`,
  machinePath: `(\`/${WORK}/${SHARED}/spec/${SPEC}\`)`,
  referenceFolder: `see ${SHARED}/reference/${'pcsc' + '.md'} pitfall 7`,
};

describe('no tracked file points outside the repository', () => {
  it('finds each kind of planted reference', () => {
    for (const [kind, line] of Object.entries(planted)) {
      expect(findOutsideReferences('planted.ts', `ok line\n${line}\n`), kind).not.toEqual([]);
      expect(findOutsideReferences('planted.ts', `ok line\n${line}\n`)[0]?.line, kind).toBe(2);
    }
  });

  it('leaves our own names alone: the devices/shared room, docs of ours, library paths', () => {
    const ours = [
      "import { abortedError } from '../shared/abort.js';",
      "import { safeCall } from '../../devices/shared/safe-call.js';",
      '// BlueZ src/shared/crypto.c opens AF_ALG sockets',
      '// bleno truncates notifications (docs/ble-libraries.md §4; docs/ble-limits.md)',
      '// noble.md and ble-limits.md are not outside documents',
      '// test/fixtures/iso18013-5/annex-d-vectors.json (ISO/IEC 18013-5 Annex D)',
    ];
    for (const line of ours) expect(findOutsideReferences('ours.ts', line), line).toEqual([]);
  });

  it('holds for every tracked text file', () => {
    const found = files
      .flatMap((file) => {
        const text = readText(root, file);
        return text === undefined ? [] : findOutsideReferences(file, text);
      });
    expect(found.map((f) => `${f.file}:${f.line} (${f.rule}): ${f.text}`)).toEqual([]);
  });
});

describe('README and docs link only to files in the repository', () => {
  it('computes heading anchors as GitHub does', () => {
    expect(headingAnchor('4.6 WebSocket close codes the kiosk sends')).toBe('46-websocket-close-codes-the-kiosk-sends');
    expect(headingAnchor('Mock backend: how it reads the spec\'s "not shown" parts')).toBe('mock-backend-how-it-reads-the-specs-not-shown-parts');
    expect(headingAnchor('The contract: `KioskApi`')).toBe('the-contract-kioskapi');
    expect([...anchorsOf('# A\n```\n# not a heading\n```\n## A\n')]).toEqual(['a', 'a-1']);
  });

  it('reports a planted link out of the repository, to a missing file and to a missing heading', () => {
    const read = (path: string): string | undefined => (path === 'docs/protocol.md' ? '# Protocol\n## 4.6 Close codes\n' : undefined);
    const markdown = [
      `The contract: [relay protocol](../../${SHARED}/spec/${SPEC}).`,
      'Missing: [gone](docs/gone.md). Fine: [close codes](docs/protocol.md#46-close-codes), [site](https://example.org/x).',
      'Wrong heading: [x](docs/protocol.md#47-nothing). In code, not a link: `[a](b.md)`.',
    ].join('\n');
    expect(brokenLinks('README.md', markdown, read).map((b) => `${b.line} ${b.target}: ${b.problem}`)).toEqual([
      `1 ../../${SHARED}/spec/${SPEC}: leaves the repository`,
      '2 docs/gone.md: no such file in the repository',
      '3 docs/protocol.md#47-nothing: no heading with the anchor #47-nothing',
    ]);
  });

  it('holds for every tracked Markdown file', () => {
    const markdownFiles = files.filter((file) => file.endsWith('.md'));
    expect(markdownFiles).toContain('README.md');
    expect(markdownFiles).toContain('docs/protocol.md');
    const broken = markdownFiles.flatMap((file) => brokenLinks(file, readRepoFile(file) ?? '', readRepoFile));
    expect(broken.map((b) => `${b.file}:${b.line} ${b.target}: ${b.problem}`)).toEqual([]);
  });
});

describe('the tests read only files in the repository', () => {
  it('has the Annex D vectors as a fixture with its source named', () => {
    expect(files).toContain('test/fixtures/iso18013-5/annex-d-vectors.json');
    expect(readRepoFile('test/fixtures/iso18013-5/README.md')).toMatch(/Annex D[\s\S]*TestVectors\.kt[\s\S]*af670c68e15fe85087409aa4c8a96944ac8f160d/);
  });
});
