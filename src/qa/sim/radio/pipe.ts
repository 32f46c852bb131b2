/**
 * One direction of one link: packets are delivered in the order sent, each in its own macrotask (so a
 * sender never sees its peer react synchronously, as with a real radio), after the link's latency.
 * A packet's due time is fixed when it is sent; a later packet never overtakes an earlier one even when
 * the latency shrinks meanwhile.
 */
export class Pipe<T> {
  private queue: { readonly packet: T; readonly due: number }[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private closed = false;

  constructor(
    private readonly deliver: (packet: T) => void,
    private readonly latencyMs: () => number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get pending(): number {
    return this.queue.length - this.head;
  }

  send(packet: T): void {
    if (this.closed) return;
    const latency = this.latencyMs();
    this.queue.push({ packet, due: latency > 0 ? this.now() + latency : 0 });
    this.schedule();
  }

  /** Drops every queued packet and refuses new ones. */
  close(): void {
    this.closed = true;
    this.queue = [];
    this.head = 0;
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private schedule(): void {
    if (this.closed || this.timer || this.immediate) return;
    const next = this.queue[this.head];
    if (!next) return;
    const wait = next.due - this.now();
    if (wait > 0) this.timer = setTimeout(this.run, Math.ceil(wait));
    else this.immediate = setImmediate(this.run);
  }

  private readonly run = (): void => {
    this.timer = undefined;
    this.immediate = undefined;
    const entry = this.queue[this.head];
    if (this.closed || !entry) return;
    if (entry.due > this.now()) {
      this.schedule(); // a timer may fire a little early
      return;
    }
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      // Compact now and then so a long burst does not keep delivered packets alive.
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.deliver(entry.packet);
    this.schedule();
  };
}
