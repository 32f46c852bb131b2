/**
 * Keeps the kiosk screen alive (electronjs.org/docs/latest/api/web-contents#event-render-process-gone):
 *  - the renderer process died (crash, OOM, killed): reload; the third death within five minutes asks for
 *    a relaunch of the whole app instead (a reload evidently does not help);
 *  - the page hangs (`unresponsive`) for longer than a grace period: its renderer is killed, which the
 *    rule above turns into a reload (a hung renderer may never run a plain reload's unload);
 *  - other child processes (GPU, utility) that die are logged.
 * Each event is logged with its reason and exit code only.
 */
import type { App, BrowserWindow, WebContents } from 'electron';
import type { Logger } from '../platform/log.js';

export interface RendererWatchOptions {
  readonly window: Pick<BrowserWindow, 'on' | 'off'>;
  readonly contents: Pick<WebContents, 'on' | 'off' | 'reload' | 'forcefullyCrashRenderer' | 'isDestroyed'>;
  readonly log: Logger;
  /** The app is quitting: deaths are expected then and nothing is restarted. */
  readonly isQuitting: () => boolean;
  /** Called instead of a reload when the renderer keeps dying. */
  readonly onCrashLoop: () => void;
  readonly maxCrashes?: number;
  readonly crashWindowMs?: number;
  readonly unresponsiveGraceMs?: number;
  readonly now?: () => number;
}

export const DEFAULT_MAX_CRASHES = 3;
export const DEFAULT_CRASH_WINDOW_MS = 5 * 60_000;
export const DEFAULT_UNRESPONSIVE_GRACE_MS = 15_000;

/** Watches one window's renderer; returns a function that stops watching. */
export function watchRenderer(options: RendererWatchOptions): () => void {
  const { window, contents, log } = options;
  const now = options.now ?? Date.now;
  const maxCrashes = options.maxCrashes ?? DEFAULT_MAX_CRASHES;
  const crashWindowMs = options.crashWindowMs ?? DEFAULT_CRASH_WINDOW_MS;
  let crashes: number[] = [];
  let hangTimer: NodeJS.Timeout | undefined;

  const onGone = (_event: unknown, details: { reason: string; exitCode: number }): void => {
    clearTimeout(hangTimer);
    hangTimer = undefined;
    if (options.isQuitting() || contents.isDestroyed()) return;
    const at = now();
    crashes = [...crashes.filter((t) => at - t < crashWindowMs), at];
    log.error(
      { event: 'renderer_gone', reason: details.reason, code: details.exitCode, count: crashes.length },
      "the kiosk screen's renderer process ended",
    );
    if (crashes.length >= maxCrashes) {
      log.error(
        { event: 'renderer_crash_loop', count: crashes.length },
        `the kiosk screen failed ${crashes.length} times within ${Math.round(crashWindowMs / 60_000)} minutes; relaunching the app`,
      );
      crashes = [];
      options.onCrashLoop();
      return;
    }
    contents.reload();
  };

  const onUnresponsive = (): void => {
    if (hangTimer !== undefined) return;
    log.warn({ event: 'renderer_unresponsive' }, 'the kiosk screen stopped responding');
    hangTimer = setTimeout(() => {
      hangTimer = undefined;
      if (options.isQuitting() || contents.isDestroyed()) return;
      log.error({ event: 'renderer_hung_restart' }, 'the kiosk screen is still not responding; restarting its renderer');
      contents.forcefullyCrashRenderer();
    }, options.unresponsiveGraceMs ?? DEFAULT_UNRESPONSIVE_GRACE_MS);
    hangTimer.unref();
  };

  const onResponsive = (): void => {
    if (hangTimer === undefined) return;
    clearTimeout(hangTimer);
    hangTimer = undefined;
    log.info({ event: 'renderer_responsive' }, 'the kiosk screen responds again');
  };

  contents.on('render-process-gone', onGone);
  window.on('unresponsive', onUnresponsive);
  window.on('responsive', onResponsive);
  return () => {
    clearTimeout(hangTimer);
    contents.off('render-process-gone', onGone);
    window.off('unresponsive', onUnresponsive);
    window.off('responsive', onResponsive);
  };
}

/** Logs every other child process that dies (GPU, network service, utility processes). */
export function logChildProcessDeaths(app: Pick<App, 'on'>, log: Logger): void {
  app.on('child-process-gone', (_event, details) => {
    log.error(
      { event: 'child_process_gone', kind: details.type, reason: details.reason, code: details.exitCode },
      'a child process of the app ended',
    );
  });
}
