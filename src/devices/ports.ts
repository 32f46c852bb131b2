/**
 * Device ports: what the relay core needs from an NFC reader, the BLE stack in either role and a QR source.
 * Adapters (PC/SC, noble, bleno, the virtual phone's devices) implement these; the core depends on
 * nothing else, so it runs unchanged against real hardware, simulators and test doubles.
 *
 * Conventions shared by every port:
 * - every method that waits takes an `AbortSignal`; an aborted wait rejects promptly and leaves nothing
 *   running (timers cleared, listeners removed);
 * - UUIDs are handed over exactly as the backend spelled them; adapters compare them case-insensitively;
 * - byte payloads are `Uint8Array` (a `Buffer` is one).
 */
import type { CharacteristicSpec } from '../common/protocol/messages.js';

/** Whether a device can be used right now, and if not, why (a stable key the UI can translate). */
export interface Availability {
  readonly usable: boolean;
  /**
   * e.g. `no_adapter`, `no_radio` (Windows: the Bluetooth service is stopped or the adapter is missing),
   * `powered_off`, `unauthorized`, `unsupported_platform`, `not_configured`, `service_down`.
   */
  readonly reason?: string;
  /** Free text for staff diagnostics; never personal data. */
  readonly detail?: string;
}

export interface AvailabilitySource {
  availability(): Availability;
  /** Optional change notification (the kiosk also re-reads `availability()` whenever it needs it). */
  onAvailabilityChange?(listener: (availability: Availability) => void): () => void;
}

// ---------------------------------------------------------------- NFC (PC/SC)

/**
 * A failed APDU exchange. `reason` is the canonical PC/SC error variant name (the variant names of the
 * Rust `pcsc` crate's `Error` enum, e.g. `RemovedCard`, `NotTransacted`, `CommError`, `Timeout`), which the
 * relay forwards to the backend verbatim (spec §4.3, §7.3).
 */
export class NfcTransmitError extends Error {
  override readonly name = 'NfcTransmitError';
  constructor(
    readonly reason: string,
    message: string = reason,
  ) {
    super(message);
  }
}

/**
 * The longest response APDU: 65,536 data bytes (extended Le) plus SW1 SW2 (ISO/IEC 7816-4 §5.1). Anything
 * longer is refused as `InsufficientBuffer`, SCardTransmit's error for a response that does not fit.
 */
export const MAX_RAPDU_BYTES = 65_538;

export interface TransmitOptions {
  /** The adapter must give up after this long and reject with an `NfcTransmitError` (`Timeout`). */
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}

/** One card presence, connected with its own handle. */
export interface NfcCard {
  /**
   * Sends a command APDU and resolves with the response APDU including SW1 SW2 (at least two bytes, at
   * most {@link MAX_RAPDU_BYTES}). Failures reject with {@link NfcTransmitError}.
   */
  transmit(command: Uint8Array, options: TransmitOptions): Promise<Uint8Array>;
  /** False once the card has been seen leaving the field. */
  readonly present: boolean;
  /** Resolves when the card has left the field; at once if it already has. Works after `release()`. */
  waitForRemoval(signal: AbortSignal): Promise<void>;
  /** Drops the handle, leaving the card powered. Idempotent; never rejects. */
  release(): Promise<void>;
}

export interface NfcReader extends AvailabilitySource {
  /**
   * Resolves with the next card presence, connected with a fresh handle. Each presence is handed out
   * once: a card that is still lying on the reader after its verification is not offered again until it
   * has been removed and presented anew. A presence that began before the call and was not handed out yet
   * is offered at once.
   */
  nextCard(signal: AbortSignal): Promise<NfcCard>;
  /**
   * Treats the card lying on the reader now (if any) as already handed out, so it is offered only after
   * it has been removed and presented again. The kiosk calls it when a QR verification ends, so a phone
   * put down on the reader meanwhile does not start another verification.
   */
  ignoreCurrentCard(): void;
  close(): Promise<void>;
}

// ---------------------------------------------------------------- QR

export interface QrInput extends AvailabilitySource {
  /** Resolves with the next scanned text exactly as the camera decoder or scanner produced it. */
  nextScan(signal: AbortSignal): Promise<string>;
  /** Drops scans made while a verification was running (they are ignored until it ends, spec §3 rule 1). */
  discardPending(): void;
}

// ---------------------------------------------------------------- BLE

/** The GATT service to find or to serve, straight from a `ble_exchange` mode (spec §2.5). */
export interface GattProfile {
  readonly serviceUuid: string;
  readonly characteristics: {
    readonly state: CharacteristicSpec;
    readonly c2s: CharacteristicSpec;
    readonly s2c: CharacteristicSpec;
    readonly ident?: CharacteristicSpec;
  };
}

/** A BLE setup failure; `reason` is sent to the backend in `ble_connected` (`status: error`). */
export class BleSetupError extends Error {
  override readonly name = 'BleSetupError';
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** The longest attribute value ATT allows (Bluetooth Core 5.x Vol 3 Part F §3.2.9). */
export const ATT_MAX_VALUE_BYTES = 512;

/**
 * The largest value one Handle Value Notification or Write Command carries on a link: ATT_MTU − 3 (the
 * opcode and the handle take 3 bytes, Core 5.x Vol 3 Part F §3.4.7.1, §3.4.5.3), and never more than the
 * attribute maximum. Neither PDU can be split, unlike a read (Read Blob) or a prepared write.
 */
export function bleValueLimit(attMtu: number): number {
  return Math.min(attMtu - 3, ATT_MAX_VALUE_BYTES);
}

/**
 * A `ble_write` the link cannot carry in one ATT PDU (see {@link bleValueLimit}). The adapters refuse it
 * before anything is sent (bleno's hci GATT would truncate a notification silently, docs/ble-libraries.md §4), and the
 * core ends the attempt at once with this message: the backend cannot learn the MTU from the protocol, so
 * the size and the limit are what it needs to hear (docs/ble-limits.md).
 */
export class BleValueTooLargeError extends Error {
  override readonly name = 'BleValueTooLargeError';
  constructor(
    readonly operation: 'notification' | 'write-without-response',
    readonly bytes: number,
    readonly limit: number,
    /** The ATT_MTU the limit comes from; absent when the limit is the attribute maximum itself. */
    readonly attMtu?: number,
  ) {
    const why = attMtu !== undefined && attMtu - 3 === limit ? ` (ATT_MTU ${attMtu} − 3)` : ' (the ATT maximum attribute value)';
    super(`ble_write of ${bytes} bytes exceeds the ${operation} limit of ${limit} bytes${why}`);
  }

  /** The error for `bytes` on a link of `attMtu`, or undefined when the value fits. */
  static check(
    operation: BleValueTooLargeError['operation'],
    bytes: number,
    attMtu: number | undefined,
  ): BleValueTooLargeError | undefined {
    const limit = attMtu === undefined ? ATT_MAX_VALUE_BYTES : bleValueLimit(attMtu);
    return bytes > limit ? new BleValueTooLargeError(operation, bytes, limit, attMtu) : undefined;
  }
}

export interface BleCentralHandlers {
  /** One call per notification, in arrival order, never combined. */
  onNotification(characteristicUuid: string, data: Uint8Array): void;
  /** The link dropped (the phone went away or the stack failed). Called at most once. */
  onDisconnect(reason: string): void;
}

export interface BleCentralLink {
  /**
   * Writes the bytes to the characteristic with the operation its spec names (`write_without_response`).
   * Resolves when the stack has taken the write; the caller issues the next write only after that.
   * A value above ATT_MTU − 3 (512 when the MTU is unknown) rejects with {@link BleValueTooLargeError},
   * nothing sent. An aborted `signal` rejects the wait promptly.
   */
  write(characteristicUuid: string, data: Uint8Array, signal?: AbortSignal): Promise<void>;
  /** Negotiated ATT MTU, normalised to the ATT_MTU value, when the platform reports one. */
  readonly mtu?: number;
  /**
   * Resolves once every write taken so far has left the kiosk's Bluetooth stack (on hci: out of the host's
   * ACL queue and completed by the controller). `write` resolving only means the stack *took* it; the core
   * flushes before it tears the link down after `complete`. Absent or immediate where the stack says nothing.
   */
  flush?(signal: AbortSignal): Promise<void>;
  /** Disconnects and releases everything. Idempotent; never rejects. */
  close(): Promise<void>;
}

export interface BleCentral extends AvailabilitySource {
  /**
   * Scans for a peripheral advertising `profile.serviceUuid`, connects, discovers the characteristics and
   * subscribes to every characteristic whose spec lists `notify`. Resolves once notifications flow.
   * Rejects with {@link BleSetupError} (scan or connect timeout, missing characteristic, …); a link that
   * drops during setup rejects too (`onDisconnect` is for links that were handed out).
   */
  connect(profile: GattProfile, handlers: BleCentralHandlers, signal: AbortSignal): Promise<BleCentralLink>;
}

/** GATT activity of the phone on the kiosk's service, reported in the order it happened. */
export type PeripheralEvent =
  | { readonly kind: 'connect' }
  | { readonly kind: 'subscribe'; readonly characteristicUuid: string }
  | { readonly kind: 'unsubscribe'; readonly characteristicUuid: string }
  | {
      readonly kind: 'read';
      readonly characteristicUuid: string;
      /**
       * Offset of a long read (Read Blob); the adapter applies it to the value passed to `respond`. An
       * adapter may answer the blobs of one long read from the value it got for offset 0 without
       * reporting them again, so the value cannot change halfway through.
       */
      readonly offset: number;
      /** Answers the read with the characteristic's whole value. */
      respond(value: Uint8Array): void;
      /** Answers the read with an ATT error (the backend did not answer in time). */
      fail(): void;
    }
  | { readonly kind: 'write'; readonly characteristicUuid: string; readonly data: Uint8Array }
  /** `reason` starts with `adapter_off:` when the kiosk's own adapter went off under the phone (not the phone leaving). */
  | { readonly kind: 'disconnect'; readonly reason: string };

export interface BlePeripheralSession {
  /**
   * Sends the bytes as a notification on the characteristic, waiting for the phone's subscription if it
   * has not subscribed yet. Resolves when the stack has taken it; the caller sends the next one after that.
   * A value above the subscription's ATT_MTU − 3 rejects with {@link BleValueTooLargeError}, nothing sent.
   * An aborted `signal` rejects the wait promptly.
   */
  notify(characteristicUuid: string, data: Uint8Array, signal?: AbortSignal): Promise<void>;
  /** As {@link BleCentralLink.flush}, for the notifications taken so far. */
  flush?(signal: AbortSignal): Promise<void>;
  /** Stops advertising, disconnects the phone and removes the service. Idempotent; never rejects. */
  close(): Promise<void>;
}

export interface BlePeripheral extends AvailabilitySource {
  /**
   * Builds the GATT service from the profile (operations → properties, permissions enforced), starts
   * advertising `profile.serviceUuid` and accepts one phone. Events go to `onEvent` in order. If the phone
   * leaves before its first GATT event, advertising resumes while the session is open.
   * Rejects with {@link BleSetupError} when advertising cannot start.
   */
  advertise(profile: GattProfile, onEvent: (event: PeripheralEvent) => void, signal: AbortSignal): Promise<BlePeripheralSession>;
}

/** The device ports the kiosk runs with; a missing device is simply absent. */
export interface DevicePorts {
  readonly nfc?: NfcReader;
  readonly qr?: QrInput;
  readonly bleCentral?: BleCentral;
  readonly blePeripheral?: BlePeripheral;
}
