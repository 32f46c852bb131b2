/**
 * The door every request to the backend passes: the retry policy's request budget, waited for and counted,
 * apart from the session that follows a verification the backend served.
 */
import type { KioskConfig } from '../../platform/config.js';
import type { Logger } from '../../platform/log.js';
import { sleep } from '../async-tools.js';
import type { RetryPolicy } from '../retry-policy.js';

/** The session after a served verification is made at once; a request later than this counts against the budget. */
const UNCOUNTED_FOR_MS = 10_000;

export class RequestGate {
  /**
   * Requests not counted against the budget: the session after a verification the backend served (its POST
   * and upgrade, or the reconnect), made within {@link UNCOUNTED_FOR_MS} of its end.
   */
  private uncounted = { requests: 0, until: 0 };

  constructor(
    private readonly policy: RetryPolicy,
    private readonly config: Pick<KioskConfig, 'session'>,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  /**
   * Waits until the request budget lets one more request go to the backend, and counts it. Every request
   * passes here: the keeper's own, and `GET /sessions/{id}` of a result recovery.
   */
  async admit(signal: AbortSignal): Promise<void> {
    if (this.uncounted.requests > 0 && this.now() <= this.uncounted.until) {
      this.uncounted.requests--;
      return;
    }
    for (let logged = false; ; logged = true) {
      const wait = this.policy.admissionDelay(this.now());
      if (wait <= 0) break;
      if (!logged)
        this.log.warn(
          { event: 'request_budget_spent', waitMs: wait, perMinute: this.config.session.maxRequestsPerMinute },
          'request budget spent; waiting',
        );
      await sleep(wait, signal);
    }
    this.policy.recordRequest(this.now());
  }

  /** The backend served a verification: the session that follows (two requests) is not counted. */
  allowFollowUp(): void {
    this.uncounted = { requests: 2, until: this.now() + UNCOUNTED_FOR_MS };
  }

  /** A failure ends any allowance: what follows is a retry, and counts. */
  endAllowance(): void {
    this.uncounted = { requests: 0, until: 0 };
  }
}
