/**
 * The virtual phone's test mDL: issued with @owf/mdoc's `Issuer` on our node:crypto `MdocContext`
 * (src/qa/sim/iso/mdoc-context.ts), signed by the test document signer (pki.ts), bound to a P-256 device key
 * whose COSE_Key carries no alg in the MSO; the holder signs with it as ES256 (left to itself, @owf/mdoc 0.6.0
 * would write the deviceSignature header {1: null}, which strict readers such as @auth0/mdl reject).
 *
 * Elements (namespace org.iso.18013.5.1, ISO/IEC 18013-5 §7.2.1): the full list a kiosk "full" profile asks
 * for. Encodings follow the Annex D DeviceResponse (`test/fixtures/iso18013-5/`): birth_date, issue_date,
 * expiry_date and the dates inside driving_privileges are full-date (tag 1004); portrait_capture_date is a tdate (tag 0); portrait and
 * signature_usual_mark are JPEG byte strings; sex is ISO/IEC 5218 (1 male, 2 female); height in cm;
 * weight in kg; age_in_years / age_birth_year / age_over_NN are computed from birth_date at issuance.
 *
 * Validity (MSO validityInfo, ISO/IEC 18013-5 §9.1.2.4): `valid` = signed now, valid from a minute ago for a
 * year; `expired` = signed a year ago, valid until yesterday (the document's expiry_date is yesterday too).
 * A tampered credential has one element value changed after signing, so that element's digest no longer
 * matches the MSO's valueDigest; everything else about it stays authentic. Which element:
 * - `tamper: true` (what the phone's "tampered" behaviour uses): one the reader actually asks for, altered
 *   when the holder answers (holder-session.ts) — the first requested element the credential holds, a
 *   non-portrait one if any. A digest is only checked for disclosed elements, so altering an element the
 *   request leaves out (as `family_name` under an age_over_21 request) would go unnoticed and read verified;
 * - `tamper: {element, namespace}`: that element, altered at issuance, whatever is requested.
 *
 * The portrait is JPEG by default, or (`portraitFormat: 'jpeg2000'`) the same face as a lossless JP2 file.
 */
import { DateOnly, DeviceKey, Issuer, IssuerSigned, SignatureAlgorithm, CoseKey, type MdocContext } from '@owf/mdoc';
import { Tag, TAG_FULL_DATE, cborDecode, cborEncode, encodeTag24, expectMap, expectText } from '../iso/cbor.js';
import { encodeRawArray, encodeRawMap, rawArrayItems, rawMapEntries, rawTag24Content } from '../iso/cbor-raw.js';
import { encodeCoseKey, generateP256KeyPair, toEs256Jwk, type P256KeyPair } from '../iso/cose-key.js';
import { createNodeMdocContext } from '../iso/mdoc-context.js';
import { getTestPki, type TestPki } from './pki.js';
import { drawPortraitJpeg, drawPortraitJpeg2000, drawSignatureJpeg } from './portrait.js';

export const MDL_DOC_TYPE = 'org.iso.18013.5.1.mDL';
export const MDL_NAMESPACE = 'org.iso.18013.5.1';

const DAY_MS = 86_400_000;

/** A driving privilege as the holder sees it; dates "YYYY-MM-DD". */
export interface DrivingPrivilege {
  readonly vehicle_category_code: string;
  readonly issue_date?: string;
  readonly expiry_date?: string;
}

/**
 * The person and document data of the test mDL, in plain JS. Dates are "YYYY-MM-DD" text (written as
 * full-date), except `portrait_capture_date` (a Date, written as tdate). Ages are derived from
 * `birth_date`; issue and expiry dates from the validity unless given.
 */
export interface MdlHolderData {
  readonly family_name: string;
  readonly given_name: string;
  readonly birth_date: string;
  readonly issue_date?: string;
  readonly expiry_date?: string;
  readonly issuing_country?: string;
  readonly issuing_authority: string;
  readonly issuing_jurisdiction?: string;
  readonly document_number: string;
  readonly administrative_number: string;
  readonly driving_privileges: readonly DrivingPrivilege[];
  readonly un_distinguishing_sign: string;
  readonly sex: 1 | 2;
  readonly height: number;
  readonly weight: number;
  readonly eye_colour: string;
  readonly hair_colour: string;
  readonly birth_place: string;
  readonly resident_address: string;
  readonly resident_city: string;
  readonly resident_state: string;
  readonly resident_postal_code: string;
  readonly resident_country: string;
  readonly nationality: string;
  readonly family_name_national_character: string;
  readonly given_name_national_character: string;
  readonly portrait_capture_date?: Date;
  /** JPEG bytes; drawn by portrait.ts when absent. */
  readonly portrait?: Uint8Array;
  readonly signature_usual_mark?: Uint8Array;
}

export const DEFAULT_HOLDER_DATA: MdlHolderData = {
  family_name: 'Doe',
  given_name: 'Jane',
  birth_date: '1990-04-12',
  issuing_authority: 'Virtual Department of Motor Vehicles',
  document_number: 'D1234567',
  administrative_number: 'A-9876-5432',
  driving_privileges: [
    { vehicle_category_code: 'B', issue_date: '2015-06-01', expiry_date: '2033-06-01' },
    { vehicle_category_code: 'A', issue_date: '2018-03-15', expiry_date: '2033-06-01' },
  ],
  un_distinguishing_sign: 'USA',
  sex: 2,
  height: 168,
  weight: 61,
  eye_colour: 'brown',
  hair_colour: 'brown',
  birth_place: 'Sacramento, California',
  resident_address: '1200 Capitol Mall, Apt 4',
  resident_city: 'Sacramento',
  resident_state: 'California',
  resident_postal_code: '95814',
  resident_country: 'US',
  nationality: 'US',
  family_name_national_character: 'Doe',
  given_name_national_character: 'Jane',
};

/** Age thresholds written as age_over_NN (those counters ask for). */
export const AGE_OVER_THRESHOLDS: readonly number[] = [16, 18, 21, 25, 60, 65];

export type CredentialValidity = 'valid' | 'expired';

export type PortraitFormat = 'jpeg' | 'jpeg2000';

export interface TamperSpec {
  /** Element whose value is altered after signing (default family_name). */
  readonly element?: string;
  readonly namespace?: string;
}

export interface TestCredentialOptions {
  /** Issuing PKI (default: the per-process `getTestPki()`). */
  readonly pki?: TestPki;
  readonly holder?: Partial<MdlHolderData>;
  /** Default `valid`. */
  readonly validity?: CredentialValidity;
  /**
   * Change one element after signing: `true`, a requested one when answering (see the module comment);
   * a spec, that element at issuance.
   */
  readonly tamper?: boolean | TamperSpec;
  /** The portrait's encoding (default `jpeg`); ignored when `holder.portrait` is given. */
  readonly portraitFormat?: PortraitFormat;
  /** The holder's device key (default: fresh P-256). */
  readonly deviceKey?: P256KeyPair;
  /** Issuance time (default now). */
  readonly now?: Date;
  readonly context?: MdocContext;
}

export interface CredentialValidityInfo {
  readonly signed: Date;
  readonly validFrom: Date;
  readonly validUntil: Date;
}

export interface TestCredential {
  readonly docType: string;
  readonly namespace: string;
  /** The IssuerSigned as @owf/mdoc models it (what the holder presents). */
  readonly issuerSigned: IssuerSigned;
  /** Its CBOR (tampered bytes included when tampered). */
  readonly issuerSignedBytes: Uint8Array;
  /** SDeviceKey: the key the MSO binds (deviceKeyInfo, ISO/IEC 18013-5 §9.1.2.4); signs deviceSignature, derives EMacKey. */
  readonly deviceKey: P256KeyPair;
  readonly pki: TestPki;
  readonly validity: CredentialValidityInfo;
  readonly validityKind: CredentialValidity;
  /** Element identifiers present, per namespace. */
  readonly elements: ReadonlyMap<string, readonly string[]>;
  /** The element altered after signing at issuance, if any. */
  readonly tampered: { readonly namespace: string; readonly element: string } | undefined;
  /** Alter a requested element when answering (`tamper: true`); the stored bytes are authentic. */
  readonly tamperAtAnswer: boolean;
  /** How the default portrait is encoded (a caller's own `holder.portrait` is reported as `jpeg`). */
  readonly portraitFormat: PortraitFormat;
}

function isoDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}

function addYears(date: string, years: number): string {
  const [y, rest] = [Number(date.slice(0, 4)), date.slice(4)];
  return `${String(y + years).padStart(4, '0')}${rest === '-02-29' ? '-02-28' : rest}`;
}

/** Completed years between `birthDate` (YYYY-MM-DD) and `at` (UTC). */
export function ageAt(birthDate: string, at: Date): number {
  const [year, month, day] = birthDate.split('-').map(Number) as [number, number, number];
  let age = at.getUTCFullYear() - year;
  const beforeBirthday = at.getUTCMonth() + 1 < month || (at.getUTCMonth() + 1 === month && at.getUTCDate() < day);
  if (beforeBirthday) age--;
  return age;
}

function validityFor(kind: CredentialValidity, now: Date): CredentialValidityInfo {
  // tdate has whole seconds (mdoc-ts writes `…:SSZ`); start a minute early so "now" verifications pass.
  if (kind === 'valid') {
    return { signed: now, validFrom: new Date(now.getTime() - 60_000), validUntil: new Date(now.getTime() + 365 * DAY_MS) };
  }
  return {
    signed: new Date(now.getTime() - 365 * DAY_MS),
    validFrom: new Date(now.getTime() - 365 * DAY_MS),
    validUntil: new Date(now.getTime() - DAY_MS),
  };
}

/** The namespace values handed to @owf/mdoc's Issuer (full-dates as DateOnly, ages computed). */
export function mdlElementValues(holder: MdlHolderData, pki: TestPki, validity: CredentialValidityInfo): Record<string, unknown> {
  // The document was issued a year before this MSO was signed and runs 8 years (the MSO is re-signed
  // far more often than the document is reissued).
  const issueDate = holder.issue_date ?? isoDate(new Date(validity.signed.getTime() - 365 * DAY_MS));
  const expiryDate = holder.expiry_date ?? addYears(issueDate, 8);
  const age = ageAt(holder.birth_date, validity.signed);
  const values: Record<string, unknown> = {
    family_name: holder.family_name,
    given_name: holder.given_name,
    birth_date: new DateOnly(holder.birth_date),
    issue_date: new DateOnly(issueDate),
    expiry_date: new DateOnly(expiryDate),
    issuing_country: holder.issuing_country ?? pki.country,
    issuing_authority: holder.issuing_authority,
    document_number: holder.document_number,
    portrait: holder.portrait ?? drawPortraitJpeg(),
    driving_privileges: holder.driving_privileges.map((privilege) => ({
      vehicle_category_code: privilege.vehicle_category_code,
      ...(privilege.issue_date === undefined ? {} : { issue_date: new DateOnly(privilege.issue_date) }),
      ...(privilege.expiry_date === undefined ? {} : { expiry_date: new DateOnly(privilege.expiry_date) }),
    })),
    un_distinguishing_sign: holder.un_distinguishing_sign,
    administrative_number: holder.administrative_number,
    sex: holder.sex,
    height: holder.height,
    weight: holder.weight,
    eye_colour: holder.eye_colour,
    hair_colour: holder.hair_colour,
    birth_place: holder.birth_place,
    resident_address: holder.resident_address,
    portrait_capture_date: holder.portrait_capture_date ?? new Date(`${issueDate}T09:30:00Z`),
    age_in_years: age,
    age_birth_year: Number(holder.birth_date.slice(0, 4)),
  };
  for (const threshold of AGE_OVER_THRESHOLDS) values[`age_over_${threshold}`] = age >= threshold;
  const jurisdiction = holder.issuing_jurisdiction ?? pki.jurisdiction;
  if (jurisdiction !== undefined) values.issuing_jurisdiction = jurisdiction;
  Object.assign(values, {
    nationality: holder.nationality,
    resident_city: holder.resident_city,
    resident_state: holder.resident_state,
    resident_postal_code: holder.resident_postal_code,
    resident_country: holder.resident_country,
    family_name_national_character: holder.family_name_national_character,
    given_name_national_character: holder.given_name_national_character,
    signature_usual_mark: holder.signature_usual_mark ?? drawSignatureJpeg(),
  });
  return values;
}

function elementsOf(issuerSignedBytes: Uint8Array): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const nameSpaces = rawMapEntries(issuerSignedBytes).find((entry) => entry.key === 'nameSpaces');
  if (nameSpaces === undefined) return out;
  for (const entry of rawMapEntries(nameSpaces.rawValue)) {
    const namespace = expectText(entry.key, 'namespace');
    out.set(
      namespace,
      rawArrayItems(entry.rawValue).map((item) =>
        expectText(expectMap(cborDecode(rawTag24Content(item)), 'IssuerSignedItem').get('elementIdentifier'), 'elementIdentifier'),
      ),
    );
  }
  return out;
}

/** A different value of the same kind, so the item still decodes but no longer matches its digest. */
function alteredValue(value: unknown): unknown {
  if (typeof value === 'string') return value.length > 0 ? `${value.slice(0, -1)}${value.endsWith('x') ? 'y' : 'x'}` : 'x';
  if (typeof value === 'boolean') return !value;
  if (typeof value === 'number') return value + 1;
  if (value instanceof Uint8Array) {
    const copy = Uint8Array.from(value);
    const at = Math.floor(copy.length / 2);
    copy[at] = (copy[at] ?? 0) ^ 0x01;
    return copy;
  }
  if (value instanceof Tag && value.tag === TAG_FULL_DATE && typeof value.value === 'string') {
    return new Tag(addYears(value.value, -1), TAG_FULL_DATE);
  }
  return 'tampered';
}

/**
 * IssuerSigned bytes with `element`'s value changed inside its IssuerSignedItem (digestID, random and the
 * MSO untouched). Everything but that item is spliced through unchanged (never re-encode what is signed:
 * another encoder's bytes may differ).
 */
export function tamperIssuerSignedBytes(issuerSignedBytes: Uint8Array, namespace: string, element: string): Uint8Array {
  const state = { found: false };
  const entries = rawMapEntries(issuerSignedBytes).map((entry): [Uint8Array, Uint8Array] => {
    if (entry.key !== 'nameSpaces') return [entry.rawKey, entry.rawValue];
    const namespaces = rawMapEntries(entry.rawValue).map((ns): [Uint8Array, Uint8Array] => {
      if (ns.key !== namespace) return [ns.rawKey, ns.rawValue];
      const items = rawArrayItems(ns.rawValue).map((item) => {
        const map = expectMap(cborDecode(rawTag24Content(item)), 'IssuerSignedItem');
        if (map.get('elementIdentifier') !== element) return item;
        state.found = true;
        map.set('elementValue', alteredValue(map.get('elementValue')));
        return encodeTag24(cborEncode(map));
      });
      return [ns.rawKey, encodeRawArray(items)];
    });
    return [entry.rawKey, encodeRawMap(namespaces)];
  });
  if (!state.found) throw new TypeError(`cannot tamper: the credential has no ${namespace}/${element}`);
  return encodeRawMap(entries);
}

/** Issues a fresh test mDL (see the module comment). */
export async function issueTestCredential(options: TestCredentialOptions = {}): Promise<TestCredential> {
  const pki = options.pki ?? (await getTestPki());
  const context = options.context ?? createNodeMdocContext();
  const validityKind = options.validity ?? 'valid';
  const validity = validityFor(validityKind, options.now ?? new Date());
  let holder: MdlHolderData = {
    ...DEFAULT_HOLDER_DATA,
    ...(validityKind === 'expired' ? { expiry_date: isoDate(validity.validUntil) } : {}),
    ...options.holder,
  };
  const portraitFormat = options.holder?.portrait === undefined ? (options.portraitFormat ?? 'jpeg') : 'jpeg';
  if (portraitFormat === 'jpeg2000') holder = { ...holder, portrait: await drawPortraitJpeg2000() };
  const deviceKey = options.deviceKey ?? generateP256KeyPair();
  const issuerSigned = await new Issuer(MDL_DOC_TYPE, context)
    .addIssuerNamespace(MDL_NAMESPACE, mdlElementValues(holder, pki, validity))
    .sign({
      signingKey: CoseKey.fromJwk(toEs256Jwk(pki.documentSigner.privateKey)),
      algorithm: SignatureAlgorithm.ES256,
      digestAlgorithm: 'SHA-256',
      validityInfo: validity,
      // The MSO deviceKey is the bare COSE_Key {1: 2, -1: 1, -2: x, -3: y}, as in the Annex D MSO.
      deviceKeyInfo: { deviceKey: DeviceKey.decode(encodeCoseKey(deviceKey.publicKey)) },
      certificates: [pki.documentSigner.der],
    });
  let issuerSignedBytes = issuerSigned.encode();
  let tampered: TestCredential['tampered'];
  if (typeof options.tamper === 'object') {
    const spec = options.tamper;
    tampered = { namespace: spec.namespace ?? MDL_NAMESPACE, element: spec.element ?? 'family_name' };
    issuerSignedBytes = tamperIssuerSignedBytes(issuerSignedBytes, tampered.namespace, tampered.element);
  }
  return {
    docType: MDL_DOC_TYPE,
    namespace: MDL_NAMESPACE,
    issuerSigned: tampered === undefined ? issuerSigned : IssuerSigned.decode(issuerSignedBytes),
    issuerSignedBytes,
    deviceKey,
    pki,
    validity,
    validityKind,
    elements: elementsOf(issuerSignedBytes),
    tampered,
    tamperAtAnswer: options.tamper === true,
    portraitFormat,
  };
}

const cache = new Map<string, Promise<TestCredential>>();

/**
 * The per-process test credential for a validity/tamper/portrait variant, issued on first use from the
 * cached PKI (`getTestPki()`), then shared. `fresh: true` issues a new one and caches it instead.
 */
export function getTestCredential(
  options: {
    readonly validity?: CredentialValidity;
    readonly tamper?: boolean | TamperSpec;
    readonly portraitFormat?: PortraitFormat;
    readonly fresh?: boolean;
  } = {},
): Promise<TestCredential> {
  const tamper = options.tamper === undefined || options.tamper === false ? undefined : options.tamper;
  const tamperKey =
    tamper === undefined ? null : tamper === true ? 'requested' : [tamper.namespace ?? MDL_NAMESPACE, tamper.element ?? 'family_name'];
  const portraitFormat = options.portraitFormat ?? 'jpeg';
  const key = JSON.stringify([options.validity ?? 'valid', tamperKey, portraitFormat]);
  let entry = cache.get(key);
  if (entry === undefined || options.fresh === true) {
    const issuing = issueTestCredential({
      ...(options.validity === undefined ? {} : { validity: options.validity }),
      ...(tamper === undefined ? {} : { tamper }),
      portraitFormat,
    });
    entry = issuing;
    cache.set(key, issuing);
    issuing.catch(() => {
      if (cache.get(key) === issuing) cache.delete(key);
    });
  }
  return entry;
}
