/**
 * Checks that the repository needs nothing beside it: no tracked file points at the developers' reference
 * folder that sits next to a checkout, or at this machine's paths, and every relative Markdown link resolves
 * to a file (and heading) in the repository. The test is test/unit/repo-stands-alone.test.ts; the CI step
 * that proves it in practice is `bash .ci/run` (it runs in a copy of the checkout with nothing beside it).
 *
 * The forbidden names are assembled from parts so this file does not match itself.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

const MD = '.md';
/** The reference documents that live outside the repository (and its copies of them do not exist). */
const OUTSIDE_DOCUMENTS = ['relay-protocol', 'DESIGN', 'iso18013-5', 'pcsc', 'ble', 'kiosk-ux', 'browser-and-qr'];

export interface OutsideReferenceRule {
  readonly name: string;
  readonly pattern: RegExp;
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export const OUTSIDE_REFERENCE_RULES: readonly OutsideReferenceRule[] = [
  // The folder beside the checkout, reached relatively or by its spec/reference subfolders. (`src/devices/`
  // has a room of that name, so the bare folder name is not enough.)
  {
    name: 'the shared reference folder',
    pattern: new RegExp(
      `(?:\\.\\./)+${'shar' + 'ed'}/(?!abort|availability|safe-call|child-channel|child-launcher|restart-backoff)|\\b${'shar' + 'ed'}/(?:spec|reference|hooks|DESIGN)\\b`,
    ),
  },
  { name: "this machine's work folder", pattern: new RegExp(`(?<![\\w.-])/${'wo' + 'rk'}/`) },
  // The developers' notes cited by section ("reference" then a section sign and a number).
  { name: "the developers' reference notes", pattern: new RegExp(`\\b${'refer' + 'ence'},? \\u00a7\\s?\\d`, 'i') },
  ...OUTSIDE_DOCUMENTS.map((doc) => ({
    name: `the outside document ${doc}${MD}`,
    // The short BLE name but not `noble` or `docs/ble-limits`; the design both with `.md` and as a bare section.
    pattern: new RegExp(`(?<![\\w-])${escape(doc + MD)}${doc === 'DESIGN' ? `|\\b${doc} §` : ''}`),
  })),
];

export interface OutsideReference {
  readonly file: string;
  readonly line: number;
  readonly rule: string;
  readonly text: string;
}

/** Every line of `text` that points outside the repository. */
export function findOutsideReferences(file: string, text: string): OutsideReference[] {
  const found: OutsideReference[] = [];
  const lines = text.split('\n');
  lines.forEach((lineText, index) => {
    for (const rule of OUTSIDE_REFERENCE_RULES) {
      if (rule.pattern.test(lineText)) found.push({ file, line: index + 1, rule: rule.name, text: lineText.trim().slice(0, 160) });
    }
  });
  return found;
}

export function repoRoot(): string {
  return execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
}

/** Tracked files that exist in the work tree (a file deleted but not yet committed is skipped). */
export function trackedFiles(root: string): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    .split('\0')
    .filter((path) => path !== '' && existsSync(join(root, path)) && statSync(join(root, path)).isFile());
}

/** Text of a tracked file, or undefined for a binary one (a NUL byte in its first 8 KiB, as git decides). */
export function readText(root: string, path: string): string | undefined {
  const bytes = readFileSync(join(root, path));
  if (bytes.subarray(0, 8192).includes(0)) return undefined;
  return bytes.toString('utf8');
}

// ---------------------------------------------------------------- Markdown links

export interface BrokenLink {
  readonly file: string;
  readonly line: number;
  readonly target: string;
  readonly problem: string;
}

/** GitHub's heading anchor: lower case, punctuation dropped (but `-` and `_`), spaces → `-`. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown text's headings (duplicates numbered `-1`, `-2`, as GitHub does). */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const match = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (match?.[1] === undefined) continue;
    const base = headingAnchor(match[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Inline links and images `[text](target)` outside code fences and code spans. */
export function markdownLinks(markdown: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  let fenced = false;
  markdown.split('\n').forEach((line, index) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    const withoutCode = line.replace(/`[^`]*`/g, '');
    for (const match of withoutCode.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      if (match[1] !== undefined) links.push({ line: index + 1, target: match[1] });
    }
  });
  return links;
}

/**
 * Relative links of one Markdown file that do not resolve inside the repository: a missing file, a path
 * that leaves the repository, or an anchor no heading of the target has. `read` gives a repository file's
 * text (undefined when it does not exist).
 */
export function brokenLinks(file: string, markdown: string, read: (path: string) => string | undefined): BrokenLink[] {
  const broken: BrokenLink[] = [];
  for (const { line, target } of markdownLinks(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …: not a file of ours
    const [pathPart = '', anchor] = target.split('#', 2);
    const path = pathPart === '' ? file : normalize(join(dirname(file), decodeURIComponent(pathPart)));
    if (path.startsWith('..') || path.startsWith(sep) || relative('.', path).startsWith('..')) {
      broken.push({ file, line, target, problem: 'leaves the repository' });
      continue;
    }
    const text = read(path.split(sep).join('/'));
    if (text === undefined) {
      broken.push({ file, line, target, problem: 'no such file in the repository' });
      continue;
    }
    if (anchor !== undefined && anchor !== '' && path.endsWith(MD) && !anchorsOf(text).has(anchor.toLowerCase())) {
      broken.push({ file, line, target, problem: `no heading with the anchor #${anchor}` });
    }
  }
  return broken;
}

// ---------------------------------------------------------------- section citations in code

/**
 * Words that name the document a `§` belongs to, when they come shortly before it on the same line: public
 * standards and specifications (by name and number: "NDEF" alone is a topic, "NDEF 1.0" a document), a
 * library's source files, and this repository's docs ("spec" and "guide" are docs/protocol.md and
 * docs/installer-guide.md).
 */
const NAMED_DOCUMENT = new RegExp(
  [
    'ISO',
    'IEC',
    '18013-[57]',
    '7816',
    'RFC ?\\d+',
    'Core',
    'Vol\\.? ?\\d',
    'Part [A-Z]\\b',
    'NFC Forum',
    'Connection Handover',
    '\\bCH ?\\d',
    'Type 4 Tag',
    'T4T',
    'TNEP ?\\d',
    'NDEF ?\\d',
    'Annex',
    'CSS',
    'X\\.509',
    'FIPS',
    'SP ?800',
    'W3C',
    'EN 301 ?549',
    'WCAG',
    // a document of ours or a source file of a library (Multipaz `.kt`, isomdl `.rs`, bleno `.mm`, BlueZ `.c`)
    '\\.(?:md|kt|rs|mm|c|h|js|ts|swift|go)\\b',
    '\\bguide\\b',
    '\\bspec\\b',
  ].join('|'),
  'i',
);
const CITATION = /§\s?(\d+(?:\.\d+)*)/g;
/** How far back on the line a document's name may stand from its `§` ("ISO/IEC 18013-5:2021 §7.2.1", "spec §4.2, §4.3"). */
const NAME_REACH = 80;

export interface SectionCitation {
  readonly file: string;
  readonly line: number;
  readonly section: string;
  readonly text: string;
}

/** The numbers of docs/protocol.md's numbered headings ("4", "4.3", "10"): what a bare `§` in code means. */
export function protocolSections(markdown: string): Set<string> {
  const sections = new Set<string>();
  for (const line of markdown.split('\n')) {
    const match = /^#{2,6}\s+(\d+(?:\.\d+)*)\.?\s/.exec(line);
    if (match?.[1] !== undefined) sections.add(match[1]);
  }
  return sections;
}

/**
 * `§` citations in a code file that a reader of the repository cannot follow: one that names no document
 * and is no section of docs/protocol.md (the convention docs/protocol.md states), or one that cites "the
 * reference" (the developers' own notes, which are not in the repository).
 */
export function unresolvedSectionCitations(file: string, text: string, protocol: ReadonlySet<string>): SectionCitation[] {
  const found: SectionCitation[] = [];
  text.split('\n').forEach((lineText, index) => {
    for (const match of lineText.matchAll(CITATION)) {
      const section = match[1] ?? '';
      const before = lineText.slice(Math.max(0, match.index - NAME_REACH), match.index);
      const citesTheReference = /\breference\s*$/i.test(before);
      if (!citesTheReference && (NAMED_DOCUMENT.test(before) || protocol.has(section))) continue;
      found.push({ file, line: index + 1, section, text: lineText.trim().slice(0, 160) });
    }
  });
  return found;
}
