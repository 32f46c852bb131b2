/**
 * What follows a failure: the retry policy's decision (retry-policy.ts), shown on the status, and the next
 * attempt scheduled after the policy's wait.
 */
import type { Logger } from '../../platform/log.js';
import type { BackendFailure } from '../backend-failure.js';
import type { RetryPolicy } from '../retry-policy.js';
import type { ChangeWaiters } from './change-waiters.js';
import type { StatusBoard } from './keeper-status.js';
import type { RequestGate } from './request-budget.js';

export interface RetryScheduleParts {
  readonly policy: RetryPolicy;
  readonly gate: RequestGate;
  readonly status: StatusBoard;
  readonly changes: ChangeWaiters;
  readonly log: Logger;
  readonly now: () => number;
  /** An idle session still serves (a renewal failed): the kiosk stays ready meanwhile. */
  readonly idleServing: () => boolean;
  /** The next attempt, once the policy's wait is over. */
  readonly retry: () => void;
}

export class RetrySchedule {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly parts: RetryScheduleParts) {}

  /** A retry is scheduled: nothing is tried before it. */
  get waiting(): boolean {
    return this.timer !== undefined;
  }

  /** The wait is cut short (retry now) or the keeper stops. */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Asks the retry policy what a failure means, shows it, and schedules the next attempt. */
  failed(failure: BackendFailure): void {
    const { policy, gate, status, changes, log, now, idleServing } = this.parts;
    const shown = status.current;
    if (shown.state === 'config_error' && !shown.retrying) {
      // The credentials were refused: nothing is tried again until staff act (retryNow), whatever else ends.
      log.info({ event: 'session_lost_while_refused', kind: failure.kind }, 'not retrying: the backend refused the credentials');
      changes.wake();
      return;
    }
    const decision = policy.onFailure(failure, now());
    gate.endAllowance();
    this.cancel();
    status.decided(decision, decision.action === 'retry' && idleServing());
    changes.wake();
    if (decision.action === 'stop') return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.parts.retry();
    }, decision.delayMs);
  }
}
