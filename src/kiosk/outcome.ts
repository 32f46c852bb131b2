/**
 * From the backend's outcome to the kiosk's verdict. The backend verifies; the kiosk only decides what to
 * show, and errs on the side of rejecting: a credential is verified only when the backend reports no
 * errors and both the issuer and the device authentication as `Valid` (spec §2.4, §7.4). `Unchecked` is
 * not a pass. Warnings never reject (spec §2.4).
 *
 * An outcome in which no document was checked (both authentications `Unchecked`) and nothing was
 * disclosed is not a forgery: the holder declined on the phone, or the wallet gave up. It is still a
 * rejection (nothing was proven), with the reason `nothing_shared` first, so the screen can say so kindly.
 */
import type { OutcomeView } from '../common/kiosk-view.js';
import { AuthenticationResult, type Outcome, type SessionResult } from '../common/protocol/messages.js';
import { answerFor, type AskedRequest } from './request-answer.js';

function nothingDisclosed(response: Record<string, Record<string, unknown>>): boolean {
  return Object.values(response).every((elements) => Object.keys(elements).length === 0);
}

function verdictOf(
  errors: Record<string, unknown>,
  issuer: AuthenticationResult | null,
  device: AuthenticationResult | null,
  response: Record<string, Record<string, unknown>>,
): Pick<OutcomeView, 'verdict' | 'reasons'> {
  const reasons: string[] = [];
  if (issuer === 'Unchecked' && device === 'Unchecked' && nothingDisclosed(response)) reasons.push('nothing_shared');
  if (Object.keys(errors).length > 0) reasons.push('errors_reported');
  if (issuer !== 'Valid') reasons.push(issuer === null ? 'issuer_authentication_missing' : `issuer_authentication_${issuer.toLowerCase()}`);
  if (device !== 'Valid') reasons.push(device === null ? 'device_authentication_missing' : `device_authentication_${device.toLowerCase()}`);
  return { verdict: reasons.length === 0 ? 'verified' : 'rejected', reasons };
}

/** The kiosk's outcome of a `complete` message, with the answer to `asked` (what the session requested). */
export function outcomeFromComplete(outcome: Outcome, asked: AskedRequest): OutcomeView {
  const verdict = verdictOf(outcome.errors, outcome.issuer_authentication, outcome.device_authentication, outcome.response);
  return {
    ...verdict,
    answer: answerFor({ verdict: verdict.verdict, response: outcome.response }, asked),
    response: outcome.response,
    docTypes: outcome.doc_types,
    issuerAuthentication: outcome.issuer_authentication,
    deviceAuthentication: outcome.device_authentication,
    errors: outcome.errors,
    warnings: outcome.warnings,
    source: 'complete',
  };
}

/** The only completed status value the spec shows (§2.2). */
export const COMPLETED_STATUS = 'success';

/**
 * A result fetched with `GET /sessions/{id}`, or undefined when it does not describe a finished
 * verification. The authentication results are presentation metadata the spec does not show there; when
 * the backend includes them they are honoured. When it does not, `status: success` and empty `errors`
 * say the session completed but not that the document is authentic, so the verdict is `undetermined`
 * ("could not determine"), never `verified` (fail closed). A reported failure still rejects.
 */
export function outcomeFromResult(result: SessionResult, asked: AskedRequest): OutcomeView | undefined {
  if (result.status !== COMPLETED_STATUS || result.response === undefined || result.errors === undefined) return undefined;
  const parseAuth = (v: string | undefined): AuthenticationResult | null => {
    const parsed = AuthenticationResult.safeParse(v);
    return parsed.success ? parsed.data : null;
  };
  const issuer = parseAuth(result.issuer_authentication);
  const device = parseAuth(result.device_authentication);
  const errors = result.errors;
  const base = verdictOf(errors, issuer ?? 'Valid', device ?? 'Valid', result.response);
  // An auth field that is present but not one of the three spec values is treated as a failure.
  if (result.issuer_authentication !== undefined && issuer === null) base.reasons.push('issuer_authentication_unrecognised');
  if (result.device_authentication !== undefined && device === null) base.reasons.push('device_authentication_unrecognised');
  const unreported = [
    ...(result.issuer_authentication === undefined ? ['issuer_authentication_not_reported'] : []),
    ...(result.device_authentication === undefined ? ['device_authentication_not_reported'] : []),
  ];
  const verdict = base.reasons.length > 0 ? 'rejected' : unreported.length > 0 ? 'undetermined' : 'verified';
  return {
    verdict,
    reasons: [...base.reasons, ...unreported],
    answer: answerFor({ verdict, response: result.response }, asked),
    response: result.response,
    docTypes: result.doc_types ?? [],
    issuerAuthentication: issuer,
    deviceAuthentication: device,
    errors,
    warnings: result.warnings ?? {},
    source: 'recovered',
  };
}
