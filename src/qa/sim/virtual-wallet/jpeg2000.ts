/**
 * JPEG 2000 for the virtual phone's portrait (ISO/IEC 18013-5 §7.2.2 allows JPEG and JPEG 2000 portraits):
 * lossless encoding with OpenJPEG built to WebAssembly (`@cornerstonejs/codec-openjpeg`, the Node build with
 * the encoder), and the JP2 file wrapper around the codestream (ISO/IEC 15444-1 Annex I), because a real
 * issuer writes a JP2 file rather than a bare codestream. Decoding is here too, for the tests that check
 * the pixels a kiosk would see.
 *
 * The codec is a CommonJS Emscripten factory: loaded once per process through createRequire, its
 * `[INFO]` lines silenced (they would interleave with the CLI's output).
 */
import { createRequire } from 'node:module';

/** The part of the codec's embind API we use (names from its README and prototype). */
interface FrameInfo {
  width: number;
  height: number;
  bitsPerSample: number;
  componentCount: number;
  isSigned: boolean;
  isUsingColorTransform?: boolean;
}
interface J2kEncoder {
  getDecodedBuffer(frameInfo: FrameInfo): Uint8Array;
  encode(): void;
  getEncodedBuffer(): Uint8Array;
  delete(): void;
}
interface J2kDecoder {
  getEncodedBuffer(length: number): Uint8Array;
  decode(): void;
  getDecodedBuffer(): Uint8Array;
  getFrameInfo(): FrameInfo;
  delete(): void;
}
interface OpenJpegModule {
  J2KEncoder: new () => J2kEncoder;
  J2KDecoder: new () => J2kDecoder;
}
type OpenJpegFactory = (options: { print: (text: string) => void; printErr: (text: string) => void }) => Promise<OpenJpegModule>;

let codec: Promise<OpenJpegModule> | undefined;

function openJpeg(): Promise<OpenJpegModule> {
  if (codec === undefined) {
    const factory = createRequire(import.meta.url)('@cornerstonejs/codec-openjpeg/wasmjs') as OpenJpegFactory;
    const quiet = (): void => undefined;
    codec = factory({ print: quiet, printErr: quiet });
  }
  return codec;
}

/** Interleaved 8-bit samples, `components` per pixel. */
export interface RawImage {
  readonly width: number;
  readonly height: number;
  readonly components: 1 | 3 | 4;
  readonly data: Uint8Array;
}

/** A lossless JPEG 2000 codestream (starts FF 4F FF 51: SOC then SIZ). */
export async function encodeJ2kCodestream(image: RawImage): Promise<Uint8Array> {
  if (image.data.length !== image.width * image.height * image.components) throw new RangeError('pixel data does not match the image size');
  // OpenJPEG's default of 5 wavelet decompositions needs at least 32 pixels each way.
  if (image.width < 32 || image.height < 32)
    throw new RangeError(`JPEG 2000 portrait must be at least 32×32, got ${image.width}×${image.height}`);
  const lib = await openJpeg();
  const encoder = new lib.J2KEncoder();
  try {
    encoder
      .getDecodedBuffer({
        width: image.width,
        height: image.height,
        bitsPerSample: 8,
        componentCount: image.components,
        isSigned: false,
        isUsingColorTransform: image.components >= 3,
      })
      .set(image.data);
    encoder.encode();
    return Uint8Array.from(encoder.getEncodedBuffer());
  } finally {
    encoder.delete();
  }
}

function box(type: string, ...contents: Uint8Array[]): Uint8Array {
  const length = 8 + contents.reduce((sum, part) => sum + part.length, 0);
  const out = new Uint8Array(length);
  const view = new DataView(out.buffer);
  view.setUint32(0, length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  let at = 8;
  for (const part of contents) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function u32(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

/** The 12-byte JP2 signature box (ISO/IEC 15444-1 I.5.1). */
export const JP2_SIGNATURE = Uint8Array.of(0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20, 0x0d, 0x0a, 0x87, 0x0a);

/**
 * A JP2 file around a codestream: signature, File Type (brand 'jp2 '), JP2 Header (Image Header + Colour
 * Specification, enumerated sRGB 16 or greyscale 17) and the Contiguous Codestream box (I.5.2–I.5.4).
 */
export function wrapJp2(codestream: Uint8Array, image: Pick<RawImage, 'width' | 'height' | 'components'>): Uint8Array {
  const ascii = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));
  const ihdr = new Uint8Array(14);
  const view = new DataView(ihdr.buffer);
  view.setUint32(0, image.height);
  view.setUint32(4, image.width);
  view.setUint16(8, image.components);
  ihdr[10] = 7; // bits per component - 1, unsigned
  ihdr[11] = 7; // compression type: always 7 (wavelet)
  ihdr[12] = 0; // colourspace known
  ihdr[13] = 0; // no intellectual property box
  const colr = Uint8Array.of(1, 0, 0, ...u32(image.components === 1 ? 17 : 16)); // method 1: enumerated
  const ftyp = box('ftyp', ascii('jp2 '), u32(0), ascii('jp2 '));
  return concat(JP2_SIGNATURE, ftyp, box('jp2h', box('ihdr', ihdr), box('colr', colr)), box('jp2c', codestream));
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The codestream of a JP2 file (its `jp2c` box), or the input when it already is a codestream. */
export function jpeg2000Codestream(bytes: Uint8Array): Uint8Array {
  if (bytes[0] === 0xff && bytes[1] === 0x4f) return bytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at + 8 <= bytes.length) {
    let length = view.getUint32(at);
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    let header = 8;
    if (length === 1) {
      if (at + 16 > bytes.length) break;
      length = Number(view.getBigUint64(at + 8));
      header = 16;
    } else if (length === 0) {
      length = bytes.length - at;
    }
    if (length < header || at + length > bytes.length) break;
    if (type === 'jp2c') return bytes.subarray(at + header, at + length);
    at += length;
  }
  throw new TypeError('not a JPEG 2000 file: no codestream box');
}

/** Decodes a JP2 file or codestream to interleaved 8-bit samples (tests: what the kiosk should show). */
export async function decodeJpeg2000(bytes: Uint8Array): Promise<RawImage> {
  const codestream = jpeg2000Codestream(bytes);
  const lib = await openJpeg();
  const decoder = new lib.J2KDecoder();
  try {
    decoder.getEncodedBuffer(codestream.length).set(codestream);
    decoder.decode();
    const info = decoder.getFrameInfo();
    if (info.bitsPerSample !== 8 || (info.componentCount !== 1 && info.componentCount !== 3 && info.componentCount !== 4)) {
      throw new TypeError(`unexpected JPEG 2000 image: ${info.componentCount} component(s) of ${info.bitsPerSample} bits`);
    }
    return { width: info.width, height: info.height, components: info.componentCount, data: Uint8Array.from(decoder.getDecodedBuffer()) };
  } finally {
    decoder.delete();
  }
}
