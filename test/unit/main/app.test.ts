/**
 * Boot test of the whole shell on the fake `electron`: the real KioskService (on a fake device set, no
 * backend), real log files, health record and secret store in a temporary data folder. Proves the order
 * (single-instance lock first), the locked-down window, the IPC registration, second-instance, and a
 * quit that stops the service; plus the QA flavour's embedded default and the production updater.
 */
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { extract } from 'tar';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { allInvokeChannels, intentChannel, STATE_REQUEST_CHANNEL } from '../../../src/common/ipc-contract.js';
import { QrScanQueue } from '../../../src/devices/qr/qr-scan-queue.js';
import { parseConfig, type KioskConfig } from '../../../src/platform/config.js';
import {
  EXIT_REFUSED_SWITCH,
  runKioskApp,
  type KioskAppDependencies,
  type RunKioskAppOptions,
  type RunningKioskApp,
} from '../../../src/main/app.js';
import { DANGEROUS_SWITCHES } from '../../../src/main/dangerous-switches.js';
import { RECORDED_DIGEST_FILE } from '../../../src/main/installed-asar.js';
import { EXIT_MODIFIED_APP } from '../../../src/main/one-shot-launches.js';
import type { EmbeddedDefault, EmbeddedKioskLink } from '../../../src/main/embedded-default.js';
import { PHONE_PAGE_PARTITION } from '../../../src/main/phone-window.js';
import type { DeviceFactory } from '../../../src/service/kiosk-service.js';
import { TEST_SCRYPT } from '../service/service-fixture.js';
import {
  BrowserWindow,
  app,
  calls,
  dialog,
  ipcMain,
  powerSaveBlocker,
  protocol,
  resetFakeElectron,
  systemPreferences,
} from './fake-electron.js';

vi.mock('electron', () => import('./fake-electron.js'));

class TextCapture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString('utf8');
    callback();
  }
}

let root: string;
let userData: string;
let logsDir: string;
let stdout: TextCapture;
let stderr: TextCapture;
let proc: EventEmitter;
let deviceBuilds: number;
let devicesClosed: number;
let running: RunningKioskApp | null;

const devices: DeviceFactory = () => {
  deviceBuilds++;
  const qr = new QrScanQueue({ freshMs: 10_000 });
  return Promise.resolve({
    ports: { qr },
    qr,
    close: () => {
      devicesClosed++;
      return Promise.resolve();
    },
  });
};

async function boot(options: Partial<RunKioskAppOptions> & { deps?: Partial<KioskAppDependencies> } = {}): Promise<RunningKioskApp | null> {
  const starting = runKioskApp({
    flavour: options.flavour ?? 'production',
    argv: options.argv ?? ['/opt/electron', 'dist/app-dev'],
    ...(options.embedded ? { embedded: options.embedded } : {}),
    dependencies: {
      devices,
      env: {},
      platform: 'linux',
      defaultApp: true,
      process: proc as never,
      stdout,
      stderr,
      preloadPath: join(root, 'app', 'preload.cjs'),
      rendererDir: join(root, 'renderer'),
      managedConfigFile: join(root, 'managed', 'config.json'),
      serviceOptions: { pinScrypt: TEST_SCRYPT, sessionRefreshMs: 60_000 },
      loadUpdater: () => Promise.reject(new Error('updates are not loaded in this test')),
      ...options.deps,
    },
  });
  // Electron's ready comes later: whatever must happen before it has happened by now.
  await Promise.resolve();
  app.becomeReady();
  running = await starting;
  return running;
}

async function quit(): Promise<void> {
  app.quit();
  await vi.waitFor(() => expect(app.exitCode).toBe(0), { timeout: 5_000 });
}

async function logText(): Promise<string> {
  const names = await readdir(logsDir).catch(() => [] as string[]);
  const texts = await Promise.all(names.map((n) => readFile(join(logsDir, n), 'utf8')));
  return texts.join('');
}

beforeEach(async () => {
  resetFakeElectron();
  root = await mkdtemp(join(tmpdir(), 'mdl-kiosk-app-'));
  userData = join(root, 'userData');
  logsDir = join(root, 'logs');
  app.paths.set('userData', userData);
  app.paths.set('logs', logsDir);
  await mkdir(join(root, 'renderer'), { recursive: true });
  await writeFile(join(root, 'renderer', 'index.html'), '<!doctype html><title>kiosk</title>');
  stdout = new TextCapture();
  stderr = new TextCapture();
  proc = new EventEmitter();
  deviceBuilds = 0;
  devicesClosed = 0;
  running = null;
});

afterEach(async () => {
  if (running && app.exitCode === undefined) await quit();
  running?.lifecycle.dispose();
  await rm(root, { recursive: true, force: true });
});

describe('production boot', () => {
  it('requests the single-instance lock before anything else, and the scheme before ready', async () => {
    await boot();
    expect(calls[0]).toBe('app.requestSingleInstanceLock');
    const at = (entry: string): number => calls.findIndex((c) => c.startsWith(entry));
    expect(at('protocol.registerSchemesAsPrivileged')).toBe(1);
    for (const later of ['powerSaveBlocker.start', 'protocol.handle app', 'new BrowserWindow', 'ipcMain.handle', 'webContents.loadURL']) {
      expect(at(later), later).toBeGreaterThan(at('protocol.registerSchemesAsPrivileged'));
    }
    expect(at('ipcMain.handle')).toBeGreaterThan(at('new BrowserWindow'));
    expect(at('webContents.loadURL app://kiosk/index.html')).toBeGreaterThan(at('ipcMain.handle'));
  });

  it('opens one locked-down kiosk window on app://kiosk with the bundled preload', async () => {
    const r = await boot();
    expect(BrowserWindow.instances).toHaveLength(1);
    const options = BrowserWindow.instances[0]?.options;
    expect(options).toMatchObject({ kiosk: true, fullscreen: true, show: false });
    expect(options?.webPreferences).toMatchObject({
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      webviewTag: false,
      devTools: false,
      preload: join(root, 'app', 'preload.cjs'),
    });
    expect(r?.window.webContents.getURL()).toBe('app://kiosk/index.html');
    expect(BrowserWindow.instances[0]?.contentProtection).toBe(true);
    expect(await (await protocol.handlers.get('app')?.(new Request('app://kiosk/index.html')))?.text()).toContain('kiosk');
  });

  it('registers exactly the IPC contract, answering the kiosk screen', async () => {
    const r = await boot();
    expect([...ipcMain.handlers.keys()].sort()).toEqual(allInvokeChannels().sort());
    const contents = r?.window.webContents as unknown as Parameters<typeof ipcMain.invoke>[1];
    const reply = (await ipcMain.invoke(STATE_REQUEST_CHANNEL, contents, contents.mainFrame)) as {
      ok: boolean;
      result: { testMode: boolean; view: { phase: string } };
    };
    expect(reply.ok).toBe(true);
    // No backend configured: the production kiosk asks staff to configure it, and is not in test mode.
    expect(reply.result.view.phase).toBe('config_error');
    expect(reply.result.testMode).toBe(false);
    expect(await ipcMain.invoke(intentChannel('next'), contents, contents.mainFrame, {})).toEqual({ ok: true, result: { ok: true } });
  });

  it('keeps the display awake and the service running on the configured devices', async () => {
    const r = await boot();
    expect([...powerSaveBlocker.active.values()]).toEqual(['prevent-display-sleep']);
    expect(deviceBuilds).toBe(1);
    expect(r?.service.state().view.phase).toBe('config_error');
  });

  it('second-instance brings the window to the front', async () => {
    const r = await boot();
    const w = r?.window as unknown as BrowserWindow;
    w.minimize();
    app.emit('second-instance', {}, [], '/', {});
    expect(w.isMinimized()).toBe(false);
    expect(w.isVisible()).toBe(true);
    expect(w.focused).toBe(true);
  });

  it('quit stops the service, the devices, the IPC and the power blocker, writes the health record, closes the logs', async () => {
    const r = await boot();
    await quit();
    expect(r?.service.state().view.phase).toBe('stopped');
    expect(devicesClosed).toBe(1);
    expect(ipcMain.handlers.size).toBe(0);
    expect(powerSaveBlocker.active.size).toBe(0);
    expect(r?.window.isDestroyed()).toBe(true);
    const health = JSON.parse(await readFile(join(userData, 'health.json'), 'utf8')) as { flavour: string };
    expect(health.flavour).toBe('production');
    const log = await logText();
    expect(log).toContain('"event":"app_started"');
    expect(log).toContain('"event":"app_stopped"');
  });

  it('the kiosk window refuses to close until the app quits', async () => {
    const r = await boot();
    expect((r?.window as unknown as BrowserWindow).close()).toBe(false);
    expect(app.quitRequests).toBe(0);
  });
});

describe('a second launch', () => {
  it('exits at once: no scheme, no window, no service', async () => {
    app.lockResult = false;
    const r = await boot();
    expect(r).toBeNull();
    expect(app.exitCode).toBe(0);
    expect(calls).toEqual(['app.requestSingleInstanceLock', 'app.exit 0']);
    expect(deviceBuilds).toBe(0);
  });
});

describe('command line', () => {
  it('--data-dir moves the data folder only after the single-instance lock is taken (one kiosk per account, whatever its folder)', async () => {
    const dataDir = join(root, 'elsewhere');
    await boot({ argv: ['/opt/electron', 'dist/app-dev', '--data-dir', dataDir] });
    expect(calls.slice(0, 2)).toEqual(['app.requestSingleInstanceLock', 'app.setPath userData']);
    expect(app.lockDirs).toEqual([userData]);
    expect(app.getPath('userData')).toBe(dataDir);
    await quit();
    expect(JSON.parse(await readFile(join(dataDir, 'health.json'), 'utf8'))).toMatchObject({ flavour: 'production' });
  });

  it('unknown options are reported on stderr and in the log, and the app runs', async () => {
    const r = await boot({ argv: ['/opt/electron', 'dist/app-dev', '--bogus', '--log-level', 'debug'] });
    expect(r).not.toBeNull();
    expect(stderr.text).toContain('mdl-kiosk: --bogus is not an mDL Kiosk option (left to Electron/Chromium)');
    await quit();
    expect(await logText()).toContain('--bogus is not an mDL Kiosk option');
  });

  it('--no-kiosk is refused by an installed production app', async () => {
    app.isPackaged = true;
    await boot({ argv: ['/opt/mdl-kiosk', '--no-kiosk'], deps: { defaultApp: false } });
    expect(BrowserWindow.instances[0]?.options.kiosk).toBe(true);
    expect(stderr.text).toContain('--no-kiosk is only honoured in the QA flavour or an unpackaged run');
  });

  it('--no-kiosk gives a normal window in development', async () => {
    await boot({ argv: ['/opt/electron', 'dist/app-dev', '--no-kiosk'] });
    expect(BrowserWindow.instances[0]?.options).toMatchObject({ kiosk: false, fullscreen: false });
  });

  it('--help prints the usage and exits', async () => {
    const r = await boot({ argv: ['/opt/electron', 'dist/app-dev', '--help'] });
    expect(r).toBeNull();
    expect(stdout.text).toContain('--data-dir DIR');
    expect(app.exitCode).toBe(0);
    expect(app.lockRequested).toBe(false);
  });
});

describe('managed configuration and updates', () => {
  it('a managed file sets policy: no kiosk mode here, updates on (electron-updater on the generic feed)', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    await writeFile(
      join(root, 'managed', 'config.json'),
      JSON.stringify({ app: { updates: { enabled: true, url: 'https://updates.example/kiosk/', channel: 'pilot' } } }),
    );
    const feed: unknown[] = [];
    const fakeUpdater = Object.assign(new EventEmitter(), {
      channel: null as string | null,
      autoDownload: false,
      allowDowngrade: true,
      autoInstallOnAppQuit: true,
      logger: null,
      setFeedURL: (options: unknown) => feed.push(options),
      checkForUpdates: () => Promise.resolve(null),
      quitAndInstall: () => undefined,
    });
    const loadUpdater = vi.fn(() => Promise.resolve(fakeUpdater as never));
    await boot({ deps: { loadUpdater } });
    expect(loadUpdater).toHaveBeenCalledTimes(1);
    expect(feed).toEqual([{ provider: 'generic', url: 'https://updates.example/kiosk/', channel: 'pilot' }]);
    expect(fakeUpdater.allowDowngrade).toBe(false);
  });

  it('Windows: an install folder this account cannot write (per-machine, standard account) turns updates off with the reason, and the updater is never loaded', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    await writeFile(
      join(root, 'managed', 'config.json'),
      JSON.stringify({ app: { updates: { enabled: true, url: 'https://updates.example/kiosk/' } } }),
    );
    const loadUpdater = vi.fn(() => Promise.reject(new Error('must not load')));
    app.paths.set('exe', join(root, 'Program Files', 'mDL Kiosk', 'mDL Kiosk.exe')); // a folder that is not there: cannot be written
    const r = await boot({ deps: { platform: 'win32', loadUpdater } });
    expect(loadUpdater).not.toHaveBeenCalled();
    expect(r?.service.appStatus().updates).toEqual({
      state: 'disabled',
      error: expect.stringContaining('updates are off: this account cannot write') as string,
    });
    await quit();
    expect(await logText()).toContain('"event":"updates_unsupported"');
  });

  it('Windows: a per-user install (a folder this account writes) keeps updates on', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    await writeFile(
      join(root, 'managed', 'config.json'),
      JSON.stringify({ app: { updates: { enabled: true, url: 'https://updates.example/kiosk/' } } }),
    );
    await mkdir(join(root, 'LocalAppData', 'Programs', 'mdl-kiosk'), { recursive: true });
    app.paths.set('exe', join(root, 'LocalAppData', 'Programs', 'mdl-kiosk', 'mDL Kiosk.exe'));
    const loadUpdater = vi.fn(() => Promise.reject(new Error('no updater in this test')));
    await boot({ deps: { platform: 'win32', loadUpdater } });
    expect(loadUpdater).toHaveBeenCalledTimes(1);
    expect(
      (await readdir(join(root, 'LocalAppData', 'Programs', 'mdl-kiosk'))).filter((n) => n.startsWith('.mdl-kiosk-write-check')),
    ).toEqual([]);
  });

  it('an updater that cannot load is a status for staff, not a crash', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    await writeFile(
      join(root, 'managed', 'config.json'),
      JSON.stringify({ app: { updates: { enabled: true, url: 'https://updates.example/kiosk/' } } }),
    );
    const r = await boot({ deps: { loadUpdater: () => Promise.reject(new Error('no electron-updater here')) } });
    expect(r?.service.appStatus().updates).toEqual({ state: 'error', error: 'the updater could not start: no electron-updater here' });
    expect(r?.service.appStatus().managedKeys).toEqual(expect.arrayContaining(['app.updates.enabled', 'app.updates.url']));
  });

  it('diagnostics show the app: flavour, log folder, health file, updates', async () => {
    const r = await boot();
    expect(r?.service.appStatus()).toMatchObject({
      flavour: 'production',
      secretsProtection: 'os-encrypted',
      logDir: logsDir,
      healthFile: join(userData, 'health.json'),
      updates: { state: 'disabled' },
    });
  });

  it('app.health.metricsFile: the health figures as Prometheus text for node_exporter, beside health.json', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    const metricsFile = join(root, 'textfile', 'mdl_kiosk.prom');
    await writeFile(join(root, 'managed', 'config.json'), JSON.stringify({ app: { health: { metricsFile } } }));
    await boot();
    await quit();
    const text = await readFile(metricsFile, 'utf8');
    expect(text).toContain('# TYPE mdl_kiosk_verifications_total counter');
    expect(text).toMatch(/^mdl_kiosk_info\{version="0\.1\.0-test",flavour="production"\} 1$/m);
  });

  it('a world-readable managed file (the staff PIN hash open to every account) is named to staff, in the log and on stderr; 0640 is not', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    const managedFile = join(root, 'managed', 'config.json');
    await writeFile(managedFile, JSON.stringify({ app: { health: { everySeconds: 30 } } }));
    await chmod(managedFile, 0o644);
    const r = await boot();
    expect(r?.service.appStatus().permissionProblems).toEqual([
      expect.stringContaining(`${managedFile} is readable by every user of this computer (mode 0644)`),
    ]);
    expect(stderr.text).toContain('is readable by every user of this computer (mode 0644)');
    await quit();
    expect(await logText()).toContain('"event":"managed_config_exposed"');
  });

  it('a managed file installed 0640 draws no warning', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    const managedFile = join(root, 'managed', 'config.json');
    await writeFile(managedFile, JSON.stringify({ app: { health: { everySeconds: 30 } } }));
    await chmod(managedFile, 0o640);
    const r = await boot();
    expect(r?.service.appStatus().permissionProblems).toBeUndefined();
    await quit();
    expect(await logText()).not.toContain('managed_config_exposed');
  });

  it('app.hardwareAcceleration: false from the managed file turns the GPU off before Electron is ready (a black window otherwise)', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    await writeFile(join(root, 'managed', 'config.json'), JSON.stringify({ app: { hardwareAcceleration: false } }));
    const r = await boot();
    expect(app.hardwareAccelerationDisabled).toBe(true);
    expect(r?.service.config.app.hardwareAcceleration).toBe(false);
    await quit();
    running?.lifecycle.dispose();
    running = null;
    resetFakeElectron();
    app.paths.set('userData', userData);
    app.paths.set('logs', logsDir);
    await rm(join(root, 'managed', 'config.json'));
    await boot();
    expect(app.hardwareAccelerationDisabled).toBe(false);
  });

  it('updates off (the default): electron-updater is never loaded', async () => {
    const loadUpdater = vi.fn(() => Promise.reject(new Error('must not load')));
    await boot({ deps: { loadUpdater } });
    expect(loadUpdater).not.toHaveBeenCalled();
  });
});

describe('QA flavour', () => {
  function fakeEmbedded(): EmbeddedDefault & { link?: EmbeddedKioskLink; stopped: number } {
    const embedded: EmbeddedDefault & { link?: EmbeddedKioskLink; stopped: number } = {
      stopped: 0,
      start(_log, link) {
        embedded.link = link;
        return Promise.resolve({
          devices,
          backendOverride: { baseUrl: 'http://127.0.0.1:9', apiKey: 'embedded-api-key' },
          phonePageUrl: 'http://127.0.0.1:45678/#token=phone-token',
          staffPin: '731946',
          stop: () => {
            embedded.stopped++;
            return Promise.resolve();
          },
        });
      },
    };
    return embedded;
  }

  it('with nothing configured: the embedded default, TEST MODE, the phone page in its own window, the PIN on stdout only', async () => {
    const embedded = fakeEmbedded();
    const r = await boot({ flavour: 'qa', embedded });
    expect(r?.service.state().testMode).toBe(true);
    expect(r?.service.state().staff.pinConfigured).toBe(true);
    expect(stdout.text).toContain('http://127.0.0.1:45678/#token=phone-token');
    expect(stdout.text).toContain('731946');
    expect(BrowserWindow.instances).toHaveLength(2);
    const [kiosk, phone] = BrowserWindow.instances;
    // The kiosk window must not cover the phone's.
    expect(kiosk?.options.kiosk).toBe(false);
    expect(phone?.options.webPreferences).toMatchObject({
      partition: PHONE_PAGE_PARTITION,
      sandbox: true,
      contextIsolation: true,
      nodeIntegration: false,
    });
    expect(phone?.options.webPreferences).not.toHaveProperty('preload');
    expect(phone?.webContents.loaded).toEqual(['http://127.0.0.1:45678/#token=phone-token']);
    // Confined to its loopback origin by the same lockdown.
    expect(phone?.webContents.navigateEvent('will-navigate', 'https://evil.example/').defaultPrevented).toBe(true);
    expect(phone?.webContents.navigateEvent('will-navigate', 'http://127.0.0.1:45678/other').defaultPrevented).toBe(false);
    expect(phone?.webContents.windowOpenHandler?.({ url: 'https://evil.example/' } as never)).toEqual({ action: 'deny' });
    // The phone page's "Scan it" goes through the kiosk's own intent.
    expect(await embedded.link?.scan('not an mdoc')).toEqual({ accepted: false, reason: 'not_mdoc' });
    expect(embedded.link?.phase()).toBe(r?.service.state().view.phase);
    await quit();
    expect(embedded.stopped).toBe(1);
    const log = await logText();
    expect(log).not.toContain('731946');
    expect(log).not.toContain('phone-token');
    expect(log).not.toContain('embedded-api-key');
  });

  it('an embedded default that fails to start: a clear error, and the kiosk still starts', async () => {
    const broken: EmbeddedDefault = { start: () => Promise.reject(new Error('port 9 in use')) };
    const r = await boot({ flavour: 'qa', embedded: broken });
    expect(r?.service.state().view.phase).toBe('config_error');
    expect(stderr.text).toContain('the embedded mock backend and virtual counter could not start: port 9 in use');
  });

  it('with a backend configured: no embedded default, the configured devices, still TEST MODE', async () => {
    const embedded = fakeEmbedded();
    const r = await boot({ flavour: 'qa', embedded, deps: { env: { MDL_KIOSK_BACKEND_URL: 'https://verifier.example/' } } });
    expect(embedded.link).toBeUndefined();
    expect(BrowserWindow.instances).toHaveLength(1);
    expect(r?.service.state().testMode).toBe(true);
    expect(deviceBuilds).toBe(1);
  });
});

describe("a packaged production app is locked down whatever its launcher or the kiosk user's files say", () => {
  const PACKAGED = { argv: ['/opt/mdl-kiosk'], deps: { defaultApp: false } } as const;

  function at(value: unknown, path: string): unknown {
    let node = value;
    for (const key of path.split('.'))
      node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[key] : undefined;
    return node;
  }

  /** Each managed-only key, as the kiosk user's config.json would set it, and what would show it honoured. */
  const ATTEMPTS: readonly (readonly [string, Record<string, unknown>])[] = [
    ['app.kioskMode', { app: { kioskMode: false } }],
    ['app.devTools', { app: { devTools: true } }],
    ['app.allowBasicTextSecrets', { app: { allowBasicTextSecrets: true } }],
    ['app.updates', { app: { updates: { enabled: true, url: 'https://updates.attacker.example/feed/', channel: 'evil' } } }],
    ['backend.allowInsecure', { backend: { allowInsecure: true } }],
    ['backend.tls.caFile', { backend: { tls: { caFile: '/tmp/attacker-ca.pem' } } }],
    ['privacy.backendErrorText', { privacy: { backendErrorText: true } }],
    ['staff.pinHash', { staff: { pinHash: 'scrypt$1024$8$1$c2FsdHNhbHRzYWx0c2FsdA==$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g=' } }],
    ['staff.maxAttempts', { staff: { maxAttempts: 20 } }],
    ['staff.lockoutMs', { staff: { lockoutMs: 1_000 } }],
    ['staff.unlockMs', { staff: { unlockMs: 86_400_000 } }],
  ];

  it.each(ATTEMPTS)('%s from <userData>/config.json is ignored, logged, and honoured from the managed file', async (path, layer) => {
    await mkdir(userData, { recursive: true });
    await writeFile(join(userData, 'config.json'), JSON.stringify(layer));
    const loadUpdater = vi.fn(() => Promise.reject(new Error('the updater must not load from a user file')));
    app.isPackaged = true;
    const r = await boot({ ...PACKAGED, deps: { ...PACKAGED.deps, loadUpdater } });
    const defaults = r?.service.config;
    expect(at(defaults, path), `${path} is still the default`).toEqual(at(defaultsOf(), path));
    expect(BrowserWindow.instances[0]?.options.kiosk).toBe(true);
    expect(BrowserWindow.instances[0]?.options.webPreferences?.devTools).toBe(false);
    expect(loadUpdater).not.toHaveBeenCalled();
    expect(r?.service.state().staff.pinConfigured).toBe(false);
    await quit();
    const log = await logText();
    expect(log).toContain('"event":"config_key_ignored"');
    expect(log).toContain(`${path} from the config file is ignored`);
    running?.lifecycle.dispose();
    running = null;

    // The same value from the managed file is the fleet's policy, and honoured.
    resetFakeElectron();
    app.paths.set('userData', userData);
    app.paths.set('logs', logsDir);
    await rm(join(userData, 'config.json'));
    await mkdir(join(root, 'managed'), { recursive: true });
    await writeFile(join(root, 'managed', 'config.json'), JSON.stringify(layer));
    app.isPackaged = true;
    const managed = await boot({
      ...PACKAGED,
      deps: { ...PACKAGED.deps, loadUpdater: () => Promise.reject(new Error('no updater in this test')) },
    });
    expect(at(managed?.service.config, path)).toEqual(at(parseConfig(layer), path));
  });

  it("the QA flavour and unpackaged runs honour the same keys from the user's config.json", async () => {
    await mkdir(userData, { recursive: true });
    await writeFile(join(userData, 'config.json'), JSON.stringify({ app: { kioskMode: false }, staff: { maxAttempts: 9 } }));
    const r = await boot();
    expect(r?.service.config.staff.maxAttempts).toBe(9);
    expect(BrowserWindow.instances[0]?.options.kiosk).toBe(false);
  });

  it('developer tools never open in a packaged production app, even when the managed file asks for them', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    await writeFile(join(root, 'managed', 'config.json'), JSON.stringify({ app: { devTools: true } }));
    app.isPackaged = true;
    const r = await boot(PACKAGED);
    expect(r?.service.config.app.devTools).toBe(true);
    const window = BrowserWindow.instances[0];
    expect(window?.options.webPreferences?.devTools).toBe(false);
    // The inspector shortcuts stay blocked too.
    expect(window?.webContents.keyEvent({ type: 'keyDown', key: 'I', control: true, shift: true }).defaultPrevented).toBe(true);
    expect(window?.webContents.keyEvent({ type: 'keyDown', key: 'F12' }).defaultPrevented).toBe(true);
  });

  it('the QA flavour is never auto-updated, even when the managed file turns updates on', async () => {
    await mkdir(join(root, 'managed'), { recursive: true });
    await writeFile(
      join(root, 'managed', 'config.json'),
      JSON.stringify({ app: { updates: { enabled: true, url: 'https://updates.example/kiosk/' } } }),
    );
    const loadUpdater = vi.fn(() => Promise.reject(new Error('must not load')));
    app.isPackaged = true;
    const r = await boot({
      flavour: 'qa',
      ...PACKAGED,
      deps: { ...PACKAGED.deps, env: { MDL_KIOSK_BACKEND_URL: 'https://verifier.example/' }, loadUpdater },
    });
    expect(r?.service.config.app.updates.enabled).toBe(true);
    expect(loadUpdater).not.toHaveBeenCalled();
    expect(r?.service.appStatus().updates).toEqual({ state: 'disabled' });
  });

  describe('dangerous command-line switches stop a packaged production app before anything starts', () => {
    it.each(DANGEROUS_SWITCHES)('--%s', async (name) => {
      app.isPackaged = true;
      const r = await boot({ argv: ['/opt/mdl-kiosk', `--${name}=1`], deps: { defaultApp: false } });
      expect(r).toBeNull();
      expect(app.exitCode).toBe(EXIT_REFUSED_SWITCH);
      expect(app.lockRequested).toBe(false);
      expect(BrowserWindow.instances).toHaveLength(0);
      expect(stderr.text).toContain(`mdl-kiosk: refusing to start: --${name} is not allowed in a production kiosk`);
    });

    it('in any spelling Chromium reads (-name, =value), and when Chromium got it some other way', async () => {
      for (const argv of [['-remote-debugging-port', '9222'], ['--inspect-brk=9229'], ['--no-kiosk', '--disable-web-security']]) {
        resetFakeElectron();
        app.isPackaged = true;
        stderr.text = '';
        expect(await boot({ argv: ['/opt/mdl-kiosk', ...argv], deps: { defaultApp: false } })).toBeNull();
        expect(app.exitCode).toBe(EXIT_REFUSED_SWITCH);
      }
      resetFakeElectron();
      app.isPackaged = true;
      app.commandLine.switches.add('remote-debugging-pipe');
      expect(await boot(PACKAGED)).toBeNull();
      expect(stderr.text).toContain('--remote-debugging-pipe');
    });

    it('the QA flavour and an unpackaged run keep them (debugging)', async () => {
      expect(await boot({ argv: ['/opt/electron', 'dist/app-dev', '--remote-debugging-port=9222'] })).not.toBeNull();
      await quit();
      running?.lifecycle.dispose();
      resetFakeElectron();
      app.paths.set('userData', userData);
      app.paths.set('logs', logsDir);
      app.isPackaged = true;
      expect(
        await boot({
          flavour: 'qa',
          argv: ['/opt/mdl-kiosk-qa', '--remote-debugging-port=9222'],
          deps: { defaultApp: false, env: { MDL_KIOSK_BACKEND_URL: 'https://verifier.example/' } },
        }),
      ).not.toBeNull();
    });
  });
});

describe('a packaged production app on Linux compares its app.asar with the digest recorded at build time', () => {
  const ARCHIVE = Buffer.from('an app.asar as the build packed it');
  const digest = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

  /** `<root>/resources/app.asar` with `bytes`, and `app.asar.sha256` beside it saying `recorded` (none: no file). */
  async function installed(bytes: Buffer, recorded: string | undefined): Promise<string> {
    const resources = join(root, 'resources');
    await mkdir(resources, { recursive: true });
    await writeFile(join(resources, 'app.asar'), bytes);
    if (recorded !== undefined) await writeFile(join(resources, RECORDED_DIGEST_FILE), `${recorded}\n`);
    return resources;
  }

  it('a flipped byte: refuses to start with the reason on stderr and in a dialog, exit 78, nothing opened', async () => {
    const flipped = Buffer.from(ARCHIVE);
    flipped[5] = (flipped[5] ?? 0) ^ 0x01;
    const resourcesPath = await installed(flipped, digest(ARCHIVE));
    app.isPackaged = true;
    const r = await boot({ argv: ['/opt/mdl-kiosk'], deps: { defaultApp: false, resourcesPath } });
    expect(r).toBeNull();
    expect(app.exitCode).toBe(EXIT_MODIFIED_APP);
    expect(app.lockRequested).toBe(false);
    expect(BrowserWindow.instances).toHaveLength(0);
    expect(deviceBuilds).toBe(0);
    expect(stderr.text).toContain(`mdl-kiosk: refusing to start: The kiosk app's files have changed since it was built`);
    expect(stderr.text).toContain(`(SHA-256 ${digest(flipped)}; recorded at build time: ${digest(ARCHIVE)})`);
    expect(dialog.errors).toEqual([
      { title: 'This kiosk is out of service', content: expect.stringContaining('Reinstall the package') as string },
    ]);
  });

  it('no recorded digest: refuses too (a package built without it, or the file removed)', async () => {
    const resourcesPath = await installed(ARCHIVE, undefined);
    app.isPackaged = true;
    expect(await boot({ argv: ['/opt/mdl-kiosk'], deps: { defaultApp: false, resourcesPath } })).toBeNull();
    expect(stderr.text).toContain(`${RECORDED_DIGEST_FILE}, the digest recorded at build time, is missing or unreadable`);
  });

  it('the recorded digest: starts, and the metrics file and support bundle name the digest', async () => {
    const resourcesPath = await installed(ARCHIVE, digest(ARCHIVE));
    const metricsFile = join(root, 'textfile', 'mdl_kiosk.prom');
    await mkdir(join(root, 'managed'), { recursive: true });
    await writeFile(join(root, 'managed', 'config.json'), JSON.stringify({ app: { health: { metricsFile } } }));
    app.isPackaged = true;
    const r = await boot({ argv: ['/opt/mdl-kiosk'], deps: { defaultApp: false, resourcesPath } });
    expect(r).not.toBeNull();
    expect(dialog.errors).toEqual([]);
    await vi.waitFor(
      async () => expect(await readFile(metricsFile, 'utf8')).toContain(`mdl_kiosk_build_info{asar_sha256="${digest(ARCHIVE)}"} 1`),
      {
        timeout: 10_000,
      },
    );
    const bundle = await r?.service.writeSupportBundleTo(join(root, 'bundle.tar.gz'));
    await extract({ file: bundle?.path ?? '', cwd: root });
    expect(JSON.parse(await readFile(join(root, 'mdl-kiosk-support', 'environment.json'), 'utf8'))).toMatchObject({
      installedAppAsar: { sha256: digest(ARCHIVE) },
    });
  });

  it('other platforms (the ASAR integrity fuse checks there), the QA flavour and an unpackaged run do not compare', async () => {
    const resourcesPath = await installed(Buffer.from('changed'), digest(ARCHIVE));
    app.isPackaged = true;
    expect(await boot({ argv: ['/opt/mdl-kiosk'], deps: { defaultApp: false, resourcesPath, platform: 'win32' } })).not.toBeNull();
    expect(dialog.errors).toEqual([]);
  });
});

function defaultsOf(): KioskConfig {
  return parseConfig({});
}

describe('--support-bundle', () => {
  async function unpack(file: string): Promise<Map<string, string>> {
    const dir = join(root, `unpacked-${Math.random().toString(36).slice(2)}`);
    await mkdir(dir);
    await extract({ file, cwd: dir });
    const out = new Map<string, string>();
    for (const entry of await readdir(join(dir, 'mdl-kiosk-support'), { recursive: true, withFileTypes: true })) {
      if (entry.isFile())
        out.set(
          join(entry.parentPath, entry.name).slice(join(dir, 'mdl-kiosk-support').length + 1),
          await readFile(join(entry.parentPath, entry.name), 'utf8'),
        );
    }
    return out;
  }

  it('a later launch with --support-bundle has the running kiosk write it: live state, its logs and records', async () => {
    const r = await boot();
    expect(r).not.toBeNull();
    // The health record's first write is asynchronous: the bundle takes what is on disk.
    await vi.waitFor(async () => expect((await readdir(userData)).includes('health.json')).toBe(true), { timeout: 10_000 });
    app.emit('second-instance', {}, ['/opt/electron', 'dist/app-dev', '--support-bundle', 'bundle.tar.gz'], root);
    const target = join(root, 'bundle.tar.gz');
    await vi.waitFor(async () => expect((await readdir(root)).includes('bundle.tar.gz')).toBe(true), { timeout: 10_000 });
    const files = await unpack(target);
    expect([...files.keys()]).toEqual(
      expect.arrayContaining(['config.json', 'state.json', 'self-test.json', 'diagnostics.json', 'versions.json', 'health.json']),
    );
    expect([...files.keys()].some((n) => /^logs\/mdl-kiosk\..*\.log$/.test(n))).toBe(true);
    expect(JSON.parse(files.get('versions.json') ?? '{}')).toMatchObject({ app: '0.1.0-test', flavour: 'production' });
    // The running kiosk's own state (not a fresh copy's).
    expect(JSON.parse(files.get('state.json') ?? '{}')).toMatchObject({ phase: r?.service.state().view.phase });
    expect(files.get('summary.txt')).toMatch(/^Made by: running kiosk$/m);
  });

  it('with no kiosk running, the launch writes it from the records on disk, opens no device and no window, and exits 0', async () => {
    const target = join(root, 'out', 'offline.tar.gz');
    const r = await boot({ argv: ['/opt/electron', 'dist/app-dev', '--support-bundle', target] });
    expect(r).toBeNull();
    expect(app.exitCode).toBe(0);
    expect(deviceBuilds).toBe(0);
    expect(BrowserWindow.instances).toHaveLength(0);
    expect(stdout.text).toContain(`no kiosk is running; support bundle written from the records on disk to ${target}`);
    const files = await unpack(target);
    expect(JSON.parse(files.get('state.json') ?? '{}')).toMatchObject({ phase: 'stopped' });
    // Its phase is its own: the bundle says it does not describe a running kiosk.
    expect(JSON.parse(files.get('environment.json') ?? '{}')).toMatchObject({
      madeBy: 'separate process',
      note: expect.stringContaining('NOT those of a running kiosk') as string,
    });
    expect(files.get('summary.txt')).toMatch(/^Made by: separate process \(/m);
  });

  it('with a kiosk running elsewhere, the launch waits for the file that kiosk writes', async () => {
    app.lockResult = false;
    const target = join(root, 'from-running.tar.gz');
    setTimeout(() => void writeFile(target, 'written by the running kiosk'), 300);
    const r = await boot({ argv: ['/opt/electron', 'dist/app-dev', '--support-bundle', target] });
    expect(r).toBeNull();
    expect(app.exitCode).toBe(0);
    expect(stdout.text).toContain(`the running kiosk wrote its support bundle to ${target}`);
  });
});

describe("the operating system's camera and Bluetooth consent", () => {
  it('macOS: the camera is asked for before the kiosk window exists, and diagnostics show the answer', async () => {
    systemPreferences.camera = 'not-determined';
    systemPreferences.answer = 'granted';
    const r = await boot({ deps: { platform: 'darwin' } });
    expect(systemPreferences.asked).toBe(1);
    const at = (entry: string): number => calls.findIndex((c) => c.startsWith(entry));
    expect(at('systemPreferences.askForMediaAccess camera')).toBeGreaterThanOrEqual(0);
    expect(at('systemPreferences.askForMediaAccess camera')).toBeLessThan(at('new BrowserWindow'));
    expect(r?.service.appStatus().cameraAccess).toBe('granted');
  });

  it('macOS: denied or restricted is not asked again (nothing can), and staff see which', async () => {
    for (const state of ['denied', 'restricted'] as const) {
      resetFakeElectron();
      app.paths.set('userData', userData);
      app.paths.set('logs', logsDir);
      systemPreferences.camera = state;
      const r = await boot({ deps: { platform: 'darwin' } });
      expect(systemPreferences.asked).toBe(0);
      expect(r?.service.appStatus().cameraAccess).toBe(state);
      await quit();
      running?.lifecycle.dispose();
      running = null;
    }
  });

  it('Windows reports the consent without asking; Linux has none', async () => {
    systemPreferences.camera = 'denied';
    const win = await boot({ deps: { platform: 'win32' } });
    expect(win?.service.appStatus().cameraAccess).toBe('denied');
    expect(systemPreferences.asked).toBe(0);
    await quit();
    running?.lifecycle.dispose();
    resetFakeElectron();
    app.paths.set('userData', userData);
    app.paths.set('logs', logsDir);
    const linux = await boot({ deps: { platform: 'linux' } });
    expect(linux?.service.appStatus().cameraAccess).toBe('not_applicable');
    expect(calls.some((c) => c.startsWith('systemPreferences.'))).toBe(false);
  });

  it('--provision asks for the camera, starts Bluetooth so the OS asks for it, says what each answered, and exits without a kiosk', async () => {
    systemPreferences.camera = 'not-determined';
    const bleDevices: DeviceFactory = () => {
      deviceBuilds++;
      const qr = new QrScanQueue({ freshMs: 10_000 });
      let calls2 = 0;
      const central = { availability: () => (++calls2 < 3 ? { usable: false, reason: 'starting' } : { usable: true }) };
      const peripheral = { availability: () => ({ usable: false, reason: 'unauthorized' }) };
      return Promise.resolve({
        ports: { qr, bleCentral: central, blePeripheral: peripheral } as never,
        qr,
        close: () => Promise.resolve(),
      });
    };
    const r = await boot({ argv: ['/opt/electron', 'dist/app-dev', '--provision'], deps: { platform: 'darwin', devices: bleDevices } });
    expect(r).toBeNull();
    expect(systemPreferences.asked).toBe(1);
    expect(deviceBuilds).toBe(1);
    expect(BrowserWindow.instances).toHaveLength(0);
    expect(stdout.text).toContain('camera: granted');
    expect(stdout.text).toContain('bluetooth central: usable');
    expect(stdout.text).toContain('bluetooth peripheral: unauthorized');
    expect(app.exitCode).toBe(0);
  });

  it('--provision exits 1 and says where to allow it when the camera is denied', async () => {
    systemPreferences.camera = 'not-determined';
    systemPreferences.answer = 'denied';
    await boot({ argv: ['/opt/electron', 'dist/app-dev', '--provision'], deps: { platform: 'darwin' } });
    expect(stdout.text).toContain('camera: denied');
    expect(stdout.text).toContain('Privacy & Security → Camera');
    expect(app.exitCode).toBe(1);
  });
});
