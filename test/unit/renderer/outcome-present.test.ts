/**
 * The outcome display model (present.ts): the verdict is green only when the core says verified and
 * nothing contradicts it; the age answer is an answer only for a verified document; every element gets a
 * label, a group order and a typed value; hostile shapes are bounded and never throw.
 */
import { describe, expect, it } from 'vitest';
import { MAX_DEPTH, MAX_ROWS, MAX_TEXT, presentOutcome, shortText, type Cell } from '../../../src/renderer/outcome/present.js';
import type { OutcomeView } from '../../../src/common/kiosk-view.js';
import {
  AAMVA,
  FULL_IDENTITY,
  JP2_BYTES,
  JPEG_BYTES,
  NS,
  REJECTED_TAMPERED,
  ageAnswer,
  elementsAnswer,
  outcome,
  toBase64,
} from './outcome-fixtures.js';

describe('verdict', () => {
  it('verified only when the core says so and nothing contradicts it', () => {
    expect(presentOutcome(outcome()).verdict).toBe('verified');
    expect(presentOutcome(outcome(REJECTED_TAMPERED)).verdict).toBe('rejected');
    // Fail closed: the core calls a recovered result without authentication results undetermined, and a
    // "verified" that lacks them reads unknown here too.
    expect(
      presentOutcome(outcome({ verdict: 'undetermined', issuerAuthentication: null, deviceAuthentication: null, source: 'recovered' }))
        .verdict,
    ).toBe('undetermined');
    expect(presentOutcome(outcome({ issuerAuthentication: null, deviceAuthentication: null, source: 'recovered' })).verdict).toBe(
      'unknown',
    );
  });

  it('a "verified" that the rest of the outcome contradicts reads unknown, never verified', () => {
    expect(presentOutcome(outcome({ errors: { validity: ['expired'] } })).verdict).toBe('unknown');
    expect(presentOutcome(outcome({ reasons: ['errors_reported'] })).verdict).toBe('unknown');
    expect(presentOutcome(outcome({ deviceAuthentication: 'Unchecked' })).verdict).toBe('unknown');
    expect(presentOutcome({ ...outcome(), issuerAuthentication: 'Maybe' }).verdict).toBe('unknown');
    expect(presentOutcome({ ...outcome(), reasons: 'none' }).verdict).toBe('unknown');
  });

  it('an outcome without a readable verdict is unknown and shows nothing of itself', () => {
    for (const input of [null, undefined, 42, 'verified', [], {}, { verdict: 'VERIFIED' }, { verdict: true }]) {
      const model = presentOutcome(input);
      expect(model).toMatchObject({ verdict: 'unknown', unreadable: true, rows: [], age: undefined });
    }
  });
});

describe("age answer (the core's, read here)", () => {
  const age = (answer: OutcomeView['answer'], extra: Partial<OutcomeView> = {}) => presentOutcome(outcome({ answer, ...extra })).age;

  it('met, not met and undetermined read as yes, no and could not determine', () => {
    expect(age(ageAnswer('met'))).toEqual({ threshold: 21, answer: 'yes' });
    expect(age(ageAnswer('not_met'))).toEqual({ threshold: 21, answer: 'no' });
    expect(age(ageAnswer('undetermined'))).toEqual({ threshold: 21, answer: 'unknown' });
    expect(age(ageAnswer('met', 18))).toEqual({ threshold: 18, answer: 'yes' });
  });

  it("an unverified document gives no answer, even if the core's answer said met (fail closed)", () => {
    expect(age(ageAnswer('met'), REJECTED_TAMPERED)).toEqual({ threshold: 21, answer: 'unknown' });
    expect(age(ageAnswer('met'), { errors: { x: ['y'] } })).toEqual({ threshold: 21, answer: 'unknown' });
  });

  it('no age answer for an elements request; an odd answer shape reads as no answer, never yes', () => {
    expect(age(elementsAnswer('met'))).toBeUndefined();
    for (const odd of [
      undefined,
      null,
      'met',
      { kind: 'age', threshold: 'x', result: 'met' },
      { kind: 'age', threshold: 21, result: 'MET' },
      { kind: 'height' },
    ]) {
      const model = presentOutcome({ ...outcome(), answer: odd });
      expect(model.age?.answer ?? 'none', JSON.stringify(odd)).not.toBe('yes');
    }
  });

  it('age rows of a document that is not verified are withheld, not Yes/No', () => {
    const rejected = presentOutcome(outcome({ ...REJECTED_TAMPERED, response: { [NS]: { age_over_21: true, family_name: 'Doe' } } }));
    expect(rejected.rows.find((r) => r.identifier === 'age_over_21')?.value).toEqual({ kind: 'withheld' });
    expect(rejected.rows.find((r) => r.identifier === 'family_name')?.value).toEqual({ kind: 'text', text: 'Doe' });
  });
});

describe('declined and missing elements', () => {
  const declined = (patch: Partial<OutcomeView> = {}) =>
    presentOutcome(
      outcome({
        verdict: 'rejected',
        reasons: ['nothing_shared', 'errors_reported', 'issuer_authentication_unchecked', 'device_authentication_unchecked'],
        response: {},
        issuerAuthentication: 'Unchecked',
        deviceAuthentication: 'Unchecked',
        errors: { session: ['declined'] },
        ...patch,
      }),
    );

  it('nothing shared reads declined; the same reasons beside disclosed data or a checked document stay rejected', () => {
    expect(declined().verdict).toBe('declined');
    expect(declined({ response: { [NS]: { family_name: 'Doe' } } }).verdict).toBe('rejected');
    expect(declined({ issuerAuthentication: 'Invalid' }).verdict).toBe('rejected');
    expect(declined({ reasons: ['errors_reported', 'nothing_shared'] }).verdict).toBe('rejected');
  });

  it('missing elements come labelled, required ones first; notMet only for a verified elements request', () => {
    const model = presentOutcome(
      outcome({
        response: FULL_IDENTITY,
        answer: elementsAnswer('not_met', [{ identifier: 'weight', required: false }, { identifier: 'portrait' }]),
      }),
    );
    expect(model.notMet).toBe(true);
    expect(model.missing.map((m) => [m.identifier, m.required, m.labelKey])).toEqual([
      ['portrait', true, 'label.mdl.portrait'],
      ['weight', false, 'label.mdl.weight'],
    ]);
    expect(
      presentOutcome(outcome({ ...REJECTED_TAMPERED, answer: elementsAnswer('undetermined', [{ identifier: 'portrait' }]) })).notMet,
    ).toBe(false);
    expect(presentOutcome(outcome({ answer: ageAnswer('not_met') })).notMet).toBe(false);
  });

  it("eye and hair colours from the standard's lists are words to translate; anything else stays text", () => {
    const model = presentOutcome(outcome({ response: { [NS]: { eye_colour: 'hazel', hair_colour: 'sandy' } } }));
    expect(model.rows.find((r) => r.identifier === 'eye_colour')?.value).toEqual({ kind: 'word', key: 'value.eye.hazel' });
    expect(model.rows.find((r) => r.identifier === 'hair_colour')?.value).toEqual({ kind: 'word', key: 'value.hair.sandy' });
    const odd = presentOutcome(outcome({ response: { [NS]: { eye_colour: 'toString', hair_colour: 7 } } }));
    expect(odd.rows.find((r) => r.identifier === 'eye_colour')?.value).toEqual({ kind: 'text', text: 'toString' });
    expect(odd.rows.find((r) => r.identifier === 'hair_colour')?.value).toMatchObject({ kind: 'number', value: 7 });
  });

  it('a year of birth is a year (no grouping), an age a number of years', () => {
    const model = presentOutcome(outcome({ response: { [NS]: { age_birth_year: 1990, age_in_years: 35 } } }));
    expect(model.rows.find((r) => r.identifier === 'age_birth_year')?.value).toEqual({ kind: 'year', value: 1990 });
    expect(model.rows.find((r) => r.identifier === 'age_in_years')?.value).toEqual({ kind: 'number', value: 35, unit: 'years' });
  });
});

describe('elements', () => {
  const model = presentOutcome(outcome({ response: FULL_IDENTITY }));
  const row = (id: string) => model.rows.find((r) => r.id === id);

  it('every disclosed element is a row, ordered names, dates, document, address, physical, others', () => {
    expect(model.rows).toHaveLength(Object.values(FULL_IDENTITY).reduce((n, ns) => n + Object.keys(ns).length, 0));
    const ids = model.rows.map((r) => r.id);
    const at = (id: string): number => ids.indexOf(id);
    expect(at(`${NS}/family_name`)).toBe(0);
    expect(at(`${NS}/given_name`)).toBe(1);
    expect(at(`${NS}/given_name`)).toBeLessThan(at(`${AAMVA}/aka_family_name.v2`));
    expect(at(`${AAMVA}/aka_family_name.v2`)).toBeLessThan(at(`${NS}/birth_date`));
    expect(at(`${NS}/birth_date`)).toBeLessThan(at(`${NS}/age_over_18`));
    expect(at(`${NS}/age_over_18`)).toBeLessThan(at(`${NS}/age_over_21`));
    expect(at(`${NS}/expiry_date`)).toBeLessThan(at(`${NS}/document_number`));
    expect(at(`${NS}/driving_privileges`)).toBeLessThan(at(`${NS}/resident_address`));
    expect(at(`${NS}/resident_address`)).toBeLessThan(at(`${NS}/resident_city`));
    expect(at(`${NS}/resident_city`)).toBeLessThan(at(`${NS}/portrait`));
    expect(at(`${NS}/portrait`)).toBeLessThan(at(`${NS}/sex`));
    expect(at(`${AAMVA}/organ_donor`)).toBeGreaterThan(at(`${NS}/signature_usual_mark`));
    expect(ids.at(-1)).toBe('org.example.custom/loyalty_level');
  });

  it('labels, and typed values: dates, tdate, sex, units, booleans, codes, images', () => {
    expect(row(`${NS}/family_name`)).toMatchObject({ labelKey: 'label.mdl.family_name', value: { kind: 'text', text: 'Doe' } });
    expect(row(`${NS}/age_over_21`)).toMatchObject({
      labelKey: 'label.mdl.age_over_nn',
      labelParams: { age: 21 },
      value: { kind: 'boolean', value: true },
    });
    expect(row(`${NS}/birth_date`)?.value).toEqual({ kind: 'date', iso: '1990-04-12' });
    expect(row(`${NS}/portrait_capture_date`)?.value).toEqual({ kind: 'datetime', iso: '2024-06-01T09:30:00Z' });
    expect(row(`${NS}/sex`)?.value).toEqual({ kind: 'code', key: 'value.sex.2', code: '2' });
    expect(row(`${NS}/height`)?.value).toEqual({ kind: 'number', value: 168, unit: 'cm' });
    expect(row(`${NS}/weight`)?.value).toEqual({ kind: 'number', value: 61, unit: 'kg' });
    expect(row(`${NS}/portrait`)).toMatchObject({ isPortrait: true, value: { kind: 'bytes', image: 'jpeg', length: JPEG_BYTES.length } });
    expect(row(`${NS}/signature_usual_mark`)?.value).toEqual({ kind: 'bytes', image: 'jpeg', length: JPEG_BYTES.length });
    expect(row(`${AAMVA}/DHS_compliance`)).toMatchObject({
      labelKey: 'label.aamva.DHS_compliance',
      value: { kind: 'code', key: 'value.dhs.F' },
    });
    expect(row(`${AAMVA}/organ_donor`)?.value).toEqual({ kind: 'code', key: 'value.yes', code: '1' });
    expect(row(`${AAMVA}/aka_family_name.v2`)?.labelKey).toBe('label.aamva.aka_family_name_v2');
    expect(row('org.example.custom/loyalty_level')).toMatchObject({
      labelKey: undefined,
      namespace: 'org.example.custom',
      identifier: 'loyalty_level',
    });
  });

  it('driving_privileges as table rows with dates and codes', () => {
    const value = row(`${NS}/driving_privileges`)?.value as Extract<Cell, { kind: 'privileges' }>;
    expect(value.kind).toBe('privileges');
    expect(value.rows).toEqual([
      {
        category: { kind: 'text', text: 'B' },
        issued: { kind: 'date', iso: '2015-06-01' },
        expires: { kind: 'date', iso: '2033-06-01' },
        codes: [],
      },
      {
        category: { kind: 'text', text: 'A' },
        issued: { kind: 'date', iso: '2018-03-15' },
        expires: { kind: 'date', iso: '2033-06-01' },
        codes: ['78', 'S01 <= 2500'],
      },
    ]);
  });

  it('no impossible dates: "2023-02-30" stays text', () => {
    const m = presentOutcome(outcome({ response: { [NS]: { birth_date: '2023-02-30' } } }));
    expect(m.rows[0]?.value).toEqual({ kind: 'text', text: '2023-02-30' });
  });
});

describe('portrait source', () => {
  const portrait = (value: unknown) => presentOutcome(outcome({ response: { [NS]: { portrait: value } } })).portrait;

  it('base64, base64url, data: URL, Buffer JSON; JPEG and JPEG 2000 by magic bytes', () => {
    expect(portrait(toBase64(JPEG_BYTES))).toMatchObject({ state: 'image', kind: 'jpeg', bytes: JPEG_BYTES });
    expect(portrait(toBase64(JP2_BYTES).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''))).toMatchObject({
      state: 'image',
      kind: 'jp2',
    });
    expect(portrait(`data:application/octet-stream;base64,${toBase64(JP2_BYTES)}`)).toMatchObject({ state: 'image', kind: 'jp2' });
    expect(portrait({ type: 'Buffer', data: [...JPEG_BYTES] })).toMatchObject({ state: 'image', kind: 'jpeg' });
  });

  it('has a content key: equal for the same portrait in new objects, different for any other picture', () => {
    const key = (value: unknown): string | undefined => {
      const source = portrait(value);
      return source.state === 'image' ? source.key : undefined;
    };
    const base64 = toBase64(JPEG_BYTES);
    expect(key(base64)).toBeDefined();
    // Each state the host pushes is parsed into new objects (and a new string): same content, same key.
    expect(key(String.fromCharCode(...Array.from(base64, (c) => c.charCodeAt(0))))).toBe(key(base64));
    expect(key({ type: 'Buffer', data: [...JPEG_BYTES] })).toBe(key({ type: 'Buffer', data: [...JPEG_BYTES] }));
    expect(key([...JPEG_BYTES])).toBe(key({ type: 'Buffer', data: [...JPEG_BYTES] }));
    // One byte differs: another key, so the canvas decodes the new picture.
    const changed = Uint8Array.from(JPEG_BYTES);
    changed[changed.length - 1] = (changed.at(-1) ?? 0) ^ 1;
    expect(key(toBase64(changed))).not.toBe(key(base64));
    expect(key([...changed])).not.toBe(key([...JPEG_BYTES]));
  });

  it('anything else is unreadable (the screen says the portrait could not be shown); none when not disclosed', () => {
    for (const value of ['not base64!', toBase64(Uint8Array.of(1, 2, 3, 4)), 42, null, { nested: true }, [300]])
      expect(portrait(value)).toEqual({ state: 'unreadable' });
    expect(presentOutcome(outcome({ response: { [NS]: { age_over_21: true } } })).portrait).toEqual({ state: 'absent' });
  });
});

describe('hostile shapes', () => {
  it('long strings are cut with an ellipsis; nesting, rows and findings are bounded; nothing throws', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 50; i++) deep = { level: deep };
    const many: Record<string, unknown> = {};
    for (let i = 0; i < MAX_ROWS + 50; i++) many[`e${i}`] = i;
    const model = presentOutcome(
      outcome({
        verdict: 'rejected',
        reasons: ['errors_reported'],
        response: { [NS]: { family_name: 'x'.repeat(10_000), deep }, 'org.many': many },
        errors: { document: Array.from({ length: 100 }, (_, i) => `problem ${i}`), weird: { nested: { object: 'x'.repeat(5_000) } } },
      }),
    );
    const name = model.rows.find((r) => r.identifier === 'family_name')?.value;
    expect(name).toEqual({ kind: 'text', text: `${'x'.repeat(MAX_TEXT - 1)}…` });
    let cell = model.rows.find((r) => r.identifier === 'deep')?.value;
    let depth = 0;
    while (cell?.kind === 'record') {
      cell = cell.fields[0]?.value;
      depth++;
    }
    expect(depth).toBe(MAX_DEPTH);
    expect(cell).toEqual({ kind: 'tooDeep' });
    expect(model.rows).toHaveLength(MAX_ROWS);
    expect(model.omittedRows).toBe(52);
    expect(model.errors[0]).toMatchObject({ category: 'document', omitted: 90 });
    expect(model.errors[1]?.messages[0]?.length).toBeLessThanOrEqual(MAX_TEXT);
  });

  it('markup-looking keys and values stay text; prototype keys are ordinary keys', () => {
    const response = JSON.parse(
      `{"<img src=x onerror=alert(1)>": {"<script>alert(1)</script>": "<b>bold</b>", "__proto__": {"polluted": true}, "constructor": 1}}`,
    ) as Record<string, Record<string, unknown>>;
    const model = presentOutcome(outcome({ verdict: 'rejected', reasons: ['x'], response }));
    expect(model.rows.map((r) => r.identifier)).toEqual(['<script>alert(1)</script>', '__proto__', 'constructor']);
    expect(model.rows[0]?.value).toEqual({ kind: 'text', text: '<b>bold</b>' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('a namespace that is not an object is one row, not a crash', () => {
    const model = presentOutcome({ ...outcome(), response: { [NS]: 'oops', other: [1, 2] }, answer: ageAnswer('undetermined') });
    expect(model.rows.map((r) => r.id)).toEqual([`${NS}/`, 'other/']);
    expect(model.age).toEqual({ threshold: 21, answer: 'unknown' });
  });

  it('shortText never serialises more than it shows', () => {
    const huge = Array.from({ length: 100_000 }, (_, i) => ({ i }));
    expect(shortText(huge, 50).length).toBeLessThanOrEqual(50);
    expect(shortText({ a: [1, 'b', null] })).toBe('{"a": [1, "b", null]}');
  });
});
