/**
 * The managed (machine, read-only) configuration file: how a fleet sets policy on a kiosk. Same schema as
 * every other source (src/platform/config.ts), the highest precedence, and every key it sets is locked on the
 * settings screen. Where it lives follows each OS's place for machine-wide application data that users
 * cannot write (as VS Code's Linux policy file `/etc/vscode/policy.json` does):
 *
 *   Linux    /etc/mdl-kiosk/config.json
 *   macOS    /Library/Application Support/mdl-kiosk/config.json
 *   Windows  %ProgramData%\mdl-kiosk\config.json   (default C:\ProgramData)
 *
 * A missing file is an empty layer. A file that exists but cannot be used (unreadable, too large, not JSON,
 * an unknown key, a bad value) is NOT ignored: `problem` names the file and the key, and the kiosk shows
 * `config_error` until it is fixed. A policy may pin the backend, the staff PIN or how secrets are kept;
 * running on without it could send the API key elsewhere or weaken the kiosk without anyone noticing.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { posix, win32 } from 'node:path';
import { configIssues, jsonSyntaxText, KioskConfigShape, layerKeys, mergeConfig } from '../platform/config.js';
import { errorText } from '../common/error-text.js';

export { layerKeys } from '../platform/config.js';

/** A policy file is small; anything bigger is a mistake (or not ours), and is not read into memory. */
export const MAX_MANAGED_CONFIG_BYTES = 1024 * 1024;

export interface ManagedConfig {
  readonly path: string;
  /** The file's values in the config's shape; empty when there is no file or it cannot be used. */
  readonly layer: Record<string, unknown>;
  /** Why the file cannot be used: names the file and every bad key. */
  readonly problem?: string;
}

type Json = Record<string, unknown>;
const isJsonObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The managed file's path on this OS. */
export function managedConfigPath(platform: NodeJS.Platform, env: NodeJS.ProcessEnv): string {
  if (platform === 'win32') {
    // Windows variables are case-insensitive; a plain object (tests, a spawned env) may use either spelling.
    const programData = env.ProgramData ?? env.PROGRAMDATA;
    const base = programData !== undefined && win32.isAbsolute(programData) ? programData : 'C:\\ProgramData';
    return win32.join(base, 'mdl-kiosk', 'config.json');
  }
  if (platform === 'darwin') return posix.join('/Library/Application Support', 'mdl-kiosk', 'config.json');
  return posix.join('/etc', 'mdl-kiosk', 'config.json');
}

function codeOf(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : errorText(e);
}

/** The file's text, undefined when it does not exist; bounded before anything is read. */
function readBounded(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ManagedConfigError(`cannot read the managed configuration file ${path}: ${codeOf(e)}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new ManagedConfigError(`the managed configuration file ${path} is not a regular file`);
    if (stat.size > MAX_MANAGED_CONFIG_BYTES) {
      throw new ManagedConfigError(`the managed configuration file ${path} is larger than ${MAX_MANAGED_CONFIG_BYTES} bytes`);
    }
    // One byte more than the bound: a file that grows between fstat and read is still caught.
    const buffer = Buffer.alloc(MAX_MANAGED_CONFIG_BYTES + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > MAX_MANAGED_CONFIG_BYTES)
        throw new ManagedConfigError(`the managed configuration file ${path} is larger than ${MAX_MANAGED_CONFIG_BYTES} bytes`);
    }
    return buffer.subarray(0, length).toString('utf8');
  } catch (e) {
    if (e instanceof ManagedConfigError) throw e;
    throw new ManagedConfigError(`cannot read the managed configuration file ${path}: ${codeOf(e)}`);
  } finally {
    closeSync(fd);
  }
}

class ManagedConfigError extends Error {
  override readonly name = 'ManagedConfigError';
}

/**
 * How long the list of problems may grow: the screen shows 1,000 characters of a configuration error. Every
 * problem that fits is named, unknown keys and bad values together (fixing the file is a restart each time,
 * so an installer must see all there is to fix at once); only a file of nothing but mistakes ends "and N more".
 */
const MAX_PROBLEMS_TEXT = 900;

function listProblems(path: string, problems: readonly string[]): string {
  const head = `the managed configuration file ${path}: `;
  let text = head;
  for (const [i, problem] of problems.entries()) {
    const next = `${i === 0 ? '' : '; '}${problem}`;
    if (i > 0 && text.length + next.length > MAX_PROBLEMS_TEXT) return `${text}; and ${problems.length - i} more`;
    text += next;
  }
  return text;
}

/**
 * The layer of a file's JSON text, or why it cannot be used. The layer is validated alone over the
 * defaults: each value must be valid by itself. The rules that relate values across sections (a session
 * long enough for a verification, …) are checked on the merged configuration, where the other sources'
 * values are known, and name the key there.
 */
export function parseManagedLayer(path: string, text: string): ManagedConfig {
  let value: unknown;
  try {
    value = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    return { path, layer: {}, problem: `the managed configuration file ${path} is not valid JSON: ${jsonSyntaxText(e)}` };
  }
  if (!isJsonObject(value)) return { path, layer: {}, problem: `the managed configuration file ${path} must hold a JSON object` };
  const { unknown } = layerKeys(value);
  // The schema passes over keys it does not know, so the known ones are checked all the same.
  const parsed = KioskConfigShape.safeParse(mergeConfig({}, value));
  const problems = [...unknown.map((k) => `${k.slice(0, 200)}: unknown key`), ...(parsed.success ? [] : configIssues(parsed.error))];
  if (problems.length > 0) return { path, layer: {}, problem: listProblems(path, problems) };
  return { path, layer: value };
}

/** Reads the managed file: missing → an empty layer; unusable → an empty layer and the problem. */
export function readManagedConfig(path: string): ManagedConfig {
  let text: string | undefined;
  try {
    text = readBounded(path);
  } catch (e) {
    return {
      path,
      layer: {},
      problem: e instanceof ManagedConfigError ? e.message : `cannot read the managed configuration file ${path}: ${codeOf(e)}`,
    };
  }
  if (text === undefined) return { path, layer: {} };
  return parseManagedLayer(path, text);
}

/** Dotted paths of every key the managed file sets (shown to staff; each one is locked). */
export function managedKeys(managed: ManagedConfig | undefined): string[] {
  return managed ? layerKeys(managed.layer).keys : [];
}

/**
 * `app.allowBasicTextSecrets` as the managed file sets it: the only source that may allow Electron's
 * unprotected Linux secret backend (a user-writable file must not be able to weaken secret storage).
 */
export function managedAllowsBasicTextSecrets(managed: ManagedConfig | undefined): boolean {
  const app = managed?.layer.app;
  return isJsonObject(app) && app.allowBasicTextSecrets === true;
}
