/**
 * What one verification attempt takes and gives: its trigger, context, progress and result, and how a
 * result maps to the WebSocket close code the backend sees.
 */
import type { BleRole, Outcome } from '../../common/protocol/messages.js';
import type { ProtocolViolation, ViolationKind } from '../../common/protocol/parse.js';
import type { KioskPhase, PromptKey, Transport } from '../../common/kiosk-view.js';
import type { DevicePorts, NfcCard } from '../../devices/ports.js';
import type { Timeouts } from '../../platform/config.js';
import type { Logger } from '../../platform/log.js';
import type { RelayChannel } from '../relay-channel.js';
import { CloseCode, type LinkClosed } from '../relay-link.js';

/** The event that fixes the transport (spec §3 rule 1). */
export type Trigger = { readonly kind: 'qr'; readonly text: string } | { readonly kind: 'nfc'; readonly card: NfcCard };

export type RunResult =
  | { readonly kind: 'complete'; readonly outcome: Outcome }
  | { readonly kind: 'backend_error'; readonly message: string }
  | { readonly kind: 'violation'; readonly violation: ProtocolViolation }
  | {
      readonly kind: 'dropped';
      readonly closed: LinkClosed | undefined;
      /** The backend had sent the 0x02 end byte (delivered or not): it may still be writing the result. */
      readonly transferFinished: boolean;
    }
  | { readonly kind: 'timeout'; readonly phase: string; readonly detail: string }
  /**
   * The backend stopped answering: no first reply within `firstReplyMs` after a tap or a scan, or no pong
   * within `pongMs` (the socket was dropped) before the transfer finished.
   */
  | { readonly kind: 'not_answering'; readonly phase: string; readonly detail: string }
  | {
      readonly kind: 'ble_failed';
      readonly role: BleRole;
      readonly reason: string;
      /** No offered role was usable (Bluetooth off or absent), as opposed to a setup that failed. */
      readonly unavailable: boolean;
    }
  | { readonly kind: 'ble_link_lost'; readonly reason: string }
  | {
      /** The link is up but the transfer cannot go on; `reason` names the sizes or counts involved. */
      readonly kind: 'ble_transfer_failed';
      /**
       * `write_too_large`: a `ble_write` above what one ATT PDU carries on this link (docs/ble-limits.md);
       * `phone_value_too_large`: the phone sent a value one ATT PDU of the link cannot carry (above ATT_MTU − 3);
       * `phone_flood`: the phone sent faster than the backend takes it, past the relay's bound.
       */
      readonly cause: 'write_too_large' | 'phone_value_too_large' | 'phone_flood';
      readonly reason: string;
    }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'internal_error'; readonly detail: string };

export interface RunReport {
  readonly result: RunResult;
  /** The card of an NFC attempt (released), for the "remove your phone" step; the latest one after a re-tap. */
  readonly card: NfcCard | undefined;
  /** APDUs and BLE messages relayed in the whole attempt. */
  readonly apdus: number;
  readonly bleMessages: number;
}

export interface RunProgress {
  readonly phase: KioskPhase;
  readonly prompt: PromptKey;
  readonly transport: Transport;
  readonly role: BleRole | null;
  readonly step: number;
  readonly apdus: number;
  readonly bleMessages: number;
}

export interface RunContext {
  readonly channel: RelayChannel;
  readonly devices: DevicePorts;
  readonly timeouts: Timeouts;
  readonly log: Logger;
  /** Cancels the attempt (kiosk stopping, staff cancel). */
  readonly signal: AbortSignal;
  onProgress(progress: RunProgress): void;
  /** Clock for the idle watchdog; `performance.now` by default. */
  readonly now?: () => number;
}

/** The WebSocket close code and reason that fit a result (the backend sees them). */
export function closeCodeFor(result: RunResult): { code: number; reason: string } {
  switch (result.kind) {
    case 'complete':
      return { code: CloseCode.normal, reason: 'verification complete' };
    case 'backend_error':
      return { code: CloseCode.normal, reason: 'backend reported an error' };
    case 'violation':
      return { code: closeCodeForViolation(result.violation.kind), reason: `protocol violation: ${result.violation.kind}` };
    case 'timeout':
      return { code: CloseCode.timeout, reason: `kiosk timeout: ${result.phase}` };
    case 'not_answering':
      return { code: CloseCode.timeout, reason: `kiosk timeout: backend not answering (${result.phase})` };
    case 'ble_failed':
      return { code: CloseCode.normal, reason: 'BLE setup failed' };
    case 'ble_link_lost':
      return { code: CloseCode.normal, reason: 'BLE link lost' };
    case 'ble_transfer_failed':
      // 1009: the backend's message was too big for the kiosk to act on (RFC 6455 §7.4.1); the reason
      // carries the size and the limit (cut to 123 bytes by the socket), the one place the backend sees them.
      return result.cause === 'write_too_large'
        ? { code: CloseCode.messageTooBig, reason: result.reason }
        : { code: CloseCode.normal, reason: `BLE transfer failed: ${result.cause}` };
    case 'cancelled':
      return { code: CloseCode.goingAway, reason: 'cancelled' };
    case 'internal_error':
      return { code: CloseCode.internalError, reason: 'kiosk internal error' };
    case 'dropped':
      return { code: CloseCode.normal, reason: 'socket dropped' };
  }
}

export function closeCodeForViolation(kind: ViolationKind): number {
  switch (kind) {
    case 'binary_frame':
      return CloseCode.unsupportedData;
    case 'malformed_json':
    case 'invalid_base64':
      return CloseCode.invalidPayload;
    case 'message_too_large':
      return CloseCode.messageTooBig;
    case 'message_flood':
      return CloseCode.policyViolation;
    default:
      return CloseCode.protocolError;
  }
}

/** The staff-facing text of a backend `error` (see {@link backendErrorFields}). */
export function backendErrorDetail(message: string, showText: boolean): string {
  return showText ? message.slice(0, 200) : 'the verification service reported an error';
}

/**
 * What the logs and the screen say of a backend `error`. Its text is not shown by the spec (§7.2) and may
 * quote request data, so by default only its length is kept (`privacy.backendErrorText` shows it).
 */
export function backendErrorFields(message: string, showText: boolean): { message?: string; messageLength: number } {
  return showText ? { message: message.slice(0, 200), messageLength: message.length } : { messageLength: message.length };
}
