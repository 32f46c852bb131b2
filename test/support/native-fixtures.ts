/**
 * Tiny native modules compiled with gcc for the packaging tests: real ELF shared objects that register the
 * way real addons do (N-API export or import, NODE_MODULE_VERSION export, the old node_module_register
 * import) or not at all. gcc is a CI prerequisite (.ci/run); without it these fail, never skip.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const ADDON_SOURCES = {
  /** NAPI_MODULE_INIT / node-addon-api: exports the versioned N-API entry. */
  napiExport: 'void *napi_register_module_v1(void *env, void *exports) { (void)env; return exports; }\n',
  /** The static-constructor NAPI_MODULE form: imports napi_module_register. */
  napiImport:
    'extern void napi_module_register(void *m);\nstatic void __attribute__((constructor)) reg(void) { napi_module_register(0); }\n',
  /** What a NAN addon built against Node 20's headers exports (pcsclite did, per the issue). */
  node115: 'void node_register_module_v115(void *exports, void *module, void *priv) { (void)exports; (void)module; (void)priv; }\n',
  /** Built against Electron 45's headers. */
  node150: 'void node_register_module_v150(void *exports, void *module, void *priv) { (void)exports; (void)module; (void)priv; }\n',
  /** The old static-constructor NODE_MODULE: the ABI is in a struct, not a symbol. */
  legacy: 'extern void node_module_register(void *m);\nstatic void __attribute__((constructor)) reg(void) { node_module_register(0); }\n',
  /** An empty stub (noble's and bleno's Linux builds are like this). */
  none: 'int nothing_here(void) { return 0; }\n',
} as const;

export type AddonKind = keyof typeof ADDON_SOURCES;

/** Compiles `kind` into `dir/<name>` (a shared object) and returns its path. */
export async function compileAddon(dir: string, kind: AddonKind, name = `${kind}.node`): Promise<string> {
  const source = join(dir, `${name}.c`);
  const out = join(dir, name);
  await writeFile(source, ADDON_SOURCES[kind]);
  await run('gcc', ['-shared', '-fPIC', '-O0', '-o', out, source], { timeout: 30_000 });
  return out;
}
