/**
 * The app's life: one instance, the display awake while up, a bounded graceful quit, fatal errors in main
 * logged and relaunched, relaunch loops stopped, start at login.
 */
import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/platform/log.js';
import { AppLifecycle, applyStartAtLogin, claimSingleInstance, RESTART_EXIT_CODE, sanitiseMessage } from '../../../src/main/lifecycle.js';
import { RelaunchGuard } from '../../../src/main/relaunch-guard.js';
import { LogCapture } from '../../support/harness.js';
import { BrowserWindow, app, calls, powerSaveBlocker, resetFakeElectron } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js'));

let dir: string;
let logs: LogCapture;
let proc: EventEmitter;
let window: BrowserWindow | undefined;
let shutdown: ReturnType<typeof vi.fn<() => Promise<void>>>;
let fatalShown: string[];
let lifecycle: AppLifecycle;

function start(options: { shutdownBoundMs?: number; guard?: RelaunchGuard; restartBy?: 'self' | 'supervisor' } = {}): AppLifecycle {
  lifecycle = new AppLifecycle({
    app: app as never,
    powerSaveBlocker: powerSaveBlocker,
    log: createLogger({ level: 'debug' }, logs),
    guard: options.guard ?? new RelaunchGuard({ file: join(dir, 'relaunches.json') }),
    window: () => window as never,
    shutdown,
    showFatal: (m) => fatalShown.push(m),
    process: proc as never,
    ...(options.shutdownBoundMs === undefined ? {} : { shutdownBoundMs: options.shutdownBoundMs }),
    ...(options.restartBy === undefined ? {} : { restartBy: options.restartBy }),
  });
  lifecycle.start();
  return lifecycle;
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

beforeEach(async () => {
  resetFakeElectron();
  dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-lifecycle-'));
  logs = new LogCapture();
  proc = new EventEmitter();
  window = undefined;
  shutdown = vi.fn(() => Promise.resolve());
  fatalShown = [];
});

afterEach(async () => {
  lifecycle.dispose();
  vi.useRealTimers();
  await rm(dir, { recursive: true, force: true });
});

describe('single instance', () => {
  it('the first launch holds the lock', () => {
    lifecycle = new AppLifecycle({} as never);
    expect(claimSingleInstance(app as never)).toBe(true);
    expect(app.exitCode).toBeUndefined();
  });

  it('a second launch exits at once', () => {
    lifecycle = new AppLifecycle({} as never);
    app.lockResult = false;
    expect(claimSingleInstance(app as never)).toBe(false);
    expect(app.exitCode).toBe(0);
  });

  it('second-instance restores, shows and focuses the kiosk window', () => {
    start();
    window = new BrowserWindow({ show: false });
    window.minimize();
    app.emit('second-instance', {}, ['mdl-kiosk'], '/', {});
    expect(window.isMinimized()).toBe(false);
    expect(window.isVisible()).toBe(true);
    expect(window.focused).toBe(true);
    expect(logs.events()).toContain('second_instance');
  });

  it('second-instance before the window exists does nothing harmful', () => {
    start();
    expect(() => app.emit('second-instance', {}, [], '/', {})).not.toThrow();
  });
});

describe('power', () => {
  it('keeps the display awake while up and lets it sleep after quitting', async () => {
    start();
    expect([...powerSaveBlocker.active.values()]).toEqual(['prevent-display-sleep']);
    app.quit();
    await vi.waitFor(() => expect(powerSaveBlocker.active.size).toBe(0));
  });
});

describe('graceful quit', () => {
  it('before-quit runs the shutdown once, then the app really quits', async () => {
    start();
    app.quit();
    expect(lifecycle.quitting).toBe(true);
    await vi.waitFor(() => expect(app.exitCode).toBe(0));
    expect(shutdown).toHaveBeenCalledTimes(1);
    expect(app.quitRequests).toBe(2);
  });

  it('a shutdown that hangs is cut off at the bound', async () => {
    vi.useFakeTimers();
    shutdown = vi.fn(() => new Promise<void>(() => undefined));
    start({ shutdownBoundMs: 500 });
    app.quit();
    await vi.advanceTimersByTimeAsync(499);
    expect(app.exitCode).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(app.exitCode).toBe(0);
    expect(logs.events()).toContain('shutdown_timeout');
  });

  it('a failing shutdown is logged and the app still quits', async () => {
    shutdown = vi.fn(() => Promise.reject(new Error('device stuck')));
    start();
    app.quit();
    await vi.waitFor(() => expect(app.exitCode).toBe(0));
    expect(logs.events()).toContain('shutdown_failed');
  });

  it('SIGTERM and SIGINT quit gracefully', async () => {
    start();
    proc.emit('SIGTERM');
    await vi.waitFor(() => expect(app.exitCode).toBe(0));
    expect(shutdown).toHaveBeenCalledTimes(1);
  });

  it('all windows closed: quit', () => {
    start();
    app.emit('window-all-closed');
    expect(lifecycle.quitting).toBe(true);
  });
});

describe('fatal errors in main', () => {
  it('an uncaught exception is logged (message only, control characters removed) and the app relaunches after stopping', async () => {
    start();
    const error = new Error('boom\n{"event":"forged"}\u001b[31m');
    error.stack = 'Error: boom\n    at /home/kiosk/secret/path.js:1:1';
    proc.emit('uncaughtException', error);
    await vi.waitFor(() => expect(app.exitCode).toBe(0));
    expect(app.relaunched).toBe(1);
    expect(shutdown).toHaveBeenCalledTimes(1);
    expect(calls.indexOf('app.relaunch')).toBeLessThan(calls.indexOf('app.exit 0'));
    const fatal = logs.records.find((r) => r.event === 'main_fatal');
    expect(fatal).toMatchObject({ kind: 'uncaught_exception', level: 60 });
    expect(fatal?.msg).toBe('boom {"event":"forged"} [31m');
    expect(logs.text()).not.toContain('secret/path');
    expect(logs.records.filter((r) => r.event === 'forged')).toEqual([]);
  });

  it('an unhandled rejection too', async () => {
    start();
    proc.emit('unhandledRejection', 'plain string reason');
    await vi.waitFor(() => expect(app.relaunched).toBe(1));
    expect(logs.records.find((r) => r.event === 'main_fatal')).toMatchObject({ kind: 'unhandled_rejection', msg: 'plain string reason' });
  });

  it('app.restartBy supervisor: a fatal error stops everything and exits 75 for the OS supervisor to restart; the app does not relaunch itself', async () => {
    start({ restartBy: 'supervisor' });
    proc.emit('uncaughtException', new Error('boom'));
    await vi.waitFor(() => expect(app.exitCode).toBe(RESTART_EXIT_CODE));
    expect(RESTART_EXIT_CODE).toBe(75);
    expect(app.relaunched).toBe(0);
    expect(shutdown).toHaveBeenCalledTimes(1);
    expect(logs.records.find((r) => r.event === 'relaunching')).toMatchObject({ by: 'supervisor' });
  });

  it('a relaunch is requested once, even if errors keep coming while it runs', async () => {
    start();
    proc.emit('uncaughtException', new Error('one'));
    proc.emit('uncaughtException', new Error('two'));
    await vi.waitFor(() => expect(app.exitCode).toBe(0));
    expect(app.relaunched).toBe(1);
  });

  it('after N relaunches within M minutes it stops relaunching and shows the error', async () => {
    let now = 1_000_000;
    const guard = new RelaunchGuard({ file: join(dir, 'relaunches.json'), max: 3, windowMs: 10 * 60_000, now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(guard.tryRecord()).toBe(true);
      now += 60_000;
    }
    start({ guard });
    proc.emit('uncaughtException', new Error('keeps failing'));
    await settle();
    expect(app.relaunched).toBe(0);
    expect(app.exitCode).toBeUndefined();
    expect(fatalShown).toEqual(['keeps failing']);
    expect(logs.events()).toContain('relaunch_loop_stopped');
  });
});

describe('start at login', () => {
  const log = createLogger({ level: 'silent' });

  it('Windows and macOS, installed app: set as configured', () => {
    app.isPackaged = true;
    applyStartAtLogin(app, { openAtLogin: true, platform: 'win32', log });
    applyStartAtLogin(app, { openAtLogin: false, platform: 'darwin', log });
    expect(app.loginItemSettings).toEqual([{ openAtLogin: true }, { openAtLogin: false }]);
  });

  it('never for an unpackaged run, nor on Linux (systemd / autostart instead)', () => {
    applyStartAtLogin(app, { openAtLogin: true, platform: 'win32', log });
    app.isPackaged = true;
    applyStartAtLogin(app, { openAtLogin: true, platform: 'linux', log });
    expect(app.loginItemSettings).toEqual([]);
  });
});

describe('sanitiseMessage', () => {
  it('removes control and line-separator characters and bounds the length', () => {
    expect(sanitiseMessage('a\r\nb\u2028c\u0000d')).toBe('a b c d');
    expect(sanitiseMessage('x'.repeat(1_000))).toHaveLength(500);
  });
});
