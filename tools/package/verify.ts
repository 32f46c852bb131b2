/**
 * `npm run package:verify -- <installed app folder or app.asar> <provenance.json> [--rebuild]`: are the
 * installed bytes the ones the statement names? (docs/installer-guide.md, "Checking the installed bytes").
 * Recomputes the SHA-256 of app.asar and of every .node in the resources folder and prints one line per
 * subject: ok, DIFFERENT (both digests), MISSING (in the statement, not installed) or NOT IN THE STATEMENT.
 * With `--rebuild`, also clones the statement's commit from this checkout into a temporary folder, builds
 * and packs it there (the same steps as `npm run package:reproducibility`) and compares the installed
 * bytes with the rebuilt ones: a statement is only a claim, a rebuild shows the sources give these bytes.
 *
 * Exit 0 every subject matches; 1 a mismatch (of the statement, or of the rebuild); 2 usage, an unreadable
 * or invalid input, or a rebuild that failed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { errorText } from '../../src/common/error-text.js';
import { packageSubjects, type Provenance } from './provenance.js';
import { buildSide, callerNpmrc, packedResources, type Side } from './reproducibility-check.js';
import {
  allOk,
  compareSubjects,
  readStatement,
  resourcesFolder,
  verdictLine,
  verifyInstalled,
  VerifyInputError,
} from './verify-installed.js';

const USAGE = 'usage: npm run package:verify -- <installed app folder or app.asar> <provenance.json> [--rebuild] [--keep]';

type Print = (line: string) => void;

/** Rebuilds the statement's commit and compares the installed bytes with the rebuilt ones: exit code. */
async function rebuildAndCompare(root: string, installed: string, statement: Provenance, keep: boolean, print: Print): Promise<number> {
  const { commit, os, arch, flavour } = statement.predicate.buildDefinition.externalParameters;
  // The rebuild packs as the dry run does (Linux x64 on the stand-in Electron).
  if (os !== 'linux' || arch !== 'x64') throw new VerifyInputError(`--rebuild packs Linux x64 only; the statement is for ${os} ${arch}`);
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: root, stdio: 'ignore' });
  } catch {
    throw new VerifyInputError(`commit ${commit} is not in ${root}: fetch it (git fetch origin ${commit}) and run again`);
  }
  const work = await mkdtemp(join(tmpdir(), 'mdl-kiosk-verify-'));
  try {
    const side: Side = { label: 'rebuild', dir: join(work, 'src', 'mdl-kiosk'), conditions: {} };
    if (!(await buildSide(root, commit, side, await callerNpmrc(work)))) return 2;
    const verdicts = compareSubjects(
      await packageSubjects(packedResources(side, flavour)),
      await packageSubjects(resourcesFolder(installed)),
    );
    print(`\npackage:verify: installed bytes against a rebuild of ${commit} (${flavour}):`);
    for (const v of verdicts) print(verdictLine(v, { expected: 'rebuild', actual: 'installed app' }));
    return allOk(verdicts) ? 0 : 1;
  } finally {
    if (keep) print(`package:verify: kept ${work}`);
    else await rm(work, { recursive: true, force: true });
  }
}

/** The command, given its arguments; returns the exit code. */
export async function verifyCommand(argv: readonly string[], root: string, print: Print, printError: Print): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: { rebuild: { type: 'boolean' }, keep: { type: 'boolean' } },
    });
  } catch (e) {
    printError(`package:verify: ${errorText(e)}\n${USAGE}`);
    return 2;
  }
  const [installed, statementFile, ...extra] = parsed.positionals;
  if (installed === undefined || statementFile === undefined || extra.length > 0) {
    printError(USAGE);
    return 2;
  }
  try {
    const statement = await readStatement(statementFile);
    const { commit, flavour, os, arch } = statement.predicate.buildDefinition.externalParameters;
    print(`package:verify: ${resourcesFolder(installed)} against ${statementFile} (commit ${commit}, ${flavour}, ${os} ${arch})`);
    const verdicts = await verifyInstalled(installed, statement);
    for (const v of verdicts) print(verdictLine(v, { expected: 'statement', actual: 'installed app' }));
    const statementOk = allOk(verdicts);
    print(statementOk ? 'package:verify: the installed bytes are the ones the statement names' : 'package:verify: MISMATCH');
    if (parsed.values.rebuild !== true) return statementOk ? 0 : 1;
    const rebuilt = await rebuildAndCompare(root, installed, statement, parsed.values.keep === true, print);
    if (rebuilt === 2) return 2;
    return statementOk && rebuilt === 0 ? 0 : 1;
  } catch (e) {
    printError(`package:verify: ${errorText(e)}`);
    return 2;
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  verifyCommand(
    process.argv.slice(2),
    root,
    (line) => process.stdout.write(`${line}\n`),
    (line) => process.stderr.write(`${line}\n`),
  ).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`package:verify: ${errorText(e)}\n`);
      process.exit(2);
    },
  );
}
