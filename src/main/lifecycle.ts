/**
 * The app's life: one instance, the display kept awake, optional start at login, a bounded graceful quit
 * (service stopped, logs flushed), and a relaunch when something fatal happens — unless relaunches loop,
 * in which case the error stays on the screen and in the log for staff.
 */
import type { App, BrowserWindow, PowerSaveBlocker } from 'electron';
import type { Logger } from '../platform/log.js';
import type { RelaunchGuard } from './relaunch-guard.js';

export type LifecycleApp = Pick<
  App,
  'on' | 'quit' | 'relaunch' | 'exit' | 'requestSingleInstanceLock' | 'setLoginItemSettings' | 'isPackaged'
>;

/**
 * Takes the single-instance lock (electronjs.org/docs/latest/api/app#apprequestsingleinstancelockadditionaldata).
 * A second launch gets `false` and must end at once: this exits it (the first instance is told through
 * `second-instance` and comes to the front).
 */
export function claimSingleInstance(app: Pick<App, 'requestSingleInstanceLock' | 'exit'>): boolean {
  if (app.requestSingleInstanceLock()) return true;
  app.exit(0);
  return false;
}

/** A message safe for one log field and one screen line: no control characters, bounded. */
export function sanitiseMessage(message: string, max = 500): string {
  // eslint-disable-next-line no-control-regex -- removing control characters is the point
  return message.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').slice(0, max);
}

function errorMessage(value: unknown): string {
  if (value instanceof Error) return value.message;
  if (typeof value === 'string') return value;
  return 'a non-Error value was thrown';
}

export interface LoginItemOptions {
  readonly openAtLogin: boolean;
  readonly platform: NodeJS.Platform;
  readonly log: Logger;
}

/**
 * Start at login (config `app.startAtLogin`) on Windows and macOS. Only for an installed app (an
 * unpackaged run would register the development Electron). On Linux there is no such API: use the
 * kiosk session's systemd unit or an XDG autostart entry (installer guide).
 */
export function applyStartAtLogin(app: Pick<App, 'setLoginItemSettings' | 'isPackaged'>, options: LoginItemOptions): void {
  if (options.platform !== 'win32' && options.platform !== 'darwin') {
    if (options.openAtLogin)
      options.log.info(
        { event: 'start_at_login_unsupported' },
        'start at login is set up by the OS on Linux (systemd unit or XDG autostart)',
      );
    return;
  }
  if (!app.isPackaged) return;
  app.setLoginItemSettings({ openAtLogin: options.openAtLogin });
  options.log.info({ event: 'start_at_login', enabled: options.openAtLogin }, 'start at login applied');
}

export interface LifecycleOptions {
  readonly app: LifecycleApp;
  readonly powerSaveBlocker: Pick<PowerSaveBlocker, 'start' | 'stop' | 'isStarted'>;
  readonly log: Logger;
  readonly guard: RelaunchGuard;
  /** The kiosk window, once there is one (brought to the front by a second launch). */
  readonly window: () => BrowserWindow | undefined;
  /** Stops everything in order (updater, health, IPC, service, logs last). Called once. */
  readonly shutdown: () => Promise<void>;
  /** Shows a fatal error where staff see it (the kiosk window), when relaunching is not allowed. */
  readonly showFatal: (message: string) => void;
  /** `supervisor`: a restart is an exit with {@link RESTART_EXIT_CODE} for the OS to act on (config `app.restartBy`). */
  readonly restartBy?: 'self' | 'supervisor';
  /** Longest a graceful stop may take before the app goes anyway (default 8 s). */
  readonly shutdownBoundMs?: number;
  /** Where the uncaught-error and signal handlers go (default `process`). */
  readonly process?: Pick<NodeJS.Process, 'on' | 'off'>;
}

/** EX_TEMPFAIL (sysexits.h): "try again later" — the exit code a supervisor maps to a restart. */
export const RESTART_EXIT_CODE = 75;

export class AppLifecycle {
  private readonly options: LifecycleOptions;
  private quittingNow = false;
  private finished = false;
  private stopping: Promise<void> | undefined;
  private blockerId: number | undefined;
  private relaunching = false;
  private readonly proc: Pick<NodeJS.Process, 'on' | 'off'>;
  private readonly onUncaught = (error: unknown): void => {
    this.fatal('uncaught_exception', error);
  };
  private readonly onUnhandled = (reason: unknown): void => {
    this.fatal('unhandled_rejection', reason);
  };
  private readonly onSignal = (): void => {
    this.options.app.quit();
  };

  constructor(options: LifecycleOptions) {
    this.options = options;
    this.proc = options.process ?? process;
  }

  /** The app is on its way out: windows may close, deaths of renderers are expected. */
  get quitting(): boolean {
    return this.quittingNow;
  }

  /** Installs every handler and keeps the display awake. */
  start(): void {
    const { app, log } = this.options;
    this.blockerId = this.options.powerSaveBlocker.start('prevent-display-sleep');
    app.on('second-instance', () => {
      const window = this.options.window();
      log.info({ event: 'second_instance' }, 'another launch was refused; bringing the kiosk to the front');
      if (!window || window.isDestroyed()) return;
      if (window.isMinimized()) window.restore();
      window.show();
      window.focus();
    });
    app.on('before-quit', (event) => {
      this.quittingNow = true;
      if (this.finished) return;
      event.preventDefault();
      void this.stopEverything().then(() => {
        this.finished = true;
        app.quit();
      });
    });
    // The kiosk window can only close when quitting (or outside kiosk mode, in development): then quit.
    app.on('window-all-closed', () => {
      app.quit();
    });
    this.proc.on('uncaughtException', this.onUncaught);
    this.proc.on('unhandledRejection', this.onUnhandled);
    this.proc.on('SIGTERM', this.onSignal);
    this.proc.on('SIGINT', this.onSignal);
  }

  /** Runs `shutdown` once, within the bound; the display may sleep again afterwards. */
  stopEverything(): Promise<void> {
    this.stopping ??= (async () => {
      const { log } = this.options;
      const bound = this.options.shutdownBoundMs ?? 8_000;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), bound);
      });
      const outcome = await Promise.race([
        this.options.shutdown().then(
          () => 'done' as const,
          (e: unknown) => {
            log.error({ event: 'shutdown_failed' }, `stopping the kiosk failed: ${sanitiseMessage(errorMessage(e))}`);
            return 'failed' as const;
          },
        ),
        timeout,
      ]);
      clearTimeout(timer);
      if (outcome === 'timeout') log.error({ event: 'shutdown_timeout' }, `the kiosk did not stop within ${bound} ms; quitting anyway`);
      if (this.blockerId !== undefined && this.options.powerSaveBlocker.isStarted(this.blockerId))
        this.options.powerSaveBlocker.stop(this.blockerId);
      this.proc.off('SIGTERM', this.onSignal);
      this.proc.off('SIGINT', this.onSignal);
    })();
    return this.stopping;
  }

  /**
   * Something is badly wrong in main: log it (message only), then relaunch — or, when relaunches loop,
   * keep running with the error on the screen.
   */
  fatal(kind: 'uncaught_exception' | 'unhandled_rejection', error: unknown): void {
    const message = sanitiseMessage(errorMessage(error));
    this.options.log.fatal({ event: 'main_fatal', kind }, message);
    this.relaunch(kind, message);
  }

  /** A relaunch of the whole app (also after a renderer crash loop), within the guard's limit. */
  relaunch(reason: string, message: string): void {
    if (this.relaunching || this.quittingNow) return;
    const { app, log, guard } = this.options;
    if (!guard.tryRecord()) {
      log.fatal(
        { event: 'relaunch_loop_stopped', reason, count: guard.recent().length },
        'too many relaunches in a short time; not relaunching again',
      );
      this.options.showFatal(message);
      return;
    }
    this.relaunching = true;
    this.quittingNow = true;
    const bySupervisor = this.options.restartBy === 'supervisor';
    log.warn({ event: 'relaunching', reason, by: bySupervisor ? 'supervisor' : 'self' }, 'relaunching the app');
    void this.stopEverything().then(() => {
      if (bySupervisor) {
        app.exit(RESTART_EXIT_CODE);
        return;
      }
      app.relaunch();
      app.exit(0);
    });
  }

  /** Removes the process-wide handlers (tests; a real app ends with the process). */
  dispose(): void {
    this.proc.off('uncaughtException', this.onUncaught);
    this.proc.off('unhandledRejection', this.onUnhandled);
    this.proc.off('SIGTERM', this.onSignal);
    this.proc.off('SIGINT', this.onSignal);
  }
}
