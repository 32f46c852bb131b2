/**
 * A fake project on disk for the supply-chain tools: package.json, package-lock.json (v3) and the installed
 * package.json files, written from one description.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface FakePackage {
  readonly version: string;
  readonly license?: unknown;
  readonly licenses?: unknown;
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional: boolean }>;
  readonly scripts?: Record<string, unknown>;
  readonly gypfile?: boolean;
  /** Writes a binding.gyp beside package.json. */
  readonly bindingGyp?: boolean;
  /** In the lockfile but not in node_modules (another platform's optional package). */
  readonly notInstalled?: boolean;
  readonly dev?: boolean;
  readonly optional?: boolean;
  readonly resolved?: string;
}

export interface FakeProject {
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
  readonly allowScripts?: Record<string, boolean>;
  /** Lockfile locations (`node_modules/a`, `node_modules/a/node_modules/b`) → package. */
  readonly packages: Record<string, FakePackage>;
  readonly readme?: string;
  /** Extra files (path → text), e.g. screen sources. */
  readonly files?: Record<string, string>;
}

const dirs: string[] = [];

export async function cleanUpFakeProjects(): Promise<void> {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
}

export async function writeFakeProject(project: FakeProject): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'mdl-kiosk-supply-chain-'));
  dirs.push(root);
  const manifest = {
    name: 'fake-kiosk',
    version: '1.0.0',
    license: 'UNLICENSED',
    ...(project.dependencies === undefined ? {} : { dependencies: project.dependencies }),
    ...(project.optionalDependencies === undefined ? {} : { optionalDependencies: project.optionalDependencies }),
    ...(project.devDependencies === undefined ? {} : { devDependencies: project.devDependencies }),
    ...(project.allowScripts === undefined ? {} : { allowScripts: project.allowScripts }),
  };
  await writeFile(join(root, 'package.json'), JSON.stringify(manifest, null, 2));
  const lockPackages: Record<string, unknown> = {
    '': {
      name: 'fake-kiosk',
      version: '1.0.0',
      ...(project.dependencies === undefined ? {} : { dependencies: project.dependencies }),
      ...(project.optionalDependencies === undefined ? {} : { optionalDependencies: project.optionalDependencies }),
      ...(project.devDependencies === undefined ? {} : { devDependencies: project.devDependencies }),
    },
  };
  for (const [location, p] of Object.entries(project.packages)) {
    const name = location.slice(location.lastIndexOf('node_modules/') + 'node_modules/'.length);
    lockPackages[location] = {
      version: p.version,
      resolved: p.resolved ?? `https://registry.npmjs.org/${name}/-/${name.split('/').pop() ?? name}-${p.version}.tgz`,
      ...(typeof p.license === 'string' ? { license: p.license } : {}),
      ...(p.dev === true ? { dev: true } : {}),
      ...(p.optional === true ? { optional: true } : {}),
      ...(p.scripts !== undefined || p.bindingGyp === true ? { hasInstallScript: true } : {}),
      ...(p.dependencies === undefined ? {} : { dependencies: p.dependencies }),
      ...(p.optionalDependencies === undefined ? {} : { optionalDependencies: p.optionalDependencies }),
      ...(p.peerDependencies === undefined ? {} : { peerDependencies: p.peerDependencies }),
      ...(p.peerDependenciesMeta === undefined ? {} : { peerDependenciesMeta: p.peerDependenciesMeta }),
    };
    if (p.notInstalled === true) continue;
    const dir = join(root, location);
    await mkdir(dir, { recursive: true });
    const installed: Record<string, unknown> = { name, version: p.version };
    if (p.license !== undefined) installed.license = p.license;
    if (p.licenses !== undefined) installed.licenses = p.licenses;
    for (const key of ['dependencies', 'optionalDependencies', 'peerDependencies', 'peerDependenciesMeta', 'scripts', 'gypfile'] as const) {
      if (p[key] !== undefined) installed[key] = p[key];
    }
    await writeFile(join(dir, 'package.json'), JSON.stringify(installed, null, 2));
    if (p.bindingGyp === true) await writeFile(join(dir, 'binding.gyp'), '{ "targets": [] }\n');
  }
  await writeFile(
    join(root, 'package-lock.json'),
    JSON.stringify({ name: 'fake-kiosk', version: '1.0.0', lockfileVersion: 3, requires: true, packages: lockPackages }, null, 2),
  );
  if (project.readme !== undefined) await writeFile(join(root, 'README.md'), project.readme);
  for (const [path, text] of Object.entries(project.files ?? {})) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}
