/** QR flow (spec §3): `qr_scanned` with the scanned text, answered by `ble_exchange`. */
import type { BleMode } from '../../common/protocol/messages.js';
import { outOfSequence, type Attempt } from './attempt.js';

export async function qrEngagement(attempt: Attempt, text: string): Promise<BleMode[]> {
  attempt.progress('engaging', 'hold_still', 1);
  attempt.sendExpectingReply({ type: 'step_result', op: 'qr_scanned', status: 'ok', data: text });
  attempt.ctx.log.info({ event: 'qr_scanned_sent' }, 'QR engagement sent');
  const message = await attempt.firstReply('qr_scanned');
  // A `complete` here means the backend ended the verification early; its outcome stands.
  if (message.type === 'complete') return attempt.fail({ kind: 'complete', outcome: message.outcome });
  if (message.op !== 'ble_exchange') {
    return attempt.fail({ kind: 'violation', violation: outOfSequence(message, 'expected ble_exchange after qr_scanned') });
  }
  return message.params.modes;
}
