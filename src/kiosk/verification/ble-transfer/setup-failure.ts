/**
 * A BLE setup that failed (no usable role, scan, connect or advertising): `ble_connected` with
 * `status: error`, then the backend's answer to it.
 */
import type { BleRole } from '../../../common/protocol/messages.js';
import { ChannelTimeoutError, type Arrival } from '../../relay-channel.js';
import { outOfSequence, type Attempt } from '../attempt.js';
import type { RunResult } from '../results.js';

/**
 * The backend contract does not say what the backend does after `ble_connected` (error) (docs/protocol.md),
 * so the kiosk waits a reply's time for its `error` (or `complete`) and then gives up on the attempt.
 */
export async function reportSetupFailure(attempt: Attempt, role: BleRole, reason: string, unavailable: boolean): Promise<RunResult> {
  attempt.endQuiet();
  attempt.ctx.log.warn({ event: 'ble_setup_failed', role, reason }, 'BLE setup failed');
  attempt.send({ type: 'step_result', op: 'ble_connected', status: 'error', role, reason });
  let arrival: Arrival;
  try {
    arrival = await attempt.ctx.channel.next(attempt.ctx.timeouts.backendReplyMs, attempt.signal);
  } catch (e) {
    if (e instanceof ChannelTimeoutError) return { kind: 'ble_failed', role, reason, unavailable };
    throw e;
  }
  // The backend's `error` (or its close) answers the kiosk's own failure: the cause the report and the
  // screen give is the Bluetooth setup, not the backend.
  if (arrival.kind === 'message' && arrival.message.type === 'error') {
    attempt.ctx.log.info(
      { event: 'backend_error_after_ble_failure', messageLength: arrival.message.message.length },
      'the backend ended the session after the BLE setup failure',
    );
    return { kind: 'ble_failed', role, reason, unavailable };
  }
  if (arrival.kind === 'closed') return { kind: 'ble_failed', role, reason, unavailable };
  const message = attempt.unwrap(arrival);
  if (message.type === 'complete') return { kind: 'complete', outcome: message.outcome };
  return attempt.fail({ kind: 'violation', violation: outOfSequence(message, 'unexpected after ble_connected error') });
}
