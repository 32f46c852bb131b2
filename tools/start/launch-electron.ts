/**
 * `npm start` (after `npm run build:app`): launches the app in Electron on the QA entry (dist/app/main-qa.js:
 * the embedded mock backend and virtual phone, TEST MODE, unless a backend is configured).
 *
 * Finding the binary: the electron package itself is never loaded here, because its index.js
 * downloads the binary from GitHub on first require and throws when it cannot. Instead this reads the same
 * files it reads (node_modules/electron/path.txt, dist/, ELECTRON_OVERRIDE_DIST_PATH), runs the package's
 * own installer once when the binary is missing (`node node_modules/electron/install.js`, which honours
 * ELECTRON_MIRROR, electron_config_cache and the other @electron/get settings), and otherwise stops with
 * exit code 1 and a message naming the fix.
 *
 * Launching: Electron's default app takes an app *folder* (package.json → main) or a file; with a bare
 * file the app is named "Electron" (its data folder too). So this writes dist/app-dev/package.json, whose
 * `main` is ../app/main-qa.js and whose productName names the app, and runs `electron dist/app-dev [args]`
 * (electron/electron default_app/main.ts `loadApplicationPackage`). Arguments after `npm start --` go to
 * the app; SIGINT/SIGTERM/SIGHUP are forwarded; the app's exit code is ours.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export const OVERRIDE_ENV = 'ELECTRON_OVERRIDE_DIST_PATH';
/** The QA entry, relative to the repository root (built by tools/build/app.ts). */
export const QA_ENTRY = 'dist/app/main-qa.js';
/** The generated app folder Electron is started on. */
export const DEV_APP_DIR = 'dist/app-dev';
/** A download of ~100 MB through a slow mirror finishes well within this; a dead network fails in seconds. */
export const INSTALL_TIMEOUT_MS = 5 * 60_000;

/** Where the electron package puts its executable inside dist/ (same switch as its install.js). */
export function platformExecutable(platform: NodeJS.Platform): string {
  switch (platform) {
    case 'darwin':
      return 'Electron.app/Contents/MacOS/Electron';
    case 'win32':
      return 'electron.exe';
    default:
      return 'electron';
  }
}

export interface LocateOptions {
  /** node_modules/electron */
  readonly electronDir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly platform: NodeJS.Platform;
}

export type ElectronBinary =
  | { readonly found: true; readonly path: string; readonly via: 'override' | 'package'; readonly version?: string }
  | { readonly found: false; readonly expected: string; readonly via: 'override' | 'package' };

function readTrimmed(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Where the electron package would run its binary from, and whether it is there (nothing is downloaded). */
export function locateElectronBinary(options: LocateOptions): ElectronBinary {
  const recorded = readTrimmed(join(options.electronDir, 'path.txt'));
  const executable = recorded === undefined || recorded === '' ? platformExecutable(options.platform) : recorded;
  const override = options.env[OVERRIDE_ENV];
  if (override !== undefined && override !== '') {
    const path = resolve(override, executable);
    if (!existsSync(path)) return { found: false, expected: path, via: 'override' };
    const version = readTrimmed(join(override, 'version'));
    return { found: true, path, via: 'override', ...(version === undefined ? {} : { version }) };
  }
  const path = join(options.electronDir, 'dist', executable);
  // Without path.txt the package's installer never completed, whatever dist/ holds.
  if (recorded === undefined || !existsSync(path)) return { found: false, expected: path, via: 'package' };
  const version = readTrimmed(join(options.electronDir, 'dist', 'version'));
  return { found: true, path, via: 'package', ...(version === undefined ? {} : { version }) };
}

export function electronPackageVersion(electronDir: string): string {
  const parsed = z.object({ version: z.string() }).safeParse(JSON.parse(readTrimmed(join(electronDir, 'package.json')) ?? '{}'));
  return parsed.success ? parsed.data.version : 'unknown';
}

export interface InstallOutcome {
  readonly ok: boolean;
  /** The installer's error line, or why it was stopped. */
  readonly detail: string;
}

/** Runs the electron package's own installer once, bounded in time; its output goes to our stderr. */
export function runElectronInstaller(electronDir: string, env: NodeJS.ProcessEnv, timeoutMs = INSTALL_TIMEOUT_MS): Promise<InstallOutcome> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [join(electronDir, 'install.js')], { env, stdio: ['ignore', 'inherit', 'pipe'] });
    let stderr = '';
    let partial = '';
    child.stderr.setEncoding('utf8');
    // The installer's messages go through, its stack traces do not (the error line says enough).
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4_000);
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (!/^\s+at /.test(line)) process.stderr.write(`${line}\n`);
    });
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolvePromise({ ok: false, detail: `could not run the installer: ${e.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) {
        resolvePromise({ ok: true, detail: 'installed' });
        return;
      }
      // The error's own line, not its stack.
      const errorLine =
        stderr
          .split('\n')
          .map((l) => l.trim())
          .find((l) => l !== '' && !l.startsWith('at ')) ?? '';
      const detail =
        signal !== null
          ? `stopped after ${Math.round(timeoutMs / 1000)} s without finishing`
          : errorLine === ''
            ? `exit code ${code ?? 'none'}`
            : errorLine;
      resolvePromise({ ok: false, detail });
    });
  });
}

export interface MissingMessageInput {
  readonly binary: Extract<ElectronBinary, { found: false }>;
  readonly version: string;
  readonly root: string;
  /** Undefined when no download was tried (an explicit ELECTRON_OVERRIDE_DIST_PATH is not second-guessed). */
  readonly install?: InstallOutcome;
}

export function missingElectronMessage(input: MissingMessageInput): string {
  const fromRoot = relative(input.root, input.binary.expected);
  const where = fromRoot === '' || fromRoot.startsWith('..') ? input.binary.expected : fromRoot;
  const lines = [
    `npm start: the Electron ${input.version} binary is missing (${where} does not exist).`,
    input.binary.via === 'override'
      ? `${OVERRIDE_ENV} points at a folder without it: set it to an unpacked Electron ${input.version} for this OS (the folder holding the executable).`
      : input.install === undefined
        ? 'No download was tried.'
        : `Tried once to download it (node node_modules/electron/install.js): ${input.install.detail}`,
    '',
    'Electron downloads its binary from GitHub on first use. To fix it, either:',
    `  - point the download at a mirror this machine can reach, then install it:`,
    `      ELECTRON_MIRROR=https://<your-mirror>/electron/ npx install-electron`,
    `  - or use an Electron ${input.version} you already have, unpacked (the official electron-v${input.version}-<os>-<arch>.zip):`,
    `      ${OVERRIDE_ENV}=/path/to/electron-v${input.version}-dist npm start`,
    '',
    'Meanwhile `npm run demo` runs the same kiosk (TEST MODE: embedded mock backend, virtual phone) in your browser.',
  ];
  return `${lines.join('\n')}\n`;
}

export interface EnsureOptions extends LocateOptions {
  readonly install: () => Promise<InstallOutcome>;
}

/** The binary, installing it once if the package's own location lacks it. */
export async function ensureElectronBinary(options: EnsureOptions): Promise<{ binary: ElectronBinary; install?: InstallOutcome }> {
  const first = locateElectronBinary(options);
  if (first.found || first.via === 'override') return { binary: first };
  const install = await options.install();
  return { binary: locateElectronBinary(options), install };
}

const RootManifest = z.object({ name: z.string(), version: z.string() });

/** dist/app-dev/package.json: the app folder Electron starts on, whose main is the QA bundle. */
export async function writeDevApp(root: string): Promise<string> {
  const manifest = RootManifest.parse(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')));
  const dir = join(root, DEV_APP_DIR);
  await mkdir(dir, { recursive: true });
  const devManifest = {
    name: `${manifest.name}-qa`,
    // Names the app (and its data folder) as the QA package does, apart from an installed production kiosk.
    productName: 'mDL Kiosk QA',
    version: manifest.version,
    private: true,
    type: 'module',
    main: relative(dir, join(root, QA_ENTRY)).split('\\').join('/'),
  };
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(devManifest, null, 2)}\n`);
  return dir;
}

const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Runs the binary on the app folder; resolves with the exit code to use (128 + n for a signal). */
export function runElectron(binary: string, appDir: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolvePromise) => {
    const child: ChildProcess = spawn(binary, [appDir, ...args], { stdio: 'inherit', env });
    const forward = (signal: NodeJS.Signals): void => {
      child.kill(signal);
    };
    for (const s of FORWARDED_SIGNALS) process.on(s, forward);
    const done = (code: number): void => {
      for (const s of FORWARDED_SIGNALS) process.off(s, forward);
      resolvePromise(code);
    };
    child.on('error', (e) => {
      process.stderr.write(`npm start: could not run ${binary}: ${e.message}\n`);
      done(1);
    });
    child.on('exit', (code, signal) => {
      done(code ?? 128 + (signal === null ? 0 : osConstants.signals[signal]));
    });
  });
}

async function main(): Promise<number> {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const electronDir = join(root, 'node_modules', 'electron');
  const version = electronPackageVersion(electronDir);
  const { binary, install } = await ensureElectronBinary({
    electronDir,
    env: process.env,
    platform: process.platform,
    install: () => {
      process.stderr.write(`npm start: the Electron ${version} binary is not installed; trying to download it once…\n`);
      return runElectronInstaller(electronDir, process.env);
    },
  });
  if (!binary.found) {
    process.stderr.write(missingElectronMessage({ binary, version, root, ...(install === undefined ? {} : { install }) }));
    return 1;
  }
  if (!existsSync(join(root, QA_ENTRY))) {
    process.stderr.write(`npm start: ${QA_ENTRY} is missing: run \`npm run build:app\` (npm start does it first)\n`);
    return 1;
  }
  if (binary.version !== undefined && binary.version.replace(/^v/, '') !== version) {
    process.stderr.write(`npm start: warning: ${binary.path} is Electron ${binary.version}, the project pins ${version}\n`);
  }
  const appDir = await writeDevApp(root);
  return runElectron(binary.path, appDir, process.argv.slice(2), process.env);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`npm start: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
