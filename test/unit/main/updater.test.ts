/**
 * The updater on a fake electron-updater and a fake clock: off unless configured; a generic feed on the
 * configured channel, downloads on, downgrades and install-at-quit off; jittered checks; an install only
 * after a quiet period of idleness, inside the maintenance window when there is one, never during a
 * verification; failures (unreachable feed, bad checksum or signature) become a clean `error` status, one
 * log line, and a retry at the next check.
 */
import { EventEmitter } from 'node:events';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { UpdateStatus } from '../../../src/common/kiosk-api.js';
import { parseConfig } from '../../../src/platform/config.js';
import { createLogger } from '../../../src/platform/log.js';
import {
  FIRST_CHECK_JITTER_MS,
  FIRST_CHECK_MS,
  INSTALL_POLL_MS,
  insideWindow,
  QUIET_MS,
  startUpdater,
  updateErrorText,
  type AppUpdaterLike,
  type Updater,
} from '../../../src/main/updater.js';
import { LogCapture } from '../../support/harness.js';

const MINUTE = 60_000;
const FEED = 'https://updates.example.com/mdl-kiosk/';

type CheckScript = (fake: FakeUpdater) => Promise<unknown>;

/** electron-updater's AppUpdater as far as the updater uses it; each check runs the next script. */
class FakeUpdater extends EventEmitter {
  feed: unknown;
  private channelValue: string | null = null;
  autoDownload = false;
  allowDowngrade = false;
  autoInstallOnAppQuit = true;
  logger: unknown = console;
  checks = 0;
  installs: [boolean | undefined, boolean | undefined][] = [];
  script: CheckScript = () => Promise.resolve({ updateInfo: { version: '1.0.0' } });

  get channel(): string | null {
    return this.channelValue;
  }

  set channel(value: string | null) {
    this.channelValue = value;
    // As electron-updater does: a channel change allows a downgrade.
    this.allowDowngrade = true;
  }

  setFeedURL(options: unknown): void {
    this.feed = options;
  }

  checkForUpdates(): Promise<unknown> {
    this.checks++;
    return this.script(this);
  }

  quitAndInstall(isSilent?: boolean, isForceRunAfter?: boolean): void {
    this.installs.push([isSilent, isForceRunAfter]);
  }

  asUpdater(): AppUpdaterLike {
    return this as unknown as AppUpdaterLike;
  }
}

/** A check that finds `version` and, as electron-updater does with autoDownload on, downloads it. */
const finds =
  (version: string): CheckScript =>
  (fake) => {
    const updateInfo = { version, files: [{ url: `mdl-kiosk-${version}.AppImage`, sha512: `sha-of-${version}` }] };
    fake.emit('checking-for-update');
    fake.emit('update-available', updateInfo);
    if (fake.autoDownload) fake.emit('update-downloaded', { ...updateInfo, downloadedFile: '/tmp/x' });
    return Promise.resolve({ isUpdateAvailable: true, updateInfo });
  };
const nothingNew: CheckScript = (fake) => {
  fake.emit('checking-for-update');
  fake.emit('update-not-available', { version: '1.0.0' });
  return Promise.resolve({ isUpdateAvailable: false, updateInfo: { version: '1.0.0' } });
};
/** Fails as electron-updater does: an 'error' event and a rejected promise. */
const fails =
  (error: Error): CheckScript =>
  (fake) => {
    fake.emit('checking-for-update');
    fake.emit('error', error);
    return Promise.reject(error);
  };

function updatesConfig(updates: Record<string, unknown> = {}): ReturnType<typeof parseConfig>['app']['updates'] {
  return parseConfig({ app: { updates: { enabled: true, url: FEED, channel: 'pilot', checkEveryMinutes: 60, ...updates } } }).app.updates;
}

let logs: LogCapture;
let fake: FakeUpdater;
let idle: boolean;
let statuses: UpdateStatus[];
let updater: Updater | undefined;

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(new Date(2025, 5, 2, 12, 0, 0));
  logs = new LogCapture();
  fake = new FakeUpdater();
  idle = true;
  statuses = [];
});

afterEach(() => {
  updater?.stop();
  updater = undefined;
  vi.useRealTimers();
});

function start(updates: Record<string, unknown> = {}, random = 0): Updater {
  updater = startUpdater({
    updater: fake.asUpdater(),
    config: updatesConfig(updates),
    isIdle: () => idle,
    log: createLogger({ level: 'debug' }, logs),
    onStatus: (s) => statuses.push(s),
    random: () => random,
  });
  return updater;
}

describe('configuration', () => {
  it('is off unless enabled: no feed, no timer', () => {
    const off = startUpdater({
      updater: fake.asUpdater(),
      config: parseConfig({}).app.updates,
      isIdle: () => true,
      log: createLogger({}, logs),
    });
    expect(off.status()).toEqual({ state: 'disabled' });
    expect(fake.feed).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
    expect(fake.listenerCount('update-downloaded')).toBe(0);
  });

  it('enabled without app.updates.url: the feed built into the package stands (no setFeedURL), checks are scheduled', () => {
    const packaged = startUpdater({
      updater: fake.asUpdater(),
      config: parseConfig({ app: { updates: { enabled: true } } }).app.updates,
      isIdle: () => true,
      log: createLogger({}, logs),
    });
    expect(fake.feed).toBeUndefined();
    expect(packaged.status().state).not.toBe('disabled');
    expect(vi.getTimerCount()).toBeGreaterThan(0);
    expect(logs.records.find((r) => r.event === 'updates_feed')).toMatchObject({ source: 'package' });
    packaged.stop();
  });

  it('sets a generic feed on the channel, downloads on, downgrades and install-at-quit off', () => {
    start();
    expect(fake.feed).toEqual({ provider: 'generic', url: FEED, channel: 'pilot' });
    expect(fake.channel).toBe('pilot');
    expect(fake.autoDownload).toBe(true);
    // Set after the channel, which turns it on.
    expect(fake.allowDowngrade).toBe(false);
    expect(fake.autoInstallOnAppQuit).toBe(false);
    expect(fake.logger).not.toBe(console);
    expect(updater?.status()).toEqual({ state: 'idle' });
  });
});

describe('schedule', () => {
  it('checks first after a short, jittered delay, then every checkEveryMinutes (±10%)', async () => {
    start({}, 0.5);
    const first = FIRST_CHECK_MS + 0.5 * FIRST_CHECK_JITTER_MS;
    fake.script = nothingNew;
    await vi.advanceTimersByTimeAsync(first - 1);
    expect(fake.checks).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(fake.checks).toBe(1);
    expect(updater?.status()).toEqual({ state: 'idle', checkedAt: Date.now() });
    await vi.advanceTimersByTimeAsync(60 * MINUTE - 1);
    expect(fake.checks).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(fake.checks).toBe(2);
  });

  it('spreads a fleet: the first check anywhere in its window, later ones within ±10% of the interval', async () => {
    start({}, 0);
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS);
    expect(fake.checks).toBe(1);
    await vi.advanceTimersByTimeAsync(0.9 * 60 * MINUTE);
    expect(fake.checks).toBe(2);
    updater?.stop();
    fake = new FakeUpdater();
    start({}, 0.999);
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS + 0.99 * FIRST_CHECK_JITTER_MS);
    expect(fake.checks).toBe(0);
    await vi.advanceTimersByTimeAsync(0.01 * FIRST_CHECK_JITTER_MS);
    expect(fake.checks).toBe(1);
    await vi.advanceTimersByTimeAsync(1.09 * 60 * MINUTE);
    expect(fake.checks).toBe(1);
    await vi.advanceTimersByTimeAsync(0.01 * 60 * MINUTE);
    expect(fake.checks).toBe(2);
  });

  it('an unpackaged app (checkForUpdates resolves null) stays idle and says why', async () => {
    start();
    fake.script = () => Promise.resolve(null);
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS);
    expect(updater?.status()).toEqual({ state: 'idle', error: 'the updater is inactive in an unpackaged app' });
  });

  it('stop() ends every timer and listener', async () => {
    start();
    fake.script = finds('2.0.0');
    idle = false;
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS);
    expect(updater?.status().state).toBe('downloaded');
    expect(vi.getTimerCount()).toBe(2); // the next check and the install poll
    updater?.stop();
    expect(vi.getTimerCount()).toBe(0);
    for (const event of ['checking-for-update', 'update-available', 'update-not-available', 'update-downloaded', 'error'])
      expect(fake.listenerCount(event), event).toBe(0);
  });
});

describe('installing', () => {
  it('downloads in the background, then installs after a quiet minute of idleness, silently, restarting', async () => {
    start();
    fake.script = finds('2.0.0');
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS);
    expect(statuses.map((s) => s.state)).toEqual(['idle', 'checking', 'downloading', 'downloaded']);
    expect(updater?.status()).toMatchObject({ state: 'downloaded', version: '2.0.0' });
    await vi.advanceTimersByTimeAsync(QUIET_MS - INSTALL_POLL_MS);
    expect(fake.installs).toEqual([]);
    await vi.advanceTimersByTimeAsync(INSTALL_POLL_MS);
    expect(fake.installs).toEqual([[true, true]]);
    expect(updater?.status()).toMatchObject({ state: 'installing', version: '2.0.0' });
    expect(logs.events()).toEqual(expect.arrayContaining(['update_available', 'update_downloaded', 'update_installing']));
    // Once only, and no further checks start an install again.
    await vi.advanceTimersByTimeAsync(3 * 60 * MINUTE);
    expect(fake.installs).toHaveLength(1);
  });

  it('never installs while the kiosk is busy, and a busy moment restarts the quiet period', async () => {
    start();
    fake.script = finds('2.0.0');
    idle = false;
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS + 5 * 60 * MINUTE);
    expect(fake.installs).toEqual([]);
    idle = true;
    await vi.advanceTimersByTimeAsync(QUIET_MS - 2 * INSTALL_POLL_MS);
    idle = false; // a customer taps
    await vi.advanceTimersByTimeAsync(INSTALL_POLL_MS);
    idle = true;
    await vi.advanceTimersByTimeAsync(QUIET_MS - INSTALL_POLL_MS);
    expect(fake.installs).toEqual([]);
    await vi.advanceTimersByTimeAsync(2 * INSTALL_POLL_MS);
    expect(fake.installs).toHaveLength(1);
  });

  it('checks idleness again at the moment of installing (a tap between two polls restarts the wait)', async () => {
    // Idle at every poll; but the look taken just before installing (a second look in the same instant)
    // finds a customer, once.
    let lastLookAt = -1;
    let refused = false;
    const isIdle = (): boolean => {
      const secondLook = Date.now() === lastLookAt;
      lastLookAt = Date.now();
      if (secondLook && !refused) {
        refused = true;
        return false;
      }
      return true;
    };
    updater = startUpdater({ updater: fake.asUpdater(), config: updatesConfig(), isIdle, log: createLogger({}, logs), random: () => 0 });
    fake.script = finds('2.0.0');
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS + QUIET_MS);
    expect(refused).toBe(true);
    expect(fake.installs).toEqual([]);
    await vi.advanceTimersByTimeAsync(QUIET_MS);
    expect(fake.installs).toEqual([]);
    await vi.advanceTimersByTimeAsync(INSTALL_POLL_MS);
    expect(fake.installs).toHaveLength(1);
  });

  it('asks the channel once more before installing, and a customer who comes during that answer postpones the install', async () => {
    start();
    fake.script = finds('2.0.0');
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS);
    expect(fake.checks).toBe(1);
    // The confirmation: electron-updater is asked without downloading, and its events are not news.
    const seen: boolean[] = [];
    fake.script = (f) => {
      seen.push(f.autoDownload);
      idle = false; // a customer taps while the feed answers
      return finds('2.0.0')(f);
    };
    await vi.advanceTimersByTimeAsync(QUIET_MS);
    expect(seen).toEqual([false]);
    expect(fake.autoDownload).toBe(true);
    expect(fake.installs).toEqual([]);
    expect(updater?.status()).toMatchObject({ state: 'downloaded', version: '2.0.0' });
    expect(statuses.map((s) => s.state)).toEqual(['idle', 'checking', 'downloading', 'downloaded']);
    idle = true;
    fake.script = finds('2.0.0');
    await vi.advanceTimersByTimeAsync(QUIET_MS + INSTALL_POLL_MS);
    expect(fake.installs).toHaveLength(1);
    expect(fake.checks).toBe(3);
  });

  it('a confirmation that fails is not an update failure: the download waits, staff read why', async () => {
    start();
    fake.script = finds('2.0.0');
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS);
    fake.script = fails(new Error('net::ERR_PROXY_CONNECTION_FAILED'));
    await vi.advanceTimersByTimeAsync(QUIET_MS);
    expect(fake.installs).toEqual([]);
    expect(updater?.status()).toMatchObject({ state: 'downloaded', version: '2.0.0' });
    expect(updater?.status().error).toContain('net::ERR_PROXY_CONNECTION_FAILED');
    expect(logs.events()).not.toContain('update_failed');
    expect(logs.events()).toContain('update_unconfirmed');
  });

  it('waits for the maintenance window (here one that wraps midnight)', async () => {
    vi.setSystemTime(new Date(2025, 5, 2, 21, 0, 0));
    start({ maintenanceWindow: '23:30-01:00' });
    fake.script = finds('2.1.0');
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS + 2 * 60 * MINUTE);
    expect(new Date().getHours()).toBe(23);
    expect(fake.installs).toEqual([]);
    await vi.advanceTimersByTimeAsync(30 * MINUTE);
    expect(fake.installs).toHaveLength(1);
    expect(new Date().getHours() * 60 + new Date().getMinutes()).toBeGreaterThanOrEqual(23 * 60 + 30);
  });

  it('inside the window but busy: no install until the kiosk is idle', async () => {
    vi.setSystemTime(new Date(2025, 5, 2, 2, 0, 0));
    start({ maintenanceWindow: '02:00-04:00' });
    fake.script = finds('2.1.0');
    idle = false;
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS + 60 * MINUTE);
    expect(fake.installs).toEqual([]);
    idle = true;
    await vi.advanceTimersByTimeAsync(QUIET_MS + INSTALL_POLL_MS);
    expect(fake.installs).toHaveLength(1);
  });
});

describe('failures', () => {
  it('an unreachable feed: status error with a clean first line, one log line, retried at the next check', async () => {
    start();
    fake.script = fails(new Error(`net::ERR_NAME_NOT_RESOLVED\n\u001b[31mHeaders: {"set-cookie": "session=abc"}`));
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS);
    expect(updater?.status()).toEqual({ state: 'error', error: 'net::ERR_NAME_NOT_RESOLVED' });
    const failed = logs.records.filter((r) => r.event === 'update_failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ phase: 'check', level: 40 });
    expect(logs.text()).not.toContain('set-cookie');
    fake.script = nothingNew;
    // random() = 0: the next check comes at 90% of the interval.
    await vi.advanceTimersByTimeAsync(0.9 * 60 * MINUTE);
    expect(fake.checks).toBe(2);
    expect(updater?.status()).toEqual({ state: 'idle', checkedAt: Date.now() });
  });

  it('a bad checksum or signature while downloading: error, nothing installed, downloaded again later', async () => {
    start();
    fake.script = (f) => {
      f.emit('checking-for-update');
      f.emit('update-available', { version: '3.0.0' });
      f.emit('error', new Error('sha512 checksum mismatch, expected abc, got def'));
      return Promise.resolve({ updateInfo: { version: '3.0.0' } });
    };
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS + 5 * MINUTE);
    expect(updater?.status()).toMatchObject({ state: 'error', version: '3.0.0', error: 'sha512 checksum mismatch, expected abc, got def' });
    expect(logs.records.find((r) => r.event === 'update_failed')).toMatchObject({ phase: 'download' });
    expect(fake.installs).toEqual([]);
    fake.script = (f) => {
      f.emit('update-available', { version: '3.0.0' });
      f.emit('error', new Error('New version 3.0.0 is not signed by the application owner: publisherNames: Example Ltd'));
      return Promise.resolve(null);
    };
    await vi.advanceTimersByTimeAsync(60 * MINUTE);
    expect(updater?.status().error).toMatch(/^New version 3\.0\.0 is not signed/);
    fake.script = finds('3.0.1');
    await vi.advanceTimersByTimeAsync(60 * MINUTE + QUIET_MS + INSTALL_POLL_MS);
    expect(fake.installs).toHaveLength(1);
  });

  it('an install that throws is an error, not a crash', async () => {
    start();
    fake.script = finds('2.0.0');
    fake.quitAndInstall = () => {
      throw new Error('installer missing');
    };
    await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS + QUIET_MS + INSTALL_POLL_MS);
    expect(updater?.status()).toMatchObject({ state: 'error', error: 'installer missing' });
    expect(logs.records.find((r) => r.event === 'update_failed')).toMatchObject({ phase: 'install' });
  });

  it('error texts: first line, no credentials, no control characters, bounded', () => {
    expect(updateErrorText(new Error('Cannot download "https://user:pa55@updates.example.com/latest.yml", status 404'))).toBe(
      'Cannot download "https://updates.example.com/latest.yml", status 404',
    );
    expect(updateErrorText(new Error('\u001b[1mbold\u001b[0m\u0007 and \u202Eevil'))).toBe('bold and evil');
    expect(updateErrorText(new Error('x'.repeat(1_000)))).toHaveLength(300);
    expect(updateErrorText(undefined)).toBe('unknown error');
    expect(updateErrorText(new Error(''))).toBe('unknown error');
  });
});

describe('insideWindow', () => {
  const at = (h: number, m: number): Date => new Date(2025, 0, 15, h, m, 30);
  it.each([
    ['02:00-04:00', 1, 59, false],
    ['02:00-04:00', 2, 0, true],
    ['02:00-04:00', 3, 59, true],
    ['02:00-04:00', 4, 0, false],
    ['23:00-01:00', 22, 59, false],
    ['23:00-01:00', 23, 0, true],
    ['23:00-01:00', 0, 0, true],
    ['23:00-01:00', 0, 59, true],
    ['23:00-01:00', 1, 0, false],
    ['00:00-23:59', 23, 59, false],
    ['23:59-00:00', 23, 59, true],
    ['23:59-00:00', 0, 0, false],
  ] as const)('%s at %i:%i → %s', (window, h, m, expected) => {
    expect(insideWindow(window, at(h, m))).toBe(expected);
  });

  it('a window and its reverse split the day: every minute is in exactly one', () => {
    const hhmm = fc
      .tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
      .map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`);
    fc.assert(
      fc.property(hhmm, hhmm, fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }), (a, b, h, m) => {
        fc.pre(a !== b);
        return insideWindow(`${a}-${b}`, at(h, m)) !== insideWindow(`${b}-${a}`, at(h, m));
      }),
    );
  });

  it('refuses what is not a window', () => {
    expect(() => insideWindow('2-4', new Date())).toThrow(/HH:MM-HH:MM/);
  });
});
