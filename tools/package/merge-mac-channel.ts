/**
 * `npm run release:merge-mac -- <latest-mac.yml> <latest-mac.yml> --out <file>`: one macOS channel file for
 * both CPUs. The kiosk's Macs are built one CPU per run (electron-builder.yml: two apps, not a universal
 * one), and each run writes a `latest-mac.yml` that names only its own ZIP. The feed needs one file naming
 * both: electron-updater on a Mac keeps the files whose URL says `arm64` on Apple silicon and the others on
 * Intel (node_modules/electron-updater/out/MacUpdater.js `filterFilesForArch`), then needs a ZIP among them
 * (`findFile(files, 'zip', …)`). With only the Apple-silicon entry an Intel Mac fails every update
 * (ERR_UPDATER_ZIP_FILE_NOT_FOUND); with only the Intel entry an Apple-silicon Mac installs the Intel app,
 * which then runs under Rosetta with an x64 PC/SC addon and Bluetooth prebuild.
 *
 * The merge refuses rather than guesses: both files must be channel files of the same version, a URL named
 * by both must have the same sha512, a staging percentage must agree, and the result must hold a ZIP for
 * each CPU. Everything else is kept from the first file given (`path`/`sha512`, the legacy single-file
 * fields, then name the Intel ZIP for older updaters that read only those).
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dumpChannelFile, parseChannelFile, type ChannelFile } from './channel-file.js';

export class MergeError extends Error {
  override readonly name = 'MergeError';
}

/** As electron-updater tells an Apple-silicon file from the others (MacUpdater.filterFilesForArch). */
const isArm64 = (url: string): boolean => url.includes('arm64');
const isZip = (url: string): boolean => url.toLowerCase().endsWith('.zip');

function parse(text: string, source: string): ChannelFile {
  return parseChannelFile(text, source, (message) => new MergeError(message));
}

/** The two builds' channel files as one (text), or a MergeError saying what does not fit. */
export function mergeMacChannelFiles(
  first: { text: string; source: string },
  second: { text: string; source: string },
): { text: string; version: string; zips: { intel: string; appleSilicon: string } } {
  const a = parse(first.text, first.source);
  const b = parse(second.text, second.source);
  if (a.version !== b.version)
    throw new MergeError(
      `${first.source} is version ${a.version} and ${second.source} is ${b.version}: merge the two builds of one version`,
    );
  if (JSON.stringify(a.stagingPercentage) !== JSON.stringify(b.stagingPercentage)) {
    throw new MergeError(
      `the staging percentages differ (${JSON.stringify(a.stagingPercentage ?? 'none')} and ${JSON.stringify(b.stagingPercentage ?? 'none')}): stage the merged file with release:stage instead`,
    );
  }
  const files = [...a.files];
  for (const file of b.files) {
    const same = files.find((f) => f.url === file.url);
    if (same === undefined) files.push(file);
    else if (same.sha512 !== file.sha512)
      throw new MergeError(`both files name ${file.url} with different sha512: two different builds under one name`);
  }
  const intel = files.find((f) => isZip(f.url) && !isArm64(f.url));
  const appleSilicon = files.find((f) => isZip(f.url) && isArm64(f.url));
  if (intel === undefined)
    throw new MergeError(
      'no Intel (x64) ZIP among the files: Intel Macs would fail every update (ERR_UPDATER_ZIP_FILE_NOT_FOUND); give the x64 build’s latest-mac.yml',
    );
  if (appleSilicon === undefined)
    throw new MergeError(
      'no Apple-silicon (arm64) ZIP among the files: those Macs would install the Intel app; give the arm64 build’s latest-mac.yml',
    );
  // The legacy single-file fields name the Intel ZIP: an updater that reads only them cannot tell CPUs apart, and the Intel app runs on both.
  const merged = { ...a, files, path: intel.url, sha512: intel.sha512 };
  return { text: dumpChannelFile(merged), version: a.version, zips: { intel: intel.url, appleSilicon: appleSilicon.url } };
}

export interface MergeArgs {
  readonly inputs: readonly [string, string];
  readonly out: string;
}

export function parseMergeArgs(argv: readonly string[]): MergeArgs {
  const inputs: string[] = [];
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--out') out = argv[++i];
    else if (arg.startsWith('--out=')) out = arg.slice('--out='.length);
    else if (arg.startsWith('-')) throw new MergeError(`unknown option ${arg}`);
    else inputs.push(arg);
  }
  const [x, y] = inputs;
  if (inputs.length !== 2 || x === undefined || y === undefined)
    throw new MergeError('name the two builds’ latest-mac.yml files (the x64 build’s and the arm64 build’s)');
  if (out === undefined || out === '')
    throw new MergeError('say where the merged file goes: --out <file> (the latest-mac.yml the feed serves)');
  return { inputs: [x, y], out };
}

async function main(argv: readonly string[]): Promise<number> {
  let args: MergeArgs;
  try {
    args = parseMergeArgs(argv);
  } catch (e) {
    if (!(e instanceof MergeError)) throw e;
    process.stderr.write(
      `release:merge-mac: ${e.message}\nusage: npm run release:merge-mac -- <latest-mac.yml> <latest-mac.yml> --out <file>\n`,
    );
    return 2;
  }
  const [x, y] = args.inputs.map((p) => resolve(p)) as [string, string];
  let merged: ReturnType<typeof mergeMacChannelFiles>;
  try {
    merged = mergeMacChannelFiles({ text: await readFile(x, 'utf8'), source: x }, { text: await readFile(y, 'utf8'), source: y });
  } catch (e) {
    if (!(e instanceof MergeError)) throw e;
    process.stderr.write(`release:merge-mac: ${e.message}; nothing written\n`);
    return 2;
  }
  const out = resolve(args.out);
  // Whole file or nothing: a feed server may serve it while it is written.
  await writeFile(`${out}.tmp`, merged.text);
  await rename(`${out}.tmp`, out);
  process.stdout.write(
    `release:merge-mac: ${basename(out)}: version ${merged.version} for Intel (${merged.zips.intel}) and Apple silicon (${merged.zips.appleSilicon}); upload this file to the feed\n`,
  );
  return 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`release:merge-mac: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
