/**
 * Request profiles: which mDL elements the kiosk asks for (sent in `engage`, spec §2.3).
 * Element identifiers are those of ISO/IEC 18013-5:2021 §7.2.1 (namespace `org.iso.18013.5.1`).
 * Whether the verifier retains data (`intent_to_retain`) is decided by the backend, not here.
 */
import type { Namespaces } from '../common/protocol/messages.js';
import type { KioskConfig } from '../platform/config.js';

export const MDL_NAMESPACE = 'org.iso.18013.5.1';

export interface RequestProfile {
  readonly name: string;
  readonly label: string;
  readonly namespaces: Namespaces;
  /**
   * The elements whose absence means the request was not met (src/kiosk/request-answer.ts); absent:
   * every element asked for.
   */
  readonly required?: Namespaces;
}

/**
 * The elements every mDL carries (ISO/IEC 18013-5 §7.2.1, Table 5, presence "M"); the others are optional
 * and a document without them is not wanting.
 */
export const MANDATORY_MDL_ELEMENTS: readonly string[] = [
  'family_name',
  'given_name',
  'birth_date',
  'issue_date',
  'expiry_date',
  'issuing_country',
  'issuing_authority',
  'document_number',
  'portrait',
  'driving_privileges',
  'un_distinguishing_sign',
];

/**
 * Every data element of the mDL namespace with a fixed identifier. `age_over_NN` exists for any NN the
 * issuer chose; we ask for the thresholds counters use. `biometric_template_xx` is left out: its
 * identifiers are per modality and issuer-defined.
 */
export const ALL_MDL_ELEMENTS: readonly string[] = [
  ...MANDATORY_MDL_ELEMENTS,
  'administrative_number',
  'sex',
  'height',
  'weight',
  'eye_colour',
  'hair_colour',
  'birth_place',
  'resident_address',
  'portrait_capture_date',
  'age_in_years',
  'age_birth_year',
  'age_over_16',
  'age_over_18',
  'age_over_21',
  'age_over_25',
  'age_over_60',
  'age_over_65',
  'issuing_jurisdiction',
  'nationality',
  'resident_city',
  'resident_state',
  'resident_postal_code',
  'resident_country',
  'family_name_national_character',
  'given_name_national_character',
  'signature_usual_mark',
];

const mdl = (elements: readonly string[]): Namespaces => ({ [MDL_NAMESPACE]: [...elements] });

/** Age checks carry the portrait so staff can match the face to the person at the counter. */
export const BUILT_IN_PROFILES: Readonly<Record<string, RequestProfile>> = {
  age_over_18: { name: 'age_over_18', label: 'Age 18+', namespaces: mdl(['age_over_18', 'portrait']) },
  age_over_21: { name: 'age_over_21', label: 'Age 21+', namespaces: mdl(['age_over_21', 'portrait']) },
  identity: {
    name: 'identity',
    label: 'Identity',
    namespaces: mdl([
      'family_name',
      'given_name',
      'birth_date',
      'portrait',
      'document_number',
      'expiry_date',
      'issuing_authority',
      'issuing_country',
    ]),
  },
  // Everything a document may hold: met when it holds what every mDL must.
  full: { name: 'full', label: 'Full mDL', namespaces: mdl(ALL_MDL_ELEMENTS), required: mdl(MANDATORY_MDL_ELEMENTS) },
};

/** Built-ins plus the custom profiles of the configuration (a custom profile may replace a built-in). */
export function availableProfiles(config: Pick<KioskConfig, 'profiles'>): Record<string, RequestProfile> {
  const out: Record<string, RequestProfile> = { ...BUILT_IN_PROFILES };
  for (const [name, custom] of Object.entries(config.profiles)) {
    out[name] = { name, label: custom.label ?? name, namespaces: custom.namespaces };
  }
  return out;
}

export class UnknownProfileError extends Error {
  override readonly name = 'UnknownProfileError';
}

export function resolveProfile(config: Pick<KioskConfig, 'profiles'>, name: string): RequestProfile {
  const profiles = availableProfiles(config);
  const profile = profiles[name];
  if (!profile) {
    throw new UnknownProfileError(`unknown request profile "${name}"; known: ${Object.keys(profiles).join(', ')}`);
  }
  return profile;
}
