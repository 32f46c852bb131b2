/**
 * What a native addon (`.node`) is built for, read from the file itself: its format (ELF, PE, Mach-O — fat
 * files slice by slice), CPU, and how it registers with the runtime that loads it. Electron loads an addon
 * only if it is N-API (any ABI) or was built for Electron's own NODE_MODULE_VERSION, so that registration
 * is what decides whether a packaged addon will load (nodejs.org/api/addons.html, nodejs.org/api/n-api.html;
 * electronjs.org/docs/latest/tutorial/using-native-node-modules):
 *
 * - `napi_register_module_v1` exported (NAPI_MODULE_INIT, node-addon-api), or `napi_module_register`
 *   imported (the static-constructor NAPI_MODULE form) → N-API;
 * - `node_register_module_v<N>` exported (NODE_MODULE and NAN) → built for NODE_MODULE_VERSION N only;
 * - `node_module_register` imported (the old static-constructor NODE_MODULE) → a legacy addon whose ABI is
 *   in a data structure, not a symbol: not accepted;
 * - none of these → the file registers no module at all (an empty stub, as noble's and bleno's Linux
 *   builds are) and cannot be loaded by any runtime.
 *
 * Only the symbol tables are read (ELF .dynsym, PE export and import directories including delay imports,
 * Mach-O LC_SYMTAB); nothing is executed. A truncated or malformed file is reported, never thrown past
 * `readAddon`'s caller as anything but AddonReadError.
 */

export class AddonReadError extends Error {
  override readonly name = 'AddonReadError';
}

export type AddonFormat = 'elf' | 'pe' | 'macho';
/** Node's names for CPUs (process.arch). */
export type AddonCpu = 'x64' | 'arm64' | 'ia32' | 'arm' | `other(${string})`;

export type Registration =
  | { readonly kind: 'napi'; readonly via: string }
  | { readonly kind: 'node-abi'; readonly abi: number }
  | { readonly kind: 'legacy' }
  | { readonly kind: 'none' };

export interface AddonSlice {
  readonly cpu: AddonCpu;
  readonly registration: Registration;
  /** ELF: DT_NEEDED libraries (musl or glibc shows here). PE: imported DLLs. Mach-O: empty. */
  readonly libraries: readonly string[];
}

export interface AddonInfo {
  readonly format: AddonFormat;
  /** One slice; several for a Mach-O universal (fat) file. */
  readonly slices: readonly AddonSlice[];
}

const NAPI_EXPORT = 'napi_register_module_v1';
const NAPI_IMPORT = 'napi_module_register';
const NODE_EXPORT = /^node_register_module_v(\d+)$/;
const LEGACY_IMPORT = 'node_module_register';

/** The registration a set of defined and imported symbol names amounts to (N-API wins over an ABI export). */
export function registrationOf(defined: Iterable<string>, imported: Iterable<string>): Registration {
  let abi: number | undefined;
  for (const name of defined) {
    if (name === NAPI_EXPORT) return { kind: 'napi', via: `exports ${NAPI_EXPORT}` };
    const m = NODE_EXPORT.exec(name);
    if (m?.[1] !== undefined) abi = Number(m[1]);
  }
  let legacy = false;
  for (const name of imported) {
    if (name === NAPI_IMPORT) return { kind: 'napi', via: `imports ${NAPI_IMPORT}` };
    if (name === LEGACY_IMPORT) legacy = true;
  }
  if (abi !== undefined) return { kind: 'node-abi', abi };
  return legacy ? { kind: 'legacy' } : { kind: 'none' };
}

/** Bounds-checked reads: a malformed file gives AddonReadError, never a RangeError or a wrong value. */
class Reader {
  constructor(
    readonly bytes: Buffer,
    readonly little: boolean,
  ) {}

  private check(offset: number, size: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + size > this.bytes.length) {
      throw new AddonReadError(`truncated or malformed file (read of ${size} bytes at ${offset}, file has ${this.bytes.length})`);
    }
  }
  u8(o: number): number {
    this.check(o, 1);
    return this.bytes.readUInt8(o);
  }
  u16(o: number): number {
    this.check(o, 2);
    return this.little ? this.bytes.readUInt16LE(o) : this.bytes.readUInt16BE(o);
  }
  u32(o: number): number {
    this.check(o, 4);
    return this.little ? this.bytes.readUInt32LE(o) : this.bytes.readUInt32BE(o);
  }
  u64(o: number): number {
    this.check(o, 8);
    const v = this.little ? this.bytes.readBigUInt64LE(o) : this.bytes.readBigUInt64BE(o);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new AddonReadError(`offset out of range at ${o}`);
    return Number(v);
  }
  /** A NUL-terminated string starting at `o`, at most `max` bytes. */
  cstring(o: number, max = 4096): string {
    this.check(o, 1);
    const end = this.bytes.indexOf(0, o);
    if (end < 0 || end - o > max) throw new AddonReadError(`unterminated string at ${o}`);
    return this.bytes.toString('latin1', o, end);
  }
}

// ---------------------------------------------------------------- ELF

const ELF_CPU: Readonly<Record<number, AddonCpu>> = { 3: 'ia32', 40: 'arm', 62: 'x64', 183: 'arm64' };
const SHT_DYNSYM = 11;
const SHT_DYNAMIC = 6;
const DT_NEEDED = 1;
const SHN_UNDEF = 0;

function readElf(bytes: Buffer): AddonInfo {
  const klass = bytes[4];
  const data = bytes[5];
  if ((klass !== 1 && klass !== 2) || (data !== 1 && data !== 2)) throw new AddonReadError('ELF with an unknown class or byte order');
  const is64 = klass === 2;
  const r = new Reader(bytes, data === 1);
  const machine = r.u16(18);
  const shoff = is64 ? r.u64(0x28) : r.u32(0x20);
  const shentsize = r.u16(is64 ? 0x3a : 0x2e);
  const shnum = r.u16(is64 ? 0x3c : 0x30);
  if (shnum > 4096) throw new AddonReadError(`implausible section count ${shnum}`);
  interface Section {
    type: number;
    offset: number;
    size: number;
    link: number;
    entsize: number;
  }
  const sections: Section[] = [];
  for (let i = 0; i < shnum; i++) {
    const at = shoff + i * shentsize;
    sections.push(
      is64
        ? { type: r.u32(at + 4), offset: r.u64(at + 0x18), size: r.u64(at + 0x20), link: r.u32(at + 0x28), entsize: r.u64(at + 0x38) }
        : { type: r.u32(at + 4), offset: r.u32(at + 0x10), size: r.u32(at + 0x14), link: r.u32(at + 0x18), entsize: r.u32(at + 0x24) },
    );
  }
  const defined: string[] = [];
  const imported: string[] = [];
  const dynsym = sections.find((s) => s.type === SHT_DYNSYM);
  if (dynsym !== undefined) {
    const strtab = sections[dynsym.link];
    if (strtab === undefined) throw new AddonReadError('.dynsym links to no string table');
    const entsize = dynsym.entsize || (is64 ? 24 : 16);
    const count = Math.floor(dynsym.size / entsize);
    if (count > 1_000_000) throw new AddonReadError(`implausible symbol count ${count}`);
    for (let i = 1; i < count; i++) {
      const at = dynsym.offset + i * entsize;
      const nameOffset = r.u32(at);
      const shndx = is64 ? r.u16(at + 6) : r.u16(at + 14);
      const name = r.cstring(strtab.offset + nameOffset);
      (shndx === SHN_UNDEF ? imported : defined).push(name);
    }
  }
  const libraries: string[] = [];
  const dynamic = sections.find((s) => s.type === SHT_DYNAMIC);
  if (dynamic !== undefined) {
    const strtab = sections[dynamic.link];
    const entsize = is64 ? 16 : 8;
    for (let at = dynamic.offset; at + entsize <= dynamic.offset + dynamic.size; at += entsize) {
      const tag = is64 ? r.u64(at) : r.u32(at);
      if (tag === 0) break;
      const value = is64 ? r.u64(at + 8) : r.u32(at + 4);
      if (tag === DT_NEEDED && strtab !== undefined) libraries.push(r.cstring(strtab.offset + value));
    }
  }
  return {
    format: 'elf',
    slices: [{ cpu: ELF_CPU[machine] ?? `other(${machine})`, registration: registrationOf(defined, imported), libraries }],
  };
}

// ---------------------------------------------------------------- PE

const PE_CPU: Readonly<Record<number, AddonCpu>> = { 0x8664: 'x64', 0x14c: 'ia32', 0xaa64: 'arm64', 0x1c4: 'arm' };

function readPe(bytes: Buffer): AddonInfo {
  const r = new Reader(bytes, true);
  const pe = r.u32(0x3c);
  if (r.u32(pe) !== 0x00004550) throw new AddonReadError('MZ file without a PE header');
  const machine = r.u16(pe + 4);
  const sectionCount = r.u16(pe + 6);
  const optionalSize = r.u16(pe + 20);
  const optional = pe + 24;
  const magic = r.u16(optional);
  if (magic !== 0x10b && magic !== 0x20b) throw new AddonReadError(`unknown PE optional header 0x${magic.toString(16)}`);
  const is64 = magic === 0x20b;
  const directories = optional + (is64 ? 112 : 96);
  const directoryCount = r.u32(optional + (is64 ? 108 : 92));
  const directory = (i: number): { rva: number; size: number } =>
    i < directoryCount ? { rva: r.u32(directories + 8 * i), size: r.u32(directories + 8 * i + 4) } : { rva: 0, size: 0 };
  const sections: { va: number; size: number; raw: number }[] = [];
  const table = optional + optionalSize;
  for (let i = 0; i < sectionCount; i++) {
    const at = table + 40 * i;
    sections.push({ va: r.u32(at + 12), size: Math.max(r.u32(at + 8), r.u32(at + 16)), raw: r.u32(at + 20) });
  }
  const offsetOf = (rva: number): number => {
    const section = sections.find((s) => rva >= s.va && rva < s.va + s.size);
    if (section === undefined) throw new AddonReadError(`RVA 0x${rva.toString(16)} is in no section`);
    return rva - section.va + section.raw;
  };

  const defined: string[] = [];
  const exports = directory(0);
  if (exports.rva !== 0) {
    const at = offsetOf(exports.rva);
    const nameCount = r.u32(at + 24);
    if (nameCount > 100_000) throw new AddonReadError(`implausible export count ${nameCount}`);
    const names = offsetOf(r.u32(at + 32));
    for (let i = 0; i < nameCount; i++) defined.push(r.cstring(offsetOf(r.u32(names + 4 * i))));
  }

  const imported: string[] = [];
  const libraries: string[] = [];
  const thunkSize = is64 ? 8 : 4;
  const readThunks = (rva: number): void => {
    if (rva === 0) return;
    for (let at = offsetOf(rva), n = 0; ; at += thunkSize, n++) {
      if (n > 100_000) throw new AddonReadError('unterminated import name table');
      // The top bit marks an import by ordinal (no name); otherwise the low 31 bits are a hint/name RVA.
      const low = r.u32(at);
      const high = is64 ? r.u32(at + 4) : 0;
      if (low === 0 && high === 0) return;
      const byOrdinal = is64 ? (high & 0x80000000) !== 0 : (low & 0x80000000) !== 0;
      if (!byOrdinal) imported.push(r.cstring(offsetOf(low & 0x7fffffff) + 2));
    }
  };
  // Import directory: 20-byte descriptors (OriginalFirstThunk, …, Name, FirstThunk); delay imports: 32 bytes.
  for (const [index, size, nameAt, thunksAt] of [
    [1, 20, 12, 0],
    [13, 32, 4, 16],
  ] as const) {
    const dir = directory(index);
    if (dir.rva === 0) continue;
    for (let at = offsetOf(dir.rva), n = 0; ; at += size, n++) {
      if (n > 10_000) throw new AddonReadError('unterminated import directory');
      const name = r.u32(at + nameAt);
      if (name === 0) break;
      libraries.push(r.cstring(offsetOf(name)));
      const thunks = r.u32(at + thunksAt) || (index === 1 ? r.u32(at + 16) : 0);
      readThunks(thunks);
    }
  }
  return {
    format: 'pe',
    slices: [{ cpu: PE_CPU[machine] ?? `other(0x${machine.toString(16)})`, registration: registrationOf(defined, imported), libraries }],
  };
}

// ---------------------------------------------------------------- Mach-O

const MACHO_CPU: Readonly<Record<number, AddonCpu>> = { 0x01000007: 'x64', 0x0100000c: 'arm64', 7: 'ia32', 12: 'arm' };
const LC_SYMTAB = 0x2;
const N_TYPE = 0x0e;
const N_SECT = 0x0e;
const N_UNDF = 0x0;
const N_EXT = 0x01;
const N_STAB = 0xe0;

function readMachoSlice(bytes: Buffer): AddonSlice {
  const magic = bytes.readUInt32LE(0);
  const is64 = magic === 0xfeedfacf;
  const r = new Reader(bytes, true);
  const cpu = r.u32(4);
  const commandCount = r.u32(16);
  if (commandCount > 10_000) throw new AddonReadError(`implausible load command count ${commandCount}`);
  const defined: string[] = [];
  const imported: string[] = [];
  for (let i = 0, at = is64 ? 32 : 28; i < commandCount; i++) {
    const cmd = r.u32(at);
    const size = r.u32(at + 4);
    if (size < 8) throw new AddonReadError('load command smaller than its header');
    if (cmd === LC_SYMTAB) {
      const symoff = r.u32(at + 8);
      const nsyms = r.u32(at + 12);
      const stroff = r.u32(at + 16);
      if (nsyms > 1_000_000) throw new AddonReadError(`implausible symbol count ${nsyms}`);
      const entry = is64 ? 16 : 12;
      for (let s = 0; s < nsyms; s++) {
        const sym = symoff + s * entry;
        const type = r.u8(sym + 4);
        if ((type & N_STAB) !== 0 || (type & N_EXT) === 0) continue;
        // C symbols carry a leading underscore on Mach-O.
        const name = r.cstring(stroff + r.u32(sym)).replace(/^_/, '');
        if ((type & N_TYPE) === N_SECT) defined.push(name);
        else if ((type & N_TYPE) === N_UNDF) imported.push(name);
      }
    }
    at += size;
  }
  return { cpu: MACHO_CPU[cpu] ?? `other(0x${cpu.toString(16)})`, registration: registrationOf(defined, imported), libraries: [] };
}

function readMacho(bytes: Buffer): AddonInfo {
  if (bytes.readUInt32BE(0) === 0xcafebabe) {
    const r = new Reader(bytes, false);
    const count = r.u32(4);
    if (count === 0 || count > 16) throw new AddonReadError(`implausible universal slice count ${count}`);
    const slices: AddonSlice[] = [];
    for (let i = 0; i < count; i++) {
      const at = 8 + 20 * i;
      const offset = r.u32(at + 8);
      const size = r.u32(at + 12);
      if (offset + size > bytes.length) throw new AddonReadError('universal slice beyond the end of the file');
      slices.push(readMachoSlice(bytes.subarray(offset, offset + size)));
    }
    return { format: 'macho', slices };
  }
  return { format: 'macho', slices: [readMachoSlice(bytes)] };
}

/** Reads a native addon's format, CPU(s) and registration. Throws AddonReadError for anything else. */
export function readAddon(bytes: Buffer): AddonInfo {
  if (bytes.length < 64) throw new AddonReadError(`${bytes.length} bytes: too short for a native module`);
  try {
    if (bytes.readUInt32BE(0) === 0x7f454c46) return readElf(bytes);
    if (bytes.readUInt16LE(0) === 0x5a4d) return readPe(bytes);
    const le = bytes.readUInt32LE(0);
    if (le === 0xfeedfacf || le === 0xfeedface || bytes.readUInt32BE(0) === 0xcafebabe) return readMacho(bytes);
  } catch (e) {
    if (e instanceof AddonReadError) throw e;
    throw new AddonReadError(`malformed file: ${(e as Error).message}`);
  }
  throw new AddonReadError('not an ELF, PE or Mach-O file');
}

// ---------------------------------------------------------------- judging against the package's runtime

/**
 * NODE_MODULE_VERSION of each Electron major the project has shipped with (node-abi's registry, which
 * @electron/rebuild uses; test/package/native-addons.test.ts checks this table against the installed
 * node-abi). A new Electron major needs its line here before it can be packaged.
 */
export const ELECTRON_NODE_MODULE_VERSION: Readonly<Record<number, number>> = { 45: 150 };

export function electronAbi(electronVersion: string): number {
  const major = Number(/^v?(\d+)\./.exec(electronVersion)?.[1]);
  const abi = ELECTRON_NODE_MODULE_VERSION[major];
  if (abi === undefined) {
    throw new Error(
      `no NODE_MODULE_VERSION known for Electron ${electronVersion}: add it to ELECTRON_NODE_MODULE_VERSION (tools/package/native-addons.ts) from node-abi's abi_registry.json`,
    );
  }
  return abi;
}

export type TargetCpu = 'x64' | 'arm64' | 'ia32' | 'arm';

export interface AddonTarget {
  /** process.platform values: the OS the package is for. */
  readonly platform: 'linux' | 'win32' | 'darwin';
  /** The CPUs the package runs on: one, or x64 + arm64 for a macOS universal app (every addon needs both). */
  readonly cpus: readonly TargetCpu[];
  readonly electronVersion: string;
}

const FORMAT_OF: Readonly<Record<AddonTarget['platform'], AddonFormat>> = { linux: 'elf', win32: 'pe', darwin: 'macho' };

/** Why this addon cannot load in the target Electron, or undefined when it can. */
export function addonProblem(info: AddonInfo, target: AddonTarget): string | undefined {
  const abi = electronAbi(target.electronVersion);
  const runtime = `Electron ${target.electronVersion} (NODE_MODULE_VERSION ${abi}) on ${target.platform}-${target.cpus.join('+')}`;
  if (info.format !== FORMAT_OF[target.platform]) return `is a ${info.format.toUpperCase()} file, built for another OS than ${runtime}`;
  for (const cpu of target.cpus) {
    const problem = sliceProblem(
      info.slices.find((s) => s.cpu === cpu),
      cpu,
      abi,
      runtime,
      info.slices,
    );
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function sliceProblem(
  slice: AddonSlice | undefined,
  cpu: TargetCpu,
  abi: number,
  runtime: string,
  all: readonly AddonSlice[],
): string | undefined {
  if (slice === undefined) return `is built for ${all.map((s) => s.cpu).join(' + ')}, not ${cpu}: it cannot load in ${runtime}`;
  // musl's libc is `libc.musl-<arch>.so.1` (Alpine) or plain `libc.so`; glibc's is `libc.so.6`.
  const musl = slice.libraries.find((l) => /musl/i.test(l) || l === 'libc.so');
  if (musl !== undefined) return `links ${musl} (musl libc); Electron is a glibc program: it cannot load in ${runtime}`;
  const reg = slice.registration;
  switch (reg.kind) {
    case 'napi':
      return undefined;
    case 'node-abi':
      return reg.abi === abi
        ? undefined
        : `registers node_register_module_v${reg.abi}: built for NODE_MODULE_VERSION ${reg.abi}, but ${runtime} loads only ${abi} or N-API`;
    case 'legacy':
      return `registers through node_module_register (an old NODE_MODULE addon whose ABI no symbol tells): not loadable with certainty in ${runtime}; ship an N-API build`;
    case 'none':
      return `registers no module at all (neither N-API nor a NODE_MODULE_VERSION symbol): no runtime can load it; leave it out of the package`;
  }
}

/** A one-word description for the report. */
export function describeRegistration(reg: Registration): string {
  return reg.kind === 'napi' ? 'N-API' : reg.kind === 'node-abi' ? `NODE_MODULE_VERSION ${reg.abi}` : reg.kind;
}
