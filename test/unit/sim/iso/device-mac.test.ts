/**
 * deviceMac creation and verification (src/qa/sim/iso/device-mac.ts) beyond the Annex D tag (annex-d.test.ts).
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { cborEncode, EmbeddedCbor, encodeByteString, encodeTag24, Tag } from '../../../../src/qa/sim/iso/cbor.js';
import { encodeRawArray } from '../../../../src/qa/sim/iso/cbor-raw.js';
import { encodeCoseKeyBytes, generateP256KeyPair } from '../../../../src/qa/sim/iso/cose-key.js';
import { encodeDeviceEngagement } from '../../../../src/qa/sim/iso/device-engagement.js';
import {
  createDeviceMac,
  deviceAuthenticationBytes,
  macStructure,
  readDeviceSigned,
  verifyDeviceMac,
} from '../../../../src/qa/sim/iso/device-mac.js';
import { deriveEMacKey } from '../../../../src/qa/sim/iso/session-crypto.js';
import { buildSessionTranscript } from '../../../../src/qa/sim/iso/session-transcript.js';
import { fromHex, hex } from './annex-d-vectors.js';

const MDL = 'org.iso.18013.5.1.mDL';

function setup() {
  const sDevice = generateP256KeyPair();
  const eReader = generateP256KeyPair();
  const transcript = buildSessionTranscript({
    deviceEngagement: encodeDeviceEngagement({ eDeviceKey: generateP256KeyPair().publicKey }),
    eReaderKeyBytes: encodeCoseKeyBytes(eReader.publicKey),
    handover: { type: 'qr' },
  });
  // Holder side: SDeviceKey private + EReaderKey public; reader side: the reverse (same key).
  const eMacKey = deriveEMacKey({
    privateKey: sDevice.privateKey,
    publicKey: eReader.publicKey,
    sessionTranscriptBytes: transcript.taggedBytes,
  });
  const readerKey = deriveEMacKey({
    privateKey: eReader.privateKey,
    publicKey: sDevice.publicKey,
    sessionTranscriptBytes: transcript.taggedBytes,
  });
  const deviceNameSpacesBytes = encodeTag24(cborEncode(new Map()));
  return { eMacKey, readerKey, input: { sessionTranscript: transcript.bytes, docType: MDL, deviceNameSpacesBytes } };
}

/** COSE_Mac0 with chosen parts, tag computed correctly over the given protected bytes. */
function mac0(
  protectedHeader: Uint8Array,
  key: Uint8Array,
  input: ReturnType<typeof setup>['input'],
  options: { payload?: Uint8Array; unprotected?: unknown } = {},
): Uint8Array {
  const structure = macStructure(protectedHeader, deviceAuthenticationBytes(input));
  const tag = Uint8Array.from(createHmac('sha256', key).update(structure).digest());
  return encodeRawArray([
    encodeByteString(protectedHeader),
    cborEncode(options.unprotected ?? new Map()),
    options.payload === undefined ? cborEncode(null) : encodeByteString(options.payload),
    encodeByteString(tag),
  ]);
}

describe('DeviceAuthenticationBytes and MAC_structure', () => {
  it('splice the raw SessionTranscript and DeviceNameSpacesBytes', () => {
    const sessionTranscript = fromHex('83f6f6f6');
    const names = fromHex('d81841a0');
    const bytes = deviceAuthenticationBytes({ sessionTranscript, docType: MDL, deviceNameSpacesBytes: names });
    const inner = `84 74 ${hex(Buffer.from('DeviceAuthentication'))} 83f6f6f6 75 ${hex(Buffer.from(MDL))} d81841a0`.replaceAll(' ', '');
    expect(hex(bytes)).toBe(`d818 58${(inner.length / 2).toString(16)} ${inner}`.replaceAll(' ', ''));
  });

  it('MAC_structure has four elements with an empty external_aad (RFC 9052 §6.3)', () => {
    expect(hex(macStructure(fromHex('a10105'), fromHex('01')))).toBe('84644d41433043a101054041 01'.replaceAll(' ', ''));
  });
});

describe('createDeviceMac / verifyDeviceMac', () => {
  it("round-trips: [h'a10105', {}, null, tag], verified with the reader-side EMacKey", () => {
    const { eMacKey, readerKey, input } = setup();
    expect(readerKey).toEqual(eMacKey);
    const deviceMac = createDeviceMac({ ...input, eMacKey });
    expect(hex(deviceMac.subarray(0, 9))).toBe('8443a10105a0f65820');
    expect(deviceMac).toHaveLength(9 + 32);
    expect(verifyDeviceMac({ ...input, eMacKey: readerKey, deviceMac })).toEqual({ valid: true });
  });

  it('accepts a tag-17 COSE_Mac0 and extra protected headers, using the received protected bytes', () => {
    const { eMacKey, input } = setup();
    const untagged = mac0(
      cborEncode(
        new Map<number, unknown>([
          [1, 5],
          [4, Uint8Array.of(1)],
        ]),
      ),
      eMacKey,
      input,
    );
    expect(verifyDeviceMac({ ...input, eMacKey, deviceMac: untagged })).toEqual({ valid: true });
    expect(verifyDeviceMac({ ...input, eMacKey, deviceMac: Uint8Array.of(0xd1, ...untagged) })).toEqual({ valid: true });
  });

  it('detects a change in the namespaces, the docType or the transcript', () => {
    const { eMacKey, input } = setup();
    const deviceMac = createDeviceMac({ ...input, eMacKey });
    const otherNames = encodeTag24(cborEncode(new Map([['org.iso.18013.5.1', new Map([['x', 1]])]])));
    expect(verifyDeviceMac({ ...input, deviceNameSpacesBytes: otherNames, eMacKey, deviceMac })).toEqual({
      valid: false,
      reason: 'deviceMac tag mismatch',
    });
    expect(verifyDeviceMac({ ...input, docType: 'other', eMacKey, deviceMac }).valid).toBe(false);
    expect(verifyDeviceMac({ ...setup().input, eMacKey, deviceMac }).valid).toBe(false);
  });

  it.each([
    ['not CBOR', () => fromHex('84'), /not CBOR/],
    ['another tag', (m: Uint8Array) => Uint8Array.of(0xd2, ...m), /tag 18/],
    ['a 3-element array', () => cborEncode([Uint8Array.of(), new Map(), null]), /4-element/],
    [
      'alg -7 (what @owf/mdoc 0.6.0 writes)',
      (_m: Uint8Array, k: Uint8Array, i: ReturnType<typeof setup>['input']) => mac0(fromHex('a10126'), k, i),
      /alg must be 5.*got -7/,
    ],
    ['no alg', (_m: Uint8Array, k: Uint8Array, i: ReturnType<typeof setup>['input']) => mac0(fromHex('a0'), k, i), /alg must be 5/],
    [
      'an attached payload',
      (_m: Uint8Array, k: Uint8Array, i: ReturnType<typeof setup>['input']) => mac0(fromHex('a10105'), k, i, { payload: Uint8Array.of(1) }),
      /payload must be nil/,
    ],
    [
      'a text unprotected header',
      (_m: Uint8Array, k: Uint8Array, i: ReturnType<typeof setup>['input']) => mac0(fromHex('a10105'), k, i, { unprotected: 'x' }),
      /unprotected header must be a map/,
    ],
    ['a short tag', () => cborEncode([fromHex('a10105'), new Map(), null, new Uint8Array(16)]), /tag must be 32 bytes/],
  ])('rejects %s', (_name, build, reason) => {
    const { eMacKey, input } = setup();
    const good = createDeviceMac({ ...input, eMacKey });
    const verdict = verifyDeviceMac({ ...input, eMacKey, deviceMac: build(good, eMacKey, input) });
    expect(verdict.valid).toBe(false);
    expect(verdict.valid ? '' : verdict.reason).toMatch(reason);
  });
});

describe('readDeviceSigned', () => {
  it('returns the raw inputs of each document, and [] without documents', () => {
    const names = encodeTag24(cborEncode(new Map()));
    const response = cborEncode(
      new Map<string, unknown>([
        ['version', '1.0'],
        [
          'documents',
          [
            new Map<string, unknown>([
              ['docType', MDL],
              ['issuerSigned', new Map()],
              [
                'deviceSigned',
                new Map<string, unknown>([
                  ['nameSpaces', new EmbeddedCbor(cborEncode(new Map()))],
                  ['deviceAuth', new Map([['deviceMac', new Tag(0, 99)]])],
                ]),
              ],
            ]),
          ],
        ],
        ['status', 0],
      ]),
    );
    const [document] = readDeviceSigned(response);
    expect(document?.docType).toBe(MDL);
    expect(hex(document?.deviceNameSpacesBytes ?? new Uint8Array())).toBe(hex(names));
    expect(hex(document?.deviceMac ?? new Uint8Array())).toBe('d86300');
    expect(document?.deviceSignature).toBeUndefined();
    expect(
      readDeviceSigned(
        cborEncode(
          new Map<string, unknown>([
            ['version', '1.0'],
            ['status', 10],
          ]),
        ),
      ),
    ).toEqual([]);
  });
});
