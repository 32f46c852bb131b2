/**
 * From the backend's outcome to the kiosk's verdict. The backend verifies; the kiosk only decides what to
 * show, and errs on the side of rejecting: a credential is verified only when the backend reports no
 * errors and both the issuer and the device authentication as `Valid` (spec §2.4, §7.4). `Unchecked` is
 * not a pass. Warnings never reject (spec §2.4).
 */
import type { OutcomeView } from '../common/kiosk-view.js';
import { AuthenticationResult, type Outcome, type SessionResult } from '../common/protocol/messages.js';

function verdictOf(
  errors: Record<string, unknown>,
  issuer: AuthenticationResult | null,
  device: AuthenticationResult | null,
): Pick<OutcomeView, 'verdict' | 'reasons'> {
  const reasons: string[] = [];
  if (Object.keys(errors).length > 0) reasons.push('errors_reported');
  if (issuer !== 'Valid') reasons.push(issuer === null ? 'issuer_authentication_missing' : `issuer_authentication_${issuer.toLowerCase()}`);
  if (device !== 'Valid') reasons.push(device === null ? 'device_authentication_missing' : `device_authentication_${device.toLowerCase()}`);
  return { verdict: reasons.length === 0 ? 'verified' : 'rejected', reasons };
}

export function outcomeFromComplete(outcome: Outcome): OutcomeView {
  return {
    ...verdictOf(outcome.errors, outcome.issuer_authentication, outcome.device_authentication),
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
export function outcomeFromResult(result: SessionResult): OutcomeView | undefined {
  if (result.status !== COMPLETED_STATUS || result.response === undefined || result.errors === undefined) return undefined;
  const parseAuth = (v: string | undefined): AuthenticationResult | null => {
    const parsed = AuthenticationResult.safeParse(v);
    return parsed.success ? parsed.data : null;
  };
  const issuer = parseAuth(result.issuer_authentication);
  const device = parseAuth(result.device_authentication);
  const errors = result.errors;
  const base = verdictOf(errors, issuer ?? 'Valid', device ?? 'Valid');
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
    response: result.response,
    docTypes: result.doc_types ?? [],
    issuerAuthentication: issuer,
    deviceAuthentication: device,
    errors,
    warnings: result.warnings ?? {},
    source: 'recovered',
  };
}
