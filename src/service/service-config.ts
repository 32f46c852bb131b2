/**
 * The configuration the service runs on, and where it comes from: the layers (config-layers.ts), the
 * saved settings (settings-store.ts) and the API key saved on the settings screen, bound to the backend it
 * was entered for (api-key-binding.ts). It loads them at start, answers the settings screen's saves and
 * profile changes, and says why no kiosk can run (a problem staff fix in the settings — or, for the managed
 * file, one they cannot: it stays until the file is fixed and the app restarted, see managed-config.ts).
 */
import { HeaderToken } from '../common/protocol/messages.js';
import { KioskApiError, type FieldError, type LockSource, type Settings, type SettingsUpdate } from '../common/kiosk-api.js';
import { parseConfig, type KioskConfig } from '../platform/config.js';
import type { Logger } from '../platform/log.js';
import { availableProfiles } from '../kiosk/profiles.js';
import {
  bindingProblem,
  decodeStoredApiKey,
  encodeMachineKeyOrigin,
  encodeStoredApiKey,
  originOf,
  rememberedMachineKeyOrigin,
  type KeyBindings,
  type MachineKey,
  type StoredApiKey,
} from './api-key-binding.js';
import { backendUrlProblem, candidateErrors, managedPinHash, resolveLayers, type LayerSources, type Resolved } from './config-layers.js';
import { tightenPrivateFiles } from './private-files.js';
import { API_KEY_SECRET, MACHINE_KEY_ORIGIN_SECRET, type SecretStore } from './secret-store.js';
import { errorText } from '../common/error-text.js';
import type { SupportReportInput } from './support-report.js';
import {
  applyUpdate,
  backendUrlTiedToKey,
  lockedErrors,
  lockSources,
  PersistedSettings,
  settingsLayer,
  settingsView,
  speechErrors,
  updatedKeys,
  type LoadedSettings,
  type SettingsStore,
} from './settings-store.js';

/** A save refused with its field errors, or the configuration it gives. */
export type SaveOutcome = { ok: false; errors: FieldError[] } | { ok: true; config: KioskConfig };

const KEY_SOURCES: Partial<Record<LockSource, string>> = {
  environment: 'the environment',
  command_line: 'the command line',
  managed: 'the managed configuration file',
  test_setup: 'the test setup',
};

export class ServiceConfig {
  readonly locked: readonly string[];
  readonly lockedBy: ReadonlyMap<string, LockSource>;
  /** The backend address is locked because the API key's source is. */
  private readonly urlTiedToKey: boolean;
  private current: KioskConfig = parseConfig({});
  private configProblem: string | undefined;
  private settingsProblem: string | undefined;
  /** The managed file cannot be used: not cleared by a save (staff cannot fix it here). */
  private readonly managedProblem: string | undefined;
  /** The stored API key cannot be read; the kiosk still runs when the key comes from another source. */
  private secretsProblem: string | undefined;
  /** The key saved on the settings screen, with the origin it was entered for. */
  private stored: StoredApiKey | undefined;
  /** A key stored before keys were bound: stored again with its backend once the log is up. */
  private rebind: StoredApiKey | undefined;
  /** Origin of the machine configuration's key at its first start, when that configuration gives no address. */
  private machineStartOrigin: string | null | undefined;
  /** That first start is this one: its origin is remembered once the log is up. */
  private rememberMachine: { readonly key: string; readonly origin: string } | undefined;
  private readonly ignored = new Set<string>();
  /** Until the log is up, ignored keys are only remembered (and logged once it is). */
  private logging = false;
  /** Private files found readable by others at start (see private-files.ts). */
  private permissionProblems: string[] = [];

  constructor(
    private readonly sources: LayerSources,
    readonly store: SettingsStore,
    readonly secrets: SecretStore,
    private readonly log: () => Logger,
  ) {
    const layers = {
      env: sources.env,
      ...(sources.overrides ? { overrides: sources.overrides } : {}),
      ...(sources.managed ? { managed: sources.managed.layer } : {}),
      backendOverride: sources.backendOverride !== undefined,
    };
    this.lockedBy = lockSources(layers);
    this.urlTiedToKey = backendUrlTiedToKey(layers);
    this.locked = [...this.lockedBy.keys()];
    this.managedProblem = sources.managed?.problem;
  }

  /** The effective configuration (it holds the API key: never send it anywhere). */
  get effective(): KioskConfig {
    return this.current;
  }

  /** The staff PIN hash set above the saved settings (managed file, command line), if any. */
  get managedPinHash(): string | undefined {
    return managedPinHash(this.sources.managed?.layer, this.sources.overrides);
  }

  /** Loads the saved settings (the staff record among them); logs nothing yet. */
  async loadSettings(): Promise<LoadedSettings> {
    const loaded = await this.store.load();
    this.settingsProblem = loaded.problems[0];
    return loaded;
  }

  /** Then loads the stored key and resolves the configuration; logs nothing yet. */
  async loadKey(): Promise<void> {
    let legacyKey: string | undefined;
    try {
      const text = await this.secrets.get(API_KEY_SECRET);
      const decoded = text === undefined ? undefined : decodeStoredApiKey(text);
      if (decoded?.origin !== undefined) this.stored = { key: decoded.key, origin: decoded.origin };
      else legacyKey = decoded?.key;
    } catch (e) {
      // Not fatal by itself: the kiosk runs on a key from another source (managed file, environment),
      // staff see the problem, and saving a key on the settings screen replaces the unreadable one.
      this.secretsProblem = `the stored API key cannot be read: ${errorText(e)}`.slice(0, 500);
    }
    if (legacyKey !== undefined) {
      // Stored before keys were bound: bound now to the backend it has been used with.
      const unbound = this.resolve(this.store.currentSettings, legacyKey);
      this.stored = { key: legacyKey, origin: unbound.problem === undefined ? originOf(unbound.config.backend.baseUrl) : null };
      this.rebind = this.stored;
    }
    const atStart = this.resolve(this.store.currentSettings, this.stored?.key);
    const machine = this.machineKey(this.store.currentSettings);
    if (
      machine.origin === null &&
      machine.key !== undefined &&
      atStart.problem === undefined &&
      atStart.config.backend.apiKey === machine.key
    ) {
      // Bound at the first start with this key, not at each start: an address edited by hand in
      // settings.json between starts must not take the key with it.
      const inEffect = originOf(atStart.config.backend.baseUrl);
      const remembered = await this.rememberedMachineOrigin(machine.key);
      this.machineStartOrigin = remembered === undefined ? inEffect : remembered;
      if (remembered === undefined && inEffect !== null) this.rememberMachine = { key: machine.key, origin: inEffect };
    }
    const resolved = this.resolveBound(this.store.currentSettings, this.stored);
    this.current = resolved.config;
    this.configProblem = resolved.problem;
  }

  /** The log is up: says what loading found, tightens the private files and binds a legacy key. */
  async logLoaded(loaded: LoadedSettings): Promise<void> {
    const log = this.log();
    this.logging = true;
    for (const key of this.ignored) this.logIgnoredKey(...(key.split('|') as [string, string]));
    this.permissionProblems = await tightenPrivateFiles([this.store.path, ...(this.secrets.path === undefined ? [] : [this.secrets.path])]);
    for (const problem of this.permissionProblems) log.warn({ event: 'private_file_exposed' }, problem);
    if (this.rebind) await this.storeKey(this.rebind);
    this.rebind = undefined;
    if (this.rememberMachine) await this.storeMachineOrigin(this.rememberMachine);
    this.rememberMachine = undefined;
    if (this.managedProblem !== undefined) log.error({ event: 'managed_config_invalid' }, this.managedProblem);
    if (this.secretsProblem !== undefined) log.warn({ event: 'secret_store_failed' }, this.secretsProblem);
    for (const problem of loaded.problems) log.warn({ event: 'settings_file_invalid' }, problem);
  }

  /** Why no kiosk can run on this configuration, if none can. */
  kioskProblem(): string | undefined {
    // An unreadable stored key only stops the kiosk when no other source gives one.
    const keyProblem = this.current.backend.apiKey === undefined ? this.secretsProblem : undefined;
    return this.managedProblem ?? this.settingsProblem ?? this.configProblem ?? this.urlProblem() ?? keyProblem;
  }

  /** A backend address the kiosk would refuse (plain http, …), naming the key and the source that set it. */
  private urlProblem(): string | undefined {
    return this.configProblem === undefined ? backendUrlProblem(this.current, this.sources, this.store.currentSettings) : undefined;
  }

  /** Reads the configuration again (it may have been fixed since it failed). */
  reload(): void {
    const resolved = this.resolveBound(this.store.currentSettings, this.stored);
    this.current = resolved.config;
    this.configProblem = resolved.problem;
  }

  /** What the settings screen shows for a configuration (by default the effective one). */
  settingsView(config: KioskConfig = this.current): Settings {
    return settingsView(config, this.locked, this.lockedBy);
  }

  /** Saves the request profile; refused when a higher layer locks it or no such profile exists. */
  async saveProfile(name: string): Promise<void> {
    if (this.locked.includes('profile')) {
      const refused = lockedErrors({ profile: name }, this.locked, this.lockedBy, this.sources.managed?.path)[0];
      throw new KioskApiError('invalid_args', `setProfile: ${refused?.message ?? 'the profile cannot be changed here'}`);
    }
    if (!Object.hasOwn(availableProfiles(this.current), name))
      throw new KioskApiError('invalid_args', 'setProfile: unknown request profile');
    await this.store.saveSettings({ ...this.store.currentSettings, profile: name });
    this.current = { ...this.current, profile: name };
  }

  /** Checks and stores a settings update; on success it is the effective configuration. */
  async save(update: SettingsUpdate): Promise<SaveOutcome> {
    const refused = lockedErrors(
      update,
      this.locked,
      this.lockedBy,
      this.sources.managed?.path,
      this.urlTiedToKey,
      this.current.speech.keys,
    );
    if (refused.length > 0) return { ok: false, errors: refused };
    const badSpeech = speechErrors(update);
    if (badSpeech.length > 0) return { ok: false, errors: badSpeech };
    if (update.apiKey !== undefined && update.clearApiKey) {
      return { ok: false, errors: [{ key: 'apiKey', message: 'give a new API key or clear it, not both' }] };
    }
    // Never echo the key: the message says what is wrong with it, not what it is.
    if (update.apiKey !== undefined && !HeaderToken.safeParse(update.apiKey).success) {
      return { ok: false, errors: [{ key: 'apiKey', message: 'an API key is visible ASCII without spaces' }] };
    }
    const nextSettings = PersistedSettings.safeParse(applyUpdate(this.store.currentSettings, update, this.locked));
    if (!nextSettings.success) {
      return {
        ok: false,
        errors: nextSettings.error.issues.slice(0, 20).map((i) => ({ key: i.path.map(String).join('.'), message: i.message })),
      };
    }
    const candidate = this.resolve(nextSettings.data, update.clearApiKey ? undefined : (update.apiKey ?? this.stored?.key));
    // A new key is bound to the backend it is entered with; any other key keeps its binding, so a new
    // backend address needs its key in the same save (else whoever may edit the address could collect it).
    const nextStored: StoredApiKey | undefined =
      update.apiKey !== undefined
        ? { key: update.apiKey, origin: originOf(candidate.config.backend.baseUrl) }
        : update.clearApiKey
          ? undefined
          : this.stored;
    const errors =
      candidate.problem === undefined ? candidateErrors(candidate.config, this.bindings(nextStored, nextSettings.data)) : candidate.errors;
    if (errors.length > 0) return { ok: false, errors };

    // The key first: a secret store that refuses it (no OS keyring, say) leaves everything as it was.
    try {
      if (update.apiKey !== undefined && nextStored) await this.secrets.set(API_KEY_SECRET, encodeStoredApiKey(nextStored));
      else if (update.clearApiKey) await this.secrets.delete(API_KEY_SECRET);
    } catch (e) {
      const message = `the API key could not be stored: ${errorText(e)}`.slice(0, 1_000);
      this.log().error({ event: 'secret_store_failed' }, message);
      return { ok: false, errors: [{ key: 'apiKey', message }] };
    }
    if (update.apiKey !== undefined || update.clearApiKey) this.secretsProblem = undefined;
    await this.store.saveSettings(nextSettings.data);
    const before = this.current;
    this.stored = nextStored;
    this.settingsProblem = undefined;
    this.configProblem = undefined;
    this.current = candidate.config;
    this.log().info({ event: 'settings_saved', keys: updatedKeys(update, before.speech.keys) }, 'settings saved');
    return { ok: true, config: candidate.config };
  }

  /** What a support bundle tells about the configuration: each layer, what was ignored, the problems. */
  supportFacts(): Pick<SupportReportInput, 'layers' | 'ignoredKeys' | 'problems' | 'secrets'> {
    const { sources } = this;
    // First: resolving the machine's key may meet an ignored key, which the bundle then lists.
    const machineKey = this.machineKey(this.store.currentSettings).key;
    return {
      layers: {
        ...(sources.configFile === undefined ? {} : { configFile: sources.configFile }),
        env: sources.env,
        settings: settingsLayer(this.store.currentSettings, this.stored?.key),
        ...(sources.overrides ? { overrides: sources.overrides } : {}),
        ...(sources.managed ? { managed: sources.managed.layer } : {}),
        ...(sources.backendOverride
          ? { testSetup: { backend: { baseUrl: sources.backendOverride.baseUrl, apiKey: sources.backendOverride.apiKey } } }
          : {}),
      },
      ignoredKeys: [...this.ignored].map((k) => k.replace('|', ': ')),
      problems: { managed: this.managedProblem, settings: this.settingsProblem, config: this.configProblem, secrets: this.secretsProblem },
      secrets: [
        this.current.backend.apiKey,
        this.stored?.key,
        machineKey,
        sources.backendOverride?.apiKey,
        this.current.staff.pinHash,
        this.store.currentStaff.pinHash,
        this.managedPinHash,
      ],
    };
  }

  /** What diagnostics tell about the stores: the secret store's problem, files readable by others. */
  storeProblems(): { secrets: string | undefined; permissions: readonly string[] } {
    return { secrets: this.secretsProblem, permissions: this.permissionProblems };
  }

  private resolve(settings: PersistedSettings, apiKey: string | undefined): Resolved {
    return resolveLayers(this.sources, settings, apiKey, (source, path) => this.ignoredKey(source, path));
  }

  /** The configuration with these saved settings, refused when its key would go to another backend. */
  private resolveBound(settings: PersistedSettings, stored: StoredApiKey | undefined): Resolved {
    const resolved = this.resolve(settings, stored?.key);
    if (resolved.problem !== undefined) return resolved;
    const problem = bindingProblem(resolved.config.backend.apiKey, resolved.config.backend.baseUrl, this.bindings(stored, settings));
    return problem === undefined ? resolved : { config: resolved.config, problem, errors: [{ key: 'apiKey', message: problem }] };
  }

  private bindings(stored: StoredApiKey | undefined, settings: PersistedSettings): KeyBindings {
    return { stored, machine: this.machineKey(settings), machineStartOrigin: this.machineStartOrigin };
  }

  /** The key and address the machine's configuration gives: every source but the settings screen. */
  private machineKey(settings: PersistedSettings): MachineKey {
    const withoutBackend: PersistedSettings = { ...settings };
    delete withoutBackend.backendUrl;
    const resolved = this.resolve(withoutBackend, undefined);
    const lockedBy = this.lockedBy.get('apiKey');
    return {
      key: resolved.problem === undefined ? resolved.config.backend.apiKey : undefined,
      origin: resolved.problem === undefined ? originOf(resolved.config.backend.baseUrl) : null,
      source: (lockedBy && KEY_SOURCES[lockedBy]) ?? 'the configuration file',
    };
  }

  /** Stores the key in its bound form; a store that refuses is reported, the key still works this run. */
  private async storeKey(stored: StoredApiKey): Promise<void> {
    try {
      await this.secrets.set(API_KEY_SECRET, encodeStoredApiKey(stored));
    } catch (e) {
      this.log().warn(
        { event: 'secret_store_failed' },
        `the API key could not be stored again with its backend: ${errorText(e)}`.slice(0, 500),
      );
    }
  }

  /**
   * The origin remembered for this machine key; `null` (nothing is sent) when the secret store cannot say:
   * a binding that cannot be read must not fall back to whatever address settings.json gives now.
   */
  private async rememberedMachineOrigin(key: string): Promise<string | null | undefined> {
    try {
      return rememberedMachineKeyOrigin(await this.secrets.get(MACHINE_KEY_ORIGIN_SECRET), key);
    } catch (e) {
      this.secretsProblem ??= `the stored API key binding cannot be read: ${errorText(e)}`.slice(0, 500);
      return null;
    }
  }

  /** Remembers a machine key's first origin; a store that refuses is reported, the binding still holds this run. */
  private async storeMachineOrigin({ key, origin }: { readonly key: string; readonly origin: string }): Promise<void> {
    try {
      await this.secrets.set(MACHINE_KEY_ORIGIN_SECRET, encodeMachineKeyOrigin(key, origin));
    } catch (e) {
      this.log().warn({ event: 'secret_store_failed' }, `the API key's backend could not be remembered: ${errorText(e)}`.slice(0, 500));
    }
  }

  /** A managed-only key set elsewhere: logged once (it shows in the diagnostics' events). */
  private ignoredKey(source: string, path: string): void {
    const key = `${source}|${path}`;
    if (this.ignored.has(key)) return;
    this.ignored.add(key);
    if (this.logging) this.logIgnoredKey(source, path);
  }

  private logIgnoredKey(source: string, path: string): void {
    this.log().warn(
      { event: 'config_key_ignored', keys: [path], source: source.replace(/ /g, '_') },
      `${path} from the ${source} is ignored: a production kiosk takes it only from the managed configuration file`,
    );
  }
}
