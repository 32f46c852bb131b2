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
  protocolSections,
  readText,
  repoRoot,
  trackedFiles,
  unresolvedSectionCitations,
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
  referenceNotes: 'lists the reader in either role, ' + 'refer' + 'ence \u00a77.1).',
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
      "import { forkLauncher } from '../shared/child-launcher.js';",
      '// BlueZ src/shared/crypto.c opens AF_ALG sockets',
      '// bleno truncates notifications (docs/ble-libraries.md §4; docs/ble-limits.md)',
      '// noble.md and ble-limits.md are not outside documents',
      '// test/fixtures/iso18013-5/annex-d-vectors.json (ISO/IEC 18013-5 Annex D)',
    ];
    for (const line of ours) expect(findOutsideReferences('ours.ts', line), line).toEqual([]);
  });

  it('holds for every tracked text file', () => {
    const found = files.flatMap((file) => {
      const text = readText(root, file);
      return text === undefined ? [] : findOutsideReferences(file, text);
    });
    expect(found.map((f) => `${f.file}:${f.line} (${f.rule}): ${f.text}`)).toEqual([]);
  });
});

describe('every § in the code names its document', () => {
  const protocol = protocolSections(readRepoFile('docs/protocol.md') ?? '');
  // Assembled so this file does not match itself.
  const REF = 'refer' + 'ence';
  const SEC = '§';

  it('reads the section numbers of docs/protocol.md', () => {
    expect([...protocol]).toEqual(expect.arrayContaining(['2.5', '4.3', '4.6', '7.3', '10']));
    expect(protocol.has('1.7')).toBe(false);
  });

  it("reports a planted citation of the developers' notes, and a bare number that is no protocol section", () => {
    const planted = [
      `// Handover Select as wallets send it (${REF} ${SEC}1.7)`,
      `// NDEF file plan (${SEC}1.4 step 4.1)`,
      `// deviceMac (ISO/IEC 18013-5 ${SEC}9.1.3; ${REF} ${SEC}4.3)`,
    ];
    expect(planted.map((line) => unresolvedSectionCitations('planted.ts', line, protocol).map((c) => c.section))).toEqual([
      ['1.7'],
      ['1.4'],
      ['4.3'],
    ]);
  });

  it('accepts a section of a named document, and a bare one of docs/protocol.md', () => {
    const ours = [
      '// ble_write runs in order (§4.4), closes with 1002 (spec §4.6)',
      '// session encryption (ISO/IEC 18013-5 §9.1.1), CBOR preferred encoding (RFC 8949 §4.2)',
      '// 512 bytes at most (Bluetooth Core 5.x Vol 3 Part F §3.2.9); Le (ISO/IEC 7816-4 §5.1)',
      "// bleno's bindings (docs/ble-libraries.md §2); the key file (installer guide §5.4)",
    ];
    for (const line of ours) expect(unresolvedSectionCitations('ours.ts', line, protocol), line).toEqual([]);
  });

  it('holds for every tracked code file', () => {
    const found = files
      .filter((file) => /^(src|test|tools)\/.*\.(ts|js|cjs|mjs|c|sh)$/.test(file))
      .flatMap((file) => unresolvedSectionCitations(file, readText(root, file) ?? '', protocol));
    expect(found.map((c) => `${c.file}:${c.line} §${c.section}: ${c.text}`)).toEqual([]);
  });
});

describe('README and docs link only to files in the repository', () => {
  it('computes heading anchors as GitHub does', () => {
    expect(headingAnchor('4.6 WebSocket close codes the kiosk sends')).toBe('46-websocket-close-codes-the-kiosk-sends');
    expect(headingAnchor('Mock backend: how it reads the spec\'s "not shown" parts')).toBe(
      'mock-backend-how-it-reads-the-specs-not-shown-parts',
    );
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
    expect(readRepoFile('test/fixtures/iso18013-5/README.md')).toMatch(
      /Annex D[\s\S]*TestVectors\.kt[\s\S]*af670c68e15fe85087409aa4c8a96944ac8f160d/,
    );
  });
});

describe('no merge left half-done', () => {
  // A conflict resolved in a hurry once left both sides of two README and protocol paragraphs on main.
  const MARKER = /^(<{7}|>{7})( |$)/m;
  const conflicted = (text: string): boolean => MARKER.test(text);

  it('finds a planted conflict and passes an ordinary Markdown rule', () => {
    expect(conflicted(['text', '<'.repeat(7) + ' HEAD', 'a', '='.repeat(7), 'b', '>'.repeat(7) + ' branch'].join('\n'))).toBe(true);
    expect(conflicted('a heading\n=======\n')).toBe(false);
  });

  it('holds for every tracked text file', () => {
    const left = files.filter((file) => conflicted(readRepoFile(file) ?? ''));
    expect(left).toEqual([]);
  });
});
