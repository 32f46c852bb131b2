/**
 * The committed app icons (npm run build:icons from build/icon.svg) in each OS's format, and the writers
 * and readers behind them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ICNS_TYPES, ICO_SIZES, LINUX_SIZES, pngSize, readIcns, readIco, writeIcns, writeIco } from '../../../tools/build/icons.js';
import { REPO_ROOT } from '../../../tools/supply-chain/common.js';

const file = (path: string): Buffer => readFileSync(join(REPO_ROOT, path));

describe('the app icons', () => {
  it('build/icon.png is 1024 px; the Linux folder has each theme size at its size', () => {
    expect(pngSize(file('build/icon.png'))).toEqual({ width: 1024, height: 1024 });
    expect(readdirSync(join(REPO_ROOT, 'build/icons')).sort()).toEqual(LINUX_SIZES.map((s) => `${s}x${s}.png`).sort());
    for (const s of LINUX_SIZES) expect(pngSize(file(`build/icons/${s}x${s}.png`))).toEqual({ width: s, height: s });
  });

  it('build/icon.ico holds PNG images of 16 to 256 px (Windows executable and installer)', () => {
    expect(readIco(file('build/icon.ico'))).toEqual(ICO_SIZES.map((s) => ({ width: s, height: s, png: true })));
  });

  it('build/icon.icns holds every @1x and @2x size up to 1024 px (macOS)', () => {
    expect(readIcns(file('build/icon.icns'))).toEqual(ICNS_TYPES.map(([type, width]) => ({ type, width })));
  });

  it('the writers round-trip, and refuse what is not a PNG', () => {
    const png = file('build/icons/16x16.png');
    expect(readIco(writeIco([png]))).toEqual([{ width: 16, height: 16, png: true }]);
    expect(readIcns(writeIcns([['icp4', png]]))).toEqual([{ type: 'icp4', width: 16 }]);
    expect(() => writeIco([Buffer.from('not a png')])).toThrow('an ico entry must be a PNG');
    expect(() => readIcns(Buffer.from('icnsxxxx'))).toThrow('not an .icns file');
  });
});
