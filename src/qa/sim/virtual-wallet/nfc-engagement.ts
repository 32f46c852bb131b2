/**
 * The Handover Select messages of the virtual phone (NFC Forum Connection Handover; ISO/IEC 18013-5 §8.2.2.1)
 * and its answer to a reader's Handover Request in negotiated handover (UUID rule of ISO/IEC 18013-5
 * 18013-5 §8.3.3.1.1.2, as Multipaz's `MdocNfcEngagementHelper.kt` quotes and applies it).
 *
 * Static HS (Multipaz layout, `test/fixtures/captures/multipaz-loopback-static.json`): `Hs` with one `ac`
 * per carrier (aux ref "mdoc"), the DeviceEngagement record, the BLE OOB record (LE role of the modes
 * offered, from the mdoc's point of view, and the one shared UUID little-endian), and the NFC carrier record
 * when the profile has one.
 *
 * Negotiated: the HR's BLE offer is read with the reader as sender (LE roles invert: Bluetooth CSS Part A
 * CSS §1.17 names the sender's role). The phone picks mdoc central client mode when the reader offers it with a
 * UUID and the profile runs it (Multipaz's picker takes it first; Apple Wallet only does it): HS LE role 01
 * **without** a UUID — the reader keeps its HR UUID (18013-5 §8.3.3.1.1.2; Apple's HS in
 * `test/fixtures/captures/apple-wallet-negotiated.json`) — or, for a profile that writes its own (Google
 * Wallet's captured HS), role 01 with the phone's UUID, which it then scans for. Otherwise peripheral server
 * mode when both allow it: HS LE role 00 with the phone's own UUID (an mdoc picking peripheral server mode
 * shall put a UUID in its HS, 18013-5 §8.3.3.1.1.2). With nothing in common the HS selects no carrier (`Hs` payload
 * is the version byte alone) and no BLE follows.
 */
import {
  LeRole,
  buildHandoverSelect,
  deviceEngagementRecord,
  encodeHandoverPayload,
  mdocModesToLeRole,
  parseHandoverRequest,
  RTD_HANDOVER_SELECT,
  type MdocBleMode,
} from '../iso/handover.js';
import { Tnf, encodeNdefMessage, ndefRecord } from '../iso/ndef.js';
import type { PhoneProfile } from './profiles.js';
import { errorText } from '../../../common/error-text.js';

/** The BLE the phone runs after a handover: the mode(s) and the UUID each uses. */
export interface BleAssignment {
  readonly peripheralServerUuid?: string;
  readonly centralClientUuid?: string;
}

export function staticHandoverSelect(
  profile: PhoneProfile,
  deviceEngagement: Uint8Array,
  serviceUuid: string,
): { readonly handoverSelect: Uint8Array; readonly ble: BleAssignment } {
  const { peripheralServer, centralClient } = profile.bleModes;
  const handoverSelect = buildHandoverSelect({
    deviceEngagement,
    ble: { leRole: mdocModesToLeRole({ peripheralServer, centralClient }, 'mdoc'), uuid: serviceUuid, ...extraAd(profile) },
    ...(profile.nfcCarrier === undefined ? {} : { nfc: profile.nfcCarrier }),
    recordOrder: profile.handoverSelectRecordOrder,
  });
  return {
    handoverSelect,
    ble: {
      ...(peripheralServer ? { peripheralServerUuid: serviceUuid } : {}),
      ...(centralClient ? { centralClientUuid: serviceUuid } : {}),
    },
  };
}

function extraAd(profile: PhoneProfile): { extraAdStructures?: PhoneProfile['extraAdStructures'] } {
  return profile.extraAdStructures === undefined ? {} : { extraAdStructures: profile.extraAdStructures };
}

export interface NegotiatedAnswer {
  readonly handoverSelect: Uint8Array;
  /** Undefined when the HR and the profile share no BLE mode. */
  readonly ble: BleAssignment | undefined;
  readonly mode: MdocBleMode | undefined;
  /** Why no carrier was selected, when none was. */
  readonly reason?: string;
}

function noCarrierHandoverSelect(deviceEngagement: Uint8Array): Uint8Array {
  return encodeNdefMessage([
    ndefRecord(Tnf.WELL_KNOWN, RTD_HANDOVER_SELECT, encodeHandoverPayload({ alternativeCarriers: [] })),
    deviceEngagementRecord(deviceEngagement),
  ]);
}

export function answerHandoverRequest(
  profile: PhoneProfile,
  deviceEngagement: Uint8Array,
  serviceUuid: string,
  handoverRequest: Uint8Array,
): NegotiatedAnswer {
  let offer;
  try {
    offer = parseHandoverRequest(handoverRequest).ble;
  } catch (error) {
    return {
      handoverSelect: noCarrierHandoverSelect(deviceEngagement),
      ble: undefined,
      mode: undefined,
      reason: `unreadable Handover Request: ${errorText(error)}`,
    };
  }
  const build = (leRole: LeRole, uuid: string | undefined): Uint8Array =>
    buildHandoverSelect({
      deviceEngagement,
      ble: { leRole, ...(uuid === undefined ? {} : { uuid }), ...extraAd(profile) },
      recordOrder: profile.handoverSelectRecordOrder.filter((kind) => kind !== 'nfc'),
    });
  if (offer?.modes.centralClient === true && offer.uuid !== undefined && profile.bleModes.centralClient) {
    // Google Wallet writes its own UUID next to LE role 01 and scans for it (profiles.ts); the others omit it.
    if (profile.negotiatedCentralClientUuid === 'own') {
      return { handoverSelect: build(LeRole.CENTRAL_ONLY, serviceUuid), ble: { centralClientUuid: serviceUuid }, mode: 'centralClient' };
    }
    return { handoverSelect: build(LeRole.CENTRAL_ONLY, undefined), ble: { centralClientUuid: offer.uuid }, mode: 'centralClient' };
  }
  if (offer?.modes.peripheralServer === true && profile.bleModes.peripheralServer) {
    return {
      handoverSelect: build(LeRole.PERIPHERAL_ONLY, serviceUuid),
      ble: { peripheralServerUuid: serviceUuid },
      mode: 'peripheralServer',
    };
  }
  const reason =
    offer === undefined
      ? 'the Handover Request offers no BLE carrier'
      : `the reader offers ${[offer.modes.peripheralServer ? 'peripheral server' : '', offer.modes.centralClient ? `central client${offer.uuid === undefined ? ' (without UUID)' : ''}` : ''].filter(Boolean).join(' and ') || 'no'} mode, the phone runs ${[profile.bleModes.peripheralServer ? 'peripheral server' : '', profile.bleModes.centralClient ? 'central client' : ''].filter(Boolean).join(' and ')}`;
  return { handoverSelect: noCarrierHandoverSelect(deviceEngagement), ble: undefined, mode: undefined, reason };
}
