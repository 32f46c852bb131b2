/**
 * The `KioskApi` of each screen connected to the service: the customer intents are the kiosk's; the staff
 * session is the connection's own (staff-pin.ts), and each staff action extends only that session. The
 * staff intents are here: the request profile, the settings, the PIN, diagnostics, the self-test and the
 * support bundle.
 */
import type { FieldError, KioskApiHandlers, SaveResult, ScreenState } from '../common/kiosk-api.js';
import type { Logger } from '../platform/log.js';
import type { CustomerIntents } from './customer-intents.js';
import type { KioskRuntime } from './kiosk-runtime.js';
import type { ScreenStateStream } from './screen-state.js';
import type { ServiceConfig } from './service-config.js';
import { errorText } from '../common/error-text.js';
import type { Args, Ok } from './service-options.js';
import type { ServiceSupport } from './service-support.js';
import { ManagedPinError, type StaffGate } from './staff-pin.js';

/** One screen connected to the service: the `KioskApi` with its own staff session and state stream. */
export type ScreenConnection = KioskApiHandlers & {
  state(): ScreenState;
  onState(listener: (state: ScreenState) => void): () => void;
  staffUnlocked(): boolean;
  /** The screen is gone: its staff session ends. */
  close(): void;
};

export interface StaffIntentsOptions {
  readonly staff: StaffGate;
  readonly customer: CustomerIntents;
  readonly config: Pick<ServiceConfig, 'save' | 'saveProfile' | 'settingsView'>;
  readonly runtime: Pick<KioskRuntime, 'kiosk' | 'setProfile' | 'applySaved'>;
  readonly screen: Pick<ScreenStateStream, 'view' | 'state' | 'onState' | 'safeCall' | 'publish' | 'showProfile' | 'resetLanguage'>;
  readonly support: Pick<
    ServiceSupport,
    'diagnostics' | 'selfTest' | 'writeBundle' | 'writeBundleToVolume' | 'supportVolumes' | 'prepareDownload'
  >;
  readonly log: () => Logger;
}

export class StaffIntents {
  /** Saves run one at a time: each starts from what the previous one stored. */
  private saving: Promise<unknown> = Promise.resolve();
  private screenCount = 0;

  constructor(private readonly options: StaffIntentsOptions) {}

  /** The `KioskApi` of one connection, with that connection's staff session. */
  handlersFor(connection: string): KioskApiHandlers {
    const { staff, customer, config, support } = this.options;
    const staffAction =
      <A extends unknown[], R>(run: (...args: A) => R) =>
      (...args: A): R => {
        staff.touch(connection);
        return run(...args);
      };
    return {
      qrScanned: (args) => customer.qrScanned(args),
      next: () => customer.next(),
      retry: () => customer.retry(),
      cancel: () => customer.cancel(),
      moreTime: () => customer.moreTime(),
      setLanguage: (args) => customer.setLanguage(args),
      reportCamera: (args) => customer.reportCamera(args),
      reportError: (args) => customer.reportError(args),
      synthesizeSpeech: (args) => customer.synthesizeSpeech(args),
      reportSpeech: (args) => customer.reportSpeech(args),
      unlock: (args) => staff.unlock(args.pin, connection),
      lock: () => {
        staff.lock(connection);
        return { ok: true };
      },
      setProfile: staffAction((args: Args<'setProfile'>) => this.applyProfile(args)),
      getSettings: staffAction(() => config.settingsView()),
      saveSettings: staffAction((update: Args<'saveSettings'>) => this.queueSave(update)),
      changePin: (args) => this.changePin(connection, args),
      getDiagnostics: staffAction(() => support.diagnostics()),
      selfTest: staffAction(() => support.selfTest()),
      writeSupportBundle: staffAction(async (args: Args<'writeSupportBundle'>) => {
        const bundle = args.volume === undefined ? await support.writeBundle() : await support.writeBundleToVolume(args.volume);
        return { path: bundle.path, bytes: bundle.bytes };
      }),
      listSupportVolumes: staffAction(() => support.supportVolumes()),
      prepareSupportDownload: staffAction(() => support.prepareDownload()),
    };
  }

  /**
   * A screen connected to the kiosk (the Electron kiosk window, a browser-host socket): the `KioskApi`
   * with a staff session of its own, and the state stream as this screen sees it. `close()` ends its
   * staff session.
   */
  connectScreen(): ScreenConnection {
    const { staff, screen } = this.options;
    const id = `screen-${++this.screenCount}`;
    const handlers = this.handlersFor(id);
    const listeners = new Set<(state: ScreenState) => void>();
    const view = (state: ScreenState): ScreenState => ({ ...state, staff: staff.state(id) });
    const off = screen.onState((state) => {
      for (const listener of listeners) screen.safeCall(listener, view(state));
    });
    let closed = false;
    return {
      ...handlers,
      state: () => view(screen.state),
      onState: (listener) => {
        listeners.add(listener);
        screen.safeCall(listener, view(screen.state));
        return () => listeners.delete(listener);
      },
      staffUnlocked: () => !closed && staff.unlocked(id),
      close: () => {
        if (closed) return;
        closed = true;
        off();
        listeners.clear();
        staff.lock(id);
      },
    };
  }

  async changePin(connection: string, args: Args<'changePin'>): Promise<Ok | { ok: false; errors: FieldError[] }> {
    const { staff } = this.options;
    // The current PIN again: an unlocked screen left alone must not let the next person take the PIN over.
    const check = await staff.unlock(args.current, connection);
    if (!check.ok) {
      if (check.reason === 'locked_out') staff.lock(connection);
      const message =
        check.reason === 'wrong_pin'
          ? `wrong PIN (${check.attemptsLeft ?? 0} attempts left)`
          : check.reason === 'locked_out'
            ? 'too many wrong PINs: the staff screens are locked'
            : 'no staff PIN is set';
      return { ok: false, errors: [{ key: 'current', message }] };
    }
    try {
      await staff.setPin(args.next);
    } catch (e) {
      const why = e instanceof ManagedPinError ? e.message : `the PIN could not be stored: ${errorText(e)}`;
      return { ok: false, errors: [{ key: 'next', message: why.slice(0, 1_000) }] };
    }
    staff.touch(connection);
    return { ok: true };
  }

  private async applyProfile(args: Args<'setProfile'>): Promise<Ok> {
    const { config, runtime, screen } = this.options;
    await config.saveProfile(args.name);
    runtime.setProfile(args.name);
    this.options.log().info({ event: 'profile_changed', profile: args.name }, 'request profile changed');
    if (!runtime.kiosk) screen.showProfile(args.name);
    screen.publish();
    return { ok: true };
  }

  private queueSave(update: Args<'saveSettings'>): Promise<SaveResult> {
    const run = this.saving.then(() => this.save(update));
    this.saving = run.catch(() => undefined);
    return run;
  }

  private async save(update: Args<'saveSettings'>): Promise<SaveResult> {
    const { config, runtime, screen } = this.options;
    const saved = await config.save(update);
    if (!saved.ok) return saved;
    runtime.applySaved(saved.config);
    if (update.defaultLanguage !== undefined && screen.view.phase === 'ready') screen.resetLanguage();
    screen.publish();
    return { ok: true, settings: config.settingsView(saved.config) };
  }
}
