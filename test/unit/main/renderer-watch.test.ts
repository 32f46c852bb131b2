/** Renderer crashes reload the screen; a crash loop relaunches the app; a hang restarts the renderer. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/platform/log.js';
import { logChildProcessDeaths, watchRenderer } from '../../../src/main/renderer-watch.js';
import { LogCapture } from '../../support/harness.js';
import { BrowserWindow, app, fakeEvent, resetFakeElectron } from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js'));

let logs: LogCapture;
let window: BrowserWindow;
let now: number;
let quitting: boolean;
let loops: number;
let stop: () => void;

beforeEach(() => {
  resetFakeElectron();
  logs = new LogCapture();
  window = new BrowserWindow({ show: false });
  now = 0;
  quitting = false;
  loops = 0;
  stop = watchRenderer({
    window: window as never,
    contents: window.webContents as never,
    log: createLogger({ level: 'debug' }, logs),
    isQuitting: () => quitting,
    onCrashLoop: () => loops++,
    unresponsiveGraceMs: 1_000,
    now: () => now,
  });
});

afterEach(() => {
  stop();
  vi.useRealTimers();
});

const gone = (reason: string, exitCode = 1): void => {
  window.webContents.emit('render-process-gone', fakeEvent(), { reason, exitCode });
};

describe('render-process-gone', () => {
  it('reloads, and logs the reason and exit code only', () => {
    gone('crashed', 139);
    expect(window.webContents.reloads).toBe(1);
    expect(logs.records.find((r) => r.event === 'renderer_gone')).toMatchObject({ reason: 'crashed', code: 139, count: 1 });
  });

  it('the third death within five minutes relaunches instead of reloading', () => {
    gone('crashed');
    now += 60_000;
    gone('oom');
    now += 60_000;
    gone('crashed');
    expect(window.webContents.reloads).toBe(2);
    expect(loops).toBe(1);
    expect(logs.events()).toContain('renderer_crash_loop');
  });

  it('deaths spread over more than five minutes keep reloading', () => {
    for (let i = 0; i < 5; i++) {
      gone('crashed');
      now += 200_000;
    }
    expect(loops).toBe(0);
    expect(window.webContents.reloads).toBe(5);
  });

  it('nothing is restarted while the app quits', () => {
    quitting = true;
    gone('clean-exit', 0);
    expect(window.webContents.reloads).toBe(0);
  });
});

describe('unresponsive', () => {
  it('after the grace, the hung renderer is restarted (and the crash rule reloads it)', () => {
    vi.useFakeTimers();
    window.emit('unresponsive');
    vi.advanceTimersByTime(999);
    expect(window.webContents.crashes).toBe(0);
    vi.advanceTimersByTime(1);
    expect(window.webContents.crashes).toBe(1);
    expect(window.webContents.reloads).toBe(1);
    expect(logs.events()).toEqual(expect.arrayContaining(['renderer_unresponsive', 'renderer_hung_restart', 'renderer_gone']));
  });

  it('responding again within the grace cancels it', () => {
    vi.useFakeTimers();
    window.emit('unresponsive');
    vi.advanceTimersByTime(500);
    window.emit('responsive');
    vi.advanceTimersByTime(5_000);
    expect(window.webContents.crashes).toBe(0);
  });

  it('stop() removes every listener', () => {
    stop();
    gone('crashed');
    expect(window.webContents.reloads).toBe(0);
    expect(window.listenerCount('unresponsive')).toBe(0);
  });
});

describe('child-process-gone', () => {
  it('is logged with type, reason and exit code', () => {
    logChildProcessDeaths(app as never, createLogger({ level: 'debug' }, logs));
    app.emit('child-process-gone', fakeEvent(), { type: 'GPU', reason: 'crashed', exitCode: 5, name: 'gpu' });
    expect(logs.records.find((r) => r.event === 'child_process_gone')).toMatchObject({ kind: 'GPU', reason: 'crashed', code: 5 });
  });
});
