/**
 * Whether a scanned `mdoc:` text can be a whole device engagement (src/kiosk/engagement-text.ts): syntax
 * only, lenient, so a code cut short by a scanner gets "this code could not be read" instead of a session
 * spent and "something went wrong on our side".
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { engagementTextProblem, failsMdocPrefixRule } from '../../src/kiosk/engagement-text.js';
import { PHONE_PROFILE_NAMES, createVirtualCounter, getTestPki } from '../../src/qa/index.js';

describe('engagementTextProblem', () => {
  it('a real engagement of the virtual phone (every profile) passes; cut short anywhere it is truncated', async () => {
    for (const phone of PHONE_PROFILE_NAMES) {
      const counter = await createVirtualCounter({ pki: await getTestPki(), backend: false, phone });
      try {
        for (let i = 0; i < 2; i++) {
          const text = counter.presentQr();
          expect(engagementTextProblem(text), phone).toBeUndefined();
          // With padding, or with the standard alphabet, it is still the same bytes: tolerated.
          expect(engagementTextProblem(`${text}${'='.repeat((4 - ((text.length - 5) % 4)) % 4)}`)).toBeUndefined();
          for (let cut = 6; cut < text.length - 1; cut += 7)
            expect(engagementTextProblem(text.slice(0, cut)), `${phone} cut at ${cut}`).toBeDefined();
        }
      } finally {
        await counter.stop();
      }
    }
  });

  it('not base64: spaces, other characters, an impossible length', () => {
    expect(engagementTextProblem('mdoc:oQBj MS4w')).toBe('not_base64');
    expect(engagementTextProblem('mdoc:oQBj*S4w')).toBe('not_base64');
    expect(engagementTextProblem('mdoc:oQBjM')).toBe('not_base64');
    expect(engagementTextProblem('mdoc:')).toBe('not_base64');
  });

  it('whole CBOR items pass (bytes after them are not judged); items that end early are truncated', () => {
    const text = (bytes: number[]): string => `mdoc:${Buffer.from(bytes).toString('base64url')}`;
    expect(engagementTextProblem(text([0xa1, 0x00, 0x63, 0x31, 0x2e, 0x30]))).toBeUndefined(); // {0: "1.0"}
    expect(engagementTextProblem(text([0xa1, 0x00, 0x63, 0x31, 0x2e, 0x30, 0xff]))).toBeUndefined();
    expect(engagementTextProblem(text([0x9f, 0x01, 0x02, 0xff]))).toBeUndefined(); // indefinite array
    expect(engagementTextProblem(text([0xa2, 0x00, 0x63, 0x31, 0x2e, 0x30]))).toBe('truncated');
    expect(engagementTextProblem(text([0x58, 0x20, 0x01]))).toBe('truncated');
    expect(engagementTextProblem(text([0x9f, 0x01, 0x02]))).toBe('truncated');
    expect(engagementTextProblem(text([0x1c]))).toBe('truncated'); // reserved additional information
  });

  it('texts that are not mdoc: are not its business; it never throws (property)', () => {
    expect(engagementTextProblem('https://example.com')).toBeUndefined();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(300), (bytes, cut) => {
        const text = `mdoc:${Buffer.from(bytes).toString('base64url')}`.slice(0, 5 + cut);
        expect([undefined, 'not_base64', 'truncated']).toContain(engagementTextProblem(text));
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('failsMdocPrefixRule (the one qr.requireMdocPrefix rule of the triggers, qrScanned and the QA feeder)', () => {
  it('with the rule, only an mdoc: text in any case passes; without it, every text does', () => {
    for (const text of ['mdoc:owBjMS4w', 'MDOC:owBjMS4w', 'mDoC:']) expect(failsMdocPrefixRule(text, true), text).toBe(false);
    for (const text of ['https://example.com', ' mdoc:owBjMS4w', 'mdoc', 'xmdoc:owBjMS4w', ''])
      expect(failsMdocPrefixRule(text, true), text).toBe(true);
    for (const text of ['https://example.com', 'mdoc:owBjMS4w', '']) expect(failsMdocPrefixRule(text, false), text).toBe(false);
  });
});
