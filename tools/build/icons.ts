/**
 * `npm run build:icons`: the app icons of every package, from one source, build/icon.svg, rendered by
 * Debian's Chromium (playwright-core, never a downloaded browser) at each size:
 *
 *   build/icon.png         1024×1024  electron-builder's source and the macOS fallback
 *   build/icon.icns        macOS      PNG-coded entries 16…1024 px, @1x and @2x (icp4–icp6, ic07–ic14)
 *   build/icon.ico         Windows    PNG-coded entries 16…256 px (the executable's and the installer's icon)
 *   build/icons/NxN.png    Linux      the desktop entry's icon theme sizes (16…512)
 *
 * The files are committed; run this after changing the SVG. `readIco` and `readIcns` read them back
 * (test/unit/tools/icons.test.ts and the packaging policy check what electron-builder.yml points to).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ICON_SOURCE = 'build/icon.svg';
export const ICO_SIZES = [16, 24, 32, 48, 64, 128, 256] as const;
export const LINUX_SIZES = [16, 32, 48, 64, 128, 256, 512] as const;
/** icns entry types holding PNG data, and their pixel sizes (Apple's icns format, macOS 10.7+). */
export const ICNS_TYPES = [
  ['icp4', 16],
  ['icp5', 32],
  ['icp6', 64],
  ['ic07', 128],
  ['ic08', 256],
  ['ic09', 512],
  ['ic10', 1024],
  ['ic11', 32],
  ['ic12', 64],
  ['ic13', 256],
  ['ic14', 512],
] as const;

const CHROMIUM = '/usr/bin/chromium';

/** Width and height of a PNG (its IHDR), or undefined when the bytes are not a PNG. */
export function pngSize(bytes: Buffer): { width: number; height: number } | undefined {
  if (bytes.length < 24 || bytes.readUInt32BE(0) !== 0x89504e47 || bytes.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** An .ico holding PNG images (Windows Vista and later read them), one per size. */
export function writeIco(images: readonly Buffer[]): Buffer {
  const header = Buffer.alloc(6);
  header.writeUInt16LE(0, 0);
  header.writeUInt16LE(1, 2); // icon
  header.writeUInt16LE(images.length, 4);
  const entries: Buffer[] = [];
  let offset = 6 + 16 * images.length;
  for (const png of images) {
    const size = pngSize(png);
    if (size === undefined) throw new Error('an ico entry must be a PNG');
    const entry = Buffer.alloc(16);
    entry.writeUInt8(size.width >= 256 ? 0 : size.width, 0); // 0 means 256
    entry.writeUInt8(size.height >= 256 ? 0 : size.height, 1);
    entry.writeUInt16LE(1, 4); // colour planes
    entry.writeUInt16LE(32, 6); // bits per pixel
    entry.writeUInt32LE(png.length, 8);
    entry.writeUInt32LE(offset, 12);
    offset += png.length;
    entries.push(entry);
  }
  return Buffer.concat([header, ...entries, ...images]);
}

export function readIco(bytes: Buffer): { width: number; height: number; png: boolean }[] {
  if (bytes.readUInt16LE(0) !== 0 || bytes.readUInt16LE(2) !== 1) throw new Error('not an .ico file');
  const count = bytes.readUInt16LE(4);
  const out: { width: number; height: number; png: boolean }[] = [];
  for (let i = 0; i < count; i++) {
    const at = 6 + 16 * i;
    const length = bytes.readUInt32LE(at + 8);
    const offset = bytes.readUInt32LE(at + 12);
    const data = bytes.subarray(offset, offset + length);
    out.push({ width: bytes.readUInt8(at) || 256, height: bytes.readUInt8(at + 1) || 256, png: pngSize(data) !== undefined });
  }
  return out;
}

export function writeIcns(entries: readonly (readonly [string, Buffer])[]): Buffer {
  const parts = entries.map(([type, data]) => {
    const head = Buffer.alloc(8);
    head.write(type, 0, 'latin1');
    head.writeUInt32BE(8 + data.length, 4);
    return Buffer.concat([head, data]);
  });
  const head = Buffer.alloc(8);
  head.write('icns', 0, 'latin1');
  head.writeUInt32BE(8 + parts.reduce((n, p) => n + p.length, 0), 4);
  return Buffer.concat([head, ...parts]);
}

export function readIcns(bytes: Buffer): { type: string; width: number | undefined }[] {
  if (bytes.toString('latin1', 0, 4) !== 'icns' || bytes.readUInt32BE(4) !== bytes.length) throw new Error('not an .icns file');
  const out: { type: string; width: number | undefined }[] = [];
  for (let at = 8; at + 8 <= bytes.length; ) {
    const length = bytes.readUInt32BE(at + 4);
    if (length < 8) throw new Error('malformed .icns entry');
    out.push({ type: bytes.toString('latin1', at, at + 4), width: pngSize(bytes.subarray(at + 8, at + length))?.width });
    at += length;
  }
  return out;
}

async function render(svg: string, sizes: readonly number[]): Promise<Map<number, Buffer>> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage();
    const out = new Map<number, Buffer>();
    for (const size of sizes) {
      await page.setViewportSize({ width: size, height: size });
      await page.setContent(
        `<html><body style="margin:0;background:transparent"><img src="data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}" width="${size}" height="${size}" style="display:block"></body></html>`,
      );
      // Runs in the page; typed without the DOM library this Node project does not load.
      await page.waitForFunction('document.images[0] !== undefined && document.images[0].complete');
      out.set(size, await page.screenshot({ omitBackground: true, clip: { x: 0, y: 0, width: size, height: size } }));
    }
    return out;
  } finally {
    await browser.close();
  }
}

export async function buildIcons(root: string): Promise<string[]> {
  const svg = await readFile(join(root, ICON_SOURCE), 'utf8');
  const sizes = [...new Set([...ICO_SIZES, ...LINUX_SIZES, ...ICNS_TYPES.map(([, s]) => s), 1024])].sort((a, b) => a - b);
  const png = await render(svg, sizes);
  const get = (size: number): Buffer => {
    const image = png.get(size);
    if (image === undefined) throw new Error(`no ${size} px rendering`);
    return image;
  };
  const written: string[] = [];
  const write = async (file: string, bytes: Buffer): Promise<void> => {
    await mkdir(dirname(join(root, file)), { recursive: true });
    await writeFile(join(root, file), bytes);
    written.push(file);
  };
  await write('build/icon.png', get(1024));
  await write('build/icon.ico', writeIco(ICO_SIZES.map(get)));
  await write('build/icon.icns', writeIcns(ICNS_TYPES.map(([type, size]) => [type, get(size)] as const)));
  for (const size of LINUX_SIZES) await write(`build/icons/${size}x${size}.png`, get(size));
  return written;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  buildIcons(root).then(
    (files) => process.stdout.write(`build:icons: ${files.join(', ')}\n`),
    (e: unknown) => {
      process.stderr.write(`build:icons: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
