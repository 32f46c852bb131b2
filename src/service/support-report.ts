/**
 * What the kiosk service puts in a support bundle (src/service/support-bundle.ts): the configuration with
 * its secrets replaced by where they come from, the source of every key, the screen's state without any
 * customer's data, device states and the self-test, and the list of secrets to scrub from everything else.
 */
import { readFileSync } from 'node:fs';
import type { Diagnostics, ScreenState, SelfTestCheck } from '../common/kiosk-api.js';
import { environmentLayer, mergeConfigSources, type KioskConfig } from '../platform/config.js';
import { layerKeys } from './managed-config.js';

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
    error: view.error === null ? null : { code: view.error.code, retryable: view.error.retryable },
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
}

export function supportReport(input: SupportReportInput): SupportReport {
  const problems = Object.fromEntries(Object.entries(input.problems).filter(([, v]) => v !== undefined));
  return {
    parts: {
      'versions.json': { app: input.version, flavour: input.flavour, ...input.versions },
      'config.json': { effective: redactedConfig(input.config), sources: configSources(input.layers), ignoredManagedOnlyKeys: input.ignoredKeys, problems },
      'state.json': supportState(input.state),
      'self-test.json': input.selfTest,
      'diagnostics.json': input.diagnostics,
    },
    secrets: [...input.secrets.filter((s): s is string => s !== undefined && s !== ''), ...proxySecrets(input.config, input.layers.env)],
  };
}
