/**
 * Helpers shared by the supply-chain tools (docs/supply-chain.md): the repository root, running npm with a
 * bounded time, reading JSON through a zod schema, and plain-text tables.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** True when the module at `url` is the script node/tsx was started with. */
export function isMain(url: string): boolean {
  return process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(url);
}

/** Parses `text` as JSON and validates it; the error names the source and the first problem. */
export function parseJson<S extends z.ZodType>(text: string, schema: S, source: string): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`${source} is not JSON: ${(e as Error).message}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined ? '' : issue.path.map(String).join('.') || '/';
    throw new Error(`${source} does not have the expected shape: ${where}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

export async function readJson<S extends z.ZodType>(path: string, schema: S, source = path): Promise<z.infer<S>> {
  return parseJson(await readFile(path, 'utf8'), schema, source);
}

export interface NpmResult {
  /** Exit status; null when npm was killed (time limit) or died on a signal. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
}

export interface NpmOptions {
  readonly cwd: string;
  /** Kills npm (and what it started) after this long. */
  readonly timeoutMs: number;
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Runs the npm that runs us (`npm_execpath`, set by `npm run`), or `npm` from PATH. stdout and stderr are
 * collected whole (an SBOM of the full tree is a few MB).
 */
export function runNpm(args: readonly string[], options: NpmOptions): Promise<NpmResult> {
  const execPath = process.env.npm_execpath;
  const viaNode = execPath !== undefined && /\.[cm]?js$/.test(execPath);
  const command = viaNode ? process.execPath : 'npm';
  const argv = viaNode ? [execPath, ...args] : [...args];
  return new Promise((done, fail) => {
    const child = spawn(command, argv, {
      cwd: options.cwd,
      // An explicit log level: `npm run -s` hands its children `npm_config_loglevel=silent`, and a failing
      // child npm would then explain nothing.
      env: { ...(options.env ?? process.env), npm_config_loglevel: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: !viaNode && process.platform === 'win32',
      detached: process.platform !== 'win32',
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        // The whole group: npm may have started helpers of its own.
        if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, options.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      fail(new Error(`could not start npm: ${e.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), timedOut });
    });
  });
}

/** npm's own warnings that say nothing about the command (a machine-wide npmrc key npm 11 no longer knows). */
export function npmDiagnostics(stderr: string): string {
  return stderr
    .split('\n')
    .filter((l) => l.trim() !== '' && !/^npm warn Unknown (user|global|env|project) config/.test(l) && !/complete log of this run/.test(l))
    .join('\n');
}

/** A left-aligned text table; the header is underlined. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
