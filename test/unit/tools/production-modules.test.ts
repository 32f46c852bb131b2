/**
 * The list of what the packages' node_modules carry (tools/package/production-modules.json) against the
 * lockfile's production tree and against electron-builder.yml: every production package is classified,
 * nothing stale is listed, and the exclusion pattern is exactly the "leftOut" list.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  leftOutPattern,
  loadProductionModules,
  packagedModuleProblems,
  parseProductionModules,
  treeClassificationProblems,
} from '../../../tools/package/production-modules.js';
import { REPO_ROOT } from '../../../tools/supply-chain/common.js';
import { readLockfile, walk } from '../../../tools/supply-chain/tree.js';

const modules = loadProductionModules(REPO_ROOT);

async function productionTreeNames(): Promise<string[]> {
  const tree = walk(await readLockfile(REPO_ROOT), ['']);
  return [...new Set([...tree.nodes.values()].map((n) => n.name))];
}

describe('tools/package/production-modules.json', () => {
  it('classifies every package of the production dependency tree, and lists none it does not have', async () => {
    expect(treeClassificationProblems(await productionTreeNames(), modules)).toEqual([]);
    // The USB and serial HCI drivers and the build tool are left out; the PC/SC and HCI addons ship.
    expect(Object.keys(modules.leftOut)).toEqual(expect.arrayContaining(['usb', 'serialport', 'patch-package', 'node-addon-api']));
    expect(Object.keys(modules.ships)).toEqual(
      expect.arrayContaining(['smartcard', '@stoprocent/bluetooth-hci-socket', 'pino-roll', 'date-fns']),
    );
  });

  it('a new dependency nobody classified, and an entry the tree lost, are named', async () => {
    const names = [...(await productionTreeNames()).filter((n) => n !== 'ws'), 'left-pad'];
    expect(treeClassificationProblems(names, modules)).toEqual([
      'left-pad is in the production dependency tree but in neither list of tools/package/production-modules.json',
      'tools/package/production-modules.json lists ws, which the production dependency tree no longer has',
    ]);
  });

  it('electron-builder.yml excludes exactly the left-out packages', () => {
    const config = yaml.load(readFileSync(join(REPO_ROOT, 'electron-builder.yml'), 'utf8')) as { files: string[] };
    const pattern = leftOutPattern(modules);
    expect(config.files).toContain(pattern);
    expect(pattern).toMatch(/^!\*\*\/node_modules\/\{.*\busb\b.*\}\{,\/\*\*\}$/);
    // A scope goes as a whole only when nothing of it ships.
    expect(pattern).toContain('@serialport,');
    expect(pattern).not.toContain('@stoprocent');
  });

  it('a name in both lists, or a malformed file, is refused', () => {
    expect(() => parseProductionModules(JSON.stringify({ $comment: 'x', ships: { ws: 'a' }, leftOut: { ws: 'b' } }))).toThrow(
      'ws both ships and is left out',
    );
    expect(() => parseProductionModules(JSON.stringify({ $comment: 'x', ships: { 'not a name!': 'a' }, leftOut: {} }))).toThrow(
      'ships.not a name!: Invalid key in record',
    );
    expect(packagedModuleProblems(['ws'], { $comment: '', ships: { ws: 'x' }, leftOut: {} }, 'production')).toEqual([]);
  });
});
