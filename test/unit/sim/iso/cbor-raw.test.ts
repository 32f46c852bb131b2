/**
 * Raw byte spans of CBOR items (src/qa/sim/iso/cbor-raw.ts): what lets us take received bytes verbatim.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CborError, cborDecode, cborEncode, EmbeddedCbor } from '../../../../src/qa/sim/iso/cbor.js';
import {
  assertSingleItem,
  cborItemEnd,
  encodeRawArray,
  encodeRawMap,
  rawArrayItems,
  rawMapEntries,
  rawMapValue,
  rawTag24Content,
  requireRawMapValue,
} from '../../../../src/qa/sim/iso/cbor-raw.js';
import { fromHex, hex } from './annex-d-vectors.js';

describe('cborItemEnd', () => {
  it.each([
    ['small uint', '17', 1],
    ['uint64', '1b0000010000000000', 9],
    ['negative int', '3903e7', 3],
    ['half float', 'f93c00', 3],
    ['double', 'fb3ff8000000000000', 9],
    ['simple values', 'f5', 1],
    ['bstr', '43010203', 4],
    ['text with 1-byte length', '7818' + '61'.repeat(24), 26],
    ['nested array (trailing byte ignored)', '82 01 82 0203 04', 5],
    ['map', 'a2016161026162', 7],
    ['tag 24', 'd8184101', 4],
    ['indefinite bstr', '5f 42 0102 41 03 ff', 7],
    ['indefinite array', '9f0102ff', 4],
    ['indefinite map', 'bf0102ff', 4],
  ])('%s', (_name, input, length) => {
    const bytes = fromHex(input);
    expect(cborItemEnd(bytes, 0)).toBe(length);
  });

  it.each([
    ['truncated head', '19 01'],
    ['truncated string', '43 0102'],
    ['truncated array', '83 0102'],
    ['truncated indefinite array', '9f 0102'],
    ['lone break', 'ff'],
    ['reserved info 28', '1c'],
    ['indefinite tag', 'df'],
    ['wrong chunk type in indefinite bstr', '5f 6161 ff'],
  ])('rejects %s', (_name, input) => {
    expect(() => cborItemEnd(fromHex(input), 0)).toThrow(CborError);
  });

  it('assertSingleItem rejects trailing bytes', () => {
    expect(() => assertSingleItem(fromHex('0102'), 'x')).toThrow(/1 trailing byte/);
    expect(() => assertSingleItem(fromHex('01'), 'x')).not.toThrow();
  });

  it('agrees with cbor-x on the length of every encoded value (property)', () => {
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(
        fc.integer(),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.double({ noNaN: true }),
        fc.string(),
        fc.uint8Array(),
        fc.boolean(),
        fc.constant(null),
      ),
      node: fc.oneof(
        { depthSize: 'small' },
        tie('leaf'),
        fc.array(tie('node'), { maxLength: 5 }),
        fc.dictionary(fc.string(), tie('node'), { maxKeys: 5 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, fc.uint8Array({ maxLength: 3 }), (v, suffix) => {
        const encoded = cborEncode(v);
        const withSuffix = new Uint8Array([...encoded, ...suffix]);
        expect(cborItemEnd(withSuffix, 0)).toBe(encoded.length);
      }),
    );
  });
});

describe('raw arrays and maps', () => {
  it('rawArrayItems returns each element exactly, definite or indefinite', () => {
    expect(rawArrayItems(fromHex('83 01 d8184101 820203')).map(hex)).toEqual(['01', 'd8184101', '820203']);
    expect(rawArrayItems(fromHex('9f 01 6161 ff')).map(hex)).toEqual(['01', '6161']);
    expect(() => rawArrayItems(fromHex('a0'))).toThrow(/expected a CBOR array/);
  });

  it('rawMapEntries keeps wire order and raw values; rawMapValue finds integer and text keys', () => {
    const bytes = encodeRawMap([
      [cborEncode(1), fromHex('590002aabb')], // bstr with a non-shortest header, kept as is
      [cborEncode('d'), cborEncode('x')],
      [cborEncode(-1), fromHex('f6')],
    ]);
    expect(rawMapEntries(bytes).map((e) => [e.key, hex(e.rawValue)])).toEqual([
      [1, '590002aabb'],
      ['d', '6178'],
      [-1, 'f6'],
    ]);
    expect(hex(rawMapValue(bytes, 1) ?? new Uint8Array())).toBe('590002aabb');
    expect(rawMapValue(bytes, 'missing')).toBeUndefined();
    expect(() => requireRawMapValue(bytes, 'missing', 'Thing')).toThrow(/Thing: missing key "missing"/);
    expect(() => rawMapValue(fromHex('a2 01 01 01 02'), 1)).toThrow(/duplicate map key/);
    expect(rawMapEntries(fromHex('bf 01 02 ff')).map((e) => e.key)).toEqual([1]);
  });

  it('encodeRawArray / encodeRawMap splice items unchanged and decode as expected', () => {
    const array = encodeRawArray([fromHex('d8184101'), cborEncode('a')]);
    expect(hex(array)).toBe('82d81841016161');
    const decoded = cborDecode(array) as unknown[];
    expect(decoded[0]).toBeInstanceOf(EmbeddedCbor);
    expect(hex(encodeRawMap([[cborEncode(0), cborEncode(true)]]))).toBe('a100f5');
    expect(hex(encodeRawArray(Array.from({ length: 24 }, () => fromHex('00'))).subarray(0, 2))).toBe('9818');
  });
});

describe('rawTag24Content', () => {
  it('returns the bstr content in place, whatever its header width', () => {
    expect(hex(rawTag24Content(fromHex('d818 43 a10102')))).toBe('a10102');
    expect(hex(rawTag24Content(fromHex('d818 5900 03 a10102')))).toBe('a10102');
  });

  it.each([
    ['another tag', 'd9 03ec 4100'],
    ['tag 24 around an indefinite bstr', 'd818 5f 4101 ff'],
    ['tag 24 around text', 'd818 6161'],
    ['trailing bytes', 'd818 4101 00'],
  ])('rejects %s', (_name, input) => {
    expect(() => rawTag24Content(fromHex(input))).toThrow(CborError);
  });
});
