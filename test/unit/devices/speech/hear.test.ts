/**
 * The built-in voice heard (test/support/hear.ts): sample prompts in English, Spanish and French spoken by
 * the real voice process are not silent, last a sane time, and carry the phonemes Debian's eSpeak NG makes
 * of the same text in the language's voice; a wrong voice and silence are caught. Needs Debian's espeak-ng
 * and sox (.ci/run installs them): without them these tests fail, naming the package.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SPEECH_SAMPLE_RATE } from '../../../../src/common/speech.js';
import { audioProblems, editDistance, hearUtterance, normalisePhonemes, stopHearing } from '../../../support/hear.js';

afterAll(stopHearing);

const SAMPLES = {
  en: [
    'Ready. Hold your phone near the reader, or show the QR code on your phone to the camera.',
    'Approve the request on your phone.',
    'Age check: 21 or older. Accepted.',
  ],
  es: ['Listo. Acerque su teléfono al lector o muestre el código QR a la cámara.', 'Apruebe la solicitud en su teléfono.'],
  fr: ['Prêt. Approchez votre téléphone du lecteur ou montrez le code QR à la caméra.', "Contrôle de l'âge : 21 ans ou plus. Accepté."],
} as const;

describe('hearing the built-in voice', { timeout: 120_000 }, () => {
  for (const [language, texts] of Object.entries(SAMPLES) as [keyof typeof SAMPLES, readonly string[]][]) {
    it(`${language}: each sample prompt is heard as its text`, async () => {
      for (const text of texts) {
        const report = await hearUtterance(text, language);
        expect(report.problems, text).toEqual([]);
        expect(report.rms).toBeGreaterThan(0.01);
        expect(report.seconds).toBeGreaterThan(1);
      }
    });
  }

  it('catches the wrong voice: Spanish and French text in the English voice, English text in the Spanish one', async () => {
    const spanish = await hearUtterance(SAMPLES.es[1], 'es', { voice: 'en-us' });
    expect(spanish.problems.join('\n')).toMatch(/phonemes 0\.\d+ away from Debian's espeak-ng -v es/);
    const french = await hearUtterance(SAMPLES.fr[0], 'fr', { voice: 'en-us' });
    expect(french.problems.join('\n')).toMatch(/away from Debian's espeak-ng -v fr/);
    const english = await hearUtterance(SAMPLES.en[1], 'en', { voice: 'es' });
    expect(english.problems.join('\n')).toMatch(/away from Debian's espeak-ng -v en-us/);
  });

  it('catches silence and a truncated utterance', () => {
    const text = 'Please remove your phone.';
    const twoSeconds = new Uint8Array(2 * SPEECH_SAMPLE_RATE * 2);
    expect(audioProblems(twoSeconds, text).problems.join('\n')).toMatch(/^silent: RMS amplitude 0 under 0\.01/);
    // A loud tenth of a second is not silent, but far too short for the text.
    const tone = new Int16Array(SPEECH_SAMPLE_RATE / 10).map((_, i) => Math.round(8_000 * Math.sin(i / 5)));
    const short = audioProblems(new Uint8Array(tone.buffer), text);
    expect(short.problems).toHaveLength(1);
    expect(short.problems[0]).toMatch(/^length 0\.10 s outside/);
  });

  it('compares phonemes after normalising what the two versions print differently', () => {
    expect(normalisePhonemes('h_ˈəʊ_l_d j_ɔː\n')).toEqual(normalisePhonemes('(en)hˈəʊld jɔː(fr)'));
    expect(editDistance(Array.from('kitten'), Array.from('sitting'))).toBe(3);
    expect(editDistance([], Array.from('abc'))).toBe(3);
  });
});
