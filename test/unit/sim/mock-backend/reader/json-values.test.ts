/**
 * JSON-safe outcome values (json-values.ts): element values as the toolkit decodes them, including
 * driving_privileges (array of maps with full-dates) and the portrait (byte string).
 */
import { describe, expect, it } from 'vitest';
import { EmbeddedCbor, Tag, cborDecode, cborEncode, fullDate, tdate } from '../../../../../src/qa/sim/iso/cbor.js';
import { toJsonValue } from '../../../../../src/qa/sim/mock-backend/reader/json-values.js';

describe('toJsonValue', () => {
  it('driving_privileges: array of maps, full-dates as YYYY-MM-DD, nested codes', () => {
    const encoded = cborEncode([
      new Map<string, unknown>([
        ['vehicle_category_code', 'A'],
        ['issue_date', fullDate('2018-08-09')],
        ['expiry_date', fullDate('2024-10-20')],
      ]),
      new Map<string, unknown>([
        ['vehicle_category_code', 'B'],
        [
          'codes',
          [
            new Map<string, unknown>([
              ['code', 'S01'],
              ['sign', '<='],
              ['value', '3500'],
            ]),
          ],
        ],
      ]),
    ]);
    expect(toJsonValue(cborDecode(encoded))).toEqual([
      { vehicle_category_code: 'A', issue_date: '2018-08-09', expiry_date: '2024-10-20' },
      { vehicle_category_code: 'B', codes: [{ code: 'S01', sign: '<=', value: '3500' }] },
    ]);
  });

  it('portrait and other byte strings: standard padded base64', () => {
    const jpeg = Uint8Array.of(0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0xfb);
    expect(toJsonValue(cborDecode(cborEncode(jpeg)))).toBe('/9j/4AAQ+w==');
    expect(toJsonValue(new Uint8Array(0))).toBe('');
  });

  it('dates: tdate verbatim, full-date as is, epoch (tag 1) as an ISO date-time', () => {
    expect(toJsonValue(cborDecode(cborEncode(tdate('2024-10-20T08:00:00Z'))))).toBe('2024-10-20T08:00:00Z');
    expect(toJsonValue(cborDecode(cborEncode(fullDate('1990-04-12'))))).toBe('1990-04-12');
    expect(toJsonValue(new Tag(0, 1))).toBe('1970-01-01T00:00:00.000Z');
    expect(toJsonValue(new Date('2020-01-02T03:04:05Z'))).toBe('2020-01-02T03:04:05.000Z');
  });

  it('numbers, bigints, booleans, null and undefined', () => {
    expect(toJsonValue(cborDecode(Uint8Array.of(0x1b, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01)))).toBe('9007199254740993');
    expect(toJsonValue(-(2n ** 70n))).toBe('-1180591620717411303424');
    expect(toJsonValue(1.5)).toBe(1.5);
    expect(toJsonValue(Number.NaN)).toBe('NaN');
    expect(toJsonValue(Number.NEGATIVE_INFINITY)).toBe('-Infinity');
    expect(toJsonValue(true)).toBe(true);
    expect(toJsonValue(null)).toBeNull();
    expect(toJsonValue(undefined)).toBeNull();
  });

  it('maps become objects with string keys; unknown tags give their content; embedded CBOR is decoded', () => {
    const map = new Map<unknown, unknown>([
      [1, 'one'],
      ['text', new Tag('https://example.com', 32)],
      [-2, new EmbeddedCbor(cborEncode(new Map([['a', 1]])))],
    ]);
    expect(toJsonValue(cborDecode(cborEncode(map)))).toEqual({ '1': 'one', text: 'https://example.com', '-2': { a: 1 } });
  });

  it('the result survives a JSON round trip unchanged', () => {
    const value = cborDecode(
      cborEncode(
        new Map<string, unknown>([
          ['portrait', Uint8Array.of(1, 2, 3)],
          ['birth_date', fullDate('2000-01-01')],
          ['n', 12n ** 20n],
        ]),
      ),
    );
    const json = toJsonValue(value);
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
  });

  it('refuses absurd nesting', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 40; i++) deep = [deep];
    expect(() => toJsonValue(deep)).toThrow(/nested deeper/);
  });
});
