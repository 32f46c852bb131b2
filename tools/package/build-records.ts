/**
 * The records a package build leaves beside its installers: the SBOM of what ships
 * (tools/supply-chain/sbom.ts) and the provenance statement naming the packed bytes
 * (tools/package/provenance.ts), as `<artifact base>.sbom.cdx.json` and `<artifact base>.provenance.json`
 * in the output folder (`release/` unless `-c.directories.output=`).
 */
import { join } from 'node:path';
import { runSbom } from '../supply-chain/sbom.js';
import type { Flavour } from './builder-config.js';
import { recordBaseName, writeProvenance, type Provenance } from './provenance.js';

export type RecordOs = 'linux' | 'win' | 'mac';

/** Where electron-builder leaves the packed app's resources for one OS and arch (`--dir` or before the installers). */
export function packedResourcesDir(os: RecordOs, arch: string, out: string, productFilename: string): string {
  if (os === 'mac') return join(out, arch === 'x64' ? 'mac' : `mac-${arch}`, `${productFilename}.app`, 'Contents', 'Resources');
  const folder = os === 'win' ? 'win' : 'linux';
  return join(out, arch === 'x64' ? `${folder}-unpacked` : `${folder}-${arch}-unpacked`, 'resources');
}

export interface BuildRecordOptions {
  readonly root: string;
  readonly out: string;
  readonly resourcesDir: string;
  readonly flavour: Flavour;
  readonly os: RecordOs;
  readonly arch: string;
  readonly version: string;
  readonly configFile: string;
  readonly electronVersion: string;
  readonly sourceDateEpoch: number;
  readonly startedOn: Date;
}

export interface BuildRecords {
  readonly sbomFile: string;
  readonly provenanceFile: string;
  readonly provenance: Provenance;
}

export async function writeBuildRecords(options: BuildRecordOptions): Promise<BuildRecords> {
  const base = recordBaseName(options.flavour, options.version, options.os, options.arch);
  const sbomFile = join(options.out, `${base}.sbom.cdx.json`);
  const sbom = await runSbom(options.root, sbomFile);
  if (sbom.code !== 0) throw new Error(`the SBOM for the provenance could not be written:\n${sbom.stderr}`);
  const provenanceFile = join(options.out, `${base}.provenance.json`);
  const provenance = await writeProvenance({ ...options, sbomFile }, provenanceFile);
  return { sbomFile, provenanceFile, provenance };
}
