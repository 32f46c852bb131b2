import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AID_MDOC_DATA_TRANSFER,
  AID_NDEF_APPLICATION,
  APPLE_WALLET_CAPABILITY_CONTAINER,
  ApduFormatError,
  FILE_ID_CAPABILITY_CONTAINER,
  FILE_ID_NDEF_DEFAULT,
  Sw,
  encodeCapabilityContainer,
  encodeCommandApdu,
  encodeResponseApdu,
  envelope,
  getResponse,
  handoverModeOf,
  interpretT4tCommand,
  isSwOk,
  moreResponseBytes,
  multipazCapabilityContainer,
  ndefReadCommands,
  ndefWriteCommands,
  parseCapabilityContainer,
  parseCommandApdu,
  parseNlen,
  parseResponseApdu,
  readBinary,
  readChunkSize,
  responseOk,
  responseStatus,
  selectAid,
  selectFile,
  swHex,
  updateBinary,
} from '../../../../src/qa/sim/iso/apdu.js';
import type { CommandApdu } from '../../../../src/qa/sim/iso/apdu.js';
import { APPLE_CC_HEX, hex, toHex } from './nfc-fixtures.js';

const enc = (apdu: CommandApdu): string => toHex(encodeCommandApdu(apdu)).toUpperCase();

describe('command builders produce the bytes Multipaz sends', () => {
  it.each([
    ['SELECT NDEF AID', selectAid(AID_NDEF_APPLICATION), '00A4040007D2760000850101'],
    ['SELECT NDEF AID with Le (isomdl)', selectAid(AID_NDEF_APPLICATION, { le: 256 }), '00A4040007D276000085010100'],
    ['SELECT CC', selectFile(FILE_ID_CAPABILITY_CONTAINER), '00A4000C02E103'],
    ['READ BINARY CC', readBinary(0, 15), '00B000000F'],
    ['SELECT NDEF file', selectFile(FILE_ID_NDEF_DEFAULT), '00A4000C02E104'],
    ['READ BINARY NLEN', readBinary(0, 2), '00B0000002'],
    ['READ BINARY data', readBinary(2, 0xfe), '00B00002FE'],
    ['READ BINARY 256', readBinary(0x7fff, 256), '00B07FFF00'],
    ['UPDATE BINARY', updateBinary(0, hex('0006')), '00D60000020006'],
    ['SELECT mdoc AID', selectAid(AID_MDOC_DATA_TRANSFER), '00A4040007A0000002480400'],
    ['GET RESPONSE', getResponse(0x20), '00C0000020'],
    ['ENVELOPE (more)', envelope(hex('5301aa'), false), '10C30000035301AA'],
    ['ENVELOPE (last)', envelope(hex('aa'), true, 256), '00C3000001AA00'],
  ])('%s', (_name, apdu, bytes) => {
    expect(enc(apdu)).toBe(bytes);
  });

  it('Le 0 means "no Le", as in Multipaz', () => {
    expect(enc({ cla: 0, ins: 0xa4, p1: 4, p2: 0, data: AID_NDEF_APPLICATION, le: 0 })).toBe('00A4040007D2760000850101');
  });

  it('enforces the offset ≤ 0x7FFF and length rules with clear errors', () => {
    expect(() => readBinary(0x8000, 1)).toThrow(/outside 0..0x7FFF \(P1 bit 8 must stay 0\)/);
    expect(() => readBinary(0, 0)).toThrow(/Le 0 is outside 1..256/);
    expect(() => readBinary(0, 257)).toThrow(ApduFormatError);
    expect(() => updateBinary(0x8000, hex('00'))).toThrow(/P1 bit 8/);
    expect(() => updateBinary(0, new Uint8Array(256))).toThrow(/1..255 bytes in short form, got 256/);
    expect(() => updateBinary(0, new Uint8Array(0))).toThrow(/got 0/);
    expect(() => selectFile(0x10000)).toThrow(/not 16 bits/);
    expect(() => selectAid(new Uint8Array(0))).toThrow(/1..16 bytes/);
  });
});

describe('command APDU parsing', () => {
  it('parses the ISO 7816-4 cases', () => {
    expect(parseCommandApdu(hex('00B00000'))).toEqual({ cla: 0, ins: 0xb0, p1: 0, p2: 0, data: new Uint8Array(0), extended: false });
    expect(parseCommandApdu(hex('00B000000F'))).toMatchObject({ le: 15, extended: false });
    expect(parseCommandApdu(hex('00B0000000'))).toMatchObject({ le: 256 });
    expect(parseCommandApdu(hex('00A4000C02E103'))).toMatchObject({ data: hex('e103') });
    expect(parseCommandApdu(hex('00A4040007D276000085010100'))).toMatchObject({ data: AID_NDEF_APPLICATION, le: 256 });
    expect(parseCommandApdu(hex('00B00000000100'))).toMatchObject({ le: 256, extended: true });
    expect(parseCommandApdu(hex('00B00000000000'))).toMatchObject({ le: 65536, extended: true });
    const ext = parseCommandApdu(hex('00D6000000010' + '0' + 'aa'.repeat(256)));
    expect(ext).toMatchObject({ extended: true });
    expect(ext.data.length).toBe(256);
    expect(parseCommandApdu(hex('00D60000000001aa0400'))).toMatchObject({ data: hex('aa'), le: 0x400, extended: true });
  });

  it.each([
    ['too short', '00B000', /at least 4 header bytes, got 3/],
    ['Lc overruns', '00D6000005aabb', /data \(Lc=5\) needs 5 byte\(s\).*length overrun/],
    ['bytes after Le', '00D6000001aa0000', /1 byte\(s\) after Le/],
    ['truncated extended length', '00B000000001', /extended Lc\/Le.*length overrun/],
    ['extended Lc 0 with data', '00D60000000000aa', /extended Lc is 0 but data follow/],
    ['extended data overrun', '00D6000000000aaa', /extended Lc=10.*length overrun/],
    ['bytes after extended Le', '00D60000000001aa000000', /after extended Le/],
  ])('rejects %s', (_name, bytes, message) => {
    expect(() => parseCommandApdu(hex(bytes))).toThrow(ApduFormatError);
    expect(() => parseCommandApdu(hex(bytes))).toThrow(message);
  });

  it('encodeCommandApdu refuses values that do not fit', () => {
    expect(() => encodeCommandApdu({ cla: 0x100, ins: 0, p1: 0, p2: 0, data: new Uint8Array(0) })).toThrow(/CLA 256 is not a byte/);
    expect(() => encodeCommandApdu({ cla: 0, ins: 0, p1: 0, p2: 0, data: new Uint8Array(0), le: 65537 })).toThrow(/outside 1..65536/);
  });
});

describe('response APDUs and status words', () => {
  it('splits data and SW1SW2', () => {
    expect(parseResponseApdu(hex('00FE9000'))).toEqual({ data: hex('00fe'), sw: 0x9000 });
    expect(parseResponseApdu(hex('6A82'))).toEqual({ data: new Uint8Array(0), sw: Sw.FILE_NOT_FOUND });
    expect(() => parseResponseApdu(hex('90'))).toThrow(/needs at least the 2 status bytes, got 1/);
    expect(toHex(encodeResponseApdu(responseOk(hex('0102'))))).toBe('01029000');
    expect(toHex(encodeResponseApdu(responseStatus(Sw.INS_NOT_SUPPORTED)))).toBe('6d00');
    expect(toHex(encodeResponseApdu(responseStatus(Sw.NO_PRECISE_DIAGNOSIS)))).toBe('6f00');
    expect(() => encodeResponseApdu({ data: new Uint8Array(0), sw: 0x10000 })).toThrow(/not 16 bits/);
  });

  it('knows 9000 and the 61xx family', () => {
    expect(isSwOk(0x9000)).toBe(true);
    expect(isSwOk(0x6a82)).toBe(false);
    expect(moreResponseBytes(0x6110)).toBe(0x10);
    expect(moreResponseBytes(0x6100)).toBe(256);
    expect(moreResponseBytes(0x9000)).toBeUndefined();
    expect(swHex(0x6a82)).toBe('6a82');
  });
});

describe('Type 4 Tag command interpretation (the virtual phone side)', () => {
  it('classifies SELECT, READ BINARY and UPDATE BINARY', () => {
    expect(interpretT4tCommand(parseCommandApdu(hex('00A4040007D2760000850101')))).toEqual({
      kind: 'selectAid',
      aid: AID_NDEF_APPLICATION,
    });
    expect(interpretT4tCommand(parseCommandApdu(hex('00A4000C02E104')))).toEqual({ kind: 'selectFile', fileId: 0xe104 });
    expect(interpretT4tCommand(parseCommandApdu(hex('00B00101' + '2D')))).toEqual({ kind: 'readBinary', offset: 0x101, length: 0x2d });
    expect(interpretT4tCommand(parseCommandApdu(hex('00D6000002' + '0006')))).toEqual({
      kind: 'updateBinary',
      offset: 0,
      data: hex('0006'),
    });
  });

  it('reports what it does not support', () => {
    const kinds = ['00B0800002', '00B00000', '00C0000010', '00A4020C02E104', '00A4000C01E1', '80B0000002'].map((h) =>
      interpretT4tCommand(parseCommandApdu(hex(h))),
    );
    expect(kinds.map((k) => k.kind)).toEqual(Array<string>(6).fill('unsupported'));
    expect(kinds.map((k) => (k.kind === 'unsupported' ? k.reason : ''))).toEqual([
      'READ BINARY with P1 bit 8 set (short EF id) is not supported',
      'READ BINARY without Le',
      'INS c0 is not supported',
      'SELECT P1 2 is not supported',
      'SELECT file needs a 2-byte file ID, got 1',
      'CLA 80 is not an interindustry class',
    ]);
  });
});

describe('NDEF file access plans', () => {
  it('reads in MLe-sized chunks after NLEN (isomdl static_ndef_multi_chunk_read: NLEN 300)', () => {
    expect(ndefReadCommands(300, 255).map(enc)).toEqual(['00B00002FF', '00B001012D']);
    expect(ndefReadCommands(0xfe, readChunkSize(multipazCapabilityContainer('static'))).map(enc)).toEqual(['00B00002FE']);
    expect(ndefReadCommands(0, 255)).toEqual([]);
  });

  it('writes a message under 254 bytes as one NLEN||message update (T4T §7.5.5)', () => {
    const msg = new Uint8Array(253).fill(0xab);
    const [only, ...rest] = ndefWriteCommands(msg);
    expect(rest).toEqual([]);
    expect(enc(only ?? readBinary(0, 1)).slice(0, 14)).toBe('00D60000FF00FD');
  });

  it('writes 254 bytes and more as 0000, data pieces from offset 2, then the real NLEN (T4T §7.5.5)', () => {
    const msg = Uint8Array.from({ length: 600 }, (_, i) => i & 0xff);
    const commands = ndefWriteCommands(msg);
    expect(commands.map((c) => [c.p1 * 256 + c.p2, c.data.length])).toEqual([
      [0, 2],
      [2, 255],
      [257, 255],
      [512, 90],
      [0, 2],
    ]);
    expect(toHex(commands[0]?.data ?? new Uint8Array(0))).toBe('0000');
    expect(toHex(commands[4]?.data ?? new Uint8Array(0))).toBe('0258');
    const file = new Uint8Array(2 + msg.length);
    for (const c of commands) file.set(c.data, c.p1 * 256 + c.p2);
    expect(file.subarray(2)).toEqual(msg);
    expect(ndefWriteCommands(new Uint8Array(254))).toHaveLength(3);
    expect(ndefWriteCommands(new Uint8Array(256))).toHaveLength(4);
  });

  it('parses NLEN', () => {
    expect(parseNlen(hex('00BA'))).toBe(0xba);
    expect(() => parseNlen(hex('00'))).toThrow(/NLEN must be 2 bytes/);
  });
});

describe('Capability Container', () => {
  it('encodes the Multipaz static and negotiated CCs', () => {
    expect(toHex(encodeCapabilityContainer(multipazCapabilityContainer('static')))).toBe('000f207fff7fff0406e1047fff00ff');
    expect(toHex(encodeCapabilityContainer(multipazCapabilityContainer('negotiated')))).toBe('000f207fff7fff0406e1047fff0000');
  });

  it("encodes and parses Apple Wallet's CC: MLe/MLc 0x0400, max NDEF file 0x0802, writable", () => {
    expect(toHex(encodeCapabilityContainer(APPLE_WALLET_CAPABILITY_CONTAINER))).toBe(APPLE_CC_HEX.toLowerCase());
    const cc = parseCapabilityContainer(hex(APPLE_CC_HEX));
    expect(cc).toEqual(APPLE_WALLET_CAPABILITY_CONTAINER);
    expect(handoverModeOf(cc)).toBe('negotiated');
    expect(readChunkSize(cc)).toBe(255);
  });

  it('derives the handover mode from the write access byte and the NDEF file id from bytes 9..10', () => {
    const stat = parseCapabilityContainer(hex('000F207FFF7FFF0406E1047FFF00FF'));
    expect(handoverModeOf(stat)).toBe('static');
    expect(stat.ndefFileId).toBe(0xe104);
    const other = parseCapabilityContainer(hex('000F20000F000F0406E1050100' + '0000'));
    expect(other).toMatchObject({ ndefFileId: 0xe105, maxResponseDataSize: 15, maxNdefFileSize: 0x0100 });
    expect(readChunkSize(other)).toBe(15);
    expect(readChunkSize({ ...other, maxResponseDataSize: 3 })).toBe(15);
  });

  it('rejects malformed CCs', () => {
    expect(() => parseCapabilityContainer(hex('000F2004'))).toThrow(/needs 15 bytes, got 4/);
    expect(() => parseCapabilityContainer(hex('000E207FFF7FFF0406E1047FFF00FF'))).toThrow(/CCLEN 14/);
    expect(() => parseCapabilityContainer(hex('0011207FFF7FFF0608E10400007FFF00FF'))).toThrow(/T=06, T4T 3.0\) is not supported/);
    expect(() => parseCapabilityContainer(hex('000F207FFF7FFF0506E1047FFF00FF'))).toThrow(/expected NDEF File Control TLV 04 06/);
    expect(() => encodeCapabilityContainer({ ...APPLE_WALLET_CAPABILITY_CONTAINER, maxNdefFileSize: 0x10000 })).toThrow(
      /does not fit 2 bytes/,
    );
  });
});

const arbCommand: fc.Arbitrary<CommandApdu> = fc
  .record({
    cla: fc.integer({ min: 0, max: 255 }),
    ins: fc.integer({ min: 0, max: 255 }),
    p1: fc.integer({ min: 0, max: 255 }),
    p2: fc.integer({ min: 0, max: 255 }),
    data: fc.oneof(fc.uint8Array({ maxLength: 255 }), fc.uint8Array({ minLength: 256, maxLength: 1200 })),
    le: fc.option(fc.oneof(fc.integer({ min: 1, max: 256 }), fc.integer({ min: 257, max: 65536 })), { nil: undefined }),
  })
  .map((c): CommandApdu => {
    const { le, ...rest } = c;
    return le === undefined ? rest : { ...rest, le };
  });

describe('APDU properties (fast-check)', () => {
  it('parse(encode(command)) gives back the command, in short and forced extended form', () => {
    fc.assert(
      fc.property(arbCommand, fc.boolean(), (command, forceExtended) => {
        const bytes = encodeCommandApdu(command, { forceExtended });
        const { extended: _extended, ...parsed } = parseCommandApdu(bytes);
        expect(parsed).toEqual(command);
        expect(encodeCommandApdu(parsed, { forceExtended: _extended })).toEqual(bytes);
      }),
      { numRuns: 500 },
    );
  });

  it('short-form commands stay short (≤ 255 data bytes, Ne ≤ 256)', () => {
    fc.assert(
      fc.property(arbCommand, (command) => {
        const short = command.data.length <= 255 && (command.le ?? 0) <= 256;
        expect(parseCommandApdu(encodeCommandApdu(command)).extended).toBe(!short);
      }),
      { numRuns: 300 },
    );
  });

  it('parse(encode(response)) gives back the response', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.integer({ min: 0, max: 0xffff }), (data, sw) => {
        expect(parseResponseApdu(encodeResponseApdu({ data, sw }))).toEqual({ data, sw });
      }),
    );
  });

  it('arbitrary bytes either parse as a command or fail with ApduFormatError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        try {
          parseCommandApdu(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(ApduFormatError);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('the CC round-trips', () => {
    fc.assert(
      fc.property(
        fc.record({
          mappingVersion: fc.integer({ min: 0, max: 255 }),
          maxResponseDataSize: fc.integer({ min: 0, max: 0xffff }),
          maxCommandDataSize: fc.integer({ min: 0, max: 0xffff }),
          ndefFileId: fc.integer({ min: 0, max: 0xffff }),
          maxNdefFileSize: fc.integer({ min: 0, max: 0xffff }),
          readAccess: fc.integer({ min: 0, max: 255 }),
          writeAccess: fc.integer({ min: 0, max: 255 }),
        }),
        (cc) => {
          expect(parseCapabilityContainer(encodeCapabilityContainer(cc))).toEqual(cc);
        },
      ),
    );
  });
});
