/**
 * The answer to the request the kiosk made, judged once here so that the screen, the CLI, the logs, the
 * diagnostics and the health record all say the same: "21 or older" is a property of the outcome, not of
 * one way of drawing it.
 *
 * - An **age request** asks `age_over_NN` statements and at most the portrait. Its answer follows
 *   ISO/IEC 18013-5 §7.2.5, where a wallet may answer with the nearest statement it holds: a true
 *   `age_over_MM` with MM ≥ NN means met, a false one with MM ≤ NN means not met; contradicting or
 *   absent statements mean undetermined.
 * - **Any other request** is met when every required element it asked for was disclosed. A profile's
 *   required elements are all it asks unless it says otherwise (`full` asks every element with a fixed
 *   identifier, but requires only those a document must carry).
 * - Only a verified document answers: for anything else the result is `undetermined` (fail closed), and
 *   the missing elements are still listed for staff.
 */
import type { MissingElement, OutcomeView, RequestAnswer, RequirementResult } from '../common/kiosk-view.js';
import type { Namespaces } from '../common/protocol/messages.js';
import { MDL_NAMESPACE } from './profiles.js';

const AGE_OVER = /^age_over_(\d{1,3})$/;
const MAX_MISSING = 200;

/** NN of `age_over_NN`, or undefined. */
export function ageOverThreshold(identifier: string): number | undefined {
  const match = AGE_OVER.exec(identifier);
  return match ? Number(match[1]) : undefined;
}

export interface AskedRequest {
  readonly namespaces: Namespaces;
  /** Elements whose absence makes the answer `not_met`, by namespace; absent: every element asked. */
  readonly required?: Namespaces;
}

/** The threshold of an age request, or undefined when the request is not one. */
export function ageRequestThreshold(namespaces: Namespaces): number | undefined {
  const thresholds: number[] = [];
  for (const [namespace, identifiers] of Object.entries(namespaces)) {
    for (const identifier of identifiers) {
      const threshold = namespace === MDL_NAMESPACE ? ageOverThreshold(identifier) : undefined;
      if (threshold !== undefined) thresholds.push(threshold);
      else if (!(namespace === MDL_NAMESPACE && identifier === 'portrait')) return undefined;
    }
  }
  return thresholds.length === 0 ? undefined : Math.min(...thresholds);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function disclosed(response: OutcomeView['response'], namespace: string, identifier: string): boolean {
  const elements = response[namespace];
  return isRecord(elements) && Object.hasOwn(elements, identifier);
}

/** Met, not met or undetermined from the age statements of a response (only called for a verified document). */
function ageResult(response: OutcomeView['response'], threshold: number): RequirementResult {
  const mdl = response[MDL_NAMESPACE];
  const statements = Object.entries(isRecord(mdl) ? mdl : {})
    .map(([identifier, value]) => ({ over: ageOverThreshold(identifier), value }))
    .filter((s): s is { over: number; value: unknown } => s.over !== undefined);
  const yes = statements.some((s) => s.over >= threshold && s.value === true);
  const no = statements.some((s) => s.over <= threshold && s.value === false);
  // Contradicting statements cannot both be true: say nothing rather than pick one.
  return yes && !no ? 'met' : no && !yes ? 'not_met' : 'undetermined';
}

function missingOf(
  asked: AskedRequest,
  response: OutcomeView['response'],
  skip: (namespace: string, identifier: string) => boolean,
): MissingElement[] {
  const missing: MissingElement[] = [];
  for (const [namespace, identifiers] of Object.entries(asked.namespaces)) {
    for (const identifier of identifiers) {
      if (missing.length >= MAX_MISSING) return missing;
      if (skip(namespace, identifier) || disclosed(response, namespace, identifier)) continue;
      const required = asked.required === undefined || (asked.required[namespace]?.includes(identifier) ?? false);
      missing.push({ namespace: namespace.slice(0, 200), identifier: identifier.slice(0, 200), required });
    }
  }
  return missing;
}

export function answerFor(outcome: Pick<OutcomeView, 'verdict' | 'response'>, asked: AskedRequest): RequestAnswer {
  const verified = outcome.verdict === 'verified';
  const threshold = ageRequestThreshold(asked.namespaces);
  if (threshold !== undefined) {
    const result = verified ? ageResult(outcome.response, threshold) : 'undetermined';
    // A nearest statement answers for the one asked: an age statement is missing only when nothing answered.
    const missing = missingOf(
      asked,
      outcome.response,
      (namespace, identifier) => result !== 'undetermined' && namespace === MDL_NAMESPACE && ageOverThreshold(identifier) !== undefined,
    );
    return { kind: 'age', threshold, result, missing };
  }
  const missing = missingOf(asked, outcome.response, () => false);
  const result: RequirementResult = !verified ? 'undetermined' : missing.some((m) => m.required) ? 'not_met' : 'met';
  return { kind: 'elements', result, missing };
}

/** An answer for outcomes made without knowing the request (tests, tools): nothing was asked. */
export const NO_REQUEST: AskedRequest = { namespaces: {} };
