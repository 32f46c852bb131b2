import { describe, expect, it } from 'vitest';
import { Tnf, encodeNdefMessage, ndefRecord, parseNdefMessage } from '../../../../src/qa/sim/iso/ndef.js';
import {
  APPLE_WALLET_SERVICE_PARAMETER,
  DEFAULT_T_WAIT_MS,
  MULTIPAZ_SERVICE_PARAMETER,
  TNEP_HANDOVER_SERVICE,
  TnepFormatError,
  buildServiceParameterMessage,
  buildServiceSelectMessage,
  buildTnepStatusMessage,
  encodeServiceParameterPayload,
  findServiceParameter,
  parseServiceParameterPayload,
  parseServiceSelectMessage,
  parseServiceSelectPayload,
  parseTnepStatusMessage,
  serviceParameterRecord,
  serviceSelectRecord,
  tWaitMs,
  tnepStatusRecord,
} from '../../../../src/qa/sim/iso/tnep.js';
import { MULTIPAZ_STATIC_HS_HEX, MULTIPAZ_TE_HEX, MULTIPAZ_TP_HEX, MULTIPAZ_TS_HEX, hex, toHex } from './nfc-fixtures.js';

describe('TNEP records against the Multipaz negotiated transcript', () => {
  it('Tp: the Multipaz service parameter message is rebuilt byte-exact and parses to its fields', () => {
    expect(toHex(buildServiceParameterMessage(MULTIPAZ_SERVICE_PARAMETER))).toBe(MULTIPAZ_TP_HEX);
    const records = parseNdefMessage(hex(MULTIPAZ_TP_HEX));
    expect(findServiceParameter(records)).toEqual({
      tnepVersion: 0x10,
      serviceName: 'urn:nfc:sn:handover',
      communicationMode: 0x00,
      minimumWaitingTime: 0x00,
      maxWaitingTimeExtensions: 0x0f,
      maxNdefMessageSize: 0xffff,
    });
  });

  it('Ts: the service select message is rebuilt byte-exact and names the handover service', () => {
    expect(toHex(buildServiceSelectMessage())).toBe(MULTIPAZ_TS_HEX);
    expect(parseServiceSelectMessage(hex(MULTIPAZ_TS_HEX))).toBe(TNEP_HANDOVER_SERVICE);
  });

  it('Te: status 00 (success)', () => {
    expect(toHex(buildTnepStatusMessage())).toBe(MULTIPAZ_TE_HEX);
    expect(parseTnepStatusMessage(hex(MULTIPAZ_TE_HEX))).toBe(0x00);
    expect(parseTnepStatusMessage(buildTnepStatusMessage(0x01))).toBe(0x01);
  });

  it('a static HS has no Tp, which is how the reader recognises static handover', () => {
    expect(findServiceParameter(parseNdefMessage(hex(MULTIPAZ_STATIC_HS_HEX)))).toBeUndefined();
  });

  it("a Tp for another service is not the handover service's", () => {
    const other = { ...MULTIPAZ_SERVICE_PARAMETER, serviceName: 'urn:nfc:sn:other' };
    const records = parseNdefMessage(encodeNdefMessage([serviceParameterRecord(other)]));
    expect(findServiceParameter(records)).toBeUndefined();
    expect(findServiceParameter(records, 'urn:nfc:sn:other')?.serviceName).toBe('urn:nfc:sn:other');
  });
});

describe('TNEP record round trips and errors', () => {
  it('every record type round-trips through an NDEF message', () => {
    for (const sp of [MULTIPAZ_SERVICE_PARAMETER, APPLE_WALLET_SERVICE_PARAMETER]) {
      const [record] = parseNdefMessage(encodeNdefMessage([serviceParameterRecord(sp)]));
      expect(parseServiceParameterPayload(record?.payload ?? new Uint8Array(0))).toEqual(sp);
    }
    const [ts] = parseNdefMessage(encodeNdefMessage([serviceSelectRecord('urn:nfc:sn:x')]));
    expect(parseServiceSelectPayload(ts?.payload ?? new Uint8Array(0))).toBe('urn:nfc:sn:x');
    const [te] = parseNdefMessage(encodeNdefMessage([tnepStatusRecord(0x80)]));
    expect(te?.payload).toEqual(Uint8Array.of(0x80));
  });

  it("Apple's Tp: WT 0x14, N_wait 0x0F, max NDEF 0x0800 (isomdl capture)", () => {
    expect(toHex(encodeServiceParameterPayload(APPLE_WALLET_SERVICE_PARAMETER))).toBe(
      '10' + '13' + toHex(new TextEncoder().encode(TNEP_HANDOVER_SERVICE)) + '00' + '14' + '0f' + '0800',
    );
  });

  it('a truncated Tp keeps what it has; the missing WT means the default t_wait', () => {
    const full = encodeServiceParameterPayload(MULTIPAZ_SERVICE_PARAMETER);
    const nameOnly = parseServiceParameterPayload(full.subarray(0, 2 + 19));
    expect(nameOnly).toEqual({ tnepVersion: 0x10, serviceName: TNEP_HANDOVER_SERVICE });
    expect(tWaitMs(nameOnly.minimumWaitingTime)).toBe(DEFAULT_T_WAIT_MS);
    expect(parseServiceParameterPayload(full.subarray(0, 2 + 19 + 2)).minimumWaitingTime).toBe(0);
  });

  it('malformed TNEP payloads are rejected with clear errors', () => {
    expect(() => parseServiceParameterPayload(hex('1014' + '75726e'))).toThrow(/service name needs 20 byte\(s\).*length overrun/);
    expect(() => parseServiceParameterPayload(Uint8Array.from([...encodeServiceParameterPayload(MULTIPAZ_SERVICE_PARAMETER), 0]))).toThrow(
      /1 unexpected trailing byte/,
    );
    expect(() => parseServiceSelectPayload(hex('05616263'))).toThrow(TnepFormatError);
    expect(() => parseServiceSelectPayload(hex('0161ff'))).toThrow(/trailing/);
    expect(() => parseServiceSelectPayload(hex('02c328'))).toThrow(/not valid UTF-8/);
    expect(() => parseTnepStatusMessage(encodeNdefMessage([ndefRecord(Tnf.WELL_KNOWN, 'Te', Uint8Array.of(0, 0))]))).toThrow(
      /Te payload must be 1 status byte, got 2/,
    );
    expect(() => parseTnepStatusMessage(hex(MULTIPAZ_TS_HEX))).toThrow(/no TNEP Status \(Te\) record/);
    expect(() => parseServiceSelectMessage(hex(MULTIPAZ_TE_HEX))).toThrow(/no Service Select \(Ts\) record/);
    expect(() => encodeServiceParameterPayload({ ...MULTIPAZ_SERVICE_PARAMETER, maxNdefMessageSize: 0x10000 })).toThrow(
      /does not fit 2 bytes/,
    );
  });
});

describe('t_wait = 2^(WT/4 − 1) ms (TNEP 1.0 §4.1.6)', () => {
  it.each([
    [0x14, 16], // Apple Wallet
    [0x10, 8], // Google Wallet
    [0x00, 1], // Multipaz: 0.5 ms, clamped up to 1
    [0x04, 1],
    [0x08, 2],
    [0x05, 2], // 2^0.25 = 1.19 → rounded up
    [0x28, 512],
    [0x2c, 1000], // 1024 clamped
    [63, 1000],
  ])('WT %i → %i ms', (wt, ms) => {
    expect(tWaitMs(wt)).toBe(ms);
  });

  it('defaults to 8 ms without WT and rejects non-byte WT', () => {
    expect(tWaitMs()).toBe(8);
    expect(() => tWaitMs(-1)).toThrow(TnepFormatError);
    expect(() => tWaitMs(1.5)).toThrow(TnepFormatError);
  });
});
