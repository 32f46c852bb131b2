/**
 * The fake-camera files the browser tests play: what the generator writes must decode back, exactly, to
 * the engagement text (with the same decoder the kiosk uses), and a scene without a code must decode to
 * nothing. Decoded in Node from the frames as Chromium reads them (Y4M → RGBA).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareZXingModule, readBarcodes } from 'zxing-wasm/reader';
import { VirtualRadio } from '../../src/qa/sim/radio/virtual-radio.js';
import { VirtualPhone } from '../../src/qa/sim/virtual-wallet/virtual-phone.js';
import { readY4mFrameRgba, readY4mInfo, writeBlankY4m, writeQrY4m, type QrSceneOptions, type RgbaFrame } from '../support/fake-camera.js';

const require = createRequire(import.meta.url);

let dir: string;
let engagement: string;

async function decode(frame: RgbaFrame): Promise<string | null> {
  const results = await readBarcodes(frame, { formats: ['QRCode'], tryHarder: true, maxNumberOfSymbols: 1 });
  return results.find((r) => r.isValid)?.text ?? null;
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fake-camera-'));
  const wasm = readFileSync(require.resolve('zxing-wasm/reader/zxing_reader.wasm'));
  await prepareZXingModule({
    overrides: { wasmBinary: wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) },
    fireImmediately: true,
  });
  const radio = new VirtualRadio();
  const phone = await VirtualPhone.create({ profile: 'android', radio });
  try {
    engagement = phone.presentQr();
  } finally {
    await phone.stop();
    radio.shutdown();
  }
}, 60_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('writeQrY4m', () => {
  it("writes a 1280×720 I420 file whose frames decode back to the virtual phone's exact engagement text", async () => {
    expect(engagement).toMatch(/^mdoc:[A-Za-z0-9_-]+$/);
    const file = join(dir, 'qr-720p.y4m');
    const written = writeQrY4m(file, engagement);
    expect(written).toMatchObject({ width: 1280, height: 720, frames: 6, fps: 15 });
    expect(readY4mInfo(file)).toEqual({ width: 1280, height: 720, fps: 15, colourSpace: '420jpeg', frames: 6 });
    expect(readFileSync(file).subarray(0, 60).toString('latin1')).toMatch(/^YUV4MPEG2 W1280 H720 F15:1 Ip A1:1 C420jpeg\nFRAME\n/);
    expect(statSync(file).size).toBe('YUV4MPEG2 W1280 H720 F15:1 Ip A1:1 C420jpeg\n'.length + 6 * ('FRAME\n'.length + 1280 * 720 * 1.5));
    for (const index of [0, 5]) expect(await decode(readY4mFrameRgba(file, index))).toBe(engagement);
  });

  it('frames differ by their noise, as a live camera does, and the file is the same on every run', () => {
    const a = join(dir, 'det-a.y4m');
    const b = join(dir, 'det-b.y4m');
    writeQrY4m(a, engagement, { width: 640, height: 480, frames: 2 });
    writeQrY4m(b, engagement, { width: 640, height: 480, frames: 2 });
    expect(sha256(a)).toBe(sha256(b));
    const [f0, f1] = [readY4mFrameRgba(a, 0), readY4mFrameRgba(a, 1)];
    expect(Buffer.from(f0.data).equals(Buffer.from(f1.data))).toBe(false);
    // Neutral chroma: every pixel is grey.
    for (let i = 0; i < f0.data.length; i += 4 * 997) {
      expect(f0.data[i]).toBe(f0.data[i + 1]);
      expect(f0.data[i + 1]).toBe(f0.data[i + 2]);
    }
  });

  it.each<[string, QrSceneOptions]>([
    ['640×480, tilted 9°, blurred, noisy', { width: 640, height: 480, rotationDeg: 9, blur: 1, noise: 8 }],
    ['1280×720, small modules, tilted', { moduleSize: 3, rotationDeg: -12, blur: 0.8 }],
  ])('a harder scene still decodes exactly: %s', async (name, options) => {
    const file = join(dir, `hard-${createHash('sha1').update(name).digest('hex')}.y4m`);
    writeQrY4m(file, engagement, { ...options, frames: 1 });
    expect(await decode(readY4mFrameRgba(file, 0))).toBe(engagement);
  });

  it('keeps any text byte for byte (not only mdoc: engagements)', async () => {
    const text = 'https://example.test/?q=ñ&x= spaced  ';
    const file = join(dir, 'other.y4m');
    writeQrY4m(file, text, { width: 640, height: 480, frames: 1 });
    expect(await decode(readY4mFrameRgba(file, 0))).toBe(text);
  });

  it('refuses sizes the format or the code cannot take, with a clear error', () => {
    expect(() => writeQrY4m(join(dir, 'odd.y4m'), engagement, { width: 641 })).toThrow(/even integer/);
    expect(() => writeQrY4m(join(dir, 'big.y4m'), engagement, { width: 640, height: 480, moduleSize: 9 })).toThrow(/does not fit/);
    expect(() => writeQrY4m(join(dir, 'frames.y4m'), engagement, { frames: 0 })).toThrow(/frames/);
  });
});

describe('writeBlankY4m', () => {
  it('writes the same kind of scene with no code in it, which decodes to nothing', async () => {
    const file = join(dir, 'blank.y4m');
    writeBlankY4m(file, { frames: 2 });
    expect(readY4mInfo(file)).toMatchObject({ width: 1280, height: 720, frames: 2 });
    for (const index of [0, 1]) expect(await decode(readY4mFrameRgba(file, index))).toBeNull();
  });
});

describe('readY4mFrameRgba', () => {
  it('says which frame is missing and rejects what is not a whole Y4M file', () => {
    const file = join(dir, 'two.y4m');
    writeBlankY4m(file, { width: 64, height: 48, frames: 2 });
    expect(readY4mFrameRgba(file, 1).data).toHaveLength(64 * 48 * 4);
    expect(() => readY4mFrameRgba(file, 2)).toThrow(/has 2 frames, no frame 2/);
    const bogus = join(dir, 'bogus.y4m');
    writeBlankY4m(bogus, { width: 64, height: 48, frames: 1 });
    const bytes = readFileSync(bogus);
    bytes.write('XUV4', 0, 'latin1');
    writeFileSync(bogus, bytes);
    expect(() => readY4mInfo(bogus)).toThrow(/not a YUV4MPEG2 file/);
    writeFileSync(bogus, readFileSync(file).subarray(0, 1000));
    expect(() => readY4mInfo(bogus)).toThrow(/truncated frame/);
  });
});
