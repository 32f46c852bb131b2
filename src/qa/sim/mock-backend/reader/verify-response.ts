/**
 * Verification of a decrypted DeviceResponse into the `complete` outcome (spec §2.4, §7.4). What runs
 * where:
 *
 * - @owf/mdoc `Verifier.verifyDeviceResponse` with the trusted IACA certificates and `now`, on the node
 *   context of `createNodeMdocContext`: issuerAuth signature, x5chain → trusted IACA (validity at `now`,
 *   CA rules), DS subject country present, MSO signed within the DS validity, MSO validity at `now`
 *   (30 s skew), digest algorithm present, `issuing_country`/`issuing_jurisdiction` vs the DS subject.
 * - Here, on the received bytes (device-response.ts explains why): value digests over the raw
 *   IssuerSignedItemBytes, MSO docType = document docType, device signature or device MAC (device-auth.ts),
 *   disclosure versus the request. @owf/mdoc's own digest and device checks are not used (they hash
 *   re-encodings; in 0.6.0 its `DeviceAuth.verify` rejects every deviceMac).
 *
 * Verdicts:
 * - `issuer_authentication`: `Valid` when the issuer signature, chain and DS rules pass and every disclosed
 *   element matches its MSO digest (so the disclosed data are what the issuer signed); `Invalid` as soon
 *   as any `issuer_authentication` or `data_integrity` finding exists; `Unchecked` when there was no mDL
 *   document to check (declined, document error, no documents).
 * - `device_authentication`: `Valid` / `Invalid` by the deviceSignature or deviceMac check; `Unchecked`
 *   without a document.
 * - An expired (or not yet valid) MSO is an error of category `validity`; it leaves the authentication
 *   verdicts alone: the signature is authentic, the credential is just not current.
 * - Disclosure: only requested elements may be disclosed (others are `request` errors and left out of
 *   `response`); a requested element not disclosed is a `request` warning. The one exception is the
 *   age_over_NN rule (an mdoc without the requested age_over_NN may answer with the nearest age_over_MM,
 *   as @owf/mdoc's limitDisclosure does): reported as a warning and included.
 */
import type { KeyObject } from 'node:crypto';
import { createHash, timingSafeEqual } from 'node:crypto';
import { Verifier, type MdocContext, type VerificationAssessment } from '@owf/mdoc';
import type { SessionTranscript } from '../../iso/session-transcript.js';
import type { OutcomeWire } from '../wire.js';
import { verifyDeviceAuthentication } from './device-auth.js';
import { parseDeviceResponse, type ParsedDeviceResponse, type ParsedDocument } from './device-response.js';
import { Findings, type Category } from './findings.js';
import { toJsonValue, type JsonValue } from './json-values.js';
import type { RequestedNamespaces } from './reader-session.js';
import { errorText } from '../../../../common/error-text.js';

export interface VerifyResponseInput {
  readonly deviceResponse: Uint8Array;
  readonly transcript: SessionTranscript;
  readonly eReaderPrivateKey: KeyObject;
  readonly docType: string;
  readonly requested: RequestedNamespaces;
  readonly trustedCertificates: readonly Uint8Array[];
  readonly now: Date;
  readonly context: MdocContext;
  /** Findings from the session layer (e.g. a SessionData status next to the data), reported with these. */
  readonly errors?: Findings;
  readonly warnings?: Findings;
}

/** DeviceResponse status codes (ISO/IEC 18013-5 Table 8, as Multipaz's `Constants.kt` lists them). */
const RESPONSE_STATUS: Readonly<Record<number, string>> = {
  0: 'OK',
  10: 'general error',
  11: 'CBOR decoding error',
  12: 'CBOR validation error',
};
const DIGESTS: Readonly<Record<string, string>> = { 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' };
const AGE_OVER = /^age_over_(\d{2})$/;

const message = (error: unknown): string => errorText(error);
const statusText = (status: number): string => `${status}${RESPONSE_STATUS[status] === undefined ? '' : ` (${RESPONSE_STATUS[status]})`}`;

/** An outcome without a checked document: the session ended, or the response held no usable mDL. */
export function uncheckedOutcome(errors: Findings, warnings: Findings = new Findings(), docTypes: string[] = []): OutcomeWire {
  return {
    response: {},
    doc_types: docTypes,
    issuer_authentication: 'Unchecked',
    device_authentication: 'Unchecked',
    errors: errors.toJson(),
    warnings: warnings.toJson(),
  };
}

/**
 * @owf/mdoc check → our category, or undefined for the checks we replace with byte-exact ones
 * (value digests, device authentication) or that we judge ourselves (request matching).
 */
function categoryOf(check: VerificationAssessment): Category | undefined {
  switch (check.category) {
    case 'ISSUER_AUTH':
      return check.check.startsWith('The MSO must be valid at the time of verification') ? 'validity' : 'issuer_authentication';
    case 'DATA_INTEGRITY':
      if (check.check.startsWith('The calculated digest for') || check.check.startsWith('Issuer Auth must include digests for namespace'))
        return undefined;
      return 'data_integrity';
    case 'DOCUMENT_FORMAT':
      return check.check.startsWith('Device Response did') ? undefined : 'document';
    case 'DEVICE_AUTH':
    case 'READER_AUTH':
      return undefined;
  }
}

async function runIssuerChecks(input: VerifyResponseInput, errors: Findings, warnings: Findings): Promise<void> {
  const checks: VerificationAssessment[] = [];
  try {
    await Verifier.verifyDeviceResponse(
      {
        deviceResponse: input.deviceResponse,
        sessionTranscript: input.transcript.taggedBytes,
        trustedCertificates: [...input.trustedCertificates],
        now: input.now,
        onCheck: (check) => checks.push(check),
      },
      input.context,
    );
  } catch (error) {
    errors.add('issuer_authentication', `issuer verification could not run: ${message(error)}`);
  }
  for (const check of checks) {
    if (check.status === 'PASSED') continue;
    const category = categoryOf(check);
    if (category === undefined) continue;
    const text = check.reason === undefined || check.reason === check.check ? check.check : `${check.check}: ${check.reason}`;
    (check.status === 'FAILED' ? errors : warnings).add(category, text);
  }
}

/** Value digests over the received IssuerSignedItemBytes, and the MSO docType (ISO/IEC 18013-5 §9.1.2.4). */
function checkDataIntegrity(document: ParsedDocument, errors: Findings): void {
  const { mso } = document;
  if (mso.docType !== document.docType) {
    errors.add('data_integrity', `the MSO is for docType ${mso.docType}, the document says ${document.docType}`);
  }
  const hash = DIGESTS[mso.digestAlgorithm];
  if (hash === undefined) {
    errors.add('data_integrity', `unsupported MSO digestAlgorithm ${mso.digestAlgorithm}: no element can be checked`);
    return;
  }
  for (const item of document.items) {
    const name = `${item.namespace}/${item.elementIdentifier}`;
    const expected = mso.valueDigests.get(item.namespace)?.get(item.digestId);
    if (expected === undefined) {
      errors.add('data_integrity', `no MSO digest for ${name} (digestID ${item.digestId})`);
      continue;
    }
    const actual = createHash(hash).update(item.itemBytes).digest();
    if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) {
      errors.add('data_integrity', `digest mismatch for ${name} (digestID ${item.digestId}): the element is not what the issuer signed`);
    }
  }
}

interface Disclosure {
  readonly response: Record<string, Record<string, JsonValue>>;
}

/** Disclosure versus the request; builds `response` from requested (and age_over-substituted) elements. */
function checkDisclosure(document: ParsedDocument, requested: RequestedNamespaces, errors: Findings, warnings: Findings): Disclosure {
  const response: Record<string, Record<string, JsonValue>> = {};
  const wanted = new Map<string, Set<string>>(Object.entries(requested).map(([ns, elements]) => [ns, new Set(elements)]));
  const disclosed = new Map<string, Set<string>>();
  const pendingAgeSubstitutes: { namespace: string; element: string; value: unknown }[] = [];
  const put = (namespace: string, element: string, value: unknown): void => {
    let converted: JsonValue;
    try {
      converted = toJsonValue(value);
    } catch (error) {
      errors.add('document', `${namespace}/${element}: value cannot be represented: ${message(error)}`);
      return;
    }
    (response[namespace] ??= {})[element] = converted;
  };
  for (const item of document.items) {
    const { namespace, elementIdentifier: element } = item;
    const seen = disclosed.get(namespace) ?? new Set<string>();
    disclosed.set(namespace, seen);
    if (seen.has(element)) {
      errors.add('document', `${namespace}/${element} is disclosed more than once`);
      continue;
    }
    seen.add(element);
    if (wanted.get(namespace)?.has(element) === true) put(namespace, element, item.elementValue);
    else if (AGE_OVER.test(element)) pendingAgeSubstitutes.push({ namespace, element, value: item.elementValue });
    else errors.add('request', `${namespace}/${element} was disclosed but not requested`);
  }
  for (const [namespace, elements] of wanted) {
    const got = disclosed.get(namespace);
    for (const element of elements) {
      if (got?.has(element) === true) continue;
      const substitute = AGE_OVER.test(element) ? pendingAgeSubstitutes.find((s) => s.namespace === namespace) : undefined;
      if (substitute !== undefined) {
        pendingAgeSubstitutes.splice(pendingAgeSubstitutes.indexOf(substitute), 1);
        warnings.add('request', `requested ${namespace}/${element} was answered with ${substitute.element} (age_over_NN substitution)`);
        put(namespace, substitute.element, substitute.value);
        continue;
      }
      const refused = document.elementErrors.find((e) => e.namespace === namespace && e.element === element);
      warnings.add(
        'request',
        `requested ${namespace}/${element} was not disclosed${refused === undefined ? '' : ` (document error code ${String(refused.code)})`}`,
      );
    }
  }
  for (const extra of pendingAgeSubstitutes) errors.add('request', `${extra.namespace}/${extra.element} was disclosed but not requested`);
  if (document.deviceNameSpaces.size > 0) {
    warnings.add(
      'document',
      `device-signed elements are ignored (only issuer-signed elements are reported): ${[...document.deviceNameSpaces.keys()].map(String).join(', ')}`,
    );
  }
  return { response };
}

function documentLevelFindings(parsed: ParsedDeviceResponse, docType: string, errors: Findings, warnings: Findings): void {
  if (!parsed.version.startsWith('1.')) warnings.add('document', `DeviceResponse version ${parsed.version} (expected 1.x)`);
  for (const entry of parsed.documentErrors) {
    const text = `the wallet returned no ${entry.docType} document (document error code ${String(entry.code)})`;
    if (entry.docType === docType) errors.add('document', text);
    else warnings.add('document', text);
  }
  if (parsed.status !== 0) {
    const text = `DeviceResponse status ${statusText(parsed.status)}`;
    if (parsed.documents.length === 0) errors.add('document', text);
    else warnings.add('document', text);
  }
}

/** Verifies the DeviceResponse of this session; never throws. */
export async function verifyDeviceResponse(input: VerifyResponseInput): Promise<OutcomeWire> {
  const errors = input.errors ?? new Findings();
  const warnings = input.warnings ?? new Findings();
  let parsed: ParsedDeviceResponse;
  try {
    parsed = parseDeviceResponse(input.deviceResponse);
  } catch (error) {
    errors.add('document', `the DeviceResponse cannot be read: ${message(error)}`);
    return uncheckedOutcome(errors, warnings);
  }
  documentLevelFindings(parsed, input.docType, errors, warnings);
  const docTypes = parsed.documents.map((entry) => (entry.ok ? entry.document.docType : (entry.docType ?? '(unreadable)')));
  const matching = parsed.documents.filter((entry) => (entry.ok ? entry.document.docType : entry.docType) === input.docType);
  for (const entry of parsed.documents) {
    const type = entry.ok ? entry.document.docType : entry.docType;
    if (type !== input.docType) errors.add('request', `a ${type ?? 'document of unreadable type'} document was returned but not requested`);
  }
  const first = matching[0];
  if (first === undefined) {
    if (!errors.has('document')) errors.add('document', `the DeviceResponse contains no ${input.docType} document`);
    return uncheckedOutcome(errors, warnings, docTypes);
  }
  if (matching.length > 1)
    errors.add('document', `${matching.length} ${input.docType} documents were returned; only the first is reported`);
  if (!first.ok) {
    errors.add('document', `the ${input.docType} document cannot be read: ${first.error}`);
    return {
      response: {},
      doc_types: docTypes,
      issuer_authentication: 'Invalid',
      device_authentication: 'Invalid',
      errors: errors.toJson(),
      warnings: warnings.toJson(),
    };
  }
  const document = first.document;
  await runIssuerChecks(input, errors, warnings);
  checkDataIntegrity(document, errors);
  const device = verifyDeviceAuthentication({ document, transcript: input.transcript, eReaderPrivateKey: input.eReaderPrivateKey });
  if (!device.valid)
    errors.add('device_authentication', `${device.method === 'none' ? 'device authentication' : device.method}: ${device.reason}`);
  const { response } = checkDisclosure(document, input.requested, errors, warnings);
  return {
    response,
    doc_types: docTypes,
    issuer_authentication: errors.has('issuer_authentication') || errors.has('data_integrity') ? 'Invalid' : 'Valid',
    device_authentication: device.valid ? 'Valid' : 'Invalid',
    errors: errors.toJson(),
    warnings: warnings.toJson(),
  };
}
