/**
 * Every string on screen is translated: every namespace has the same keys in every language (plural
 * forms aside), and every key the renderer's source asks for by literal (`t('key')`, `t('ns:key')`,
 * `i18nKey="key"`) exists in English.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LANGUAGES } from '../../../src/common/kiosk-api.js';
import { bundledResources, NAMESPACES, type Namespace } from '../../../src/renderer/i18n/index.js';

const RENDERER = join(import.meta.dirname, '../../../src/renderer');
const PLURAL = /_(zero|one|two|few|many|other)$/;

/** `a.b.c` → value, for every string leaf. */
function flatten(value: unknown, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.set(prefix, value);
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|tsx)$/.test(entry) && !/locales?\.ts$|common-(en|es|fr)\.ts$/.test(entry)) out.push(path);
  }
  return out;
}

/** The namespace a file's bare `t('key')` resolves in: its `useTranslation('ns')`, else its folder's. */
function defaultNamespace(path: string, source: string): Namespace {
  const declared = /useTranslation\(\s*\[?\s*['"](\w+)['"]/.exec(source)?.[1];
  if (declared && (NAMESPACES as readonly string[]).includes(declared)) return declared as Namespace;
  const folder = relative(RENDERER, path).split(/[\\/]/)[0];
  if (folder === 'outcome' || folder === 'qr') return folder;
  return 'common';
}

/** Literal keys used in a source file, with the namespace each resolves in. */
export function usedKeys(path: string, source: string): { ns: string; key: string }[] {
  const ns = defaultNamespace(path, source);
  const found: { ns: string; key: string }[] = [];
  const patterns = [/(?<![\w$])t\(\s*(['"])([^'"\n]+?)\1/g, /\bi18nKey=(['"])([^'"\n]+?)\1/g];
  for (const pattern of patterns) {
    for (const match of source.matchAll(pattern)) {
      const literal = match[2] ?? '';
      const colon = literal.indexOf(':');
      const head = colon > 0 ? literal.slice(0, colon) : '';
      if ((NAMESPACES as readonly string[]).includes(head)) found.push({ ns: head, key: literal.slice(colon + 1) });
      else found.push({ ns, key: literal });
    }
  }
  return found;
}

function hasKey(keys: Map<string, unknown>, key: string): boolean {
  return keys.has(key) || keys.has(`${key}_other`);
}

describe('translations', () => {
  const resources = bundledResources();

  for (const ns of NAMESPACES) {
    it(`namespace ${ns}: every language has every English key, and no key English lacks`, () => {
      const english = flatten(resources.en[ns]);
      expect(english.size).toBeGreaterThan(0);
      for (const lng of LANGUAGES) {
        if (lng === 'en') continue;
        const other = flatten(resources[lng][ns]);
        const missing = [...english.keys()].filter((k) => !other.has(k));
        const extra = [...other.keys()].filter((k) => !english.has(k) && !(PLURAL.test(k) && english.has(k.replace(PLURAL, '_other'))));
        expect(missing, `${lng}/${ns} is missing`).toEqual([]);
        expect(extra, `${lng}/${ns} has keys English lacks`).toEqual([]);
        const empty = [...other.entries()].filter(([, v]) => typeof v !== 'string' || v.trim() === '').map(([k]) => k);
        expect(empty, `${lng}/${ns} has empty or non-string values`).toEqual([]);
      }
    });
  }

  it('every literal key used in src/renderer exists in English', () => {
    const english = Object.fromEntries(NAMESPACES.map((ns) => [ns, flatten(resources.en[ns])])) as Record<Namespace, Map<string, unknown>>;
    const missing: string[] = [];
    let checked = 0;
    for (const path of sourceFiles(RENDERER)) {
      const source = readFileSync(path, 'utf8');
      for (const { ns, key } of usedKeys(path, source)) {
        checked++;
        const keys = english[ns as Namespace] as Map<string, unknown> | undefined;
        if (!keys || !hasKey(keys, key)) missing.push(`${relative(RENDERER, path)}: ${ns}:${key}`);
      }
    }
    expect(missing).toEqual([]);
    // The scan must actually find the screens' keys (a broken pattern would pass vacuously).
    expect(checked).toBeGreaterThan(150);
  });

  it('the key scanner resolves namespaces and prefixes', () => {
    const src =
      "const { t } = useTranslation('qr'); t('camera.off'); t('common:lang.en'); format('not.counted'); <Trans i18nKey=\"outcome:verdict.x\" />";
    expect(usedKeys(join(RENDERER, 'qr/X.tsx'), src)).toEqual([
      { ns: 'qr', key: 'camera.off' },
      { ns: 'common', key: 'lang.en' },
      { ns: 'outcome', key: 'verdict.x' },
    ]);
    expect(usedKeys(join(RENDERER, 'screens/X.tsx'), "t('ready.title')")).toEqual([{ ns: 'common', key: 'ready.title' }]);
  });

  it('interpolated values have the same placeholders in every language', () => {
    for (const ns of NAMESPACES) {
      const english = flatten(resources.en[ns]);
      for (const lng of LANGUAGES) {
        const other = flatten(resources[lng][ns]);
        for (const [key, value] of english) {
          const theirs = other.get(key);
          if (typeof value !== 'string' || typeof theirs !== 'string') continue;
          const names = (s: string): string[] => [...s.matchAll(/\{\{\s*(\w+)/g)].map((m) => m[1] ?? '').sort();
          expect(names(theirs), `${lng}/${ns}:${key}`).toEqual(names(value));
        }
      }
    }
  });
});
