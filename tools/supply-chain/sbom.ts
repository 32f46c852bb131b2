/**
 * `npm run sbom [-- --out FILE]` (CI: .ci/run): a CycloneDX SBOM of what the desktop package ships, written
 * to artifacts/sbom.cdx.json, with a one-line summary.
 *
 * npm writes the SBOM (`npm sbom --sbom-format cyclonedx --sbom-type application`, offline: it reads
 * node_modules); this script keeps the components that ship (tools/supply-chain/tree.ts: the production
 * node_modules tree, the screen's bundled libraries, Electron) and drops the rest. It does not use
 * `npm sbom --omit dev`: npm 11 omits every package that ANY dev path reaches, and here that loses half the
 * production tree (zod, undici, fs-extra, js-yaml … ; 63 of 122 packages kept). Each kept component gets a
 * property `mdl-kiosk:ships-as` (`node_modules`, `node_modules (optional)`, `screen`, `runtime`); npm's
 * `cdx:npm:package:development` flag is removed (it means "also reached by a dev path"); a licence npm could
 * not express in SPDX is added by name (`Public Domain`); the root component takes package.json's name (npm
 * uses the checkout's folder name). The dependency graph keeps only shipped components.
 *
 * Fails (exit 1), saying why, when npm sbom fails, when its output does not have the CycloneDX shape, or
 * when a package that ships and is installed is missing from it.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { REPO_ROOT, isMain, npmDiagnostics, parseJson, runNpm } from './common.js';
import { declaredLicense } from './spdx.js';
import { collectShipped, describeGroups, readProjectManifest, type ShippedPackage } from './tree.js';

export const SBOM_FILE = 'artifacts/sbom.cdx.json';
export const SHIPS_AS_PROPERTY = 'mdl-kiosk:ships-as';
const NPM_DEVELOPMENT_PROPERTY = 'cdx:npm:package:development';
const NPM_TIMEOUT_MS = 120_000;

const Property = z.looseObject({ name: z.string(), value: z.string() });
const LicenseChoice = z.union([
  z.looseObject({ license: z.union([z.looseObject({ id: z.string() }), z.looseObject({ name: z.string() })]) }),
  z.looseObject({ expression: z.string() }),
]);
export const ComponentSchema = z.looseObject({
  'bom-ref': z.string().min(1),
  type: z.string().min(1),
  name: z.string().min(1),
  version: z.string(),
  purl: z.string().startsWith('pkg:npm/'),
  scope: z.enum(['required', 'optional', 'excluded']).optional(),
  licenses: z.array(LicenseChoice).optional(),
  properties: z.array(Property).optional(),
});
export type Component = z.infer<typeof ComponentSchema>;

export const CycloneDxSchema = z.looseObject({
  bomFormat: z.literal('CycloneDX'),
  specVersion: z.string().regex(/^1\.\d+$/),
  serialNumber: z
    .string()
    .regex(/^urn:uuid:/)
    .optional(),
  version: z.number().int().min(1),
  metadata: z.looseObject({
    timestamp: z.string().optional(),
    tools: z.unknown().optional(),
    component: ComponentSchema,
  }),
  components: z.array(ComponentSchema),
  dependencies: z.array(z.looseObject({ ref: z.string(), dependsOn: z.array(z.string()) })),
});
export type CycloneDx = z.infer<typeof CycloneDxSchema>;

export interface ProductionBom {
  readonly bom: CycloneDx;
  /** Shipped packages installed here that npm's SBOM lacks: fail. */
  readonly missing: readonly ShippedPackage[];
}

/**
 * Pure: restricts npm's whole-tree SBOM to what ships. `rootDependsOn` (bom-refs) replaces the project's own
 * edges, which npm draws to its devDependencies too.
 */
export function productionBom(
  full: CycloneDx,
  shipped: readonly ShippedPackage[],
  project: { name: string; rootDependsOn: readonly string[] },
): ProductionBom {
  const refs = new Set(full.components.map((c) => c['bom-ref']));
  if (refs.size !== full.components.length) throw new Error('npm sbom produced duplicate bom-refs');
  const byKey = new Map(shipped.map((p) => [p.key, p]));
  const components: Component[] = [];
  for (const component of full.components) {
    const pkg = byKey.get(component['bom-ref']);
    if (pkg === undefined) continue;
    const properties = (component.properties ?? []).filter((p) => p.name !== NPM_DEVELOPMENT_PROPERTY);
    properties.push({ name: SHIPS_AS_PROPERTY, value: describeGroups(pkg) });
    const declared = pkg.manifest === undefined ? undefined : declaredLicense(pkg.manifest).text;
    const licenses = component.licenses ?? (declared === undefined ? undefined : [{ license: { name: declared } }]);
    components.push({
      ...component,
      scope: pkg.optional ? 'optional' : 'required',
      properties,
      ...(licenses === undefined ? {} : { licenses }),
    });
  }
  const kept = new Set(components.map((c) => c['bom-ref']));
  const rootRef = full.metadata.component['bom-ref'];
  const dependencies = full.dependencies
    .filter((d) => d.ref === rootRef || kept.has(d.ref))
    .map((d) => ({
      ...d,
      dependsOn: d.ref === rootRef ? project.rootDependsOn.filter((r) => kept.has(r)) : d.dependsOn.filter((r) => kept.has(r)),
    }));
  const missing = shipped.filter((p) => p.manifest !== undefined && !refs.has(p.key));
  return {
    bom: {
      ...full,
      metadata: { ...full.metadata, component: { ...full.metadata.component, name: project.name } },
      components,
      dependencies,
    },
    missing,
  };
}

export interface SbomRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function runSbom(root: string, outFile: string): Promise<SbomRun> {
  const npm = await runNpm(['sbom', '--sbom-format', 'cyclonedx', '--sbom-type', 'application'], { cwd: root, timeoutMs: NPM_TIMEOUT_MS });
  if (npm.timedOut) return { code: 1, stdout: '', stderr: `sbom: npm sbom did not finish within ${NPM_TIMEOUT_MS / 1000} s\n` };
  if (npm.code !== 0) {
    const why = npmDiagnostics(npm.stderr) || npm.stdout.trim();
    return { code: 1, stdout: '', stderr: `sbom: npm sbom failed (exit ${String(npm.code)}):\n${why}\n` };
  }
  const full = parseJson(npm.stdout, CycloneDxSchema, 'npm sbom output');
  const project = await readProjectManifest(root);
  const shipped = await collectShipped(root);
  const errors = [...shipped.errors];
  // The project's own edges: its production dependencies, the screen's imports, the runtime.
  const direct = [
    ...Object.keys(project.dependencies ?? {}),
    ...Object.keys(project.optionalDependencies ?? {}),
    ...shipped.screen.packages,
    'electron',
  ];
  const rootDependsOn = [
    ...new Set(direct.flatMap((name) => shipped.packages.filter((p) => p.locations.includes(`node_modules/${name}`)).map((p) => p.key))),
  ];
  const { bom, missing } = productionBom(full, shipped.packages, { name: project.name, rootDependsOn });
  for (const p of missing) errors.push(`${p.key} ships (${describeGroups(p)}) but npm sbom does not list it`);
  if (errors.length > 0) return { code: 1, stdout: '', stderr: errors.map((e) => `sbom: ${e}\n`).join('') };

  await mkdir(dirname(outFile), { recursive: true });
  await writeFile(outFile, `${JSON.stringify(bom, null, 2)}\n`);
  const count = (pred: (p: ShippedPackage) => boolean): number =>
    shipped.packages.filter((p) => p.manifest !== undefined && pred(p)).length;
  const notes = shipped.notes.map((n) => `sbom: note: ${n}\n`).join('');
  const tool = z.array(z.looseObject({ name: z.string(), version: z.string() })).safeParse(full.metadata.tools);
  const by = tool.success && tool.data[0] !== undefined ? `npm ${tool.data[0].version}` : 'npm';
  return {
    code: 0,
    stdout:
      `${notes}sbom: ${relative(root, outFile) || outFile}: CycloneDX ${bom.specVersion} (${by}), ${bom.components.length} components: ` +
      `${count((p) => p.groups.has('node_modules') && !p.optional)} required + ${count((p) => p.groups.has('node_modules') && p.optional)} optional in the production node_modules, ` +
      `${count((p) => p.groups.has('screen'))} bundled into the screen, ${count((p) => p.groups.has('runtime'))} runtime (Electron)\n`,
    stderr: '',
  };
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: SBOM_FILE } } });
  runSbom(REPO_ROOT, join(REPO_ROOT, values.out)).then(
    (r) => {
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      process.exitCode = r.code;
    },
    (e: unknown) => {
      process.stderr.write(`sbom: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
