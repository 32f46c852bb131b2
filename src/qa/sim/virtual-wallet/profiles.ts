/**
 * Phone profiles: how a wallet engages and which BLE modes it runs. docs/wallet-profiles.md lists every
 * profile with the public captures it rests on (`test/fixtures/captures/`).
 *
 * Wallet profiles (each value cites its capture in wallet-captures.ts or here):
 * - `apple-wallet`: negotiated handover, Apple CC/Tp, 3 "not ready" NLEN reads, HS in Apple's record order,
 *   central client only without a UUID of its own (LE role 01), DeviceEngagement "1.1" with keys 5/6.
 * - `google-wallet`: negotiated handover, Multipaz-sized CC, Tp WT 0x10, HS ready at once, picks mdoc
 *   central client mode but writes **its own** UUID in the HS (LE role 01 + UUID), DeviceEngagement "1.0".
 * - `samsung-wallet`: static handover, HS records Hs/BLE/DeviceEngagement, central client only with one
 *   UUID, plus Appearance and Local Name AD structures, DeviceEngagement "1.0".
 * - `multipaz`: static handover exactly as Multipaz's `testStaticHandover` (both BLE modes on one UUID,
 *   LE role 03, and an NFC carrier record), deviceMac.
 *
 * Generic profiles, kept as they were (existing tests, the CLI, the soak and the QA page use them; they are
 * not aliases because their behaviour differs in small pinned ways, e.g. `iphone` answers one "not ready"
 * read where Apple's capture shows three):
 * - `android`: behaves like `multipaz` (static, Multipaz CC and HS layout, both modes) with deviceSignature.
 * - `iphone`: like `apple-wallet` with a single "not ready" read.
 */
import {
  APPLE_WALLET_CAPABILITY_CONTAINER,
  multipazCapabilityContainer,
  type CapabilityContainer,
  type HandoverMode,
} from '../iso/apdu.js';
import { CAPABILITY } from '../iso/device-engagement.js';
import { MULTIPAZ_NFC_CARRIER, type AdStructure, type HandoverSelectRecordKind, type NfcCarrierConfig } from '../iso/handover.js';
import { APPLE_WALLET_SERVICE_PARAMETER, MULTIPAZ_SERVICE_PARAMETER, type ServiceParameter } from '../iso/tnep.js';
import type { DeviceAuthMethod } from './holder-session.js';
import {
  APPLE_WALLET_HS_NOT_READY_READS,
  COMMERCIAL_WALLET_BLE_START_DELAY_MS,
  GOOGLE_WALLET_CAPABILITY_CONTAINER,
  GOOGLE_WALLET_HS_NOT_READY_READS,
  GOOGLE_WALLET_SERVICE_PARAMETER,
  MULTIPAZ_BLE_START_DELAY_MS,
  SAMSUNG_WALLET_CAPABILITY_CONTAINER,
  SAMSUNG_WALLET_EXTRA_AD,
  SAMSUNG_WALLET_LOCAL_NAME,
} from './wallet-captures.js';

/** Every profile name, generic ones first (CLI help, the QA page, the soak's mix and zod schemas use this). */
export const PHONE_PROFILE_NAMES = ['android', 'iphone', 'apple-wallet', 'google-wallet', 'samsung-wallet', 'multipaz'] as const;
export type PhoneProfileName = (typeof PHONE_PROFILE_NAMES)[number];

export function isPhoneProfileName(value: string): value is PhoneProfileName {
  return (PHONE_PROFILE_NAMES as readonly string[]).includes(value);
}

export interface PhoneProfile {
  readonly name: string;
  /** NFC engagement style (CC write access FF = static, 00 = negotiated, as Multipaz's and isomdl's holders set it). */
  readonly handover: HandoverMode;
  /** mdoc BLE modes the phone runs (ISO/IEC 18013-5 §8.3.3.1.1 names them after the mdoc's role). */
  readonly bleModes: { readonly peripheralServer: boolean; readonly centralClient: boolean };
  /** DeviceEngagement version and the 2nd-edition keys 5/6 (written only for "1.1", as in Apple's captured HS). */
  readonly deviceEngagementVersion: '1.0' | '1.1';
  readonly capabilities?: ReadonlyMap<number, unknown>;
  readonly capabilityContainer: CapabilityContainer;
  /** Tp of the negotiated handover (ignored for static). */
  readonly serviceParameter: ServiceParameter;
  /** Order of the HS records after `Hs`. */
  readonly handoverSelectRecordOrder: readonly HandoverSelectRecordKind[];
  /** NFC carrier record in the static HS (Multipaz offers NFC data retrieval next to BLE). */
  readonly nfcCarrier?: NfcCarrierConfig;
  /** NLEN reads answered 0 after the HR before the HS appears (Apple Wallet: 3, isomdl `apple_wallet_hs_polls_then_done`). */
  readonly handoverSelectNotReadyReads: number;
  /** ATT MTU the phone asks for / accepts (Android 517, iOS 185). */
  readonly mtu: number;
  /** BLE local name while advertising. */
  readonly localName: string;
  /**
   * Negotiated handover, mdoc central client mode picked: `reader` = HS without a UUID, the phone scans for
   * the HR's UUID (Apple, Multipaz; ISO/IEC 18013-5 §8.3.3.1.1.2); `own` = the HS carries the phone's own UUID and the phone scans
   * for that one (Google Wallet). Default `reader`.
   */
  readonly negotiatedCentralClientUuid?: 'reader' | 'own';
  /** AD structures the BLE OOB record carries after LE role and UUID (Samsung's Appearance and name). */
  readonly extraAdStructures?: readonly AdStructure[];
  /** Device authentication when the behaviour does not choose one (default `signature`). */
  readonly deviceAuth?: DeviceAuthMethod;
  /** Wait between the end of the engagement and the BLE start, ms (default 0). */
  readonly bleStartDelayMs?: number;
  /** One line for help texts and the QA page. */
  readonly summary: string;
}

export const ANDROID_PROFILE: PhoneProfile = {
  name: 'android',
  handover: 'static',
  bleModes: { peripheralServer: true, centralClient: true },
  deviceEngagementVersion: '1.0',
  capabilityContainer: multipazCapabilityContainer('static'),
  serviceParameter: MULTIPAZ_SERVICE_PARAMETER,
  handoverSelectRecordOrder: ['deviceEngagement', 'ble', 'nfc'],
  nfcCarrier: MULTIPAZ_NFC_CARRIER,
  handoverSelectNotReadyReads: 0,
  mtu: 517,
  localName: 'Virtual Android',
  summary: 'generic Android: static handover, both BLE modes',
};

export const IPHONE_PROFILE: PhoneProfile = {
  name: 'iphone',
  handover: 'negotiated',
  bleModes: { peripheralServer: false, centralClient: true },
  deviceEngagementVersion: '1.1',
  capabilities: new Map<number, unknown>([
    [CAPABILITY.readerAuthAllSupport, true],
    [CAPABILITY.extendedRequestSupport, true],
  ]),
  capabilityContainer: APPLE_WALLET_CAPABILITY_CONTAINER,
  serviceParameter: APPLE_WALLET_SERVICE_PARAMETER,
  handoverSelectRecordOrder: ['ble', 'deviceEngagement', 'nfc'],
  handoverSelectNotReadyReads: 1,
  mtu: 185,
  localName: 'Virtual iPhone',
  summary: 'generic iPhone: negotiated handover, central client only',
};

/** Apple Wallet (iPhone IDs), from isomdl's Pixel-reader → Apple-Wallet device log (wallet-captures.ts). */
export const APPLE_WALLET_PROFILE: PhoneProfile = {
  name: 'apple-wallet',
  // CC write access 00 and a Tp record first: negotiated (isomdl `drive_apple_to_hr_ack()`).
  handover: 'negotiated',
  // HS LE role 01 with no UUID AD (`APPLE_HS_NDEF`): mdoc central client mode only. QR: Apple Wallet shows
  // no QR for in-person presentation; if asked for one the virtual phone offers the same single mode (chosen).
  bleModes: { peripheralServer: false, centralClient: true },
  // `APPLE_HS_NDEF` DeviceEngagement `a4 00 "1.1" … 05 80 06 a2 03 f5 04 f5` (test
  // `apple_hs_preserves_raw_device_engagement_bytes`).
  deviceEngagementVersion: '1.1',
  capabilities: new Map<number, unknown>([
    [CAPABILITY.readerAuthAllSupport, true],
    [CAPABILITY.extendedRequestSupport, true],
  ]),
  // CC `000F2004000400 0406E1040802 0000`: MLe/MLc 0x0400, max file 0x0802 (`drive_apple_to_hr_ack()`).
  capabilityContainer: APPLE_WALLET_CAPABILITY_CONTAINER,
  // Tp `…00 14 0F 0800`: WT 0x14 → 16 ms, N_wait 0F, max NDEF 0x0800 (`drive_apple_to_hr_ack()`).
  serviceParameter: APPLE_WALLET_SERVICE_PARAMETER,
  // `APPLE_HS_NDEF`: Hs (one ac "0"), BLE OOB, then DeviceEngagement; no NFC carrier.
  handoverSelectRecordOrder: ['ble', 'deviceEngagement', 'nfc'],
  // Three NLEN reads of 0000 before 00C2 (`apple_wallet_hs_polls_then_done`).
  handoverSelectNotReadyReads: APPLE_WALLET_HS_NOT_READY_READS,
  negotiatedCentralClientUuid: 'reader',
  // Chosen: no capture shows the device-auth kind; Apple's keys live in the Secure Enclave (P-256 signing).
  deviceAuth: 'signature',
  // Chosen: iOS's usual ATT MTU (the `iphone` value); no capture shows it.
  mtu: 185,
  localName: 'Apple Wallet',
  bleStartDelayMs: COMMERCIAL_WALLET_BLE_START_DELAY_MS,
  summary: 'Apple Wallet: negotiated, 3 not-ready polls, central client, DE 1.1',
};

/** Google Wallet on Android, from isomdl's `google_wallet` manual-session transcript (wallet-captures.ts). */
export const GOOGLE_WALLET_PROFILE: PhoneProfile = {
  name: 'google-wallet',
  // CC write access 00, Tp first (`google_wallet` rapdus 3 and 6).
  handover: 'negotiated',
  // Captured HS: LE role 01 (central client) although the HR offered both. Google's offline guide lists
  // BLE with the reader in either role ("In-person Acceptance of Digital Credentials (Offline)",
  // developers.google.com/wallet/identity/verify/accepting-ids-from-wallet-offline), so the profile runs
  // both: peripheral server mode when a reader offers only that, and both in a QR (chosen).
  bleModes: { peripheralServer: true, centralClient: true },
  // HS DeviceEngagement `a2 00 "1.0" 01 […]` (`google_wallet` rapdu 12).
  deviceEngagementVersion: '1.0',
  capabilityContainer: GOOGLE_WALLET_CAPABILITY_CONTAINER,
  serviceParameter: GOOGLE_WALLET_SERVICE_PARAMETER,
  // Captured HS: Hs (one ac "0"), DeviceEngagement, BLE OOB; no NFC carrier although the HR offered one.
  handoverSelectRecordOrder: ['deviceEngagement', 'ble', 'nfc'],
  handoverSelectNotReadyReads: GOOGLE_WALLET_HS_NOT_READY_READS,
  // Captured HS BLE OOB `02 1C 01 | 11 07 <UUID>`: central client mode WITH a UUID; isomdl's reader uses the
  // HS UUID before the HR's (`ndef_handover_reader.rs`, "using Hr UUID as fallback"), and the session worked.
  negotiatedCentralClientUuid: 'own',
  // Chosen: no capture shows it; Android Keystore device keys sign (ECDSA).
  deviceAuth: 'signature',
  // Chosen: Android asks for MTU 515/517 (Multipaz's `requestMtu(515)`; identity-credential's `GattClient.java`
  // explains the 515).
  mtu: 517,
  localName: 'Google Wallet',
  bleStartDelayMs: COMMERCIAL_WALLET_BLE_START_DELAY_MS,
  summary: 'Google Wallet: negotiated, HS with its own UUID (central client)',
};

/** Samsung Wallet, from isomdl's `samsung_wallet` transcript (wallet-captures.ts). */
export const SAMSUNG_WALLET_PROFILE: PhoneProfile = {
  name: 'samsung-wallet',
  // CC write access FF, HS in the NDEF file: static (`samsung_wallet` rapdus 3 and 6).
  handover: 'static',
  // HS LE role 01 + one UUID: mdoc central client mode only. QR: not captured; the same mode (chosen).
  bleModes: { peripheralServer: false, centralClient: true },
  deviceEngagementVersion: '1.0',
  capabilityContainer: SAMSUNG_WALLET_CAPABILITY_CONTAINER,
  // Unused (static); Multipaz's values keep the type total.
  serviceParameter: MULTIPAZ_SERVICE_PARAMETER,
  // Captured HS: Hs (one ac "0"), BLE OOB, then DeviceEngagement; no NFC carrier.
  handoverSelectRecordOrder: ['ble', 'deviceEngagement', 'nfc'],
  handoverSelectNotReadyReads: 0,
  extraAdStructures: SAMSUNG_WALLET_EXTRA_AD,
  // Chosen: no capture shows it; Android Keystore device keys sign (ECDSA).
  deviceAuth: 'signature',
  mtu: 517,
  // The name Samsung writes in its HS Local Name AD.
  localName: SAMSUNG_WALLET_LOCAL_NAME,
  bleStartDelayMs: COMMERCIAL_WALLET_BLE_START_DELAY_MS,
  summary: 'Samsung Wallet: static, central client only, name in the HS',
};

/** Multipaz's holder (`MdocNfcEngagementHelper.kt`; `MdocNfcEngagementHelperTest.testStaticHandover`). */
export const MULTIPAZ_PROFILE: PhoneProfile = {
  name: 'multipaz',
  // Static: `testStaticHandover` (CC write access FF). Multipaz also does negotiated handover when the app
  // sets a picker; its wallet's static setup is the one that offers both modes and NFC (chosen).
  handover: 'static',
  // Static HS BLE OOB `02 1C 03 | 11 07 <UUID>`: both modes, one shared UUID (`MdocConnectionMethodBle.kt`:
  // "UUIDs for both BLE modes must be the same").
  bleModes: { peripheralServer: true, centralClient: true },
  // `EngagementGenerator(eDeviceKey, ENGAGEMENT_VERSION_1_0)` in the helper.
  deviceEngagementVersion: '1.0',
  // `processSelectFile()`: `000F 20 7FFF 7FFF 0406 E104 7FFF 00 FF` (static).
  capabilityContainer: multipazCapabilityContainer('static'),
  // The helper's Tp (WT 0, N_wait 15, max 0xFFFF), used if the profile is made negotiated.
  serviceParameter: MULTIPAZ_SERVICE_PARAMETER,
  // `testStaticHandover` HS: Hs (ac "0", ac "nfc"), DeviceEngagement, BLE OOB, NFC carrier `01|0301ffff|0402010000`.
  handoverSelectRecordOrder: ['deviceEngagement', 'ble', 'nfc'],
  nfcCarrier: MULTIPAZ_NFC_CARRIER,
  handoverSelectNotReadyReads: 0,
  negotiatedCentralClientUuid: 'reader',
  // Chosen: Multipaz answers with deviceMac when the credential holds a key-agreement key
  // (`mdocPresentment.kt` `setDeviceNamespacesMac`; its test app's `presentmentPreferSignatureToKeyAgreement`
  // starts false). The library default (`SimplePresentmentSource`) prefers signatures; MAC is chosen so one
  // profile exercises deviceMac by default.
  deviceAuth: 'mac',
  mtu: 517,
  localName: 'Multipaz',
  // `MdocNdefService.kt`: transports start from the handover-complete callback.
  bleStartDelayMs: MULTIPAZ_BLE_START_DELAY_MS,
  summary: 'Multipaz: static, both BLE modes + NFC carrier, deviceMac',
};

export const PHONE_PROFILES: Readonly<Record<PhoneProfileName, PhoneProfile>> = {
  android: ANDROID_PROFILE,
  iphone: IPHONE_PROFILE,
  'apple-wallet': APPLE_WALLET_PROFILE,
  'google-wallet': GOOGLE_WALLET_PROFILE,
  'samsung-wallet': SAMSUNG_WALLET_PROFILE,
  multipaz: MULTIPAZ_PROFILE,
};

/** `name  summary` lines for help texts. */
export function describePhoneProfiles(indent = ''): string {
  const width = Math.max(...PHONE_PROFILE_NAMES.map((n) => n.length));
  return PHONE_PROFILE_NAMES.map((name) => `${indent}${name.padEnd(width)}  ${PHONE_PROFILES[name].summary}`).join('\n');
}

/** A profile by name, or a custom one (e.g. `{...ANDROID_PROFILE, handover: 'negotiated', capabilityContainer: …}`). */
export function resolvePhoneProfile(profile: PhoneProfileName | PhoneProfile): PhoneProfile {
  if (typeof profile !== 'string') {
    if (!profile.bleModes.peripheralServer && !profile.bleModes.centralClient)
      throw new TypeError(`profile ${profile.name} runs no BLE mode`);
    return profile;
  }
  if (!isPhoneProfileName(profile))
    throw new TypeError(`unknown phone profile ${JSON.stringify(profile)} (${PHONE_PROFILE_NAMES.join(', ')})`);
  return PHONE_PROFILES[profile];
}
