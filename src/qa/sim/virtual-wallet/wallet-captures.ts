/**
 * Values the wallet profiles reproduce, each read from a public capture (never copied code). Sources:
 *
 * - isomdl = github.com/spruceid/isomdl @ fcb49d15ad9d54afa028a12183ee7fab1e46a5dc,
 *   `src/definitions/device_engagement/nfc/apdu_handover_reader.rs`, unit tests replaying real phones:
 *   `apple_wallet_hs_polls_then_done` / `drive_apple_to_hr_ack()` / `APPLE_HS_NDEF` (Apple Wallet,
 *   added in fb19e7b), `google_wallet` (a4f92cc), `samsung_wallet` (cc3fb5a), `multipaz_static` (6c6f03a),
 *   `multipaz_negotiated`.
 * - Multipaz = github.com/openwallet-foundation/multipaz @ af670c68e15fe85087409aa4c8a96944ac8f160d,
 *   `multipaz/src/commonMain/kotlin/org/multipaz/mdoc/nfc/MdocNfcEngagementHelper.kt` (the holder's CC,
 *   Tp and HS) and `multipaz/src/commonTest/.../mdoc/nfc/MdocNfcEngagementHelperTest.kt`
 *   (`testStaticHandover`, `testNegotiatedHandover`; Multipaz `multipaz/src/commonTest/kotlin/org/multipaz/mdoc/nfc/MdocNfcEngagementHelperTest.kt` @ af670c68).
 *
 * The Apple Wallet and Multipaz CC/Tp constants live in iso/apdu.ts and iso/tnep.ts (same captures).
 */
import { multipazCapabilityContainer, type CapabilityContainer } from '../iso/apdu.js';
import { utf8 } from '../iso/byte-cursor.js';
import { AdType, type AdStructure } from '../iso/handover.js';
import { TNEP_COMM_MODE_SINGLE_RESPONSE, TNEP_HANDOVER_SERVICE, TNEP_VERSION_1_0, type ServiceParameter } from '../iso/tnep.js';

/**
 * Google Wallet CC: `000F 20 7FFF 7FFF 0406 E104 7FFF 00 00` — MLe/MLc/max file 7FFF like Multipaz, write
 * access 00 = negotiated handover (isomdl test `google_wallet`, rapdu 3): byte for byte the Multipaz
 * holder's negotiated CC, so it is built by the same function.
 */
export const GOOGLE_WALLET_CAPABILITY_CONTAINER: CapabilityContainer = multipazCapabilityContainer('negotiated');

/**
 * Samsung Wallet CC: `000F 20 7FFF 7FFF 0406 E104 7FFF 00 FF` — read-only = static handover (isomdl test
 * `samsung_wallet`, rapdu 3); the Multipaz holder's static CC.
 */
export const SAMSUNG_WALLET_CAPABILITY_CONTAINER: CapabilityContainer = multipazCapabilityContainer('static');

/**
 * Google Wallet Tp: `D1021A5470 10 13 "urn:nfc:sn:handover" 00 10 0F FFFF` — full-length record, WT 0x10
 * (t_wait 8 ms), N_wait 0x0F, max NDEF 0xFFFF (isomdl test `google_wallet`, rapdu 6; isomdl
 * `ndef_handover_reader.rs` asserts `tnep_t_wait_ms(0x10) == 8 // Google Wallet`).
 */
export const GOOGLE_WALLET_SERVICE_PARAMETER: ServiceParameter = {
  tnepVersion: TNEP_VERSION_1_0,
  serviceName: TNEP_HANDOVER_SERVICE,
  communicationMode: TNEP_COMM_MODE_SINGLE_RESPONSE,
  minimumWaitingTime: 0x10,
  maxWaitingTimeExtensions: 0x0f,
  maxNdefMessageSize: 0xffff,
};

/**
 * The AD structures Samsung Wallet's static HS adds after LE role and UUID: `03 19 0040` (Appearance, the
 * two bytes exactly as captured) and `0F 09 "Samsung Wallet"` (Complete Local Name) (isomdl test
 * `samsung_wallet`, rapdu 6).
 */
export const SAMSUNG_WALLET_LOCAL_NAME = 'Samsung Wallet';
export const SAMSUNG_WALLET_EXTRA_AD: readonly AdStructure[] = [
  { type: AdType.APPEARANCE, data: Uint8Array.of(0x00, 0x40) },
  { type: AdType.COMPLETE_LOCAL_NAME, data: utf8(SAMSUNG_WALLET_LOCAL_NAME) },
];

/**
 * NLEN reads answered 0000 after the HR write before the HS shows. Apple: 3 — the device log replayed in
 * `apple_wallet_hs_polls_then_done` answers three `0000` before `00C2`. Google: 0 — `google_wallet` reads
 * `00CC` at the first NLEN read after the HR ack. Multipaz: 0 (its helper builds the HS while handling the
 * HR write, `MdocNfcEngagementHelper.ndefTransactHandleHandoverRequest()`).
 */
export const APPLE_WALLET_HS_NOT_READY_READS = 3;
export const GOOGLE_WALLET_HS_NOT_READY_READS = 0;

/**
 * Delay between the end of the engagement (HS read to its end, or QR shown) and the phone's BLE start
 * (advertising and/or scanning). No public capture times this. Multipaz starts its transports from the
 * handover-complete callback (`MdocNdefService.kt` `onHandoverComplete` → `listenOnMethods`): 0 ms. For the
 * commercial wallets, 25 ms was chosen: enough for the reader to be advertising or scanning first, as
 * at a real counter, without slowing tests or the soak.
 */
export const MULTIPAZ_BLE_START_DELAY_MS = 0;
export const COMMERCIAL_WALLET_BLE_START_DELAY_MS = 25;
