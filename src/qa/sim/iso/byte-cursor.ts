/**
 * Bounds-checked big-endian reader shared by the NFC-engagement codecs (NDEF, handover, TNEP, APDU).
 * Every overrun becomes the caller's own format error with the offset, never a silent `undefined`.
 */
export type FormatErrorFactory = (message: string) => Error;

export class ByteCursor {
  private pos = 0;

  constructor(
    readonly bytes: Uint8Array,
    private readonly fail: FormatErrorFactory,
    /** Name of the structure being read, used as the prefix of every error message. */
    private readonly what: string,
  ) {}

  get offset(): number {
    return this.pos;
  }

  get remaining(): number {
    return this.bytes.length - this.pos;
  }

  /** A method, not a getter, so type narrowing does not treat it as constant between reads. */
  atEnd(): boolean {
    return this.pos >= this.bytes.length;
  }

  error(message: string): Error {
    return this.fail(`${this.what}: ${message}`);
  }

  private need(count: number, field: string): void {
    if (count > this.remaining) {
      throw this.error(`${field} needs ${count} byte(s) at offset ${this.pos} but only ${this.remaining} remain (length overrun)`);
    }
  }

  u8(field: string): number {
    this.need(1, field);
    const value = this.bytes[this.pos] ?? 0;
    this.pos += 1;
    return value;
  }

  /** Unsigned big-endian integer of 1..4 bytes. */
  uint(size: number, field: string): number {
    this.need(size, field);
    let value = 0;
    for (let i = 0; i < size; i += 1) value = value * 256 + (this.bytes[this.pos + i] ?? 0);
    this.pos += size;
    return value;
  }

  take(count: number, field: string): Uint8Array {
    this.need(count, field);
    const out = this.bytes.slice(this.pos, this.pos + count);
    this.pos += count;
    return out;
  }
}

/** Concatenates byte arrays (small messages only; no pooling needed). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const part of parts) total += part.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Big-endian bytes of `value` in exactly `size` bytes. */
export function uintBytes(value: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  let rest = value;
  for (let i = size - 1; i >= 0; i -= 1) {
    out[i] = rest % 256;
    rest = Math.floor(rest / 256);
  }
  return out;
}

const utf8Decoder = new TextDecoder('utf-8', { fatal: true });
const utf8Encoder = new TextEncoder();

export function utf8(text: string): Uint8Array {
  return utf8Encoder.encode(text);
}

/** Strict UTF-8 decode; malformed input becomes the caller's format error. */
export function decodeUtf8(bytes: Uint8Array, fail: FormatErrorFactory, field: string): string {
  try {
    return utf8Decoder.decode(bytes);
  } catch {
    throw fail(`${field} is not valid UTF-8`);
  }
}

export function isUint(value: number, max: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= max;
}
