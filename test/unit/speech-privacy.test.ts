/**
 * The speaker never says any of the holder's data (issue 32; EN 301 549 §5.1.3.9): outcomes built from the
 * QA wallet's holder data (src/qa/sim/virtual-wallet/credential.ts, what the virtual phone discloses and the
 * mock backend passes on) and from a second holder with values of every shape, for every request kind, every
 * verdict, every screen and every language — no speaker utterance contains a disclosed value. Through a
 * headset the answer may add only the elements staff allowed, and only for a verified document.
 */
import { describe, expect, it } from 'vitest';
import { LANGUAGES } from '../../src/common/kiosk-api.js';
import type { KioskView, OutcomeView } from '../../src/common/kiosk-view.js';
import { DEFAULT_HOLDER_DATA, type MdlHolderData } from '../../src/qa/sim/virtual-wallet/credential.js';
import { CUSTOMER_SCREENS } from '../../src/renderer/screens/screen-name.js';
import { fixedView, outcomeView, utteranceFor, type Utterance } from '../../src/renderer/speech/utterances.js';

const NS = 'org.iso.18013.5.1';

const OTHER_HOLDER: MdlHolderData = {
  ...DEFAULT_HOLDER_DATA,
  family_name: 'Zyxwbauer',
  given_name: 'Quentinette',
  birth_date: '1957-11-30',
  issuing_authority: 'Qwerty Licensing Bureau',
  document_number: 'QX7788991',
  administrative_number: 'ZZ-4411-0099',
  birth_place: 'Vieux-Qwertyville',
  resident_address: '77 Rue Zorglub',
  resident_city: 'Qwertyville',
  resident_state: 'Zorgland',
  resident_postal_code: '71993',
  family_name_national_character: 'Зыхвбауэр',
  given_name_national_character: 'Квентинетта',
  height: 187,
  weight: 94,
};

/** The values as the response carries them (strings, numbers, nested privileges), and the needles to look for. */
function holderResponse(holder: MdlHolderData): { response: Record<string, Record<string, unknown>>; needles: string[] } {
  const mdl: Record<string, unknown> = {
    ...holder,
    age_in_years: 69,
    age_birth_year: Number(holder.birth_date.slice(0, 4)),
    age_over_21: true,
    age_over_18: true,
  };
  const needles = new Set<string>();
  const collect = (value: unknown): void => {
    if (typeof value === 'string' && value.length >= 3) needles.add(value);
    else if (typeof value === 'number' && Math.abs(value) >= 10 && value !== 18 && value !== 21) needles.add(String(value));
    else if (Array.isArray(value)) value.forEach(collect);
    else if (typeof value === 'object' && value !== null) Object.values(value).forEach(collect);
  };
  collect(mdl);
  // Parts of values a voice could say on their own (a year, a street name).
  needles.add(holder.birth_date.slice(0, 4));
  return { response: { [NS]: mdl }, needles: [...needles] };
}

function outcomes(response: Record<string, Record<string, unknown>>): OutcomeView[] {
  const base = outcomeView({ answer: { kind: 'age', threshold: 21, result: 'met', missing: [] }, response });
  return [
    base,
    { ...base, answer: { kind: 'age', threshold: 21, result: 'not_met', missing: [] } },
    { ...base, answer: { kind: 'elements', result: 'met', missing: [] } },
    { ...base, answer: { kind: 'elements', result: 'not_met', missing: [{ namespace: NS, identifier: 'portrait', required: true }] } },
    { ...base, verdict: 'rejected', reasons: ['errors_reported'], issuerAuthentication: 'Invalid' },
    { ...base, verdict: 'undetermined', issuerAuthentication: null, deviceAuthentication: null },
    { ...base, errors: { [NS]: { family_name: 'tampered' } } },
  ];
}

function view(phase: KioskView['phase'], outcome: OutcomeView | null): KioskView {
  return fixedView(phase, {
    prompt: phase === 'transferring' ? 'approve_on_phone' : 'tap_or_scan',
    transport: 'nfc',
    outcome,
    error: phase === 'error' ? { code: 'timeout', detail: 'holder Jane Doe D1234567', retryable: true } : null,
    profile: 'identity',
  });
}

const ALL_ELEMENTS = Object.keys({ ...DEFAULT_HOLDER_DATA, portrait: '', age_over_21: true });

/** The needle as a word of its own (case-insensitive): "USA" is a value, the "usa" of "pausar" is not. */
function says(text: string, needle: string): boolean {
  const escaped = needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, 'iu').test(text);
}

function everyUtterance(response: Record<string, Record<string, unknown>>, privateMode: boolean, allowed: readonly string[]): Utterance[] {
  const out: Utterance[] = [];
  for (const language of LANGUAGES)
    for (const screen of [...CUSTOMER_SCREENS, 'cannot_verify' as const])
      for (const outcome of outcomes(response)) {
        const phase = screen === 'disconnected' || screen === 'waiting' ? 'result' : screen;
        const utterance = utteranceFor({
          screen,
          view: view(phase, outcome),
          language,
          sayKeys: true,
          private: privateMode,
          privateElements: allowed,
        });
        if (utterance) out.push(utterance);
      }
  return out;
}

describe('speech privacy', () => {
  for (const [name, holder] of [
    ['the QA wallet holder', DEFAULT_HOLDER_DATA],
    ['a second holder', OTHER_HOLDER],
  ] as const) {
    it(`the speaker never says a value of ${name}, whatever staff allowed for headsets`, () => {
      const { response, needles } = holderResponse(holder);
      expect(needles.length).toBeGreaterThan(15);
      const utterances = everyUtterance(response, false, ALL_ELEMENTS);
      expect(utterances.length).toBeGreaterThan(100);
      for (const utterance of utterances) {
        expect(utterance.private).toBe(false);
        const leaked = needles.filter((needle) => says(utterance.text, needle));
        expect(leaked, `${utterance.key} (${utterance.language}): ${utterance.text}`).toEqual([]);
      }
    });

    it(`a headset says only the allowed elements of ${name}, only for a verified document`, () => {
      const { response, needles } = holderResponse(holder);
      const allowedValues = [holder.given_name, holder.given_name.slice(0, 4)];
      const utterances = everyUtterance(response, true, ['given_name']);
      const withData = utterances.filter((u) => u.private);
      expect(withData.length).toBeGreaterThan(0);
      for (const utterance of utterances) {
        const leaked = needles.filter((needle) => !allowedValues.some((value) => value.includes(needle)) && says(utterance.text, needle));
        expect(leaked, `${utterance.key}: ${utterance.text}`).toEqual([]);
        if (!utterance.private) expect(utterance.text).not.toContain(holder.given_name);
        else expect(utterance.key).toMatch(/^outcome\.(age_accepted|accepted)\.private$/);
      }
    });
  }
});
