/**
 * The provenance each package build writes beside its SBOM (docs/packaging.md, "Provenance"): an in-toto
 * Statement v1 (github.com/in-toto/attestation/blob/main/spec/v1/statement.md) whose predicate is SLSA
 * Provenance v1 (slsa.dev/provenance/v1). It names what was built — app.asar and every native addon the
 * package ships, by SHA-256 — and from what: the commit, the lockfile's digest, the flavour, OS and CPU,
 * SOURCE_DATE_EPOCH, and the Node, npm, electron-builder and Electron that made it; the SBOM is a
 * byproduct, by digest. The statement is not signed here: signing it is the release pipeline's
 * (cosign attest-blob, docs/packaging.md). `ProvenanceSchema` is what a reader (package:verify) accepts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { builderRequire } from './builder-require.js';
import type { Flavour } from './builder-config.js';
import { sha256File } from './tree-compare.js';

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const PREDICATE_TYPE = 'https://slsa.dev/provenance/v1';
/** What this build is: electron-builder packing the app from a commit of this repository. */
export const BUILD_TYPE = 'urn:mdl-kiosk:build-type:electron-builder-package:v1';
/** Builder id when the release pipeline names none (MDL_KIOSK_BUILDER_ID): a machine nobody vouches for. */
export const LOCAL_BUILDER_ID = 'urn:mdl-kiosk:builder:local-unattested';
export const SBOM_MEDIA_TYPE = 'application/vnd.cyclonedx+json';

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a lowercase hex SHA-256');
const GitCommit = z.string().regex(/^[0-9a-f]{40}$/, 'a 40-digit hex git commit');

export const SubjectSchema = z.object({ name: z.string().min(1), digest: z.object({ sha256: Sha256 }) });
export const ResourceDescriptorSchema = z.object({
  name: z.string().min(1),
  uri: z.string().optional(),
  digest: z.record(z.string(), z.string().min(1)),
  mediaType: z.string().optional(),
});

export const ProvenanceSchema = z.object({
  _type: z.literal(STATEMENT_TYPE),
  subject: z.array(SubjectSchema).min(1),
  predicateType: z.literal(PREDICATE_TYPE),
  predicate: z.object({
    buildDefinition: z.object({
      buildType: z.literal(BUILD_TYPE),
      externalParameters: z.object({
        flavour: z.enum(['production', 'qa']),
        os: z.enum(['linux', 'win', 'mac']),
        arch: z.string().min(1),
        commit: GitCommit,
        /** Files tracked or not ignored that differed from the commit when it was built: not a release. */
        workingTreeClean: z.boolean(),
      }),
      internalParameters: z.object({ sourceDateEpoch: z.number().int().nonnegative(), electronBuilderConfig: z.string().min(1) }),
      resolvedDependencies: z.array(ResourceDescriptorSchema).min(2),
    }),
    runDetails: z.object({
      builder: z.object({
        id: z.string().min(1),
        version: z.object({
          node: z.string().min(1),
          npm: z.string().min(1),
          'electron-builder': z.string().min(1),
          electron: z.string().min(1),
        }),
      }),
      metadata: z.object({ startedOn: z.iso.datetime(), finishedOn: z.iso.datetime() }),
      byproducts: z.array(ResourceDescriptorSchema).min(1),
    }),
  }),
});
export type Provenance = z.infer<typeof ProvenanceSchema>;

/** What the statement is made from (collected by `provenanceInputs`, or given by a test). */
export interface ProvenanceInputs {
  readonly flavour: Flavour;
  readonly os: 'linux' | 'win' | 'mac';
  readonly arch: string;
  readonly configFile: string;
  readonly commit: string;
  readonly workingTreeClean: boolean;
  readonly lockfileSha256: string;
  readonly sourceDateEpoch: number;
  /** Relative name (`app.asar`, `app.asar.unpacked/…/x.node`) → SHA-256. */
  readonly subjects: readonly { readonly name: string; readonly sha256: string }[];
  readonly sbom: { readonly name: string; readonly sha256: string };
  readonly builderId: string;
  readonly versions: { readonly node: string; readonly npm: string; readonly electronBuilder: string; readonly electron: string };
  readonly startedOn: Date;
  readonly finishedOn: Date;
}

/** Pure: the statement for `inputs`, subjects in name order. */
export function provenanceStatement(inputs: ProvenanceInputs): Provenance {
  const subject = [...inputs.subjects]
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((s) => ({ name: s.name, digest: { sha256: s.sha256 } }));
  return ProvenanceSchema.parse({
    _type: STATEMENT_TYPE,
    subject,
    predicateType: PREDICATE_TYPE,
    predicate: {
      buildDefinition: {
        buildType: BUILD_TYPE,
        externalParameters: {
          flavour: inputs.flavour,
          os: inputs.os,
          arch: inputs.arch,
          commit: inputs.commit,
          workingTreeClean: inputs.workingTreeClean,
        },
        internalParameters: { sourceDateEpoch: inputs.sourceDateEpoch, electronBuilderConfig: inputs.configFile },
        resolvedDependencies: [
          { name: 'source', digest: { gitCommit: inputs.commit } },
          { name: 'package-lock.json', digest: { sha256: inputs.lockfileSha256 } },
        ],
      },
      runDetails: {
        builder: {
          id: inputs.builderId,
          version: {
            node: inputs.versions.node,
            npm: inputs.versions.npm,
            'electron-builder': inputs.versions.electronBuilder,
            electron: inputs.versions.electron,
          },
        },
        metadata: { startedOn: inputs.startedOn.toISOString(), finishedOn: inputs.finishedOn.toISOString() },
        byproducts: [{ name: inputs.sbom.name, digest: { sha256: inputs.sbom.sha256 }, mediaType: SBOM_MEDIA_TYPE }],
      },
    },
  });
}

/** app.asar and every `.node` under the resources folder (unpacked addons, extra resources), by relative name. */
export async function packageSubjects(resourcesDir: string): Promise<{ name: string; sha256: string }[]> {
  const subjects = [{ name: 'app.asar', sha256: await sha256File(join(resourcesDir, 'app.asar')) }];
  const visit = async (dir: string, rel: string): Promise<void> => {
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const relPath = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) await visit(join(dir, entry.name), relPath);
      else if (entry.isFile() && entry.name.endsWith('.node'))
        subjects.push({ name: relPath, sha256: await sha256File(join(dir, entry.name)) });
    }
  };
  await visit(resourcesDir, '');
  return subjects;
}

function git(root: string, args: readonly string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** The npm that runs us (`npm_config_user_agent`: `npm/11.19.1 node/…`), else `npm --version`. */
function npmVersion(env: NodeJS.ProcessEnv): string {
  const agent = /\bnpm\/(\S+)/.exec(env.npm_config_user_agent ?? '');
  if (agent?.[1] !== undefined) return agent[1];
  try {
    return execFileSync('npm', ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

export interface BuildFacts {
  readonly root: string;
  readonly flavour: Flavour;
  readonly os: 'linux' | 'win' | 'mac';
  readonly arch: string;
  readonly configFile: string;
  readonly resourcesDir: string;
  readonly sbomFile: string;
  readonly sourceDateEpoch: number;
  readonly electronVersion: string;
  readonly startedOn: Date;
  readonly env?: NodeJS.ProcessEnv;
}

/** Reads the packed app, the checkout and the tools for the statement's inputs. */
export async function provenanceInputs(facts: BuildFacts): Promise<ProvenanceInputs> {
  const env = facts.env ?? process.env;
  const builderPackage = z
    .object({ version: z.string() })
    .parse(JSON.parse(await readFile(builderRequire(facts.root).resolve('electron-builder/package.json'), 'utf8')));
  const sbomName = facts.sbomFile.split(/[\\/]/).pop() ?? facts.sbomFile;
  return {
    flavour: facts.flavour,
    os: facts.os,
    arch: facts.arch,
    configFile: facts.configFile,
    commit: git(facts.root, ['rev-parse', 'HEAD']),
    workingTreeClean: git(facts.root, ['status', '--porcelain']) === '',
    lockfileSha256: await sha256File(join(facts.root, 'package-lock.json')),
    sourceDateEpoch: facts.sourceDateEpoch,
    subjects: await packageSubjects(facts.resourcesDir),
    sbom: { name: sbomName, sha256: await sha256File(facts.sbomFile) },
    builderId: env.MDL_KIOSK_BUILDER_ID ?? LOCAL_BUILDER_ID,
    versions: { node: process.version, npm: npmVersion(env), electronBuilder: builderPackage.version, electron: facts.electronVersion },
    startedOn: facts.startedOn,
    finishedOn: new Date(),
  };
}

/** Writes the statement (pretty JSON, one trailing newline) and returns it. */
export async function writeProvenance(facts: BuildFacts, outFile: string): Promise<Provenance> {
  if (!existsSync(join(facts.resourcesDir, 'app.asar'))) throw new Error(`no app.asar in ${facts.resourcesDir}: nothing to attest`);
  const statement = provenanceStatement(await provenanceInputs(facts));
  await writeFile(outFile, `${JSON.stringify(statement, null, 2)}\n`);
  return statement;
}

/** `mdl-kiosk[-qa]-<version>-<os>-<arch>`: the artifacts' own base name (electron-builder.yml artifactName). */
export function recordBaseName(flavour: Flavour, version: string, os: string, arch: string): string {
  return `${flavour === 'qa' ? 'mdl-kiosk-qa' : 'mdl-kiosk'}-${version}-${os}-${arch}`;
}
