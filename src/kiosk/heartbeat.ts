/**
 * The session socket's heartbeat, apart from the socket so its timing is tested on a fake clock
 * (test/unit/heartbeat.test.ts). A ping goes out every `intervalMs`; each ping must be answered by a pong
 * within `pongMs` of its own, or the connection is declared silent: the backend (or the road to it) takes
 * the traffic and answers nothing, which is how real outages begin (no close, no reset). A silent
 * connection is found within `intervalMs + pongMs` while idle, and within `pongMs` of a {@link probe} (a
 * tap or a scan asks for one at once).
 */
export interface HeartbeatOptions {
  /** Between pings; 0 turns the periodic heartbeat off (a probe still works). */
  readonly intervalMs: number;
  /** How long a ping may wait for its pong; at most `intervalMs` when the heartbeat is on. */
  readonly pongMs: number;
  /** Sends one ping; false when the socket cannot send (then nothing is awaited). */
  readonly ping: () => boolean;
  /** No pong within `pongMs`: the caller drops the connection. Called at most once. */
  readonly onSilent: (waitedMs: number) => void;
}

export class Heartbeat {
  private interval: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly pongMs: number;

  constructor(private readonly options: HeartbeatOptions) {
    this.pongMs = options.intervalMs > 0 ? Math.min(options.pongMs, options.intervalMs) : options.pongMs;
    if (options.intervalMs > 0) this.interval = setInterval(() => this.probe(), options.intervalMs);
  }

  /** Pings now unless a ping is already waiting for its pong (its deadline stands). */
  probe(): void {
    if (this.stopped || this.deadline !== undefined) return;
    if (!this.options.ping()) return;
    this.deadline = setTimeout(() => {
      this.deadline = undefined;
      if (this.stopped) return;
      this.stop();
      this.options.onSilent(this.pongMs);
    }, this.pongMs);
  }

  /** Any pong answers the ping in flight (pongs carry no id the kiosk needs). */
  pong(): void {
    clearTimeout(this.deadline);
    this.deadline = undefined;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.interval);
    clearTimeout(this.deadline);
    this.deadline = undefined;
  }
}
