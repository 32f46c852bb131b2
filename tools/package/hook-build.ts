/**
 * Bundles the afterPack hook (tools/package/after-pack.ts) into one CommonJS file electron-builder can
 * load: dist/package-hooks/after-pack.cjs, the path electron-builder.yml names. Run before every packaging
 * (tools/package/package.ts, the dry run); a few milliseconds.
 */
import { join } from 'node:path';
import { build } from 'esbuild';

export const HOOK_OUTPUT = 'dist/package-hooks/after-pack.cjs';

export async function buildPackagingHook(root: string): Promise<string> {
  const outfile = join(root, HOOK_OUTPUT);
  await build({
    entryPoints: [join(root, 'tools', 'package', 'after-pack.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'silent',
    // electron-builder's own packages are loaded from where it is installed (builder-require.ts).
    external: ['electron-builder', 'app-builder-lib', '@electron/asar'],
  });
  return outfile;
}
