/**
 * What the kiosk would say aloud for a real verification by every wallet profile (issue 32): each profile's
 * phone verified by NFC with real crypto through the mock backend (the `identity` request, so the outcome is
 * full of the holder's data), and every view the kiosk published turned into the screen's utterance, in every
 * language. On the speaker no utterance holds any disclosed value; through a headset with `given_name` allowed,
 * the answer adds the given name and nothing else of the holder's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { LANGUAGES } from '../../src/common/kiosk-api.js';
import type { KioskView } from '../../src/common/kiosk-view.js';
import { DEFAULT_HOLDER_DATA } from '../../src/qa/sim/virtual-wallet/credential.js';
import { PHONE_PROFILE_NAMES, type PhoneProfileName } from '../../src/qa/sim/virtual-wallet/profiles.js';
import { utteranceFor, type Utterance } from '../../src/renderer/speech/utterances.js';
import { startE2e, type E2eStack } from '../support/e2e-stack.js';

let stack: E2eStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/** The holder's values as they could be said: every string of 3+ characters, the birth year, long numbers. */
const NEEDLES: readonly string[] = (() => {
  const found = new Set<string>();
  for (const value of Object.values(DEFAULT_HOLDER_DATA)) {
    if (typeof value === 'string' && value.length >= 3) found.add(value);
    if (typeof value === 'number' && value >= 100) found.add(String(value));
  }
  found.add(DEFAULT_HOLDER_DATA.birth_date.slice(0, 4));
  return [...found];
})();

function say(view: KioskView, privateMode: boolean): Utterance[] {
  return LANGUAGES.flatMap((language) => {
    const u = utteranceFor({
      screen: view.phase,
      view,
      language,
      sayKeys: true,
      private: privateMode,
      privateElements: privateMode ? ['given_name'] : [],
    });
    return u === null ? [] : [u];
  });
}

async function verifiedViews(profile: PhoneProfileName): Promise<KioskView[]> {
  stack = await startE2e({ profile, config: { profile: 'identity' } });
  await stack.ready();
  stack.rig.tap();
  const report = await stack.nextReport(20_000);
  expect(report.outcome).toMatchObject({ verdict: 'verified' });
  return [...stack.views];
}

describe('speech for a real verification by each wallet profile', () => {
  for (const profile of PHONE_PROFILE_NAMES)
    it(`${profile}: the speaker says none of the holder's data; a headset adds only the allowed given name`, async () => {
      const views = await verifiedViews(profile);
      expect(views.some((v) => v.phase === 'result')).toBe(true);
      const spoken = views.flatMap((v) => say(v, false));
      expect(spoken.length).toBeGreaterThan(5);
      for (const u of spoken) {
        expect(u.private).toBe(false);
        for (const needle of NEEDLES) expect(u.text, `${u.key} (${u.language})`).not.toContain(needle);
      }
      const result = views.filter((v) => v.phase === 'result');
      const headset = result.flatMap((v) => say(v, true));
      const answers = headset.filter((u) => u.private);
      expect(answers.length).toBe(LANGUAGES.length * result.length);
      for (const u of answers) {
        expect(u.text).toContain(DEFAULT_HOLDER_DATA.given_name);
        for (const needle of NEEDLES.filter((n) => !DEFAULT_HOLDER_DATA.given_name.includes(n)))
          expect(u.text, `${u.key} (${u.language})`).not.toContain(needle);
      }
    }, 60_000);
});
