/**
 * The outcome screen rendered to markup in Node (react-dom/server; effects such as the portrait decode do
 * not run): the hooks the end-to-end tests use, the verdict and age semantics, element labels in every
 * language with no missing translation, hostile text escaped, and the labels of every ISO 18013-5 and
 * AAMVA element in English, Spanish and French.
 */
import i18next, { type i18n } from 'i18next';
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { I18nextProvider, initReactI18next } from 'react-i18next';
import { describe, expect, it } from 'vitest';
import type { OutcomeView } from '../../../src/common/kiosk-view.js';
import { ALL_MDL_ELEMENTS } from '../../../src/kiosk/profiles.js';
import { LABELLED_ELEMENTS, elementInfo } from '../../../src/renderer/outcome/labels.js';
import { outcomeResources } from '../../../src/renderer/outcome/locales.js';
import { OutcomeScreen } from '../../../src/renderer/outcome/OutcomeScreen.js';
import { formatDateTime, formatFullDate } from '../../../src/renderer/outcome/format.js';
import { AAMVA, ageAnswer, elementsAnswer, FULL_IDENTITY, NS, REJECTED_TAMPERED, outcome } from './outcome-fixtures.js';

type Language = keyof typeof outcomeResources;
const LANGUAGES: Language[] = ['en', 'es', 'fr'];

function i18nFor(language: Language, missing: string[]): i18n {
  const instance = i18next.createInstance();
  void instance.use(initReactI18next).init({
    resources: Object.fromEntries(LANGUAGES.map((l) => [l, { outcome: outcomeResources[l] }])),
    lng: language,
    fallbackLng: false,
    ns: ['outcome'],
    defaultNS: 'outcome',
    interpolation: { escapeValue: false },
    saveMissing: true,
    missingKeyHandler: (_lngs, _ns, key) => missing.push(key),
    initAsync: false,
  });
  return instance;
}

function render(view: OutcomeView, options: { language?: Language; clearsAt?: number | null } = {}): { html: string; missing: string[] } {
  const missing: string[] = [];
  const html = renderToStaticMarkup(
    createElement(
      I18nextProvider,
      { i18n: i18nFor(options.language ?? 'en', missing) },
      createElement(OutcomeScreen, {
        outcome: view,
        clearsAt: options.clearsAt === undefined ? Date.now() + 30_000 : options.clearsAt,
        onNext: () => undefined,
      }),
    ),
  );
  return { html, missing };
}

const attr = (html: string, testId: string, name: string): string | undefined =>
  new RegExp(`data-testid="${testId}"[^>]*?${name}="([^"]*)"|${name}="([^"]*)"[^>]*?data-testid="${testId}"`)
    .exec(html)
    ?.slice(1)
    .find(Boolean);
const text = (html: string): string => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

describe('outcome screen markup', () => {
  it('age request, verified: "21 or older" headline, "ID verified" line, portrait canvas loading, next button, countdown', () => {
    const { html, missing } = render(outcome());
    expect(missing).toEqual([]);
    expect(attr(html, 'verdict', 'data-verdict')).toBe('verified');
    expect(attr(html, 'age-answer', 'data-age')).toBe('yes');
    expect(attr(html, 'portrait', 'data-portrait-state')).toBe('loading');
    expect(html).toMatch(/<h1[^>]*>21 or older<\/h1>/);
    expect(text(html)).toContain('ID verified');
    expect(text(html)).not.toContain('Not accepted');
    expect(html).toContain('data-testid="next-button"');
    expect(text(html)).toMatch(/clears in (30|29) seconds/);
  });

  it('tampered (rejected): "Could not determine" age, "ID not accepted", translated reasons and the backend errors for staff', () => {
    const { html, missing } = render(outcome(REJECTED_TAMPERED));
    expect(missing).toEqual([]);
    expect(attr(html, 'verdict', 'data-verdict')).toBe('rejected');
    expect(attr(html, 'age-answer', 'data-age')).toBe('unknown');
    const shown = text(html);
    expect(shown).toContain('Could not determine');
    // The only "21 or older" left is the question and the row label; the row's value is withheld.
    expect(shown.match(/21 or older/g)).toHaveLength(2);
    expect(shown).toContain('21 or older Could not determine');
    expect(shown).not.toMatch(/\bYes\b/);
    expect(shown).toContain('ID not accepted');
    // A document that was not accepted leads with that, not with the (undeterminable) age answer.
    expect(html).toMatch(/<h1[^>]*>ID not accepted<\/h1>/);
    // Why it was not accepted is for staff: behind "Details for staff", closed.
    expect(html).toMatch(/<details[^>]*data-testid="staff-details"[^>]*>\s*<summary>Details for staff<\/summary>/);
    expect(html).not.toMatch(/<details[^>]*data-testid="staff-details"[^>]*open/);
    expect(shown).toContain('The issuer signature is not valid');
    expect(shown).toContain('Data integrity');
    expect(shown).toContain('As the verification service wrote it (not translated)');
    expect(shown).toContain(`digest mismatch for ${NS}/age_over_21`);
  });

  it('age NOT met: "NOT 21 or older", from the core\'s answer', () => {
    const { html } = render(outcome({ response: { [NS]: { age_over_21: false } }, answer: ageAnswer('not_met') }));
    expect(attr(html, 'age-answer', 'data-age')).toBe('no');
    expect(html).toMatch(/<h1[^>]*>NOT 21 or older<\/h1>/);
  });

  it("the headline is the core's answer, not worked out again from the response", () => {
    // A response that would read "yes" under the old screen-side rules, and a core that says undetermined.
    const { html } = render(outcome({ response: { [NS]: { age_over_21: true } }, answer: ageAnswer('undetermined') }));
    expect(attr(html, 'age-answer', 'data-age')).toBe('unknown');
    expect(html).toMatch(/<h1[^>]*>Could not determine<\/h1>/);
  });

  it('not an age request: the verdict is the headline and there is no age answer', () => {
    const { html } = render(outcome({ response: FULL_IDENTITY, answer: elementsAnswer('met') }));
    expect(html).not.toContain('data-testid="age-answer"');
    expect(html).toMatch(/<h1[^>]*>Verified<\/h1>/);
    expect(html).not.toContain('data-testid="missing"');
  });

  it('identity request not met: "Verified", then the details that were not shared, in the customer\'s language', () => {
    for (const language of LANGUAGES) {
      const { html, missing } = render(
        outcome({
          response: FULL_IDENTITY,
          answer: elementsAnswer('not_met', [
            { identifier: 'portrait' },
            { identifier: 'document_number' },
            { identifier: 'weight', required: false },
          ]),
        }),
        { language },
      );
      expect(missing, language).toEqual([]);
      expect(attr(html, 'missing', 'data-not-met'), language).toBe('true');
      const shown = text(html);
      expect(shown).toContain(outcomeResources[language].answer.notMet);
      expect(shown).toContain(outcomeResources[language].label.mdl.portrait);
      expect(shown).toContain(outcomeResources[language].label.mdl.document_number);
      // Optional elements a document need not carry are not listed as a problem.
      expect(shown).not.toContain(`${outcomeResources[language].label.mdl.weight},`);
    }
  });

  it('declined on the phone: a neutral "You declined to share", no red "not accepted", no "see staff", no age line', () => {
    for (const language of LANGUAGES) {
      const declined = outcome({
        verdict: 'rejected',
        reasons: ['nothing_shared', 'errors_reported', 'issuer_authentication_unchecked', 'device_authentication_unchecked'],
        response: {},
        issuerAuthentication: 'Unchecked',
        deviceAuthentication: 'Unchecked',
        errors: { session: ['the holder ended the session without a response (SessionData status 20)'] },
        answer: ageAnswer('undetermined'),
      });
      const { html, missing } = render(declined, { language });
      expect(missing, language).toEqual([]);
      expect(attr(html, 'verdict', 'data-verdict')).toBe('declined');
      expect(html).toContain(`<h1 id=`);
      expect(html).toMatch(new RegExp(`<h1[^>]*>${outcomeResources[language].verdict.declined}</h1>`));
      const shown = text(html);
      expect(shown).toContain(outcomeResources[language].verdict.declinedBody);
      expect(shown).not.toContain(outcomeResources[language].verdict.idRejected);
      expect(shown).not.toContain(outcomeResources[language].verdict.seeStaff);
      expect(html).not.toContain('data-testid="age-answer"');
      // The SessionData status is staff detail, closed.
      expect(html).toMatch(/<details[^>]*data-testid="staff-details"/);
    }
  });

  it('a year of birth is written without digit grouping ("1990", not "1,990")', () => {
    for (const language of LANGUAGES) {
      const { html } = render(outcome({ response: { [NS]: { age_birth_year: 1990 } }, answer: elementsAnswer('met') }), { language });
      expect(text(html), language).toContain(' 1990 ');
      expect(text(html), language).not.toMatch(/1[,.\u00a0\u202f ]990/);
    }
  });

  it('eye and hair colours are said in the customer\'s language ("brown" is "Marron" in French); a word outside the list is shown as given', () => {
    const said = { en: ['Brown', 'Auburn'], es: ['Marrones', 'Caoba'], fr: ['Marron', 'Auburn'] } as const;
    for (const language of LANGUAGES) {
      const { html, missing } = render(
        outcome({ response: { [NS]: { eye_colour: 'brown', hair_colour: 'auburn' } }, answer: elementsAnswer('met') }),
        { language },
      );
      expect(missing, language).toEqual([]);
      for (const word of said[language]) expect(text(html), language).toContain(` ${word} `);
      expect(text(html), language).not.toContain(' brown ');
    }
    const { html } = render(outcome({ response: { [NS]: { eye_colour: 'violet' } }, answer: elementsAnswer('met') }), { language: 'fr' });
    expect(text(html)).toContain(' violet ');
  });

  it('unreadable outcome: neutral "ask staff", nothing else of it', () => {
    const { html } = render({ verdict: 'maybe' } as unknown as OutcomeView);
    expect(attr(html, 'verdict', 'data-verdict')).toBe('unknown');
    expect(text(html)).toContain('Could not display the result — ask staff');
    expect(html).not.toContain('element-row');
  });

  it('every element row, labelled, in every language, without a missing key; privileges as a table; dates for the language', () => {
    for (const language of LANGUAGES) {
      const { html, missing } = render(outcome({ response: FULL_IDENTITY, answer: elementsAnswer('met') }), { language });
      expect(missing, language).toEqual([]);
      const rows = [...html.matchAll(/data-testid="element-row" data-element="([^"]*)"/g)].map((m) => m[1]);
      expect(rows).toHaveLength(Object.values(FULL_IDENTITY).reduce((n, ns) => n + Object.keys(ns).length, 0));
      expect(rows).toContain(`${AAMVA}/aka_family_name.v2`);
      expect(html).toContain('<table class="outcome-privileges">');
      const shown = text(html);
      expect(shown).toContain(formatFullDate('1990-04-12', language));
      expect(shown).toContain(outcomeResources[language].label.mdl.birth_date);
      expect(shown).toContain(outcomeResources[language].value.sex[2]);
      expect(shown).toContain('loyalty_level');
      expect(shown).toContain('org.example.custom');
    }
  });

  it('hostile keys and values are text, never markup', () => {
    const response = { '<img src=x onerror=alert(1)>': { '<script>alert(1)</script>': '<b>bold</b>' } };
    const { html } = render(
      outcome({ verdict: 'rejected', reasons: ['<i>why</i>'], response, errors: { '<u>cat</u>': ['<svg onload=alert(1)>'] } }),
    );
    expect(html).not.toMatch(/<(script|img|b|i|u|svg onload)[ >]/);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('&lt;svg onload=alert(1)&gt;');
  });
});

describe('labels and translations', () => {
  type Tree = { readonly [key: string]: string | Tree };
  const keys = (tree: Tree, prefix = ''): string[] =>
    Object.entries(tree).flatMap(([key, value]) => (typeof value === 'string' ? [`${prefix}${key}`] : keys(value, `${prefix}${key}.`)));
  const lookup = (tree: Tree, key: string): unknown =>
    key.split('.').reduce<unknown>((node, part) => (typeof node === 'object' && node !== null ? (node as Tree)[part] : undefined), tree);

  it('every language has exactly the English keys, none empty', () => {
    const english = keys(outcomeResources.en).sort();
    for (const language of LANGUAGES) {
      expect(keys(outcomeResources[language]).sort(), language).toEqual(english);
      for (const key of english) expect(String(lookup(outcomeResources[language], key)).trim(), `${language} ${key}`).not.toBe('');
    }
  });

  it('every ISO 18013-5 element of the kiosk profiles, age_over_NN, biometric templates and the AAMVA namespace are labelled', () => {
    const aamva = [
      'domestic_driving_privileges',
      'name_suffix',
      'organ_donor',
      'veteran',
      'family_name_truncation',
      'given_name_truncation',
      'aka_family_name.v2',
      'aka_given_name.v2',
      'aka_suffix',
      'weight_range',
      'race_ethnicity',
      'EDL_credential',
      'DHS_compliance',
      'sex',
      'resident_county',
      'hazmat_endorsement_expiration_date',
      'CDL_indicator',
      'DHS_compliance_text',
      'DHS_temporary_lawful_status',
    ];
    expect([...(LABELLED_ELEMENTS[AAMVA] ?? [])].sort()).toEqual([...aamva].sort());
    const all: [string, string][] = [
      ...ALL_MDL_ELEMENTS.map((e): [string, string] => [NS, e]),
      [NS, 'age_over_99'],
      [NS, 'biometric_template_face'],
      ...aamva.map((e): [string, string] => [AAMVA, e]),
    ];
    for (const [namespace, element] of all) {
      const key = elementInfo(namespace, element).labelKey;
      expect(key, element).toBeDefined();
      for (const language of LANGUAGES)
        expect(typeof lookup(outcomeResources[language], key ?? ''), `${language} ${element}`).toBe('string');
    }
    expect(elementInfo('org.example', 'family_name').labelKey).toBeUndefined();
  });

  it('every reason key the core produces has a translation', async () => {
    const source = await import('node:fs/promises').then((fs) => fs.readFile('src/kiosk/outcome.ts', 'utf8'));
    const produced = [
      'errors_reported',
      ...['issuer', 'device'].flatMap((who) =>
        ['invalid', 'unchecked', 'missing', 'unrecognised'].map((what) => `${who}_authentication_${what}`),
      ),
    ];
    expect(source).toContain("'errors_reported'");
    expect(source).toContain('_authentication_unrecognised');
    for (const key of produced) expect(Object.keys(outcomeResources.en.reason)).toContain(key);
  });

  it('a full-date is the same day in every time zone; a tdate shows its time', () => {
    expect(formatFullDate('1990-04-12', 'en')).toBe('April 12, 1990');
    expect(formatFullDate('1990-04-12', 'es')).toBe('12 de abril de 1990');
    expect(formatFullDate('1990-04-12', 'fr')).toBe('12 avril 1990');
    expect(formatDateTime('2024-06-01T09:30:00Z', 'en', 'UTC')).toBe('June 1, 2024 at 9:30 AM');
    expect(formatDateTime('2024-06-01T23:30:00Z', 'fr', 'Europe/Paris')).toContain('2 juin 2024');
  });
});
