/**
 * The README's screen table says what the kiosk says aloud on each screen: every such line is a prompt the
 * screen really speaks in English (src/renderer/speech/utterances.ts), so the table cannot drift from the
 * code. Lines that describe rather than quote (starting "—", "The answer", "The badge") are left alone, and
 * an italic aside `*(…)*` after a quote is not part of it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allPromptUtterances } from '../../../src/renderer/speech/utterances.js';

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const english = new Set(
  allPromptUtterances()
    .filter((u) => u.language === 'en')
    .map((u) => u.text),
);

function saidAloud(): { screen: string; said: string }[] {
  const rows = readme.split('\n').filter((line) => line.startsWith('| **') && line.includes('](docs/screens/'));
  return rows.map((row) => {
    const cells = row.split(' | ');
    return { screen: (cells[0] ?? '').replace(/^\| \*\*|\*\*$/g, ''), said: (cells[2] ?? '').replace(/ \|$/, '') };
  });
}

describe("the README's speech column", () => {
  it('has a line for every screen of the table', () => {
    const rows = saidAloud();
    expect(rows.length).toBeGreaterThan(12);
    for (const row of rows) expect(row.said.trim(), row.screen).not.toBe('');
  });

  it('quotes only prompts the screen speaks', () => {
    const quotes = saidAloud()
      .map((row) => ({ ...row, quote: row.said.replace(/\s*\*\(.*\)\*$/, '').trim() }))
      .filter((row) => !/^(—|The answer|The badge)/.test(row.quote));
    expect(quotes.length).toBeGreaterThan(10);
    for (const row of quotes) expect(english.has(row.quote), `${row.screen}: "${row.quote}"`).toBe(true);
  });
});
