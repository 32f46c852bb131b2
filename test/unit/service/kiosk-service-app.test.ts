/**
 * The service's side of the desktop application: the managed file as the highest, locked layer (and what
 * happens when it cannot be used), a secret store that cannot decrypt, the screen's forwarded errors, the
 * application status in diagnostics, and the idle test the updater relies on.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AppStatus, Diagnostics, dispatchIntent, KioskApiError, Settings } from '../../../src/common/kiosk-api.js';
import { SafeStorageSecretStore } from '../../../src/main/safe-storage-secret-store.js';
import { readStoredApiKey } from '../../../src/service/api-key-binding.js';
import type { ManagedConfig } from '../../../src/service/managed-config.js';
import { MAX_PER_WINDOW } from '../../../src/service/renderer-errors.js';
import { MemorySecretStore, type SecretStore } from '../../../src/service/secret-store.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { FakeSafeStorage } from './fake-safe-storage.js';
import { API_KEY, startServiceFixture, TEST_SCRYPT, type ServiceFixture, type ServiceFixtureOptions } from './service-fixture.js';

const PIN = '246810';
const MANAGED_PATH = '/etc/mdl-kiosk/config.json';
let fixture: ServiceFixture | undefined;
const dirs: string[] = [];

afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

function call(f: ServiceFixture, intent: string, args: unknown): Promise<unknown> {
  return dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
}

async function unlocked(options: ServiceFixtureOptions, managed?: Omit<ManagedConfig, 'path'>): Promise<ServiceFixture> {
  const pinHash = await hashPin(PIN, TEST_SCRYPT);
  const f = await startServiceFixture({
    ...options,
    overrides: { staff: { pinHash }, ...options.overrides },
    service: { ...(managed ? { managed: { path: MANAGED_PATH, ...managed } } : {}), ...options.service },
  });
  expect(await call(f, 'unlock', { pin: PIN })).toMatchObject({ ok: true });
  return f;
}

async function diagnostics(f: ServiceFixture): Promise<Diagnostics> {
  return Diagnostics.parse(await call(f, 'getDiagnostics', {}));
}

describe('the managed file', () => {
  it('wins over the environment and the command line, and every key it sets is locked and named', async () => {
    fixture = await unlocked(
      { env: { MDL_KIOSK_PROFILE: 'full', MDL_KIOSK_PCSC_READER: 'ACS' }, overrides: { profile: 'identity', ble: { roles: 'central' } } },
      {
        layer: {
          profile: 'age_over_18',
          ble: { roles: 'none' },
          timeouts: { resultDisplayMs: 45_000 },
          app: { updates: { channel: 'pilot' } },
        },
      },
    );
    const f = fixture;
    expect(f.service.config.profile).toBe('age_over_18');
    expect(f.service.config.ble.roles).toBe('none');
    expect(f.service.config.app.updates.channel).toBe('pilot');
    const settings = Settings.parse(await call(f, 'getSettings', {}));
    expect(settings.locked).toEqual(['backendUrl', 'apiKey', 'profile', 'pcscReader', 'bleRoles', 'timeouts.resultDisplayMs']);
    expect(settings.lockedBy).toEqual({
      backendUrl: 'test_setup',
      apiKey: 'test_setup',
      profile: 'managed',
      pcscReader: 'environment',
      bleRoles: 'managed',
      'timeouts.resultDisplayMs': 'managed',
    });
    const refused = (await call(f, 'saveSettings', { bleRoles: 'both', timeouts: { resultDisplayMs: 20_000 }, pcscReader: 'Other' })) as {
      ok: false;
      errors: { key: string; message: string }[];
    };
    expect(refused.ok).toBe(false);
    expect(refused.errors).toEqual([
      { key: 'pcscReader', message: 'pcscReader is set by the environment, and cannot be changed here' },
      {
        key: 'bleRoles',
        message: `bleRoles is set by the managed configuration file (fleet policy), ${MANAGED_PATH}, and cannot be changed here`,
      },
      {
        key: 'timeouts.resultDisplayMs',
        message: `timeouts.resultDisplayMs is set by the managed configuration file (fleet policy), ${MANAGED_PATH}, and cannot be changed here`,
      },
    ]);
    await expect(call(f, 'setProfile', { name: 'identity' })).rejects.toMatchObject({
      code: 'invalid_args',
      message: expect.stringContaining('managed configuration file') as string,
    });
    expect(f.service.config.profile).toBe('age_over_18');
    const app = (await diagnostics(f)).app;
    expect(app).toMatchObject({
      managedConfigPath: MANAGED_PATH,
      managedKeys: ['profile', 'ble.roles', 'timeouts.resultDisplayMs', 'app.updates.channel'],
      secretsProtection: 'memory',
      flavour: 'qa',
    });
  });

  it('a staff PIN hash in the managed file is the staff PIN, and cannot be changed on the screen', async () => {
    const pinHash = await hashPin('97531', TEST_SCRYPT);
    fixture = await startServiceFixture({ service: { managed: { path: MANAGED_PATH, layer: { staff: { pinHash } } } } });
    const f = fixture;
    expect(f.service.state().staff.pinConfigured).toBe(true);
    expect(await call(f, 'unlock', { pin: '11111' })).toMatchObject({ ok: false, reason: 'wrong_pin' });
    expect(await call(f, 'unlock', { pin: '97531' })).toMatchObject({ ok: true });
    const change = (await call(f, 'changePin', { current: '97531', next: '24680' })) as {
      ok: false;
      errors: { key: string; message: string }[];
    };
    expect(change.ok).toBe(false);
    expect(change.errors[0]).toMatchObject({ key: 'next', message: expect.stringContaining('managed configuration file') as string });
  });

  it('a file that cannot be used keeps the kiosk in config_error naming file and key; a save does not clear it', async () => {
    const problem = `the managed configuration file ${MANAGED_PATH}: app.updates.url: must be an https:// address`;
    fixture = await unlocked({}, { layer: {}, problem });
    const f = fixture;
    const state = await f.waitState((s) => s.view.phase === 'config_error', 5_000, 'config_error');
    expect(state.view.error?.detail).toBe(problem);
    expect(f.logs.records.find((r) => r.event === 'managed_config_invalid')?.msg).toBe(problem);
    expect(await call(f, 'saveSettings', { defaultLanguage: 'fr' })).toMatchObject({ ok: true });
    await f.service.settled();
    await call(f, 'retry', {});
    await f.service.settled();
    expect(f.service.state().view.phase).toBe('config_error');
    expect(f.service.state().view.error?.detail).toBe(problem);
    expect((await diagnostics(f)).events.map((e) => e.event)).toContain('managed_config_invalid');
  });
});

describe('a secret store that cannot decrypt', () => {
  async function undecryptableStore(): Promise<{ dir: string; store: SecretStore; other: FakeSafeStorage }> {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-service-secrets-'));
    dirs.push(dir);
    // Encrypted on another machine (or before the keyring was reset).
    const other = new FakeSafeStorage('another-machine');
    await new SafeStorageSecretStore({ safeStorage: other, dataDir: dir, platform: 'linux', allowBasicText: false }).set(
      'backend.apiKey',
      'old-key-from-elsewhere',
    );
    const store = new SafeStorageSecretStore({
      safeStorage: new FakeSafeStorage('this-kiosk'),
      dataDir: dir,
      platform: 'linux',
      allowBasicText: false,
    });
    return { dir, store, other };
  }

  it('without another key source: config_error says why; saving a new key replaces the unreadable one', async () => {
    const { dir, store } = await undecryptableStore();
    fixture = await unlocked({ backend: 'none', dataDir: dir, secrets: store });
    const f = fixture;
    const broken = await f.waitState((s) => s.view.phase === 'config_error', 5_000, 'config_error');
    expect(broken.view.error?.detail).toMatch(/^the stored API key cannot be read: the stored secret backend\.apiKey cannot be decrypted/);
    expect(broken.view.error?.detail).toMatch(/save the API key again/);
    const before = (await diagnostics(f)).app;
    expect(before).toMatchObject({
      secretsProtection: 'os-encrypted',
      secretsProblem: expect.stringContaining('cannot be decrypted') as string,
    });
    expect(f.logs.events()).toContain('secret_store_failed');

    expect(await call(f, 'saveSettings', { backendUrl: f.backend.url, apiKey: API_KEY })).toMatchObject({ ok: true });
    await f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready after saving a new key');
    expect((await readStoredApiKey(store))?.key).toBe(API_KEY);
    expect((await diagnostics(f)).app?.secretsProblem).toBeUndefined();
    expect(await readFile(join(dir, 'secrets.enc.json'), 'utf8')).not.toContain(API_KEY);
  });

  it('with the key from another source the kiosk keeps verifying, and staff still see the problem', async () => {
    const { dir, store } = await undecryptableStore();
    fixture = await unlocked({ dataDir: dir, secrets: store });
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready');
    await call(f, 'qrScanned', { text: f.rig.phone.presentQr(), source: 'camera' });
    const result = await f.waitState((s) => s.view.phase === 'result', 20_000, 'a result');
    expect(result.view.outcome?.verdict).toBe('verified');
    expect((await diagnostics(f)).app?.secretsProblem).toMatch(/cannot be decrypted/);
  });

  it('a store that refuses to save (no OS keyring) is a field error, and nothing is saved', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-service-secrets-'));
    dirs.push(dir);
    const safeStorage = new FakeSafeStorage();
    safeStorage.available = false;
    const store = new SafeStorageSecretStore({ safeStorage, dataDir: dir, platform: 'linux', allowBasicText: false });
    fixture = await unlocked({ backend: 'none', dataDir: dir, secrets: store });
    const f = fixture;
    const saved = (await call(f, 'saveSettings', { backendUrl: f.backend.url, apiKey: API_KEY })) as {
      ok: false;
      errors: { key: string; message: string }[];
    };
    expect(saved.ok).toBe(false);
    expect(saved.errors).toEqual([
      {
        key: 'apiKey',
        message: expect.stringMatching(/^the API key could not be stored: the operating system's secret store is not available/) as string,
      },
    ]);
    expect(JSON.stringify(saved)).not.toContain(API_KEY);
    // The address was not saved either: the save is all or nothing.
    expect(await readFile(join(dir, 'settings.json'), 'utf8').catch(() => '')).not.toContain(f.backend.url);
    expect(f.logs.text()).not.toContain(API_KEY);
  });
});

describe('errors the screen forwards', () => {
  it('are logged cleaned and bounded, counted, rate-limited with one "dropped" line, and need no PIN', async () => {
    fixture = await startServiceFixture();
    const f = fixture;
    const first = {
      kind: 'render',
      message: 'TypeError: boom \u001b[2J\u001b[31mred\u0007 \u202Etxt.exe\r\nforged line',
      stack: `Error\n    at A (app.js:1:1)\u0000\n    at https://host/#token=${'k'.repeat(30)}`,
    };
    expect(await call(f, 'reportError', first)).toEqual({ ok: true });
    const line = f.logs.records.find((r) => r.event === 'renderer_error');
    expect(line).toMatchObject({ level: 50, kind: 'render', message: 'TypeError: boom red txt.exe forged line' });
    expect(line?.stack).toBe('Error\n    at A (app.js:1:1)\n    at https://host/#token=[redacted]');
    for (let i = 0; i < 14; i++) await call(f, 'reportError', { kind: 'unhandledrejection', message: `rejection ${i}` });
    expect(f.logs.records.filter((r) => r.event === 'renderer_error')).toHaveLength(MAX_PER_WINDOW);
    // Over the bound: refused by the contract, not truncated silently.
    await expect(call(f, 'reportError', { kind: 'error', message: 'x'.repeat(501) })).rejects.toBeInstanceOf(KioskApiError);
    await expect(call(f, 'reportError', { kind: 'console', message: 'x' })).rejects.toMatchObject({ code: 'invalid_args' });
    await f.service.stop();
    const dropped = f.logs.records.filter((r) => r.event === 'renderer_error_dropped');
    expect(dropped).toEqual([expect.objectContaining({ count: 15 - MAX_PER_WINDOW, level: 40 })]);
    const again = unlockedDiagnosticsOf(f);
    expect(again.counts).toMatchObject({
      'renderer.render': 1,
      'renderer.unhandledrejection': 14,
      'renderer.dropped': 15 - MAX_PER_WINDOW,
    });
  });
});

/** The diagnostics of a stopped service (the handler itself; the staff gate is the dispatcher's). */
function unlockedDiagnosticsOf(f: ServiceFixture): Diagnostics {
  return Diagnostics.parse(f.service.getDiagnostics());
}

describe('application status and idleness', () => {
  it("completes the shell's report with the store's protection and the managed file; a failing report is survived", async () => {
    let fail = false;
    fixture = await unlocked(
      {
        service: {
          appStatus: () => {
            if (fail) throw new Error('shell not ready');
            return {
              flavour: 'production',
              secretsProtection: 'file-permissions',
              managedKeys: ['stale'],
              logDir: '/var/log/mdl-kiosk',
              healthFile: '/var/lib/mdl-kiosk/health.json',
              updates: { state: 'idle', checkedAt: 1 },
            };
          },
          secrets: new MemorySecretStore(),
        },
      },
      { layer: { profile: 'identity' } },
    );
    const f = fixture;
    const app = AppStatus.parse((await diagnostics(f)).app);
    expect(app).toEqual({
      flavour: 'production',
      secretsProtection: 'memory',
      managedConfigPath: MANAGED_PATH,
      managedKeys: ['profile'],
      logDir: '/var/log/mdl-kiosk',
      healthFile: '/var/lib/mdl-kiosk/health.json',
      updates: { state: 'idle', checkedAt: 1 },
    });
    fail = true;
    expect((await diagnostics(f)).app).toEqual({
      flavour: 'qa',
      secretsProtection: 'memory',
      managedConfigPath: MANAGED_PATH,
      managedKeys: ['profile'],
    });
    expect(f.logs.events()).toContain('app_status_failed');
  });

  it('is idle on Ready, not with staff unlocked nor while a verification or its result is on screen', async () => {
    fixture = await startServiceFixture({ rig: { behaviour: { consentDelayMs: 800 } } });
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready');
    expect(f.service.isIdle()).toBe(true);
    const seen: boolean[] = [];
    const off = f.service.onState((s) => {
      if (s.view.phase === 'transferring' || s.view.phase === 'result') seen.push(f.service.isIdle());
    });
    await call(f, 'qrScanned', { text: f.rig.phone.presentQr(), source: 'camera' });
    await f.waitState((s) => s.view.phase === 'result', 20_000, 'a result');
    off();
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.every((idle) => !idle)).toBe(true);
    await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready again');
    expect(f.service.isIdle()).toBe(true);
    await f.service.stop();
    expect(f.service.isIdle()).toBe(false);
  });

  it('is not idle while staff are in the settings', async () => {
    fixture = await unlocked({});
    await fixture.waitState((s) => s.view.phase === 'ready', 10_000, 'ready');
    expect(fixture.service.isIdle()).toBe(false);
    await call(fixture, 'lock', {});
    expect(fixture.service.isIdle()).toBe(true);
  });
});

describe('a managed file on disk, end to end', () => {
  it('readManagedConfig feeds the service: a bad key in the file shows as config_error naming both', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-managed-service-'));
    dirs.push(dir);
    const path = join(dir, 'config.json');
    await writeFile(path, JSON.stringify({ app: { logs: { retentionDays: 0 } } }));
    const { readManagedConfig } = await import('../../../src/service/managed-config.js');
    fixture = await startServiceFixture({ service: { managed: readManagedConfig(path) } });
    const state = await fixture.waitState((s) => s.view.phase === 'config_error', 5_000, 'config_error');
    expect(state.view.error?.detail).toContain(path);
    expect(state.view.error?.detail).toContain('app.logs.retentionDays');
  });

  it('plain http to another machine is refused naming the file and the key that set it (issue 30)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-managed-service-'));
    dirs.push(dir);
    const path = join(dir, 'config.json');
    await writeFile(path, JSON.stringify({ backend: { baseUrl: 'http://verify.example.com/v1', apiKey: 'managed-key-1' } }));
    const { readManagedConfig } = await import('../../../src/service/managed-config.js');
    fixture = await startServiceFixture({ backend: 'none', service: { managed: readManagedConfig(path) } });
    const state = await fixture.waitState((s) => s.view.phase === 'config_error', 5_000, 'config_error');
    expect(state.view.error?.detail).toBe(
      `the managed configuration file ${path}: backend.baseUrl: refusing plain http to verify.example.com: use https, or set backend.allowInsecure for a lab backend`,
    );
    expect(fixture.logs.text()).not.toContain('managed-key-1');
  });

  it.each([
    ['the configuration file', { config: { backend: { baseUrl: 'http://verify.example.com/v1', apiKey: 'file-key-1' } } }],
    [
      'the environment (MDL_KIOSK_BACKEND_URL)',
      { env: { MDL_KIOSK_BACKEND_URL: 'http://verify.example.com/v1', MDL_KIOSK_API_KEY: 'env-key-1' } },
    ],
    ['the command line (--backend)', { overrides: { backend: { baseUrl: 'http://verify.example.com/v1', apiKey: 'cli-key-1' } } }],
  ] as const)('plain http set by %s: the message says where', async (where, options) => {
    fixture = await startServiceFixture({ backend: 'none', ...options });
    const state = await fixture.waitState((s) => s.view.phase === 'config_error', 5_000, 'config_error');
    expect(state.view.error?.detail).toMatch(
      new RegExp(`^${where.replace(/[()]/g, '\\$&')}[^:]*: backend\\.baseUrl: refusing plain http to verify\\.example\\.com`),
    );
  });
});
