/**
 * Errors of the virtual radio: `RadioError` for link-layer and API misuse (no such device, link gone,
 * payload too large…), `AttError` for the ATT error responses a GATT server sends back.
 */

export type RadioErrorCode =
  /** The local device is powered off. */
  | 'powered_off'
  /** No device with that id or address is on the air. */
  | 'not_found'
  /** The target is not advertising (connectable) right now, or powered off. */
  | 'unreachable'
  /** The peripheral refused the connection (its accept hook, or a fault). */
  | 'connection_refused'
  /** The central already holds a link to that peripheral. */
  | 'already_connected'
  /** The link is down (it dropped, or either side disconnected). */
  | 'disconnected'
  /** No link with that connection handle. */
  | 'not_connected'
  /** A notification for a characteristic the central has not subscribed to. */
  | 'not_subscribed'
  /** A write or notification payload above ATT_MTU − 3. */
  | 'payload_too_large'
  | 'aborted'
  | 'invalid_argument';

export class RadioError extends Error {
  override readonly name = 'RadioError';
  constructor(
    readonly code: RadioErrorCode,
    message: string = code,
  ) {
    super(message);
  }
}

/** ATT error codes (Bluetooth Core Vol 3 Part F §3.4.1.1) the radio and servers use. */
export const AttErrorCode = {
  INVALID_HANDLE: 0x01,
  READ_NOT_PERMITTED: 0x02,
  WRITE_NOT_PERMITTED: 0x03,
  REQUEST_NOT_SUPPORTED: 0x06,
  INVALID_OFFSET: 0x07,
  ATTRIBUTE_NOT_FOUND: 0x0a,
  INVALID_ATTRIBUTE_VALUE_LENGTH: 0x0d,
  UNLIKELY_ERROR: 0x0e,
} as const;

const ATT_ERROR_NAMES: Record<number, string> = {
  0x01: 'Invalid Handle',
  0x02: 'Read Not Permitted',
  0x03: 'Write Not Permitted',
  0x06: 'Request Not Supported',
  0x07: 'Invalid Offset',
  0x0a: 'Attribute Not Found',
  0x0d: 'Invalid Attribute Value Length',
  0x0e: 'Unlikely Error',
};

export function attErrorName(code: number): string {
  return ATT_ERROR_NAMES[code] ?? `ATT error 0x${code.toString(16).padStart(2, '0')}`;
}

/** An ATT Error Response: thrown by server handlers to refuse a request, rejected to the client. */
export class AttError extends Error {
  override readonly name = 'AttError';
  constructor(
    readonly code: number,
    message: string = attErrorName(code),
  ) {
    super(message);
  }
}
