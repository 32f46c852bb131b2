/**
 * Strict standard base64 (spec §4.2: "standard base64 (RFC 4648, with `=` padding)"): exactly the canonical
 * text of a byte string is accepted, everything else is refused before it can reach a card or a phone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Base64Error, decodeBase64, encodeBase64, isStrictBase64 } from '../../src/common/protocol/base64.js';

const bytes = (...values: number[]): Uint8Array => Uint8Array.from(values);

describe('isStrictBase64 / decodeBase64 (RFC 4648 §4 with padding)', () => {
  it.each([
    ['', []],
    ['Zg==', [0x66]],
    ['Zm8=', [0x66, 0x6f]],
    ['Zm9v', [0x66, 0x6f, 0x6f]],
    ['Zm9vYg==', [0x66, 0x6f, 0x6f, 0x62]],
    ['Zm9vYmE=', [0x66, 0x6f, 0x6f, 0x62, 0x61]],
    ['Zm9vYmFy', [0x66, 0x6f, 0x6f, 0x62, 0x61, 0x72]],
    ['kAA=', [0x90, 0x00]],
    ['AgA=', [0x02, 0x00]],
    ['Ag==', [0x02]],
    ['+/+/', [0xfb, 0xff, 0xbf]],
    ['////', [0xff, 0xff, 0xff]],
    ['AAAA', [0, 0, 0]],
  ])('accepts the canonical text %j', (text, expected) => {
    expect(isStrictBase64(text)).toBe(true);
    expect(Array.from(decodeBase64(text))).toEqual(expected);
  });

  it.each([
    ['Zg', 'missing padding (2 symbols)'],
    ['Zm8', 'missing padding (3 symbols)'],
    ['Zm9vYg', 'missing padding after a full quantum'],
    ['Zg=', 'incomplete padding'],
    ['Zm9vYg=', 'incomplete padding after a full quantum'],
  ])('rejects %j: %s', (text) => {
    expect(isStrictBase64(text)).toBe(false);
    expect(() => decodeBase64(text)).toThrow(Base64Error);
  });

  it.each([
    ['-_-_', 'URL-safe alphabet'],
    ['Zm9v_w==', 'URL-safe "_"'],
    ['Zm9v-w==', 'URL-safe "-"'],
    ['-w==', 'URL-safe in the last quantum'],
  ])('rejects the URL-safe alphabet %j (%s)', (text) => {
    expect(isStrictBase64(text)).toBe(false);
    expect(() => decodeBase64(text)).toThrow(Base64Error);
  });

  it.each([
    [' Zm9v', 'leading space'],
    ['Zm9v ', 'trailing space'],
    ['Zm 9v', 'inner space'],
    ['Zm9v\n', 'trailing newline'],
    ['Zm9v\r\nYmFy', 'line break (MIME style)'],
    ['\tZm9v', 'tab'],
    ['Zg==\n', 'newline after padding'],
  ])('rejects whitespace %j (%s)', (text) => {
    expect(isStrictBase64(text)).toBe(false);
    expect(() => decodeBase64(text)).toThrow(Base64Error);
  });

  it.each([
    ['Zh==', 'one byte: low 4 bits of the 2nd symbol set (canonical Zg==)'],
    ['Zv==', 'one byte: canonical Zg=='],
    ['Zm9=', 'two bytes: low 2 bits of the 3rd symbol set (canonical Zm8=)'],
    ['Zm//', 'valid (no padding: all bits used)'],
  ])('pad bits: %j (%s)', (text, why) => {
    const canonical = why.startsWith('valid');
    expect(isStrictBase64(text)).toBe(canonical);
    if (canonical) expect(encodeBase64(decodeBase64(text))).toBe(text);
    else expect(() => decodeBase64(text)).toThrow(Base64Error);
  });

  it.each([
    ['Z', 'length 1'],
    ['Zm9vY', 'length 5'],
    ['Z===', 'three padding characters'],
    ['====', 'padding only'],
    ['=', 'a lone padding character'],
    ['Zg==Zg==', 'padding in the middle'],
    ['Zg==Zm9v', 'data after padding'],
    ['Zm=v', 'padding between symbols'],
    ['Zm9v=', 'padding after a full quantum'],
    ['Zm9vYg===', 'too much padding'],
  ])('rejects a bad length or misplaced padding %j (%s)', (text) => {
    expect(isStrictBase64(text)).toBe(false);
    expect(() => decodeBase64(text)).toThrow(Base64Error);
  });

  it.each([
    ['Zm9v!', 'punctuation'],
    ['Zm9vé===', 'non-ASCII'],
    ['Zm9v\u0000AAA', 'NUL'],
    ['Zm.v', 'dot'],
  ])('rejects characters outside the alphabet %j (%s)', (text) => {
    expect(isStrictBase64(text)).toBe(false);
    expect(() => decodeBase64(text)).toThrow(Base64Error);
  });

  it('the decode error names the encoding but does not echo the input', () => {
    const secretish = 'c2VjcmV0LWJ5dGVz-bad';
    let caught: unknown;
    try {
      decodeBase64(secretish);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(Base64Error);
    expect((caught as Error).message).toMatch(/base64/i);
    expect((caught as Error).message).not.toContain(secretish);
  });

  // A valid field of about 4 MB used to overflow the regex engine's stack (RangeError), far under the
  // 16 MiB frame cap: a crash any peer could trigger. Checked up to the frame cap, both outcomes.
  it.each([4, 16])('checks a %i MiB field without overflowing the stack', (mib) => {
    const bytes = Buffer.alloc(mib * 1024 * 1024 - 1, 0x5a);
    const text = bytes.toString('base64');
    expect(isStrictBase64(text)).toBe(true);
    expect(decodeBase64(text).byteLength).toBe(bytes.byteLength);
    expect(isStrictBase64(`${text.slice(0, -4)}AA-=`)).toBe(false);
    expect(isStrictBase64(`!${text.slice(1)}`)).toBe(false);
  });
});

describe('encodeBase64', () => {
  it('encodes with padding in the standard alphabet', () => {
    expect(encodeBase64(bytes())).toBe('');
    expect(encodeBase64(bytes(0x66))).toBe('Zg==');
    expect(encodeBase64(bytes(0x66, 0x6f))).toBe('Zm8=');
    expect(encodeBase64(bytes(0xfb, 0xff, 0xbf))).toBe('+/+/');
    expect(encodeBase64(bytes(0x02))).toBe('Ag==');
  });

  it('encodes only the bytes of a view, not the whole underlying buffer', () => {
    const backing = bytes(0xaa, 0xbb, 0x01, 0x02, 0x03, 0xcc);
    const view = backing.subarray(2, 5);
    expect(encodeBase64(view)).toBe(Buffer.from([1, 2, 3]).toString('base64'));
    const nodeBuffer = Buffer.from([9, 8, 7, 6]).subarray(1, 3);
    expect(encodeBase64(nodeBuffer)).toBe('CAc=');
  });

  it('round trip: every byte string encodes to strict base64 and decodes back (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat({ max: 8 }), (data, offset) => {
        // Also through a view with a non-zero byteOffset.
        const backing = new Uint8Array(offset + data.length);
        backing.set(data, offset);
        const view = backing.subarray(offset);
        const text = encodeBase64(view);
        expect(isStrictBase64(text)).toBe(true);
        expect(text.length % 4).toBe(0);
        expect(Array.from(decodeBase64(text))).toEqual(Array.from(data));
      }),
    );
  });

  it('canonical: every accepted text is the encoding of what it decodes to (property)', () => {
    fc.assert(
      fc.property(fc.base64String({ maxLength: 200 }), (text) => {
        if (!isStrictBase64(text)) return; // fast-check may produce non-canonical pad bits; those are rejected
        expect(encodeBase64(decodeBase64(text))).toBe(text);
      }),
    );
  });

  it('a single flipped pad bit is always rejected (property)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 64 }).filter((d) => d.length % 3 !== 0),
        (data) => {
          const text = encodeBase64(data);
          const lastSymbolIndex = text.indexOf('=') - 1;
          const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
          const value = alphabet.indexOf(text.charAt(lastSymbolIndex));
          const mutated = `${text.slice(0, lastSymbolIndex)}${alphabet.charAt(value ^ 1)}${text.slice(lastSymbolIndex + 1)}`;
          expect(isStrictBase64(mutated)).toBe(false);
        },
      ),
    );
  });
});
