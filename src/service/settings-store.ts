/**
 * The settings staff change on the kiosk's screen, kept in `settings.json` in the data directory (mode
 * 0600, written atomically), and how they sit among the other configuration sources:
 *
 *   defaults → config file → these settings → environment → command line → managed file (→ the QA demo's backend)
 *
 * A key set by the environment, the command line, the managed machine file or the demo is `locked`: shown,
 * not editable, and the screen says which source sets it. The API key
 * is not in this file: it lives in the {@link SecretStore}. The staff PIN hash and the wrong-PIN counter
 * are kept here too (so a restart does not reset a lockout), in a section of their own that is validated
 * separately, so a hand-edited settings section cannot lock staff out of fixing it.
 */
import { join } from 'node:path';
import { z } from 'zod';
import {
  BleRoles,
  EditableTimeouts,
  Language,
  type FieldError,
  type LockSource,
  type Settings,
  type SettingsUpdate,
} from '../common/kiosk-api.js';
import { SpeechKeys, SpeechSettings } from '../common/speech.js';
import { environmentLayer, type KioskConfig } from '../platform/config.js';
import { readFileIfExists, writeFileAtomic } from './atomic-file.js';

/** The speech settings staff saved: any of them, and the keys of any action. */
export const PersistedSpeech = SpeechSettings.omit({ keys: true }).extend({ keys: SpeechKeys.partial().strict() }).partial().strict();
export type PersistedSpeech = z.infer<typeof PersistedSpeech>;

export const PersistedSettings = z
  .object({
    backendUrl: z.string().min(1).max(2_000).optional(),
    profile: z.string().min(1).max(100).optional(),
    pcscReader: z.string().min(1).max(300).optional(),
    bleRoles: BleRoles.optional(),
    cameraDeviceId: z.string().min(1).max(512).optional(),
    defaultLanguage: Language.optional(),
    timeouts: EditableTimeouts.partial().strict().optional(),
    /** Only what staff changed: each key (and each action's keys) falls back to the layers below. */
    speech: PersistedSpeech.optional(),
  })
  .strict();
export type PersistedSettings = z.infer<typeof PersistedSettings>;

export const StaffRecord = z
  .object({
    pinHash: z.string().min(1).max(300).optional(),
    /** Wrong PINs in a row since the last success or lockout. */
    failures: z.number().int().min(0).max(1_000).default(0),
    /** Lockouts in a row since the last success (each one twice as long). */
    lockouts: z.number().int().min(0).max(1_000).default(0),
    lockedOutUntil: z.number().nullable().default(null),
  })
  .strict();
export type StaffRecord = z.infer<typeof StaffRecord>;

const SettingsFile = z.object({ version: z.literal(1), settings: z.unknown(), staff: z.unknown() }).strict();

export class SettingsFileError extends Error {
  override readonly name = 'SettingsFileError';
}

function describe(file: string, section: string, error: z.ZodError): string {
  const first = error.issues[0];
  const key = first ? [section, ...first.path.map(String)].join('.') : section;
  return `${file}: ${key}: ${first?.message ?? 'invalid'}`;
}

export interface LoadedSettings {
  readonly settings: PersistedSettings;
  readonly staff: StaffRecord;
  /** Why the file (or a section of it) was not used: names the file and the bad key. */
  readonly problems: readonly string[];
}

/** `settings.json`: one writer at a time; the last state in memory is what is written. */
export class SettingsStore {
  readonly path: string;
  private settings: PersistedSettings = {};
  private staff: StaffRecord = { failures: 0, lockouts: 0, lockedOutUntil: null };
  private queue: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string) {
    this.path = join(dataDir, 'settings.json');
  }

  async load(): Promise<LoadedSettings> {
    const problems: string[] = [];
    const text = await readFileIfExists(this.path);
    if (text !== undefined) {
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch {
        problems.push(`${this.path} is not valid JSON`);
      }
      if (problems.length === 0) {
        const file = SettingsFile.safeParse(raw);
        if (!file.success) {
          problems.push(describe(this.path, '(file)', file.error));
        } else {
          const settings = PersistedSettings.safeParse(file.data.settings ?? {});
          if (settings.success) this.settings = settings.data;
          else problems.push(describe(this.path, 'settings', settings.error));
          const staff = StaffRecord.safeParse(file.data.staff ?? {});
          if (staff.success) this.staff = staff.data;
          else problems.push(describe(this.path, 'staff', staff.error));
        }
      }
    }
    return { settings: this.settings, staff: this.staff, problems };
  }

  get currentSettings(): PersistedSettings {
    return this.settings;
  }

  get currentStaff(): StaffRecord {
    return this.staff;
  }

  saveSettings(settings: PersistedSettings): Promise<void> {
    this.settings = PersistedSettings.parse(settings);
    return this.write();
  }

  saveStaff(staff: StaffRecord): Promise<void> {
    this.staff = StaffRecord.parse(staff);
    return this.write();
  }

  private write(): Promise<void> {
    const run = this.queue.then(() =>
      writeFileAtomic(this.path, `${JSON.stringify({ version: 1, settings: this.settings, staff: this.staff }, null, 2)}\n`),
    );
    this.queue = run.catch(() => undefined);
    return run;
  }
}

// ---------------------------------------------------------------- the settings ↔ config map

/** Every key of the settings screen and where it lives in the configuration. */
export const SETTING_PATHS = {
  backendUrl: ['backend', 'baseUrl'],
  apiKey: ['backend', 'apiKey'],
  profile: ['profile'],
  pcscReader: ['pcsc', 'reader'],
  bleRoles: ['ble', 'roles'],
  cameraDeviceId: ['ui', 'cameraDeviceId'],
  defaultLanguage: ['ui', 'defaultLanguage'],
  'timeouts.resultDisplayMs': ['timeouts', 'resultDisplayMs'],
  'timeouts.errorDisplayMs': ['timeouts', 'errorDisplayMs'],
  'timeouts.removePhoneMs': ['timeouts', 'removePhoneMs'],
  'speech.mode': ['speech', 'mode'],
  'speech.volume': ['speech', 'volume'],
  'speech.voice': ['speech', 'voice'],
  'speech.headsetOnly': ['speech', 'headsetOnly'],
  'speech.headsetOutput': ['speech', 'headsetOutput'],
  'speech.privateElements': ['speech', 'privateElements'],
  'speech.keys.start': ['speech', 'keys', 'start'],
  'speech.keys.pause': ['speech', 'keys', 'pause'],
  'speech.keys.volumeUp': ['speech', 'keys', 'volumeUp'],
  'speech.keys.volumeDown': ['speech', 'keys', 'volumeDown'],
  'speech.keys.language': ['speech', 'keys', 'language'],
  'speech.keys.stop': ['speech', 'keys', 'stop'],
} as const satisfies Record<string, readonly string[]>;
export type SettingKey = keyof typeof SETTING_PATHS;
const SETTING_KEYS = Object.keys(SETTING_PATHS) as SettingKey[];

type Json = Record<string, unknown>;

function at(layer: Json | undefined, path: readonly string[]): unknown {
  let value: unknown = layer;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Json)[key];
  }
  return value;
}

/** The settings key for a configuration path (`backend.baseUrl` → `backendUrl`); other paths as they are. */
export function settingKeyFor(path: readonly PropertyKey[]): string {
  const joined = path.map(String).join('.');
  for (const key of SETTING_KEYS) if (SETTING_PATHS[key].join('.') === joined) return key;
  if (joined === 'backend.apiKeyFile') return 'apiKey';
  return joined || '(root)';
}

export interface LockSources {
  readonly env: NodeJS.ProcessEnv;
  /** Command-line values, in the config's shape. */
  readonly overrides?: Json;
  /** The managed machine file's layer, in the config's shape. */
  readonly managed?: Json;
  /** The QA demo's embedded backend. */
  readonly backendOverride?: boolean;
}

/**
 * Keys the staff cannot change here and the source that sets each: the one whose value is in effect
 * (the demo's backend, then the managed file, the command line, the environment). An API key from one of
 * these locks the backend address too (src/service/api-key-binding.ts): the key belongs to the backend it
 * was configured with, so the address is changed where the key is.
 */
export function lockSources(sources: LockSources): Map<SettingKey, LockSource> {
  const found = setSources(sources);
  const keySource = found.get('apiKey');
  if (keySource !== undefined && !found.has('backendUrl')) found.set('backendUrl', keySource);
  return new Map(SETTING_KEYS.filter((k) => found.has(k)).map((k) => [k, found.get(k) as LockSource]));
}

/** The backend address is locked only because the API key's source is (it does not set the address itself). */
export function backendUrlTiedToKey(sources: LockSources): boolean {
  const found = setSources(sources);
  return found.has('apiKey') && !found.has('backendUrl');
}

/** The keys each locking source sets, the highest source's name winning. */
function setSources(sources: LockSources): Map<SettingKey, LockSource> {
  const env = environmentLayer(sources.env);
  const layers: [LockSource, Json | undefined][] = [
    ['environment', env],
    ['command_line', sources.overrides],
    ['managed', sources.managed],
  ];
  const found = new Map<SettingKey, LockSource>();
  // Lowest first: a higher source overwrites the name of a lower one.
  for (const [source, layer] of layers) {
    for (const key of SETTING_KEYS) if (at(layer, SETTING_PATHS[key]) !== undefined) found.set(key, source);
    if (at(layer, ['backend', 'apiKeyFile']) !== undefined) found.set('apiKey', source);
  }
  if (sources.backendOverride) {
    found.set('backendUrl', 'test_setup');
    found.set('apiKey', 'test_setup');
  }
  return found;
}

/** Keys the staff cannot change here, because a higher source sets them. */
export function lockedKeys(sources: LockSources): SettingKey[] {
  return [...lockSources(sources).keys()];
}

/** The persisted settings (and the stored API key) as a configuration layer. */
export function settingsLayer(settings: PersistedSettings, apiKey: string | undefined): Json {
  return {
    backend: { baseUrl: settings.backendUrl, apiKey },
    profile: settings.profile,
    pcsc: { reader: settings.pcscReader },
    ble: { roles: settings.bleRoles },
    ui: { cameraDeviceId: settings.cameraDeviceId, defaultLanguage: settings.defaultLanguage },
    timeouts: { ...settings.timeouts },
    speech: { ...settings.speech, keys: { ...settings.speech?.keys } },
  };
}

/** What the settings screen shows for an effective configuration. Never the API key itself. */
export function settingsView(config: KioskConfig, locked: readonly string[], lockedBy?: ReadonlyMap<string, LockSource>): Settings {
  // The screen edits within the contract's ranges; a configuration outside them (test setups with very
  // short screens) is shown at the nearest bound rather than breaking the settings screen.
  const clamp = (value: number, key: keyof typeof EditableTimeouts.shape): number => {
    const schema = EditableTimeouts.shape[key];
    return Math.min(Math.max(value, schema.minValue ?? value), schema.maxValue ?? value);
  };
  const resultDisplayMs = clamp(config.timeouts.resultDisplayMs, 'resultDisplayMs');
  const errorDisplayMs = clamp(config.timeouts.errorDisplayMs, 'errorDisplayMs');
  const removePhoneMs = clamp(config.timeouts.removePhoneMs, 'removePhoneMs');
  return {
    backendUrl: config.backend.baseUrl ?? null,
    apiKeySet: config.backend.apiKey !== undefined,
    profile: config.profile,
    pcscReader: config.pcsc.reader ?? null,
    bleRoles: config.ble.roles,
    cameraDeviceId: config.ui.cameraDeviceId ?? null,
    defaultLanguage: config.ui.defaultLanguage,
    timeouts: { resultDisplayMs, errorDisplayMs, removePhoneMs },
    speech: config.speech,
    locked: [...locked],
    ...(lockedBy && lockedBy.size > 0 ? { lockedBy: Object.fromEntries(lockedBy) } : {}),
  };
}

/** The speech settings an update can set, besides the keys. */
export const SPEECH_FIELDS = ['mode', 'volume', 'voice', 'headsetOnly', 'headsetOutput', 'privateElements'] as const;
/** The actions of the speech keys (`speech.keys.start` …). */
export const SPEECH_ACTIONS = Object.keys(SpeechKeys.shape) as (keyof SpeechKeys)[];

/**
 * The update's keys, in settings-key form (`timeouts.resultDisplayMs`, `speech.keys.start`, …). The speech
 * keys come as one object with every action: given the keys in effect, an action sent unchanged is not
 * counted (so a form may send them all while one action is locked).
 */
export function updatedKeys(update: SettingsUpdate, currentKeys?: SpeechKeys): SettingKey[] {
  const keys: SettingKey[] = [];
  for (const key of ['backendUrl', 'profile', 'pcscReader', 'bleRoles', 'cameraDeviceId', 'defaultLanguage'] as const) {
    if (update[key] !== undefined) keys.push(key);
  }
  if (update.apiKey !== undefined || update.clearApiKey) keys.push('apiKey');
  for (const t of ['resultDisplayMs', 'errorDisplayMs', 'removePhoneMs'] as const) {
    if (update.timeouts?.[t] !== undefined) keys.push(`timeouts.${t}`);
  }
  for (const f of SPEECH_FIELDS) if (update.speech?.[f] !== undefined) keys.push(`speech.${f}`);
  const sentKeys = update.speech?.keys;
  if (sentKeys !== undefined) {
    for (const action of SPEECH_ACTIONS) {
      if (currentKeys === undefined || !sameKeys(sentKeys[action], currentKeys[action])) keys.push(`speech.keys.${action}`);
    }
  }
  return keys;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((code, i) => code === b[i]);
}

/**
 * Field errors of an update's speech settings against the contract (volume 0.1–1, key codes, element
 * identifiers, lengths), keyed `speech.volume`, `speech.keys.start` …; empty when they are valid. The IPC
 * layer checks the same schema; this answers callers inside the service, field by field.
 */
export function speechErrors(update: SettingsUpdate): FieldError[] {
  if (update.speech === undefined) return [];
  const parsed = SpeechSettings.partial().strict().safeParse(update.speech);
  if (parsed.success) return [];
  return parsed.error.issues.slice(0, 20).map((i) => ({
    // The key names the field (an action's keys, not a position in its list).
    key: ['speech', ...i.path.slice(0, i.path[0] === 'keys' ? 2 : 1).map(String)].join('.') || 'speech',
    message: i.message.slice(0, 500),
  }));
}

const LOCK_REASONS: Record<LockSource, string> = {
  managed: 'the managed configuration file (fleet policy)',
  environment: 'the environment',
  command_line: 'the command line',
  test_setup: 'the test setup',
};

/**
 * Field errors for keys the update may not change; empty when none. Each names the source that sets the
 * key (and the managed file's path), so staff know where it must be changed instead.
 */
export function lockedErrors(
  update: SettingsUpdate,
  locked: readonly string[],
  lockedBy?: ReadonlyMap<string, LockSource>,
  managedPath?: string,
  urlTiedToKey = false,
  currentKeys?: SpeechKeys,
): FieldError[] {
  return updatedKeys(update, currentKeys)
    .filter((k) => locked.includes(k))
    .map((key) => {
      const source = lockedBy?.get(key);
      const where =
        source === undefined
          ? 'the environment, the command line or the test setup'
          : source === 'managed' && managedPath !== undefined
            ? `${LOCK_REASONS.managed}, ${managedPath}`
            : LOCK_REASONS[source];
      const message =
        key === 'backendUrl' && urlTiedToKey
          ? `backendUrl belongs to the API key set by ${where}: a key is only sent to the backend it was configured with, so change the address there, with the key`
          : `${key} is set by ${where}, and cannot be changed here`;
      return { key, message: message.slice(0, 1_000) };
    });
}

/**
 * The persisted settings after an update (the API key is handled by the secret store). Speech keys of a
 * `locked` action are not stored: a higher source sets them (an update may only send them unchanged).
 */
export function applyUpdate(settings: PersistedSettings, update: SettingsUpdate, locked: readonly string[] = []): PersistedSettings {
  const next: { -readonly [K in keyof PersistedSettings]: PersistedSettings[K] } = { ...settings };
  const text = (value: string | null | undefined, current: string | undefined): string | undefined =>
    value === undefined ? current : value === null || value.trim() === '' ? undefined : value.trim();
  next.backendUrl = text(update.backendUrl, settings.backendUrl);
  next.pcscReader = text(update.pcscReader, settings.pcscReader);
  next.cameraDeviceId = text(update.cameraDeviceId, settings.cameraDeviceId);
  if (update.profile !== undefined) next.profile = update.profile;
  if (update.bleRoles !== undefined) next.bleRoles = update.bleRoles;
  if (update.defaultLanguage !== undefined) next.defaultLanguage = update.defaultLanguage;
  if (update.timeouts !== undefined) next.timeouts = { ...settings.timeouts, ...stripUndefined(update.timeouts) };
  if (update.speech !== undefined) next.speech = applySpeech(settings.speech, update.speech, locked);
  // Drop keys that ended up unset, so the file holds only what the staff chose.
  for (const key of Object.keys(next) as (keyof PersistedSettings)[]) {
    // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- removing unset optional keys
    if (next[key] === undefined) delete next[key];
  }
  return next;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function applySpeech(
  saved: PersistedSpeech | undefined,
  update: NonNullable<SettingsUpdate['speech']>,
  locked: readonly string[],
): PersistedSpeech {
  const { keys: sentKeys, ...fields } = update;
  const keys: Partial<SpeechKeys> = { ...saved?.keys };
  if (sentKeys !== undefined) {
    for (const action of SPEECH_ACTIONS) if (!locked.includes(`speech.keys.${action}`)) keys[action] = [...sentKeys[action]];
  }
  const next: PersistedSpeech = { ...saved, ...stripUndefined(fields) };
  return Object.keys(keys).length > 0 ? { ...next, keys } : stripUndefined({ ...next, keys: undefined });
}
