/** What the kiosk may tune of its radio process, and the defaults (docs/ARCHITECTURE.md "The radio process"). */
import type { LibraryLog } from '../../library-console.js';
import type { RadioLauncher } from '../launcher.js';
import type { RadioInit } from '../protocol.js';

export interface RadioProcessOptions {
  readonly launcher: RadioLauncher;
  readonly init: RadioInit;
  readonly log: LibraryLog;
  /** Ping period (default 2 s). */
  readonly heartbeatMs?: number;
  /** A child with a ping unanswered this long is killed (default 10 s). */
  readonly heartbeatDeadlineMs?: number;
  /** First restart delay (default 500 ms), doubling per failure up to `restartMaxMs` (default 30 s). */
  readonly restartMinMs?: number;
  readonly restartMaxMs?: number;
  /** A child that lived this long was healthy: the next restart starts from `restartMinMs` again (default 60 s). */
  readonly healthyMs?: number;
  /** Bound on the first `ready` (default 15 s) for `started()`. */
  readonly startMs?: number;
  /** Bound on a graceful shutdown before SIGKILL (default 3 s), and on a link's close (default 2 s). */
  readonly stopMs?: number;
  readonly closeMs?: number;
  /**
   * A role whose adapter stays gone (`powered_off`, `no_adapter`, `no_radio`, `adapter_error`) this long while no
   * verification uses the radio gets a fresh process (default 15 s; each further try waits twice as long,
   * at most 5 min, until no role's adapter is lost). A library instance does not always find its adapter
   * again by itself: over a serial HCI transport it never does once the port closed (bluetooth-hci-socket's
   * UART reconnection looks the port up among udev's serial devices and gives up after ten tries), and a
   * stopped mac or win binding stays stopped. 0 turns it off.
   */
  readonly recoverAfterMs?: number;
  /** Jitter source in [0, 1) (default Math.random). */
  readonly random?: () => number;
}

export type RadioSettings = Required<Omit<RadioProcessOptions, 'launcher' | 'init' | 'log'>>;

export function radioSettings(options: RadioProcessOptions): RadioSettings {
  return {
    heartbeatMs: options.heartbeatMs ?? 2_000,
    heartbeatDeadlineMs: options.heartbeatDeadlineMs ?? 10_000,
    restartMinMs: options.restartMinMs ?? 500,
    restartMaxMs: options.restartMaxMs ?? 30_000,
    healthyMs: options.healthyMs ?? 60_000,
    startMs: options.startMs ?? 15_000,
    stopMs: options.stopMs ?? 3_000,
    closeMs: options.closeMs ?? 2_000,
    recoverAfterMs: options.recoverAfterMs ?? 15_000,
    random: options.random ?? Math.random,
  };
}
