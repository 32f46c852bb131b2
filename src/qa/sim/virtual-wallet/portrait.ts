/**
 * Images of the test mDL, drawn here and encoded as baseline JPEG with jpeg-js: the `portrait` (a simple
 * face: hair, face, eyes, brows, nose, mouth, shoulders on a plain background) and the
 * `signature_usual_mark` (a scribble). ISO/IEC 18013-5 has both as byte strings (§7.2.1) holding JPEG or
 * JPEG 2000 images (18013-5 §7.2.2 for the portrait).
 * The pixels are deterministic, so the bytes are the same in every run. The same face is also available as
 * a lossless JPEG 2000 JP2 file (`drawPortraitJpeg2000`), for kiosks that must show JPEG 2000 portraits.
 */
import jpeg from 'jpeg-js';
import { encodeJ2kCodestream, wrapJp2, type RawImage } from './jpeg2000.js';

type Rgb = readonly [number, number, number];

class Canvas {
  readonly data: Uint8Array;

  constructor(
    readonly width: number,
    readonly height: number,
    background: Rgb,
  ) {
    this.data = new Uint8Array(width * height * 4);
    this.fill(() => true, background);
  }

  /** Paints every pixel whose centre satisfies `inside(x, y)`. */
  fill(inside: (x: number, y: number) => boolean, colour: Rgb): void {
    for (let y = 0; y < this.height; y++) {
      for (let x = 0; x < this.width; x++) {
        if (!inside(x + 0.5, y + 0.5)) continue;
        const at = (y * this.width + x) * 4;
        this.data[at] = colour[0];
        this.data[at + 1] = colour[1];
        this.data[at + 2] = colour[2];
        this.data[at + 3] = 255;
      }
    }
  }

  ellipse(cx: number, cy: number, rx: number, ry: number, colour: Rgb): void {
    this.fill((x, y) => ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1, colour);
  }

  /** A thick polyline through the points. */
  stroke(points: readonly (readonly [number, number])[], thickness: number, colour: Rgb): void {
    const half = thickness / 2;
    this.fill((x, y) => {
      for (let i = 1; i < points.length; i++) {
        const [ax, ay] = points[i - 1] ?? [0, 0];
        const [bx, by] = points[i] ?? [0, 0];
        const dx = bx - ax;
        const dy = by - ay;
        const t = Math.max(0, Math.min(1, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy || 1)));
        if (Math.hypot(x - (ax + t * dx), y - (ay + t * dy)) <= half) return true;
      }
      return false;
    }, colour);
  }

  toJpeg(quality: number): Uint8Array {
    return Uint8Array.from(jpeg.encode({ data: this.data, width: this.width, height: this.height }, quality).data);
  }
}

export interface PortraitOptions {
  /** Default 120 × 160 (3:4, the usual ID photo aspect). */
  readonly width?: number;
  readonly height?: number;
  /** JPEG quality 1..100 (default 80). */
  readonly quality?: number;
}

/** The face as RGBA pixels (alpha always 255), before any encoding. */
function drawFace(options: PortraitOptions): Canvas {
  const width = options.width ?? 120;
  const height = options.height ?? 160;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 16 || height < 16 || width > 2048 || height > 2048) {
    throw new RangeError(`portrait size must be 16..2048 pixels each way, got ${width}×${height}`);
  }
  const s = (f: number): number => f * width; // horizontal unit
  const v = (f: number): number => f * height; // vertical unit
  const skin: Rgb = [232, 190, 160];
  const hair: Rgb = [70, 45, 30];
  const canvas = new Canvas(width, height, [214, 226, 240]);
  canvas.ellipse(s(0.5), v(1.02), s(0.5), v(0.3), [60, 90, 140]); // shoulders
  canvas.fill((x, y) => Math.abs(x - s(0.5)) <= s(0.09) && y >= v(0.6) && y <= v(0.78), skin); // neck
  canvas.ellipse(s(0.5), v(0.36), s(0.3), v(0.28), hair); // hair behind the face
  canvas.ellipse(s(0.5), v(0.42), s(0.25), v(0.24), skin); // face
  canvas.fill((x, y) => y < v(0.3) && ((x - s(0.5)) / s(0.27)) ** 2 + ((y - v(0.32)) / v(0.2)) ** 2 <= 1, hair); // fringe
  canvas.ellipse(s(0.24), v(0.44), s(0.04), v(0.05), skin); // ears
  canvas.ellipse(s(0.76), v(0.44), s(0.04), v(0.05), skin);
  for (const side of [-1, 1]) {
    canvas.ellipse(s(0.5 + side * 0.1), v(0.41), s(0.045), v(0.022), [250, 250, 250]); // eye white
    canvas.ellipse(s(0.5 + side * 0.1), v(0.41), s(0.02), v(0.02), [60, 100, 60]); // iris
    canvas.stroke(
      [
        [s(0.5 + side * 0.05), v(0.36)],
        [s(0.5 + side * 0.15), v(0.355)],
      ],
      Math.max(1.5, v(0.012)),
      hair,
    ); // brow
  }
  canvas.stroke(
    [
      [s(0.5), v(0.43)],
      [s(0.485), v(0.5)],
      [s(0.515), v(0.505)],
    ],
    Math.max(1, v(0.008)),
    [190, 140, 115],
  ); // nose
  canvas.stroke(
    [
      [s(0.4), v(0.555)],
      [s(0.45), v(0.575)],
      [s(0.5), v(0.58)],
      [s(0.55), v(0.575)],
      [s(0.6), v(0.555)],
    ],
    Math.max(1.5, v(0.012)),
    [170, 60, 60],
  ); // smile
  return canvas;
}

/** A face on a light background, as JPEG bytes (starts with FFD8 SOI, ends with FFD9 EOI). */
export function drawPortraitJpeg(options: PortraitOptions = {}): Uint8Array {
  return drawFace(options).toJpeg(options.quality ?? 80);
}

/** The face's pixels as interleaved RGB (what a lossless decoder of `drawPortraitJpeg2000` returns). */
export function drawPortraitRgb(options: Omit<PortraitOptions, 'quality'> = {}): RawImage {
  const canvas = drawFace(options);
  const rgb = new Uint8Array(canvas.width * canvas.height * 3);
  for (let i = 0, j = 0; i < canvas.data.length; i += 4, j += 3) {
    rgb[j] = canvas.data[i] ?? 0;
    rgb[j + 1] = canvas.data[i + 1] ?? 0;
    rgb[j + 2] = canvas.data[i + 2] ?? 0;
  }
  return { width: canvas.width, height: canvas.height, components: 3, data: rgb };
}

/**
 * The same face as a JPEG 2000 **JP2 file** (signature box 0000000C 6A502020 0D0A870A, then ftyp, jp2h and
 * the jp2c codestream box), losslessly coded, so a decoder must reproduce `drawPortraitRgb` exactly.
 * `quality` does not apply. At least 32 pixels each way.
 */
export async function drawPortraitJpeg2000(options: Omit<PortraitOptions, 'quality'> = {}): Promise<Uint8Array> {
  const image = drawPortraitRgb(options);
  return wrapJp2(await encodeJ2kCodestream(image), image);
}

/** A handwritten-looking signature mark, as JPEG bytes (default 160 × 48). */
export function drawSignatureJpeg(options: PortraitOptions = {}): Uint8Array {
  const width = options.width ?? 160;
  const height = options.height ?? 48;
  const canvas = new Canvas(width, height, [255, 255, 255]);
  const points: [number, number][] = [];
  for (let i = 0; i <= 40; i++) {
    const t = i / 40;
    points.push([width * (0.08 + 0.84 * t), height * (0.55 + 0.28 * Math.sin(t * Math.PI * 5) * (1 - 0.5 * t))]);
  }
  canvas.stroke(points, 2, [20, 30, 90]);
  canvas.stroke(
    [
      [width * 0.1, height * 0.85],
      [width * 0.9, height * 0.8],
    ],
    1.5,
    [20, 30, 90],
  );
  return canvas.toJpeg(options.quality ?? 80);
}
