/** Outcomes for the outcome screen's tests (shapes as the core and the mock backend produce them). */
import type { OutcomeView } from '../../../src/common/kiosk-view.js';

export const NS = 'org.iso.18013.5.1';
export const AAMVA = 'org.iso.18013.5.1.aamva';

/** Bytes with a JPEG signature (not a decodable image; enough for the model). */
export const JPEG_BYTES = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, ...new Array<number>(40).fill(0x20)]);
export const JP2_BYTES = Uint8Array.from([
  0x00,
  0x00,
  0x00,
  0x0c,
  0x6a,
  0x50,
  0x20,
  0x20,
  0x0d,
  0x0a,
  0x87,
  0x0a,
  ...new Array<number>(40).fill(0),
]);

export const toBase64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));

/** The core's answer to an age_over_21 request (src/kiosk/request-answer.ts decides it; the screen reads it). */
export function ageAnswer(result: 'met' | 'not_met' | 'undetermined', threshold = 21): OutcomeView['answer'] {
  return { kind: 'age', threshold, result, missing: [] };
}

/** An identity-style answer with these elements missing (required unless said). */
export function elementsAnswer(
  result: 'met' | 'not_met' | 'undetermined',
  missing: { identifier: string; required?: boolean }[] = [],
): OutcomeView['answer'] {
  return {
    kind: 'elements',
    result,
    missing: missing.map((m) => ({ namespace: NS, identifier: m.identifier, required: m.required ?? true })),
  };
}

export function outcome(overrides: Partial<OutcomeView> = {}): OutcomeView {
  return {
    verdict: 'verified',
    reasons: [],
    answer: ageAnswer(overrides.verdict === undefined || overrides.verdict === 'verified' ? 'met' : 'undetermined'),
    response: { [NS]: { age_over_21: true, portrait: toBase64(JPEG_BYTES) } },
    docTypes: ['org.iso.18013.5.1.mDL'],
    issuerAuthentication: 'Valid',
    deviceAuthentication: 'Valid',
    errors: {},
    warnings: {},
    source: 'complete',
    ...overrides,
  };
}

export const REJECTED_TAMPERED: Partial<OutcomeView> = {
  verdict: 'rejected',
  reasons: ['errors_reported', 'issuer_authentication_invalid'],
  issuerAuthentication: 'Invalid',
  errors: { data_integrity: [`digest mismatch for ${NS}/age_over_21 (digestID 7)`] },
};

export const FULL_IDENTITY: OutcomeView['response'] = {
  [NS]: {
    resident_city: 'Sacramento',
    family_name: 'Doe',
    given_name: 'Jane',
    birth_date: '1990-04-12',
    issue_date: '2024-06-01',
    expiry_date: '2032-06-01',
    issuing_country: 'US',
    issuing_authority: 'Virtual Department of Motor Vehicles',
    document_number: 'D1234567',
    portrait: toBase64(JPEG_BYTES),
    driving_privileges: [
      { vehicle_category_code: 'B', issue_date: '2015-06-01', expiry_date: '2033-06-01' },
      {
        vehicle_category_code: 'A',
        issue_date: '2018-03-15',
        expiry_date: '2033-06-01',
        codes: [{ code: '78' }, { code: 'S01', sign: '<=', value: '2500' }],
      },
    ],
    sex: 2,
    height: 168,
    weight: 61,
    eye_colour: 'brown',
    resident_address: '1200 Capitol Mall, Apt 4',
    portrait_capture_date: '2024-06-01T09:30:00Z',
    age_over_18: true,
    age_over_21: true,
    signature_usual_mark: `data:image/jpeg;base64,${toBase64(JPEG_BYTES)}`,
  },
  [AAMVA]: { DHS_compliance: 'F', organ_donor: 1, 'aka_family_name.v2': 'Smithy', sex: 2 },
  'org.example.custom': { loyalty_level: 'gold' },
};
