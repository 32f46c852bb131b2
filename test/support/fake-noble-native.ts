/**
 * noble's macOS and Windows bindings as a rebuild meets them, behind the real package layout.
 *
 * The bindings replay the native managers (node_modules/@stoprocent/noble/lib):
 * - mac/src/noble_mac.mm: `Start` makes a `BLEManager` (which reports the adapter state, poweredOn here);
 *   `Stop` sets it nil and throws without one; every other method runs `CHECK_MANAGER` and throws
 *   `TypeError("<Fn>: BLEManager has already been cleaned up")` without one (`Fn` the C++ method's name);
 * - win/src/noble_winrt.cc: the same, the name qualified by MSVC's `__FUNCTION__` (`NobleWinrt::Scan`), and
 *   `Stop` without a manager does nothing.
 * GATT traffic goes over the virtual radio (RadioNobleBindings) to a scripted phone.
 *
 * `fakeNoblePackage()` copies noble's JavaScript (index.js, lib/*.js: the real resolve-bindings, Noble,
 * Peripheral, …) into a temporary node_modules whose `lib/mac/bindings.js` and `lib/win/bindings.js` hand
 * out these fakes instead of the addons; with `os.platform()` answering darwin or win32 the package's own
 * loading path (index → resolve-bindings → getDefaultBindings → ./mac/bindings) picks them, exactly as on
 * a Mac or a PC.
 */
import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { BindingManager, MANAGER_GONE, NOBLE_MAC_METHOD_NAMES, nobleMacManager } from '../../src/qa/devices/binding-lifecycle.js';
import { RadioNobleBindings } from '../../src/qa/devices/noble-radio-bindings.js';
import type { RadioDevice } from '../../src/qa/sim/radio/virtual-radio.js';

export type NativeKind = 'mac' | 'win';

/** noble_mac.mm's manager over the virtual radio. */
export class NativeMacNobleBindings extends RadioNobleBindings {
  constructor(device: RadioDevice) {
    super(device, nobleMacManager());
  }
}

/** noble_winrt.cc's manager over the virtual radio. */
export class NativeWinNobleBindings extends RadioNobleBindings {
  constructor(device: RadioDevice) {
    super(device, new BindingManager((method) => `NobleWinrt::${NOBLE_MAC_METHOD_NAMES[method] ?? method}: ${MANAGER_GONE}`, false));
  }
}

const REGISTRY = Symbol.for('mdl-kiosk.test.fake-noble-native');

interface Registry {
  create(kind: NativeKind, options: unknown): RadioNobleBindings;
}

export interface FakeNoblePackage {
  /** A loader for `loadPlatformBle`'s `load` option: noble from the copy, anything else from the repository. */
  readonly load: (id: string) => unknown;
  /** Every binding the package constructed, in order. */
  readonly created: RadioNobleBindings[];
  remove(): void;
}

const REPO_REQUIRE = createRequire(import.meta.url);

/** The copy, with the native bindings on `device`'s radio. Call `remove()` after the test. */
export function fakeNoblePackage(device: () => RadioDevice): FakeNoblePackage {
  const real = path.dirname(REPO_REQUIRE.resolve('@stoprocent/noble/package.json'));
  const root = mkdtempSync(path.join(os.tmpdir(), 'mdl-kiosk-noble-'));
  const copy = path.join(root, 'node_modules', '@stoprocent', 'noble');
  mkdirSync(copy, { recursive: true });
  cpSync(path.join(real, 'package.json'), path.join(copy, 'package.json'));
  cpSync(path.join(real, 'index.js'), path.join(copy, 'index.js'));
  // The JavaScript of lib/ only: no native sources, no build output.
  cpSync(path.join(real, 'lib'), path.join(copy, 'lib'), {
    recursive: true,
    filter: (from) => !/[\\/](src|build)$/.test(from) && !from.endsWith('.gyp'),
  });
  for (const kind of ['mac', 'win'] as const) {
    writeFileSync(
      path.join(copy, 'lib', kind, 'bindings.js'),
      `// The test's replay of the ${kind} addon (test/support/fake-noble-native.ts).\n` +
        `module.exports = function Native(options) { return globalThis[Symbol.for('mdl-kiosk.test.fake-noble-native')].create('${kind}', options); };\n`,
    );
  }
  // noble's own dependency, resolved from the copy as from the package.
  symlinkSync(path.dirname(REPO_REQUIRE.resolve('debug/package.json')), path.join(root, 'node_modules', 'debug'), 'dir');
  const created: RadioNobleBindings[] = [];
  const registry: Registry = {
    create(kind) {
      const bindings = kind === 'mac' ? new NativeMacNobleBindings(device()) : new NativeWinNobleBindings(device());
      created.push(bindings);
      return bindings;
    },
  };
  (globalThis as Record<symbol, unknown>)[REGISTRY] = registry;
  const copyRequire = createRequire(path.join(root, 'entry.js'));
  return {
    load: (id) => (id.startsWith('@stoprocent/noble') ? copyRequire(id) : REPO_REQUIRE(id)) as unknown,
    created,
    remove() {
      Reflect.deleteProperty(globalThis, REGISTRY);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
