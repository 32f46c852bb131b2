/**
 * Diagnostics' recent events in words: every event name the kiosk logs (found in its sources, as the
 * service keeps them: src/service/diagnostics.ts) has a line in EN, ES and FR, and a name the screen does
 * not know gets the generic line rather than being shown bare.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LANGUAGES } from '../../../src/common/kiosk-api.js';
import { createI18n } from '../../../src/renderer/i18n/index.js';
import { eventText } from '../../../src/renderer/staff/diagnostic-texts.js';
import { eventResources, knownEvent } from '../../../src/renderer/staff/event-locales.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'qa' ? [] : sourceFiles(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Event names in log calls (`{ event: 'x' }`, `event: cond ? 'a' : 'b'`), `record(level, 'x')` and the keeper's named endings. */
function loggedEventNames(): Set<string> {
  const names = new Set<string>();
  for (const path of sourceFiles(join(REPO, 'src'))) {
    const source = readFileSync(path, 'utf8');
    for (const m of source.matchAll(/[{,]\s*event:\s*([^,}\n]+)/g))
      for (const q of (m[1] ?? '').replace(/[!=]== '[^']*'/g, '').matchAll(/'([a-z][a-z0-9_]+)'/g)) names.add(q[1] ?? '');
    for (const m of source.matchAll(/\.record\('(?:info|warn|error)', '([a-z][a-z0-9_]+)'/g)) names.add(m[1] ?? '');
    const recovering = /RECOVERING_EVENT[^=]*=\s*\{([^}]*)\}/.exec(source);
    if (recovering) for (const q of (recovering[1] ?? '').matchAll(/'([a-z][a-z0-9_]+)'/g)) names.add(q[1] ?? '');
  }
  return names;
}

describe('diagnostics events in words', () => {
  it('every event name the kiosk logs has a line', () => {
    const names = loggedEventNames();
    // The scan must find the events (a broken pattern would pass vacuously).
    expect(names.size).toBeGreaterThan(120);
    expect([...names].filter((n) => !knownEvent(n)).sort()).toEqual([]);
  });

  it('the line in each language; an unknown name gets the generic line, never the code alone', () => {
    for (const language of LANGUAGES) {
      const t = createI18n(language).t.bind(null) as (key: string) => string;
      expect(eventText('staff_unlocked', t)).toBe(eventResources[language].line.staff_unlocked);
      expect(eventText('backend_unavailable', t)).toBe(eventResources[language].line.backend_unavailable);
      expect(eventText('some_future_event', t)).toBe(eventResources[language].unknown);
      // Names that are object keys of every object, not event lines.
      expect(eventText('constructor', t)).toBe(eventResources[language].unknown);
      expect(eventText('__proto__', t)).toBe(eventResources[language].unknown);
    }
  });
});
