/** Text and exit codes of the headless relay CLI, kept apart so they can be tested without a process. */
import type { PromptKey } from '../common/kiosk-view.js';
import type { VerificationReport } from '../kiosk/kiosk.js';

/** English prompt text for terminal output (the UI has its own translations). */
export const PROMPT_TEXT: Record<PromptKey, string> = {
  starting: 'starting',
  connecting: 'connecting to the verification service',
  offline: 'verification service unreachable, retrying',
  config_error: 'configuration error, staff needed',
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
  stopped: 'stopped',
};

export const EXIT_VERIFIED = 0;
export const EXIT_REJECTED = 1;
export const EXIT_ERROR = 2;

export function verdictExitCode(report: VerificationReport): number {
  if (!report.outcome) return EXIT_ERROR;
  // Undetermined is not a rejection of the document: it is a verification that did not finish properly.
  if (report.outcome.verdict === 'undetermined') return EXIT_ERROR;
  return report.outcome.verdict === 'verified' ? EXIT_VERIFIED : EXIT_REJECTED;
}

/** With several verifications the worst one decides: error over rejected over verified. */
export function worstExitCode(codes: readonly number[]): number {
  return codes.reduce((worst, code) => Math.max(worst, code), EXIT_VERIFIED);
}
