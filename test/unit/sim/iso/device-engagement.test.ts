/**
 * DeviceEngagement building and parsing, and the QR form (src/qa/sim/iso/device-engagement.ts).
 * Annex D QR DeviceEngagement conformance is in annex-d.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { CborError, cborEncode, encodeTag24 } from '../../../../src/qa/sim/iso/cbor.js';
import { encodeRawArray, encodeRawMap } from '../../../../src/qa/sim/iso/cbor-raw.js';
import { encodeCoseKey, encodeCoseKeyBytes, generateP256KeyPair, p256PublicKeyFromRaw } from '../../../../src/qa/sim/iso/cose-key.js';
import {
  CAPABILITY,
  decodeDeviceEngagement,
  deviceEngagementFromQr,
  deviceEngagementToQr,
  encodeDeviceEngagement,
} from '../../../../src/qa/sim/iso/device-engagement.js';
import { bleIdent } from '../../../../src/qa/sim/iso/session-crypto.js';
import { annexD, fromHex, hex } from './annex-d-vectors.js';

/** Apple Wallet's DeviceEngagement from its negotiated HS (isomdl `APPLE_HS_NDEF` from offset 98). */
const APPLE_DE = fromHex(
  'A40063312E31018201D818584BA40102200121582019B9EA4460422C7D9D314B77408069DF575B36F3720307A6A036FEC9EC6F5241' +
    '2258206C334A641D65E06EDEB6C217EC4BE4F5024E3A633A06775C8673A031CE9F4492058006A203F504F5',
);

const UUID = 'b3d52ac4-a1b6-4b51-a22e-78ee55ef6eb6';
const BASE64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The base64url digit whose value differs in the lowest bit (an unused bit in a final partial group). */
function flipLowestBit(digit: string): string {
  return BASE64URL_ALPHABET.charAt(BASE64URL_ALPHABET.indexOf(digit) ^ 1);
}

describe('encodeDeviceEngagement', () => {
  it('writes version 1.0, Security [1, EDeviceKeyBytes] and no methods when none are given (NFC engagement)', () => {
    const key = generateP256KeyPair().publicKey;
    const bytes = encodeDeviceEngagement({ eDeviceKey: key });
    expect(hex(bytes)).toBe(`a20063312e30018201${hex(encodeCoseKeyBytes(key))}`);
  });

  it("reproduces Apple Wallet's 2nd-edition DeviceEngagement byte-exact (version 1.1, keys 5 and 6)", () => {
    const apple = decodeDeviceEngagement(APPLE_DE);
    expect(apple.version).toBe('1.1');
    expect(apple.retrievalMethods).toEqual([]);
    expect(apple.originInfos).toEqual([]);
    expect(apple.capabilities).toEqual(
      new Map([
        [CAPABILITY.readerAuthAllSupport, true],
        [CAPABILITY.extendedRequestSupport, true],
      ]),
    );
    const rebuilt = encodeDeviceEngagement({
      eDeviceKey: apple.eDeviceKey,
      originInfos: [],
      capabilities: new Map([
        [CAPABILITY.readerAuthAllSupport, true],
        [CAPABILITY.extendedRequestSupport, true],
      ]),
    });
    expect(hex(rebuilt)).toBe(hex(APPLE_DE));
  });

  it('writes both BLE modes with one UUID and an NFC method, and reads them back', () => {
    const key = generateP256KeyPair().publicKey;
    const bytes = encodeDeviceEngagement({
      eDeviceKey: key,
      retrievalMethods: [
        {
          type: 'ble',
          peripheralServerMode: true,
          centralClientMode: true,
          peripheralServerModeUuid: UUID.toUpperCase(),
          centralClientModeUuid: UUID,
        },
        { type: 'nfc', maxCommandDataLength: 255, maxResponseDataLength: 65_535 },
      ],
    });
    const decoded = decodeDeviceEngagement(bytes);
    expect(decoded.ble).toEqual({
      type: 'ble',
      peripheralServerMode: true,
      centralClientMode: true,
      peripheralServerModeUuid: UUID,
      centralClientModeUuid: UUID,
    });
    expect(decoded.nfc).toEqual({ type: 'nfc', maxCommandDataLength: 255, maxResponseDataLength: 65_535 });
    expect(hex(decoded.bytes)).toBe(hex(bytes));
    // BLE option 10 carries the UUID big-endian (RFC 4122 order), not reversed as in the NDEF OOB record.
    expect(hex(bytes)).toContain(`0a50${UUID.replaceAll('-', '')}`);
    expect(hex(encodeCoseKey(decoded.eDeviceKey))).toBe(hex(encodeCoseKey(key)));
  });

  it('rejects a malformed BLE device address', () => {
    const key = generateP256KeyPair().publicKey;
    expect(() =>
      encodeDeviceEngagement({
        eDeviceKey: key,
        retrievalMethods: [
          { type: 'ble', peripheralServerMode: true, centralClientMode: false, peripheralServerModeDeviceAddress: new Uint8Array(5) },
        ],
      }),
    ).toThrow(/6 bytes/);
  });
});

describe('decodeDeviceEngagement', () => {
  const key = p256PublicKeyFromRaw(annexD('EPHEMERAL_DEVICE_KEY_X'), annexD('EPHEMERAL_DEVICE_KEY_Y'));
  const security = encodeRawArray([cborEncode(1), encodeCoseKeyBytes(key)]);
  const de = (...entries: Array<readonly [unknown, Uint8Array]>): Uint8Array =>
    encodeRawMap(entries.map(([k, v]) => [cborEncode(k), v] as const));

  it('keeps EDeviceKeyBytes exactly as sent, even with a non-shortest bstr header, so Ident uses the sent bytes', () => {
    const cose = encodeCoseKey(key);
    const oddKeyBytes = Uint8Array.from([0xd8, 0x18, 0x59, 0x00, cose.length, ...cose]);
    const bytes = de([0, cborEncode('1.0')], [1, encodeRawArray([cborEncode(1), oddKeyBytes])]);
    const decoded = decodeDeviceEngagement(bytes);
    expect(hex(decoded.eDeviceKeyBytes)).toBe(hex(oddKeyBytes));
    expect(hex(decoded.eDeviceKeyCose)).toBe(hex(cose));
    expect(bleIdent(decoded.eDeviceKeyBytes)).not.toEqual(bleIdent(encodeTag24(cose)));
  });

  it('keeps unknown retrieval methods (Wi-Fi Aware) opaque', () => {
    const bytes = de([0, cborEncode('1.0')], [1, security], [2, cborEncode([[3, 1, new Map([[0, 'pass']])]])]);
    expect(decodeDeviceEngagement(bytes).retrievalMethods).toEqual([
      { type: 'other', typeCode: 3, version: 1, options: new Map([[0, 'pass']]) },
    ]);
  });

  it("copies the input, so later changes to the caller's buffer do not leak in", () => {
    const input = annexD('DEVICE_ENGAGEMENT');
    const decoded = decodeDeviceEngagement(input);
    input[0] = 0;
    expect(hex(decoded.bytes)).toBe(hex(annexD('DEVICE_ENGAGEMENT')));
  });

  it.each([
    ['not a map', cborEncode([1])],
    ['no version', de([1, security])],
    ['no Security', de([0, cborEncode('1.0')])],
    ['another cipher suite', de([0, cborEncode('1.0')], [1, encodeRawArray([cborEncode(2), encodeCoseKeyBytes(key)])])],
    ['Security without a tag-24 key', de([0, cborEncode('1.0')], [1, encodeRawArray([cborEncode(1), encodeCoseKey(key)])])],
    [
      'a 15-byte BLE UUID',
      de(
        [0, cborEncode('1.0')],
        [1, security],
        [
          2,
          cborEncode([
            [
              2,
              1,
              new Map<number, unknown>([
                [0, false],
                [1, true],
                [11, new Uint8Array(15)],
              ]),
            ],
          ]),
        ],
      ),
    ],
    [
      'BLE options without mode flags',
      de([0, cborEncode('1.0')], [1, security], [2, cborEncode([[2, 1, new Map([[11, new Uint8Array(16)]])]])]),
    ],
  ])('rejects %s', (_name, bytes) => {
    expect(() => decodeDeviceEngagement(bytes)).toThrow(CborError);
  });
});

describe('QR form', () => {
  const bytes = annexD('DEVICE_ENGAGEMENT');
  const payload = Buffer.from(bytes).toString('base64url');

  it('is "mdoc:" + unpadded base64url', () => {
    expect(bytes.length % 3).not.toBe(0); // so the last base64 digit has unused bits (see the canonical test)
    expect(deviceEngagementToQr(bytes)).toBe(`mdoc:${payload}`);
  });

  it('accepts the scheme in any case (RFC 3986 §3.1) but writes lower case', () => {
    expect(deviceEngagementFromQr(`MDOC:${payload}`)).toEqual(bytes);
    expect(deviceEngagementFromQr(`mDoc:${payload}`)).toEqual(bytes);
  });

  it.each([
    ['another scheme', `mdl:${payload}`],
    ['no payload', 'mdoc:'],
    ['padding', `mdoc:${payload}==`],
    ['standard base64 characters', `mdoc:${payload.replaceAll('-', '+').replaceAll('_', '/')}+`],
    ['whitespace', `mdoc:${payload}\n`],
    ['an impossible length', `mdoc:${payload}AA`],
    ['non-canonical trailing bits', `mdoc:${payload.slice(0, -1)}${flipLowestBit(payload.slice(-1))}`],
  ])('rejects %s', (_name, text) => {
    expect(() => deviceEngagementFromQr(text)).toThrow(TypeError);
  });
});
