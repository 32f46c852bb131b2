/**
 * Which package folders of a packed app anything reaches (tools/package/packed-app.ts): Node's resolution
 * over the archive's own package.json files, left-out names not followed.
 */
import { describe, expect, it } from 'vitest';
import { unreachablePackages, type PackEntry } from '../../../tools/package/packed-app.js';

function archive(manifests: Record<string, object>): { files: PackEntry[]; extract: (file: string) => Buffer } {
  const files = Object.keys(manifests).map((dir) => ({ path: `${dir}/package.json`, unpacked: false }));
  return {
    files,
    extract: (file) => {
      const manifest = manifests[`/${file}`.replace(/\/package\.json$/, '')];
      if (manifest === undefined) throw new Error(`no ${file}`);
      return Buffer.from(JSON.stringify(manifest));
    },
  };
}

describe('unreachable package folders', () => {
  it('follows dependencies and optional dependencies the way Node resolves them; names what nothing reaches', () => {
    const { files, extract } = archive({
      '': { name: 'app', dependencies: { updater: '1' }, optionalDependencies: { ble: '1' } },
      '/node_modules/updater': { name: 'updater', version: '1.0.0', dependencies: { semver: '^7.7' } },
      '/node_modules/updater/node_modules/semver': { name: 'semver', version: '7.7.4' },
      '/node_modules/ble': { name: 'ble', version: '1.0.0', dependencies: { 'build-tool': '8', debug: '4' } },
      '/node_modules/debug': { name: 'debug', version: '4.4.3' },
      // Hoisted for the left-out build tool only.
      '/node_modules/semver': { name: 'semver', version: '7.8.6' },
    });
    expect(unreachablePackages(files, extract, new Set(['build-tool']))).toEqual(['/node_modules/semver']);
    // Were the build tool shipped and depending on semver, the top-level copy would be reached.
    const withTool = archive({
      '': { name: 'app', dependencies: { tool: '1' } },
      '/node_modules/tool': { name: 'tool', version: '1.0.0', dependencies: { semver: '7' } },
      '/node_modules/semver': { name: 'semver', version: '7.8.6' },
    });
    expect(unreachablePackages(withTool.files, withTool.extract, new Set())).toEqual([]);
  });
});
