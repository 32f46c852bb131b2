/**
 * One tap or scan, from "hold still" to the outcome or error on screen: refused at once when the kiosk
 * cannot serve anyone, otherwise run on the pre-warmed session (verification/), the result recovered when
 * the socket dropped, reported, and the session given back to the keeper.
 */
import type { ErrorView, OutcomeView, Transport } from '../common/kiosk-view.js';
import type { DevicePorts, NfcCard } from '../devices/ports.js';
import type { KioskConfig } from '../platform/config.js';
import type { Logger } from '../platform/log.js';
import { withTimeout } from './async-tools.js';
import { outcomeFromComplete } from './outcome.js';
import type { RequestProfile } from './profiles.js';
import type { AskedRequest } from './request-answer.js';
import { recoverResult } from './result-recovery.js';
import { errorViewFor, logResult } from './run-report.js';
import type { CounterScreen } from './screen/counter-screen.js';
import { configErrorView } from './screen/idle-view.js';
import { ArmTimeoutError, type ArmedSession, type SessionKeeper } from './session-keeper.js';
import type { SessionService } from './session-service.js';
import type { TriggerSource } from './triggers.js';
import { runVerification } from './verification/run-verification.js';
import { closeCodeFor, type RunReport, type RunResult, type Trigger } from './verification/results.js';

/** Bound on releasing a card handle outside a verification (the port promises it never hangs). */
const RELEASE_MS = 2_000;

/** One finished attempt, for the CLI, diagnostics and tests. Holds the disclosed data only in `outcome`. */
export interface VerificationReport {
  readonly transport: Transport;
  readonly sessionId: string | null;
  /** `complete`, `recovered` (result fetched after a dropped socket) or the failure kind. */
  readonly result: RunResult['kind'] | 'recovered' | 'not_ready';
  readonly outcome: OutcomeView | null;
  readonly error: ErrorView | null;
  readonly durationMs: number;
  readonly apdus: number;
  readonly bleMessages: number;
}

/** What a verification shows on the counter's screen. */
export type VerificationScreen = Pick<
  CounterScreen,
  'engaging' | 'progress' | 'showResult' | 'showError' | 'backToIdle' | 'afterCustomerCancel'
>;

export interface VerifyParts {
  readonly config: KioskConfig;
  readonly devices: DevicePorts;
  readonly sessions: SessionService;
  readonly keeper: SessionKeeper;
  readonly triggers: TriggerSource;
  readonly screen: VerificationScreen;
  /** Why the devices cannot finish a verification now (readinessGate). */
  readonly deviceRefusal: () => ErrorView | undefined;
  /** The request profile in use. */
  readonly profile: () => RequestProfile;
  readonly report: (report: VerificationReport) => void;
  /** The kiosk's stop. */
  readonly stop: AbortSignal;
  readonly log: Logger;
  readonly now: () => number;
}

/** One verification: the tap or scan, when it came, its cancel, and whether the customer cancelled it. */
export interface VerifyRun {
  readonly trigger: Trigger;
  readonly started: number;
  readonly signal: AbortSignal;
  readonly takeCustomerCancel: () => boolean;
}

export async function verifyTrigger(parts: VerifyParts, run: VerifyRun): Promise<void> {
  const transport = run.trigger.kind;
  const refused = refusal(parts);
  if (refused) {
    parts.log.info({ event: 'verification_start', transport }, 'tap or scan received');
    await notReady(parts, run, refused, 'idle');
    return;
  }
  parts.screen.engaging(transport);
  parts.log.info({ event: 'verification_start', transport }, 'tap or scan received');
  const armed = await acquire(parts, run);
  if (armed === undefined) return;
  // What this session asked (the keeper hands out only sessions engaged with the current profile).
  const asked = askedBy(parts.profile(), armed);
  const log = parts.log.child({ sessionId: armed.session.id });
  const report = await runVerification(
    {
      channel: armed.channel,
      devices: parts.devices,
      timeouts: parts.config.timeouts,
      log,
      signal: run.signal,
      onProgress: (p) => parts.screen.progress(p),
    },
    run.trigger,
  );
  parts.triggers.ignoreInputDuringRun();
  await finish(parts, run, armed, asked, report, log);
}

/** The pre-warmed session, or none: then the tap or scan has been ended (`notReady`). */
async function acquire(parts: VerifyParts, run: VerifyRun): Promise<ArmedSession | undefined> {
  const { keeper, config } = parts;
  const { signal } = run;
  try {
    return await keeper.acquire(config.timeouts.armWaitMs, signal);
  } catch (e) {
    const status = keeper.status;
    const error: ErrorView = signal.aborted
      ? { code: 'cancelled', detail: 'verification cancelled', retryable: true }
      : status.state === 'config_error'
        ? configErrorView(status, config.session)
        : {
            // Offline by now: the code the Offline screen shows (a silent backend is `backend_not_answering`).
            code: status.state === 'offline' ? (status.code ?? 'backend_unavailable') : 'backend_unavailable',
            detail: e instanceof ArmTimeoutError ? e.message : 'no session available',
            retryable: true,
          };
    await notReady(
      parts,
      run,
      error,
      !signal.aborted && status.state !== 'armed' && status.state !== 'arming' && status.state !== 'standby' ? 'idle' : 'error',
    );
    return undefined;
  }
}

/** After the run: the outcome (recovered if the socket dropped) or the error on screen and reported, the session given back. */
async function finish(
  parts: VerifyParts,
  run: VerifyRun,
  armed: ArmedSession,
  asked: AskedRequest,
  report: RunReport,
  log: Logger,
): Promise<void> {
  const { config, keeper, screen, triggers } = parts;
  const { trigger, signal } = run;
  const result = report.result;
  // The closing handshake runs while the outcome goes on screen; the session is given back after it.
  const { code, reason } = closeCodeFor(result);
  const closing = result.kind === 'dropped' ? Promise.resolve() : armed.channel.close(code, reason);
  const showText = config.privacy.backendErrorText;
  logResult(log, result, showText);

  let outcome: OutcomeView | undefined;
  let kind: VerificationReport['result'] = result.kind;
  if (result.kind === 'complete') {
    outcome = outcomeFromComplete(result.outcome, asked);
  } else if (result.kind === 'dropped' && !signal.aborted) {
    outcome = await recoverResult(parts.sessions, armed.session.id, {
      transferFinished: result.transferFinished,
      pollForMs: config.timeouts.recoverResultMs,
      signal,
      log,
      now: parts.now,
      asked,
      admit: (s) => keeper.admitRequest(s),
    });
    if (outcome) kind = 'recovered';
  }
  if (trigger.kind === 'qr') {
    if (outcome) triggers.qrUsed(trigger.text);
    else triggers.qrFailed(trigger.text, config.timeouts.errorDisplayMs);
  }
  const base = {
    transport: trigger.kind,
    sessionId: armed.session.id,
    durationMs: parts.now() - run.started,
    apdus: report.apdus,
    bleMessages: report.bleMessages,
  };
  if (outcome) {
    // The answer and which elements are missing are codes (never a disclosed value).
    const missing = outcome.answer.missing.filter((m) => m.required).map((m) => m.identifier);
    log.info(
      {
        event: 'verification_outcome',
        verdict: outcome.verdict,
        answer: outcome.answer.result,
        missing,
        reasons: outcome.reasons,
        source: outcome.source,
      },
      'verification finished',
    );
    screen.showResult(outcome, report.card);
    parts.report({ ...base, result: kind, outcome, error: null });
  } else if (result.kind !== 'complete') {
    const error = errorViewFor(result, showText);
    if (result.kind === 'cancelled' && run.takeCustomerCancel()) screen.afterCustomerCancel(report.card);
    else if (result.kind !== 'cancelled' || !parts.stop.aborted) screen.showError(error, report.card);
    parts.report({ ...base, result: kind, outcome: null, error });
  }
  await closing;
  // A transfer that ended (end byte sent) but could not be recovered is not retried on this session; a
  // backend that stopped answering is an absence the keeper waits out (offline, backoff) before re-arming.
  keeper.release(
    armed,
    outcome !== undefined
      ? 'completed'
      : result.kind === 'dropped' && result.transferFinished
        ? 'spent'
        : result.kind === 'not_answering'
          ? 'unanswered'
          : 'retry',
  );
}

/**
 * Why this tap or scan cannot start a verification at all, decided before the customer is told to hold
 * still: the devices cannot finish one (readinessGate), the backend is known to be unreachable (the
 * offline message at once, not a wait of `armWaitMs` on "hold still"), or it refused the credentials.
 */
function refusal({ deviceRefusal, keeper, config }: VerifyParts): ErrorView | undefined {
  const devices = deviceRefusal();
  if (devices) return devices;
  const status = keeper.status;
  if (status.state === 'offline') {
    // A customer is waiting: try the backend now rather than at the end of the backoff.
    keeper.retryNow();
    // The report names what the Offline screen shows (a silent backend is `backend_not_answering`).
    return {
      code: status.code ?? 'backend_unavailable',
      detail: `the backend is unreachable: ${status.detail}`.slice(0, 500),
      retryable: true,
    };
  }
  if (status.state === 'config_error') return configErrorView(status, config.session);
  return undefined;
}

/**
 * Ends a tap or scan that got no session: the card is let go, the code cooled down. When the kiosk cannot
 * serve anyone now (offline, needs staff) the idle screen that says so is shown, not an error whose "Try
 * again" cannot work; otherwise (no session in time, cancelled) the error.
 */
async function notReady(parts: VerifyParts, { trigger, started }: VerifyRun, error: ErrorView, shown: 'idle' | 'error'): Promise<void> {
  const { config, triggers, screen, log } = parts;
  if (trigger.kind === 'nfc') await releaseCard(trigger.card, log);
  triggers.ignoreInputDuringRun();
  if (trigger.kind === 'qr') triggers.qrFailed(trigger.text, config.timeouts.errorDisplayMs);
  if (parts.stop.aborted) return;
  log.warn({ event: 'verification_not_ready', code: error.code }, 'no session ready for the tap');
  if (shown === 'idle') screen.backToIdle();
  else screen.showError(error, trigger.kind === 'nfc' ? trigger.card : undefined);
  parts.report({
    transport: trigger.kind,
    sessionId: null,
    result: 'not_ready',
    outcome: null,
    error,
    durationMs: parts.now() - started,
    apdus: 0,
    bleMessages: 0,
  });
}

/** What `armed` asked for, with the profile's required elements when the profile asked the same. */
function askedBy(profile: RequestProfile, armed: ArmedSession): AskedRequest {
  const same = JSON.stringify(profile.namespaces) === JSON.stringify(armed.namespaces);
  return same && profile.required !== undefined
    ? { namespaces: armed.namespaces, required: profile.required }
    : { namespaces: armed.namespaces };
}

async function releaseCard(card: NfcCard, log: Logger): Promise<void> {
  await withTimeout(
    Promise.resolve().then(() => card.release()),
    RELEASE_MS,
    new AbortController().signal,
    'card release',
  ).catch(() => {
    log.warn({ event: 'card_release_failed' }, 'the NFC card handle could not be released in time');
  });
}
