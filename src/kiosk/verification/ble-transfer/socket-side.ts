/**
 * The socket side of a BLE transfer: the backend's `ble_write`s delivered to the phone strictly in arrival
 * order, each one finished before the next, with the 0x02 end byte on the state characteristic noted; and
 * the interceptor that sees each socket arrival first (a pending read's response, `complete`, the terminal
 * arrivals that act at once).
 */
import { decodeCheckedBase64 } from '../../../common/protocol/base64.js';
import type { BleRole } from '../../../common/protocol/messages.js';
import { BleValueTooLargeError } from '../../../devices/ports.js';
import { TimeoutError } from '../../async-tools.js';
import type { Arrival } from '../../relay-channel.js';
import { RunStop, outOfSequence, type Attempt } from '../attempt.js';
import type { Deliver, Flush, PendingRead } from '../ble-common.js';
import type { RunResult } from '../results.js';
import type { CharacteristicIndex } from './characteristics.js';
import type { TransferEnding } from './transfer-ending.js';

const STATE_END = 0x02;
/** The end byte as strict base64 (the only spelling the message schema lets through). */
const STATE_END_BASE64 = 'Ag==';

/** The characteristic an arriving `ble_write` of the end byte is for, if the arrival is one. */
function endByteTarget(arrival: Arrival): string | undefined {
  if (arrival.kind !== 'message') return undefined;
  const { message } = arrival;
  const endByte = message.type === 'step_request' && message.op === 'ble_write' && message.params.data === STATE_END_BASE64;
  return endByte ? message.params.char : undefined;
}

export class SocketSide {
  /** A `ble_write` (the request) has reached the phone. */
  private delivered = false;

  constructor(
    private readonly attempt: Attempt,
    private readonly characteristics: CharacteristicIndex,
    private readonly ending: TransferEnding,
  ) {}

  get writesDelivered(): boolean {
    return this.delivered;
  }

  /**
   * `ble_write`s in arrival order until `complete`. Terminal arrivals (`error`, a close) act at once (see
   * {@link intercept}); `complete` waits for the writes queued before it (the 0x02 end byte) to be delivered
   * and flushed out of the Bluetooth stack, for at most `completionFlushMs`.
   */
  async loop(role: BleRole, deliver: Deliver, flush?: Flush): Promise<RunResult> {
    const { attempt } = this;
    for (;;) {
      const message = await attempt.nextMessage('ble_transfer', Number.POSITIVE_INFINITY);
      this.ending.touch();
      if (message.type === 'complete') {
        await this.ending.flushBeforeTeardown(flush);
        return { kind: 'complete', outcome: message.outcome };
      }
      if (message.op !== 'ble_write') {
        const detail =
          message.op === 'ble_read_response' ? 'ble_read_response without a pending ble_read_request' : 'not valid during the BLE transfer';
        return attempt.fail({ kind: 'violation', violation: outOfSequence(message, detail) });
      }
      const target = this.characteristics.specFor(message.params.char);
      if (!target) {
        return attempt.fail({
          kind: 'violation',
          violation: outOfSequence(message, 'ble_write to a characteristic that is not in the chosen mode'),
        });
      }
      const needed = role === 'central' ? 'write_without_response' : 'notify';
      if (!target.spec.operations.includes(needed)) {
        return attempt.fail({
          kind: 'violation',
          violation: outOfSequence(message, `ble_write to ${target.name}, whose operations lack ${needed}`),
        });
      }
      const data = decodeCheckedBase64(message.params.data);
      await this.deliverWrite(deliver, target.spec.uuid, data);
      if (target.name === 'state' && data.length === 1 && data[0] === STATE_END) {
        attempt.transferFinished = true;
        attempt.step = 4;
        attempt.publish();
      }
    }
  }

  /** Sees each socket arrival first during the transfer (see RelayChannel); true when it took it. */
  intercept(arrival: Arrival, pendingRead: PendingRead | undefined): boolean {
    const { attempt, ending } = this;
    const respond = pendingRead?.current;
    if (arrival.kind === 'message' && arrival.message.type === 'step_request' && arrival.message.op === 'ble_read_response') {
      if (!pendingRead || !respond) return false; // unsolicited: the loop reports it in order
      pendingRead.current = undefined; // answered: a second response is unsolicited
      respond(decodeCheckedBase64(arrival.message.params.data));
      return true;
    }
    if (respond && !(arrival.kind === 'closed' && ending.completion)) {
      // A read is pending: this arrival should have been its response (docs/protocol.md, `ble_read_request`).
      const message = attempt.unwrapQuietly(arrival);
      if (message)
        attempt.stopWith({
          kind: 'violation',
          violation: outOfSequence(message, 'expected ble_read_response right after ble_read_request'),
        });
      return true;
    }
    // Noted on arrival, not on delivery: a close while the end byte is stuck in the stack (or queued behind
    // a stuck write) still leaves a result the backend may be writing (see `Attempt.endByteReceived`).
    const endByteTo = endByteTarget(arrival);
    if (endByteTo !== undefined && this.characteristics.specFor(endByteTo)?.name === 'state') attempt.endByteReceived = true;
    if (arrival.kind === 'message' && arrival.message.type === 'complete') {
      ending.completeArrived(arrival.message.outcome);
      return false;
    }
    if (arrival.kind === 'closed' && ending.completion) return false; // complete is queued ahead of it
    const flooded = arrival.kind === 'violation' && arrival.violation.kind === 'message_flood';
    if (arrival.kind === 'closed' || flooded || (arrival.kind === 'message' && arrival.message.type === 'error')) {
      attempt.unwrapQuietly(arrival);
      return true;
    }
    return false;
  }

  private async deliverWrite(deliver: Deliver, uuid: string, data: Uint8Array): Promise<void> {
    const { attempt } = this;
    if (this.ending.linkLost) {
      attempt.ctx.log.debug({ event: 'ble_write_skipped', reason: 'link lost' }, 'ble_write not delivered');
      return;
    }
    try {
      await attempt.device((signal) => deliver(uuid, data, signal), attempt.ctx.timeouts.bleWriteMs, 'ble_write');
      this.delivered = true;
      attempt.bleMessages++;
      this.ending.touch();
    } catch (e) {
      if (e instanceof RunStop) throw e;
      if (e instanceof TimeoutError) {
        attempt.fail({ kind: 'timeout', phase: 'ble_write', detail: `a ble_write took longer than ${attempt.ctx.timeouts.bleWriteMs} ms` });
      }
      // The link is fine, the value is not: said at once, with the size and the limit, rather than a
      // lost link after the grace period (the backend cannot learn the MTU, docs/ble-limits.md).
      if (e instanceof BleValueTooLargeError) attempt.fail({ kind: 'ble_transfer_failed', cause: 'write_too_large', reason: e.message });
      this.ending.onLinkLost(`write failed: ${e instanceof Error ? e.message : 'unknown'}`);
    }
  }
}
