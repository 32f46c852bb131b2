/**
 * How a finished attempt is told: the staff-facing error view and the structured log line of each
 * result kind. Neither carries payload bytes, disclosed data or (by default) backend error text.
 */
import type { ErrorView } from '../common/kiosk-view.js';
import type { Logger } from '../platform/log.js';
import { backendErrorDetail, backendErrorFields, type RunResult } from './verification/results.js';

export function errorViewFor(result: Exclude<RunResult, { kind: 'complete' }>, showBackendErrorText = false): ErrorView {
  switch (result.kind) {
    case 'backend_error':
      return { code: 'backend_error', detail: backendErrorDetail(result.message, showBackendErrorText), retryable: true };
    case 'violation':
      return { code: 'protocol_violation', detail: `${result.violation.kind}: ${result.violation.detail}`, retryable: true };
    case 'timeout':
      return { code: 'timeout', detail: result.detail, retryable: true };
    case 'not_answering':
      return { code: 'backend_not_answering', detail: result.detail, retryable: true };
    case 'ble_failed':
      return { code: result.unavailable ? 'ble_unavailable' : 'ble_setup_failed', detail: result.reason, retryable: true };
    case 'ble_link_lost':
      // The kiosk's own adapter went off (ports.ts PeripheralEvent `adapter_off:`): Bluetooth is not working
      // here; telling the customer the phone's link was lost and to keep it near would not be true.
      return {
        code: result.reason.startsWith('adapter_off:') ? 'ble_unavailable' : 'ble_link_lost',
        detail: result.reason,
        retryable: true,
      };
    case 'ble_transfer_failed':
      return { code: 'ble_transfer_failed', detail: result.reason, retryable: true };
    case 'dropped':
      return { code: 'connection_lost', detail: `session socket closed (${result.closed?.code ?? 'no close frame'})`, retryable: true };
    case 'cancelled':
      return { code: 'cancelled', detail: 'verification cancelled', retryable: true };
    case 'internal_error':
      return { code: 'internal_error', detail: result.detail, retryable: true };
  }
}

export function logResult(log: Logger, result: RunResult, showBackendErrorText: boolean): void {
  switch (result.kind) {
    case 'complete':
      return;
    case 'violation':
      log.warn(
        {
          event: 'protocol_violation',
          kind: result.violation.kind,
          detail: result.violation.detail,
          type: result.violation.type,
          op: result.violation.op,
        },
        'backend message rejected; socket closed',
      );
      return;
    case 'backend_error':
      log.warn({ event: 'backend_error', ...backendErrorFields(result.message, showBackendErrorText) }, 'backend reported an error');
      return;
    case 'timeout':
      log.warn({ event: 'watchdog_timeout', phase: result.phase, detail: result.detail }, 'verification timed out');
      return;
    case 'not_answering':
      log.warn({ event: 'backend_not_answering', phase: result.phase, detail: result.detail }, 'the backend is not answering');
      return;
    case 'dropped':
      log.warn(
        { event: 'socket_dropped', code: result.closed?.code ?? null, transferFinished: result.transferFinished },
        'session socket dropped',
      );
      return;
    case 'ble_failed':
      log.warn({ event: 'ble_failed', role: result.role, reason: result.reason, unavailable: result.unavailable }, 'BLE setup failed');
      return;
    case 'ble_link_lost':
      log.warn({ event: 'ble_link_lost', reason: result.reason }, 'BLE link lost before completion');
      return;
    case 'ble_transfer_failed':
      log.warn({ event: 'ble_transfer_failed', cause: result.cause, reason: result.reason }, 'BLE transfer could not go on');
      return;
    case 'cancelled':
      log.info({ event: 'verification_cancelled' }, 'verification cancelled');
      return;
    case 'internal_error':
      log.error({ event: 'internal_error', detail: result.detail }, 'verification failed inside the kiosk');
      return;
  }
}
