/**
 * Byte strings and images of the outcome: the accepted encodings (bytes.ts), the magic bytes, image sizes
 * read from headers before decoding and the size bound (image-header.ts), and OpenJPEG's samples to RGBA
 * for every layout the worker accepts (j2k-pixels.ts).
 */
import { describe, expect, it } from 'vitest';
import { MAX_BYTE_STRING_BYTES, base64Bytes, byteStringValue, dataUrlBytes, imageKind } from '../../../src/renderer/outcome/bytes.js';
import { imageSize, jp2Codestream, sizeAllowed } from '../../../src/renderer/outcome/image-header.js';
import { toRgba } from '../../../src/renderer/outcome/j2k-pixels.js';

const u32 = (n: number): number[] => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const u16 = (n: number): number[] => [(n >>> 8) & 255, n & 255];

function codestream(width: number, height: number): Uint8Array {
  // SOC, SIZ: Lsiz Rsiz Xsiz Ysiz XOsiz YOsiz XTsiz YTsiz XTOsiz YTOsiz Csiz (+ one component)
  return Uint8Array.from([
    0xff,
    0x4f,
    0xff,
    0x51,
    ...u16(41),
    ...u16(0),
    ...u32(width + 5),
    ...u32(height + 7),
    ...u32(5),
    ...u32(7),
    ...u32(width),
    ...u32(height),
    ...u32(0),
    ...u32(0),
    ...u16(1),
    7,
    1,
    1,
  ]);
}

function box(type: string, content: Uint8Array | number[]): number[] {
  return [...u32(8 + content.length), ...Array.from(type, (c) => c.charCodeAt(0)), ...content];
}

describe('byte strings', () => {
  const bytes = Uint8Array.from([0xfb, 0xff, 0x00, 0x10, 0x3e]);
  it('standard base64 with or without padding, base64url, whitespace ignored', () => {
    expect(base64Bytes('+/8AED4=')).toEqual(bytes);
    expect(base64Bytes('+/8AED4')).toEqual(bytes);
    expect(base64Bytes('-_8AED4')).toEqual(bytes);
    expect(base64Bytes('+/8A\nED4=')).toEqual(bytes);
  });

  it('refuses what is not base64, mixed alphabets, impossible lengths and oversize text', () => {
    for (const text of ['', 'a', 'abc$', '+_8AED4=', '====', 'a===']) expect(base64Bytes(text)).toBeUndefined();
    expect(base64Bytes('A'.repeat(Math.ceil(MAX_BYTE_STRING_BYTES / 3) * 4 + 8))).toBeUndefined();
  });

  it('data: URLs with base64 only, any media type (the bytes decide)', () => {
    expect(dataUrlBytes('data:image/png;base64,+/8AED4=')).toEqual(bytes);
    expect(dataUrlBytes('data:;base64,+/8AED4=')).toEqual(bytes);
    expect(dataUrlBytes('data:image/jpeg;name=x.jpg;base64,+/8AED4=')).toEqual(bytes);
    expect(dataUrlBytes('data:image/png,%FB%FF')).toBeUndefined();
    expect(dataUrlBytes('https://example.com/x.jpg')).toBeUndefined();
  });

  it('Buffer JSON and byte arrays; nothing else', () => {
    expect(byteStringValue({ type: 'Buffer', data: [...bytes] })).toEqual(bytes);
    expect(byteStringValue([...bytes])).toEqual(bytes);
    for (const value of [[256], [-1], [1.5], ['1'], [], { type: 'Buffer', data: [1], extra: 1 }, { data: [1] }, 12, true, null])
      expect(byteStringValue(value)).toBeUndefined();
  });

  it('images by magic bytes only', () => {
    expect(imageKind(Uint8Array.of(0xff, 0xd8, 0xff, 0xdb))).toBe('jpeg');
    expect(imageKind(Uint8Array.of(0, 0, 0, 0x0c, 0x6a, 0x50, 0x20, 0x20, 0x0d, 0x0a, 0x87, 0x0a))).toBe('jp2');
    expect(imageKind(Uint8Array.of(0xff, 0x4f, 0xff, 0x51))).toBe('j2k');
    expect(imageKind(Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a))).toBe('png');
    expect(imageKind(Uint8Array.of(0xff, 0xd8))).toBeUndefined();
    expect(imageKind(Uint8Array.from(Array.from('GIF89a', (c) => c.charCodeAt(0))))).toBeUndefined();
  });
});

describe('image sizes from headers', () => {
  it('JPEG: the first SOFn after other segments (SOF2 progressive too)', () => {
    const jpeg = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, ...u16(6), 1, 2, 3, 4, 0xff, 0xc2, ...u16(11), 8, ...u16(160), ...u16(120), 3]);
    expect(imageSize(jpeg, 'jpeg')).toEqual({ width: 120, height: 160 });
    expect(imageSize(Uint8Array.from([0xff, 0xd8, 0xff, 0xda, 0, 2]), 'jpeg')).toBeUndefined();
    expect(imageSize(Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 200]), 'jpeg')).toBeUndefined();
  });

  it('PNG IHDR', () => {
    const png = Uint8Array.from([
      0x89,
      0x50,
      0x4e,
      0x47,
      0x0d,
      0x0a,
      0x1a,
      0x0a,
      ...u32(13),
      ...Array.from('IHDR', (c) => c.charCodeAt(0)),
      ...u32(640),
      ...u32(480),
    ]);
    expect(imageSize(png, 'png')).toEqual({ width: 640, height: 480 });
  });

  it('J2K SIZ (image area minus offsets), and inside a JP2 file', () => {
    expect(imageSize(codestream(120, 160), 'j2k')).toEqual({ width: 120, height: 160 });
    const jp2 = Uint8Array.from([
      ...box('jP  ', [0x0d, 0x0a, 0x87, 0x0a]),
      ...box('ftyp', [0x6a, 0x70, 0x32, 0x20, 0, 0, 0, 0]),
      ...box('jp2c', codestream(300, 400)),
    ]);
    expect(jp2Codestream(jp2)).toEqual(codestream(300, 400));
    expect(imageSize(jp2, 'jp2')).toEqual({ width: 300, height: 400 });
    expect(jp2Codestream(Uint8Array.from([...u32(100), 0x6a, 0x70, 0x32, 0x63]))).toBeUndefined();
    expect(imageSize(codestream(120, 160).subarray(0, 30), 'j2k')).toBeUndefined();
  });

  it('the bound: ≤ 4096 each way and ≤ 4096×4096 pixels', () => {
    expect(sizeAllowed({ width: 4096, height: 4096 })).toBe(true);
    expect(sizeAllowed({ width: 4097, height: 10 })).toBe(false);
    expect(sizeAllowed({ width: 0, height: 10 })).toBe(false);
    expect(sizeAllowed(imageSize(codestream(100_000, 100_000), 'j2k') ?? { width: 0, height: 0 })).toBe(false);
  });
});

describe('JPEG 2000 samples to RGBA', () => {
  const layout = (componentCount: number, bitsPerSample = 8, isSigned = false) => ({
    width: 2,
    height: 1,
    componentCount,
    bitsPerSample,
    isSigned,
  });

  it('grey, grey + alpha, RGB, RGBA at 8 bits', () => {
    expect([...toRgba(Uint8Array.of(10, 200), layout(1))]).toEqual([10, 10, 10, 255, 200, 200, 200, 255]);
    expect([...toRgba(Uint8Array.of(10, 20, 200, 30), layout(2))]).toEqual([10, 10, 10, 20, 200, 200, 200, 30]);
    expect([...toRgba(Uint8Array.of(1, 2, 3, 4, 5, 6), layout(3))]).toEqual([1, 2, 3, 255, 4, 5, 6, 255]);
    expect([...toRgba(Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8), layout(4))]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('12-bit and 16-bit little-endian samples scaled to 8 bits; signed samples shifted', () => {
    expect([...toRgba(Uint8Array.of(0xff, 0x0f, 0x00, 0x08), layout(1, 12))]).toEqual([255, 255, 255, 255, 128, 128, 128, 255]);
    expect([...toRgba(Uint8Array.of(0xff, 0xff, 0x00, 0x00), layout(1, 16))]).toEqual([255, 255, 255, 255, 0, 0, 0, 255]);
    expect([...toRgba(Uint8Array.of(0x80, 0x7f), layout(1, 8, true))]).toEqual([0, 0, 0, 255, 255, 255, 255, 255]);
  });

  it('refuses layouts it cannot show and short buffers', () => {
    expect(() => toRgba(new Uint8Array(10), layout(5))).toThrow(/unsupported/);
    expect(() => toRgba(new Uint8Array(10), layout(1, 17))).toThrow(/unsupported/);
    expect(() => toRgba(new Uint8Array(5), layout(3))).toThrow(/expected 6/);
  });
});
