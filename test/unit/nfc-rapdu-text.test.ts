/**
 * The NFC handover sends a successful `nfc_rapdu` from a template instead of `JSON.stringify` (issue 34).
 * The template is right only if no base64 text needs escaping in JSON: held here to the serialiser's own
 * output, byte for byte, for every response size up to the largest R-APDU.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBase64 } from '../../src/common/protocol/base64.js';
import { MAX_RAPDU_BYTES } from '../../src/devices/ports.js';
import { rapduOkText } from '../../src/kiosk/verification/nfc-handover.js';

const serialised = (data: string): string => JSON.stringify({ type: 'step_result', op: 'nfc_rapdu', status: 'ok', data });

describe('rapduOkText', () => {
  it('equals JSON.stringify of the reply for any response bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const data = encodeBase64(bytes);
        expect(rapduOkText(data)).toBe(serialised(data));
      }),
      { numRuns: 2_000 },
    );
  });

  it('equals it at the edges: empty, the status word alone, every byte value, the largest R-APDU', () => {
    const everyByte = Uint8Array.from({ length: 256 }, (_, i) => i);
    for (const bytes of [new Uint8Array(0), Uint8Array.of(0x90, 0x00), everyByte, new Uint8Array(MAX_RAPDU_BYTES).fill(0xff)]) {
      const data = encodeBase64(bytes);
      expect(rapduOkText(data)).toBe(serialised(data));
    }
  });

  it('is told apart from a string that would need escaping (the test can fail)', () => {
    expect(rapduOkText('a"b')).not.toBe(serialised('a"b'));
  });
});
