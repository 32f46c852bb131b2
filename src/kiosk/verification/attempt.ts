/**
 * The plumbing every phase of a verification attempt shares: the first-failure-wins stop, timers that
 * die with the attempt, progress publishing, sending, reading the next backend message, and bounded
 * device operations. The phases (QR, NFC handover, BLE transfer) are built on it.
 */
import type { BackendMessage, BleRole, ClientMessage, ErrorMessage } from '../../common/protocol/messages.js';
import type { ProtocolViolation } from '../../common/protocol/parse.js';
import type { KioskPhase, PromptKey, Transport } from '../../common/kiosk-view.js';
import { AbortedError, withTimeout } from '../async-tools.js';
import { ChannelAbortedError, ChannelTimeoutError, LinkDroppedError, type Arrival } from '../relay-channel.js';
import type { LinkClosed } from '../relay-link.js';
import { runDeviceOperation, type DeviceOperationOptions } from './device-operation.js';
import type { RunContext, RunResult } from './results.js';

/** Thrown inside the attempt to unwind to its end; the result is in `Attempt.stopResult`. */
export class RunStop extends Error {
  override readonly name = 'RunStop';
}

export type BackendRequest = Exclude<BackendMessage, ErrorMessage>;

export function outOfSequence(message: BackendMessage, detail: string): ProtocolViolation {
  return message.type === 'step_request'
    ? { kind: 'out_of_sequence', detail, type: message.type, op: message.op }
    : { kind: 'out_of_sequence', detail, type: message.type };
}

export class Attempt {
  private readonly controller = new AbortController();
  private result: RunResult | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly stopHooks: (() => void)[] = [];
  private readonly teardownHooks: (() => Promise<void>)[] = [];
  readonly now: () => number;

  role: BleRole | null = null;
  private phase: KioskPhase = 'engaging';
  private prompt: PromptKey = 'hold_still';
  step = 1;
  apdus = 0;
  bleMessages = 0;
  /** The state characteristic's end byte (0x02) went to the phone: the transfer itself is over. */
  transferFinished = false;
  /**
   * The backend sent the end byte: it has the phone's whole answer, whether or not the byte has reached the
   * phone (a write stuck in the stack, or still queued behind one). A socket lost from then on may leave a
   * result to fetch, so the `dropped` result says the transfer finished.
   */
  endByteReceived = false;

  constructor(
    readonly ctx: RunContext,
    readonly transport: Transport,
  ) {
    this.now = ctx.now ?? (() => performance.now());
  }

  /** Aborted when the attempt ends, whatever ends it. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stopResult(): RunResult | undefined {
    return this.result;
  }

  // ------------------------------------------------------------ ending

  /** Records the result (the first one wins) and aborts every wait of the attempt. */
  stopWith(result: RunResult): void {
    if (this.result) return;
    this.result = result;
    this.controller.abort();
    for (const hook of this.stopHooks) hook();
  }

  fail(result: RunResult): never {
    this.stopWith(result);
    throw new RunStop();
  }

  /** Runs synchronously when the attempt stops, e.g. to reject a pending operation without a listener. */
  onStop(hook: () => void): void {
    this.stopHooks.push(hook);
  }

  /** Releases a device resource at the end of the attempt. */
  onTeardown(hook: () => Promise<void>): void {
    this.teardownHooks.push(hook);
  }

  unexpected(e: unknown): RunResult {
    if (e instanceof LinkDroppedError) {
      return this.dropped(this.ctx.channel.closed);
    }
    if (e instanceof AbortedError || e instanceof ChannelAbortedError) return { kind: 'cancelled' };
    const detail = e instanceof Error ? `${e.name}: ${e.message}` : 'unknown failure';
    this.ctx.log.error({ event: 'relay_internal_error', detail }, 'unexpected failure in the relay');
    return { kind: 'internal_error', detail };
  }

  private dropped(closed: LinkClosed | undefined): RunResult {
    const transferFinished = this.transferFinished || this.endByteReceived;
    // Dropped for want of a pong before the backend had the answer: nobody is answering, and nothing is to be
    // recovered. After the end byte a result may still wait behind a lost connection: that path tries.
    if (closed?.unanswered && !transferFinished) {
      return {
        kind: 'not_answering',
        phase: this.phase,
        detail: `the backend answered no ping within timeouts.pongMs (${this.phase}); the socket was dropped`,
      };
    }
    return { kind: 'dropped', closed, transferFinished };
  }

  // ------------------------------------------------------------ timers

  after(ms: number, fn: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
    return timer;
  }

  cancelTimer(timer: NodeJS.Timeout | undefined): void {
    if (!timer) return;
    clearTimeout(timer);
    this.timers.delete(timer);
  }

  // ------------------------------------------------------------ progress

  progress(phase: KioskPhase, prompt: PromptKey, step: number): void {
    this.phase = phase;
    this.prompt = prompt;
    this.step = step;
    this.publish();
  }

  publish(): void {
    this.ctx.onProgress({
      phase: this.phase,
      prompt: this.prompt,
      transport: this.transport,
      role: this.role,
      step: this.step,
      apdus: this.apdus,
      bleMessages: this.bleMessages,
    });
  }

  // ------------------------------------------------------------ socket

  /** `text`: the message already serialised (see `RelayChannel.send`). */
  send(message: ClientMessage, text?: string): void {
    try {
      this.ctx.channel.send(message, text);
    } catch (e) {
      if (e instanceof LinkDroppedError) {
        this.fail(this.dropped(this.ctx.channel.closed));
      }
      throw e;
    }
  }

  /** Turns an arrival into a message, or stops the attempt on a close, a violation or `error`. */
  unwrap(arrival: Arrival): BackendRequest {
    switch (arrival.kind) {
      case 'closed':
        return this.fail(this.dropped(arrival.closed));
      case 'violation':
        return this.fail({ kind: 'violation', violation: arrival.violation });
      case 'message':
        if (arrival.message.type === 'error') return this.fail({ kind: 'backend_error', message: arrival.message.message });
        return arrival.message;
    }
  }

  /** Like `unwrap`, for interceptors: never throws, the attempt records the failure. */
  unwrapQuietly(arrival: Arrival): BackendRequest | undefined {
    try {
      return this.unwrap(arrival);
    } catch {
      return undefined; // unwrap() recorded the result and aborted the attempt
    }
  }

  async nextMessage(phase: string, timeoutMs: number): Promise<BackendRequest> {
    try {
      return this.unwrap(await this.ctx.channel.next(timeoutMs, this.signal));
    } catch (e) {
      if (e instanceof ChannelTimeoutError) {
        return this.fail({ kind: 'timeout', phase, detail: `no message from the backend within ${timeoutMs} ms (${phase})` });
      }
      throw e;
    }
  }

  /**
   * The backend's first reply after a tap or a scan (`nfc_card_present`, `qr_scanned`), bounded by
   * `firstReplyMs` (never longer than `backendReplyMs`): a backend that says nothing by then is not
   * answering, and the customer is told so instead of being asked to hold still for the full reply wait.
   * The socket is probed (a ping) at once, so a dead connection is found within `pongMs`.
   */
  async firstReply(phase: string): Promise<BackendRequest> {
    const { firstReplyMs, backendReplyMs } = this.ctx.timeouts;
    const bound = Math.min(firstReplyMs, backendReplyMs);
    this.ctx.channel.probe();
    try {
      return this.unwrap(await this.ctx.channel.next(bound, this.signal));
    } catch (e) {
      if (e instanceof ChannelTimeoutError) {
        return this.fail({
          kind: 'not_answering',
          phase,
          detail: `no reply from the backend within ${bound} ms of the ${phase} (timeouts.firstReplyMs)`,
        });
      }
      throw e;
    }
  }

  /**
   * Sends a message the backend answers with exactly one message. Anything already queued arrived before
   * this message was sent, so it answered nothing: out of sequence (or a backend `error`/close).
   */
  sendExpectingReply(message: ClientMessage, text?: string): void {
    const early = this.ctx.channel.pending[0];
    if (early) {
      const unsolicited = this.unwrap(early);
      // A `complete` ends the verification whatever the phase (as in `quiet`): one that arrives while an
      // APDU is in flight stands just like one that arrives a moment after its answer.
      if (unsolicited.type === 'complete') this.fail({ kind: 'complete', outcome: unsolicited.outcome });
      this.fail({ kind: 'violation', violation: outOfSequence(unsolicited, `unsolicited message before ${message.op}`) });
    }
    this.send(message, text);
  }

  /** While no backend message is expected (re-tap, BLE setup), any arrival ends the attempt at once. */
  quiet(reason: string): void {
    this.ctx.channel.setInterceptor((arrival) => {
      const message = this.unwrapQuietly(arrival);
      // A `complete` ends the verification whatever the phase: the backend's outcome stands.
      if (message?.type === 'complete') this.stopWith({ kind: 'complete', outcome: message.outcome });
      else if (message) this.stopWith({ kind: 'violation', violation: outOfSequence(message, reason) });
      return true;
    });
  }

  endQuiet(): void {
    this.ctx.channel.setInterceptor(undefined);
  }

  // ------------------------------------------------------------ devices

  /**
   * Runs a device operation under a timeout (see device-operation.ts): it stops when the attempt ends or the
   * timeout passes; `dispose` releases what it produces too late, `keepSignal` keeps its signal tied to the
   * attempt after success. The attempt's end unwinds as {@link RunStop}.
   */
  device<T>(operation: (signal: AbortSignal) => Promise<T>, ms: number, what: string, options: DeviceOperationOptions<T> = {}): Promise<T> {
    return runDeviceOperation(this.signal, operation, ms, what, options, () => new RunStop());
  }

  /** Ends everything the attempt started: waits, timers, interceptor, devices (bounded). */
  async teardown(): Promise<void> {
    this.controller.abort();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.ctx.channel.setInterceptor(undefined);
    // A hook that throws instead of rejecting must not break the teardown of the others.
    const closing = this.teardownHooks.map((hook) => Promise.resolve().then(hook));
    // close()/release() never reject by contract; bound them anyway so teardown cannot hang.
    await withTimeout(Promise.allSettled(closing), 2_000, new AbortController().signal, 'device teardown').catch(() => {
      this.ctx.log.warn({ event: 'teardown_slow' }, 'device teardown did not finish in time');
    });
  }
}
