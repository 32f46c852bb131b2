/**
 * `npm run package:verify` (tools/package/verify.ts): an installed app checked against a provenance
 * statement — a flipped byte in app.asar, a changed addon, a statement of another build, an addon missing
 * or unlisted, and inputs it must refuse (exit 2, with the reason).
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PREDICATE_TYPE, provenanceStatement, type ProvenanceInputs } from '../../../tools/package/provenance.js';
import { verifyCommand } from '../../../tools/package/verify.js';

const ADDON = 'app.asar.unpacked/node_modules/smartcard/build/Release/smartcard.node';
const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

let work = '';
beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'mdl-kiosk-verify-test-'));
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

/** An installed app folder (`<app>/resources/…`) with these files. */
async function install(app: string, files: Record<string, string>): Promise<string> {
  for (const [name, content] of Object.entries(files)) {
    const file = join(work, app, 'resources', name);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, content);
  }
  return join(work, app);
}

/** A statement naming these files' digests, as the build writes it. */
async function statementFor(files: Record<string, string>, commit = 'a'.repeat(40), os: ProvenanceInputs['os'] = 'linux'): Promise<string> {
  const statement = provenanceStatement({
    flavour: 'production',
    os,
    arch: 'x64',
    configFile: 'electron-builder.yml',
    commit,
    workingTreeClean: true,
    lockfileSha256: sha256('lock'),
    sourceDateEpoch: 1_700_000_000,
    subjects: Object.entries(files).map(([name, content]) => ({ name, sha256: sha256(content) })),
    sbom: { name: 'x.sbom.cdx.json', sha256: sha256('sbom') },
    builderId: 'urn:test',
    versions: { node: 'v22', npm: '11', electronBuilder: '26', electron: '45' },
    startedOn: new Date(0),
    finishedOn: new Date(1000),
  });
  const file = join(work, `${commit.slice(0, 8)}-${os}.provenance.json`);
  await writeFile(file, JSON.stringify(statement));
  return file;
}

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await verifyCommand(
    args,
    work,
    (l) => out.push(l),
    (l) => err.push(l),
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const BUILT = { 'app.asar': 'the archive bytes', [ADDON]: 'the addon bytes' };

describe('package:verify', () => {
  it('passes an installed app whose every subject matches (exit 0), given the app folder or app.asar', async () => {
    const app = await install('app', BUILT);
    const statement = await statementFor(BUILT);
    const folder = await run(app, statement);
    expect(folder.code).toBe(0);
    expect(folder.out).toContain(`ok                    app.asar (sha256 ${sha256(BUILT['app.asar'])})`);
    expect(folder.out).toContain(`ok                    ${ADDON}`);
    expect((await run(join(app, 'resources', 'app.asar'), statement)).code).toBe(0);
  });

  it('catches a flipped byte in app.asar, naming both digests (exit 1)', async () => {
    const app = await install('app', BUILT);
    const asar = join(app, 'resources', 'app.asar');
    const bytes = await readFile(asar);
    bytes[3] = (bytes[3] ?? 0) ^ 0x01;
    await writeFile(asar, bytes);
    const result = await run(app, await statementFor(BUILT));
    expect(result.code).toBe(1);
    expect(result.out).toContain(
      `DIFFERENT             app.asar: statement sha256 ${sha256(BUILT['app.asar'])}, installed app sha256 ${sha256(bytes)}`,
    );
    expect(result.out).toContain('MISMATCH');
  });

  it('catches a changed addon', async () => {
    const app = await install('app', { ...BUILT, [ADDON]: 'another addon' });
    const result = await run(app, await statementFor(BUILT));
    expect(result.code).toBe(1);
    expect(result.out).toContain(`DIFFERENT             ${ADDON}`);
    expect(result.out).toContain(`ok                    app.asar`);
  });

  it('catches a statement of another build (another commit, other bytes)', async () => {
    const app = await install('app', BUILT);
    const other = await statementFor({ 'app.asar': 'built from another commit', [ADDON]: BUILT[ADDON] }, 'b'.repeat(40));
    const result = await run(app, other);
    expect(result.code).toBe(1);
    expect(result.out).toContain(`commit ${'b'.repeat(40)}`);
    expect(result.out).toContain('DIFFERENT             app.asar');
  });

  it('names an addon the statement lists and the app lacks, and one installed the statement does not list', async () => {
    const planted = 'app.asar.unpacked/node_modules/evil/evil.node';
    const app = await install('app', { 'app.asar': BUILT['app.asar'], [planted]: 'x' });
    const result = await run(app, await statementFor(BUILT));
    expect(result.code).toBe(1);
    expect(result.out).toContain(`MISSING               ${ADDON}: in the statement`);
    expect(result.out).toContain(`NOT IN THE STATEMENT  ${planted}: in the installed app (sha256 ${sha256('x')})`);
  });

  it('finds a macOS .app’s Contents/Resources', async () => {
    const files = { 'app.asar': 'mac archive' };
    for (const [name, content] of Object.entries(files)) {
      await mkdir(join(work, 'Kiosk.app', 'Contents', 'Resources'), { recursive: true });
      await writeFile(join(work, 'Kiosk.app', 'Contents', 'Resources', name), content);
    }
    expect((await run(join(work, 'Kiosk.app'), await statementFor(files, 'c'.repeat(40), 'mac'))).code).toBe(0);
  });

  it('refuses bad JSON, a statement of another kind and a folder without app.asar (exit 2, with the reason)', async () => {
    const app = await install('app', BUILT);
    await writeFile(join(work, 'broken.json'), '{"_type": ');
    const broken = await run(app, join(work, 'broken.json'));
    expect(broken.code).toBe(2);
    expect(broken.err).toMatch(/broken\.json is not JSON/);

    const statement = JSON.parse(await readFile(await statementFor(BUILT), 'utf8')) as Record<string, unknown>;
    await writeFile(join(work, 'other.json'), JSON.stringify({ ...statement, predicateType: 'https://slsa.dev/provenance/v0.2' }));
    const other = await run(app, join(work, 'other.json'));
    expect(other.code).toBe(2);
    expect(other.err).toContain('is not an mDL Kiosk provenance statement');
    expect(other.err).toContain(`predicateType: Invalid input: expected "${PREDICATE_TYPE}"`);

    const empty = await run(work, await statementFor(BUILT));
    expect(empty.code).toBe(2);
    expect(empty.err).toContain('no app.asar in');
    expect((await run(app, join(work, 'absent.json'))).err).toContain('cannot read');
  });

  it('refuses a wrong command line and a --rebuild it cannot do (exit 2)', async () => {
    const app = await install('app', BUILT);
    expect((await run(app)).code).toBe(2);
    expect((await run(app, 'a.json', '--frobnicate')).code).toBe(2);
    const mac = await run(app, await statementFor(BUILT, 'd'.repeat(40), 'mac'), '--rebuild');
    expect(mac.code).toBe(2);
    expect(mac.err).toContain('--rebuild packs Linux x64 only');
  });
});
