/**
 * What the kiosk service puts in a support bundle (src/service/support-bundle.ts): the configuration with
 * its secrets replaced by where they come from, the source of every key, the screen's state without any
 * customer's data, device states and the self-test, and the list of secrets to scrub from everything else.
 */
import { readFileSync } from 'node:fs';
import { mkdir, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Diagnostics, ScreenState, SelfTestCheck } from '../common/kiosk-api.js';
import { chooseBackendRoute } from '../kiosk/backend-proxy.js';
import { environmentLayer, mergeConfigSources, type KioskConfig } from '../platform/config.js';
import { layerKeys } from './managed-config.js';
import { errorText } from '../common/error-text.js';

type Json = Record<string, unknown>;

export interface ConfigLayers {
  readonly configFile?: string;
  readonly env: NodeJS.ProcessEnv;
  readonly settings: Json;
  readonly overrides?: Json;
  readonly managed?: Json;
  readonly testSetup?: Json;
}

/** For each dotted key set by a source: the source whose value is in effect (higher sources win). */
export function configSources(layers: ConfigLayers): Record<string, string> {
  let file: Json = {};
  try {
    const path = layers.configFile ?? layers.env.MDL_KIOSK_CONFIG;
    if (path) file = mergeConfigSources({ file: path, env: {} });
  } catch {
    // An unreadable file is reported as the configuration problem; its keys are simply not listed.
  }
  const ordered: [string, Json | undefined][] = [
    ['config file', file],
    ['saved settings', layers.settings],
    ['environment', environmentLayer(layers.env)],
    ['command line', layers.overrides],
    ['managed file', layers.managed],
    ['test setup', layers.testSetup],
  ];
  const sources: Record<string, string> = {};
  for (const [source, layer] of ordered) {
    if (!layer) continue;
    for (const key of layerKeys(JSON.parse(JSON.stringify(layer)) as Json).keys) sources[key] = source;
  }
  return Object.fromEntries(Object.entries(sources).sort(([a], [b]) => a.localeCompare(b)));
}

/** The effective configuration with each secret replaced by a mark (its source is in the sources list). */
export function redactedConfig(config: KioskConfig): Json {
  const copy = structuredClone(config) as unknown as Json;
  const backend = copy.backend as Json;
  if (backend.apiKey !== undefined) backend.apiKey = '(set; not included)';
  const staff = copy.staff as Json;
  if (staff.pinHash !== undefined) staff.pinHash = '(set; not included)';
  return copy;
}

/** The screen's state as support may see it: phases, devices and codes, never an outcome or a detail. */
export function supportState(state: ScreenState): Json {
  const { view } = state;
  return {
    phase: view.phase,
    prompt: view.prompt,
    transport: view.transport,
    role: view.role,
    // The detail is the kiosk's own staff words (no secrets, no holder data by contract) and says why:
    // without it a proxy asking for credentials reads as a bare code.
    error: view.error === null ? null : { code: view.error.code, retryable: view.error.retryable, detail: view.error.detail.slice(0, 500) },
    devices: view.devices,
    profile: view.profile,
    session: state.session,
    camera: { state: state.camera.state, scanning: state.camera.scanning },
    staff: { pinConfigured: state.staff.pinConfigured, lockedOutUntil: state.staff.lockedOutUntil },
    language: state.language,
    testMode: state.testMode,
    backendOrigin: state.backendOrigin,
  };
}

/** Proxy credentials the configuration or the environment holds, in the forms they could appear in. */
export function proxySecrets(config: KioskConfig, env: NodeJS.ProcessEnv): string[] {
  const secrets: string[] = [];
  const file = config.backend.proxy.credentialsFile;
  if (file !== undefined) {
    try {
      const line = readFileSync(file, 'utf8').split(/\r?\n/, 1)[0]?.trim() ?? '';
      if (line !== '') secrets.push(line, Buffer.from(line).toString('base64'), line.slice(line.indexOf(':') + 1));
    } catch {
      // Unreadable: nothing of it can reach the bundle either.
    }
  }
  for (const name of ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy']) {
    const value = env[name];
    if (value === undefined) continue;
    try {
      const url = new URL(value.includes('://') ? value : `http://${value}`);
      if (url.password !== '') {
        const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
        secrets.push(url.password, decodeURIComponent(url.password), Buffer.from(pair).toString('base64'));
      }
    } catch {
      secrets.push(value);
    }
  }
  return secrets;
}

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'] as const;
const NO_PROXY_VARIABLES = ['NO_PROXY', 'no_proxy'] as const;

/**
 * The environment's proxy variables as support may see them: a proxy by its scheme, host and port only,
 * whether credentials are set (never them), and the no-proxy lists (host names, no secrets).
 */
export function proxyEnvironment(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of PROXY_VARIABLES) {
    const value = env[name]?.trim();
    if (value === undefined || value === '') continue;
    try {
      const url = new URL(value.includes('://') ? value : `http://${value}`);
      out[name] = {
        proxy: `${url.protocol}//${url.host}`,
        credentials: url.username === '' && url.password === '' ? 'none' : 'set (not included)',
      };
    } catch {
      // The value may hold a password: never quoted.
      out[name] = { problem: 'not a proxy address (http://host:port); the value is not included' };
    }
  }
  for (const name of NO_PROXY_VARIABLES) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== '') out[name] = value.slice(0, 1_000);
  }
  return out;
}

/** How the kiosk reaches its backend with this configuration and environment (backend-proxy.ts decides). */
export function backendRoute(config: KioskConfig, env: NodeJS.ProcessEnv): Record<string, unknown> {
  const base = config.backend.baseUrl;
  if (base === undefined) return { via: 'none', why: 'no backend.baseUrl is configured' };
  try {
    const route = chooseBackendRoute(config.backend, new URL(base), env);
    if (route.proxy !== undefined) {
      const credentials =
        route.proxy.authorization === undefined
          ? 'none'
          : config.backend.proxy.credentialsFile !== undefined
            ? 'from backend.proxy.credentialsFile (not included)'
            : 'from the proxy variable (not included)';
      return { via: 'proxy', proxy: route.proxy.url.origin, source: route.proxy.source, credentials };
    }
    if (route.bypass !== undefined)
      return { via: 'direct', bypassedProxy: route.bypass.proxy, because: `${route.bypass.list} entry ${route.bypass.entry}` };
    return { via: 'direct' };
  } catch (e) {
    // A ConfigError names the key or variable, never a credential.
    return { via: 'unknown', problem: errorText(e).slice(0, 500) };
  }
}

/** The data folder: can the kiosk write there, and how much room is left (a full disk fails quietly otherwise). */
export async function dataFolderFacts(dir: string): Promise<Record<string, unknown>> {
  // A real write, as the settings, health record and logs do: free blocks alone miss a read-only mount.
  const probe = join(dir, `.support-probe-${process.pid}`);
  let written: Record<string, unknown>;
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(probe, 'x'.repeat(4_096), { mode: 0o600 });
    written = { writable: true };
  } catch (e) {
    written = { writable: false, problem: errorCode(e) };
  } finally {
    await rm(probe, { force: true }).catch(() => undefined);
  }
  // Asked after the probe, which creates a folder not used yet (a first run, a new --data-dir): asked
  // before it, such a folder read "free space unknown (ENOENT)" next to "writable".
  let room: Record<string, unknown>;
  try {
    const fs = await statfs(dir);
    room = { freeBytes: fs.bavail * fs.bsize, totalBytes: fs.blocks * fs.bsize };
  } catch (e) {
    room = { freeBytes: null, statfsProblem: errorCode(e) };
  }
  return { path: dir, ...room, ...written };
}

function errorCode(e: unknown): string {
  const code = typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string' ? e.code : 'error';
  const words: Record<string, string> = {
    ENOSPC: 'the disk is full',
    EROFS: 'the file system is read-only',
    EACCES: 'no permission',
    EPERM: 'not permitted',
    EDQUOT: 'the disk quota is used up',
    ENOENT: 'it does not exist',
  };
  return words[code] === undefined ? code : `${code}: ${words[code]}`;
}

/** Who made the bundle: the kiosk that runs (live state), or a separate short-lived process. */
export interface BundleOrigin {
  readonly madeBy: 'running kiosk' | 'separate process';
  /** What the reader must know about it (a separate process does not describe the running kiosk). */
  readonly note?: string;
}

export interface SupportReport {
  readonly parts: Record<string, unknown>;
  readonly secrets: string[];
}

export interface SupportReportInput {
  readonly version: string;
  readonly flavour: 'production' | 'qa';
  readonly config: KioskConfig;
  readonly layers: ConfigLayers;
  readonly ignoredKeys: readonly string[];
  readonly problems: Record<string, string | undefined>;
  readonly state: ScreenState;
  readonly diagnostics: Diagnostics;
  readonly selfTest: readonly SelfTestCheck[];
  readonly secrets: readonly (string | undefined)[];
  readonly versions: Record<string, string>;
  readonly origin: BundleOrigin;
  /** When the bundle was made, by this kiosk's clock. */
  readonly now: number;
  readonly dataFolder: Record<string, unknown>;
  /** SHA-256 of the installed app.asar; undefined when the kiosk does not run from a package. */
  readonly installedAsarSha256?: string | undefined;
}

/**
 * What a support engineer reads first: one line per area, from the same facts as the JSON parts. Codes
 * and the kiosk's own staff words only; scrubbed like every other file.
 */
export function supportSummary(input: SupportReportInput, environment: Record<string, unknown>): string {
  const { view } = input.state;
  const lines: string[] = ['mDL Kiosk support bundle: summary (details in the .json files)'];
  lines.push(`Made by: ${input.origin.madeBy}${input.origin.note === undefined ? '' : ` (${input.origin.note})`}`);
  lines.push(
    `Kiosk clock: ${new Date(input.now).toISOString()} (compare with the real time the bundle was made; a clock off by minutes breaks TLS and sessions)`,
  );
  lines.push(`Screen: phase ${view.phase}${view.error === null ? '' : `, error ${view.error.code}: ${view.error.detail}`}`);
  const backend = input.diagnostics.backend;
  const last = backend?.lastFailure;
  if (backend === undefined) lines.push('Backend: no kiosk runs in this process, so no backend failures are known here');
  else if (last === null || last === undefined) lines.push('Backend: no failure since the kiosk started');
  else
    lines.push(
      `Backend: last failure ${last.kind}${last.status === null ? '' : ` (HTTP ${last.status})`} at ${last.stage}, ${backend.consecutive} in a row: ${last.detail}`,
    );
  const route = environment.backendRoute as Record<string, unknown>;
  const { via, ...routeFacts } = route;
  const facts = Object.entries(routeFacts).map(([k, v]) => `${k}: ${String(v)}`);
  lines.push(`Route to the backend: ${via === 'none' ? 'none' : String(via)}${facts.length === 0 ? '' : ` (${facts.join('; ')})`}`);
  const proxies = Object.entries(environment.proxyEnvironment as Record<string, unknown>);
  lines.push(
    `Proxy variables: ${proxies.length === 0 ? 'none' : proxies.map(([k, v]) => `${k}=${typeof v === 'string' ? v : Object.values(v as Record<string, string>).join(' ')}`).join('; ')}`,
  );
  const roles = input.config.ble.roles;
  const wanted: Partial<Record<SelfTestCheck['name'], boolean>> = {
    ble_central: roles === 'both' || roles === 'central',
    ble_peripheral: roles === 'both' || roles === 'peripheral',
  };
  for (const check of input.selfTest) {
    // A part this kiosk is not set up with (a QR-only kiosk's reader, a Bluetooth role ble.roles leaves out) is
    // no failure; a role the configuration asks for and does not have is one.
    const absent = !check.ok && check.status === 'not_configured' && wanted[check.name] !== true;
    const verdict = check.ok ? 'ok' : absent ? 'not set up on this kiosk' : 'FAILED';
    lines.push(
      `Self-test ${check.name}: ${verdict}${absent ? '' : ` ${check.status}`}${check.detail === undefined ? '' : `: ${check.detail}`}`,
    );
  }
  lines.push(
    `Camera: ${input.state.camera.state}${input.diagnostics.app?.cameraAccess === undefined ? '' : ` (operating system consent: ${input.diagnostics.app.cameraAccess})`}`,
  );
  const updates = input.diagnostics.app?.updates;
  lines.push(
    `Updates: ${updates === undefined ? 'not reported' : `${updates.state}${updates.version === undefined ? '' : ` ${updates.version}`}${updates.error === undefined ? '' : `: ${updates.error}`}`}`,
  );
  const speech = input.diagnostics.speech;
  if (speech !== undefined) {
    const voice = speech.builtIn;
    const screen = speech.screen;
    lines.push(
      `Speech: built-in voice ${voice.state} (${voice.engine}${voice.detail === undefined ? '' : `: ${voice.detail}`}), ${voice.made} made, median ${voice.medianMs ?? '-'} ms; screen ${screen === null ? 'has not reported' : `${screen.active ? 'speaking' : 'silent'} with ${screen.engine} voice to ${screen.output}, output ${screen.outputWorks === null ? 'untried' : screen.outputWorks ? 'works' : 'FAILED'}${screen.problem === undefined ? '' : `: ${screen.problem}`}`}`,
    );
  }
  const folder = input.dataFolder;
  const free = typeof folder.freeBytes === 'number' ? `${Math.floor(folder.freeBytes / 1024)} KiB free` : 'free space unknown';
  lines.push(
    `Data folder: ${String(folder.path)}: ${folder.writable === true ? 'writable' : `NOT WRITABLE (${String(folder.problem)})`}, ${free}`,
  );
  return `${lines.join('\n')}\n`;
}

export function supportReport(input: SupportReportInput): SupportReport {
  const problems = Object.fromEntries(Object.entries(input.problems).filter(([, v]) => v !== undefined));
  const environment = {
    ...input.origin,
    kioskClock: {
      now: new Date(input.now).toISOString(),
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      utcOffsetMinutes: -new Date(input.now).getTimezoneOffset(),
    },
    proxyEnvironment: proxyEnvironment(input.layers.env),
    backendRoute: backendRoute(input.config, input.layers.env),
    dataFolder: input.dataFolder,
    // The built-in voice and the screen's last speech report (never a text: neither holds one).
    speech: input.diagnostics.speech ?? null,
    installedAppAsar:
      input.installedAsarSha256 === undefined
        ? { sha256: null, note: 'not running from a package' }
        : { sha256: input.installedAsarSha256 },
  };
  return {
    parts: {
      'summary.txt': supportSummary(input, environment),
      'environment.json': environment,
      'versions.json': { app: input.version, flavour: input.flavour, ...input.versions },
      'config.json': {
        effective: redactedConfig(input.config),
        sources: configSources(input.layers),
        ignoredManagedOnlyKeys: input.ignoredKeys,
        problems,
      },
      'state.json': supportState(input.state),
      'self-test.json': input.selfTest,
      'diagnostics.json': input.diagnostics,
    },
    secrets: [...input.secrets.filter((s): s is string => s !== undefined && s !== ''), ...proxySecrets(input.config, input.layers.env)],
  };
}
