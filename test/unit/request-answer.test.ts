/**
 * The answer to the request (src/kiosk/request-answer.ts): judged once in the core for the screen, the
 * CLI, the logs, diagnostics and the health record. An age request follows ISO/IEC 18013-5 §7.2.5 (the
 * nearest statement answers); any other request is met when its required elements were disclosed; only a
 * verified document answers.
 */
import { describe, expect, it } from 'vitest';
import type { OutcomeView } from '../../src/common/kiosk-view.js';
import { outcomeFromComplete, outcomeFromResult } from '../../src/kiosk/outcome.js';
import { BUILT_IN_PROFILES, MANDATORY_MDL_ELEMENTS, MDL_NAMESPACE } from '../../src/kiosk/profiles.js';
import { ageRequestThreshold, answerFor, type AskedRequest } from '../../src/kiosk/request-answer.js';

const NS = MDL_NAMESPACE;
const asked = (name: 'age_over_18' | 'age_over_21' | 'identity' | 'full'): AskedRequest => {
  const profile = BUILT_IN_PROFILES[name];
  if (!profile) throw new Error(name);
  return profile.required === undefined
    ? { namespaces: profile.namespaces }
    : { namespaces: profile.namespaces, required: profile.required };
};
const verified = (elements: Record<string, unknown>): Pick<OutcomeView, 'verdict' | 'response'> => ({
  verdict: 'verified',
  response: { [NS]: elements },
});

describe('age requests', () => {
  it('an age request asks age_over_NN statements and at most the portrait; its threshold is the smallest NN asked', () => {
    expect(ageRequestThreshold(asked('age_over_21').namespaces)).toBe(21);
    expect(ageRequestThreshold(asked('age_over_18').namespaces)).toBe(18);
    expect(ageRequestThreshold({ [NS]: ['age_over_65', 'age_over_25'] })).toBe(25);
    expect(ageRequestThreshold(asked('identity').namespaces)).toBeUndefined();
    expect(ageRequestThreshold(asked('full').namespaces)).toBeUndefined();
    expect(ageRequestThreshold({ [NS]: ['portrait'] })).toBeUndefined();
    expect(ageRequestThreshold({ 'org.example': ['age_over_21'] })).toBeUndefined();
  });

  it('met, not met, undetermined; nearest statements (ISO/IEC 18013-5 §7.2.5): age_over_25 true means 21 or older, age_over_18 false means not', () => {
    const result = (elements: Record<string, unknown>): string =>
      answerFor(verified({ portrait: 'x', ...elements }), asked('age_over_21')).result;
    expect(result({ age_over_21: true })).toBe('met');
    expect(result({ age_over_21: false })).toBe('not_met');
    expect(result({})).toBe('undetermined');
    expect(result({ age_over_21: 'true' })).toBe('undetermined');
    expect(result({ age_over_25: true })).toBe('met');
    expect(result({ age_over_18: false })).toBe('not_met');
    expect(result({ age_over_25: false })).toBe('undetermined');
    expect(result({ age_over_18: true })).toBe('undetermined');
    // Contradicting statements: say nothing rather than pick one.
    expect(result({ age_over_25: true, age_over_18: false })).toBe('undetermined');
  });

  it('only a verified document answers: rejected or undetermined outcomes are undetermined, whatever they say', () => {
    for (const verdict of ['rejected', 'undetermined'] as const) {
      expect(answerFor({ verdict, response: { [NS]: { age_over_21: true } } }, asked('age_over_21')).result).toBe('undetermined');
    }
  });

  it('missing: the portrait when withheld; the age statement only when nothing answered it', () => {
    expect(answerFor(verified({ age_over_25: true }), asked('age_over_21'))).toEqual({
      kind: 'age',
      threshold: 21,
      result: 'met',
      missing: [{ namespace: NS, identifier: 'portrait', required: true }],
    });
    expect(answerFor(verified({ portrait: 'x' }), asked('age_over_21')).missing).toEqual([
      { namespace: NS, identifier: 'age_over_21', required: true },
    ]);
  });
});

describe('element requests', () => {
  it('identity: met when every element asked was disclosed, not met when one is missing (listed), undetermined unless verified', () => {
    const all = Object.fromEntries((BUILT_IN_PROFILES.identity?.namespaces[NS] ?? []).map((e) => [e, 'x']));
    expect(answerFor(verified(all), asked('identity'))).toEqual({ kind: 'elements', result: 'met', missing: [] });
    const some = Object.fromEntries(Object.entries(all).filter(([e]) => e !== 'portrait' && e !== 'document_number'));
    expect(answerFor(verified(some), asked('identity'))).toEqual({
      kind: 'elements',
      result: 'not_met',
      missing: [
        { namespace: NS, identifier: 'portrait', required: true },
        { namespace: NS, identifier: 'document_number', required: true },
      ],
    });
    expect(answerFor({ verdict: 'rejected', response: { [NS]: some } }, asked('identity')).result).toBe('undetermined');
  });

  it('full: the optional elements a document need not carry are listed but do not make it not met; a mandatory one does', () => {
    const mandatory = Object.fromEntries(MANDATORY_MDL_ELEMENTS.map((e) => [e, 'x']));
    const met = answerFor(verified(mandatory), asked('full'));
    expect(met.result).toBe('met');
    expect(met.missing.length).toBeGreaterThan(10);
    expect(met.missing.every((m) => !m.required)).toBe(true);
    const withoutOne = Object.fromEntries(Object.entries(mandatory).filter(([e]) => e !== 'un_distinguishing_sign'));
    const notMet = answerFor(verified(withoutOne), asked('full'));
    expect(notMet.result).toBe('not_met');
    expect(notMet.missing.filter((m) => m.required)).toEqual([{ namespace: NS, identifier: 'un_distinguishing_sign', required: true }]);
  });
});

describe('in the core outcome', () => {
  const complete = (
    response: Record<string, Record<string, unknown>>,
    auth: 'Valid' | 'Unchecked' = 'Valid',
    errors: Record<string, unknown> = {},
  ) =>
    outcomeFromComplete(
      { response, doc_types: [], issuer_authentication: auth, device_authentication: auth, errors, warnings: {} },
      asked('age_over_21'),
    );

  it('a `complete` that is authentic with age_over_21 false is verified and NOT met (the answer travels with the outcome)', () => {
    const view = complete({ [NS]: { age_over_21: false, portrait: 'x' } });
    expect(view.verdict).toBe('verified');
    expect(view.answer).toEqual({ kind: 'age', threshold: 21, result: 'not_met', missing: [] });
  });

  it('a recovered result answers too (undetermined when it cannot say the document is authentic)', () => {
    const base = { status: 'success', response: { [NS]: { age_over_21: true, portrait: 'x' } }, errors: {}, warnings: {} };
    expect(
      outcomeFromResult({ ...base, issuer_authentication: 'Valid', device_authentication: 'Valid' }, asked('age_over_21'))?.answer.result,
    ).toBe('met');
    expect(outcomeFromResult(base, asked('age_over_21'))?.answer.result).toBe('undetermined');
  });

  it('nothing checked and nothing disclosed (the holder declined) is rejected with `nothing_shared` first; anything disclosed or checked is not', () => {
    const declined = complete({}, 'Unchecked', { session: ['SessionData status 20'] });
    expect(declined.verdict).toBe('rejected');
    expect(declined.reasons).toEqual([
      'nothing_shared',
      'errors_reported',
      'issuer_authentication_unchecked',
      'device_authentication_unchecked',
    ]);
    expect(declined.answer.result).toBe('undetermined');
    expect(complete({ [NS]: {} }, 'Unchecked', { session: ['x'] }).reasons[0]).toBe('nothing_shared');
    expect(complete({ [NS]: { family_name: 'x' } }, 'Unchecked', { session: ['x'] }).reasons).not.toContain('nothing_shared');
    expect(complete({}, 'Valid', { document: ['x'] }).reasons).not.toContain('nothing_shared');
  });
});
