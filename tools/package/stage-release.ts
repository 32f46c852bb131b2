/**
 * `npm run release:stage -- <channel file>… --percent N` | `--full`: a staged rollout of a published
 * release by percentage, on top of channels (docs/packaging.md "Updates"). electron-updater reads
 * `stagingPercentage` from the channel file (latest.yml, latest-mac.yml, latest-linux.yml, or a channel's
 * `<channel>*.yml`) and installs the release only on the kiosks whose staging id falls under it: each
 * kiosk keeps a random id in its data folder (`.updaterId`) and compares its last four bytes, as a
 * fraction of 2^32−1, with N/100. A kiosk in the stage stays in it as the percentage grows.
 *
 * Why a tool and not a hand edit: electron-updater reads the value with parseInt and lets a value it cannot
 * read ("ten", "") through to EVERY kiosk, with a warning in the log only. This writes a whole number from
 * 0 (nobody: a paused rollout) to 100, or removes the key (`--full`: everybody, the same as never staged),
 * and leaves everything else in the file — version, files, sha512 — as it was, so the upload is only the
 * changed channel file.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dumpChannelFile, parseChannelFile } from './channel-file.js';

export class StageError extends Error {
  override readonly name = 'StageError';
}

/** `--percent` as given: a whole number 0–100, written plainly (no `%`, no decimals). */
export function parsePercent(text: string): number {
  if (!/^(100|[1-9]?\d)$/.test(text.trim()))
    throw new StageError(`--percent must be a whole number from 0 to 100, not ${JSON.stringify(text)}`);
  return Number(text.trim());
}

/** The channel file's text with `stagingPercentage` set (a number) or removed (null). */
export function stageChannelFile(
  text: string,
  percent: number | null,
  source = 'channel file',
): { text: string; version: string; before: unknown } {
  const parsed = parseChannelFile(text, source, (message) => new StageError(message));
  const { stagingPercentage: before, ...rest } = parsed;
  const next = percent === null ? rest : { ...rest, stagingPercentage: percent };
  return { text: dumpChannelFile(next), version: parsed.version, before };
}

export interface StageArgs {
  readonly files: readonly string[];
  readonly percent: number | null;
}

export function parseStageArgs(argv: readonly string[]): StageArgs {
  const files: string[] = [];
  let percent: number | null | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--full') percent = null;
    else if (arg === '--percent') percent = parsePercent(argv[++i] ?? '');
    else if (arg.startsWith('--percent=')) percent = parsePercent(arg.slice('--percent='.length));
    else if (arg.startsWith('-')) throw new StageError(`unknown option ${arg}`);
    else files.push(arg);
  }
  if (files.length === 0)
    throw new StageError('name the channel file(s): latest.yml, latest-mac.yml, latest-linux.yml (or <channel>*.yml)');
  if (percent === undefined) throw new StageError('say how far: --percent N (0–100) or --full');
  return { files, percent };
}

async function main(argv: readonly string[]): Promise<number> {
  let args: StageArgs;
  try {
    args = parseStageArgs(argv);
  } catch (e) {
    if (!(e instanceof StageError)) throw e;
    process.stderr.write(`release:stage: ${e.message}\nusage: npm run release:stage -- <channel file>… --percent N | --full\n`);
    return 2;
  }
  for (const file of args.files) {
    const path = resolve(file);
    const staged = stageChannelFile(await readFile(path, 'utf8'), args.percent, basename(path));
    // Whole file or nothing: a feed server may serve it while it is written.
    await writeFile(`${path}.tmp`, staged.text);
    await rename(`${path}.tmp`, path);
    const was = staged.before === undefined ? 'every kiosk' : `${JSON.stringify(staged.before)} %`;
    const now = args.percent === null ? 'every kiosk' : `${args.percent} % of kiosks`;
    process.stdout.write(
      `release:stage: ${basename(path)}: version ${staged.version} now offered to ${now} (was ${was}); upload this file to the feed\n`,
    );
  }
  return 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`release:stage: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
