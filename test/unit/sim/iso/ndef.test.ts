import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  NdefFormatError,
  Tnf,
  encodeNdefMessage,
  encodeNdefRecord,
  findRecord,
  findRecords,
  isRecordType,
  ndefRecord,
  parseNdefMessage,
  recordIdText,
  recordTypeText,
} from '../../../../src/qa/sim/iso/ndef.js';
import type { NdefRecord } from '../../../../src/qa/sim/iso/ndef.js';
import { APPLE_HS_HEX, MULTIPAZ_STATIC_HS_HEX, hex, toHex } from './nfc-fixtures.js';

/** The fields a record is made of, without the parse-only position data. */
function plain(record: NdefRecord): NdefRecord {
  const base = { tnf: record.tnf, type: record.type, payload: record.payload };
  return record.id === undefined ? base : { ...base, id: record.id };
}

describe('NDEF record encoding', () => {
  it('writes the headers seen in 18013-5 engagement captures', () => {
    const wk = ndefRecord(Tnf.WELL_KNOWN, 'Te', Uint8Array.of(0));
    expect(toHex(encodeNdefRecord(wk, { mb: true, me: true }))).toBe('d10201546500');
    expect(encodeNdefRecord(wk, { mb: true, me: false })[0]).toBe(0x91);
    expect(encodeNdefRecord(wk, { mb: false, me: true })[0]).toBe(0x51);
    const mime = ndefRecord(Tnf.MIME_MEDIA, 'a/b', Uint8Array.of(1), '0');
    expect(encodeNdefRecord(mime, { mb: false, me: false })[0]).toBe(0x1a);
    expect(encodeNdefRecord(mime, { mb: false, me: true })[0]).toBe(0x5a);
    const ext = ndefRecord(Tnf.EXTERNAL, 'x:y', Uint8Array.of(1), 'mdoc');
    expect(encodeNdefRecord(ext, { mb: false, me: false })[0]).toBe(0x1c);
    expect(encodeNdefRecord(ext, { mb: false, me: true })[0]).toBe(0x5c);
  });

  it('uses the 4-byte payload length above 255 bytes and SR at 255', () => {
    const long = encodeNdefMessage([ndefRecord(Tnf.MIME_MEDIA, 'a/b', new Uint8Array(256))]);
    expect(toHex(long.subarray(0, 6))).toBe('c20300000100');
    const short = encodeNdefMessage([ndefRecord(Tnf.MIME_MEDIA, 'a/b', new Uint8Array(255))]);
    expect(toHex(short.subarray(0, 3))).toBe('d203ff');
    expect(parseNdefMessage(long)[0]?.payload.length).toBe(256);
  });

  it('writes ID_LENGTH for an empty but present id, and omits it without an id', () => {
    const withEmptyId = encodeNdefMessage([ndefRecord(Tnf.WELL_KNOWN, 'T', Uint8Array.of(), new Uint8Array(0))]);
    expect(toHex(withEmptyId)).toBe('d9010000' + '54');
    expect(parseNdefMessage(withEmptyId)[0]?.id).toEqual(new Uint8Array(0));
    const withoutId = encodeNdefMessage([ndefRecord(Tnf.WELL_KNOWN, 'T', Uint8Array.of())]);
    expect(toHex(withoutId)).toBe('d10100' + '54');
    expect(parseNdefMessage(withoutId)[0]?.id).toBeUndefined();
  });

  it('refuses records it cannot represent', () => {
    expect(() => encodeNdefMessage([])).toThrow(/at least one record/);
    expect(() => encodeNdefMessage([ndefRecord(Tnf.WELL_KNOWN, new Uint8Array(256), Uint8Array.of())])).toThrow(
      /at most 255 fit TYPE_LENGTH/,
    );
    expect(() => encodeNdefMessage([ndefRecord(Tnf.WELL_KNOWN, 'T', Uint8Array.of(), new Uint8Array(256))])).toThrow(
      /at most 255 fit ID_LENGTH/,
    );
    expect(() => encodeNdefMessage([ndefRecord(Tnf.EMPTY, 'T', Uint8Array.of())])).toThrow(/TNF 0/);
    expect(() => encodeNdefMessage([ndefRecord(Tnf.UNKNOWN, 'T', Uint8Array.of())])).toThrow(/TNF 5/);
    expect(() => encodeNdefMessage([ndefRecord(Tnf.UNCHANGED, '', Uint8Array.of())])).toThrow(/chunked/);
    expect(() => encodeNdefMessage([ndefRecord(Tnf.RESERVED, '', Uint8Array.of())])).toThrow(/reserved/);
  });
});

describe('NDEF message parsing', () => {
  it('parses the Multipaz static HS into its four records with offsets, ids and types', () => {
    const bytes = hex(MULTIPAZ_STATIC_HS_HEX);
    const records = parseNdefMessage(bytes);
    expect(records.map((r) => recordTypeText(r))).toEqual([
      'Hs',
      'iso.org:18013:deviceengagement',
      'application/vnd.bluetooth.le.oob',
      'iso.org:18013:nfc',
    ]);
    expect(records.map((r) => recordIdText(r))).toEqual([undefined, 'mdoc', '0', 'nfc']);
    expect(records.map((r) => r.offset)).toEqual([0, 36, 162, 220]);
    expect(records.reduce((sum, r) => sum + r.byteLength, 0)).toBe(bytes.length);
    expect(encodeNdefMessage(records)).toEqual(bytes);
  });

  it('re-encodes the Apple HS byte-exact', () => {
    const bytes = hex(APPLE_HS_HEX);
    expect(encodeNdefMessage(parseNdefMessage(bytes))).toEqual(bytes);
  });

  it('finds records by TNF and type: well-known case-sensitive, MIME/external case-insensitive', () => {
    const records = parseNdefMessage(hex(APPLE_HS_HEX));
    expect(findRecord(records, Tnf.MIME_MEDIA, 'Application/Vnd.Bluetooth.LE.OOB')?.offset).toBe(20);
    expect(findRecord(records, Tnf.WELL_KNOWN, 'hs')).toBeUndefined();
    expect(findRecords(records, Tnf.EXTERNAL, 'ISO.ORG:18013:DEVICEENGAGEMENT')).toHaveLength(1);
    expect(isRecordType(ndefRecord(Tnf.EXTERNAL, 'a:b', Uint8Array.of()), Tnf.MIME_MEDIA, 'a:b')).toBe(false);
    const twice = parseNdefMessage(
      encodeNdefMessage([ndefRecord(Tnf.WELL_KNOWN, 'Te', Uint8Array.of(0)), ndefRecord(Tnf.WELL_KNOWN, 'Te', Uint8Array.of(1))]),
    );
    expect(() => findRecord(twice, Tnf.WELL_KNOWN, 'Te')).toThrow(/2 records of type "Te"/);
  });

  const malformed: [string, string, RegExp][] = [
    ['empty input', '', /empty \(0 bytes\)/],
    ['chunked record', 'f1015400', /chunked records \(CF flag\) are not supported/],
    ['missing MB', '51015400', /lacks the MB flag/],
    ['MB on a later record', '9101005491010054', /MB flag set on a record after the first/],
    ['no ME record', '910100' + '54', /without a record carrying the ME flag/],
    ['data after ME', 'd1010054' + '00', /1 byte\(s\) after the ME record/],
    ['payload overruns (short)', 'd1010554' + '0102', /PAYLOAD \(5 bytes\) needs 5 byte\(s\).*length overrun/],
    ['payload overruns (long)', 'c101000001005400', /PAYLOAD \(256 bytes\).*length overrun/],
    ['type overruns', 'd1050054', /TYPE \(5 bytes\).*length overrun/],
    ['id overruns', 'd901000454', /ID \(4 bytes\).*length overrun/],
    ['truncated 4-byte length', 'c10100', /PAYLOAD_LENGTH.*length overrun/],
    ['truncated header', 'd1', /TYPE_LENGTH.*length overrun/],
    ['reserved TNF', 'd7000000', /TNF 7 is reserved/],
    ['unchanged TNF', 'd6000000', /TNF 6 \(unchanged\)/],
    ['empty TNF with a type', 'd0010054', /empty record \(TNF 0\)/],
    ['unknown TNF with a type', 'd5010054', /unknown-type record \(TNF 5\)/],
  ];
  it.each(malformed)('rejects %s with a clear error', (_name, bytes, message) => {
    expect(() => parseNdefMessage(hex(bytes))).toThrow(NdefFormatError);
    expect(() => parseNdefMessage(hex(bytes))).toThrow(message);
  });
});

const arbRecord: fc.Arbitrary<NdefRecord> = fc.oneof(
  fc
    .record({
      tnf: fc.constantFrom(Tnf.WELL_KNOWN, Tnf.MIME_MEDIA, Tnf.ABSOLUTE_URI, Tnf.EXTERNAL),
      type: fc.uint8Array({ maxLength: 255 }),
      payload: fc.oneof(fc.uint8Array({ maxLength: 255 }), fc.uint8Array({ minLength: 256, maxLength: 700 })),
      id: fc.option(fc.uint8Array({ maxLength: 255 }), { nil: undefined }),
    })
    .map((r): NdefRecord => (r.id === undefined ? { tnf: r.tnf, type: r.type, payload: r.payload } : { ...r, id: r.id })),
  fc
    .record({ payload: fc.uint8Array({ maxLength: 300 }), id: fc.option(fc.uint8Array({ maxLength: 8 }), { nil: undefined }) })
    .map(
      (r): NdefRecord =>
        r.id === undefined
          ? { tnf: Tnf.UNKNOWN, type: new Uint8Array(0), payload: r.payload }
          : { tnf: Tnf.UNKNOWN, type: new Uint8Array(0), payload: r.payload, id: r.id },
    ),
  fc.constant<NdefRecord>({ tnf: Tnf.EMPTY, type: new Uint8Array(0), payload: new Uint8Array(0) }),
);

describe('NDEF properties (fast-check)', () => {
  it('parse(encode(message)) gives back every record', () => {
    fc.assert(
      fc.property(fc.array(arbRecord, { minLength: 1, maxLength: 6 }), (records) => {
        const bytes = encodeNdefMessage(records);
        const parsed = parseNdefMessage(bytes);
        expect(parsed.map(plain)).toEqual(records.map(plain));
        expect(encodeNdefMessage(parsed)).toEqual(bytes);
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary bytes either parse or fail with NdefFormatError, never another exception', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          parseNdefMessage(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(NdefFormatError);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('every truncation of a valid message is rejected', () => {
    fc.assert(
      fc.property(fc.array(arbRecord, { minLength: 1, maxLength: 4 }), fc.nat(), (records, cut) => {
        const bytes = encodeNdefMessage(records);
        const keep = cut % bytes.length;
        expect(() => parseNdefMessage(bytes.subarray(0, keep))).toThrow(NdefFormatError);
      }),
      { numRuns: 300 },
    );
  });
});
