/**
 * Video files for Chromium's fake camera (`--use-fake-device-for-media-stream
 * --use-file-for-fake-video-capture=<file>.y4m`): a camera-like grey scene with a phone whose light screen
 * shows a QR code, written as Y4M (I420, C420jpeg = full-range luma, neutral chroma). Chromium loops the
 * file, so a few frames with different noise look like a live camera. Deterministic: the same text and
 * options give the same bytes (seeded noise), so a failure reproduces.
 *
 * Also reads a frame back as RGBA, so Node tests can decode exactly what the browser will see.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import QRCode from 'qrcode';
import { seededRandom } from './seeded-random.js';

export interface SceneOptions {
  /** Frame size (even numbers: I420 halves the chroma planes). Defaults 1280×720. */
  readonly width?: number;
  readonly height?: number;
  /** Frames in the file (each with its own noise); Chromium loops them. Default 6. */
  readonly frames?: number;
  /** Frame rate written in the header. Default 15. */
  readonly fps?: number;
  /** Gaussian blur σ in pixels (focus, motion). Default 0.6. */
  readonly blur?: number;
  /** Noise amplitude, ± luma levels (sensor noise). Default 4. */
  readonly noise?: number;
  /** Seed of the noise; default derived from the text, so each code has its own grain. */
  readonly seed?: number;
}

export interface QrSceneOptions extends SceneOptions {
  /** Pixels per QR module. Default: the largest that makes the code (with its quiet zone) ≤ 60 % of the frame height. */
  readonly moduleSize?: number;
  /** The phone held at an angle, degrees (clockwise). Default 0. */
  readonly rotationDeg?: number;
}

export interface WrittenY4m {
  readonly file: string;
  readonly width: number;
  readonly height: number;
  readonly frames: number;
  readonly fps: number;
  /** For a QR scene: modules per side, and pixels per module. */
  readonly qrModules?: number;
  readonly moduleSize?: number;
}

export interface RgbaFrame {
  readonly width: number;
  readonly height: number;
  /** RGBA, as ImageData holds it (zxing-wasm in Node takes `{ data, width, height }`). */
  readonly data: Uint8ClampedArray;
}

const QUIET_ZONE = 4;
const DARK = 28;
const SCREEN = 232;
const BEZEL = 22;

// ---------------------------------------------------------------- scene

interface Phone {
  /** Centre of the frame, where the phone is centred, and the rotation. */
  readonly cx: number;
  readonly cy: number;
  readonly cos: number;
  readonly sin: number;
  /** Half sizes of the body and the screen, in unrotated phone coordinates (origin = centre). */
  readonly bodyHalfW: number;
  readonly bodyHalfH: number;
  readonly screenHalfW: number;
  readonly screenHalfH: number;
  readonly cornerRadius: number;
  /** The QR code: top-left corner (phone coordinates), module size and matrix. */
  readonly qrLeft: number;
  readonly qrTop: number;
  readonly moduleSize: number;
  readonly modules: { readonly size: number; readonly data: ArrayLike<number | boolean> } | undefined;
}

function checkedSize(options: SceneOptions): { width: number; height: number; frames: number; fps: number } {
  const width = options.width ?? 1280;
  const height = options.height ?? 720;
  const frames = options.frames ?? 6;
  const fps = options.fps ?? 15;
  for (const [name, value, max] of [
    ['width', width, 4096],
    ['height', height, 4096],
  ] as const) {
    if (!Number.isInteger(value) || value < 16 || value > max || value % 2 !== 0)
      throw new RangeError(`${name} must be an even integer from 16 to ${max}, got ${value}`);
  }
  if (!Number.isInteger(frames) || frames < 1 || frames > 300)
    throw new RangeError(`frames must be an integer from 1 to 300, got ${frames}`);
  if (!Number.isInteger(fps) || fps < 1 || fps > 120) throw new RangeError(`fps must be an integer from 1 to 120, got ${fps}`);
  return { width, height, frames, fps };
}

function background(x: number, y: number, width: number, height: number): number {
  // A dim room: a diagonal gradient and a soft vignette, nothing a decoder could mistake for a code.
  const gradient = 78 + 52 * ((x / width) * 0.6 + (y / height) * 0.4);
  const dx = x / width - 0.5;
  const dy = y / height - 0.5;
  return gradient * (1 - 0.35 * (dx * dx + dy * dy));
}

function insideRoundedRect(px: number, py: number, halfW: number, halfH: number, radius: number): boolean {
  const ax = Math.abs(px);
  const ay = Math.abs(py);
  if (ax > halfW || ay > halfH) return false;
  const cx = ax - (halfW - radius);
  const cy = ay - (halfH - radius);
  return cx <= 0 || cy <= 0 || cx * cx + cy * cy <= radius * radius;
}

function sample(phone: Phone, x: number, y: number, width: number, height: number): number {
  // Back into phone coordinates (undo the rotation about the frame's centre).
  const dx = x - phone.cx;
  const dy = y - phone.cy;
  const px = dx * phone.cos + dy * phone.sin;
  const py = -dx * phone.sin + dy * phone.cos;
  if (!insideRoundedRect(px, py, phone.bodyHalfW, phone.bodyHalfH, phone.cornerRadius)) return background(x, y, width, height);
  if (Math.abs(px) > phone.screenHalfW || Math.abs(py) > phone.screenHalfH) return BEZEL;
  const { modules } = phone;
  if (modules === undefined) return SCREEN;
  const col = Math.floor((px - phone.qrLeft) / phone.moduleSize);
  const row = Math.floor((py - phone.qrTop) / phone.moduleSize);
  if (col < 0 || row < 0 || col >= modules.size || row >= modules.size) return SCREEN;
  return modules.data[row * modules.size + col] ? DARK : SCREEN;
}

function layoutPhone(width: number, height: number, rotationDeg: number, moduleSize: number, modules: Phone['modules']): Phone {
  const codeSide = modules === undefined ? Math.round(height * 0.45) : modules.size * moduleSize;
  const withQuiet = codeSide + 2 * QUIET_ZONE * moduleSize;
  const screenHalfW = (withQuiet * 1.12) / 2;
  const screenHalfH = Math.max(screenHalfW, Math.min((withQuiet * 1.7) / 2, height * 0.47));
  const bezel = Math.max(4, Math.round(Math.min(width, height) * 0.015));
  const rad = (rotationDeg * Math.PI) / 180;
  return {
    cx: width / 2,
    cy: height / 2,
    cos: Math.cos(rad),
    sin: Math.sin(rad),
    bodyHalfW: screenHalfW + bezel,
    bodyHalfH: screenHalfH + bezel * 2,
    screenHalfW,
    screenHalfH,
    cornerRadius: bezel * 3,
    qrLeft: -codeSide / 2,
    qrTop: -codeSide / 2,
    moduleSize,
    modules,
  };
}

/** The scene's luma, 3×3 supersampled (anti-aliased edges, as a lens gives). */
function renderLuma(phone: Phone, width: number, height: number): Float32Array {
  const out = new Float32Array(width * height);
  const steps = [1 / 6, 3 / 6, 5 / 6];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let sum = 0;
      for (const sy of steps) for (const sx of steps) sum += sample(phone, x + sx, y + sy, width, height);
      out[y * width + x] = sum / 9;
    }
  }
  return out;
}

function gaussianBlur(src: Float32Array, width: number, height: number, sigma: number): Float32Array {
  if (!(sigma > 0)) return src;
  const radius = Math.ceil(sigma * 3);
  const kernel: number[] = [];
  let total = 0;
  for (let i = -radius; i <= radius; i++) {
    const w = Math.exp(-(i * i) / (2 * sigma * sigma));
    kernel.push(w);
    total += w;
  }
  const k = kernel.map((w) => w / total);
  const tmp = new Float32Array(src.length);
  const out = new Float32Array(src.length);
  const at = (a: Float32Array, i: number): number => a[i] ?? 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let acc = 0;
      for (let i = -radius; i <= radius; i++) acc += (k[i + radius] ?? 0) * at(src, y * width + Math.min(width - 1, Math.max(0, x + i)));
      tmp[y * width + x] = acc;
    }
  }
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let acc = 0;
      for (let i = -radius; i <= radius; i++) acc += (k[i + radius] ?? 0) * at(tmp, Math.min(height - 1, Math.max(0, y + i)) * width + x);
      out[y * width + x] = acc;
    }
  }
  return out;
}

function seedOf(text: string): number {
  let h = 2_166_136_261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16_777_619);
  return h >>> 0;
}

function noisyFrames(luma: Float32Array, frames: number, noise: number, seed: number): Uint8Array[] {
  const random = seededRandom(seed);
  const result: Uint8Array[] = [];
  for (let f = 0; f < frames; f++) {
    const frame = new Uint8Array(luma.length);
    for (let i = 0; i < luma.length; i++) {
      // Sum of two uniforms: a triangular, roughly sensor-like grain.
      const grain = noise > 0 ? (random() + random() - 1) * noise : 0;
      frame[i] = Math.min(255, Math.max(0, Math.round((luma[i] ?? 0) + grain)));
    }
    result.push(frame);
  }
  return result;
}

// ---------------------------------------------------------------- Y4M

function writeY4m(file: string, width: number, height: number, fps: number, frames: readonly Uint8Array[]): void {
  const chroma = Buffer.alloc((width / 2) * (height / 2) * 2, 128); // U and V = 128: no colour
  const fd = openSync(file, 'w');
  try {
    writeSync(fd, `YUV4MPEG2 W${width} H${height} F${fps}:1 Ip A1:1 C420jpeg\n`);
    for (const luma of frames) {
      writeSync(fd, 'FRAME\n');
      writeSync(fd, luma);
      writeSync(fd, chroma);
    }
  } finally {
    closeSync(fd);
  }
}

/** A scene with a phone showing `text` as a QR code (EC level M, as wallets show it). */
export function writeQrY4m(file: string, text: string, options: QrSceneOptions = {}): WrittenY4m {
  const { width, height, frames, fps } = checkedSize(options);
  const qr = QRCode.create(text, { errorCorrectionLevel: 'M' });
  const modules = { size: qr.modules.size, data: qr.modules.data };
  const fitting = Math.floor((height * 0.6) / (modules.size + 2 * QUIET_ZONE));
  const moduleSize = options.moduleSize ?? fitting;
  if (!(moduleSize > 0) || (modules.size + 2 * QUIET_ZONE) * moduleSize > Math.min(width, height)) {
    throw new RangeError(`a ${modules.size}-module QR code at ${moduleSize} px/module does not fit a ${width}×${height} frame`);
  }
  const phone = layoutPhone(width, height, options.rotationDeg ?? 0, moduleSize, modules);
  const luma = gaussianBlur(renderLuma(phone, width, height), width, height, options.blur ?? 0.6);
  writeY4m(file, width, height, fps, noisyFrames(luma, frames, options.noise ?? 4, options.seed ?? seedOf(text)));
  return { file, width, height, frames, fps, qrModules: modules.size, moduleSize };
}

/** The same scene with the phone's screen blank: a camera that sees no code. */
export function writeBlankY4m(file: string, options: SceneOptions & { rotationDeg?: number } = {}): WrittenY4m {
  const { width, height, frames, fps } = checkedSize(options);
  const phone = layoutPhone(width, height, options.rotationDeg ?? 0, 1, undefined);
  const luma = gaussianBlur(renderLuma(phone, width, height), width, height, options.blur ?? 0.6);
  writeY4m(file, width, height, fps, noisyFrames(luma, frames, options.noise ?? 4, options.seed ?? 1));
  return { file, width, height, frames, fps };
}

// ---------------------------------------------------------------- reading back

export interface Y4mInfo {
  readonly width: number;
  readonly height: number;
  readonly fps: number;
  readonly colourSpace: string;
  readonly frames: number;
}

interface ParsedY4m extends Y4mInfo {
  readonly bytes: Buffer;
  /** Byte offset of each frame's Y plane. */
  readonly offsets: readonly number[];
}

function parseY4m(file: string): ParsedY4m {
  const bytes = readFileSync(file);
  const headerEnd = bytes.indexOf(0x0a);
  if (headerEnd < 0) throw new Error(`${file}: no Y4M header line`);
  const tokens = bytes.subarray(0, headerEnd).toString('latin1').split(' ');
  if (tokens[0] !== 'YUV4MPEG2') throw new Error(`${file}: not a YUV4MPEG2 file`);
  const field = (letter: string): string | undefined => tokens.find((t) => t.startsWith(letter))?.slice(1);
  const width = Number(field('W'));
  const height = Number(field('H'));
  const [num, den] = (field('F') ?? '30:1').split(':').map(Number);
  const colourSpace = field('C') ?? '420jpeg';
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) throw new Error(`${file}: bad frame size`);
  if (!colourSpace.startsWith('420')) throw new Error(`${file}: only 4:2:0 is read, not C${colourSpace}`);
  const frameBytes = width * height + 2 * Math.ceil(width / 2) * Math.ceil(height / 2);
  const offsets: number[] = [];
  let at = headerEnd + 1;
  while (at < bytes.length) {
    const lineEnd = bytes.indexOf(0x0a, at);
    if (lineEnd < 0 || bytes.subarray(at, at + 5).toString('latin1') !== 'FRAME')
      throw new Error(`${file}: bad frame header at byte ${at}`);
    if (lineEnd + 1 + frameBytes > bytes.length) throw new Error(`${file}: truncated frame at byte ${at}`);
    offsets.push(lineEnd + 1);
    at = lineEnd + 1 + frameBytes;
  }
  return { bytes, offsets, width, height, fps: (num ?? 30) / (den ?? 1), colourSpace, frames: offsets.length };
}

export function readY4mInfo(file: string): Y4mInfo {
  const { width, height, fps, colourSpace, frames } = parseY4m(file);
  return { width, height, fps, colourSpace, frames };
}

/** Frame `index` as RGBA (full-range BT.601, as C420jpeg says). */
export function readY4mFrameRgba(file: string, index = 0): RgbaFrame {
  const { bytes, offsets, width, height } = parseY4m(file);
  const offset = offsets[index];
  if (offset === undefined) throw new RangeError(`${file} has ${offsets.length} frames, no frame ${index}`);
  const cw = Math.ceil(width / 2);
  const ch = Math.ceil(height / 2);
  const uAt = offset + width * height;
  const vAt = uAt + cw * ch;
  const data = new Uint8ClampedArray(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const luma = bytes[offset + y * width + x] ?? 0;
      const c = (y >> 1) * cw + (x >> 1);
      const u = (bytes[uAt + c] ?? 128) - 128;
      const v = (bytes[vAt + c] ?? 128) - 128;
      const o = (y * width + x) * 4;
      data[o] = luma + 1.402 * v;
      data[o + 1] = luma - 0.344136 * u - 0.714136 * v;
      data[o + 2] = luma + 1.772 * u;
      data[o + 3] = 255;
    }
  }
  return { width, height, data };
}
