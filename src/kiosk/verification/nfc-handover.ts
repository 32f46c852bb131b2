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
import { RunStop, outOfSequence, type Attempt } from './attempt.js';

/** Bound on dropping a card handle (the port promises it never hangs; the kiosk does not rely on it). */
const RELEASE_MS = 2_000;

export class NfcHandover {
  private card: NfcCard | undefined;
  private releasedCard: NfcCard | undefined;
  /** The kiosk's own bound on each APDU, in case a port ignores its timeout (one timer for all APDUs). */
  private readonly apduGuard = new LazyDeadline();
  /** Rejects the APDU in flight (the attempt stopped, or the guard expired). */
  private rejectTransmit: ((error: Error) => void) | undefined;
  /** The same options for every APDU of the attempt (its timeout and signal do not change). */
  private transmitOptions: TransmitOptions | undefined;
  /** `nfc_card_present` went out and nothing came back yet: the next reply is bounded by `firstReplyMs`. */
  private awaitingFirstReply = false;

  constructor(private readonly attempt: Attempt) {
    // The attempt's end rejects a pending transmit at once, without an abort listener per APDU.
    attempt.onStop(() => {
      const reject = this.rejectTransmit;
      this.settleTransmit();
      reject?.(new RunStop());
    });
    attempt.onTeardown(async () => {
      this.apduGuard.dispose();
      await this.card?.release();
    });
  }

  /** The latest card, for the "remove your phone" step. */
  get lastCard(): NfcCard | undefined {
    return this.card ?? this.releasedCard;
  }

  async run(card: NfcCard): Promise<BleMode[]> {
    const { attempt } = this;
    this.card = card;
    attempt.progress('engaging', 'hold_still', 1);
    attempt.sendExpectingReply({ type: 'step_result', op: 'nfc_card_present', status: 'ok' });
    this.awaitingFirstReply = true;
    for (;;) {
      const message = this.awaitingFirstReply
        ? await attempt.firstReply('nfc_card_present')
        : await attempt.nextMessage('nfc_handover', attempt.ctx.timeouts.backendReplyMs);
      this.awaitingFirstReply = false;
      if (message.type === 'complete') return attempt.fail({ kind: 'complete', outcome: message.outcome });
      switch (message.op) {
        case 'nfc_apdu':
          await this.relayApdu(decodeCheckedBase64(message.params.data));
          break;
        case 'nfc_await_card':
          await this.awaitCard();
          break;
        case 'ble_exchange':
          attempt.ctx.log.info({ event: 'nfc_handover_done', apdus: attempt.apdus }, 'NFC handover finished');
          return message.params.modes;
        default:
          return attempt.fail({ kind: 'violation', violation: outOfSequence(message, 'not valid during NFC handover') });
      }
    }
  }

  private async relayApdu(command: Uint8Array): Promise<void> {
    const { attempt } = this;
    const card = this.card;
    if (!card) return attempt.fail({ kind: 'internal_error', detail: 'nfc_apdu without a card' });
    let reply: ClientMessage;
    try {
      const response = this.checkedResponse(await this.transmit(card, command));
      reply = { type: 'step_result', op: 'nfc_rapdu', status: 'ok', data: encodeBase64(response) };
    } catch (e) {
      if (e instanceof RunStop || attempt.stopResult) throw new RunStop();
      const reason = e instanceof NfcTransmitError ? e.reason : 'UnknownError';
      attempt.ctx.log.warn({ event: 'apdu_failed', reason, apdu: attempt.apdus + 1 }, 'APDU exchange failed; reported to the backend');
      reply = { type: 'step_result', op: 'nfc_rapdu', status: 'error', reason };
    }
    attempt.apdus++;
    attempt.sendExpectingReply(reply);
    attempt.publish();
  }

  /**
   * The card's transmit with the kiosk's own guard: the port must time out by itself, but a port that
   * never answers must not hold the attempt. Not `async`, and its handlers are methods: an `async`
   * wrapper would add a microtask hop and a closure per APDU on the relay's hottest path (issue 34).
   */
  private transmit(card: NfcCard, command: Uint8Array): Promise<Uint8Array> {
    const options = (this.transmitOptions ??= { timeoutMs: this.attempt.ctx.timeouts.apduMs, signal: this.attempt.signal });
    return new Promise<Uint8Array>((resolve, reject) => {
      this.rejectTransmit = reject;
      this.apduGuard.arm(options.timeoutMs + 500, this.onGuardExpired);
      // The handlers close over this call's resolve and reject: a card that answers after its guard
      // expired settles only its own promise, never the next APDU's.
      card.transmit(command, options).then(
        (value) => {
          this.settleTransmit();
          resolve(value);
        },
        (error: unknown) => {
          this.settleTransmit();
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  private settleTransmit(): void {
    this.apduGuard.disarm();
    this.rejectTransmit = undefined;
  }

  private readonly onGuardExpired = (): void => {
    const reject = this.rejectTransmit;
    this.settleTransmit();
    reject?.(new NfcTransmitError('Timeout', 'the card did not answer in time'));
  };

  /** A response without a status word, or longer than any R-APDU, is a failure. */
  private checkedResponse(response: Uint8Array): Uint8Array {
    if (this.attempt.stopResult) throw new RunStop();
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
    attempt.sendExpectingReply({ type: 'step_result', op: 'nfc_card_present', status: 'ok' });
    this.awaitingFirstReply = true;
  }
}
