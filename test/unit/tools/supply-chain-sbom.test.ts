import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT, parseJson } from '../../../tools/supply-chain/common.js';
import { CycloneDxSchema, SHIPS_AS_PROPERTY, productionBom, runSbom, type CycloneDx } from '../../../tools/supply-chain/sbom.js';
import { collectShipped, type ShipGroup, type ShippedPackage } from '../../../tools/supply-chain/tree.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'mdl-kiosk-sbom-test-'));
  dirs.push(d);
  return d;
}

const component = (name: string, version = '1.0.0', extra: Record<string, unknown> = {}): CycloneDx['components'][number] => ({
  'bom-ref': `${name}@${version}`,
  type: 'library',
  name,
  version,
  scope: 'required',
  purl: `pkg:npm/${name}@${version}`,
  properties: [],
  ...extra,
});

function npmBom(): CycloneDx {
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    serialNumber: 'urn:uuid:00000000-0000-4000-8000-000000000000',
    version: 1,
    metadata: { component: { ...component('main', '0.1.0'), 'bom-ref': 'fake-kiosk@0.1.0', type: 'application' } },
    components: [
      component('app', '1.0.0', { licenses: [{ license: { id: 'MIT' } }] }),
      // Used by production code and by a dev tool: npm marks it "development".
      component('shared', '2.0.0', { properties: [{ name: 'cdx:npm:package:development', value: 'true' }] }),
      component('pd', '0.0.1'),
      component('tool', '3.0.0', { properties: [{ name: 'cdx:npm:package:development', value: 'true' }] }),
    ],
    dependencies: [
      { ref: 'fake-kiosk@0.1.0', dependsOn: ['app@1.0.0', 'tool@3.0.0'] },
      { ref: 'app@1.0.0', dependsOn: ['shared@2.0.0', 'pd@0.0.1'] },
      { ref: 'tool@3.0.0', dependsOn: ['shared@2.0.0'] },
      { ref: 'shared@2.0.0', dependsOn: [] },
      { ref: 'pd@0.0.1', dependsOn: [] },
    ],
  };
}

const shipped = (
  name: string,
  version: string,
  groups: ShipGroup[],
  options: { optional?: boolean; license?: string; installed?: boolean } = {},
): ShippedPackage => ({
  key: `${name}@${version}`,
  name,
  version,
  locations: [`node_modules/${name}`],
  groups: new Set(groups),
  optional: options.optional ?? false,
  manifest:
    options.installed === false ? undefined : { name, version, ...(options.license === undefined ? {} : { license: options.license }) },
  lockLicense: undefined,
});

describe('cutting npm’s SBOM down to what ships', () => {
  it('keeps shipped components only, marks how each ships, drops npm’s development flag, names a non-SPDX licence, renames the root', () => {
    const { bom, missing } = productionBom(
      npmBom(),
      [
        shipped('app', '1.0.0', ['node_modules'], { license: 'MIT' }),
        shipped('shared', '2.0.0', ['node_modules', 'screen']),
        shipped('pd', '0.0.1', ['node_modules'], { optional: true, license: 'Public Domain' }),
      ],
      { name: 'fake-kiosk', rootDependsOn: ['app@1.0.0', 'shared@2.0.0'] },
    );
    expect(missing).toEqual([]);
    expect(bom.metadata.component.name).toBe('fake-kiosk');
    expect(bom.components.map((c) => c.name)).toEqual(['app', 'shared', 'pd']);
    const byName = Object.fromEntries(bom.components.map((c) => [c.name, c]));
    expect(byName.shared?.properties).toEqual([{ name: SHIPS_AS_PROPERTY, value: 'node_modules, screen' }]);
    expect(byName.pd).toMatchObject({
      scope: 'optional',
      licenses: [{ license: { name: 'Public Domain' } }],
      properties: [{ name: SHIPS_AS_PROPERTY, value: 'node_modules (optional)' }],
    });
    expect(byName.app?.licenses).toEqual([{ license: { id: 'MIT' } }]);
    expect(bom.dependencies).toEqual([
      { ref: 'fake-kiosk@0.1.0', dependsOn: ['app@1.0.0', 'shared@2.0.0'] },
      { ref: 'app@1.0.0', dependsOn: ['shared@2.0.0', 'pd@0.0.1'] },
      { ref: 'shared@2.0.0', dependsOn: [] },
      { ref: 'pd@0.0.1', dependsOn: [] },
    ]);
    expect(() => parseJson(JSON.stringify(bom), CycloneDxSchema, 'result')).not.toThrow();
  });

  it('reports a shipped, installed package npm did not list; one not installed here is not expected', () => {
    const { missing } = productionBom(
      npmBom(),
      [
        shipped('app', '1.0.0', ['node_modules']),
        shipped('ghost', '1.0.0', ['node_modules']),
        shipped('win32-only', '1.0.0', ['node_modules'], { optional: true, installed: false }),
      ],
      {
        name: 'fake-kiosk',
        rootDependsOn: [],
      },
    );
    expect(missing.map((p) => p.key)).toEqual(['ghost@1.0.0']);
  });

  it('rejects output that is not CycloneDX, and duplicate bom-refs', () => {
    expect(() => parseJson(JSON.stringify({ ...npmBom(), bomFormat: 'SPDX' }), CycloneDxSchema, 'npm sbom output')).toThrow(
      /npm sbom output does not have the expected shape: bomFormat/,
    );
    expect(() => parseJson(JSON.stringify({ ...npmBom(), components: [{ name: 'x' }] }), CycloneDxSchema, 'npm sbom output')).toThrow(
      /components\.0\.bom-ref/,
    );
    expect(() => parseJson('npm error code ESBOMPROBLEMS', CycloneDxSchema, 'npm sbom output')).toThrow(/npm sbom output is not JSON/);
    const dup = npmBom();
    dup.components.push(component('app', '1.0.0'));
    expect(() => productionBom(dup, [], { name: 'x', rootDependsOn: [] })).toThrow(/duplicate bom-refs/);
  });
});

describe('npm run sbom', () => {
  it('fails loudly when npm sbom fails, and writes nothing', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'broken', version: '1.0.0', dependencies: { 'left-pad': '1.0.0' } }));
    const out = join(dir, 'sbom.json');
    const run = await runSbom(dir, out);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^sbom: npm sbom failed \(exit 1\):\n[\s\S]*missing: left-pad@1\.0\.0/);
    await expect(readFile(out)).rejects.toThrow();
  });

  it('on this repository: every shipped package, nothing dev-only, zod and undici included (which `npm sbom --omit dev` drops)', async () => {
    const out = join(await tempDir(), 'sbom.cdx.json');
    const run = await runSbom(REPO_ROOT, out);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^sbom: .*sbom\.cdx\.json: CycloneDX 1\.\d \(npm [\d.]+\), \d+ components: \d+ required \+ \d+ optional in the production node_modules, \d+ bundled into the screen, 1 runtime \(Electron\)$/m,
    );
    const bom = parseJson(await readFile(out, 'utf8'), CycloneDxSchema, 'sbom.cdx.json');
    const names = new Set(bom.components.map((c) => c.name));
    for (const name of [
      'ws',
      'zod',
      'undici',
      'pino',
      'pino-roll',
      'electron-updater',
      'js-yaml',
      'smartcard',
      '@stoprocent/noble',
      '@stoprocent/bleno',
      'react',
      'i18next',
      'zxing-wasm',
      'electron',
    ]) {
      expect(names.has(name), name).toBe(true);
    }
    for (const name of ['vitest', 'electron-builder', 'typescript', 'eslint', 'cbor-x', '@owf/mdoc', '@electron/get', 'tsx']) {
      expect(names.has(name), name).toBe(false);
    }
    const expected = (await collectShipped(REPO_ROOT)).packages
      .filter((p) => p.manifest !== undefined)
      .map((p) => p.key)
      .sort();
    expect(bom.components.map((c) => c['bom-ref']).sort()).toEqual(expected);
    expect(bom.metadata.component.name).toBe('mdl-kiosk');
    expect(bom.components.every((c) => c.properties?.some((p) => p.name === SHIPS_AS_PROPERTY) === true)).toBe(true);
    expect(bom.components.some((c) => c.properties?.some((p) => p.name === 'cdx:npm:package:development') === true)).toBe(false);
    const refs = new Set([bom.metadata.component['bom-ref'], ...bom.components.map((c) => c['bom-ref'])]);
    for (const d of bom.dependencies) {
      expect(refs.has(d.ref), d.ref).toBe(true);
      for (const r of d.dependsOn) expect(refs.has(r), `${d.ref} → ${r}`).toBe(true);
    }
  });
});
