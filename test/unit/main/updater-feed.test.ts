/**
 * The updater against electron-updater itself: its AppUpdater/BaseUpdater (check, staging, the semver
 * decision, the download with its sha512 check and its cache), its GenericProvider and channel-file parser
 * (`parseUpdateInfo`, node_modules/electron-updater/out/providers/Provider.js), on a feed served on
 * loopback. Only the parts that need Electron are replaced: the app (a test AppAdapter), the HTTP client
 * (electron-updater's own executor with Node's http instead of Electron's net) and the installer (records
 * which file it was given instead of quitting into it). The clock is fake; the network is real.
 *
 * Issue 30: a release pulled from the feed after a kiosk downloaded it was installed at the next idle
 * minute. Before installing, the kiosk now asks the channel again and installs only what it still offers.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BaseUpdater } from 'electron-updater';
import type { AppAdapter } from 'electron-updater/out/AppAdapter.js';
import type { DownloadExecutorResult, DownloadUpdateOptions } from 'electron-updater/out/AppUpdater.js';
import type { InstallOptions } from 'electron-updater/out/BaseUpdater.js';
import { ElectronHttpExecutor } from 'electron-updater/out/electronHttpExecutor.js';
import { findFile } from 'electron-updater/out/providers/Provider.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { UpdateStatus } from '../../../src/common/kiosk-api.js';
import { parseConfig } from '../../../src/platform/config.js';
import { createLogger } from '../../../src/platform/log.js';
import { FIRST_CHECK_MS, INSTALL_POLL_MS, QUIET_MS, startUpdater, type Updater } from '../../../src/main/updater.js';
import { LogCapture } from '../../support/harness.js';

const RUNNING = '1.4.0';
const MINUTE = 60_000;

/** A generic feed on loopback: the channel file and installers, switchable to answering nothing. */
class Feed {
  readonly files = new Map<string, Buffer>();
  readonly requests: string[] = [];
  down = false;
  private server: Server | undefined;

  async start(): Promise<string> {
    const server = createServer((req, res) => {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).slice(1);
      this.requests.push(path);
      // Unreachable as a dead proxy or a dropped route is: the connection goes, no answer.
      if (this.down) return void req.socket.destroy();
      const body = this.files.get(path);
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  }

  /** Publishes `version` on channel `latest` (Linux: latest-linux.yml), as electron-builder writes it. */
  publish(version: string, extra = ''): Buffer {
    const name = `mdl-kiosk-${version}.AppImage`;
    const installer = Buffer.concat([Buffer.from(`installer ${version} `), randomBytes(4096)]);
    const sha512 = createHash('sha512').update(installer).digest('base64');
    this.files.set(name, installer);
    this.files.set(
      'latest-linux.yml',
      Buffer.from(
        `version: ${version}\nfiles:\n  - url: ${name}\n    sha512: ${sha512}\n    size: ${installer.length}\npath: ${name}\nsha512: ${sha512}\nreleaseDate: '2026-11-28T10:00:00.000Z'\n${extra}`,
      ),
    );
    return installer;
  }

  /** Puts back a channel file as written for an earlier publication (the guide's rollback). */
  channelFile(): Buffer | undefined {
    return this.files.get('latest-linux.yml');
  }

  channelRequests(): number {
    return this.requests.filter((p) => p === 'latest-linux.yml').length;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

/** electron-updater's HTTP client, on Node's http instead of Electron's net (which needs an Electron main process). */
class LoopbackExecutor extends ElectronHttpExecutor {
  override createRequest(options: Record<string, unknown>, callback: (response: IncomingMessage) => void): Electron.ClientRequest {
    // Electron's own options (redirect: 'manual', session) mean nothing to Node's http, which does not follow redirects anyway.
    const rest = Object.fromEntries(Object.entries(options).filter(([key]) => key !== 'redirect' && key !== 'session'));
    return request(rest, callback) as unknown as Electron.ClientRequest;
  }
}

/**
 * electron-updater's BaseUpdater with a Linux AppImage download (as AppImageUpdater downloads it, without
 * the differential step that needs a running AppImage) and an install that records the installer it was
 * given. Everything else — check, staging, semver, sha512, cache, quitAndInstall — is the library's.
 */
class RecordingUpdater extends BaseUpdater {
  readonly installed: Buffer[] = [];

  constructor(app: AppAdapter) {
    super(null, app);
    (this as unknown as { httpExecutor: LoopbackExecutor }).httpExecutor = new LoopbackExecutor();
  }

  protected doDownloadUpdate(options: DownloadUpdateOptions): Promise<DownloadExecutorResult> {
    const { provider, info } = options.updateInfoAndProvider;
    const fileInfo = findFile(provider.resolveFiles(info), 'AppImage');
    if (fileInfo == null) return Promise.reject(new Error('no AppImage in the channel file'));
    const executor = (this as unknown as { httpExecutor: LoopbackExecutor }).httpExecutor;
    const download = (this as unknown as { executeDownload: (task: unknown) => Promise<DownloadExecutorResult> }).executeDownload.bind(
      this,
    );
    return download({
      fileExtension: 'AppImage',
      fileInfo,
      downloadUpdateOptions: options,
      task: (destination: string, downloadOptions: Parameters<LoopbackExecutor['download']>[2]) =>
        executor.download(fileInfo.url, destination, downloadOptions),
    });
  }

  protected doInstall(options: InstallOptions): boolean {
    expect(options).toMatchObject({ isSilent: true, isForceRunAfter: true });
    const path = (this as unknown as { installerPath: string | null }).installerPath;
    if (path === null) throw new Error('install without a downloaded file');
    void readFile(path).then((bytes) => this.installed.push(bytes));
    // false: BaseUpdater does not quit the (test) process.
    return false;
  }
}

let feed: Feed;
let feedUrl: string;
let dir: string;
let lib: RecordingUpdater;
let logs: LogCapture;
let idle: boolean;
let updater: Updater | undefined;

beforeEach(async () => {
  // Only the updater's clock is fake: Node's sockets keep their own timers.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  vi.setSystemTime(new Date(2026, 10, 28, 12, 0, 0));
  feed = new Feed();
  feedUrl = await feed.start();
  dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-updater-feed-'));
  // As electron-builder writes it into a package (the updater reads its cache folder's name from it).
  await writeFile(join(dir, 'app-update.yml'), `provider: generic\nurl: ${feedUrl}\nupdaterCacheDirName: mdl-kiosk-updater\n`);
  const app: AppAdapter = {
    version: RUNNING,
    name: 'mdl-kiosk-test',
    isPackaged: true,
    appUpdateConfigPath: join(dir, 'app-update.yml'),
    userDataPath: join(dir, 'userData'),
    baseCachePath: join(dir, 'cache'),
    whenReady: () => Promise.resolve(),
    relaunch: () => undefined,
    quit: () => undefined,
    onQuit: () => undefined,
  };
  lib = new RecordingUpdater(app);
  logs = new LogCapture();
  idle = false;
});

afterEach(async () => {
  updater?.stop();
  updater = undefined;
  vi.useRealTimers();
  await feed.stop();
  await rm(dir, { recursive: true, force: true });
});

function start(): Updater {
  updater = startUpdater({
    updater: lib,
    config: parseConfig({ app: { updates: { enabled: true, url: feedUrl, channel: 'latest', checkEveryMinutes: 60 } } }).app.updates,
    isIdle: () => idle,
    log: createLogger({ level: 'debug' }, logs),
    random: () => 0,
  });
  return updater;
}

const immediate = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Lets real I/O run (the fake clock stands still) until `done`, or fails after a few real seconds. */
async function settle(what: string, done: () => boolean): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!done()) {
    if (performance.now() > deadline)
      throw new Error(`timed out waiting for ${what}; status ${JSON.stringify(updater?.status())}; log ${logs.events().join(',')}`);
    await immediate();
  }
}

/** electron-updater has a check or a download in flight (its own promises, set while one runs). */
function libraryBusy(): boolean {
  const inside = lib as unknown as { checkForUpdatesPromise: unknown; downloadPromise: unknown };
  return inside.checkForUpdatesPromise != null || inside.downloadPromise != null;
}

/** Whatever the last timer started (a check, a confirmation, a download) runs to its end over the real network. */
async function drain(): Promise<void> {
  for (let i = 0; i < 5; i++) await immediate();
  await settle('electron-updater to finish', () => !libraryBusy());
  for (let i = 0; i < 20; i++) await immediate();
}

/** The fake clock moves on by `ms`, in poll steps, the network answering after each. */
async function advance(ms: number): Promise<void> {
  for (let t = 0; t < ms; t += INSTALL_POLL_MS) {
    await vi.advanceTimersByTimeAsync(Math.min(INSTALL_POLL_MS, ms - t));
    await drain();
  }
}

/** The kiosk goes idle for a quiet minute and the next poll. */
async function waitIdleMinute(): Promise<void> {
  idle = true;
  await advance(QUIET_MS + INSTALL_POLL_MS);
}

/** The first check finds `version` and downloads it while the kiosk is busy. */
async function downloaded(version: string): Promise<Buffer> {
  const installer = feed.publish(version);
  start();
  await vi.advanceTimersByTimeAsync(FIRST_CHECK_MS);
  await drain();
  expect(updater?.status()).toMatchObject({ state: 'downloaded', version });
  return installer;
}

async function installedAfter(what: string): Promise<Buffer> {
  await settle(what, () => lib.installed.length > 0);
  expect(lib.installed).toHaveLength(1);
  return lib.installed[0] as Buffer;
}

describe('re-checking the channel before installing a download (issue 30)', () => {
  it('the feed unchanged: the download is installed, after asking the channel once more', async () => {
    const installer = await downloaded('1.4.1');
    const asked = feed.channelRequests();
    await waitIdleMinute();
    expect(await installedAfter('the install')).toEqual(installer);
    expect(feed.channelRequests()).toBe(asked + 1);
    // Not downloaded twice: the confirmation only asks.
    expect(feed.requests.filter((p) => p.endsWith('.AppImage'))).toHaveLength(1);
    expect(updater?.status()).toMatchObject({ state: 'installing', version: '1.4.1' });
  });

  it.each([
    ['put back to the running version', RUNNING],
    ['put back to an older version', '1.3.9'],
  ])('the release pulled between download and install (channel file %s): nothing is installed, the download dropped', async (_, back) => {
    await downloaded('1.4.1');
    feed.publish(back);
    await waitIdleMinute();
    await settle('the withdrawal', () => logs.events().includes('update_withdrawn'));
    expect(lib.installed).toEqual([]);
    expect(updater?.status()).toEqual({ state: 'idle', checkedAt: Date.now() });
    expect(logs.records.find((r) => r.event === 'update_withdrawn')).toMatchObject({ version: '1.4.1', level: 40 });
    // And it stays so: no install at later idle minutes, checks find nothing newer.
    await advance(3 * 60 * MINUTE);
    expect(lib.installed).toEqual([]);
    expect(feed.requests.filter((p) => p.endsWith('.AppImage'))).toHaveLength(1);
  });

  it("the rollout paused (stagingPercentage 0, the guide's --percent 0): nothing is installed", async () => {
    await downloaded('1.4.1');
    const channel = feed.channelFile()?.toString() ?? '';
    feed.files.set('latest-linux.yml', Buffer.from(`${channel}stagingPercentage: 0\n`));
    await waitIdleMinute();
    await settle('the withdrawal', () => logs.events().includes('update_withdrawn'));
    expect(lib.installed).toEqual([]);
  });

  it('the same version rebuilt (another sha512): the old download is dropped, the offered one downloaded and installed', async () => {
    await downloaded('1.4.1');
    const rebuilt = feed.publish('1.4.1');
    await waitIdleMinute();
    await settle(
      'the new download',
      () => updater?.status().state === 'downloaded' && feed.requests.filter((p) => p.endsWith('.AppImage')).length === 2,
    );
    expect(logs.records.find((r) => r.event === 'update_withdrawn')).toMatchObject({ version: '1.4.1', offered: '1.4.1' });
    expect(lib.installed).toEqual([]);
    await waitIdleMinute();
    expect(await installedAfter('the install of the rebuilt release')).toEqual(rebuilt);
  });

  it('a newer release published meanwhile: that one is downloaded and installed, not the older download', async () => {
    await downloaded('1.4.1');
    const newer = feed.publish('1.4.2');
    await waitIdleMinute();
    await settle('the newer download', () => updater?.status().version === '1.4.2' && updater.status().state === 'downloaded');
    await waitIdleMinute();
    expect(await installedAfter('the install of 1.4.2')).toEqual(newer);
  });

  it('the feed unreachable at install time: nothing is installed until it confirms; asked again after the check interval, not at every poll', async () => {
    const installer = await downloaded('1.4.1');
    feed.down = true;
    await waitIdleMinute();
    await settle('the unconfirmed install', () => logs.events().includes('update_unconfirmed'));
    expect(lib.installed).toEqual([]);
    const status = updater?.status() as UpdateStatus;
    expect(status).toMatchObject({ state: 'downloaded', version: '1.4.1' });
    expect(status.error).toMatch(
      /^not installed: the update feed could not confirm it still offers this version \(.+\); asked again later$/,
    );
    expect(logs.records.find((r) => r.event === 'update_unconfirmed')).toMatchObject({ version: '1.4.1', level: 40 });
    // Idle polls meanwhile do not ask (random() = 0: again after 90 % of the hour).
    const asked = feed.requests.length;
    await advance(0.9 * 60 * MINUTE - 2 * INSTALL_POLL_MS);
    expect(feed.requests.length).toBe(asked);
    feed.down = false;
    await advance(2 * INSTALL_POLL_MS);
    expect(await installedAfter('the install once confirmed')).toEqual(installer);
    expect(updater?.status()).not.toHaveProperty('error');
  });
});
