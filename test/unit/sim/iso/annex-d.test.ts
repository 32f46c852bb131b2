/**
 * Conformance against the ISO 18013-5 Annex D vectors (test/fixtures/iso18013-5): key derivation, both
 * directions of session encryption byte-exact, the deviceMac, BLE Ident, the QR DeviceEngagement, the
 * termination message and the SessionTranscriptBytes rebuilt from raw parts.
 */
import { describe, expect, it } from 'vitest';
import { cborDecode, EmbeddedCbor } from '../../../../src/qa/sim/iso/cbor.js';
import {
  decodeCoseKeyBytes,
  encodeCoseKey,
  encodeCoseKeyBytes,
  p256PrivateKeyFromRaw,
  p256PublicKeyFromRaw,
} from '../../../../src/qa/sim/iso/cose-key.js';
import {
  decodeDeviceEngagement,
  deviceEngagementFromQr,
  deviceEngagementToQr,
  encodeDeviceEngagement,
} from '../../../../src/qa/sim/iso/device-engagement.js';
import { readDeviceSigned, verifyDeviceMac } from '../../../../src/qa/sim/iso/device-mac.js';
import {
  bleIdent,
  deriveEMacKey,
  deriveSessionKeys,
  ecdhSharedSecret,
  SessionEncryption,
  sessionDecrypt,
  sessionEncrypt,
  sessionIv,
  sha256,
} from '../../../../src/qa/sim/iso/session-crypto.js';
import {
  decodeSessionData,
  decodeSessionEstablishment,
  encodeSessionData,
  encodeSessionEstablishment,
  SESSION_STATUS,
} from '../../../../src/qa/sim/iso/session-messages.js';
import { buildSessionTranscript, parseSessionTranscriptBytes } from '../../../../src/qa/sim/iso/session-transcript.js';
import { annexD, hex } from './annex-d-vectors.js';

const eReaderPrivate = p256PrivateKeyFromRaw(
  annexD('EPHEMERAL_READER_KEY_D'),
  annexD('EPHEMERAL_READER_KEY_X'),
  annexD('EPHEMERAL_READER_KEY_Y'),
);
const eDevicePrivate = p256PrivateKeyFromRaw(
  annexD('EPHEMERAL_DEVICE_KEY_D'),
  annexD('EPHEMERAL_DEVICE_KEY_X'),
  annexD('EPHEMERAL_DEVICE_KEY_Y'),
);
const sDevicePrivate = p256PrivateKeyFromRaw(annexD('STATIC_DEVICE_KEY_D'), annexD('STATIC_DEVICE_KEY_X'), annexD('STATIC_DEVICE_KEY_Y'));
const eReaderPublic = p256PublicKeyFromRaw(annexD('EPHEMERAL_READER_KEY_X'), annexD('EPHEMERAL_READER_KEY_Y'));
const eDevicePublic = p256PublicKeyFromRaw(annexD('EPHEMERAL_DEVICE_KEY_X'), annexD('EPHEMERAL_DEVICE_KEY_Y'));
const sDevicePublic = p256PublicKeyFromRaw(annexD('STATIC_DEVICE_KEY_X'), annexD('STATIC_DEVICE_KEY_Y'));
const transcriptBytes = annexD('SESSION_TRANSCRIPT_BYTES');

/**
 * Intermediate values recomputed from the vectors with node:crypto. Z_AB and SKReader are also in isomdl's
 * test/definitions/session/{shared_secret,reader_session_key}.cbor; the MAC tag is the one in DEVICE_RESPONSE.
 */
const EXPECTED = {
  zab: '6423502f843d8cda01fbd9fa46cb397534a740ab1ec3d1076fbcb12e1dca2589',
  salt: 'f823ac566e22b2106c9b7c02fadc7482e559a1de8a809b56c828779e6d67570e',
  skReader: '58d277d8719e62a1561d248f403f477e9e6c37bf5d5fc5126f8f4c727c22dfc9',
  skDevice: '81d170e07fbdac93c1a676242c2576124a380d87bb73ed9ce4834de2272cf409',
  ecdhStatic: '78d98a86fbbb82895874bfafcc161ba69f9b77662172c74b3b0d4643276cf991',
  eMacKey: 'dc2b9566fdaaae3c06baa40993cd0451aeba15e7677ef5305f6531f3533c35dd',
  deviceMacTag: 'e99521a85ad7891b806a07f8b5388a332d92c189a7bf293ee1f543405ae6824d',
  bleIdent: '8da0b7a85919f05673054ea996bbd124',
};

describe('Annex D key derivation', () => {
  it('Z_AB is the same from both sides', () => {
    expect(hex(ecdhSharedSecret(eReaderPrivate, eDevicePublic))).toBe(EXPECTED.zab);
    expect(hex(ecdhSharedSecret(eDevicePrivate, eReaderPublic))).toBe(EXPECTED.zab);
  });

  it('the HKDF salt is SHA-256 of the tag-24 SessionTranscriptBytes', () => {
    expect(hex(transcriptBytes.subarray(0, 2))).toBe('d818');
    expect(hex(sha256(transcriptBytes))).toBe(EXPECTED.salt);
  });

  it('SKReader and SKDevice match, derived by the reader and by the mdoc', () => {
    const reader = deriveSessionKeys({ privateKey: eReaderPrivate, publicKey: eDevicePublic, sessionTranscriptBytes: transcriptBytes });
    const device = deriveSessionKeys({ privateKey: eDevicePrivate, publicKey: eReaderPublic, sessionTranscriptBytes: transcriptBytes });
    expect(hex(reader.skReader)).toBe(EXPECTED.skReader);
    expect(hex(reader.skDevice)).toBe(EXPECTED.skDevice);
    expect(device).toEqual(reader);
  });

  it('first IVs of each direction', () => {
    expect(hex(sessionIv('reader', 1))).toBe('000000000000000000000001');
    expect(hex(sessionIv('device', 1))).toBe('000000000000000100000001');
  });
});

describe('Annex D session messages', () => {
  const keys = deriveSessionKeys({ privateKey: eReaderPrivate, publicKey: eDevicePublic, sessionTranscriptBytes: transcriptBytes });

  it('SessionEstablishment: data decrypts with SKReader to DEVICE_REQUEST byte-exact, and re-encrypts to the same ciphertext', () => {
    const establishment = decodeSessionEstablishment(annexD('SESSION_ESTABLISHMENT'));
    expect(hex(establishment.eReaderKeyCose)).toBe(hex(encodeCoseKey(eReaderPublic)));
    const request = sessionDecrypt(keys.skReader, 'reader', 1, establishment.data);
    expect(hex(request)).toBe(hex(annexD('DEVICE_REQUEST')));
    expect(hex(sessionEncrypt(keys.skReader, 'reader', 1, request))).toBe(hex(establishment.data));
  });

  it('SessionEstablishment re-encodes byte-exact from its raw eReaderKey and data', () => {
    const establishment = decodeSessionEstablishment(annexD('SESSION_ESTABLISHMENT'));
    expect(hex(establishment.eReaderKeyBytes)).toBe(hex(encodeCoseKeyBytes(eReaderPublic)));
    expect(hex(encodeSessionEstablishment(establishment))).toBe(hex(annexD('SESSION_ESTABLISHMENT')));
  });

  it('SessionData: data decrypts with SKDevice to DEVICE_RESPONSE byte-exact, and re-encrypts to the same ciphertext', () => {
    const sessionData = decodeSessionData(annexD('SESSION_DATA'));
    expect(sessionData.status).toBeUndefined();
    const data = sessionData.data;
    if (data === undefined) throw new Error('SESSION_DATA has no data');
    const response = sessionDecrypt(keys.skDevice, 'device', 1, data);
    expect(hex(response)).toBe(hex(annexD('DEVICE_RESPONSE')));
    expect(hex(sessionEncrypt(keys.skDevice, 'device', 1, response))).toBe(hex(data));
    expect(hex(encodeSessionData({ data }))).toBe(hex(annexD('SESSION_DATA')));
  });

  it('SessionEncryption objects of both roles reproduce the exchange', () => {
    const reader = SessionEncryption.forReader({
      eReaderPrivateKey: eReaderPrivate,
      eDevicePublicKey: eDevicePublic,
      sessionTranscriptBytes: transcriptBytes,
    });
    const device = SessionEncryption.forDevice({
      eDevicePrivateKey: eDevicePrivate,
      eReaderPublicKey: eReaderPublic,
      sessionTranscriptBytes: transcriptBytes,
    });
    const establishment = decodeSessionEstablishment(annexD('SESSION_ESTABLISHMENT'));
    expect(hex(reader.encrypt(annexD('DEVICE_REQUEST')))).toBe(hex(establishment.data));
    expect(hex(device.decrypt(establishment.data))).toBe(hex(annexD('DEVICE_REQUEST')));
    const sessionDataCipher = decodeSessionData(annexD('SESSION_DATA')).data ?? new Uint8Array(0);
    expect(hex(device.encrypt(annexD('DEVICE_RESPONSE')))).toBe(hex(sessionDataCipher));
    expect(hex(reader.decrypt(sessionDataCipher))).toBe(hex(annexD('DEVICE_RESPONSE')));
    expect([reader.nextSendCounter, reader.nextReceiveCounter, device.nextSendCounter, device.nextReceiveCounter]).toEqual([2, 2, 2, 2]);
  });

  it('SESSION_TERMINATION decodes to status 20 and re-encodes byte-exact', () => {
    expect(decodeSessionData(annexD('SESSION_TERMINATION'))).toEqual({ status: SESSION_STATUS.sessionTermination });
    expect(hex(encodeSessionData({ status: 20 }))).toBe('a16673746174757314');
  });
});

describe('Annex D SessionTranscriptBytes', () => {
  it('rebuilt from its raw DeviceEngagement, EReaderKeyBytes and NFC Handover reproduces the vector byte-exact', () => {
    const parsed = parseSessionTranscriptBytes(transcriptBytes);
    const handover = parsed.handover;
    if (parsed.deviceEngagement === null || parsed.eReaderKeyBytes === null || handover?.type !== 'nfc') {
      throw new Error('unexpected Annex D SessionTranscript shape');
    }
    // The NFC negotiated shape: DE 88 bytes, EReaderKey COSE 75 bytes, HS 195 bytes, HR 205 bytes.
    expect(parsed.deviceEngagement.length).toBe(88);
    expect(handover.handoverSelect.length).toBe(195);
    expect(handover.handoverRequest?.length).toBe(205);
    const rebuilt = buildSessionTranscript({
      deviceEngagement: Uint8Array.from(parsed.deviceEngagement),
      eReaderKeyBytes: encodeCoseKeyBytes(eReaderPublic),
      handover: {
        type: 'nfc',
        handoverSelect: Uint8Array.from(handover.handoverSelect),
        handoverRequest: Uint8Array.from(handover.handoverRequest ?? []),
      },
    });
    expect(hex(rebuilt.taggedBytes)).toBe(hex(transcriptBytes));
    expect(hex(rebuilt.bytes)).toBe(hex(parsed.bytes));
  });

  it('its DeviceEngagement (from the NFC HS) has only keys 0 and 1 and carries EDeviceKey', () => {
    const parsed = parseSessionTranscriptBytes(transcriptBytes);
    const engagement = decodeDeviceEngagement(parsed.deviceEngagement ?? new Uint8Array(0));
    expect(engagement.version).toBe('1.0');
    expect(engagement.retrievalMethods).toEqual([]);
    expect(hex(engagement.eDeviceKeyBytes)).toBe(hex(annexD('E_DEVICE_KEY_BYTES')));
  });
});

describe('Annex D deviceMac', () => {
  const eMacKeyReaderSide = deriveEMacKey({
    privateKey: eReaderPrivate,
    publicKey: sDevicePublic,
    sessionTranscriptBytes: transcriptBytes,
  });
  const [document] = readDeviceSigned(annexD('DEVICE_RESPONSE'));
  if (document?.deviceMac === undefined) throw new Error('Annex D DeviceResponse has no deviceMac');
  const sessionTranscript = parseSessionTranscriptBytes(transcriptBytes).bytes;
  const input = {
    sessionTranscript,
    docType: document.docType,
    deviceNameSpacesBytes: document.deviceNameSpacesBytes,
    eMacKey: eMacKeyReaderSide,
  };

  it('EMacKey matches from both sides (ECDH(SDeviceKey, EReaderKey))', () => {
    expect(hex(ecdhSharedSecret(eReaderPrivate, sDevicePublic))).toBe(EXPECTED.ecdhStatic);
    expect(hex(eMacKeyReaderSide)).toBe(EXPECTED.eMacKey);
    const deviceSide = deriveEMacKey({ privateKey: sDevicePrivate, publicKey: eReaderPublic, sessionTranscriptBytes: transcriptBytes });
    expect(hex(deviceSide)).toBe(EXPECTED.eMacKey);
  });

  it('the deviceMac tag of DEVICE_RESPONSE verifies', () => {
    expect(document.docType).toBe('org.iso.18013.5.1.mDL');
    expect(hex(document.deviceNameSpacesBytes)).toBe('d81841a0');
    expect(hex(document.deviceMac ?? new Uint8Array(0))).toBe(`8443a10105a0f65820${EXPECTED.deviceMacTag}`);
    expect(verifyDeviceMac({ ...input, deviceMac: document.deviceMac ?? new Uint8Array(0) })).toEqual({ valid: true });
  });

  it('a flipped byte in the tag, the transcript, the docType or the key fails', () => {
    const mac = Uint8Array.from(document.deviceMac ?? []);
    mac[mac.length - 1] = (mac[mac.length - 1] ?? 0) ^ 0x01;
    expect(verifyDeviceMac({ ...input, deviceMac: mac }).valid).toBe(false);
    const transcript = Uint8Array.from(sessionTranscript);
    transcript[transcript.length - 1] = (transcript[transcript.length - 1] ?? 0) ^ 0x01;
    const good = document.deviceMac ?? new Uint8Array(0);
    expect(verifyDeviceMac({ ...input, sessionTranscript: transcript, deviceMac: good }).valid).toBe(false);
    expect(verifyDeviceMac({ ...input, docType: 'org.iso.18013.5.1.mDM', deviceMac: good }).valid).toBe(false);
    const key = Uint8Array.from(eMacKeyReaderSide);
    key[0] = (key[0] ?? 0) ^ 0x80;
    expect(verifyDeviceMac({ ...input, eMacKey: key, deviceMac: good }).valid).toBe(false);
  });
});

describe('Annex D BLE Ident and QR DeviceEngagement', () => {
  it('BLE Ident of EDeviceKeyBytes is 8da0b7a85919f05673054ea996bbd124', () => {
    expect(hex(bleIdent(annexD('E_DEVICE_KEY_BYTES')))).toBe(EXPECTED.bleIdent);
  });

  it('the QR DeviceEngagement decodes: version 1.0, EDeviceKey, BLE central client mode with its UUID', () => {
    const engagement = decodeDeviceEngagement(annexD('DEVICE_ENGAGEMENT'));
    expect(engagement.version).toBe('1.0');
    expect(engagement.cipherSuite).toBe(1);
    expect(hex(engagement.eDeviceKeyBytes)).toBe(hex(annexD('E_DEVICE_KEY_BYTES')));
    expect(hex(encodeCoseKey(engagement.eDeviceKey))).toBe(hex(encodeCoseKey(eDevicePublic)));
    expect(engagement.retrievalMethods).toEqual([
      { type: 'ble', peripheralServerMode: false, centralClientMode: true, centralClientModeUuid: '45efef74-2b2c-4837-a9a3-b0e1d05a6917' },
    ]);
    expect(engagement.ble?.centralClientModeUuid).toBe('45efef74-2b2c-4837-a9a3-b0e1d05a6917');
    expect(bleIdent(engagement.eDeviceKeyBytes)).toEqual(bleIdent(annexD('E_DEVICE_KEY_BYTES')));
  });

  it('the QR DeviceEngagement round-trips byte-exact through our encoder and through the QR text', () => {
    const original = annexD('DEVICE_ENGAGEMENT');
    const engagement = decodeDeviceEngagement(original);
    const reencoded = encodeDeviceEngagement({
      eDeviceKey: engagement.eDeviceKey,
      version: engagement.version,
      retrievalMethods: engagement.ble === undefined ? [] : [engagement.ble],
    });
    expect(hex(reencoded)).toBe(hex(original));
    const qr = deviceEngagementToQr(original);
    expect(qr.startsWith('mdoc:')).toBe(true);
    expect(qr).not.toContain('=');
    expect(hex(deviceEngagementFromQr(qr))).toBe(hex(original));
  });

  it('E_DEVICE_KEY_BYTES is the tag-24 COSE_Key of EDeviceKey', () => {
    const decoded = cborDecode(annexD('E_DEVICE_KEY_BYTES'));
    expect(decoded).toBeInstanceOf(EmbeddedCbor);
    expect(hex(encodeCoseKeyBytes(eDevicePrivate))).toBe(hex(annexD('E_DEVICE_KEY_BYTES')));
    expect(hex(encodeCoseKey(decodeCoseKeyBytes(annexD('E_DEVICE_KEY_BYTES')).key))).toBe(hex(encodeCoseKey(eDevicePublic)));
  });
});
