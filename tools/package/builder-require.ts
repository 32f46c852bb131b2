/**
 * `require` as electron-builder resolves: its own dependencies (app-builder-lib, @electron/asar,
 * builder-util …) are not the project's, so they are loaded from where the installed electron-builder finds
 * them. Fails plainly where electron-builder (a devDependency) is not installed.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';

export class BuilderMissingError extends Error {
  override readonly name = 'BuilderMissingError';
}

export function builderRequire(root: string): NodeJS.Require {
  const fromProject = createRequire(join(root, 'package.json'));
  let builderPath: string;
  try {
    builderPath = fromProject.resolve('electron-builder');
  } catch {
    throw new BuilderMissingError('electron-builder is not installed (it is a devDependency): run `npm ci`');
  }
  return createRequire(builderPath);
}

/** The part of @electron/asar the packaging checks use. */
export interface AsarModule {
  listPackage(archive: string, options: { isPack: boolean }): string[];
  extractFile(archive: string, filename: string): Buffer;
  extractAll(archive: string, dest: string): void;
}

export function loadAsar(root: string): AsarModule {
  return builderRequire(root)('@electron/asar') as AsarModule;
}
