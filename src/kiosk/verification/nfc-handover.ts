/**
 * NFC flow (spec §3, §4.3–4.4, §7.3): `nfc_card_present`, then each `nfc_apdu` is transmitted to the card
 * and answered with `nfc_rapdu` (or the PC/SC variant name on failure, verbatim); `nfc_await_card` waits
 * for the phone to leave and come back, reconnects with a fresh handle and says `nfc_card_present` again;
 * `ble_exchange` ends the handover.
 */
import { decodeCheckedBase64, encodeBase64 } from '../../common/protocol/base64.js';
import type { BleMode, ClientMessage } from '../../common/protocol/messages.js';
import { MAX_RAPDU_BYTES, NfcTransmitError, type NfcCard, type TransmitOptions } from '../../devices/ports.js';
import { LazyDeadline, TimeoutError } from '../async-tools.js';
import type { Arrival } from '../relay-channel.js';
import { RunStop, outOfSequence, type Attempt } from './attempt.js';

/**
 * `JSON.stringify({ type: 'step_result', op: 'nfc_rapdu', status: 'ok', data })` for `data` from
 * `encodeBase64`, without the serialiser on every APDU (issue 34). Base64's alphabet (`A–Z a–z 0–9 + / =`)
 * holds nothing JSON escapes, so the text is the same, byte for byte (a property test holds it to that).
 */
export function rapduOkText(base64: string): string {
  return `{"type":"step_result","op":"nfc_rapdu","status":"ok","data":"${base64}"}`;
}

/** Bound on dropping a card handle (the port promises it never hangs; the kiosk does not rely on it). */
const RELEASE_MS = 2_000;

export class NfcHandover {
  private card: NfcCard | undefined;
  private releasedCard: NfcCard | undefined;
  /**
   * One timer for the whole handover: while an APDU is at the card it is the kiosk's own bound on it (in
   * case a port ignores its timeout); while the kiosk waits for the backend it is the reply timeout.
   */
  private readonly deadline = new LazyDeadline();
  /** The same options for every APDU of the attempt (its timeout and signal do not change). */
  private transmitOptions: TransmitOptions | undefined;
  /** Counts transmits: an answer that comes after its APDU was settled (guard, stop) carries an old number. */
  private transmitSeq = 0;
  /** An APDU is at the card: arrivals queue in the channel until its answer is sent (then they are early). */
  private inFlight = false;
  /** The reply being waited for is the first one after `nfc_card_present` (bounded by `firstReplyMs`). */
  private firstReply = false;
  /** The handover loop, waiting for the next backend arrival that is not an `nfc_apdu`. */
  private wake: { resolve: (arrival: Arrival) => void; reject: (error: Error) => void } | undefined;
  private intercepting = false;

  constructor(private readonly attempt: Attempt) {
    // The attempt's end settles everything at once, without an abort listener per APDU: an APDU in
    // flight is forgotten (its late answer is ignored) and the waiting loop unwinds.
    attempt.onStop(() => {
      this.transmitSeq++;
      this.inFlight = false;
      this.deadline.disarm();
      this.stopIntercepting();
      const wake = this.wake;
      this.wake = undefined;
      wake?.reject(new RunStop());
    });
    attempt.onTeardown(async () => {
      this.deadline.dispose();
      await this.card?.release();
    });
  }

  /** The latest card, for the "remove your phone" step. */
  get lastCard(): NfcCard | undefined {
    return this.card ?? this.releasedCard;
  }

  /**
   * Each `nfc_apdu` is relayed from the channel's interceptor, synchronously from the socket's message
   * event to `card.transmit`, and answered from the card's promise: no queue and no promise hop before the
   * card (issue 34). This loop sees only what is not an APDU: `nfc_await_card`, `ble_exchange`, `complete`,
   * errors, violations, the close and the timeouts, exactly as `Attempt.nextMessage` would hand them over.
   */
  async run(card: NfcCard): Promise<BleMode[]> {
    const { attempt } = this;
    this.card = card;
    attempt.progress('engaging', 'hold_still', 1);
    let next = this.presentCard();
    for (;;) {
      const message = attempt.unwrap(await next);
      if (message.type === 'complete') return attempt.fail({ kind: 'complete', outcome: message.outcome });
      switch (message.op) {
        case 'nfc_await_card':
          await this.awaitCard();
          next = this.presentCard();
          break;
        case 'ble_exchange':
          attempt.ctx.log.info({ event: 'nfc_handover_done', apdus: attempt.apdus }, 'NFC handover finished');
          return message.params.modes;
        default:
          return attempt.fail({ kind: 'violation', violation: outOfSequence(message, 'not valid during NFC handover') });
      }
    }
  }

  /** Says `nfc_card_present` and waits for the first reply (bounded by `firstReplyMs`, the socket probed). */
  private presentCard(): Promise<Arrival> {
    const { attempt } = this;
    attempt.sendExpectingReply({ type: 'step_result', op: 'nfc_card_present', status: 'ok' });
    // Stopped already (cancelled before the tap was handled): the stop hook has run and would not wake us.
    if (attempt.stopResult) return Promise.reject(new RunStop());
    const waiting = new Promise<Arrival>((resolve, reject) => {
      this.wake = { resolve, reject };
    });
    // Installed in the same turn as the send: nothing can arrive in between, so nothing is queued.
    this.intercepting = true;
    attempt.ctx.channel.setInterceptor(this.intercept);
    this.firstReply = true;
    this.awaitReply();
    attempt.ctx.channel.probe();
    return waiting;
  }

  private stopIntercepting(): void {
    if (!this.intercepting) return;
    this.intercepting = false;
    this.attempt.ctx.channel.setInterceptor(undefined);
  }

  /** Arms the reply timeout: the same bounds and results as `Attempt.firstReply` and `Attempt.nextMessage`. */
  private awaitReply(): void {
    const { backendReplyMs, firstReplyMs } = this.attempt.ctx.timeouts;
    const ms = this.firstReply ? Math.min(firstReplyMs, backendReplyMs) : backendReplyMs;
    if (Number.isFinite(ms)) this.deadline.arm(ms, this.onReplyTimeout);
  }

  private readonly onReplyTimeout = (): void => {
    const { backendReplyMs, firstReplyMs } = this.attempt.ctx.timeouts;
    if (this.firstReply) {
      const bound = Math.min(firstReplyMs, backendReplyMs);
      this.attempt.stopWith({
        kind: 'not_answering',
        phase: 'nfc_card_present',
        detail: `no reply from the backend within ${bound} ms of the nfc_card_present (timeouts.firstReplyMs)`,
      });
    } else {
      this.attempt.stopWith({
        kind: 'timeout',
        phase: 'nfc_handover',
        detail: `no message from the backend within ${backendReplyMs} ms (nfc_handover)`,
      });
    }
  };

  /**
   * The channel's interceptor during the handover. While an APDU is at the card, arrivals are left to the
   * channel's queue: the answer's `sendExpectingReply` finds them, as before (out of sequence, or the
   * backend's `complete`, `error` or close). Otherwise an `nfc_apdu` goes to the card here and now, and
   * anything else wakes the loop, which takes it from there; later arrivals queue for whoever reads next.
   */
  private readonly intercept = (arrival: Arrival): boolean => {
    if (this.inFlight) return false;
    if (arrival.kind === 'message' && arrival.message.type === 'step_request' && arrival.message.op === 'nfc_apdu') {
      this.deadline.disarm();
      this.firstReply = false;
      try {
        this.relayApdu(decodeCheckedBase64(arrival.message.params.data));
      } catch (e) {
        // Called from the socket's event handler: nothing may escape it. The attempt records the failure.
        if (!(e instanceof RunStop)) this.attempt.stopWith(this.attempt.stopResult ?? this.attempt.unexpected(e));
      }
      return true;
    }
    this.deadline.disarm();
    this.stopIntercepting();
    const wake = this.wake;
    this.wake = undefined;
    wake?.resolve(arrival);
    return true;
  };

  /** Sends the command to the card under the kiosk's guard; the answer comes back to `onAnswer`/`onFailure`. */
  private relayApdu(command: Uint8Array): void {
    const { attempt } = this;
    const card = this.card;
    if (!card) return attempt.fail({ kind: 'internal_error', detail: 'nfc_apdu without a card' });
    const options = (this.transmitOptions ??= { timeoutMs: attempt.ctx.timeouts.apduMs, signal: attempt.signal });
    const seq = ++this.transmitSeq;
    this.inFlight = true;
    this.deadline.arm(options.timeoutMs + 500, this.onGuardExpired);
    let answer: Promise<Uint8Array>;
    try {
      answer = card.transmit(command, options);
    } catch (e) {
      // A port that throws instead of rejecting fails this APDU like a rejection would.
      this.answered(seq, undefined, e);
      return;
    }
    // The handlers carry this APDU's number: a card that answers after its guard expired (or after the
    // attempt stopped) is ignored, never taken for the next APDU's answer.
    answer.then(
      (response) => this.answered(seq, response, undefined),
      (error: unknown) => this.answered(seq, undefined, error),
    );
  }

  private readonly onGuardExpired = (): void => {
    this.answered(this.transmitSeq, undefined, new NfcTransmitError('Timeout', 'the card did not answer in time'));
  };

  /** The card's answer (or failure) to APDU `seq`: checked, sent to the backend, and the reply awaited. */
  private answered(seq: number, response: Uint8Array | undefined, error: unknown): void {
    if (seq !== this.transmitSeq || !this.inFlight) return;
    const { attempt } = this;
    this.deadline.disarm();
    try {
      if (attempt.stopResult) return;
      let reply: ClientMessage;
      let text: string | undefined;
      try {
        if (response === undefined) throw error;
        const data = encodeBase64(this.checkedResponse(response));
        reply = { type: 'step_result', op: 'nfc_rapdu', status: 'ok', data };
        text = rapduOkText(data);
      } catch (e) {
        const reason = e instanceof NfcTransmitError ? e.reason : 'UnknownError';
        attempt.ctx.log.warn({ event: 'apdu_failed', reason, apdu: attempt.apdus + 1 }, 'APDU exchange failed; reported to the backend');
        reply = { type: 'step_result', op: 'nfc_rapdu', status: 'error', reason };
      }
      attempt.apdus++;
      this.inFlight = false;
      attempt.sendExpectingReply(reply, text);
      this.awaitReply();
      attempt.publish();
    } catch (e) {
      // Runs from a promise handler or a timer: a failure is the attempt's result, never an unhandled one.
      if (!(e instanceof RunStop)) attempt.stopWith(attempt.stopResult ?? attempt.unexpected(e));
    } finally {
      this.inFlight = false;
    }
  }

  /** A response without a status word, or longer than any R-APDU, is a failure. */
  private checkedResponse(response: Uint8Array): Uint8Array {
    // NfcReader port contract: at least SW1 SW2. "UnresponsiveCard" takes the backend's recoverable path.
    if (response.length < 2) throw new NfcTransmitError('UnresponsiveCard', 'response without a status word');
    // No R-APDU is longer (ISO/IEC 7816-4 extended length); a port that hands one over is not trusted with
    // it. The PC/SC variant for "does not fit the receive buffer" is what the backend understands (§7.3).
    if (response.length > MAX_RAPDU_BYTES) {
      throw new NfcTransmitError('InsufficientBuffer', `response of ${response.length} bytes, above the ${MAX_RAPDU_BYTES} of an R-APDU`);
    }
    return response;
  }

  private async awaitCard(): Promise<void> {
    const { attempt } = this;
    const nfc = attempt.ctx.devices.nfc;
    const old = this.card;
    if (!nfc || !old) return attempt.fail({ kind: 'internal_error', detail: 'nfc_await_card without an NFC reader' });
    attempt.progress('awaiting_card', 'tap_again', 1);
    attempt.ctx.log.info({ event: 'nfc_await_card' }, 'backend asked for a re-tap');
    attempt.quiet('no message expected while waiting for the card');
    const { awaitCardMs } = attempt.ctx.timeouts;
    try {
      this.card = undefined;
      this.releasedCard = old;
      // Every step is bounded here, even against an adapter that ignores its abort signal.
      await attempt
        .device(() => old.release(), RELEASE_MS, 'card release')
        .catch((e: unknown) => {
          if (e instanceof RunStop) throw e; // a release that hangs or fails does not stop the re-tap
        });
      this.card = await attempt.device(
        async (signal) => {
          await old.waitForRemoval(signal);
          return nfc.nextCard(signal);
        },
        awaitCardMs,
        'awaiting the card',
        { dispose: (late) => late.release() },
      );
    } catch (e) {
      if (e instanceof RunStop || attempt.stopResult) throw new RunStop();
      if (e instanceof TimeoutError)
        attempt.fail({ kind: 'timeout', phase: 'awaiting_card', detail: `no re-tap within ${awaitCardMs} ms` });
      throw e;
    } finally {
      attempt.endQuiet();
    }
    attempt.progress('engaging', 'hold_still', 1);
  }
}
