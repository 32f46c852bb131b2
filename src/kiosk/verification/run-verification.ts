/**
 * One verification attempt on an engaged session: the relay state machine of spec §3 and §4.3–4.5, from
 * the event that fixes the transport (a QR scan or a card) to `complete`, `error` or a failure.
 *
 *   QR:   qr_scanned ─────────────────────────────────────────► ble_exchange          (qr-engagement.ts)
 *   NFC:  nfc_card_present ─► (nfc_apdu ⇄ nfc_rapdu | nfc_await_card → re-tap → nfc_card_present)*
 *         ─► ble_exchange                                                              (nfc-handover.ts)
 *   BLE:  first mode whose role is usable now → set up → ble_connected                (ble-transfer.ts)
 *         central:    ble_write → write, in order; notification → ble_notified        (ble-central.ts)
 *         peripheral: first GATT event → ble_connected; write → ble_written;
 *                     read → ble_read_request ⇄ ble_read_response; ble_write → notify  (ble-peripheral.ts)
 *         → complete
 *
 * Every wait has a timeout from `Timeouts`, and the whole attempt is capped by `verificationMs`. The first
 * failure wins; it aborts every other wait and the attempt returns a {@link RunResult}. The caller closes
 * the socket with `closeCodeFor` and decides what happens next.
 */
import { Attempt } from './attempt.js';
import { centralTransfer } from './ble-central.js';
import { peripheralTransfer } from './ble-peripheral.js';
import { BleTransfer } from './ble-transfer.js';
import { NfcHandover } from './nfc-handover.js';
import { qrEngagement } from './qr-engagement.js';
import type { RunContext, RunReport, RunResult, Trigger } from './results.js';

export async function runVerification(ctx: RunContext, trigger: Trigger): Promise<RunReport> {
  const attempt = new Attempt(ctx, trigger.kind);
  const nfc = trigger.kind === 'nfc' ? new NfcHandover(attempt) : undefined;
  const onCancel = (): void => attempt.stopWith({ kind: 'cancelled' });
  ctx.signal.addEventListener('abort', onCancel, { once: true });
  if (ctx.signal.aborted) onCancel();
  const { verificationMs } = ctx.timeouts;
  attempt.after(verificationMs, () =>
    attempt.stopWith({ kind: 'timeout', phase: 'verification', detail: `verification took longer than ${verificationMs} ms` }),
  );
  let result: RunResult;
  try {
    const modes = trigger.kind === 'qr' ? await qrEngagement(attempt, trigger.text) : await (nfc as NfcHandover).run(trigger.card);
    result = await new BleTransfer(attempt).run(modes, { central: centralTransfer, peripheral: peripheralTransfer });
  } catch (e) {
    result = attempt.stopResult ?? attempt.unexpected(e);
  } finally {
    ctx.signal.removeEventListener('abort', onCancel);
  }
  // A failure recorded first (e.g. by the phone's side in peripheral mode) wins over what the main flow saw later.
  result = attempt.stopResult ?? result;
  if (result.kind === 'dropped' && result.closed === undefined) {
    // A send that failed on a closing socket: the backend's close code follows within the closing handshake.
    result = { ...result, closed: await ctx.channel.closedWithin(ctx.timeouts.socketCloseMs) };
  }
  attempt.stopWith(result);
  await attempt.teardown();
  // Counted to the end: messages after the last progress update (e.g. before a link loss) count too.
  return { result, card: nfc?.lastCard, apdus: attempt.apdus, bleMessages: attempt.bleMessages };
}
