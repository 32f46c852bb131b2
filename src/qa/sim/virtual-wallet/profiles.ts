/**
 * Phone profiles: how a wallet engages and which BLE modes it runs (reference §1.3, §1.5, §1.7, §7.1, §7.2).
 *
 * - `android` (Google Wallet / Multipaz-like): NFC **static** handover with a read-only Type 4 Tag, the
 *   Multipaz CC (MLe/MLc/max file 7FFF) and HS layout (DeviceEngagement, BLE OOB, NFC carrier records);
 *   DeviceEngagement "1.0"; BLE **both** modes on one shared UUID (HS LE role 03 = both, central
 *   preferred, as Multipaz's static HS; QR DE options 0/1 true with the same UUID in 10 and 11).
 * - `iphone` (Apple Wallet-like): NFC **negotiated** handover (TNEP) with Apple's CC (MLe/MLc 0400, file
 *   0802) and Tp (WT 0x14 → 16 ms, N_wait 0F, max 0800), an HS that is "not ready" on the first NLEN read
 *   after the HR (the reader must poll), HS records in Apple's order (BLE OOB, then DeviceEngagement);
 *   BLE **mdoc central client mode only**, HS LE role 01 without a UUID (the reader's HR UUID is used);
 *   DeviceEngagement "1.1" with key 5 (empty OriginInfos) and key 6 (capabilities {3: true, 4: true}).
 */
import { APPLE_WALLET_CAPABILITY_CONTAINER, multipazCapabilityContainer, type CapabilityContainer, type HandoverMode } from '../iso/apdu.js';
import { CAPABILITY } from '../iso/device-engagement.js';
import { MULTIPAZ_NFC_CARRIER, type HandoverSelectRecordKind, type NfcCarrierConfig } from '../iso/handover.js';
import { APPLE_WALLET_SERVICE_PARAMETER, MULTIPAZ_SERVICE_PARAMETER, type ServiceParameter } from '../iso/tnep.js';

export type PhoneProfileName = 'android' | 'iphone';

export interface PhoneProfile {
  readonly name: string;
  /** NFC engagement style (CC write access FF = static, 00 = negotiated; reference §1.3). */
  readonly handover: HandoverMode;
  /** mdoc BLE modes the phone runs (ISO names them after the mdoc's role, reference §2.1). */
  readonly bleModes: { readonly peripheralServer: boolean; readonly centralClient: boolean };
  /** DeviceEngagement version and the 2nd-edition keys 5/6 (written only for "1.1"; reference §3.2). */
  readonly deviceEngagementVersion: '1.0' | '1.1';
  readonly capabilities?: ReadonlyMap<number, unknown>;
  readonly capabilityContainer: CapabilityContainer;
  /** Tp of the negotiated handover (ignored for static). */
  readonly serviceParameter: ServiceParameter;
  /** Order of the HS records after `Hs`. */
  readonly handoverSelectRecordOrder: readonly HandoverSelectRecordKind[];
  /** NFC carrier record in the static HS (Multipaz offers NFC data retrieval next to BLE). */
  readonly nfcCarrier?: NfcCarrierConfig;
  /** NLEN reads answered 0 after the HR before the HS appears (Apple: 1; reference §1.4 step 4.4). */
  readonly handoverSelectNotReadyReads: number;
  /** ATT MTU the phone asks for / accepts (Android 517, iOS 185). */
  readonly mtu: number;
  /** BLE local name while advertising. */
  readonly localName: string;
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
};

export const PHONE_PROFILES: Readonly<Record<PhoneProfileName, PhoneProfile>> = { android: ANDROID_PROFILE, iphone: IPHONE_PROFILE };

/** A profile by name, or a custom one (e.g. `{...ANDROID_PROFILE, handover: 'negotiated', capabilityContainer: …}`). */
export function resolvePhoneProfile(profile: PhoneProfileName | PhoneProfile): PhoneProfile {
  if (typeof profile !== 'string') {
    if (!profile.bleModes.peripheralServer && !profile.bleModes.centralClient) throw new TypeError(`profile ${profile.name} runs no BLE mode`);
    return profile;
  }
  const found = (PHONE_PROFILES as Partial<Record<string, PhoneProfile>>)[profile];
  if (found === undefined) throw new TypeError(`unknown phone profile ${JSON.stringify(profile)} (android or iphone)`);
  return found;
}
