/**
 * Whether a session should be kept warm now: always, during business hours, or on demand (`session.prewarm`)
 * — and a customer's tap or scan is demand, whatever the policy, for `session.keepWarmAfterUseMs`.
 */
import type { KioskConfig } from '../../platform/config.js';
import { insideWindow } from '../../platform/time-window.js';

/** How often the business-hours policy looks at the clock while no session is warm. */
const POLICY_CHECK_MS = 60_000;

export class WarmPolicy {
  /** A customer tapped or scanned: sessions are kept warm until then, whatever the policy. */
  private demandUntil = Number.NEGATIVE_INFINITY;
  /** Customers waiting for a session right now: demand that holds however short keepWarmAfterUseMs is. */
  private waitingCustomers = 0;
  private policyTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: Pick<KioskConfig, 'session'>,
    private readonly now: () => number,
  ) {}

  customerArrived(): void {
    // Customers come in bursts: after one, sessions stay warm for a while (session.keepWarmAfterUseMs).
    this.demandUntil = Math.max(this.demandUntil, this.now() + this.config.session.keepWarmAfterUseMs);
    this.waitingCustomers++;
  }

  customerLeft(): void {
    this.waitingCustomers--;
  }

  wantsWarm(): boolean {
    const { prewarm, businessHours } = this.config.session;
    if (prewarm === 'always' || this.waitingCustomers > 0 || this.now() < this.demandUntil) return true;
    return prewarm === 'business_hours' && insideWindow(businessHours, new Date(this.now()));
  }

  /** Business hours open by the clock: `check` is called again in a while (demand itself calls it). */
  lookAgainLater(check: () => void): void {
    if (this.config.session.prewarm === 'business_hours' && this.policyTimer === undefined) {
      this.policyTimer = setTimeout(() => {
        this.policyTimer = undefined;
        check();
      }, POLICY_CHECK_MS);
    }
  }

  stop(): void {
    clearTimeout(this.policyTimer);
  }
}
