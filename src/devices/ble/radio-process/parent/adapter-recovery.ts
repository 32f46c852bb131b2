/**
 * A fresh radio process for an adapter that stays gone. A library instance does not always find its adapter
 * again by itself: over a serial HCI transport it never does once the port closed (bluetooth-hci-socket's
 * UART reconnection looks the port up among udev's serial devices and gives up after ten tries), and a
 * stopped mac or win binding stays stopped. So a role that reads lost for `recoverAfterMs` while no
 * verification uses the radio gets the child replaced, then after twice as long each time, at most every
 * 5 min, until no role's adapter is lost. A verification in flight is never cut for it.
 */
import type { Availability } from '../../../ports.js';
import type { LibraryLog } from '../../library-console.js';

const MAX_RECOVERY_WAIT_MS = 5 * 60_000;

export interface AdapterRecoveryInputs {
  /** The first wait (0 turns the recovery off). */
  readonly recoverAfterMs: number;
  readonly log: LibraryLog;
  /** The first role's availability whose adapter is gone, if any. */
  lost(): Availability | undefined;
  /** A child runs and said it is ready. */
  ready(): boolean;
  /** The radio process was closed for good. */
  closed(): boolean;
  /** A verification is using the radio (a link, a session or a request open). */
  busy(): boolean;
  /** Replaces the running child; `why` is told in place of its exit. */
  replace(why: string): void;
}

export class AdapterRecovery {
  private timer: NodeJS.Timeout | undefined;
  /** Fresh processes started for a lost adapter since a role was last usable. */
  private recoveries = 0;

  constructor(private readonly inputs: AdapterRecoveryInputs) {}

  /** Arms (or disarms) the recovery after a change of the roles' availability. */
  watch(): void {
    const { inputs } = this;
    const lost = inputs.lost();
    // Back to the short wait once no role is lost; a restart in between (`starting`) is not "found".
    if (!lost && inputs.ready()) this.recoveries = 0;
    if (!lost || !inputs.ready() || inputs.recoverAfterMs <= 0) {
      this.stop();
      return;
    }
    if (this.timer) return;
    const wait = Math.min(MAX_RECOVERY_WAIT_MS, inputs.recoverAfterMs * 2 ** Math.min(this.recoveries, 20));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const still = inputs.lost();
      if (!inputs.ready() || inputs.closed() || !still) return;
      if (inputs.busy()) {
        // A verification is using the radio: never cut it for this; look again later.
        this.watch();
        return;
      }
      this.recoveries += 1;
      inputs.log.warn(
        { event: 'radio_process_recovering', reason: still.reason, attempt: this.recoveries },
        `the Bluetooth adapter stayed unusable for ${wait} ms: starting a fresh radio process`,
      );
      inputs.replace(`replaced to find the Bluetooth adapter again (${still.reason ?? 'lost'} for ${(wait / 1000).toFixed(0)} s)`);
    }, wait);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
