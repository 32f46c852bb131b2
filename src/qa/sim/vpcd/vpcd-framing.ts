/**
 * The vpcd wire format (vsmartcard `vpcd.c`): every message, both ways, is a uint16 big-endian length and
 * that many bytes. vpcd → card 1-byte messages are control messages; longer ones are C-APDUs. The card
 * answers GET ATR with its ATR and a C-APDU with the R-APDU (data || SW1 SW2); the other controls get no
 * answer.
 */

/** vpcd's control bytes (vpcd.h `VPCD_CTRL_*`). */
export const VpcdControl = { POWER_OFF: 0x00, POWER_ON: 0x01, RESET: 0x02, GET_ATR: 0x04 } as const;

/** The largest payload a frame can carry. */
export const VPCD_MAX_PAYLOAD = 0xffff;

/** ATR of an ISO 14443-4 contactless card as a PC/SC reader reports it (PC/SC part 3, no historical bytes). */
export const CONTACTLESS_ATR: Uint8Array = Uint8Array.of(0x3b, 0x80, 0x80, 0x01, 0x01);

/** One frame: length prefix and payload in a single buffer, so it goes out in one write. */
export function encodeVpcdFrame(payload: Uint8Array): Uint8Array {
  if (payload.length > VPCD_MAX_PAYLOAD)
    throw new RangeError(`a vpcd frame carries at most ${VPCD_MAX_PAYLOAD} bytes, got ${payload.length}`);
  const frame = new Uint8Array(2 + payload.length);
  frame[0] = payload.length >> 8;
  frame[1] = payload.length & 0xff;
  frame.set(payload, 2);
  return frame;
}

/** Reassembles frames from TCP chunks: a frame may be split across chunks, and a chunk may hold several. */
export class VpcdFrameDecoder {
  #pending: Uint8Array = new Uint8Array(0);

  /** Adds a chunk; returns the payloads it completed, in order (zero-length frames included). */
  push(chunk: Uint8Array): Uint8Array[] {
    let buffer = chunk;
    if (this.#pending.length > 0) {
      buffer = new Uint8Array(this.#pending.length + chunk.length);
      buffer.set(this.#pending);
      buffer.set(chunk, this.#pending.length);
    }
    const frames: Uint8Array[] = [];
    let at = 0;
    while (buffer.length - at >= 2) {
      const length = ((buffer[at] ?? 0) << 8) | (buffer[at + 1] ?? 0);
      if (buffer.length - at - 2 < length) break;
      // A copy: the caller may keep it after the socket reuses its buffer.
      frames.push(buffer.slice(at + 2, at + 2 + length));
      at += 2 + length;
    }
    this.#pending = buffer.slice(at);
    return frames;
  }

  /** Bytes of an incomplete frame held back. */
  get pendingBytes(): number {
    return this.#pending.length;
  }
}
