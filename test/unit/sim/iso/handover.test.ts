import { describe, expect, it } from 'vitest';
import {
  AdType,
  BLE_OOB_MIME_TYPE,
  CarrierPowerState,
  DEVICE_ENGAGEMENT_TYPE,
  HandoverFormatError,
  LeRole,
  MULTIPAZ_NFC_CARRIER,
  NFC_CARRIER_TYPE,
  READER_ENGAGEMENT_1_0,
  alternativeCarrierRecord,
  bleCarrierRecord,
  buildHandoverRequest,
  buildHandoverSelect,
  deviceEngagementRecord,
  encodeAdStructures,
  encodeAlternativeCarrierPayload,
  encodeBleCarrierPayload,
  encodeHandoverPayload,
  encodeNfcCarrierPayload,
  leRoleToMdocModes,
  mdocModesToLeRole,
  nfcCarrierRecord,
  parseAlternativeCarrierPayload,
  parseBleCarrierPayload,
  parseHandoverPayload,
  parseHandoverRequest,
  parseHandoverSelect,
  parseNfcCarrierPayload,
  readerEngagementRecord,
} from '../../../../src/qa/sim/iso/handover.js';
import { uuidFromBytes, uuidToBytes } from '../../../../src/qa/sim/iso/ble-uuids.js';
import type { LeRole as LeRoleValue } from '../../../../src/qa/sim/iso/handover.js';
import { Tnf, encodeNdefMessage, ndefRecord, parseNdefMessage } from '../../../../src/qa/sim/iso/ndef.js';
import type { NdefRecord } from '../../../../src/qa/sim/iso/ndef.js';
import {
  ANNEX_D_HR_HEX,
  ANNEX_D_HS_HEX,
  APPLE_HS_DE_OFFSET,
  APPLE_HS_HEX,
  MULTIPAZ_BLE_UUID,
  MULTIPAZ_DEVICE_ENGAGEMENT_HEX,
  MULTIPAZ_HR_HEX,
  MULTIPAZ_NEGOTIATED_HS_HEX,
  MULTIPAZ_STATIC_HS_HEX,
  hex,
  toHex,
} from './nfc-fixtures.js';

const multipazDe = hex(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);

function roundTripRecord(record: NdefRecord): NdefRecord {
  const [parsed] = parseNdefMessage(encodeNdefMessage([record]));
  if (parsed === undefined) throw new Error('no record');
  return parsed;
}

describe('Handover Select builder reproduces the published messages byte-exact', () => {
  it('Multipaz static HS (254 bytes, its test): DE, BLE both modes (role 03) + UUID, NFC 0xFFFF/0x10000', () => {
    expect(multipazDe.length).toBe(88);
    const hs = buildHandoverSelect({
      deviceEngagement: multipazDe,
      ble: { leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: MULTIPAZ_BLE_UUID },
      nfc: MULTIPAZ_NFC_CARRIER,
    });
    expect(hs.length).toBe(254);
    expect(toHex(hs)).toBe(MULTIPAZ_STATIC_HS_HEX);
  });

  it('Multipaz negotiated HS (186 bytes): central client only (role 01), no UUID, no NFC', () => {
    const hs = buildHandoverSelect({ deviceEngagement: multipazDe, ble: { leRole: LeRole.CENTRAL_ONLY } });
    expect(hs.length).toBe(186);
    expect(toHex(hs)).toBe(MULTIPAZ_NEGOTIATED_HS_HEX);
  });

  it("Apple Wallet HS (194 bytes) with Apple's record order: BLE before DeviceEngagement", () => {
    const apple = hex(APPLE_HS_HEX);
    const hs = buildHandoverSelect({
      deviceEngagement: apple.subarray(APPLE_HS_DE_OFFSET),
      ble: { leRole: LeRole.CENTRAL_ONLY },
      recordOrder: ['ble', 'deviceEngagement'],
    });
    expect(toHex(hs)).toBe(toHex(apple));
  });

  it('rejects a record order that omits or repeats a configured record, and an HS without carriers', () => {
    const ble = { leRole: LeRole.CENTRAL_ONLY } as const;
    expect(() => buildHandoverSelect({ deviceEngagement: multipazDe, ble, recordOrder: ['deviceEngagement'] })).toThrow(
      /does not place the "ble" record/,
    );
    expect(() => buildHandoverSelect({ deviceEngagement: multipazDe, ble, recordOrder: ['ble', 'ble', 'deviceEngagement'] })).toThrow(
      /lists "ble" twice/,
    );
    expect(() => buildHandoverSelect({ deviceEngagement: multipazDe })).toThrow(/at least one carrier/);
  });
});

describe('Handover Request builder', () => {
  it('reproduces the Multipaz reader HR (168 bytes, testNegotiatedHandover) byte-exact', () => {
    const hr = buildHandoverRequest({
      ble: { leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: MULTIPAZ_BLE_UUID },
      nfc: MULTIPAZ_NFC_CARRIER,
    });
    expect(hr.length).toBe(168);
    expect(toHex(hr)).toBe(MULTIPAZ_HR_HEX);
  });

  it('carries the full NFC carrier record (both max lengths), never the 1-byte version form', () => {
    const parsed = parseHandoverRequest(
      buildHandoverRequest({ ble: { leRole: LeRole.CENTRAL_ONLY, uuid: MULTIPAZ_BLE_UUID }, nfc: MULTIPAZ_NFC_CARRIER }),
    );
    expect(parsed.nfc).toMatchObject({ layout: 'typed', maxCommandDataLength: 0xffff, maxResponseDataLength: 0x10000 });
  });

  it('adds a cr record first when given a collision random, and can omit the ReaderEngagement', () => {
    const hr = buildHandoverRequest({
      ble: { leRole: LeRole.PERIPHERAL_ONLY, uuid: MULTIPAZ_BLE_UUID },
      collisionRandom: 0xbeef,
      readerEngagement: null,
    });
    const parsed = parseHandoverRequest(hr);
    expect(parsed.collisionRandom).toBe(0xbeef);
    expect(parsed.readerEngagement).toBeUndefined();
    expect(parsed.nfc).toBeUndefined();
    expect(parsed.alternativeCarriers).toEqual([
      { carrierPowerState: CarrierPowerState.ACTIVE, carrierDataReference: '0', auxiliaryDataReferences: [] },
    ]);
    // Hr payload: 15 | cr (MB) 91 02 02 "cr" be ef | ac (ME) 51 02 04 "ac" 01 01 "0" 00
    expect(toHex(parsed.records[0]?.payload ?? new Uint8Array(0))).toBe('15' + '910202' + '6372' + 'beef' + '510204' + '6163' + '01013000');
  });
});

describe('Handover Select parser', () => {
  it('reads the Multipaz static HS: DE verbatim, BLE both modes with UUID, NFC lengths, ac references', () => {
    const hsBytes = hex(MULTIPAZ_STATIC_HS_HEX);
    const hs = parseHandoverSelect(hsBytes);
    expect(hs.version).toBe(0x15);
    expect(toHex(hs.deviceEngagement)).toBe(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);
    expect(hs.ble).toMatchObject({
      leRole: 0x03,
      uuid: MULTIPAZ_BLE_UUID,
      modes: { peripheralServer: true, centralClient: true, preferred: 'centralClient' },
      alternativeCarrier: { carrierPowerState: 1, carrierDataReference: '0', auxiliaryDataReferences: ['mdoc'] },
    });
    expect(hs.nfc).toMatchObject({
      version: 1,
      layout: 'typed',
      maxCommandDataLength: 0xffff,
      maxResponseDataLength: 0x10000,
      alternativeCarrier: { carrierDataReference: 'nfc', auxiliaryDataReferences: ['mdoc'] },
    });
    expect(hs.records.map((r) => r.header)).toEqual([0x91, 0x1c, 0x1a, 0x5c]);
  });

  it('reads the Multipaz negotiated HS: mdoc central client mode, no UUID (reader keeps its HR UUID)', () => {
    const hs = parseHandoverSelect(hex(MULTIPAZ_NEGOTIATED_HS_HEX));
    expect(hs.ble?.leRole).toBe(LeRole.CENTRAL_ONLY);
    expect(hs.ble?.uuid).toBeUndefined();
    expect(hs.ble?.modes).toEqual({ peripheralServer: false, centralClient: true });
    expect(hs.nfc).toBeUndefined();
    expect(toHex(hs.deviceEngagement)).toBe(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);
  });

  it("reads Apple Wallet's 194-byte HS by type, with its 4-key DeviceEngagement (keys 5 and 6) verbatim", () => {
    const apple = hex(APPLE_HS_HEX);
    expect(apple.length).toBe(194);
    const hs = parseHandoverSelect(apple);
    expect(hs.records.map((r) => r.header)).toEqual([0x91, 0x1a, 0x5c]);
    expect(hs.ble).toMatchObject({ leRole: 0x01, uuids: [], modes: { centralClient: true, peripheralServer: false } });
    expect(hs.ble?.uuid).toBeUndefined();
    expect(hs.deviceEngagement.length).toBe(96);
    expect(toHex(hs.deviceEngagement)).toBe(toHex(apple.subarray(APPLE_HS_DE_OFFSET)));
    // a4 {0: "1.1", 1: [...], 5: [], 6: {3: true, 4: true}}: the tail must survive untouched.
    expect(toHex(hs.deviceEngagement.subarray(0, 6))).toBe('a40063312e31');
    expect(toHex(hs.deviceEngagement.subarray(-8))).toBe('058006a203f504f5');
  });

  it('reads the Annex D HS: MAC address AD of length 8 (address + type), LE role 01, no UUID', () => {
    const hs = parseHandoverSelect(hex(ANNEX_D_HS_HEX));
    expect(hs.ble?.leRole).toBe(LeRole.CENTRAL_ONLY);
    expect(hs.ble?.uuid).toBeUndefined();
    expect(toHex(hs.ble?.macAddress?.address ?? new Uint8Array(0))).toBe('28128b372828');
    expect(hs.ble?.macAddress?.addressType).toBe(0x01);
    expect(hs.deviceEngagement.length).toBe(88);
  });

  it('finds records by type whatever the order (DE last, NFC first, BLE in the middle)', () => {
    const hs = buildHandoverSelect({
      deviceEngagement: multipazDe,
      ble: { leRole: LeRole.PERIPHERAL_ONLY, uuid: MULTIPAZ_BLE_UUID },
      nfc: { maxCommandDataLength: 255, maxResponseDataLength: 256 },
      recordOrder: ['nfc', 'ble', 'deviceEngagement'],
      carrierOrder: ['nfc', 'ble'],
    });
    const parsed = parseHandoverSelect(hs);
    expect(parsed.records.map((r) => r.tnf)).toEqual([Tnf.WELL_KNOWN, Tnf.EXTERNAL, Tnf.MIME_MEDIA, Tnf.EXTERNAL]);
    expect(parsed.alternativeCarriers.map((ac) => ac.carrierDataReference)).toEqual(['nfc', '0']);
    expect(parsed.ble?.modes).toEqual({ peripheralServer: true, centralClient: false });
    expect(parsed.nfc).toMatchObject({ maxCommandDataLength: 255, maxResponseDataLength: 256 });
    expect(parsed.deviceEngagement).toEqual(multipazDe);
  });

  it('rejects an HS without a DeviceEngagement, without an Hs record, or with another CH version', () => {
    const bleOnly = encodeNdefMessage([
      ndefRecord(Tnf.WELL_KNOWN, 'Hs', encodeHandoverPayload({ alternativeCarriers: [] })),
      bleCarrierRecord({ leRole: LeRole.CENTRAL_ONLY }),
    ]);
    expect(() => parseHandoverSelect(bleOnly)).toThrow(/no DeviceEngagement record/);
    expect(() => parseHandoverSelect(encodeNdefMessage([deviceEngagementRecord(multipazDe)]))).toThrow(
      /no Handover Select \("Hs"\) record/,
    );
    const v14 = encodeNdefMessage([ndefRecord(Tnf.WELL_KNOWN, 'Hs', Uint8Array.of(0x14)), deviceEngagementRecord(multipazDe)]);
    expect(() => parseHandoverSelect(v14)).toThrow(/version 0x14 is not Connection Handover 1.5/);
    expect(() => parseHandoverSelect(v14)).toThrow(HandoverFormatError);
  });
});

describe('Handover Request parser', () => {
  it('reads the Multipaz HR: ReaderEngagement, BLE role 03 + UUID, NFC; ac records without aux refs', () => {
    const hr = parseHandoverRequest(hex(MULTIPAZ_HR_HEX));
    expect(hr.collisionRandom).toBeUndefined();
    expect(hr.readerEngagement).toEqual(READER_ENGAGEMENT_1_0);
    expect(hr.ble).toMatchObject({ leRole: 3, uuid: MULTIPAZ_BLE_UUID });
    // Role 03 from the reader: both, reader prefers central → mdoc peripheral server preferred.
    expect(hr.ble?.modes).toEqual({ peripheralServer: true, centralClient: true, preferred: 'peripheralServer' });
    expect(hr.alternativeCarriers.map((ac) => [ac.carrierDataReference, ac.auxiliaryDataReferences.length])).toEqual([
      ['0', 0],
      ['nfc', 0],
    ]);
    expect(hr.records.map((r) => r.header)).toEqual([0x91, 0x1c, 0x1a, 0x5c]);
  });

  it('reads the Annex D HR: cr 0x0102, three carriers incl. Wi-Fi Aware, MAC + role 02 + UUID, version-only NFC', () => {
    const hr = parseHandoverRequest(hex(ANNEX_D_HR_HEX));
    expect(hr.collisionRandom).toBe(0x0102);
    expect(hr.alternativeCarriers.map((ac) => ac.carrierDataReference)).toEqual(['0', 'nfc', 'W']);
    expect(hr.ble).toMatchObject({ leRole: 2, uuid: '3a82d455-d5fc-4db3-bea0-6fd2f6ff32c8' });
    expect(hr.ble?.adStructures.map((ad) => ad.type)).toEqual([
      AdType.LE_BLUETOOTH_DEVICE_ADDRESS,
      AdType.LE_ROLE,
      AdType.COMPLETE_128_BIT_UUIDS,
    ]);
    expect(hr.nfc).toMatchObject({ version: 1, layout: 'versionOnly' });
    expect(hr.nfc?.maxCommandDataLength).toBeUndefined();
    expect(hr.readerEngagement).toBeUndefined();
  });

  it('the generic pieces rebuild the Annex D HR byte-exact (cr, Wi-Fi Aware record, AD order preserved)', () => {
    const parsed = parseHandoverRequest(hex(ANNEX_D_HR_HEX));
    const hrRecord = ndefRecord(
      Tnf.WELL_KNOWN,
      'Hr',
      encodeHandoverPayload({ collisionRandom: 0x0102, alternativeCarriers: parsed.alternativeCarriers }),
    );
    const ble = ndefRecord(Tnf.MIME_MEDIA, BLE_OOB_MIME_TYPE, encodeAdStructures(parsed.ble?.adStructures ?? []), '0');
    const nfc = ndefRecord(Tnf.EXTERNAL, NFC_CARRIER_TYPE, Uint8Array.of(1), 'nfc');
    const nan = parsed.records[3];
    if (nan === undefined) throw new Error('missing NAN record');
    expect(toHex(encodeNdefMessage([hrRecord, ble, nfc, nan]))).toBe(ANNEX_D_HR_HEX);
  });
});

describe('LE role semantics (Bluetooth CSS LE Role, seen from the sender)', () => {
  const cases: [LeRoleValue, 'mdoc' | 'reader', { peripheralServer: boolean; centralClient: boolean; preferred?: string }][] = [
    [0x00, 'mdoc', { peripheralServer: true, centralClient: false }],
    [0x01, 'mdoc', { peripheralServer: false, centralClient: true }],
    [0x02, 'mdoc', { peripheralServer: true, centralClient: true, preferred: 'peripheralServer' }],
    [0x03, 'mdoc', { peripheralServer: true, centralClient: true, preferred: 'centralClient' }],
    [0x00, 'reader', { peripheralServer: false, centralClient: true }],
    [0x01, 'reader', { peripheralServer: true, centralClient: false }],
    [0x02, 'reader', { peripheralServer: true, centralClient: true, preferred: 'centralClient' }],
    [0x03, 'reader', { peripheralServer: true, centralClient: true, preferred: 'peripheralServer' }],
  ];
  it.each(cases)('role %i sent by the %s', (role, sender, modes) => {
    expect(leRoleToMdocModes(role, sender)).toEqual(modes);
    expect(mdocModesToLeRole(leRoleToMdocModes(role, sender), sender)).toBe(role);
  });

  it('both modes without a preference are written as 03, as Multipaz does; no mode is an error', () => {
    expect(mdocModesToLeRole({ peripheralServer: true, centralClient: true }, 'mdoc')).toBe(0x03);
    expect(mdocModesToLeRole({ peripheralServer: true, centralClient: true }, 'reader')).toBe(0x03);
    expect(() => mdocModesToLeRole({ peripheralServer: false, centralClient: false }, 'mdoc')).toThrow(/at least one/);
  });
});

describe('carrier and engagement records round-trip', () => {
  it('UUIDs: canonical lower-case, reversed inside the LE OOB record', () => {
    const bytes = uuidToBytes('B3D52AC4-A1B6-4B51-A22E-78EE55EF6EB6');
    expect(uuidFromBytes(bytes)).toBe(MULTIPAZ_BLE_UUID);
    expect(toHex(encodeBleCarrierPayload({ leRole: 3, uuid: MULTIPAZ_BLE_UUID }))).toBe(
      '021c03' + '1107' + 'b66eef55ee782ea2514bb6a1c42ad5b3',
    );
    expect(() => uuidToBytes('not-a-uuid')).toThrow(/not a 128-bit UUID/);
  });

  it('BLE record with MAC (Multipaz 6-byte and CSS 7-byte forms) and PSM', () => {
    const mac = Uint8Array.of(1, 2, 3, 4, 5, 6);
    for (const macAddress of [{ address: mac }, { address: mac, addressType: 1 }]) {
      const record = roundTripRecord(bleCarrierRecord({ leRole: 0, uuid: MULTIPAZ_BLE_UUID, macAddress, psm: 0xc0 }));
      expect(record.tnf).toBe(Tnf.MIME_MEDIA);
      expect(record.id).toEqual(Uint8Array.of(0x30));
      expect(parseBleCarrierPayload(record.payload)).toMatchObject({
        leRole: 0,
        uuid: MULTIPAZ_BLE_UUID,
        macAddress,
        psm: 0xc0,
      });
    }
    const payload = encodeBleCarrierPayload({ leRole: 0, macAddress: { address: mac } });
    expect(toHex(payload)).toBe('021c00' + '071b010203040506');
  });

  it('BLE record errors: missing LE role, bad UUID list length, overrunning AD length', () => {
    expect(() => parseBleCarrierPayload(hex('1107' + '00'.repeat(16)))).toThrow(/lacks the LE Role AD/);
    expect(() => parseBleCarrierPayload(hex('021c01' + '0907' + '00'.repeat(8)))).toThrow(/not a multiple of 16/);
    expect(() => parseBleCarrierPayload(hex('021c01' + '1107' + '00'.repeat(4)))).toThrow(/length overrun/);
    expect(() => parseBleCarrierPayload(hex('021c07'))).toThrow(/LE Role value 0x7/);
  });

  it('NFC record: typed (Multipaz), untyped (isomdl "01 01FF 02FFFF") and version-only forms', () => {
    expect(toHex(encodeNfcCarrierPayload(MULTIPAZ_NFC_CARRIER))).toBe('01' + '0301ffff' + '0402010000');
    const untyped = { maxCommandDataLength: 0xff, maxResponseDataLength: 0xffff, layout: 'untyped' } as const;
    expect(toHex(encodeNfcCarrierPayload(untyped))).toBe('0101ff02ffff');
    expect(parseNfcCarrierPayload(hex('0101ff02ffff'))).toEqual({ version: 1, ...untyped });
    expect(parseNfcCarrierPayload(hex('01'))).toEqual({ version: 1, layout: 'versionOnly' });
    const record = roundTripRecord(nfcCarrierRecord({ maxCommandDataLength: 0x1234, maxResponseDataLength: 0x56 }));
    expect(record.tnf).toBe(Tnf.EXTERNAL);
    expect(parseNfcCarrierPayload(record.payload)).toEqual({
      version: 1,
      layout: 'typed',
      maxCommandDataLength: 0x1234,
      maxResponseDataLength: 0x56,
    });
    expect(() => parseNfcCarrierPayload(hex('010301ff'))).toThrow(/neither version-only, typed/);
    expect(() => parseNfcCarrierPayload(new Uint8Array(0))).toThrow(/empty/);
  });

  it('ac payloads round-trip, with and without auxiliary references; truncation is reported', () => {
    for (const ac of [
      { carrierPowerState: 1, carrierDataReference: '0', auxiliaryDataReferences: ['mdoc'] },
      { carrierPowerState: 2, carrierDataReference: 'nfc', auxiliaryDataReferences: [] },
      { carrierPowerState: 0, carrierDataReference: 'W', auxiliaryDataReferences: ['a', 'bc'] },
    ]) {
      expect(parseAlternativeCarrierPayload(encodeAlternativeCarrierPayload(ac))).toEqual(ac);
      expect(parseAlternativeCarrierPayload(roundTripRecord(alternativeCarrierRecord(ac)).payload)).toEqual(ac);
    }
    expect(
      toHex(encodeAlternativeCarrierPayload({ carrierPowerState: 1, carrierDataReference: '0', auxiliaryDataReferences: ['mdoc'] })),
    ).toBe('010130' + '01046d646f63');
    expect(() => parseAlternativeCarrierPayload(hex('01013001056d646f63'))).toThrow(/length overrun/);
    expect(() => parseAlternativeCarrierPayload(hex('0101300000'))).toThrow(/trailing/);
  });

  it('Hs/Hr payloads round-trip; a version-only Hs selects no carrier; unknown embedded records are kept', () => {
    const carriers = [{ carrierPowerState: 1, carrierDataReference: '0', auxiliaryDataReferences: ['mdoc'] }];
    expect(parseHandoverPayload(encodeHandoverPayload({ alternativeCarriers: carriers }), 'Hs')).toEqual({
      version: 0x15,
      alternativeCarriers: carriers,
      otherRecords: [],
    });
    expect(parseHandoverPayload(Uint8Array.of(0x15), 'Hs')).toEqual({ version: 0x15, alternativeCarriers: [], otherRecords: [] });
    const withErr = Uint8Array.from([0x15, ...encodeNdefMessage([ndefRecord(Tnf.WELL_KNOWN, 'err', Uint8Array.of(1, 0))])]);
    expect(parseHandoverPayload(withErr, 'Hs').otherRecords).toHaveLength(1);
    expect(() => parseHandoverPayload(new Uint8Array(0), 'Hs')).toThrow(/empty/);
  });

  it('DeviceEngagement and ReaderEngagement records carry their payload verbatim with ids mdoc / mdocreader', () => {
    const de = roundTripRecord(deviceEngagementRecord(multipazDe));
    expect(de.payload).toEqual(multipazDe);
    expect(new TextDecoder().decode(de.type)).toBe(DEVICE_ENGAGEMENT_TYPE);
    expect(new TextDecoder().decode(de.id)).toBe('mdoc');
    const re = roundTripRecord(readerEngagementRecord());
    expect(toHex(re.payload)).toBe('a10063312e30');
    expect(new TextDecoder().decode(re.id)).toBe('mdocreader');
  });
});
