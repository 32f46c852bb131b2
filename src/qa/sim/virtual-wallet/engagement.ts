/**
 * Per-presentation engagement material of the virtual phone: a fresh EDeviceKey and BLE service UUID, and
 * the DeviceEngagement built by hand after the ISO/IEC 18013-5 CDDL, as Multipaz's `EngagementGenerator.kt`
 * writes it (@owf/mdoc 0.6.0's `DeviceEngagement.create()` throws on valid input).
 *
 * - QR: DeviceEngagement with the BLE retrieval method `[2, 1, {0: psm, 1: ccm, 10: uuid, 11: uuid}]`; a
 *   mode's UUID key is written only when the mode is offered, and both carry the same UUID when both are
 *   (Multipaz's `MdocConnectionMethodBle.kt`: "UUIDs for both BLE modes must be the same"). QR text =
 *   "mdoc:" + base64url, as Multipaz's `VerificationHelper` and isomdl's `from_qr_code_uri()` read it.
 * - NFC: DeviceEngagement without key 2 (the handover records carry the transport, as in Multipaz's HS,
 *   `test/fixtures/captures/multipaz-loopback-static.json`).
 * - Version "1.0" with keys 0/1 only, or "1.1" with key 5 (OriginInfos, empty) and key 6 (capabilities),
 *   as Apple Wallet sends (isomdl's `APPLE_HS_NDEF`, `test/fixtures/captures/apple-wallet-negotiated.json`).
 */
import { randomUUID, type KeyObject } from 'node:crypto';
import { canonicalUuid } from '../iso/ble-uuids.js';
import { encodeCoseKeyBytes, generateP256KeyPair } from '../iso/cose-key.js';
import { encodeDeviceEngagement, type RetrievalMethod } from '../iso/device-engagement.js';
import type { PhoneProfile } from './profiles.js';

export interface EngagementKeys {
  /** EDeviceKey (private). */
  readonly eDeviceKey: KeyObject;
  /** EDeviceKeyBytes `#6.24(bstr .cbor COSE_Key)` as written into the DeviceEngagement: the Ident IKM (ISO/IEC 18013-5 §8.3.3.1.1). */
  readonly eDeviceKeyBytes: Uint8Array;
  /** The phone's own BLE service UUID for this presentation (canonical form). */
  readonly serviceUuid: string;
}

export function createEngagementKeys(options: { readonly eDeviceKey?: KeyObject; readonly serviceUuid?: string } = {}): EngagementKeys {
  const eDeviceKey = options.eDeviceKey ?? generateP256KeyPair().privateKey;
  return { eDeviceKey, eDeviceKeyBytes: encodeCoseKeyBytes(eDeviceKey), serviceUuid: canonicalUuid(options.serviceUuid ?? randomUUID()) };
}

function secondEditionKeys(profile: PhoneProfile): { originInfos?: readonly unknown[]; capabilities?: ReadonlyMap<number, unknown> } {
  if (profile.deviceEngagementVersion !== '1.1') return {};
  return { originInfos: [], capabilities: profile.capabilities ?? new Map() };
}

/** The BLE retrieval method a QR engagement offers for this profile. */
export function qrBleRetrievalMethod(profile: PhoneProfile, serviceUuid: string): RetrievalMethod {
  const { peripheralServer, centralClient } = profile.bleModes;
  return {
    type: 'ble',
    peripheralServerMode: peripheralServer,
    centralClientMode: centralClient,
    ...(peripheralServer ? { peripheralServerModeUuid: serviceUuid } : {}),
    ...(centralClient ? { centralClientModeUuid: serviceUuid } : {}),
  };
}

/** DeviceEngagement bytes for a QR code. */
export function qrDeviceEngagement(profile: PhoneProfile, keys: EngagementKeys): Uint8Array {
  return encodeDeviceEngagement({
    eDeviceKey: keys.eDeviceKey,
    version: profile.deviceEngagementVersion,
    retrievalMethods: [qrBleRetrievalMethod(profile, keys.serviceUuid)],
    ...secondEditionKeys(profile),
  });
}

/** DeviceEngagement bytes for the NFC Handover Select record (no retrieval methods). */
export function nfcDeviceEngagement(profile: PhoneProfile, eDeviceKey: KeyObject): Uint8Array {
  return encodeDeviceEngagement({ eDeviceKey, version: profile.deviceEngagementVersion, ...secondEditionKeys(profile) });
}
