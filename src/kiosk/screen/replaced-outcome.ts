/**
 * The outcome a new customer replaced before it cleared: staff see it until it would have cleared, so a
 * replaced outcome is never silent. Codes and times only: the disclosed values went with the outcome.
 */
import type { KioskView, ReplacedOutcome } from '../../common/kiosk-view.js';
import type { Logger } from '../../platform/log.js';
import type { Trigger } from '../verification/results.js';
import type { Screen } from './screen-timer.js';

export class ReplacedOutcomeMemory {
  private replaced: ReplacedOutcome | undefined;

  constructor(
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  /** The outcome the last new customer replaced, until it would have cleared (`null` after). */
  get current(): ReplacedOutcome | null {
    const replaced = this.replaced;
    if (replaced === undefined) return null;
    if (this.now() >= replaced.clearsAt) {
      this.replaced = undefined;
      return null;
    }
    return replaced;
  }

  /** `trigger` starts a verification over `screen` and `view`: an outcome still timed there is remembered. */
  remember(screen: Screen, view: KioskView, trigger: Trigger): void {
    const outcome = view.outcome;
    if (screen.kind !== 'timed' || screen.after !== 'result' || outcome === null) return;
    const { answer } = outcome;
    this.replaced = {
      verdict: outcome.verdict,
      answer: { kind: answer.kind, result: answer.result, threshold: answer.kind === 'age' ? answer.threshold : null },
      transport: view.transport,
      shownAt: screen.shownAt,
      replacedAt: this.now(),
      replacedBy: trigger.kind,
      clearsAt: screen.until,
    };
    this.log.info(
      {
        event: 'outcome_replaced',
        verdict: outcome.verdict,
        answer: answer.result,
        by: trigger.kind,
        shownForMs: this.now() - screen.shownAt,
      },
      'a new customer replaced the outcome on screen',
    );
  }
}
