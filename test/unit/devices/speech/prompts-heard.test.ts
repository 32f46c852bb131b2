/**
 * Every prompt the screen says, in every language, heard (issue 32): the screen's own catalogue of fixed
 * utterances (src/renderer/speech/utterances.ts `allPromptUtterances`: every customer screen, every error,
 * every kind of answer, × EN/ES/FR) spoken by the real built-in voice process and checked as
 * test/support/hear.ts checks a text — not silent, a sane length for its words, and the engine's phonemes
 * those Debian's eSpeak NG makes of the same text in the language's own voice (so a prompt sent with the wrong
 * language, or cut short, fails). Needs Debian's espeak-ng and sox; fails naming them when they are missing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { LANGUAGES } from '../../../../src/common/kiosk-api.js';
import { allPromptUtterances } from '../../../../src/renderer/speech/utterances.js';
import { hearUtterance, stopHearing, type HeardReport } from '../../../support/hear.js';

afterAll(stopHearing);

const prompts = allPromptUtterances();

describe('every prompt of the screen, heard in its language', { timeout: 600_000 }, () => {
  it('the catalogue covers every language with the same screens, none private', () => {
    for (const language of LANGUAGES) expect(prompts.filter((p) => p.language === language).length).toBeGreaterThan(15);
    expect(prompts.every((p) => !p.private)).toBe(true);
  });

  for (const language of LANGUAGES)
    it(`${language}: each prompt is heard as its text`, async () => {
      const reports: HeardReport[] = [];
      for (const prompt of prompts.filter((p) => p.language === language)) {
        const report = await hearUtterance(prompt.text, language);
        expect(report.problems, `${prompt.key}: ${prompt.text}`).toEqual([]);
        reports.push(report);
      }
      const seconds = reports.reduce((sum, r) => sum + r.seconds, 0);
      const worst = Math.max(...reports.map((r) => r.phonemeDistance));
      process.stderr.write(
        `${language}: ${reports.length} prompts heard, ${seconds.toFixed(1)} s of speech, worst phoneme distance ${worst.toFixed(3)}\n`,
      );
    });
});
