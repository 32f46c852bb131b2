/**
 * Peripheral role (the kiosk is the GATT server: ISO/IEC 18013-5 §8.3.3.1.1, mdoc central client mode; the
 * relay's steps in docs/protocol.md): advertise the service built from the mode; the phone's first GATT event
 * (subscribe, read or write) sends `ble_connected` before that event is forwarded; writes become
 * `ble_written` at once; each read becomes `ble_read_request`, answered by the very next socket message;
 * `ble_write`s become notifications, in order. The phone's events and the socket run concurrently.
 */
import { encodeBase64 } from '../../common/protocol/base64.js';
import type { BleMode } from '../../common/protocol/messages.js';
import type { BlePeripheralSession, PeripheralEvent } from '../../devices/ports.js';
import { AsyncQueue, TimeoutError, deferred, withTimeout } from '../async-tools.js';
import { RunStop } from './attempt.js';
import { MAX_QUEUED_PHONE_EVENTS, profileOf, setupReason } from './ble-common.js';
import type { BleTransfer } from './ble-transfer.js';
import type { RunResult } from './results.js';

export async function peripheralTransfer(transfer: BleTransfer, mode: BleMode): Promise<RunResult> {
  const { attempt } = transfer;
  const port = attempt.ctx.devices.blePeripheral;
  if (!port) return attempt.fail({ kind: 'internal_error', detail: 'peripheral mode without a peripheral port' });
  const { bleSetupMs } = attempt.ctx.timeouts;
  // One bound for the whole setup: advertising started and the phone's first GATT event.
  const setupDeadline = attempt.now() + bleSetupMs;
  const events = new AsyncQueue<PeripheralEvent>();
  // Events wait here only while a read waits for its response; a phone that floods meanwhile ends it.
  const queue = (event: PeripheralEvent): void => {
    if (attempt.stopResult) return;
    if (events.size >= MAX_QUEUED_PHONE_EVENTS) {
      transfer.failPhone(
        'phone_flood',
        `the phone sent more than ${MAX_QUEUED_PHONE_EVENTS} GATT events while a read waited for its ble_read_response`,
      );
      return;
    }
    events.push(event);
  };
  let session: BlePeripheralSession | undefined;
  try {
    session = await attempt.device((signal) => port.advertise(profileOf(mode), queue, signal), bleSetupMs, 'BLE advertising', {
      dispose: (late) => late.close(),
      keepSignal: true,
    });
  } catch (e) {
    if (e instanceof RunStop) throw e;
    return transfer.reportSetupFailure('peripheral', setupReason(e, 'advertising', bleSetupMs));
  }
  attempt.onTeardown(() => session?.close() ?? Promise.resolve());
  attempt.ctx.log.info({ event: 'ble_advertising' }, 'advertising, waiting for the phone');

  const firstEvent = deferred<'connected' | 'failed'>();
  const setup = { over: false };
  const setupTimer = attempt.after(Math.max(0, setupDeadline - attempt.now()), () => {
    setup.over = true; // from now on a late phone must not trigger a second ble_connected
    firstEvent.resolve('failed');
  });
  // The BLE side runs concurrently with the socket side; a failure in either ends both.
  void phoneEvents(transfer, events, setup, () => {
    attempt.cancelTimer(setupTimer);
    firstEvent.resolve('connected');
  }).catch((e: unknown) => {
    if (!(e instanceof RunStop) && !attempt.stopResult) attempt.stopWith(attempt.unexpected(e));
  });
  const aborted = new Promise<'aborted'>((resolve) => attempt.signal.addEventListener('abort', () => resolve('aborted'), { once: true }));
  const first = await Promise.race([firstEvent.promise, aborted]);
  if (first === 'aborted') throw new RunStop();
  if (first === 'failed') {
    // Stop advertising before reporting: the attempt is over for this phone.
    const advertising = session;
    session = undefined;
    await withTimeout(advertising.close(), 2_000, new AbortController().signal, 'peripheral close').catch(() => undefined);
    return transfer.reportSetupFailure('peripheral', `no phone connected within ${bleSetupMs} ms`);
  }
  const connected = session;
  const flush = connected.flush?.bind(connected);
  return transfer.transferLoop('peripheral', (uuid, data, signal) => connected.notify(uuid, data, signal), flush);
}

/** The phone's GATT events, in order; a read holds the queue until its response is back. */
async function phoneEvents(
  transfer: BleTransfer,
  events: AsyncQueue<PeripheralEvent>,
  setup: { readonly over: boolean },
  onFirstGattEvent: () => void,
): Promise<void> {
  const { attempt } = transfer;
  let connectedSent = false;
  for (;;) {
    const event = await events.shift(attempt.signal).catch(() => {
      throw new RunStop();
    });
    if (event.kind === 'connect') {
      attempt.ctx.log.info({ event: 'ble_phone_connected' }, 'phone connected to the kiosk service');
      continue;
    }
    if (event.kind === 'disconnect') {
      // Before its first GATT event the phone may come back: the setup timer decides (see onLinkLost).
      transfer.onLinkLost(event.reason);
      continue;
    }
    if (!connectedSent) {
      if (setup.over) return; // ble_connected (error) was sent already: the phone came too late
      // The phone's first GATT event means it is connected (docs/protocol.md): ble_connected goes first.
      attempt.send({ type: 'step_result', op: 'ble_connected', status: 'ok', role: 'peripheral' });
      connectedSent = true;
      transfer.connected('peripheral');
      attempt.ctx.log.info({ event: 'ble_connected', role: 'peripheral' }, 'BLE connected');
      onFirstGattEvent();
    }
    transfer.touch();
    switch (event.kind) {
      case 'subscribe':
      case 'unsubscribe':
        break;
      case 'write': {
        const problem = transfer.phoneValueProblem('wrote', event.characteristicUuid, event.data);
        if (problem !== undefined) {
          transfer.failPhone('phone_value_too_large', problem);
          return;
        }
        transfer.sendBle({
          type: 'step_result',
          op: 'ble_written',
          char: transfer.backendUuid(event.characteristicUuid),
          data: encodeBase64(event.data),
        });
        break;
      }
      case 'read':
        await relayRead(transfer, event);
        break;
    }
  }
}

/** `ble_read_request`, then the very next socket message must be the `ble_read_response` (docs/protocol.md). */
async function relayRead(transfer: BleTransfer, event: Extract<PeripheralEvent, { kind: 'read' }>): Promise<void> {
  const { attempt, pendingRead } = transfer;
  const { bleReadResponseMs } = attempt.ctx.timeouts;
  const answered = deferred<Uint8Array>();
  pendingRead.current = answered.resolve;
  transfer.sendBle({ type: 'step_result', op: 'ble_read_request', char: transfer.backendUuid(event.characteristicUuid) });
  try {
    const value = await attempt.device(() => answered.promise, bleReadResponseMs, 'ble_read_response');
    event.respond(value);
    transfer.touch();
  } catch (e) {
    event.fail();
    if (e instanceof TimeoutError) {
      attempt.fail({ kind: 'timeout', phase: 'ble_read_response', detail: `no ble_read_response within ${bleReadResponseMs} ms` });
    }
    throw e;
  } finally {
    pendingRead.current = undefined;
  }
}
