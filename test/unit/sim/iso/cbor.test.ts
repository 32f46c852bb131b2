/**
 * The ISO CBOR rules of src/qa/sim/iso/cbor.ts (on cbor-x 1.6.9, as observed here): encoder options, integer map
 * keys, tag 24 kept as exact bytes, explicit dates, strict decoding, and isolation from @owf/mdoc's global cbor-x tags.
 */
import { cborDecode as owfCborDecode, DataItem } from '@owf/mdoc';
import { describe, expect, it } from 'vitest';
import {
  CborError,
  cborDecode,
  cborEncode,
  cborHeader,
  decodeTag24,
  EmbeddedCbor,
  encodeTag24,
  fullDate,
  readFullDate,
  readTdate,
  Tag,
  tdate,
} from '../../../../src/qa/sim/iso/cbor.js';
import { fromHex, hex } from './annex-d-vectors.js';

describe('encoding (cbor-x 1.6.9 with our options)', () => {
  it.each([
    ['a Map with an integer key', new Map([[0, 'a']]), 'a1006161'],
    ['a plain object (shortest map header, no record extension)', { a: 1 }, 'a1616101'],
    ['a Uint8Array (plain bstr, no tag 64)', Uint8Array.of(1), '4101'],
    ['a Buffer', Buffer.from([1, 2]), '420102'],
    ['a Map (no tag 259)', new Map([['a', 1]]), 'a1616101'],
    [
      'negative integer keys in insertion order',
      new Map([
        [1, 2],
        [-1, 1],
      ]),
      'a2010220 01',
    ],
    ['null', null, 'f6'],
    ['a bigint beyond 2^32 as an integer', 2n ** 40n, '1b0000010000000000'],
  ])('%s', (_name, value, expected) => {
    expect(hex(cborEncode(value))).toBe(expected.replaceAll(' ', ''));
  });

  it('returns a plain Uint8Array', () => {
    expect(Object.getPrototypeOf(cborEncode(1))).toBe(Uint8Array.prototype);
  });

  it('refuses a JS Date (ISO dates are tdate / full-date, not tag 1)', () => {
    expect(() => cborEncode(new Date(0))).toThrow(CborError);
    expect(() => cborEncode({ when: new Date(0) })).toThrow(/tdate\(\) or fullDate\(\)/);
    expect(hex(cborEncode(1))).toBe('01'); // the encoder is still usable afterwards
  });
});

describe('decoding', () => {
  it('maps become Maps with integer keys kept as numbers', () => {
    const value = cborDecode(fromHex('a3 00 63312e30 20 01 6178 f5'));
    expect(value).toEqual(
      new Map<unknown, unknown>([
        [0, '1.0'],
        [-1, 1],
        ['x', true],
      ]),
    );
  });

  it('byte strings do not alias the input', () => {
    const input = fromHex('4401020304');
    const value = cborDecode(input) as Uint8Array;
    input[1] = 0xff;
    expect(Array.from(value)).toEqual([1, 2, 3, 4]);
  });

  it.each([
    ['empty input', ''],
    ['trailing bytes', '0102'],
    ['truncated array', '8201'],
    ['truncated byte string', '4401'],
    ['tag 24 around a non-bstr', 'd81801'],
  ])('rejects %s with CborError', (_name, input) => {
    expect(() => cborDecode(fromHex(input))).toThrow(CborError);
  });
});

describe('tag 24 (embedded CBOR)', () => {
  it('decodes to EmbeddedCbor holding the inner bytes verbatim, even non-canonical ones', () => {
    // Inner item: a map with a non-shortest length header for its text value (7863 "1.0" would be 63).
    const inner = fromHex('a1 00 7803 312e30');
    const decoded = cborDecode(encodeTag24(inner));
    expect(decoded).toBeInstanceOf(EmbeddedCbor);
    expect(hex((decoded as EmbeddedCbor).bytes)).toBe(hex(inner));
    expect((decoded as EmbeddedCbor).decode()).toEqual(new Map([[0, '1.0']]));
  });

  it('re-encodes an EmbeddedCbor as d8 18 + bstr of the same bytes', () => {
    const inner = fromHex('a10063312e30');
    const value = new Map<string, unknown>([['k', new EmbeddedCbor(inner)]]);
    expect(hex(cborEncode(value))).toBe(`a1616b d818 46 ${hex(inner)}`.replaceAll(' ', ''));
    expect(hex(new EmbeddedCbor(inner).toTaggedBytes())).toBe(`d81846${hex(inner)}`);
    expect(hex(EmbeddedCbor.of(new Map([[0, '1.0']])).bytes)).toBe(hex(inner));
  });

  it('encodeTag24 / decodeTag24 use the shortest bstr header and give back the bytes', () => {
    for (const length of [0, 23, 24, 255, 256, 65_536]) {
      const inner = new Uint8Array(length).fill(0x01);
      const tagged = encodeTag24(inner);
      expect(hex(tagged.subarray(0, 2))).toBe('d818');
      expect(hex(tagged.subarray(2, 2 + cborHeader(2, length).length))).toBe(hex(cborHeader(2, length)));
      expect(decodeTag24(tagged)).toEqual(inner);
    }
    expect(() => decodeTag24(fromHex('4101'))).toThrow(/tag-24/);
  });

  it('stays ours after @owf/mdoc registered its own tag-24, tag-0 and tag-1004 handlers on cbor-x', () => {
    const tagged = encodeTag24(fromHex('a10063312e30'));
    expect(owfCborDecode(tagged, { unwrapTopLevelDataItem: false })).toBeInstanceOf(DataItem); // theirs still works
    expect(cborDecode(tagged)).toBeInstanceOf(EmbeddedCbor);
    expect(cborDecode(fromHex('c0 74 323032302d31302d30315431333a33303a30325a'))).toEqual(new Tag('2020-10-01T13:30:02Z', 0));
    expect(cborDecode(fromHex('d903ec 6a 323031392d31302d3230'))).toEqual(new Tag('2019-10-20', 1004));
  });
});

describe('dates', () => {
  it('fullDate is tag 1004 with the date text (Annex D issue_date bytes)', () => {
    expect(hex(cborEncode(fullDate('2019-10-20')))).toBe('d903ec6a323031392d31302d3230');
    expect(hex(cborEncode(fullDate(new Date('2019-10-20T23:59:59Z'))))).toBe('d903ec6a323031392d31302d3230');
    expect(readFullDate(cborDecode(cborEncode(fullDate('2019-10-20'))))).toBe('2019-10-20');
    expect(() => fullDate('2019-13-45')).toThrow(CborError);
    expect(() => fullDate('20191020')).toThrow(CborError);
  });

  it('tdate is tag 0, whole seconds in UTC with Z; strings are kept verbatim', () => {
    expect(hex(cborEncode(tdate(new Date('2020-10-01T13:30:02.789Z'))))).toBe('c074323032302d31302d30315431333a33303a30325a');
    expect(readTdate(cborDecode(cborEncode(tdate('2020-10-01T13:30:02+02:00'))))).toBe('2020-10-01T13:30:02+02:00');
    expect(() => tdate('yesterday')).toThrow(CborError);
    expect(readTdate(cborDecode(cborEncode(fullDate('2019-10-20'))))).toBeUndefined();
    expect(readFullDate('2019-10-20')).toBeUndefined();
  });

  it('tag 1 (epoch seconds) is not turned into a Date either', () => {
    expect(cborDecode(fromHex('c1 1a 00000000'))).toEqual(new Tag(0, 1));
  });
});

describe('side effects', () => {
  it("cborDecode leaves the caller's array untouched (cbor-x caches a dataView on its input)", () => {
    const input = fromHex('a10102');
    cborDecode(input);
    expect(Object.keys(input)).toEqual(['0', '1', '2']);
    expect(input).toEqual(fromHex('a10102'));
  });
});
