/**
 * `npm run package:validate`: both electron-builder configurations against electron-builder's schema,
 * its own validator and the project's packaging policy (tools/package/builder-config.ts). Offline, < 2 s.
 * Exit 0 when both are valid; 1 with one line per problem otherwise.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkFlavour, type Flavour } from './builder-config.js';

async function main(): Promise<number> {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  let failed = false;
  for (const flavour of ['production', 'qa'] as const satisfies readonly Flavour[]) {
    const check = await checkFlavour(root, flavour);
    if (check.problems.length === 0) {
      process.stdout.write(`${check.file}: valid (${flavour})\n`);
      continue;
    }
    failed = true;
    for (const problem of check.problems) process.stderr.write(`${problem}\n`);
  }
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`package:validate: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
