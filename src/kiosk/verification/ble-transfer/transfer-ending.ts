/**
 * How a BLE transfer ends once `ble_connected` (ok) was sent: without traffic for `bleIdleMs` (the idle
 * watchdog), by a lost link (with a grace period for `complete`), or by `complete` (after the end byte is
 * flushed out of the Bluetooth stack, bounded).
 */
import type { Outcome } from '../../../common/protocol/messages.js';
import { TimeoutError } from '../../async-tools.js';
import { RunStop, type Attempt } from '../attempt.js';
import type { Flush } from '../ble-common.js';

export class TransferEnding {
  /** `ble_connected` (ok) was sent: from then on a lost link ends the transfer. */
  private isConnected = false;
  private lostReason: string | undefined;
  private outcome: Outcome | undefined;
  private lastActivity = 0;

  constructor(private readonly attempt: Attempt) {}

  /** The link to the phone dropped after `ble_connected`: nothing more can be delivered. */
  get linkLost(): boolean {
    return this.lostReason !== undefined;
  }

  /** The backend's `complete`, once it arrived (it may still be queued behind writes). */
  get completion(): Outcome | undefined {
    return this.outcome;
  }

  /** Traffic in either direction: the idle watchdog starts counting again. */
  touch(): void {
    this.lastActivity = this.attempt.now();
  }

  /** `ble_connected` (ok) has just been sent. */
  connected(): void {
    this.isConnected = true;
  }

  /** Ends the attempt after `bleIdleMs` without traffic in either direction. */
  startIdleWatchdog(): void {
    const { attempt } = this;
    const { bleIdleMs } = attempt.ctx.timeouts;
    this.touch();
    const check = (): void => {
      const idle = attempt.now() - this.lastActivity;
      if (idle >= bleIdleMs) attempt.stopWith({ kind: 'timeout', phase: 'ble_transfer', detail: `no BLE traffic for ${bleIdleMs} ms` });
      else attempt.after(bleIdleMs - idle, check);
    };
    attempt.after(bleIdleMs, check);
  }

  /**
   * `complete` arrived: it stands, and ends the attempt after `completionFlushMs` at the latest even if a
   * write queued before it is stuck.
   */
  completeArrived(outcome: Outcome): void {
    this.outcome = outcome;
    this.attempt.after(this.attempt.ctx.timeouts.completionFlushMs, () => this.attempt.stopWith({ kind: 'complete', outcome }));
  }

  /**
   * The link to the phone dropped. Before `ble_connected` the setup decides (a phone may reconnect while
   * the kiosk advertises). After the end byte a drop is expected. Otherwise `complete` may still arrive
   * within the grace period; one that arrived already stands.
   */
  onLinkLost(reason: string): void {
    const { attempt } = this;
    if (!this.isConnected) {
      attempt.ctx.log.info({ event: 'ble_link_lost_during_setup', reason }, 'phone link dropped before ble_connected');
      return;
    }
    if (this.lostReason !== undefined || attempt.stopResult) return;
    this.lostReason = reason;
    attempt.ctx.log.info({ event: 'ble_link_lost', reason, transferFinished: attempt.transferFinished }, 'BLE link to the phone ended');
    if (attempt.transferFinished) return;
    attempt.after(attempt.ctx.timeouts.bleLinkLossGraceMs, () => {
      const outcome = this.outcome;
      attempt.stopWith(outcome ? { kind: 'complete', outcome } : { kind: 'ble_link_lost', reason });
    });
  }

  /**
   * A delivered `ble_write` is one the stack *took*: bleno and noble on hci queue it behind the
   * controller's buffers, and the teardown's disconnect would overtake that queue (the phone then misses
   * the end byte while the kiosk says verified). Bounded by `completionFlushMs`; past it the teardown goes on.
   */
  async flushBeforeTeardown(flush: Flush | undefined): Promise<void> {
    const { attempt } = this;
    if (!flush || this.linkLost) return;
    const { completionFlushMs } = attempt.ctx.timeouts;
    const started = attempt.now();
    try {
      await attempt.device((signal) => flush(signal), completionFlushMs, 'BLE flush');
      attempt.ctx.log.debug({ event: 'ble_flushed', ms: attempt.now() - started }, 'BLE data delivered before teardown');
    } catch (e) {
      if (e instanceof RunStop) throw e;
      const timedOut = e instanceof TimeoutError;
      attempt.ctx.log.warn(
        { event: 'ble_flush_incomplete', reason: timedOut ? `not flushed within ${completionFlushMs} ms` : 'flush failed' },
        'BLE data may not all have reached the phone before teardown',
      );
    }
  }
}
