/**
 * `ble_exchange` modes (spec §2.5) from real engagements: the Multipaz static and negotiated HS, the Apple
 * Wallet HS (isomdl's `APPLE_HS_NDEF`), the Annex D QR DeviceEngagement (`test/fixtures/iso18013-5/`), and
 * the engine's QR path.
 */
import { describe, expect, it } from 'vitest';
import { decodeDeviceEngagement, deviceEngagementToQr, encodeDeviceEngagement } from '../../../../../src/qa/sim/iso/device-engagement.js';
import { generateP256KeyPair } from '../../../../../src/qa/sim/iso/cose-key.js';
import { parseHandoverSelect } from '../../../../../src/qa/sim/iso/handover.js';
import {
  buildBleModes,
  createIsoReaderEngineFactory,
  offeredFromDeviceEngagement,
  offeredFromHandover,
} from '../../../../../src/qa/sim/mock-backend/reader/index.js';
import type { BleModeWire } from '../../../../../src/qa/sim/mock-backend/wire.js';
import { annexD } from '../../iso/annex-d-vectors.js';
import {
  ANNEX_D_HS_HEX,
  APPLE_HS_HEX,
  MULTIPAZ_BLE_UUID,
  MULTIPAZ_NEGOTIATED_HS_HEX,
  MULTIPAZ_STATIC_HS_HEX,
  hex,
} from '../../iso/nfc-fixtures.js';

const CENTRAL_CHARS = {
  state: { uuid: '00000001-a123-48ce-896b-4c76973373e6', operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
  c2s: { uuid: '00000002-a123-48ce-896b-4c76973373e6', operations: ['write_without_response'], permissions: ['writeable'] },
  s2c: { uuid: '00000003-a123-48ce-896b-4c76973373e6', operations: ['notify'], permissions: [] },
};
const PERIPHERAL_CHARS = {
  state: { uuid: '00000005-a123-48ce-896b-4c76973373e6', operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
  c2s: { uuid: '00000006-a123-48ce-896b-4c76973373e6', operations: ['write_without_response'], permissions: ['writeable'] },
  s2c: { uuid: '00000007-a123-48ce-896b-4c76973373e6', operations: ['notify'], permissions: [] },
  ident: { uuid: '00000008-a123-48ce-896b-4c76973373e6', operations: ['read'], permissions: ['readable'] },
};
const HR_UUID = '0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9';

function modesOf(offered: ReturnType<typeof offeredFromHandover>): BleModeWire[] {
  if (typeof offered === 'string') throw new Error(offered);
  return buildBleModes(offered);
}

describe('modes from a Handover Select', () => {
  it('Multipaz static HS (LE role 03, one UUID): central first, then peripheral, both on that UUID', () => {
    const hs = parseHandoverSelect(hex(MULTIPAZ_STATIC_HS_HEX));
    expect(modesOf(offeredFromHandover(hs.ble, undefined))).toEqual([
      { role: 'central', service_uuid: MULTIPAZ_BLE_UUID, characteristics: CENTRAL_CHARS },
      { role: 'peripheral', service_uuid: MULTIPAZ_BLE_UUID, characteristics: PERIPHERAL_CHARS },
    ]);
  });

  it('Multipaz negotiated HS (LE role 01, mdoc central client, no UUID): peripheral only, on our HR UUID', () => {
    const hs = parseHandoverSelect(hex(MULTIPAZ_NEGOTIATED_HS_HEX));
    expect(modesOf(offeredFromHandover(hs.ble, HR_UUID))).toEqual([
      { role: 'peripheral', service_uuid: HR_UUID, characteristics: PERIPHERAL_CHARS },
    ]);
  });

  it('Apple Wallet HS (LE role 01, BLE record before the DE, no UUID): peripheral only, on our HR UUID', () => {
    const hs = parseHandoverSelect(hex(APPLE_HS_HEX));
    expect(modesOf(offeredFromHandover(hs.ble, HR_UUID))).toEqual([
      { role: 'peripheral', service_uuid: HR_UUID, characteristics: PERIPHERAL_CHARS },
    ]);
  });

  it('an HS without UUID and no HR of ours (Annex D HS read statically), or without BLE, is refused', () => {
    const annex = parseHandoverSelect(hex(ANNEX_D_HS_HEX));
    expect(offeredFromHandover(annex.ble, undefined)).toBe('the Handover Select BLE carrier carries no service UUID');
    expect(offeredFromHandover(undefined, HR_UUID)).toMatch(/selects no BLE carrier/);
  });
});

describe('modes from a QR DeviceEngagement', () => {
  it('Annex D DE (central client mode, UUID key 11): peripheral only with Ident', () => {
    const de = decodeDeviceEngagement(annexD('DEVICE_ENGAGEMENT'));
    const offered = offeredFromDeviceEngagement(de);
    if (typeof offered === 'string') throw new Error(offered);
    expect(buildBleModes(offered)).toEqual([
      { role: 'peripheral', service_uuid: '45efef74-2b2c-4837-a9a3-b0e1d05a6917', characteristics: PERIPHERAL_CHARS },
    ]);
  });

  it('both modes with one UUID key: the other mode reuses it; no BLE, no mode or no UUID is refused', () => {
    const key = generateP256KeyPair().publicKey;
    const uuid = '11111111-2222-4333-8444-555555555555';
    const both = decodeDeviceEngagement(
      encodeDeviceEngagement({
        eDeviceKey: key,
        retrievalMethods: [{ type: 'ble', peripheralServerMode: true, centralClientMode: true, peripheralServerModeUuid: uuid }],
      }),
    );
    const offered = offeredFromDeviceEngagement(both);
    expect(offered).toEqual({ peripheralServer: uuid, centralClient: uuid });
    const noBle = decodeDeviceEngagement(encodeDeviceEngagement({ eDeviceKey: key }));
    expect(offeredFromDeviceEngagement(noBle)).toMatch(/no BLE retrieval method/);
    const noUuid = decodeDeviceEngagement(
      encodeDeviceEngagement({
        eDeviceKey: key,
        retrievalMethods: [{ type: 'ble', peripheralServerMode: true, centralClientMode: false }],
      }),
    );
    expect(offeredFromDeviceEngagement(noUuid)).toMatch(/no service UUID/);
    const none = decodeDeviceEngagement(
      encodeDeviceEngagement({
        eDeviceKey: key,
        retrievalMethods: [{ type: 'ble', peripheralServerMode: false, centralClientMode: false, centralClientModeUuid: uuid }],
      }),
    );
    expect(offeredFromDeviceEngagement(none)).toMatch(/neither peripheral server nor central client/);
  });

  it('the engine offers the Annex D QR as one peripheral mode', async () => {
    const engine = createIsoReaderEngineFactory({ trustedIacaCertificates: [Uint8Array.of(0x30)] })({
      sessionId: 's',
      namespaces: { 'org.iso.18013.5.1': ['age_over_21'] },
    });
    const engagement = await engine.qrScanned(deviceEngagementToQr(annexD('DEVICE_ENGAGEMENT')));
    expect(engagement).toEqual({
      kind: 'modes',
      modes: [{ role: 'peripheral', service_uuid: '45efef74-2b2c-4837-a9a3-b0e1d05a6917', characteristics: PERIPHERAL_CHARS }],
    });
    // Ident of the Annex D EDeviceKeyBytes (ISO/IEC 18013-5 §8.3.3.1.1; computed, not an Annex D vector).
    await engine.bleConnected('peripheral');
    expect(Buffer.from(engine.bleReadRequest('00000008-A123-48CE-896B-4C76973373E6')).toString('hex')).toBe(
      '8da0b7a85919f05673054ea996bbd124',
    );
    engine.dispose();
  });
});
