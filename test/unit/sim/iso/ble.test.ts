/**
 * BLE pieces: ISO characteristic UUIDs and properties (ISO/IEC 18013-5 §8.3.3.1.1.4, as Multipaz defines them),
 * UUID byte orders, and the chunk framing (as Multipaz's BLE managers do it) with property tests.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BleFramingError,
  BleReassembler,
  characteristicSizeForMtu,
  CHUNK_FLAG_LAST,
  CHUNK_FLAG_MORE,
  chunkMessage,
} from '../../../../src/qa/sim/iso/ble-framing.js';
import {
  BLE_STATE_END,
  BLE_STATE_START,
  canonicalUuid,
  CCCD_UUID,
  CENTRAL_CLIENT_MODE,
  L2CAP_PSM_CENTRAL_CLIENT_MODE,
  L2CAP_PSM_PERIPHERAL_SERVER_MODE,
  PERIPHERAL_SERVER_MODE,
  uuidFromBytes,
  uuidFromLittleEndianBytes,
  uuidToBytes,
  uuidToLittleEndianBytes,
} from '../../../../src/qa/sim/iso/ble-uuids.js';
import { hex } from './annex-d-vectors.js';

describe('ISO GATT characteristics', () => {
  it('peripheral server mode: State 01, C2S 02, S2C 03', () => {
    expect(PERIPHERAL_SERVER_MODE).toEqual({
      state: { uuid: '00000001-a123-48ce-896b-4c76973373e6', properties: ['notify', 'writeWithoutResponse'] },
      client2Server: { uuid: '00000002-a123-48ce-896b-4c76973373e6', properties: ['writeWithoutResponse'] },
      server2Client: { uuid: '00000003-a123-48ce-896b-4c76973373e6', properties: ['notify'] },
    });
  });

  it('central client mode: State 05, C2S 06, S2C 07, Ident 08', () => {
    expect(CENTRAL_CLIENT_MODE).toEqual({
      state: { uuid: '00000005-a123-48ce-896b-4c76973373e6', properties: ['notify', 'writeWithoutResponse'] },
      client2Server: { uuid: '00000006-a123-48ce-896b-4c76973373e6', properties: ['writeWithoutResponse'] },
      server2Client: { uuid: '00000007-a123-48ce-896b-4c76973373e6', properties: ['notify'] },
      ident: { uuid: '00000008-a123-48ce-896b-4c76973373e6', properties: ['read'] },
    });
  });

  it('State values, L2CAP and CCCD UUIDs', () => {
    expect([BLE_STATE_START, BLE_STATE_END]).toEqual([0x01, 0x02]);
    expect(L2CAP_PSM_PERIPHERAL_SERVER_MODE).toBe('0000000a-a123-48ce-896b-4c76973373e6');
    expect(L2CAP_PSM_CENTRAL_CLIENT_MODE).toBe('0000000b-a123-48ce-896b-4c76973373e6');
    expect(CCCD_UUID).toBe('00002902-0000-1000-8000-00805f9b34fb');
  });
});

describe('UUID forms', () => {
  const uuid = '45efef74-2b2c-4837-a9a3-b0e1d05a6917';

  it('canonicalises dashed/undashed, any case', () => {
    expect(canonicalUuid(uuid.toUpperCase())).toBe(uuid);
    expect(canonicalUuid(uuid.replaceAll('-', ''))).toBe(uuid);
    for (const bad of [
      '',
      '45efef74-2b2c-4837-a9a3-b0e1d05a691',
      `{${uuid}}`,
      '45efef742b2c-4837-a9a3-b0e1d05a6917',
      'g5efef74-2b2c-4837-a9a3-b0e1d05a6917',
    ]) {
      expect(() => canonicalUuid(bad)).toThrow(TypeError);
    }
  });

  it('big-endian in CBOR (Annex D BLE option 11), reversed in the NDEF OOB record', () => {
    expect(hex(uuidToBytes(uuid))).toBe('45efef742b2c4837a9a3b0e1d05a6917');
    expect(uuidFromBytes(uuidToBytes(uuid))).toBe(uuid);
    // MULTIPAZ_STATIC_HS_HEX: 11 07 b66eef55ee782ea2514bb6a1c42ad5b3 = b3d52ac4-a1b6-4b51-a22e-78ee55ef6eb6
    expect(hex(uuidToLittleEndianBytes('b3d52ac4-a1b6-4b51-a22e-78ee55ef6eb6'))).toBe('b66eef55ee782ea2514bb6a1c42ad5b3');
    expect(uuidFromLittleEndianBytes(Buffer.from('b66eef55ee782ea2514bb6a1c42ad5b3', 'hex'))).toBe('b3d52ac4-a1b6-4b51-a22e-78ee55ef6eb6');
    expect(() => uuidFromBytes(new Uint8Array(15))).toThrow(/16 bytes/);
  });
});

describe('chunking', () => {
  it('characteristic size = min(MTU − 3, 512)', () => {
    expect(characteristicSizeForMtu(23)).toBe(20);
    expect(characteristicSizeForMtu(185)).toBe(182);
    expect(characteristicSizeForMtu(517)).toBe(512);
    expect(() => characteristicSizeForMtu(22)).toThrow(RangeError);
  });

  it('splits into full chunks flagged 01 and a last chunk flagged 00', () => {
    const message = Uint8Array.from({ length: 45 }, (_, i) => i);
    const chunks = chunkMessage(message, 20);
    expect(chunks.map((c) => c.length)).toEqual([20, 20, 8]);
    expect(chunks.map((c) => c[0])).toEqual([CHUNK_FLAG_MORE, CHUNK_FLAG_MORE, CHUNK_FLAG_LAST]);
    expect(hex(chunks[0] ?? new Uint8Array())).toBe('01' + hex(message.subarray(0, 19)));
  });

  it('an exact multiple of the payload size ends with a full last chunk; an empty message is one 00 chunk', () => {
    expect(chunkMessage(new Uint8Array(38), 20).map((c) => [c[0], c.length])).toEqual([
      [1, 20],
      [0, 20],
    ]);
    expect(chunkMessage(new Uint8Array(0), 20)).toEqual([Uint8Array.of(0x00)]);
  });

  it('rejects characteristic sizes outside 2..512', () => {
    for (const size of [0, 1, 513, 20.5]) expect(() => chunkMessage(new Uint8Array(1), size)).toThrow(RangeError);
    expect(() => new BleReassembler({ maxCharacteristicSize: 1 })).toThrow(RangeError);
  });
});

describe('reassembly', () => {
  it('delivers whole messages, one per last chunk, and can be reused', () => {
    const reassembler = new BleReassembler();
    expect(reassembler.push(Uint8Array.of(0x01, 1, 2))).toBeUndefined();
    expect(reassembler.inProgress).toBe(true);
    expect(reassembler.pendingBytes).toBe(2);
    expect(reassembler.push(Uint8Array.of(0x00, 3))).toEqual(Uint8Array.of(1, 2, 3));
    expect(reassembler.inProgress).toBe(false);
    expect(reassembler.push(Uint8Array.of(0x00))).toEqual(new Uint8Array(0));
  });

  it('accepts short non-final chunks (Multipaz only warns)', () => {
    const reassembler = new BleReassembler({ maxCharacteristicSize: 20 });
    reassembler.push(Uint8Array.of(0x01, 9));
    expect(reassembler.push(Uint8Array.of(0x00, 8))).toEqual(Uint8Array.of(9, 8));
  });

  it.each([
    ['flag 0x02', Uint8Array.of(0x02, 1), /invalid chunk flag 0x02/],
    ['flag 0xff', Uint8Array.of(0xff), /invalid chunk flag 0xff/],
    ['an empty value', new Uint8Array(0), /no flag byte/],
  ])('rejects %s and drops the partial message', (_name, bad, message) => {
    const reassembler = new BleReassembler();
    reassembler.push(Uint8Array.of(0x01, 7));
    expect(() => reassembler.push(bad)).toThrow(BleFramingError);
    expect(reassembler.inProgress).toBe(false);
    reassembler.push(Uint8Array.of(0x01, 7));
    expect(() => reassembler.push(bad)).toThrow(message);
  });

  it('enforces the optional characteristic and message size limits', () => {
    expect(() => new BleReassembler({ maxCharacteristicSize: 4 }).push(Uint8Array.of(0, 1, 2, 3, 4))).toThrow(
      /exceeds the characteristic size 4/,
    );
    const bounded = new BleReassembler({ maxMessageSize: 3 });
    bounded.push(Uint8Array.of(1, 1, 2));
    expect(() => bounded.push(Uint8Array.of(0, 3, 4))).toThrow(/message exceeds 3 bytes/);
    expect(bounded.pendingBytes).toBe(0);
  });

  it('property: chunk → reassemble gives back every message of a stream, chunks never exceed the size', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 2_000 }), { maxLength: 5 }), fc.integer({ min: 2, max: 512 }), (messages, size) => {
        const reassembler = new BleReassembler({ maxCharacteristicSize: size });
        const delivered: Uint8Array[] = [];
        for (const message of messages) {
          const chunks = chunkMessage(message, size);
          expect(chunks.length).toBe(Math.max(1, Math.ceil(message.length / (size - 1))));
          chunks.forEach((chunk, index) => {
            expect(chunk.length).toBeLessThanOrEqual(size);
            expect(chunk[0]).toBe(index === chunks.length - 1 ? CHUNK_FLAG_LAST : CHUNK_FLAG_MORE);
            if (index < chunks.length - 1) expect(chunk.length).toBe(size);
            const out = reassembler.push(chunk);
            if (out !== undefined) delivered.push(out);
          });
        }
        expect(delivered).toEqual(messages);
      }),
    );
  });

  it('property: any flag byte other than 00/01 is rejected', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 255 }), fc.uint8Array({ maxLength: 10 }), (flag, payload) => {
        expect(() => new BleReassembler().push(Uint8Array.of(flag, ...payload))).toThrow(BleFramingError);
      }),
    );
  });
});
