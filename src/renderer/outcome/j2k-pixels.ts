/**
 * OpenJPEG's decoded samples to canvas RGBA: interleaved components (1 grey, 2 grey + alpha, 3 RGB,
 * 4 RGBA), 1–16 bits per sample, unsigned or signed; samples wider than 8 bits come as 16-bit
 * little-endian words and are scaled to 8 bits.
 */

export interface SampleLayout {
  readonly width: number;
  readonly height: number;
  readonly componentCount: number;
  readonly bitsPerSample: number;
  readonly isSigned: boolean;
}

export function supportedLayout(layout: SampleLayout): boolean {
  return layout.componentCount >= 1 && layout.componentCount <= 4 && layout.bitsPerSample >= 1 && layout.bitsPerSample <= 16;
}

/** RGBA pixels (alpha 255 unless the image has an alpha component); throws on a size mismatch. */
export function toRgba(samples: Uint8Array, layout: SampleLayout): Uint8ClampedArray {
  const { width, height, componentCount: components, bitsPerSample: bits, isSigned } = layout;
  if (!supportedLayout(layout)) throw new RangeError(`unsupported JPEG 2000 layout: ${components} component(s) of ${bits} bits`);
  const pixels = width * height;
  const wide = bits > 8;
  const expected = pixels * components * (wide ? 2 : 1);
  if (samples.length < expected) throw new RangeError(`decoded buffer has ${samples.length} bytes, expected ${expected}`);
  const max = 2 ** bits - 1;
  const offset = isSigned ? 2 ** (bits - 1) : 0;
  const words = wide ? new DataView(samples.buffer, samples.byteOffset, expected) : undefined;
  const sample = (index: number): number => {
    let raw: number;
    if (words) raw = isSigned ? words.getInt16(index * 2, true) : words.getUint16(index * 2, true);
    else raw = isSigned ? ((samples[index] ?? 0) << 24) >> 24 : (samples[index] ?? 0);
    const value = Math.min(max, Math.max(0, raw + offset));
    return bits === 8 ? value : Math.round((value * 255) / max);
  };
  const out = new Uint8ClampedArray(pixels * 4);
  for (let p = 0; p < pixels; p++) {
    const base = p * components;
    const at = p * 4;
    if (components <= 2) {
      const grey = sample(base);
      out[at] = grey;
      out[at + 1] = grey;
      out[at + 2] = grey;
      out[at + 3] = components === 2 ? sample(base + 1) : 255;
    } else {
      out[at] = sample(base);
      out[at + 1] = sample(base + 1);
      out[at + 2] = sample(base + 2);
      out[at + 3] = components === 4 ? sample(base + 3) : 255;
    }
  }
  return out;
}
