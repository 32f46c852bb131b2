/**
 * The phone side of a BLE transfer: what the phone sends goes to the backend at once, in order, within the
 * bounds on what the phone can make the kiosk hold (docs/ble-limits.md); the phone's first data after the
 * request moves the screen on.
 */
import type { ClientMessage } from '../../../common/protocol/messages.js';
import { ATT_MAX_VALUE_BYTES } from '../../../devices/ports.js';
import type { Attempt } from '../attempt.js';
import { MAX_OUTBOUND_BUFFERED_BYTES, MAX_PHONE_ATT_MTU, MAX_PHONE_VALUE_BYTES } from '../ble-common.js';
import type { CharacteristicIndex } from './characteristics.js';

/** Why the phone's side ends a transfer at once. */
export type PhoneFault = 'phone_value_too_large' | 'phone_flood';

export class PhoneSide {
  private warnedAboveMaximum = false;
  private answerSeen = false;

  /**
   * `touch` restarts the idle watchdog; `writesDelivered` says whether the kiosk's request has reached the
   * phone yet.
   */
  constructor(
    private readonly attempt: Attempt,
    private readonly characteristics: CharacteristicIndex,
    private readonly touch: () => void,
    private readonly writesDelivered: () => boolean,
  ) {}

  /** Sends one message of the phone's to the backend; a backend that stopped reading ends the transfer. */
  send(message: ClientMessage): void {
    this.attempt.send(message);
    this.attempt.bleMessages++;
    this.touch();
    this.noticeAnswer(message);
    const buffered = this.attempt.ctx.channel.outboundBuffered;
    if (buffered > MAX_OUTBOUND_BUFFERED_BYTES) {
      this.fail(
        'phone_flood',
        `the phone sent faster than the backend takes it: ${buffered} bytes wait to be sent, above the bound of ${MAX_OUTBOUND_BUFFERED_BYTES}`,
      );
    }
  }

  /** Ends the transfer for something the phone did (a value no ATT PDU carries, a flood): at once, no grace. */
  fail(cause: PhoneFault, reason: string): void {
    this.attempt.stopWith({ kind: 'ble_transfer_failed', cause, reason });
  }

  /**
   * Why a value from the phone is not relayed, if it is not: more than one ATT PDU of any phone's link
   * carries ({@link MAX_PHONE_VALUE_BYTES}). A value above the 512-byte attribute maximum (Core 5.x Vol 3
   * Part F §3.2.9) that fits is relayed with a warning, once per transfer. The caller ends the transfer (or
   * the setup) with the problem.
   */
  valueProblem(what: 'notified' | 'wrote', uuid: string, data: Uint8Array): string | undefined {
    if (data.length <= ATT_MAX_VALUE_BYTES) return undefined;
    const name = this.characteristics.specFor(uuid)?.name ?? 'a characteristic';
    if (data.length > MAX_PHONE_VALUE_BYTES) {
      return `the phone ${what} ${data.length} bytes on ${name}; one ATT PDU carries at most ${MAX_PHONE_VALUE_BYTES} bytes (ATT_MTU ${MAX_PHONE_ATT_MTU} − 3)`;
    }
    if (!this.warnedAboveMaximum) {
      this.warnedAboveMaximum = true;
      this.attempt.ctx.log.warn(
        { event: 'ble_value_above_att_maximum', bytes: data.length, characteristic: name, op: what },
        `the phone ${what} ${data.length} bytes, above the ${ATT_MAX_VALUE_BYTES}-byte attribute maximum; relayed (older Android stacks send ATT_MTU − 3)`,
      );
    }
    return undefined;
  }

  /**
   * The phone's data on c2s/s2c after the kiosk delivered the request means the holder approved and the
   * answer is flowing: the screen moves from "approve on your phone" to "keep your phone near". The
   * phone's writes to the state characteristic (its 0x01 start signal) do not count.
   */
  private noticeAnswer(message: ClientMessage): void {
    if (this.answerSeen || !this.writesDelivered()) return;
    if (message.op !== 'ble_notified' && message.op !== 'ble_written') return;
    if (this.characteristics.specFor(message.char)?.name === 'state') return;
    this.answerSeen = true;
    this.attempt.progress('transferring', 'receiving', 3);
  }
}
