/**
 * Central role (the phone is the GATT server: ISO/IEC 18013-5 §8.3.3.1.1, mdoc peripheral server mode; the
 * relay's steps in docs/protocol.md): scan for the phone's service, connect, subscribe, `ble_connected`;
 * then each `ble_write` is a write to the phone, and each notification becomes its own `ble_notified` at once.
 */
import { encodeBase64 } from '../../common/protocol/base64.js';
import type { BleMode, ClientMessage } from '../../common/protocol/messages.js';
import type { BleCentralLink } from '../../devices/ports.js';
import { RunStop } from './attempt.js';
import { MAX_EARLY_NOTIFICATIONS, profileOf, setupReason } from './ble-common.js';
import type { BleTransfer } from './ble-transfer.js';
import type { RunResult } from './results.js';

export async function centralTransfer(transfer: BleTransfer, mode: BleMode): Promise<RunResult> {
  const { attempt } = transfer;
  const port = attempt.ctx.devices.bleCentral;
  if (!port) return attempt.fail({ kind: 'internal_error', detail: 'central mode without a central port' });
  let connectedSent = false;
  let droppedDuringSetup: string | undefined;
  // Notifications that arrive while connecting go out right after ble_connected, in order.
  const early: ClientMessage[] = [];
  // What the phone did wrong before ble_connected: the setup fails with it (ble_connected error).
  let setupFault: string | undefined;
  const handlers = {
    onNotification: (characteristicUuid: string, data: Uint8Array): void => {
      if (attempt.stopResult || setupFault !== undefined) return;
      const problem = transfer.phoneValueProblem('notified', characteristicUuid, data);
      if (problem !== undefined) {
        if (connectedSent) transfer.failPhone('phone_value_too_large', problem);
        else setupFault = `phone_value_too_large: ${problem}`;
        early.length = 0;
        return;
      }
      const message: ClientMessage = {
        type: 'step_result',
        op: 'ble_notified',
        char: transfer.backendUuid(characteristicUuid),
        data: encodeBase64(data),
      };
      if (!connectedSent) {
        // Bounded: the setup reports a phone that floods before the kiosk has even asked anything.
        if (early.length >= MAX_EARLY_NOTIFICATIONS) {
          setupFault = `phone_flood: the phone sent more than ${MAX_EARLY_NOTIFICATIONS} notifications before the kiosk was connected`;
          early.length = 0;
          return;
        }
        early.push(message);
        return;
      }
      try {
        transfer.sendBle(message);
      } catch {
        // send() recorded the dropped socket and stopped the attempt.
      }
    },
    onDisconnect: (reason: string): void => {
      if (connectedSent) transfer.onLinkLost(reason);
      else droppedDuringSetup = reason;
    },
  };
  const { bleSetupMs } = attempt.ctx.timeouts;
  let link: BleCentralLink;
  try {
    link = await attempt.device((signal) => port.connect(profileOf(mode), handlers, signal), bleSetupMs, 'BLE central setup', {
      dispose: (late) => late.close(),
      keepSignal: true,
    });
  } catch (e) {
    if (e instanceof RunStop) throw e;
    return transfer.reportSetupFailure('central', setupReason(e, 'scan and connect', bleSetupMs));
  }
  attempt.onTeardown(() => link.close());
  if (droppedDuringSetup !== undefined) {
    return transfer.reportSetupFailure('central', `the phone disconnected during setup: ${droppedDuringSetup}`);
  }
  if (setupFault !== undefined) return transfer.reportSetupFailure('central', setupFault);
  attempt.send({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'central' });
  connectedSent = true;
  transfer.connected('central');
  attempt.ctx.log.info({ event: 'ble_connected', role: 'central', mtu: link.mtu ?? null }, 'BLE connected');
  for (const message of early.splice(0)) transfer.sendBle(message);
  const flush = link.flush?.bind(link);
  return transfer.transferLoop('central', (uuid, data, signal) => link.write(uuid, data, signal), flush);
}
