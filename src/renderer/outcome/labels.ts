/**
 * Which label, group and value kind each disclosed element has. Labels are i18n keys in the `outcome`
 * namespace (locales.ts): `label.mdl.<id>` and `label.aamva.<id>` (dots in identifiers become `_`).
 *
 * Sources: ISO/IEC 18013-5:2021 §7.2.1 Table 5 (namespace org.iso.18013.5.1, the identifiers of
 * ALL_MDL_ELEMENTS in src/kiosk/profiles.ts plus age_over_NN for any NN and biometric_template_xx), and
 * the AAMVA mDL Implementation Guidelines (v1.2+, namespace org.iso.18013.5.1.aamva), whose identifiers
 * were checked against spruceid/isomdl `src/definitions/namespaces/org_iso_18013_5_1_aamva/mod.rs`.
 */

export const MDL_NAMESPACE = 'org.iso.18013.5.1';
export const AAMVA_NAMESPACE = 'org.iso.18013.5.1.aamva';

/** Display order of the groups: who the person is, dates, the document, where they live, how they look. */
export const GROUPS = ['names', 'dates', 'document', 'address', 'physical', 'other'] as const;
export type Group = (typeof GROUPS)[number];

/**
 * How a value is read: `bytes` a byte string (image or data), `fullDate` a date without time, `sex` ISO/IEC
 * 5218 codes, `present` AAMVA's "1 = yes" flags, `dhs` / `truncation` AAMVA one-letter codes, `eyeColour` /
 * `hairColour` the words ISO/IEC 18013-5 allows for those elements (said in the customer's language).
 */
export type ValueHint =
  | 'auto'
  | 'bytes'
  | 'sex'
  | 'height'
  | 'weight'
  | 'years'
  | 'year'
  | 'privileges'
  | 'present'
  | 'dhs'
  | 'truncation'
  | 'eyeColour'
  | 'hairColour';

interface KnownElement {
  readonly group: Group;
  readonly hint?: ValueHint;
}

/** In display order within each group. */
const MDL_ELEMENTS: Readonly<Record<string, KnownElement>> = {
  family_name: { group: 'names' },
  given_name: { group: 'names' },
  family_name_national_character: { group: 'names' },
  given_name_national_character: { group: 'names' },
  nationality: { group: 'names' },
  birth_date: { group: 'dates' },
  age_in_years: { group: 'dates', hint: 'years' },
  age_birth_year: { group: 'dates', hint: 'year' },
  birth_place: { group: 'dates' },
  issue_date: { group: 'dates' },
  expiry_date: { group: 'dates' },
  portrait_capture_date: { group: 'dates' },
  document_number: { group: 'document' },
  issuing_country: { group: 'document' },
  issuing_jurisdiction: { group: 'document' },
  issuing_authority: { group: 'document' },
  administrative_number: { group: 'document' },
  un_distinguishing_sign: { group: 'document' },
  driving_privileges: { group: 'document', hint: 'privileges' },
  resident_address: { group: 'address' },
  resident_city: { group: 'address' },
  resident_state: { group: 'address' },
  resident_postal_code: { group: 'address' },
  resident_country: { group: 'address' },
  portrait: { group: 'physical', hint: 'bytes' },
  sex: { group: 'physical', hint: 'sex' },
  height: { group: 'physical', hint: 'height' },
  weight: { group: 'physical', hint: 'weight' },
  eye_colour: { group: 'physical', hint: 'eyeColour' },
  hair_colour: { group: 'physical', hint: 'hairColour' },
  signature_usual_mark: { group: 'physical', hint: 'bytes' },
};

const AAMVA_ELEMENTS: Readonly<Record<string, KnownElement>> = {
  name_suffix: { group: 'names' },
  'aka_family_name.v2': { group: 'names' },
  'aka_given_name.v2': { group: 'names' },
  aka_suffix: { group: 'names' },
  family_name_truncation: { group: 'names', hint: 'truncation' },
  given_name_truncation: { group: 'names', hint: 'truncation' },
  hazmat_endorsement_expiration_date: { group: 'dates' },
  domestic_driving_privileges: { group: 'document' },
  DHS_compliance: { group: 'document', hint: 'dhs' },
  DHS_compliance_text: { group: 'document' },
  DHS_temporary_lawful_status: { group: 'document', hint: 'present' },
  EDL_credential: { group: 'document' },
  CDL_indicator: { group: 'document', hint: 'present' },
  resident_county: { group: 'address' },
  sex: { group: 'physical', hint: 'sex' },
  weight_range: { group: 'physical' },
  race_ethnicity: { group: 'physical' },
  organ_donor: { group: 'other', hint: 'present' },
  veteran: { group: 'other', hint: 'present' },
};

/** Every element identifier with a label (for the tests that check every language has them). */
export const LABELLED_ELEMENTS: Readonly<Record<string, readonly string[]>> = {
  [MDL_NAMESPACE]: Object.keys(MDL_ELEMENTS),
  [AAMVA_NAMESPACE]: Object.keys(AAMVA_ELEMENTS),
};

const AGE_OVER = /^age_over_(\d{1,3})$/;
const BIOMETRIC = /^biometric_template_([A-Za-z0-9_]{1,40})$/;

export interface ElementInfo {
  /** i18n key of the label in the `outcome` namespace; undefined for an unknown element. */
  readonly labelKey: string | undefined;
  readonly labelParams: Readonly<Record<string, string | number>>;
  readonly group: Group;
  /** Position inside the group (unknown elements keep the backend's order after the known ones). */
  readonly order: number;
  readonly hint: ValueHint;
}

/** The threshold of an `age_over_NN` identifier, or undefined. */
export function ageOverThreshold(identifier: string): number | undefined {
  const match = AGE_OVER.exec(identifier);
  return match ? Number(match[1]) : undefined;
}

const labelKeyOf = (prefix: string, identifier: string): string => `label.${prefix}.${identifier.replace(/\./g, '_')}`;

/** Label, group and value kind of `namespace/identifier`. */
export function elementInfo(namespace: string, identifier: string): ElementInfo {
  if (namespace === MDL_NAMESPACE) {
    const known = MDL_ELEMENTS[identifier];
    if (known !== undefined) {
      return {
        labelKey: labelKeyOf('mdl', identifier),
        labelParams: {},
        group: known.group,
        order: Object.keys(MDL_ELEMENTS).indexOf(identifier),
        hint: known.hint ?? 'auto',
      };
    }
    const age = ageOverThreshold(identifier);
    if (age !== undefined)
      return { labelKey: 'label.mdl.age_over_nn', labelParams: { age }, group: 'dates', order: 1000 + age, hint: 'auto' };
    const biometric = BIOMETRIC.exec(identifier);
    if (biometric)
      return {
        labelKey: 'label.mdl.biometric_template',
        labelParams: { modality: biometric[1] ?? '' },
        group: 'physical',
        order: 1000,
        hint: 'bytes',
      };
  }
  if (namespace === AAMVA_NAMESPACE) {
    const known = AAMVA_ELEMENTS[identifier];
    if (known !== undefined) {
      return {
        labelKey: labelKeyOf('aamva', identifier),
        labelParams: {},
        group: known.group,
        order: 500 + Object.keys(AAMVA_ELEMENTS).indexOf(identifier),
        hint: known.hint ?? 'auto',
      };
    }
  }
  return { labelKey: undefined, labelParams: {}, group: 'other', order: 10_000, hint: 'auto' };
}
