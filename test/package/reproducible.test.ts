/**
 * Two packs of this commit under different circumstances — another output folder, account, umask, time zone
 * and locale, at another moment — give byte-identical app folders (app.asar, app.asar.unpacked and the
 * rest, modes and times included); a planted difference is named; and the provenance statement names the
 * real digests. Both flavours, packed from this checkout (the full comparison from two clones, each with
 * its own `npm ci`, is `npm run package:reproducibility`, too slow for CI).
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { appendFile, chmod, chown, mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../tools/build/app.js';
import { describeConditions, otherLocale, otherUserUnavailable, type BuildConditions } from '../../tools/package/build-conditions.js';
import { ELECTRON_VERSION, ensureRenderer, makeFakeElectronDist, packFlavour, type PackedFlavour } from '../../tools/package/dry-run.js';
import { buildPackagingHook } from '../../tools/package/hook-build.js';
import { PREDICATE_TYPE, ProvenanceSchema, STATEMENT_TYPE, writeProvenance } from '../../tools/package/provenance.js';
import { sourceDateEpoch } from '../../tools/package/reproducible.js';
import { compareTrees } from '../../tools/package/tree-compare.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const OTHER_USER = 'nobody';
const inCi = process.env.CI !== undefined || process.env.MDL_KIOSK_CI_IN_COPY === '1';

let work = '';
let first: PackedFlavour[];
let second: PackedFlavour[];
const firstConditions: BuildConditions = { umask: 0o022, timeZone: 'UTC', locale: 'C' };
let secondConditions: BuildConditions;

const sha256 = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');

beforeAll(async () => {
  await ensureRenderer(REPO, () => undefined);
  await buildApp({ root: REPO });
  await buildPackagingHook(REPO);
  work = await mkdtemp(join(tmpdir(), 'mdl-kiosk-reproducible-'));
  // mkdtemp makes 0700: the other account must reach its output folder.
  await chmod(work, 0o755);
  const fakeDist = join(work, 'electron-dist');
  await makeFakeElectronDist(fakeDist);
  const userProblem = otherUserUnavailable(OTHER_USER);
  if (userProblem !== undefined && inCi) throw new Error(`the second build must run as ${OTHER_USER} in CI: ${userProblem}`);
  if (userProblem !== undefined)
    process.stdout.write(`reproducible: the second build runs as this account, not ${OTHER_USER}: ${userProblem}\n`);
  secondConditions = {
    ...(userProblem === undefined ? { user: OTHER_USER } : {}),
    umask: 0o077,
    timeZone: 'Pacific/Auckland',
    locale: otherLocale(),
  };
  const secondOut = join(work, 'elsewhere', 'second');
  await mkdir(secondOut, { recursive: true });
  if (secondConditions.user !== undefined) {
    const uid = Number(execFileSync('id', ['-u', OTHER_USER], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', OTHER_USER], { encoding: 'utf8' }).trim());
    await chown(secondOut, uid, gid);
  }
  const flavours = ['production', 'qa'] as const;
  first = await Promise.all(flavours.map((f) => packFlavour(REPO, f, fakeDist, join(work, 'first', f), { conditions: firstConditions })));
  second = await Promise.all(flavours.map((f) => packFlavour(REPO, f, fakeDist, join(secondOut, f), { conditions: secondConditions })));
  process.stdout.write(
    `reproducible: first build ${describeConditions(firstConditions)}; second ${describeConditions(secondConditions)}\n`,
  );
}, 240_000);

afterAll(async () => {
  if (work !== '') await rm(work, { recursive: true, force: true });
});

describe('two packs of one commit under different conditions', () => {
  it('give identical app folders for both flavours: bytes, modes and times', async () => {
    for (const [i, a] of first.entries()) {
      const b = second[i] as PackedFlavour;
      expect(await compareTrees(a.appOutDir, b.appOutDir, ['first', 'second']), a.flavour).toEqual([]);
    }
  });

  it('whatever the umask, the archive and the unpacked addons are readable by every account, with the commit’s time', async () => {
    const epoch = sourceDateEpoch(REPO);
    for (const p of second) {
      const asar = await stat(p.asar);
      expect(asar.mode & 0o777).toBe(0o644);
      expect(Math.floor(asar.mtimeMs / 1000)).toBe(epoch);
      const addon = await stat(join(p.appOutDir, 'resources/app.asar.unpacked/node_modules/smartcard/build/Release/smartcard_napi.node'));
      expect(addon.mode & 0o777).toBe(0o755);
      expect(p.hookReport).toContain(`modes and times normalised to ${new Date(epoch * 1000).toISOString()}`);
    }
  });

  it('a file’s changed time and a build-time string in the archive are each named', async () => {
    const [a, b] = [first[0] as PackedFlavour, second[0] as PackedFlavour];
    const license = 'resources/app.asar.unpacked/node_modules/smartcard/LICENSE';
    await utimes(join(b.appOutDir, license), new Date(), new Date());
    await appendFile(b.asar, `built ${new Date().toISOString()}`);
    const differences = await compareTrees(a.appOutDir, b.appOutDir, ['first', 'second']);
    expect(differences).toEqual([
      expect.stringMatching(/^resources\/app\.asar: content differs \(\d+ B sha256 [0-9a-f]{16}… and \d+ B sha256 [0-9a-f]{16}…\)$/),
      expect.stringMatching(/^resources\/app\.asar: modified .* and .*$/),
      expect.stringMatching(new RegExp(`^${license.replace(/\./g, '\\.')}: modified \\d{4}-.*Z \\(\\d+\\) and \\d{4}-.*Z \\(\\d+\\)$`)),
    ]);
  });
});

describe('the provenance statement', () => {
  it('names the real digests of app.asar and every shipped addon, the commit, the lockfile, the tools and the SBOM, and passes its schema', async () => {
    const packed = first[0] as PackedFlavour;
    const sbomFile = join(work, 'mdl-kiosk.sbom.cdx.json');
    await writeFile(sbomFile, '{"bomFormat":"CycloneDX"}\n');
    const out = join(work, 'provenance.json');
    await writeProvenance(
      {
        root: REPO,
        flavour: 'production',
        os: 'linux',
        arch: 'x64',
        configFile: 'electron-builder.yml',
        resourcesDir: join(packed.appOutDir, 'resources'),
        sbomFile,
        sourceDateEpoch: sourceDateEpoch(REPO),
        electronVersion: ELECTRON_VERSION,
        startedOn: new Date(),
      },
      out,
    );
    const statement = ProvenanceSchema.parse(JSON.parse(await readFile(out, 'utf8')));
    expect(statement._type).toBe(STATEMENT_TYPE);
    expect(statement.predicateType).toBe(PREDICATE_TYPE);
    const resources = join(packed.appOutDir, 'resources');
    const addons = packed.files.filter((f) => f.path.endsWith('.node')).map((f) => `app.asar.unpacked${f.path}`);
    expect(addons).toHaveLength(2);
    expect(statement.subject).toEqual(
      ['app.asar', ...addons].sort().map((name) => ({ name, digest: { sha256: sha256(join(resources, name)) } })),
    );
    const { buildDefinition, runDetails } = statement.predicate;
    expect(buildDefinition.externalParameters).toMatchObject({
      flavour: 'production',
      os: 'linux',
      arch: 'x64',
      commit: execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim(),
    });
    expect(buildDefinition.resolvedDependencies).toContainEqual({
      name: 'package-lock.json',
      digest: { sha256: sha256(join(REPO, 'package-lock.json')) },
    });
    expect(buildDefinition.internalParameters.sourceDateEpoch).toBe(sourceDateEpoch(REPO));
    expect(runDetails.byproducts).toEqual([
      { name: 'mdl-kiosk.sbom.cdx.json', digest: { sha256: sha256(sbomFile) }, mediaType: 'application/vnd.cyclonedx+json' },
    ]);
    const builderVersion = (
      JSON.parse(readFileSync(join(REPO, 'node_modules/electron-builder/package.json'), 'utf8')) as { version: string }
    ).version;
    expect(runDetails.builder.version).toMatchObject({
      node: process.version,
      'electron-builder': builderVersion,
      electron: ELECTRON_VERSION,
    });
    expect(runDetails.builder.version.npm).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('the schema refuses a statement of another type, a malformed digest or no subject', () => {
    const good = {
      _type: STATEMENT_TYPE,
      subject: [{ name: 'app.asar', digest: { sha256: 'a'.repeat(64) } }],
      predicateType: PREDICATE_TYPE,
      predicate: {
        buildDefinition: {
          buildType: 'urn:mdl-kiosk:build-type:electron-builder-package:v1',
          externalParameters: { flavour: 'qa', os: 'linux', arch: 'x64', commit: 'b'.repeat(40), workingTreeClean: true },
          internalParameters: { sourceDateEpoch: 1, electronBuilderConfig: 'electron-builder.qa.yml' },
          resolvedDependencies: [
            { name: 'source', digest: { gitCommit: 'b'.repeat(40) } },
            { name: 'package-lock.json', digest: { sha256: 'c'.repeat(64) } },
          ],
        },
        runDetails: {
          builder: { id: 'urn:x', version: { node: 'v22', npm: '11', 'electron-builder': '26', electron: '45' } },
          metadata: { startedOn: '2026-01-01T00:00:00.000Z', finishedOn: '2026-01-01T00:01:00.000Z' },
          byproducts: [{ name: 'sbom', digest: { sha256: 'd'.repeat(64) } }],
        },
      },
    };
    expect(ProvenanceSchema.safeParse(good).success).toBe(true);
    expect(ProvenanceSchema.safeParse({ ...good, predicateType: 'https://slsa.dev/provenance/v0.2' }).success).toBe(false);
    expect(ProvenanceSchema.safeParse({ ...good, subject: [{ name: 'app.asar', digest: { sha256: 'A'.repeat(64) } }] }).success).toBe(
      false,
    );
    expect(ProvenanceSchema.safeParse({ ...good, subject: [] }).success).toBe(false);
  });
});
