/** Text and exit codes of the headless relay CLI, kept apart so they can be tested without a process. */
import type { OutcomeView, PromptKey } from '../common/kiosk-view.js';
import type { VerificationReport } from '../kiosk/kiosk.js';

/** English prompt text for terminal output (the UI has its own translations). */
export const PROMPT_TEXT: Record<PromptKey, string> = {
  starting: 'starting',
  connecting: 'connecting to the verification service',
  offline: 'verification service unreachable, retrying',
  config_error: 'configuration error, staff needed',
  cannot_verify: 'the devices cannot complete a verification, staff needed',
  tap_or_scan: 'tap your phone or show your QR code',
  hold_still: 'hold your phone still',
  tap_again: 'tap your phone again',
  connecting_phone: 'connecting to your phone over Bluetooth',
  approve_on_phone: 'approve the request on your phone',
  receiving: 'receiving your data, keep your phone near',
  verified: 'verified',
  rejected: 'not accepted',
  undetermined: 'the result could not be determined, staff needed',
  try_again: 'something went wrong, please try again',
  remove_phone: 'remove your phone',
  remove_to_retry: 'lift your phone, then tap again',
  stopped: 'stopped',
};

export const EXIT_VERIFIED = 0;
export const EXIT_REJECTED = 1;
export const EXIT_ERROR = 2;
/**
 * The document is authentic but the request's requirement is not met: an age answered "no", a required
 * element not shared, or an age the response does not answer. An integrator gating on 0 must not admit.
 */
export const EXIT_NOT_MET = 3;

export function verdictExitCode(report: VerificationReport): number {
  if (!report.outcome) return EXIT_ERROR;
  // Undetermined is not a rejection of the document: it is a verification that did not finish properly.
  if (report.outcome.verdict === 'undetermined') return EXIT_ERROR;
  if (report.outcome.verdict !== 'verified') return EXIT_REJECTED;
  return report.outcome.answer.result === 'met' ? EXIT_VERIFIED : EXIT_NOT_MET;
}

/** How bad each status is: error over rejected over not met over verified. */
const SEVERITY: Readonly<Record<number, number>> = { [EXIT_VERIFIED]: 0, [EXIT_NOT_MET]: 1, [EXIT_REJECTED]: 2, [EXIT_ERROR]: 3 };

/** With several verifications the worst one decides: error over rejected over not met over verified. */
export function worstExitCode(codes: readonly number[]): number {
  return codes.reduce((worst, code) => ((SEVERITY[code] ?? 3) > (SEVERITY[worst] ?? 3) ? code : worst), EXIT_VERIFIED);
}

const RESULT_WORD: Readonly<Record<OutcomeView['answer']['result'], string>> = {
  met: 'met',
  not_met: 'NOT met',
  undetermined: 'could not be determined',
};

/**
 * The result line's words for an outcome: the verdict, then the answer to the request, e.g.
 * `verified; age 21 or older: NOT met` or `verified; request NOT met; not shared: portrait, document_number`.
 * Only codes and element names: never a disclosed value.
 */
export function resultText(outcome: OutcomeView): string {
  const verdict = outcome.verdict === 'verified' ? 'verified' : outcome.verdict === 'rejected' ? 'not accepted' : 'could not be determined';
  const { answer } = outcome;
  const required = answer.missing.filter((m) => m.required).map((m) => m.identifier);
  const notShared = required.length === 0 ? '' : `; not shared: ${required.slice(0, 10).join(', ')}${required.length > 10 ? ', …' : ''}`;
  const why = outcome.reasons.includes('nothing_shared') ? ' (nothing shared: the holder declined or the wallet gave up)' : '';
  const asked = answer.kind === 'age' ? `age ${answer.threshold} or older` : 'request';
  return `${verdict}${why}; ${asked}: ${RESULT_WORD[answer.result]}${why === '' ? notShared : ''}`;
}
