/**
 * Whether a run ended as its fault says it must (docs/soak.md has the table).
 *
 * Two kinds of rule:
 * - the result kind each fault allows: verified when nothing interfered; otherwise the error the fault
 *   causes (a fault that may or may not bite — a drop after the phone's last chunk — is decided by what the
 *   phone itself saw, never by what the kiosk reported);
 * - the verdict, always: `verified` only when the phone really shared (its own outcome says so), holds a
 *   valid credential and approved, both authentications are `Valid`, no error is reported, and the screen
 *   gets exactly the elements the phone released with the holder's true values; an expired or tampered
 *   credential or a declined request is never `verified`, and a valid, approved, complete one is never
 *   `rejected` either.
 */
import type { VerificationReport } from '../../src/kiosk/kiosk.js';
import type { PhoneOutcomeSummary } from '../../src/qa/index.js';
import type { Fault, RunPlan } from './plan.js';

export type ResultKind = VerificationReport['result'];

export const MDL_NAMESPACE = 'org.iso.18013.5.1';

/** What the soak saw happen in a run, besides the kiosk's report. */
export interface RunFacts {
  /** The tag was asked for the APDU at which its field drops. */
  readonly fieldDropped: boolean;
  /** The phone was lifted before the reader had read its Handover Select. */
  readonly liftedBeforeHandover: boolean;
  /** The kiosk asked for the phone again (`awaiting_card`). */
  readonly sawAwaitingCard: boolean;
  /**
   * When the backend went away: before the verification took its session (the kiosk then waits for a
   * new one), while the verification was using it (its socket drops), or just after it had sent
   * `complete` (which may or may not have reached the kiosk before the connection died).
   */
  readonly offline: 'no' | 'before_session' | 'during_run' | 'after_complete';
  /** pcscd was killed before the kiosk's report. */
  readonly pcscdKilledBeforeReport: boolean;
}

export const NO_FACTS: RunFacts = {
  fieldDropped: false,
  liftedBeforeHandover: false,
  sawAwaitingCard: false,
  offline: 'no',
  pcscdKilledBeforeReport: false,
};

/** The holder's values the response must carry (the virtual wallet's DEFAULT_HOLDER_DATA). */
export interface HolderTruth {
  readonly strings: Readonly<Record<string, string>>;
  readonly birthDate: string;
  /** Portrait bytes per format, as the phone holds them. */
  readonly portraits: { readonly jpeg: Uint8Array; readonly jpeg2000: Uint8Array };
}

export type Verdict = { readonly ok: true } | { readonly ok: false; readonly problem: string };

const OK: Verdict = { ok: true };
const fail = (problem: string): Verdict => ({ ok: false, problem });

/** Age in whole years on `at` (UTC), for `age_over_NN`. */
export function ageOn(birthDate: string, at: Date): number {
  const [y, m, d] = birthDate.split('-').map(Number) as [number, number, number];
  let age = at.getUTCFullYear() - y;
  if (at.getUTCMonth() + 1 < m || (at.getUTCMonth() + 1 === m && at.getUTCDate() < d)) age--;
  return age;
}

/** The result kinds `fault` allows in this run (given what the phone and the soak saw). */
export function allowedResults(fault: Fault, phone: PhoneOutcomeSummary | undefined, facts: RunFacts): readonly ResultKind[] {
  const shared = phone?.kind === 'shared';
  switch (fault.kind) {
    case 'card_lifted':
      // Lifted during the handover: the backend asks for the phone again, nobody taps, the wait times out.
      return facts.liftedBeforeHandover ? ['timeout'] : ['complete'];
    case 'ble_drop':
    case 'wrong_ident':
      return shared ? ['complete'] : ['ble_link_lost', 'timeout'];
    case 'radio_drop':
      // The link may go after the phone's last chunk (then the backend still completes) or before it.
      return shared ? ['complete', 'ble_link_lost', 'timeout'] : ['ble_link_lost', 'timeout'];
    case 'socket_drop':
      // Dropped when `complete` is due: the transfer had finished, the result is fetched instead.
      return fault.phase === 'complete' ? ['recovered'] : ['dropped'];
    case 'result_lost':
      return ['dropped'];
    case 'backend_stall':
      // Its first reply after the tap or the scan never comes in time: the backend is not answering
      // (timeouts.firstReplyMs, docs/protocol.md §10.2), not a slow step.
      return ['not_answering'];
    case 'phone_too_slow':
      return ['timeout'];
    case 'backend_offline_run':
      // Gone before the tap took the session: the kiosk waits for a new one (armWaitMs), which the
      // backend's return may or may not beat. Gone while in use: the socket drops, and the result cannot be
      // fetched (the backend that comes back has forgotten the session).
      if (facts.offline === 'before_session') return ['complete', 'not_ready'];
      if (facts.offline === 'after_complete') return ['complete', 'dropped'];
      return facts.offline === 'during_run' ? ['dropped'] : ['complete'];
    case 'backend_offline_tap':
      return ['not_ready'];
    case 'pcscd_restart_run':
      // The card leaves with pcscd: a recoverable reason asks for the phone again (the customer taps again
      // and the verification completes); a lost service is a fatal PC/SC reason (the backend ends it).
      return facts.pcscdKilledBeforeReport ? ['complete', 'backend_error', 'timeout'] : ['complete'];
    default:
      return ['complete'];
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
}

/** The disclosed values against the holder's: every element the phone released, nothing else, each true. */
function checkDisclosed(plan: RunPlan, report: VerificationReport, phone: PhoneOutcomeSummary, truth: HolderTruth, at: Date): Verdict {
  const outcome = report.outcome;
  if (!outcome) return fail('verified without an outcome');
  const namespaces = Object.keys(outcome.response);
  if (namespaces.some((ns) => ns !== MDL_NAMESPACE)) return fail(`response has namespaces ${namespaces.join(',')}`);
  const values = outcome.response[MDL_NAMESPACE] ?? {};
  const shown = Object.keys(values).sort();
  const released = phone.sharedElements
    .filter((e) => e.startsWith(`${MDL_NAMESPACE}/`))
    .map((e) => e.slice(MDL_NAMESPACE.length + 1))
    .sort();
  if (shown.join(',') !== released.join(','))
    return fail(`response elements [${shown.join(',')}] differ from what the phone released [${released.join(',')}]`);
  if (shown.length === 0) return fail('verified with no element disclosed');
  const age = ageOn(truth.birthDate, at);
  for (const [element, value] of Object.entries(values)) {
    const expected = truth.strings[element];
    if (expected !== undefined && value !== expected) return fail(`${element} is not the holder's`);
    const over = /^age_over_(\d{2})$/.exec(element);
    if (over && value !== age >= Number(over[1])) return fail(`${element} is ${String(value)} for a holder aged ${age}`);
    if (element === 'portrait') {
      if (typeof value !== 'string') return fail('portrait is not base64 text');
      if (!sameBytes(Buffer.from(value, 'base64'), truth.portraits[plan.flow.portrait]))
        return fail(`portrait differs from the holder's ${plan.flow.portrait}`);
    }
  }
  return OK;
}

/** Whether the holder's side makes `verified` the right verdict (valid credential, approved). */
function genuine(fault: Fault): boolean {
  return fault.kind !== 'credential' && fault.kind !== 'phone_decline';
}

/** The verdict rules (see the module comment) for a run that ended with an outcome. */
function judgeOutcome(
  plan: RunPlan,
  report: VerificationReport,
  phone: PhoneOutcomeSummary | undefined,
  truth: HolderTruth,
  at: Date,
): Verdict {
  const outcome = report.outcome;
  if (!outcome) return fail(`result ${report.result} without an outcome`);
  const { fault } = plan;
  if (outcome.verdict === 'verified') {
    if (!genuine(fault))
      return fail(`FALSE VERIFIED: ${fault.kind === 'credential' ? `${fault.variant} credential` : 'declined request'} shown as verified`);
    if (phone?.kind !== 'shared')
      return fail(
        `FALSE VERIFIED: the phone did not share (${phone ? `${phone.kind}${phone.reason ? ` ${phone.reason}` : ''}` : 'no phone outcome'})`,
      );
    if (outcome.issuerAuthentication !== 'Valid' || outcome.deviceAuthentication !== 'Valid') {
      return fail(`FALSE VERIFIED: issuer ${String(outcome.issuerAuthentication)}, device ${String(outcome.deviceAuthentication)}`);
    }
    if (Object.keys(outcome.errors).length > 0) return fail(`FALSE VERIFIED: errors ${Object.keys(outcome.errors).join(',')}`);
    return checkDisclosed(plan, report, phone, truth, at);
  }
  // Not verified (rejected, or undetermined when the backend's result does not say).
  if (genuine(fault)) return fail(`a valid, approved credential shown as ${outcome.verdict} (${outcome.reasons.join(', ')})`);
  if (outcome.verdict !== 'rejected')
    return fail(
      `${fault.kind === 'credential' ? `${fault.variant} credential` : 'declined request'} shown as ${outcome.verdict}, not rejected`,
    );
  if (fault.kind === 'phone_decline') {
    if (Object.keys(outcome.response).length > 0) return fail('declined, yet data disclosed');
    if (outcome.issuerAuthentication === 'Valid') return fail('declined, yet issuer authentication Valid');
    return OK;
  }
  if (fault.kind === 'credential') {
    const key = fault.variant === 'expired' ? 'validity' : 'data_integrity';
    if (!(key in outcome.errors))
      return fail(
        `${fault.variant} credential rejected without the ${key} error (errors: ${Object.keys(outcome.errors).join(',') || 'none'})`,
      );
  }
  return OK;
}

/** Judges one run: the result kind the fault allows, then the verdict rules. */
export function judge(
  plan: RunPlan,
  report: VerificationReport,
  phone: PhoneOutcomeSummary | undefined,
  facts: RunFacts,
  truth: HolderTruth,
  at = new Date(),
): Verdict {
  const allowed = allowedResults(plan.fault, phone, facts);
  if (!allowed.includes(report.result)) {
    const error = report.error ? ` (${report.error.code}: ${report.error.detail.slice(0, 160)})` : '';
    const verdict = report.outcome ? ` (${report.outcome.verdict})` : '';
    return fail(`result ${report.result}${verdict}${error}; expected ${allowed.join(' or ')}`);
  }
  if (report.result === 'complete' || report.result === 'recovered') {
    const verdict = judgeOutcome(plan, report, phone, truth, at);
    if (!verdict.ok) return verdict;
  } else if (report.outcome) {
    return fail(`result ${report.result} carries an outcome`);
  } else if (!report.error) {
    return fail(`result ${report.result} without an error for the screen`);
  }
  if (plan.fault.kind === 'field_drop' && facts.fieldDropped && !facts.sawAwaitingCard)
    return fail('the field dropped but the kiosk never asked for the phone again');
  return OK;
}
