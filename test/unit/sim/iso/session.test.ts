/**
 * SessionTranscript, session encryption and session messages beyond the Annex D vectors
 * (annex-d.test.ts): QR and static-NFC transcripts, counters, failure modes, and round-trip properties.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CborError, cborEncode, encodeTag24 } from '../../../../src/qa/sim/iso/cbor.js';
import { encodeCoseKey, encodeCoseKeyBytes, generateP256KeyPair } from '../../../../src/qa/sim/iso/cose-key.js';
import { decodeDeviceEngagement, encodeDeviceEngagement } from '../../../../src/qa/sim/iso/device-engagement.js';
import {
  bleIdent,
  deriveSessionKeys,
  SessionCryptoError,
  SessionEncryption,
  sessionDecrypt,
  sessionEncrypt,
  sessionIv,
} from '../../../../src/qa/sim/iso/session-crypto.js';
import {
  decodeSessionData,
  decodeSessionEstablishment,
  encodeSessionData,
  encodeSessionEstablishment,
  SESSION_STATUS,
} from '../../../../src/qa/sim/iso/session-messages.js';
import { buildSessionTranscript, encodeHandover, parseSessionTranscriptBytes } from '../../../../src/qa/sim/iso/session-transcript.js';
import { fromHex, hex } from './annex-d-vectors.js';

function newSession(handover: Parameters<typeof buildSessionTranscript>[0]['handover'] = { type: 'qr' }) {
  const eDevice = generateP256KeyPair();
  const eReader = generateP256KeyPair();
  const deviceEngagement = encodeDeviceEngagement({ eDeviceKey: eDevice.publicKey });
  const eReaderKeyBytes = encodeCoseKeyBytes(eReader.publicKey);
  const transcript = buildSessionTranscript({ deviceEngagement, eReaderKeyBytes, handover });
  const reader = SessionEncryption.forReader({
    eReaderPrivateKey: eReader.privateKey,
    eDevicePublicKey: eDevice.publicKey,
    sessionTranscriptBytes: transcript.taggedBytes,
  });
  const device = SessionEncryption.forDevice({
    eDevicePrivateKey: eDevice.privateKey,
    eReaderPublicKey: eReader.publicKey,
    sessionTranscriptBytes: transcript.taggedBytes,
  });
  return { eDevice, eReader, deviceEngagement, eReaderKeyBytes, transcript, reader, device };
}

describe('SessionTranscript', () => {
  it('QR: [DeviceEngagementBytes, EReaderKeyBytes, null] from the raw parts', () => {
    const { deviceEngagement, eReaderKeyBytes, transcript } = newSession();
    expect(hex(transcript.bytes)).toBe(`83${hex(encodeTag24(deviceEngagement))}${hex(eReaderKeyBytes)}f6`);
    expect(hex(transcript.taggedBytes)).toBe(hex(encodeTag24(transcript.bytes)));
    const parsed = parseSessionTranscriptBytes(transcript.taggedBytes);
    expect(parsed.handover).toEqual({ type: 'qr' });
    expect(parsed.deviceEngagement).toEqual(deviceEngagement);
  });

  it('NFC static: Handover = [HS, null]; negotiated: [HS, HR]', () => {
    const hs = fromHex('d1020f4873150102030405060708090a0b0c0d');
    const hr = fromHex('d10206487215d10200');
    expect(hex(encodeHandover({ type: 'nfc', handoverSelect: hs, handoverRequest: null }))).toBe(`8253${hex(hs)}f6`);
    expect(hex(encodeHandover({ type: 'nfc', handoverSelect: hs, handoverRequest: hr }))).toBe(`8253${hex(hs)}49${hex(hr)}`);
    const { transcript } = newSession({ type: 'nfc', handoverSelect: hs, handoverRequest: null });
    expect(parseSessionTranscriptBytes(transcript.taggedBytes).handover).toEqual({
      type: 'nfc',
      handoverSelect: hs,
      handoverRequest: null,
    });
  });

  it('splices a received EReaderKeyBytes with a non-shortest header unchanged', () => {
    const cose = encodeCoseKey(generateP256KeyPair().publicKey);
    const odd = Uint8Array.from([0xd8, 0x18, 0x59, 0x00, cose.length, ...cose]);
    const de = encodeDeviceEngagement({ eDeviceKey: generateP256KeyPair().publicKey });
    const transcript = buildSessionTranscript({ deviceEngagement: de, eReaderKeyBytes: odd, handover: { type: 'qr' } });
    expect(hex(parseSessionTranscriptBytes(transcript.taggedBytes).eReaderKeyBytes ?? new Uint8Array())).toBe(hex(odd));
  });

  it('rejects malformed parts', () => {
    const de = encodeDeviceEngagement({ eDeviceKey: generateP256KeyPair().publicKey });
    const cose = encodeCoseKey(generateP256KeyPair().publicKey);
    expect(() => buildSessionTranscript({ deviceEngagement: de, eReaderKeyBytes: cose, handover: { type: 'qr' } })).toThrow(/tag 24/);
    expect(() =>
      buildSessionTranscript({ deviceEngagement: Uint8Array.of(...de, 0), eReaderKeyBytes: encodeTag24(cose), handover: { type: 'qr' } }),
    ).toThrow(/trailing/);
    expect(() => parseSessionTranscriptBytes(encodeTag24(cborEncode([1, 2])))).toThrow(CborError);
  });
});

describe('session keys, IVs and AES-GCM', () => {
  it('IV layout: 4 zero bytes, sender identifier, counter big-endian', () => {
    expect(hex(sessionIv('reader', 0x01020304))).toBe('000000000000000001020304');
    expect(hex(sessionIv('device', 0xffffffff))).toBe('0000000000000001ffffffff');
    for (const bad of [0, -1, 2 ** 32, 1.5]) expect(() => sessionIv('reader', bad)).toThrow(SessionCryptoError);
  });

  it('both sides derive the same keys; SKReader ≠ SKDevice', () => {
    const { eDevice, eReader, transcript } = newSession();
    const a = deriveSessionKeys({
      privateKey: eReader.privateKey,
      publicKey: eDevice.publicKey,
      sessionTranscriptBytes: transcript.taggedBytes,
    });
    const b = deriveSessionKeys({
      privateKey: eDevice.privateKey,
      publicKey: eReader.publicKey,
      sessionTranscriptBytes: transcript.taggedBytes,
    });
    expect(a).toEqual(b);
    expect(a.skReader).not.toEqual(a.skDevice);
  });

  it('ciphertext = plaintext length + 16-byte tag; wrong key, sender, counter or a flipped byte fail', () => {
    const key = new Uint8Array(32).fill(7);
    const sealed = sessionEncrypt(key, 'reader', 1, Uint8Array.of(1, 2, 3));
    expect(sealed).toHaveLength(19);
    expect(sessionDecrypt(key, 'reader', 1, sealed)).toEqual(Uint8Array.of(1, 2, 3));
    expect(() => sessionDecrypt(key, 'device', 1, sealed)).toThrow(SessionCryptoError);
    expect(() => sessionDecrypt(key, 'reader', 2, sealed)).toThrow(SessionCryptoError);
    expect(() => sessionDecrypt(new Uint8Array(32), 'reader', 1, sealed)).toThrow(SessionCryptoError);
    const flipped = Uint8Array.from(sealed);
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(() => sessionDecrypt(key, 'reader', 1, flipped)).toThrow(/decryption failed/);
    expect(() => sessionDecrypt(key, 'reader', 1, new Uint8Array(15))).toThrow(/shorter than the GCM tag/);
    expect(() => sessionEncrypt(new Uint8Array(16), 'reader', 1, new Uint8Array())).toThrow(/32 bytes/);
  });

  it('SessionEncryption: independent counters per direction, starting at 1', () => {
    const { reader, device } = newSession();
    const m1 = reader.encrypt(Uint8Array.of(1));
    const m2 = reader.encrypt(Uint8Array.of(2));
    expect(reader.nextSendCounter).toBe(3);
    expect(device.decrypt(m1)).toEqual(Uint8Array.of(1));
    expect(device.decrypt(m2)).toEqual(Uint8Array.of(2));
    const r1 = device.encrypt(Uint8Array.of(9));
    expect(device.nextSendCounter).toBe(2);
    expect(device.nextReceiveCounter).toBe(3);
    expect(reader.decrypt(r1)).toEqual(Uint8Array.of(9));
    expect(reader.nextReceiveCounter).toBe(2);
  });

  it('SessionEncryption: a replayed, reordered or own message fails and does not advance the counter', () => {
    const { reader, device } = newSession();
    const m1 = reader.encrypt(Uint8Array.of(1));
    const m2 = reader.encrypt(Uint8Array.of(2));
    expect(() => device.decrypt(m2)).toThrow(SessionCryptoError); // out of order
    expect(device.nextReceiveCounter).toBe(1);
    expect(device.decrypt(m1)).toEqual(Uint8Array.of(1));
    expect(() => device.decrypt(m1)).toThrow(SessionCryptoError); // replay
    expect(() => reader.decrypt(m1)).toThrow(SessionCryptoError); // reflected back to its sender
  });

  it('property: any message sequence round-trips in both directions', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.uint8Array({ maxLength: 4_096 })), { maxLength: 8 }), (exchange) => {
        const { reader, device } = newSession();
        for (const [fromReader, plaintext] of exchange) {
          const [sender, receiver] = fromReader ? [reader, device] : [device, reader];
          const sealed = sender.encrypt(plaintext);
          expect(sealed.length).toBe(plaintext.length + 16);
          expect(receiver.decrypt(sealed)).toEqual(plaintext);
        }
      }),
      { numRuns: 30 },
    );
  });

  it('property: sessionEncrypt/sessionDecrypt round-trip for any key, sender and counter', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.constantFrom('reader' as const, 'device' as const),
        fc.integer({ min: 1, max: 0xffffffff }),
        fc.uint8Array({ maxLength: 1_024 }),
        (key, sender, counter, plaintext) => {
          expect(sessionDecrypt(key, sender, counter, sessionEncrypt(key, sender, counter, plaintext))).toEqual(plaintext);
        },
      ),
    );
  });

  it('BLE Ident is 16 bytes and depends on the exact EDeviceKeyBytes', () => {
    const { deviceEngagement } = newSession();
    const decoded = decodeDeviceEngagement(deviceEngagement);
    const ident = bleIdent(decoded.eDeviceKeyBytes);
    expect(ident).toHaveLength(16);
    expect(bleIdent(decoded.eDeviceKeyCose)).not.toEqual(ident); // IKM is the tag-24 item, not the bare COSE_Key
  });
});

describe('session messages', () => {
  it('SessionEstablishment: encode → decode keeps the raw EReaderKeyBytes and data', () => {
    const { eReaderKeyBytes, eReader } = newSession();
    const bytes = encodeSessionEstablishment({ eReaderKeyBytes, data: Uint8Array.of(1, 2, 3) });
    expect(hex(bytes)).toBe(`a26a655265616465724b6579${hex(eReaderKeyBytes)}6464617461 43010203`.replaceAll(' ', ''));
    const decoded = decodeSessionEstablishment(bytes);
    expect(decoded.eReaderKeyBytes).toEqual(eReaderKeyBytes);
    expect(decoded.eReaderKeyCose).toEqual(encodeCoseKey(eReader.publicKey));
    expect(decoded.data).toEqual(Uint8Array.of(1, 2, 3));
  });

  it.each([
    ['no eReaderKey', cborEncode(new Map([['data', Uint8Array.of(1)]]))],
    ['no data', cborEncode(new Map([['eReaderKey', encodeTag24(encodeCoseKey(generateP256KeyPair().publicKey))]]))],
    [
      'eReaderKey not tag 24',
      cborEncode(
        new Map<string, unknown>([
          ['eReaderKey', encodeCoseKey(generateP256KeyPair().publicKey)],
          ['data', Uint8Array.of(1)],
        ]),
      ),
    ],
    [
      'data as text',
      cborEncode(
        new Map<string, unknown>([
          ['eReaderKey', encodeTag24(encodeCoseKey(generateP256KeyPair().publicKey))],
          ['data', 'x'],
        ]),
      ),
    ],
    ['an array', cborEncode([])],
  ])('SessionEstablishment rejects %s', (_name, bytes) => {
    expect(() => decodeSessionEstablishment(bytes)).toThrow(CborError);
  });

  it('SessionData: data, status, or both (Multipaz sends the response with status 20)', () => {
    expect(decodeSessionData(encodeSessionData({ data: Uint8Array.of(5), status: SESSION_STATUS.sessionTermination }))).toEqual({
      data: Uint8Array.of(5),
      status: 20,
    });
    expect(hex(encodeSessionData({ data: Uint8Array.of(5), status: 20 }))).toBe('a26464617461410566737461747573 14'.replaceAll(' ', ''));
    expect(decodeSessionData(encodeSessionData({ status: SESSION_STATUS.sessionEncryptionError }))).toEqual({ status: 10 });
    expect(decodeSessionData(encodeSessionData({ status: SESSION_STATUS.cborDecodingError }))).toEqual({ status: 11 });
    expect(decodeSessionData(cborEncode(new Map()))).toEqual({});
    expect(
      decodeSessionData(
        cborEncode(
          new Map<string, unknown>([
            ['status', 99],
            ['extra', 1],
          ]),
        ),
      ),
    ).toEqual({ status: 99 });
    expect(() => encodeSessionData({})).toThrow(TypeError);
    expect(() => encodeSessionData({ status: -1 })).toThrow(CborError);
    expect(() => decodeSessionData(cborEncode(new Map([['data', 'text']])))).toThrow(CborError);
    expect(() => decodeSessionData(cborEncode(new Map([['status', -3]])))).toThrow(CborError);
  });
});
