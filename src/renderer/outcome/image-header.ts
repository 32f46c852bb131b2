/**
 * Image sizes read from headers before anything is decoded, so a hostile portrait cannot make the screen
 * allocate gigabytes: JPEG SOFn, PNG IHDR, JPEG 2000 SIZ (ISO/IEC 15444-1 A.5.1), inside a JP2 file's
 * contiguous codestream box (I.5.4) when it is one.
 */
import type { ImageKind } from './bytes.js';

/** Portraits larger than this are refused (an ID photo is a few hundred pixels each way). */
export const MAX_IMAGE_SIDE = 4096;
export const MAX_IMAGE_PIXELS = 4096 * 4096;

export interface ImageSize {
  readonly width: number;
  readonly height: number;
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function jpegSize(bytes: Uint8Array): ImageSize | undefined {
  const data = view(bytes);
  let at = 2;
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) return undefined;
    const marker = bytes[at + 1] ?? 0;
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      at += 2;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) return undefined; // scan or end before any frame header
    const length = data.getUint16(at + 2);
    if (length < 2) return undefined;
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      if (at + 9 > bytes.length) return undefined;
      return { height: data.getUint16(at + 5), width: data.getUint16(at + 7) };
    }
    at += 2 + length;
  }
  return undefined;
}

function pngSize(bytes: Uint8Array): ImageSize | undefined {
  if (bytes.length < 24 || String.fromCharCode(...bytes.subarray(12, 16)) !== 'IHDR') return undefined;
  return { width: view(bytes).getUint32(16), height: view(bytes).getUint32(20) };
}

/** Width and height of a JPEG 2000 codestream from its SIZ marker segment (image area minus offsets). */
function codestreamSize(bytes: Uint8Array): ImageSize | undefined {
  if (bytes.length < 42 || bytes[0] !== 0xff || bytes[1] !== 0x4f || bytes[2] !== 0xff || bytes[3] !== 0x51) return undefined;
  const data = view(bytes);
  const width = data.getUint32(8) - data.getUint32(16);
  const height = data.getUint32(12) - data.getUint32(20);
  return width > 0 && height > 0 ? { width, height } : undefined;
}

/** The codestream of a JP2 file (the first `jp2c` box), or undefined when the boxes do not hold one. */
export function jp2Codestream(bytes: Uint8Array): Uint8Array | undefined {
  const data = view(bytes);
  let at = 0;
  for (let boxes = 0; boxes < 64 && at + 8 <= bytes.length; boxes++) {
    let length = data.getUint32(at);
    let header = 8;
    if (length === 1) {
      if (at + 16 > bytes.length) return undefined;
      const high = data.getUint32(at + 8);
      if (high !== 0) return undefined; // a box over 4 GB is not a portrait
      length = data.getUint32(at + 12);
      header = 16;
    } else if (length === 0) {
      length = bytes.length - at; // the last box runs to the end
    }
    if (length < header || at + length > bytes.length) return undefined;
    if (String.fromCharCode(...bytes.subarray(at + 4, at + 8)) === 'jp2c') return bytes.subarray(at + header, at + length);
    at += length;
  }
  return undefined;
}

/** The image size from its header, or undefined when the header cannot be read. */
export function imageSize(bytes: Uint8Array, kind: ImageKind): ImageSize | undefined {
  switch (kind) {
    case 'jpeg':
      return jpegSize(bytes);
    case 'png':
      return pngSize(bytes);
    case 'j2k':
      return codestreamSize(bytes);
    case 'jp2': {
      const codestream = jp2Codestream(bytes);
      return codestream === undefined ? undefined : codestreamSize(codestream);
    }
  }
}

/** Whether an image of this size may be decoded. */
export function sizeAllowed(size: ImageSize): boolean {
  return (
    size.width >= 1 &&
    size.height >= 1 &&
    size.width <= MAX_IMAGE_SIDE &&
    size.height <= MAX_IMAGE_SIDE &&
    size.width * size.height <= MAX_IMAGE_PIXELS
  );
}
