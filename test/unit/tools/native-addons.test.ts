/**
 * Reading a native addon's format, CPU and registration (tools/package/native-addons.ts): gcc-built ELF
 * objects of every registration kind, the Windows (PE) and macOS (Mach-O, universal) prebuilds that ship in
 * node_modules, malformed input, and the verdict for Electron 45's ABI.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addonProblem,
  AddonReadError,
  electronAbi,
  ELECTRON_NODE_MODULE_VERSION,
  readAddon,
  registrationOf,
  type AddonTarget,
} from '../../../tools/package/native-addons.js';
import { ADDON_SOURCES, compileAddon, type AddonKind } from '../../support/native-fixtures.js';

const LINUX: AddonTarget = { platform: 'linux', cpus: ['x64'], electronVersion: '45.4.1' };
const require = createRequire(import.meta.url);
/** A package's installed folder (package exports may hide its files from require.resolve). */
const packageDir = (name: string): string => join(process.cwd(), 'node_modules', name);

let dir: string;
const built = new Map<AddonKind, Buffer>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-addons-'));
  for (const kind of Object.keys(ADDON_SOURCES) as AddonKind[]) built.set(kind, await readFile(await compileAddon(dir, kind)));
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('reading an addon', () => {
  it.each([
    ['napiExport', { kind: 'napi', via: 'exports napi_register_module_v1' }],
    ['napiImport', { kind: 'napi', via: 'imports napi_module_register' }],
    ['node115', { kind: 'node-abi', abi: 115 }],
    ['node150', { kind: 'node-abi', abi: 150 }],
    ['legacy', { kind: 'legacy' }],
    ['none', { kind: 'none' }],
  ] as const)('ELF (gcc, %s)', (kind, registration) => {
    const info = readAddon(built.get(kind) ?? Buffer.alloc(0));
    expect(info.format).toBe('elf');
    expect(info.slices).toHaveLength(1);
    expect(info.slices[0]?.cpu).toBe(process.arch === 'arm64' ? 'arm64' : 'x64');
    expect(info.slices[0]?.registration).toEqual(registration);
  });

  it('the smartcard addon npm ci built here is N-API', async () => {
    const info = readAddon(await readFile(join(packageDir('smartcard'), 'build', 'Release', 'smartcard_napi.node')));
    expect(info.slices[0]?.registration).toEqual({ kind: 'napi', via: 'exports napi_register_module_v1' });
    expect(addonProblem(info, LINUX)).toBeUndefined();
  });

  it('Windows prebuilds (PE): N-API through a delay-loaded import, and a stub that registers nothing', async () => {
    const noble = readAddon(await readFile(join(packageDir('@stoprocent/noble'), 'prebuilds', 'win32-x64', 'node.napi.node')));
    expect(noble).toMatchObject({
      format: 'pe',
      slices: [{ cpu: 'x64', registration: { kind: 'napi', via: 'imports napi_module_register' } }],
    });
    expect(noble.slices[0]?.libraries).toEqual(expect.arrayContaining(['node.exe', 'KERNEL32.dll']));
    const ia32 = readAddon(await readFile(join(packageDir('@stoprocent/noble'), 'prebuilds', 'win32-ia32', 'node.napi.node')));
    expect(ia32.slices[0]?.cpu).toBe('ia32');
    const stub = readAddon(await readFile(join(packageDir('@stoprocent/bleno'), 'prebuilds', 'win32-x64', '@stoprocent+bleno.node')));
    expect(stub.slices[0]?.registration).toEqual({ kind: 'none' });
    const win: AddonTarget = { platform: 'win32', cpus: ['x64'], electronVersion: '45.4.1' };
    expect(addonProblem(noble, win)).toBeUndefined();
    expect(addonProblem(ia32, win)).toBe(
      'is built for ia32, not x64: it cannot load in Electron 45.4.1 (NODE_MODULE_VERSION 150) on win32-x64',
    );
    expect(addonProblem(stub, win)).toMatch(/^registers no module at all/);
  });

  it('a macOS universal prebuild (Mach-O fat): both slices, N-API; a universal app needs both', async () => {
    const info = readAddon(await readFile(join(packageDir('@stoprocent/noble'), 'prebuilds', 'darwin-x64+arm64', 'node.napi.node')));
    expect(info.format).toBe('macho');
    expect(info.slices.map((s) => [s.cpu, s.registration.kind])).toEqual([
      ['x64', 'napi'],
      ['arm64', 'napi'],
    ]);
    expect(addonProblem(info, { platform: 'darwin', cpus: ['x64', 'arm64'], electronVersion: '45.4.1' })).toBeUndefined();
    const thin = { ...info, slices: info.slices.filter((s) => s.cpu === 'x64') };
    expect(addonProblem(thin, { platform: 'darwin', cpus: ['x64', 'arm64'], electronVersion: '45.4.1' })).toMatch(
      /^is built for x64, not arm64/,
    );
  });

  it('anything else is AddonReadError, never another exception (truncated, corrupted, not a binary)', () => {
    expect(() => readAddon(Buffer.from('#!/bin/sh\necho not an addon\n'.repeat(4)))).toThrow(
      new AddonReadError('not an ELF, PE or Mach-O file'),
    );
    const good = built.get('napiExport') ?? Buffer.alloc(0);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: good.length }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
        (cut, flips) => {
          const bytes = Buffer.from(good.subarray(0, cut));
          for (const [at, value] of flips) if (bytes.length > 0) bytes[at % bytes.length] = value;
          try {
            readAddon(bytes);
          } catch (e) {
            expect(e).toBeInstanceOf(AddonReadError);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('whether it loads in the Electron the package ships', () => {
  it('Electron 45 is NODE_MODULE_VERSION 150, as node-abi (which @electron/rebuild uses) says', () => {
    const nodeAbi = createRequire(
      require.resolve('@electron/rebuild', {
        paths: [dirname(require.resolve('app-builder-lib', { paths: [dirname(require.resolve('electron-builder'))] }))],
      }),
    )('node-abi') as { getAbi(version: string, runtime: string): string };
    for (const major of Object.keys(ELECTRON_NODE_MODULE_VERSION))
      expect(String(electronAbi(`${major}.0.0`))).toBe(nodeAbi.getAbi(`${major}.0.0`, 'electron'));
    const pinned = (require('electron/package.json') as { version: string }).version;
    expect(String(electronAbi(pinned))).toBe(nodeAbi.getAbi(pinned, 'electron'));
    expect(() => electronAbi('99.0.0')).toThrow(/no NODE_MODULE_VERSION known for Electron 99\.0\.0/);
  });

  it.each([
    ['napiExport', undefined],
    ['napiImport', undefined],
    ['node150', undefined],
    [
      'node115',
      'registers node_register_module_v115: built for NODE_MODULE_VERSION 115, but Electron 45.4.1 (NODE_MODULE_VERSION 150) on linux-x64 loads only 150 or N-API',
    ],
    ['legacy', /^registers through node_module_register/],
    ['none', /^registers no module at all/],
  ] as const)('%s → %s', (kind, verdict) => {
    const problem = addonProblem(readAddon(built.get(kind) ?? Buffer.alloc(0)), LINUX);
    if (verdict === undefined) expect(problem).toBeUndefined();
    else if (typeof verdict === 'string') expect(problem).toBe(verdict);
    else expect(problem).toMatch(verdict);
  });

  it('another OS, another CPU and musl libc are refused whatever the registration', () => {
    const elf = readAddon(built.get('napiExport') ?? Buffer.alloc(0));
    expect(addonProblem(elf, { platform: 'win32', cpus: ['x64'], electronVersion: '45.4.1' })).toMatch(
      /^is a ELF file, built for another OS/,
    );
    expect(addonProblem(elf, { ...LINUX, cpus: ['arm64'] })).toMatch(/, not arm64: it cannot load/);
    const musl = { ...elf, slices: elf.slices.map((s) => ({ ...s, libraries: ['libc.musl-x86_64.so.1'] })) };
    expect(addonProblem(musl, LINUX)).toMatch(/^links libc\.musl-x86_64\.so\.1 \(musl libc\)/);
  });

  it('N-API wins over a NODE_MODULE_VERSION export in the same file', () => {
    expect(registrationOf(['node_register_module_v115', 'napi_register_module_v1'], [])).toEqual({
      kind: 'napi',
      via: 'exports napi_register_module_v1',
    });
    expect(registrationOf(['node_register_module_v115'], ['napi_module_register'])).toEqual({
      kind: 'napi',
      via: 'imports napi_module_register',
    });
  });
});
