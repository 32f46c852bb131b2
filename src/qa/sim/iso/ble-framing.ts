/**
 * BLE message framing over GATT (ISO/IEC 18013-5 §8.3.3.1.1.6, data retrieval; as Multipaz
 * BlePeripheralManagerAndroid / BleCentralManagerAndroid implement it):
 *
 *   chunk = [flag][payload ≤ maxCharacteristicSize − 1 bytes]
 *   flag  = 0x01 more chunks follow, 0x00 last chunk; any other value is a protocol error
 *
 * maxCharacteristicSize = min(MTU − 3, 512). An empty message is a single chunk `00`.
 */

export const CHUNK_FLAG_MORE = 0x01;
export const CHUNK_FLAG_LAST = 0x00;
/** Largest characteristic value ATT allows (Bluetooth Core Vol 3 Part F §3.2.9). */
export const MAX_CHARACTERISTIC_SIZE = 512;
/** A flag byte plus at least one payload byte. */
export const MIN_CHARACTERISTIC_SIZE = 2;

export class BleFramingError extends Error {
  override readonly name = 'BleFramingError';
}

/** Characteristic size for a negotiated ATT MTU: min(MTU − 3, 512). */
export function characteristicSizeForMtu(mtu: number): number {
  if (!Number.isInteger(mtu) || mtu < 23) throw new RangeError(`invalid ATT MTU ${mtu} (minimum 23)`);
  return Math.min(mtu - 3, MAX_CHARACTERISTIC_SIZE);
}

function checkSize(maxCharacteristicSize: number): void {
  if (
    !Number.isInteger(maxCharacteristicSize) ||
    maxCharacteristicSize < MIN_CHARACTERISTIC_SIZE ||
    maxCharacteristicSize > MAX_CHARACTERISTIC_SIZE
  ) {
    throw new RangeError(
      `maxCharacteristicSize must be an integer in ${MIN_CHARACTERISTIC_SIZE}..${MAX_CHARACTERISTIC_SIZE}, got ${maxCharacteristicSize}`,
    );
  }
}

/** Splits one message into characteristic values; every chunk but the last is full. */
export function chunkMessage(message: Uint8Array, maxCharacteristicSize: number): Uint8Array[] {
  checkSize(maxCharacteristicSize);
  const payloadSize = maxCharacteristicSize - 1;
  const chunks: Uint8Array[] = [];
  let offset = 0;
  do {
    const end = Math.min(offset + payloadSize, message.length);
    const chunk = new Uint8Array(1 + end - offset);
    chunk[0] = end < message.length ? CHUNK_FLAG_MORE : CHUNK_FLAG_LAST;
    chunk.set(message.subarray(offset, end), 1);
    chunks.push(chunk);
    offset = end;
  } while (offset < message.length);
  return chunks;
}

export interface BleReassemblerOptions {
  /** Reject chunks longer than this (the negotiated characteristic size); unchecked when undefined. */
  readonly maxCharacteristicSize?: number;
  /** Reject messages growing beyond this many bytes (memory bound); unchecked when undefined. */
  readonly maxMessageSize?: number;
}

/**
 * Collects chunks and yields whole messages. Short non-final chunks are accepted (Multipaz only warns:
 * "some buggy implementations do this", `BleCentralManagerAndroid.kt`). After an error the partial message is
 * dropped.
 */
export class BleReassembler {
  readonly #options: BleReassemblerOptions;
  #parts: Uint8Array[] = [];
  #pending = 0;

  constructor(options: BleReassemblerOptions = {}) {
    if (options.maxCharacteristicSize !== undefined) checkSize(options.maxCharacteristicSize);
    this.#options = options;
  }

  /** Bytes of the message in progress. */
  get pendingBytes(): number {
    return this.#pending;
  }

  /** True while a message has started but its last chunk has not arrived. */
  get inProgress(): boolean {
    return this.#parts.length > 0;
  }

  /** Adds one characteristic value; returns the whole message when this was its last chunk. */
  push(chunk: Uint8Array): Uint8Array | undefined {
    const flag = chunk[0];
    if (flag === undefined) return this.#fail('empty characteristic value (no flag byte)');
    if (flag !== CHUNK_FLAG_MORE && flag !== CHUNK_FLAG_LAST) {
      return this.#fail(`invalid chunk flag 0x${flag.toString(16).padStart(2, '0')} (expected 0x00 or 0x01)`);
    }
    const { maxCharacteristicSize, maxMessageSize } = this.#options;
    if (maxCharacteristicSize !== undefined && chunk.length > maxCharacteristicSize) {
      return this.#fail(`chunk of ${chunk.length} bytes exceeds the characteristic size ${maxCharacteristicSize}`);
    }
    const payload = chunk.slice(1);
    if (maxMessageSize !== undefined && this.#pending + payload.length > maxMessageSize) {
      return this.#fail(`message exceeds ${maxMessageSize} bytes`);
    }
    this.#parts.push(payload);
    this.#pending += payload.length;
    if (flag === CHUNK_FLAG_MORE) return undefined;
    const message = new Uint8Array(this.#pending);
    let offset = 0;
    for (const part of this.#parts) {
      message.set(part, offset);
      offset += part.length;
    }
    this.reset();
    return message;
  }

  /** Drops any partial message (e.g. on disconnect). */
  reset(): void {
    this.#parts = [];
    this.#pending = 0;
  }

  #fail(reason: string): never {
    this.reset();
    throw new BleFramingError(reason);
  }
}
