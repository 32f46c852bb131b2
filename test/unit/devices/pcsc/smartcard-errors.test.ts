import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseScardCode, SCARD_CODES } from '../../../../src/devices/pcsc/scard-errors.js';
import { PcscBindingError, SMARTCARD_ERROR_TEXTS, smartcardErrorCode } from '../../../../src/devices/pcsc/smartcard-errors.js';

/** `if (ucode == SCARD_E_CANCELLED) return "Operation cancelled";` lines of the installed addon's header. */
function addonTexts(): Map<string, string> {
  // The package exports only its entry (dist/lib/index.js): its root is two folders up.
  const entry = createRequire(import.meta.url).resolve('smartcard');
  const header = readFileSync(join(dirname(entry), '..', '..', 'src', 'pcsc_errors.h'), 'utf8');
  const texts = new Map<string, string>();
  for (const m of header.matchAll(/ucode == (SCARD_[A-Z_]+)\) return "([^"]+)";/g)) {
    if (m[1] !== 'SCARD_S_SUCCESS') texts.set(m[2] ?? '', m[1] ?? '');
  }
  return texts;
}

describe("the smartcard addon's error texts", () => {
  it('the table is exactly the installed addon’s list, each text with the code of its constant', () => {
    const texts = addonTexts();
    expect(texts.size).toBeGreaterThan(25);
    expect([...SMARTCARD_ERROR_TEXTS.keys()].sort()).toEqual([...texts.keys()].sort());
    for (const [text, constant] of texts) {
      const code = SMARTCARD_ERROR_TEXTS.get(text);
      const entries = SCARD_CODES.filter((e) => e.code === code);
      expect(
        entries.map((e) => e.constant),
        `${text} → ${constant}`,
      ).toContain(constant);
    }
  });

  it('a binding error carries the code where the adapter reads it, and none for an unknown text', () => {
    const removed = new PcscBindingError('SCardTransmit', new Error('Card was removed'));
    expect(removed.message).toBe('SCardTransmit failed: Card was removed (0x80100069)');
    expect(parseScardCode(removed)).toBe(0x80100069);
    expect(removed.code).toBe(0x80100069);
    const unknown = new PcscBindingError('SCardConnect', new Error('Unknown PC/SC error'));
    expect(parseScardCode(unknown)).toBeUndefined();
    expect(smartcardErrorCode('  PC/SC service not running ')).toBe(0x8010001d);
  });
});
