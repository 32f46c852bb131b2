/**
 * A session WebSocket with the protocol on top: outbound messages are serialised, inbound frames are
 * validated and queued in arrival order as typed messages, violations or the close.
 *
 * One consumer reads the queue with `next()`. An interceptor may look at each arrival first, which the
 * peripheral relay needs: the reply to `ble_read_request` must answer the phone's read at once, even while
 * earlier `ble_write`s are still being delivered.
 */
import { parseBackendText, type ProtocolViolation } from '../common/protocol/parse.js';
import type { BackendMessage, ClientMessage } from '../common/protocol/messages.js';
import { LazyDeadline } from './async-tools.js';
import type { InboundFrame, LinkClosed, RelayLink } from './relay-link.js';

export type Arrival =
  | { readonly kind: 'message'; readonly message: BackendMessage }
  | { readonly kind: 'violation'; readonly violation: ProtocolViolation }
  | { readonly kind: 'closed'; readonly closed: LinkClosed };

/** Sees an arrival before it is queued; returns true when it has dealt with it. */
export type ArrivalInterceptor = (arrival: Arrival) => boolean;

export class ChannelTimeoutError extends Error {
  override readonly name = 'ChannelTimeoutError';
}

export class ChannelAbortedError extends Error {
  override readonly name = 'ChannelAbortedError';
}

export class LinkDroppedError extends Error {
  override readonly name = 'LinkDroppedError';
}

/** How much may wait unread before the backend counts as flooding (the spec shows no rate limit, §8). */
export interface ChannelLimits {
  readonly maxQueued: number;
  readonly maxQueuedChars: number;
}

/**
 * A whole DeviceRequest chunked at the smallest BLE MTU is a few hundred writes; 4,096 unread messages or
 * 32 Mi characters of them is far beyond any honest exchange and keeps memory bounded.
 */
export const DEFAULT_CHANNEL_LIMITS: ChannelLimits = { maxQueued: 4_096, maxQueuedChars: 32 * 1024 * 1024 };

interface Waiter {
  resolve: (arrival: Arrival) => void;
  reject: (error: Error) => void;
}

export class RelayChannel {
  private readonly queue: Arrival[] = [];
  private waiter: Waiter | undefined;
  private interceptor: ArrivalInterceptor | undefined;
  private closedInfo: LinkClosed | undefined;
  private link: RelayLink | undefined;
  private readonly timer = new LazyDeadline();
  private boundSignal: AbortSignal | undefined;
  private readonly limits: ChannelLimits;
  /** Text length of each queued arrival, parallel to `queue`. */
  private readonly queueSizes: number[] = [];
  private queuedChars = 0;
  private flooded = false;
  private readonly closeWaiters = new Set<(closed: LinkClosed) => void>();
  /** Count of frames received, for diagnostics. */
  received = 0;
  /** Valid steps and outcomes received (`step_request`, `complete`): the backend was doing its work. */
  answered = 0;

  constructor(limits: Partial<ChannelLimits> = {}) {
    this.limits = { ...DEFAULT_CHANNEL_LIMITS, ...limits };
  }

  /** Attach once the link is open (frames may be fed before, from the connector's handlers). */
  attach(link: RelayLink): void {
    this.link = link;
  }

  get isOpen(): boolean {
    return this.closedInfo === undefined && (this.link?.isOpen ?? false);
  }

  get closed(): LinkClosed | undefined {
    return this.closedInfo;
  }

  /** Bytes sent and still waiting for the network (0 when the link cannot tell). */
  get outboundBuffered(): number {
    return this.link?.bufferedAmount ?? 0;
  }

  /** Arrivals queued and not yet read. */
  get pending(): readonly Arrival[] {
    return this.queue;
  }

  /** Frame handler for the connector. */
  readonly onFrame = (frame: InboundFrame): void => {
    this.received++;
    if (frame.kind === 'binary') {
      this.arrive({
        kind: 'violation',
        violation: { kind: 'binary_frame', detail: `binary frame of ${frame.size} bytes; the protocol uses text frames only` },
      });
      return;
    }
    if (frame.kind === 'oversize') {
      this.arrive({ kind: 'violation', violation: { kind: 'message_too_large', detail: 'message larger than backend.maxMessageBytes' } });
      return;
    }
    let arrival: Arrival;
    try {
      const parsed = parseBackendText(frame.text);
      arrival = parsed.ok ? { kind: 'message', message: parsed.message } : { kind: 'violation', violation: parsed.violation };
      if (parsed.ok && parsed.message.type !== 'error') this.answered++;
    } catch {
      // The parser is bounded and should not throw; if it ever does, it is this message's fault, and it
      // must not escape into the socket's event handler (that would end the process).
      arrival = { kind: 'violation', violation: { kind: 'invalid_fields', detail: 'message could not be checked' } };
    }
    this.arrive(arrival, frame.text.length);
  };

  /** Close handler for the connector. */
  readonly onClose = (closed: LinkClosed): void => {
    if (this.closedInfo) return;
    this.closedInfo = closed;
    this.arrive({ kind: 'closed', closed });
    this.timer.dispose();
    for (const waiter of [...this.closeWaiters]) waiter(closed);
  };

  /**
   * The close, once it is known, waiting up to `ms` for it. A send fails as soon as the peer's close frame
   * is in (the socket is closing) but the close event with its code comes only after the closing
   * handshake; a failure reported in between would otherwise lose the code the backend gave.
   */
  closedWithin(ms: number): Promise<LinkClosed | undefined> {
    if (this.closedInfo || this.link === undefined) return Promise.resolve(this.closedInfo);
    return new Promise((resolve) => {
      const done = (closed: LinkClosed | undefined): void => {
        clearTimeout(timer);
        this.closeWaiters.delete(done);
        resolve(closed);
      };
      const timer = setTimeout(() => done(undefined), ms);
      this.closeWaiters.add(done);
    });
  }

  /** Removes and returns the queued arrivals (for a consumer that takes over with an interceptor). */
  takePending(): Arrival[] {
    this.queueSizes.length = 0;
    this.queuedChars = 0;
    return this.queue.splice(0);
  }

  setInterceptor(interceptor: ArrivalInterceptor | undefined): void {
    this.interceptor = interceptor;
  }

  private arrive(arrival: Arrival, size = 0): void {
    if (this.flooded && arrival.kind !== 'closed') return;
    if (this.interceptor?.(arrival)) return;
    const waiter = this.waiter;
    if (waiter) {
      this.waiter = undefined;
      this.timer.disarm();
      waiter.resolve(arrival);
      return;
    }
    this.queue.push(arrival);
    this.queueSizes.push(size);
    this.queuedChars += size;
    if (arrival.kind !== 'closed' && (this.queue.length > this.limits.maxQueued || this.queuedChars > this.limits.maxQueuedChars)) {
      // A backend that sends faster than the kiosk can deliver (a flood of ble_writes while the phone is
      // slow) would otherwise grow this queue without bound. What is queued is dropped and the consumer
      // gets one violation next; everything after it but the close is ignored.
      this.flooded = true;
      this.queue.length = 0;
      this.queueSizes.length = 0;
      this.queuedChars = 0;
      const flood: Arrival = {
        kind: 'violation',
        violation: {
          kind: 'message_flood',
          detail: `more than ${this.limits.maxQueued} messages or ${this.limits.maxQueuedChars} characters queued unread`,
        },
      };
      // The interceptor sees it first: a consumer stuck on a stalled device must learn of it now.
      if (this.interceptor?.(flood)) return;
      this.queueSizes.push(0);
      this.queue.push(flood);
    }
  }

  /**
   * Serialises and sends; throws {@link LinkDroppedError} when the socket is gone. `text`, when given, is
   * the message already serialised by a caller that can prove it equals `JSON.stringify(message)` (the
   * APDU path's fixed-shape reply, issue 34).
   */
  send(message: ClientMessage, text?: string): void {
    if (this.closedInfo || !this.link?.send(text ?? JSON.stringify(message))) {
      throw new LinkDroppedError('the session WebSocket is closed');
    }
  }

  /**
   * The next arrival in order. Rejects with {@link ChannelTimeoutError} after `timeoutMs` and with
   * {@link ChannelAbortedError} when `signal` aborts; neither consumes an arrival. One timer and one abort
   * listener per channel and signal serve every call: this is the relay's per-message path.
   */
  next(timeoutMs: number, signal: AbortSignal): Promise<Arrival> {
    const queued = this.queue.shift();
    this.queuedChars -= this.queueSizes.shift() ?? 0;
    if (queued) return Promise.resolve(queued);
    if (this.waiter) return Promise.reject(new Error('RelayChannel.next: a consumer is already waiting'));
    if (signal.aborted) return Promise.reject(new ChannelAbortedError('aborted'));
    if (signal !== this.boundSignal) {
      this.boundSignal = signal;
      signal.addEventListener(
        'abort',
        () => {
          if (this.boundSignal === signal) this.failWaiter(new ChannelAbortedError('aborted'));
        },
        { once: true },
      );
    }
    return new Promise<Arrival>((resolve, reject) => {
      this.waiter = { resolve, reject };
      if (Number.isFinite(timeoutMs)) {
        this.timer.arm(timeoutMs, () => this.failWaiter(new ChannelTimeoutError(`no message from the backend within ${timeoutMs} ms`)));
      }
    });
  }

  private failWaiter(error: Error): void {
    const waiter = this.waiter;
    if (!waiter) return;
    this.waiter = undefined;
    this.timer.disarm();
    waiter.reject(error);
  }

  /** Asks the link to check now that the backend answers (a ping); a no-op for links that cannot. */
  probe(): void {
    this.link?.probe?.();
  }

  /** Closes the socket (idempotent); resolves when it is closed or destroyed. */
  async close(code: number, reason: string): Promise<void> {
    this.timer.dispose();
    await this.link?.close(code, reason);
  }
}
