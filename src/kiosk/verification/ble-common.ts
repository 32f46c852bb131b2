/**
 * What the BLE transfer and both roles share (ble-transfer.ts, ble-central.ts, ble-peripheral.ts): the
 * bounds on what the phone can make the kiosk hold, the GATT profile of a mode, the reason a setup failure
 * reports, and the shapes of delivery. It imports none of them, so they form no circle.
 */
import type { BleMode, CharacteristicSpec } from '../../common/protocol/messages.js';
import { BleSetupError, type GattProfile } from '../../devices/ports.js';
import { TimeoutError } from '../async-tools.js';

/**
 * Bounds on what the phone can make the kiosk hold (docs/ble-limits.md). The relay forwards the phone's
 * data in order as it comes and never combines or drops any (the relay protocol: one `ble_notified` per
 * notification, one `ble_written` per write), so a phone faster than the backend, or one that floods,
 * ends the transfer with a clear reason instead of growing memory:
 * - the session socket's unsent bytes: 8 MiB is several times a whole mdoc response with a portrait as
 *   `ble_notified`/`ble_written` JSON (base64 is 4/3 of the bytes), so only a backend that stopped reading
 *   while the phone keeps sending gets there;
 * - the phone's GATT events waiting while a read waits for its `ble_read_response` (peripheral), and the
 *   notifications that arrive before `ble_connected` (central): an mdoc sends nothing before the kiosk's
 *   request, so a few hundred of either is far past any honest phone.
 */
export const MAX_OUTBOUND_BUFFERED_BYTES = 8 * 1024 * 1024;

/**
 * The largest ATT_MTU phones negotiate (Android asks 517: a 512-byte value plus the 5-byte header of a
 * Prepare Write). A value from the phone is relayed when one ATT PDU of such a link can carry it
 * (ATT_MTU − 3 = 514 bytes), even above the 512-byte attribute maximum: Android before 13 and early wallet
 * builds sent ATT_MTU − 3 anyway, and judging the data is the backend's job (docs/ble-limits.md). The
 * bound does not use the MTU a stack reports for the link: a value the stack delivered did fit the link,
 * and a reported MTU can be late or normalised differently per platform.
 */
export const MAX_PHONE_ATT_MTU = 517;
/** The longest value from the phone that is relayed (one PDU of the largest link). */
export const MAX_PHONE_VALUE_BYTES = MAX_PHONE_ATT_MTU - 3;
export const MAX_QUEUED_PHONE_EVENTS = 1_024;
export const MAX_EARLY_NOTIFICATIONS = 256;

type CharacteristicName = 'state' | 'c2s' | 's2c' | 'ident';
export interface KnownCharacteristic {
  readonly name: CharacteristicName;
  readonly spec: CharacteristicSpec;
}

/** Delivers one `ble_write` to the phone: a write (central) or a notification (peripheral). */
export type Deliver = (uuid: string, data: Uint8Array, signal: AbortSignal) => Promise<void>;

/** Waits until what was delivered has left the Bluetooth stack (the port's optional `flush`). */
export type Flush = (signal: AbortSignal) => Promise<void>;

/** Answers the phone's pending read; set from `ble_read_request` until its response arrives. */
export interface PendingRead {
  current: ((value: Uint8Array) => void) | undefined;
}

export function profileOf(mode: BleMode): GattProfile {
  return { serviceUuid: mode.service_uuid, characteristics: mode.characteristics };
}

export function setupReason(e: unknown, what: string, ms: number): string {
  if (e instanceof BleSetupError) return e.reason;
  if (e instanceof TimeoutError) return `${what} timed out after ${ms} ms`;
  return `${what} failed: ${e instanceof Error ? e.message : 'unknown error'}`;
}
