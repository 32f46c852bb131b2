/**
 * Byte-level fixtures for the NFC engagement codecs.
 *
 * - Multipaz transcripts: Multipaz `MdocNfcEngagementHelperTest.kt`, `testStaticHandover` /
 *   `testNegotiatedHandover` (also test/fixtures/captures/multipaz-loopback-*.json); the HR and negotiated HS
 *   hex below is the one in that same Multipaz test.
 * - Apple Wallet HS and CC: isomdl `apdu_handover_reader.rs` (`APPLE_HS_NDEF`, `drive_apple_to_hr_ack()`).
 * - Annex D HS/HR: the `Handover` element of `ISO_18013_5_ANNEX_D_SESSION_TRANSCRIPT_BYTES` in
 *   test/fixtures/iso18013-5/annex-d-vectors.json.
 */

export function hex(text: string): Uint8Array {
  const clean = text.replace(/\s+/g, '');
  if (clean.length % 2 !== 0 || /[^0-9a-f]/i.test(clean)) throw new Error(`bad hex: ${text}`);
  return Uint8Array.from(clean.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16));
}

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Fixed EDeviceKey of the Multipaz transcripts (`MdocNfcEngagementHelperTest.kt`). */
export const MULTIPAZ_EDEVICEKEY_X = '7104f7e2c2e95ca76482c0c963d454b7e5d053c5b59ce89d00ff7c7d7ab6ff7d';
export const MULTIPAZ_EDEVICEKEY_Y = 'f442821292c2453ec67c75233ea56e1734c211ae26b259fdf232b5b3d82b1ba2';
export const MULTIPAZ_BLE_UUID = 'b3d52ac4-a1b6-4b51-a22e-78ee55ef6eb6';

/**
 * The 88-byte DeviceEngagement in both Multipaz HS messages, assembled from the key coordinates:
 * a2 {0: "1.0", 1: [1, 24(<< {1: 2, -1: 1, -2: x, -3: y} >>)]}.
 */
export const MULTIPAZ_DEVICE_ENGAGEMENT_HEX =
  'a2' +
  '00' +
  '63312e30' +
  '01' +
  '82' +
  '01' +
  'd818' +
  '584b' +
  'a4' +
  '0102' +
  '2001' +
  '215820' +
  MULTIPAZ_EDEVICEKEY_X +
  '225820' +
  MULTIPAZ_EDEVICEKEY_Y;

export const MULTIPAZ_STATIC_HS_HEX =
  '91021f487315910209616301013001046d646f6351020b616301036e666301046d646f63' +
  '1c1e580469736f2e6f72673a31383031333a646576696365656e676167656d656e746d646f63' +
  'a20063312e30018201d818584ba4010220012158207104f7e2c2e95ca76482c0c963d454b7e5' +
  'd053c5b59ce89d00ff7c7d7ab6ff7d225820f442821292c2453ec67c75233ea56e1734c211ae' +
  '26b259fdf232b5b3d82b1ba21a2015016170706c69636174696f6e2f766e642e626c7565746f' +
  '6f74682e6c652e6f6f6230021c031107b66eef55ee782ea2514bb6a1c42ad5b35c110a036973' +
  '6f2e6f72673a31383031333a6e66636e6663010301ffff0402010000';

export const MULTIPAZ_NEGOTIATED_HS_HEX =
  '91020f487315d10209616301013001046d646f631c1e580469736f2e6f72673a31383031333a646576696365656e676167656d' +
  '656e746d646f63a20063312e30018201d818584ba4010220012158207104f7e2c2e95ca76482c0c963d454b7e5d053c5b59c' +
  'e89d00ff7c7d7ab6ff7d225820f442821292c2453ec67c75233ea56e1734c211ae26b259fdf232b5b3d82b1ba25a20030161' +
  '70706c69636174696f6e2f766e642e626c7565746f6f74682e6c652e6f6f6230021c01';

export const MULTIPAZ_HR_HEX =
  '910215487215910204616301013000510206616301036e6663001c1e060a69736f2e6f72673a31383031333a726561646572' +
  '656e676167656d656e746d646f63726561646572a10063312e301a2015016170706c69636174696f6e2f766e642e626c7565' +
  '746f6f74682e6c652e6f6f6230021c031107b66eef55ee782ea2514bb6a1c42ad5b35c110a0369736f2e6f72673a31383031' +
  '333a6e66636e6663010301ffff0402010000';

export const MULTIPAZ_TP_HEX = 'd1021a5470101375726e3a6e66633a736e3a68616e646f76657200000fffff';
export const MULTIPAZ_TS_HEX = 'd1021454731375726e3a6e66633a736e3a68616e646f766572';
export const MULTIPAZ_TE_HEX = 'd10201546500';

/** One APDU exchange: command and full response (data + SW1SW2), both hex. */
export interface Exchange {
  readonly command: string;
  readonly response: string;
}

export const MULTIPAZ_STATIC_TRANSCRIPT: readonly Exchange[] = [
  { command: '00A4040007D2760000850101', response: '9000' },
  { command: '00A4000C02E103', response: '9000' },
  { command: '00B000000F', response: '000F207FFF7FFF0406E1047FFF00FF' + '9000' },
  { command: '00A4000C02E104', response: '9000' },
  { command: '00B0000002', response: '00FE' + '9000' },
  { command: '00B00002FE', response: MULTIPAZ_STATIC_HS_HEX + '9000' },
];

export const MULTIPAZ_NEGOTIATED_TRANSCRIPT: readonly Exchange[] = [
  { command: '00A4040007D2760000850101', response: '9000' },
  { command: '00A4000C02E103', response: '9000' },
  { command: '00B000000F', response: '000F207FFF7FFF0406E1047FFF0000' + '9000' },
  { command: '00A4000C02E104', response: '9000' },
  { command: '00B0000002', response: '001F' + '9000' },
  { command: '00B000021F', response: MULTIPAZ_TP_HEX + '9000' },
  { command: '00D600001B' + '0019' + MULTIPAZ_TS_HEX, response: '9000' },
  { command: '00B0000002', response: '0006' + '9000' },
  { command: '00B0000206', response: MULTIPAZ_TE_HEX + '9000' },
  { command: '00D60000AA' + '00A8' + MULTIPAZ_HR_HEX, response: '9000' },
  { command: '00B0000002', response: '00BA' + '9000' },
  { command: '00B00002BA', response: MULTIPAZ_NEGOTIATED_HS_HEX + '9000' },
];

/** Apple Wallet HS, 194 bytes; DeviceEngagement payload from offset 98 (isomdl `APPLE_HS_NDEF`). */
export const APPLE_HS_HEX =
  '91020F487315D10209616301013001046D646F631A2003016170706C69636174696F6E2F766E642E626C7565746F6F74682E6C652E6F6F62' +
  '30021C015C1E600469736F2E6F72673A31383031333A646576696365656E676167656D656E746D646F63A40063312E31018201D818584BA4' +
  '0102200121582019B9EA4460422C7D9D314B77408069DF575B36F3720307A6A036FEC9EC6F52412258206C334A641D65E06EDEB6C217EC4B' +
  'E4F5024E3A633A06775C8673A031CE9F4492058006A203F504F5';
export const APPLE_HS_DE_OFFSET = 98;

/** Apple Wallet CC (isomdl `drive_apple_to_hr_ack()`). */
export const APPLE_CC_HEX = '000F2004000400' + '0406E1040802' + '0000';

export const ANNEX_D_HS_HEX =
  '91020f487315d10209616301013001046d646f631a200c016170706c69636174696f6e2f766e642e626c7565746f6f74682e' +
  '6c652e6f6f6230081b28128b37282801021c015c1e580469736f2e6f72673a31383031333a646576696365656e676167656d' +
  '656e746d646f63a20063312e30018201d818584ba4010220012158205a88d182bce5f42efa59943f33359d2e8a968ff289d9' +
  '3e5fa444b624343167fe225820b16e8cf858ddc7690407ba61d4c338237a8cfcf3de6aa672fc60a557aa32fc67';

export const ANNEX_D_HR_HEX =
  '91022548721591020263720102110204616301013000110206616301036e6663005102046163010157001a201e016170706c' +
  '69636174696f6e2f766e642e626c7565746f6f74682e6c652e6f6f6230081b28078080bf2801021c021107c832fff6d26fa0' +
  'beb34dfcd555d4823a1c11010369736f2e6f72673a31383031333a6e66636e6663015a172b016170706c69636174696f6e2f' +
  '766e642e7766612e6e616e57030101032302001324fec9a70b97ac9684a4e326176ef5b981c5e8533e5f00298cfccbc35e70' +
  '0a6b020414';
