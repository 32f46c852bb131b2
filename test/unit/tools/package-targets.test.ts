/**
 * The arches each OS's package is built for (electron-builder.yml) and what a build for each would ship
 * (tools/package/package-targets.ts): electron-builder's own file matcher applied with the `files` patterns
 * of electron-builder.yml to the Bluetooth packages' real prebuilds in node_modules (Linux, Windows and the
 * macOS fat ones), then the ABI/CPU check of the afterPack hook on what is left. The PC/SC addon exists here
 * only as npm ci built it (Linux x64 ELF): for another OS or CPU a real N-API addon of that OS and CPU stands
 * in for it, as npm ci would build it on that machine. Planted wrong ones — a pattern, a CPU, a stub — fail.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Configuration } from 'electron-builder';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadWithElectronBuilder, policyProblems } from '../../../tools/package/builder-config.js';
import { readAddon } from '../../../tools/package/native-addons.js';
import {
  declaredArches,
  missingAddonProblems,
  nodeModuleExclusions,
  packageOfPath,
  preflightProblems,
  shippedAddonProblems,
  shippedAddons,
  type BuildArch,
  type PackageTarget,
} from '../../../tools/package/package-targets.js';
import { loadProductionModules } from '../../../tools/package/production-modules.js';
import type { PackageOs } from '../../../tools/package/signing.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const MODULES = loadProductionModules(REPO);
const ELECTRON = '45.4.1';
const SMARTCARD = 'node_modules/smartcard/build/Release/smartcard_napi.node';
const NOBLE_MAC = 'node_modules/@stoprocent/noble/prebuilds/darwin-x64+arm64/node.napi.node';
const BLENO_MAC = 'node_modules/@stoprocent/bleno/prebuilds/darwin-x64+arm64/@stoprocent+bleno.node';
const NOBLE_WIN = 'node_modules/@stoprocent/noble/prebuilds/win32-x64/node.napi.node';
const HCI_LINUX_X64 = 'node_modules/@stoprocent/bluetooth-hci-socket/prebuilds/linux-x64/@stoprocent+bluetooth-hci-socket.glibc.node';
const HCI_LINUX_ARM64 = 'node_modules/@stoprocent/bluetooth-hci-socket/prebuilds/linux-arm64/@stoprocent+bluetooth-hci-socket.armv8.node';

const read = (file: string): Buffer => readFileSync(join(REPO, file));

/** One CPU's slice of a Mach-O universal file: a thin Mach-O, as a one-CPU build would make. */
function thinSlice(fat: Buffer, cpu: 'x64' | 'arm64'): Buffer {
  const wanted = cpu === 'x64' ? 0x01000007 : 0x0100000c;
  for (let i = 0; i < fat.readUInt32BE(4); i++) {
    const at = 8 + 20 * i;
    if (fat.readUInt32BE(at) === wanted)
      return Buffer.from(fat.subarray(fat.readUInt32BE(at + 8), fat.readUInt32BE(at + 8) + fat.readUInt32BE(at + 12)));
  }
  throw new Error(`no ${cpu} slice`);
}

/**
 * smartcard's addon as npm ci builds it on a build machine of the target's OS and CPU: the real one on this
 * machine's; elsewhere a real N-API addon of that OS and CPU (a slice of noble's macOS build, noble's Windows
 * x64 build, the HCI socket's Linux arm64 build).
 */
function smartcardFor(target: PackageTarget): Buffer {
  if (target.os === 'mac') return thinSlice(read(NOBLE_MAC), target.arch === 'arm64' ? 'arm64' : 'x64');
  if (target.os === 'win') return read(NOBLE_WIN);
  return target.arch === process.arch ? read(SMARTCARD) : read(target.arch === 'arm64' ? HCI_LINUX_ARM64 : HCI_LINUX_X64);
}

function readerWith(smartcard: Buffer): (file: string) => Buffer {
  return (file) => (file === SMARTCARD ? smartcard : read(file));
}

let config: Configuration;
let declared: PackageTarget[];

beforeAll(async () => {
  config = await loadWithElectronBuilder(REPO, 'electron-builder.yml');
  declared = (['linux', 'win', 'mac'] as const).flatMap((os) => declaredArches(config, os).map((arch) => ({ os, arch })));
}, 30_000);

const ship = (target: PackageTarget, exclusions = nodeModuleExclusions(config, target.os)): string[] =>
  shippedAddons(REPO, exclusions, target, MODULES);

describe('the arches electron-builder.yml declares', () => {
  it('Linux and macOS x64 and arm64, Windows x64: every target declares them (none left to the build machine)', () => {
    expect(declared).toEqual([
      { os: 'linux', arch: 'x64' },
      { os: 'linux', arch: 'arm64' },
      { os: 'win', arch: 'x64' },
      { os: 'mac', arch: 'x64' },
      { os: 'mac', arch: 'arm64' },
    ]);
  });

  it('a target without arch, or two targets of an OS with different arches, is a policy problem', () => {
    const mac = config.mac ?? {};
    const noArch = { ...config, mac: { ...mac, target: ['dmg', { target: 'zip', arch: ['x64', 'arm64'] }] } } as Configuration;
    expect(() => declaredArches(noArch, 'mac')).toThrow("mac.target dmg declares no arch (it would be the build machine's)");
    expect(policyProblems(REPO, 'production', noArch)).toContain(
      "electron-builder.yml: mac.target dmg declares no arch (it would be the build machine's)",
    );
    const mixed = {
      ...config,
      mac: {
        ...mac,
        target: [
          { target: 'dmg', arch: 'universal' },
          { target: 'zip', arch: ['x64', 'arm64'] },
        ],
      },
    } as Configuration;
    expect(() => declaredArches(mixed, 'mac')).toThrow(/every target of an OS is built for the same arches/);
    expect(policyProblems(REPO, 'production', config)).toEqual([]);
  });
});

describe('what each declared target ships, through the files patterns, and whether it loads there', () => {
  const expected: Readonly<Record<PackageOs, Readonly<Partial<Record<BuildArch, readonly string[]>>>>> = {
    linux: { x64: [HCI_LINUX_X64, SMARTCARD], arm64: [HCI_LINUX_ARM64, SMARTCARD] },
    win: { x64: [NOBLE_WIN, SMARTCARD] },
    mac: { x64: [BLENO_MAC, NOBLE_MAC, SMARTCARD], arm64: [BLENO_MAC, NOBLE_MAC, SMARTCARD] },
  };

  it('every declared target has its expectation here', () => {
    for (const t of declared) expect(expected[t.os][t.arch], `${t.os} ${t.arch}`).toBeDefined();
  });

  it.each([
    ['linux', 'x64'],
    ['linux', 'arm64'],
    ['win', 'x64'],
    ['mac', 'x64'],
    ['mac', 'arm64'],
  ] as const)('%s %s: only its OS and CPU’s Bluetooth prebuild(s) and the PC/SC addon; each loads in Electron there', (os, arch) => {
    const target = { os, arch };
    const files = ship(target);
    expect(files).toEqual(expected[os][arch]);
    expect(shippedAddonProblems(REPO, files, target, ELECTRON, readerWith(smartcardFor(target)))).toEqual([]);
  });

  it('the macOS prebuilds that ship are fat (x64 + arm64): one file serves both Mac builds', () => {
    for (const file of [NOBLE_MAC, BLENO_MAC]) expect(readAddon(read(file)).slices.map((s) => s.cpu)).toEqual(['x64', 'arm64']);
  });
});

describe('planted wrong targets fail', () => {
  const darwinArm64: PackageTarget = { os: 'mac', arch: 'arm64' };

  it('an x64-only PC/SC addon (Mach-O) in the macOS arm64 build, and an arm64-only one in the x64 build', () => {
    const files = ship(darwinArm64);
    expect(shippedAddonProblems(REPO, files, darwinArm64, ELECTRON, readerWith(thinSlice(read(NOBLE_MAC), 'x64')))).toEqual([
      `macOS arm64: ${SMARTCARD} is built for x64, not arm64: it cannot load in Electron 45.4.1 (NODE_MODULE_VERSION 150) on darwin-arm64`,
    ]);
    expect(
      shippedAddonProblems(
        REPO,
        ship({ os: 'mac', arch: 'x64' }),
        { os: 'mac', arch: 'x64' },
        ELECTRON,
        readerWith(thinSlice(read(NOBLE_MAC), 'arm64')),
      ),
    ).toEqual([
      `macOS x64: ${SMARTCARD} is built for arm64, not x64: it cannot load in Electron 45.4.1 (NODE_MODULE_VERSION 150) on darwin-x64`,
    ]);
  });

  it('a universal macOS app: the fat prebuilds pass, a one-CPU PC/SC addon does not (the merge keeps identical files as they are)', () => {
    const universal: PackageTarget = { os: 'mac', arch: 'universal' };
    const files = ship(universal);
    // electron-builder packs the x64 and the arm64 app with their own ${arch}: the fat prebuilds are kept.
    expect(files).toEqual([BLENO_MAC, NOBLE_MAC, SMARTCARD]);
    expect(shippedAddonProblems(REPO, files, universal, ELECTRON, readerWith(read(NOBLE_MAC)))).toEqual([]);
    expect(shippedAddonProblems(REPO, files, universal, ELECTRON, readerWith(thinSlice(read(NOBLE_MAC), 'arm64')))).toEqual([
      `macOS universal: ${SMARTCARD} is built for arm64, not x64: it cannot load in Electron 45.4.1 (NODE_MODULE_VERSION 150) on darwin-x64+arm64`,
    ]);
  });

  it('a prebuilds pattern that drops the fat darwin-x64+arm64 folders leaves macOS without noble and bleno', () => {
    const exact = nodeModuleExclusions(config, 'mac').map((p) =>
      p.replace('prebuilds/!(${platform}-*${arch}*)', 'prebuilds/!(${platform}-${arch})'),
    );
    expect(exact).not.toEqual(nodeModuleExclusions(config, 'mac'));
    const files = ship(darwinArm64, exact);
    expect(files).toEqual([SMARTCARD]);
    expect(shippedAddonProblems(REPO, files, darwinArm64, ELECTRON, readerWith(smartcardFor(darwinArm64)))).toEqual([
      'macOS arm64: no native addon of @stoprocent/noble is packaged for darwin: it needs one (its prebuild for this OS and CPU, or for smartcard the one npm ci built)',
      'macOS arm64: no native addon of @stoprocent/bleno is packaged for darwin: it needs one (its prebuild for this OS and CPU, or for smartcard the one npm ci built)',
    ]);
  });

  it('an ia32 PE in the Windows x64 build; an arm64 ELF in the Linux x64 build; an x64 ELF in the Linux arm64 build', () => {
    const win: PackageTarget = { os: 'win', arch: 'x64' };
    expect(
      shippedAddonProblems(
        REPO,
        ship(win),
        win,
        ELECTRON,
        readerWith(read('node_modules/@stoprocent/noble/prebuilds/win32-ia32/node.napi.node')),
      ),
    ).toEqual([
      `Windows x64: ${SMARTCARD} is built for ia32, not x64: it cannot load in Electron 45.4.1 (NODE_MODULE_VERSION 150) on win32-x64`,
    ]);
    const linuxX64: PackageTarget = { os: 'linux', arch: 'x64' };
    expect(shippedAddonProblems(REPO, ship(linuxX64), linuxX64, ELECTRON, readerWith(read(HCI_LINUX_ARM64)))).toEqual([
      `Linux x64: ${SMARTCARD} is built for arm64, not x64: it cannot load in Electron 45.4.1 (NODE_MODULE_VERSION 150) on linux-x64`,
    ]);
    const linuxArm64: PackageTarget = { os: 'linux', arch: 'arm64' };
    expect(shippedAddonProblems(REPO, ship(linuxArm64), linuxArm64, ELECTRON, readerWith(read(HCI_LINUX_X64)))).toEqual([
      `Linux arm64: ${SMARTCARD} is built for x64, not arm64: it cannot load in Electron 45.4.1 (NODE_MODULE_VERSION 150) on linux-arm64`,
    ]);
  });

  it('without the Windows stub exclusions, the HCI socket’s and bleno’s empty Windows builds would ship and fail', () => {
    const win: PackageTarget = { os: 'win', arch: 'x64' };
    const loose = nodeModuleExclusions(config, 'win').filter(
      (p) => !p.includes('bleno/prebuilds/win32-') && !p.includes('bluetooth-hci-socket/prebuilds/{darwin,win32}-'),
    );
    const files = ship(win, loose);
    const problems = shippedAddonProblems(REPO, files, win, ELECTRON, readerWith(smartcardFor(win)));
    expect(problems).toEqual([
      'Windows x64: node_modules/@stoprocent/bleno/prebuilds/win32-x64/@stoprocent+bleno.node registers no module at all (neither N-API nor a NODE_MODULE_VERSION symbol): no runtime can load it; leave it out of the package',
      'Windows x64: node_modules/@stoprocent/bluetooth-hci-socket/prebuilds/win32-x64/@stoprocent+bluetooth-hci-socket.node registers no module at all (neither N-API nor a NODE_MODULE_VERSION symbol): no runtime can load it; leave it out of the package',
    ]);
  });

  it('without the musl exclusion the Linux build would ship the musl prebuild, which Electron (glibc) cannot load', () => {
    const linux: PackageTarget = { os: 'linux', arch: 'x64' };
    const files = ship(
      linux,
      nodeModuleExclusions(config, 'linux').filter((p) => !p.includes('musl')),
    );
    expect(files).toContain('node_modules/@stoprocent/bluetooth-hci-socket/prebuilds/linux-x64/@stoprocent+bluetooth-hci-socket.musl.node');
    expect(shippedAddonProblems(REPO, files, linux, ELECTRON, readerWith(smartcardFor(linux)))).toEqual([
      expect.stringMatching(
        /^Linux x64: node_modules\/@stoprocent\/bluetooth-hci-socket\/prebuilds\/linux-x64\/@stoprocent\+bluetooth-hci-socket\.musl\.node links libc\.musl-x86_64\.so\.1 \(musl libc\)/,
      ),
    ]);
  });
});

describe('the package script’s check before electron-builder runs', () => {
  const other: BuildArch = process.arch === 'arm64' ? 'x64' : 'arm64';

  it('refuses a Linux build for the other CPU: npm ci compiled the PC/SC addon for this one', () => {
    const problems = preflightProblems({
      root: REPO,
      config,
      target: { os: 'linux', arch: other },
      modules: MODULES,
      electronVersion: ELECTRON,
      hostPlatform: 'linux',
    });
    expect(problems[0]).toMatch(new RegExp(`^Linux ${other}: ${SMARTCARD} is built for ${process.arch}, not ${other}`));
    expect(problems.at(-1)).toMatch(
      new RegExp(
        `^the PC/SC addon \\(smartcard\\) is compiled by npm ci for the CPU of the Node that ran it: build the Linux ${other} package on an ${other} machine after npm ci there`,
      ),
    );
    expect(
      preflightProblems({
        root: REPO,
        config,
        target: { os: 'linux', arch: process.arch as BuildArch },
        modules: MODULES,
        electronVersion: ELECTRON,
        hostPlatform: 'linux',
      }),
    ).toEqual([]);
  });

  it('refuses a build for another OS than the build machine’s', () => {
    expect(
      preflightProblems({
        root: REPO,
        config,
        target: { os: 'mac', arch: 'arm64' },
        modules: MODULES,
        electronVersion: ELECTRON,
        hostPlatform: 'linux',
      }),
    ).toEqual([
      'a macOS package is built on macOS, and this machine runs linux: the files patterns keep the Bluetooth prebuilds of the build machine\'s OS (${platform}), and npm ci compiled the PC/SC addon for this machine (docs/packaging.md, "Which CPUs each OS builds")',
    ]);
  });

  it('names the package of an addon path, innermost node_modules first; a missing required addon is named', () => {
    expect(packageOfPath('app.asar.unpacked/node_modules/@stoprocent/noble/prebuilds/darwin-x64+arm64/node.napi.node')).toBe(
      '@stoprocent/noble',
    );
    expect(packageOfPath('node_modules/a/node_modules/smartcard/build/Release/x.node')).toBe('smartcard');
    expect(packageOfPath('reader.node')).toBeUndefined();
    expect(missingAddonProblems([SMARTCARD], 'win32', 'x')).toEqual([
      'x: no native addon of @stoprocent/noble is packaged for win32: it needs one (its prebuild for this OS and CPU, or for smartcard the one npm ci built)',
    ]);
  });
});
