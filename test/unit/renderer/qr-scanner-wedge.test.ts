/**
 * The keyboard-wedge detector, fed synthetic key timestamps: a scanner's burst is recognised and handed
 * over unmodified, a person typing is not, partial or over-long input is dropped, and keys typed into a
 * text field are left alone.
 */
import { describe, expect, it } from 'vitest';
import { MAX_QR_TEXT } from '../../../src/common/kiosk-api.js';
import { ScannerWedgeDetector, isEditableTarget, type WedgeKey, type WedgeVerdict } from '../../../src/renderer/qr/scanner-wedge.js';

const ENGAGEMENT = 'mdoc:owBjMS4xAYIB2BhYS6QBAiABIVggz1Xd-kz_3';

/** Types `text` then Enter, one key every `gapMs` from `start`; returns every verdict. */
function type(detector: ScannerWedgeDetector, text: string, gapMs: number, start = 1_000, extra: Partial<WedgeKey> = {}): WedgeVerdict[] {
  return press(detector, [...Array.from(text), 'Enter'], gapMs, start, extra);
}

/** Types `text` without the final Enter. */
function typeOnly(detector: ScannerWedgeDetector, text: string, gapMs: number, start: number): WedgeVerdict[] {
  return press(detector, Array.from(text), gapMs, start);
}

function press(
  detector: ScannerWedgeDetector,
  keys: readonly string[],
  gapMs: number,
  start: number,
  extra: Partial<WedgeKey> = {},
): WedgeVerdict[] {
  const verdicts: WedgeVerdict[] = [];
  let at = start;
  for (const key of keys) {
    verdicts.push(detector.key({ key, timeStamp: at, ...extra }));
    at += gapMs;
  }
  return verdicts;
}

function scans(verdicts: readonly WedgeVerdict[]): string[] {
  return verdicts.flatMap((v) => (v.kind === 'scan' ? [v.text] : []));
}

describe('ScannerWedgeDetector', () => {
  it('recognises a scanner burst ended by Enter and hands over the text unmodified, without the Enter', () => {
    const detector = new ScannerWedgeDetector();
    const verdicts = type(detector, ENGAGEMENT, 8);
    expect(scans(verdicts)).toEqual([ENGAGEMENT]);
    // Keys are left alone until the burst is recognised (8 characters), then swallowed, Enter included.
    expect(verdicts.slice(0, 7).every((v) => v.kind === 'pass')).toBe(true);
    expect(verdicts.slice(7).every((v) => v.kind !== 'pass')).toBe(true);
    expect(detector.buffered).toBe(0);
  });

  it('keeps spaces, symbols, case and characters outside the BMP exactly; Shift presses do not break a burst', () => {
    const detector = new ScannerWedgeDetector();
    const text = 'Hello, World! ñ 😀 ~';
    const keys: WedgeKey[] = [];
    let at = 0;
    for (const ch of text) {
      if (ch !== ch.toLowerCase()) keys.push({ key: 'Shift', timeStamp: (at += 3) });
      keys.push({ key: ch, timeStamp: (at += 5) });
    }
    keys.push({ key: 'Enter', timeStamp: at + 5 });
    expect(scans(keys.map((k) => detector.key(k)))).toEqual([text]);
  });

  it('hands over bursts whatever their prefix (the host decides what an engagement is)', () => {
    const detector = new ScannerWedgeDetector();
    expect(scans(type(detector, 'https://example.test/x', 10))).toEqual(['https://example.test/x']);
  });

  it('does not take a person typing (gaps above the threshold) for a scanner', () => {
    const detector = new ScannerWedgeDetector();
    const verdicts = type(detector, 'mdoc:somethingtypedbyhand', 120);
    expect(scans(verdicts)).toEqual([]);
    expect(verdicts.every((v) => v.kind === 'pass')).toBe(true);
  });

  it('a slow key in the middle restarts the count: fast typing in short runs is still a person', () => {
    const detector = new ScannerWedgeDetector();
    const verdicts = [...typeOnly(detector, 'abcdef', 20, 0), ...type(detector, 'ghijk', 20, 500)];
    expect(scans(verdicts)).toEqual([]);
  });

  it('does not take a short fast run ended by Enter (fewer than 8 characters) for a scan', () => {
    const detector = new ScannerWedgeDetector();
    const verdicts = type(detector, '1234567', 5);
    expect(scans(verdicts)).toEqual([]);
    expect(verdicts.every((v) => v.kind === 'pass')).toBe(true);
  });

  it('drops a burst without Enter after a pause: a late Enter, or a later burst, does not bring it back', () => {
    const detector = new ScannerWedgeDetector();
    const partial = typeOnly(detector, ENGAGEMENT, 5, 0);
    expect(scans(partial)).toEqual([]);
    const lastAt = (ENGAGEMENT.length - 1) * 5;
    expect(detector.key({ key: 'Enter', timeStamp: lastAt + 400 })).toEqual({ kind: 'pass' });
    typeOnly(detector, ENGAGEMENT, 5, 1_000);
    expect(scans(type(detector, 'mdoc:next', 5, 2_000))).toEqual(['mdoc:next']);
  });

  it('expire() forgets a partial burst once the gap has passed, and not before', () => {
    const detector = new ScannerWedgeDetector();
    typeOnly(detector, 'mdoc:abcdefgh', 5, 0);
    const buffered = detector.buffered;
    expect(buffered).toBeGreaterThan(0);
    detector.expire(60 + 20);
    expect(detector.buffered).toBe(buffered);
    detector.expire(60 + 200);
    expect(detector.buffered).toBe(0);
  });

  it('bounds the buffer: a burst longer than MAX_QR_TEXT is swallowed whole and reported as nothing', () => {
    const detector = new ScannerWedgeDetector();
    const verdicts = type(detector, 'x'.repeat(MAX_QR_TEXT + 50), 1);
    expect(scans(verdicts)).toEqual([]);
    expect(verdicts.at(-1)).toEqual({ kind: 'consume' });
    expect(detector.buffered).toBe(0);
    // The longest allowed text still goes through.
    expect(scans(type(detector, 'y'.repeat(MAX_QR_TEXT), 1, 1e6))).toEqual(['y'.repeat(MAX_QR_TEXT)]);
  });

  it('ignores a burst typed into a focused text field, and drops what was buffered before the focus moved', () => {
    const detector = new ScannerWedgeDetector();
    const inField = type(detector, ENGAGEMENT, 5, 0, { inEditable: true });
    expect(inField.every((v) => v.kind === 'pass')).toBe(true);
    expect(detector.buffered).toBe(0);
    const half = typeOnly(detector, 'mdoc:abcdefghij', 5, 1_000).slice(0, 10);
    expect(half.at(-1)).toEqual({ kind: 'consume' });
    expect(detector.key({ key: 'k', timeStamp: 1_055, inEditable: true })).toEqual({ kind: 'pass' });
    expect(detector.key({ key: 'Enter', timeStamp: 1_060 })).toEqual({ kind: 'pass' });
  });

  it('a shortcut, a held key, IME composition or a navigation key breaks a burst', () => {
    for (const interrupt of [
      { key: 'v', ctrlKey: true },
      { key: 'a', repeat: true },
      { key: 'a', isComposing: true },
      { key: 'ArrowLeft' },
      { key: 'Backspace' },
    ]) {
      const detector = new ScannerWedgeDetector();
      const verdicts = typeOnly(detector, 'mdoc:abcd', 5, 0);
      verdicts.push(detector.key({ timeStamp: 46, ...interrupt }));
      verdicts.push(...type(detector, 'efgh', 5, 50));
      expect(scans(verdicts)).toEqual([]);
    }
  });

  it('AltGr (Ctrl+Alt) characters are part of a burst', () => {
    const detector = new ScannerWedgeDetector();
    const keys: WedgeKey[] = Array.from('mdoc:ab@cd').map((key, i) => ({
      key,
      timeStamp: i * 5,
      ...(key === '@' ? { ctrlKey: true, altKey: true } : {}),
    }));
    keys.push({ key: 'Enter', timeStamp: 50 });
    expect(scans(keys.map((k) => detector.key(k)))).toEqual(['mdoc:ab@cd']);
  });

  it('takes its thresholds from the options and refuses nonsense ones', () => {
    const detector = new ScannerWedgeDetector({ maxGapMs: 200, minLength: 3 });
    expect(scans(type(detector, 'abc', 150))).toEqual(['abc']);
    expect(() => new ScannerWedgeDetector({ maxGapMs: 0 })).toThrow(RangeError);
    expect(() => new ScannerWedgeDetector({ minLength: 10, maxLength: 5 })).toThrow(RangeError);
  });
});

describe('isEditableTarget', () => {
  it('is true for text fields and contenteditable, false for buttons, the body and nothing', () => {
    expect(isEditableTarget({ tagName: 'INPUT' })).toBe(true);
    expect(isEditableTarget({ tagName: 'textarea' })).toBe(true);
    expect(isEditableTarget({ tagName: 'SELECT' })).toBe(true);
    expect(isEditableTarget({ tagName: 'DIV', isContentEditable: true })).toBe(true);
    expect(isEditableTarget({ tagName: 'BUTTON', isContentEditable: false })).toBe(false);
    expect(isEditableTarget({ tagName: 'BODY' })).toBe(false);
    expect(isEditableTarget(null)).toBe(false);
  });
});
