/**
 * How the kiosk finds its radio process gone: an exit, described for the log and the error screen, or a
 * ping left unanswered (a hung child, which the supervisor then kills).
 */
import type { RadioChildExit } from '../launcher.js';

/** "killed by SIGKILL", "exited with code 134", … */
export function describeExit(exit: RadioChildExit): string {
  if (exit.signal) return `killed by ${exit.signal}`;
  if (exit.code === null) return 'it could not be started';
  return `exited with code ${exit.code}`;
}

export interface HeartbeatOptions {
  readonly periodMs: number;
  readonly deadlineMs: number;
  /** Sends the child a ping. */
  ping(): void;
  /** The child left a ping unanswered for `silentMs` (at least `deadlineMs`). */
  hung(silentMs: number): void;
}

/** One child's heartbeat: a ping each period while none is outstanding; one unanswered past the deadline is `hung`. */
export class Heartbeat {
  private readonly timer: NodeJS.Timeout;
  private pingSentAt: number | undefined;

  constructor(private readonly options: HeartbeatOptions) {
    this.timer = setInterval(() => this.beat(), options.periodMs);
  }

  /** The child answered the outstanding ping. */
  answered(): void {
    this.pingSentAt = undefined;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private beat(): void {
    const now = Date.now();
    if (this.pingSentAt !== undefined && now - this.pingSentAt >= this.options.deadlineMs) {
      this.options.hung(now - this.pingSentAt);
      return;
    }
    if (this.pingSentAt === undefined) {
      this.pingSentAt = now;
      this.options.ping();
    }
  }
}
