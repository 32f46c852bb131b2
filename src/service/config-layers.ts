/**
 * The effective configuration from its layers: defaults → config file → saved settings → environment →
 * command line → managed machine file (→ the QA demo's embedded backend). Stateless: service-config.ts
 * keeps what was resolved; this says what a set of layers gives, or why it gives nothing usable.
 */
import type { FieldError } from '../common/kiosk-api.js';
import { backendEndpoints } from '../kiosk/backend-endpoints.js';
import {
  configIssueText,
  KioskConfigSchema,
  mergeConfig,
  mergeConfigSources,
  parseConfig,
  readApiKeyFile,
  type KioskConfig,
} from '../platform/config.js';
import { availableProfiles } from '../kiosk/profiles.js';
import { bindingProblem, type KeyBindings } from './api-key-binding.js';
import { errorText } from '../common/error-text.js';
import type { Json, KioskServiceOptions } from './service-options.js';
import { settingKeyFor, settingsLayer, type PersistedSettings } from './settings-store.js';

/** The layers other than the saved settings, as the service was given them. */
export type LayerSources = Pick<KioskServiceOptions, 'configFile' | 'overrides' | 'managed' | 'backendOverride' | 'managedOnlyKeys'> & {
  readonly env: NodeJS.ProcessEnv;
};

/** A configuration, or the defaults with the reason the layers give none (and the fields to blame). */
export interface Resolved {
  readonly config: KioskConfig;
  readonly problem?: string;
  readonly errors: FieldError[];
}

/**
 * The top of the stack: the managed file's layer, and above it the QA demo's embedded backend (which
 * only runs when no backend is configured; its key must never go to another backend's address).
 */
function topLayer({ managed, backendOverride }: LayerSources): Json | undefined {
  const layer = managed?.layer;
  if (!backendOverride) return layer;
  return mergeConfig(layer ?? {}, { backend: { baseUrl: backendOverride.baseUrl, apiKey: backendOverride.apiKey } });
}

/**
 * The configuration with these saved settings; on failure the defaults and the reason. A managed-only key
 * set in another layer is reported to `onIgnored` (and left out).
 */
export function resolveLayers(
  sources: LayerSources,
  settings: PersistedSettings,
  apiKey: string | undefined,
  onIgnored: (source: string, path: string) => void,
): Resolved {
  const { overrides } = sources;
  const top = topLayer(sources);
  let merged: Json;
  try {
    merged = mergeConfigSources({
      ...(sources.configFile ? { file: sources.configFile } : {}),
      env: sources.env,
      persisted: settingsLayer(settings, apiKey),
      ...(overrides ? { overrides } : {}),
      ...(top ? { managed: top } : {}),
      ...(sources.managedOnlyKeys ? { managedOnly: sources.managedOnlyKeys, onIgnored } : {}),
    });
  } catch (e) {
    const problem = errorText(e);
    return { config: parseConfig({}), problem, errors: [{ key: '(config file)', message: problem }] };
  }
  const parsed = KioskConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const errors = parsed.error.issues.slice(0, 20).map((i) => ({ key: settingKeyFor(i.path), message: configIssueText(i).slice(0, 500) }));
    return { config: parseConfig({}), problem: `invalid configuration: ${errors.map((e) => `${e.key}: ${e.message}`).join('; ')}`, errors };
  }
  try {
    const config = readApiKeyFile(parsed.data);
    return { config, errors: [] };
  } catch (e) {
    const problem = errorText(e);
    return { config: parseConfig({}), problem, errors: [{ key: 'apiKey', message: problem }] };
  }
}

/**
 * Field errors of a candidate configuration beyond its schema: the TLS rule, the profile's existence and
 * the API key's binding to its backend.
 */
export function candidateErrors(config: KioskConfig, bindings: KeyBindings): FieldError[] {
  const errors: FieldError[] = [];
  const keyProblem = bindingProblem(config.backend.apiKey, config.backend.baseUrl, bindings);
  if (keyProblem !== undefined) errors.push({ key: 'apiKey', message: keyProblem.slice(0, 1_000) });
  if (config.backend.baseUrl !== undefined) {
    try {
      backendEndpoints(config.backend.baseUrl, { allowInsecure: config.backend.allowInsecure });
    } catch (e) {
      errors.push({ key: 'backendUrl', message: errorText(e).slice(0, 500) });
    }
  }
  if (!Object.hasOwn(availableProfiles(config), config.profile)) {
    errors.push({
      key: 'profile',
      message: `unknown request profile; choose one of ${Object.keys(availableProfiles(config)).join(', ')}`.slice(0, 500),
    });
  }
  return errors;
}

/** Where the backend address in effect was set, for a message an installer can act on (highest layer first). */
function backendUrlSource(sources: LayerSources, settings: PersistedSettings): string {
  const setsUrl = (layer: Json | undefined): boolean => {
    const backend = layer?.backend;
    return typeof backend === 'object' && backend !== null && (backend as Json).baseUrl !== undefined;
  };
  if (sources.backendOverride) return 'the test setup';
  if (sources.managed && setsUrl(sources.managed.layer)) return `the managed configuration file ${sources.managed.path}`;
  if (setsUrl(sources.overrides)) return 'the command line (--backend)';
  if (sources.env.MDL_KIOSK_BACKEND_URL !== undefined) return 'the environment (MDL_KIOSK_BACKEND_URL)';
  if (settings.backendUrl !== undefined) return 'the settings saved on this kiosk (settings screen)';
  const file = sources.configFile ?? sources.env.MDL_KIOSK_CONFIG;
  return file ? `the configuration file ${file}` : 'the configuration';
}

/**
 * The backend address's transport rule (no plain http to another machine without backend.allowInsecure,
 * no credentials in it, …) for the configuration in effect: the kiosk would refuse it when it starts, so
 * it is said here with the key and the file (or other source) that set it, which is what must change.
 */
export function backendUrlProblem(config: KioskConfig, sources: LayerSources, settings: PersistedSettings): string | undefined {
  const { baseUrl, allowInsecure } = config.backend;
  if (baseUrl === undefined) return undefined;
  try {
    backendEndpoints(baseUrl, { allowInsecure });
    return undefined;
  } catch (e) {
    return `${backendUrlSource(sources, settings)}: backend.baseUrl: ${errorText(e)}`;
  }
}

/** A staff PIN hash set above the saved settings: the managed file's, else the command line's. */
export function managedPinHash(...layers: (Json | undefined)[]): string | undefined {
  for (const layer of layers) {
    const staff = layer?.staff;
    if (typeof staff !== 'object' || staff === null) continue;
    const hash = (staff as Json).pinHash;
    if (typeof hash === 'string') return hash;
  }
  return undefined;
}
