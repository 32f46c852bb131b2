import { stat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Diagnostics, dispatchIntent, KioskApiError, Settings } from '../../../src/common/kiosk-api.js';
import { createIsoReaderEngineFactory } from '../../../src/qa/sim/mock-backend/reader/index.js';
import { startMockBackend } from '../../../src/qa/sim/mock-backend/server.js';
import { readStoredApiKey } from '../../../src/service/api-key-binding.js';
import { KioskService } from '../../../src/service/kiosk-service.js';
import { FileSecretStore, MemorySecretStore } from '../../../src/service/secret-store.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { API_KEY, SERVICE_TIMEOUTS, startServiceFixture, TEST_SCRYPT, type ServiceFixture } from './service-fixture.js';

/** Asymmetric matchers, typed as the strings they stand for. */
const matching = (pattern: RegExp): string => expect.stringMatching(pattern) as string;
const containing = (text: string): string => expect.stringContaining(text) as string;
const notContaining = (text: string): string => expect.not.stringContaining(text) as string;

const PIN = '246810';
let fixture: ServiceFixture | undefined;

afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
});

async function withPin(options: Parameters<typeof startServiceFixture>[0] = {}): Promise<ServiceFixture> {
  const pinHash = await hashPin(PIN, TEST_SCRYPT);
  return startServiceFixture({ ...options, overrides: { staff: { pinHash }, ...options.overrides } });
}

function call(f: ServiceFixture, intent: string, args: unknown): Promise<unknown> {
  return dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
}

describe('KioskService: state stream and a verification', () => {
  it('streams valid states: ready with profiles, camera, session, TEST MODE and the backend origin only', async () => {
    fixture = await startServiceFixture();
    const ready = await fixture.waitState((s) => s.view.phase === 'ready', 10_000, 'ready');
    expect(ready.testMode).toBe(true);
    expect(ready.backendOrigin).toBe(new URL(fixture.backend.url).origin);
    expect(ready.camera).toEqual({ scanning: true, deviceId: null, state: 'off', maxDecodesPerSecond: 8 });
    expect(ready.profiles.map((p) => p.name)).toEqual(expect.arrayContaining(['age_over_21', 'identity']));
    expect(ready.session.state).toBe('armed');
    expect(ready.session.expiresAt).toBeGreaterThan(Date.now());
    expect(ready.language).toBe('en');
    expect(ready.clearsAt).toBeNull();
    expect(ready.staff).toEqual({ pinConfigured: false, unlocked: false, unlockedUntil: null, lockedOutUntil: null });
    // Every state carried no API key.
    expect(JSON.stringify(fixture.states)).not.toContain(API_KEY);
  });

  it('a QR scan runs a verification: result with a countdown, then ready again in the default language', async () => {
    fixture = await startServiceFixture();
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready');
    expect(await call(f, 'setLanguage', { language: 'fr' })).toEqual({ ok: true });
    expect(f.service.state().language).toBe('fr');
    const text = `${f.rig.phone.presentQr()}\r\n`;
    expect(await call(f, 'qrScanned', { text, source: 'scanner' })).toEqual({ accepted: true });
    // Pushed unmodified: the core strips the scanner's terminator itself.
    expect(f.qr().pushed).toEqual([text]);
    const result = await f.waitState((s) => s.view.phase === 'result', 15_000, 'result');
    const observedAt = Date.now();
    expect(result.view.outcome?.verdict).toBe('verified');
    expect(result.language).toBe('fr');
    expect(result.camera.scanning).toBe(false);
    expect(result.clearsAt).not.toBeNull();
    // Cleared resultDisplayMs after the service took the result: stamped between the view's own stamp and
    // the moment the test saw the state (event order on one clock, not a wall-clock bound).
    const shownAt = (result.clearsAt ?? 0) - SERVICE_TIMEOUTS.resultDisplayMs;
    expect(shownAt).toBeGreaterThanOrEqual(result.view.at);
    expect(shownAt).toBeLessThanOrEqual(observedAt);
    // While the result shows, a scan is taken as a tap is: held until the outcome's minimum has passed
    // (issue 28; the conformance tests time it), not refused.
    // The same code again: taken by the screen, then ignored by the core (an engagement is single-use).
    expect(await call(f, 'qrScanned', { text, source: 'scanner' })).toEqual({ accepted: true });
    const next = await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready again');
    expect(next.language).toBe('en');
    expect(next.clearsAt).toBeNull();
    expect(next.view.outcome).toBeNull();
    expect(f.reports).toHaveLength(1);
    expect(f.reports[0]?.result).toBe('complete');
  });

  it('"next" clears the result at once', async () => {
    fixture = await startServiceFixture({ config: { timeouts: { resultDisplayMs: 60_000 } } });
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready');
    await call(f, 'qrScanned', { text: f.rig.phone.presentQr(), source: 'camera' });
    const result = await f.waitState((s) => s.view.phase === 'result', 15_000, 'result');
    expect((result.clearsAt ?? 0) - Date.now()).toBeGreaterThan(50_000);
    await call(f, 'next', {});
    const after = await f.waitState((s) => s.view.phase !== 'result', 3_000, 'the result cleared');
    expect(after.view.outcome).toBeNull();
  });

  it('qrScanned refuses empty text and non-mdoc codes, and takes mdoc: in any case', async () => {
    fixture = await startServiceFixture();
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready');
    expect(await call(f, 'qrScanned', { text: '', source: 'paste' })).toEqual({ accepted: false, reason: 'empty' });
    expect(await call(f, 'qrScanned', { text: '\r\n', source: 'scanner' })).toEqual({ accepted: false, reason: 'empty' });
    expect(await call(f, 'qrScanned', { text: 'https://example.com/mdoc:', source: 'camera' })).toEqual({
      accepted: false,
      reason: 'not_mdoc',
    });
    expect(await call(f, 'qrScanned', { text: ' mdoc:abc', source: 'camera' })).toEqual({ accepted: false, reason: 'not_mdoc' });
    expect(f.qr().pushed).toEqual([]);
    // A code cut short (the CBOR item ends early) or not base64: "could not be read", no session spent.
    expect(await call(f, 'qrScanned', { text: 'mdoc:owBjMS4wAYIB2BhYS6QBAiABIVgg', source: 'scanner' })).toEqual({
      accepted: false,
      reason: 'unreadable',
    });
    expect(await call(f, 'qrScanned', { text: 'mdoc:owBj MS4w', source: 'scanner' })).toEqual({ accepted: false, reason: 'unreadable' });
    expect(f.qr().pushed).toEqual([]);
    // A whole one ({0: "1.0"}), the scheme in any case.
    expect(await call(f, 'qrScanned', { text: 'MDOC:oQBjMS4w', source: 'paste' })).toEqual({ accepted: true });
    expect(f.qr().pushed).toEqual(['MDOC:oQBjMS4w']);
    await expect(call(f, 'qrScanned', { text: 'x'.repeat(9_000), source: 'paste' })).rejects.toMatchObject({ code: 'invalid_args' });
  });

  it('a non-default language on Ready goes back to the default after the reset time', async () => {
    fixture = await startServiceFixture({ service: { languageResetMs: 300 } });
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready');
    await call(f, 'setLanguage', { language: 'es' });
    expect(f.service.state().language).toBe('es');
    const reset = await f.waitState((s) => s.language === 'en', 3_000, 'the language reset');
    expect(reset.view.phase).toBe('ready');
  });
});

describe('KioskService: staff', () => {
  it('staff intents need the PIN; unlock opens them, lock closes them; no PIN says no_pin', async () => {
    fixture = await startServiceFixture();
    expect(await call(fixture, 'unlock', { pin: '1234' })).toEqual({ ok: false, reason: 'no_pin' });
    await fixture.stop();
    fixture = await withPin();
    const f = fixture;
    for (const [intent, args] of [
      ['getSettings', {}],
      ['saveSettings', {}],
      ['getDiagnostics', {}],
      ['selfTest', {}],
      ['setProfile', { name: 'identity' }],
      ['changePin', { current: '0000', next: '1111' }],
    ] as const) {
      const error = await call(f, intent, args).catch((e: unknown) => e);
      expect(error, intent).toBeInstanceOf(KioskApiError);
      expect((error as KioskApiError).code).toBe('staff_required');
    }
    const unlocked = (await call(f, 'unlock', { pin: PIN })) as { ok: boolean; unlockedUntil: number };
    expect(unlocked.ok).toBe(true);
    expect(f.service.state().staff.unlocked).toBe(true);
    expect(Settings.safeParse(await call(f, 'getSettings', {})).success).toBe(true);
    await call(f, 'lock', {});
    expect(f.service.state().staff.unlocked).toBe(false);
    await expect(call(f, 'getSettings', {})).rejects.toMatchObject({ code: 'staff_required' });
  });

  it('setProfile switches the kiosk and persists; an unknown profile is refused', async () => {
    fixture = await withPin();
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready');
    await call(f, 'unlock', { pin: PIN });
    await call(f, 'setProfile', { name: 'identity' });
    await f.waitState((s) => s.view.profile === 'identity', 3_000, 'the identity profile');
    const saved = JSON.parse(await readFile(join(f.dataDir, 'settings.json'), 'utf8')) as { settings: { profile?: string } };
    expect(saved.settings.profile).toBe('identity');
    await expect(call(f, 'setProfile', { name: 'nope' })).rejects.toMatchObject({ code: 'invalid_args' });
  });

  it('changePin replaces the PIN; a PIN given on the command line cannot be changed here', async () => {
    fixture = await startServiceFixture({ backend: 'none' });
    const f = fixture;
    // No PIN: set one through the same store --set-pin uses, via a second service on the same directory.
    const { provisionStaffPin } = await import('../../../src/service/provision-pin.js');
    await provisionStaffPin(f.dataDir, '9876', TEST_SCRYPT);
    await f.service.stop();
    const again = new KioskService({
      devices: () => Promise.reject(new Error('no devices here')),
      dataDir: f.dataDir,
      env: {},
      secrets: new MemorySecretStore(),
      logDestination: f.logs,
      pinScrypt: TEST_SCRYPT,
    });
    await again.start();
    try {
      expect(again.state().staff.pinConfigured).toBe(true);
      expect(await again.unlock({ pin: '9876' })).toMatchObject({ ok: true });
      // The current PIN must be given again: a wrong one is refused (and counts as a wrong attempt).
      expect(await again.changePin({ current: '1111', next: '13579' })).toMatchObject({ ok: false, errors: [{ key: 'current' }] });
      expect(await again.changePin({ current: '9876', next: '13579' })).toEqual({ ok: true });
      again.lock();
      expect(await again.unlock({ pin: '9876' })).toMatchObject({ ok: false, reason: 'wrong_pin' });
      expect(await again.unlock({ pin: '13579' })).toMatchObject({ ok: true });
    } finally {
      await again.stop();
    }
    await f.stop();
    fixture = await withPin();
    await call(fixture, 'unlock', { pin: PIN });
    const refused = (await call(fixture, 'changePin', { current: PIN, next: '5555' })) as {
      ok: boolean;
      errors: { key: string; message: string }[];
    };
    expect(refused.ok).toBe(false);
    expect(refused.errors[0]?.message).toMatch(/command line/);
  });
});

describe('KioskService: settings', () => {
  it('without a backend it shows config_error (valid state), and saving URL and key rebuilds a working kiosk', async () => {
    const secrets = new MemorySecretStore();
    fixture = await withPin({ backend: 'none', secrets });
    const f = fixture;
    const broken = await f.waitState((s) => s.view.phase === 'config_error', 5_000, 'config_error');
    expect(broken.view.error?.detail).toMatch(/backend\.baseUrl is not set/);
    expect(broken.backendOrigin).toBeNull();
    await call(f, 'unlock', { pin: PIN });
    const saved = (await call(f, 'saveSettings', { backendUrl: f.backend.url, apiKey: API_KEY })) as {
      ok: boolean;
      settings: Record<string, unknown>;
    };
    expect(saved.ok).toBe(true);
    expect(saved.settings).toMatchObject({ backendUrl: f.backend.url, apiKeySet: true, locked: [] });
    await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready after saving');
    expect((await readStoredApiKey(secrets))?.key).toBe(API_KEY);
    const settings = await call(f, 'getSettings', {});
    expect(JSON.stringify(settings)).not.toContain(API_KEY);
    // The key is in no state, no log line, no diagnostics and not in settings.json.
    expect(JSON.stringify(f.states)).not.toContain(API_KEY);
    expect(f.logs.text()).not.toContain(API_KEY);
    expect(JSON.stringify(await call(f, 'getDiagnostics', {}))).not.toContain(API_KEY);
    const file = await readFile(join(f.dataDir, 'settings.json'), 'utf8');
    expect(file).not.toContain(API_KEY);
    expect((await stat(join(f.dataDir, 'settings.json'))).mode & 0o777).toBe(0o600);
    expect(f.logs.events()).toContain('settings_saved');
  });

  it('refuses bad settings with field errors naming the key, and locked keys', async () => {
    fixture = await withPin({ env: { MDL_KIOSK_PCSC_READER: 'ACS' } });
    const f = fixture;
    await call(f, 'unlock', { pin: PIN });
    const settings = (await call(f, 'getSettings', {})) as { locked: string[] };
    expect(settings.locked).toEqual(['backendUrl', 'apiKey', 'pcscReader']);
    const locked = (await call(f, 'saveSettings', { backendUrl: 'https://other.example', pcscReader: 'X' })) as {
      ok: false;
      errors: { key: string }[];
    };
    expect(locked.ok).toBe(false);
    expect(locked.errors.map((e) => e.key)).toEqual(['backendUrl', 'pcscReader']);
    const profile = (await call(f, 'saveSettings', { profile: 'no_such_profile' })) as {
      ok: false;
      errors: { key: string; message: string }[];
    };
    expect(profile.errors).toEqual([{ key: 'profile', message: matching(/unknown request profile/) }]);
    await expect(call(f, 'saveSettings', { timeouts: { resultDisplayMs: 10 } })).rejects.toMatchObject({
      code: 'invalid_args',
      message: containing('timeouts.resultDisplayMs'),
    });
    await expect(call(f, 'saveSettings', { bogus: 1 })).rejects.toMatchObject({ code: 'invalid_args' });
    const file = await readFile(join(f.dataDir, 'settings.json'), 'utf8').catch(() => '');
    expect(file).not.toContain('no_such_profile');
  });

  it('refuses plain http to a non-loopback backend and a malformed API key, without echoing the key', async () => {
    fixture = await withPin({ backend: 'none' });
    const f = fixture;
    await call(f, 'unlock', { pin: PIN });
    const insecure = (await call(f, 'saveSettings', { backendUrl: 'http://verifier.example.com/api' })) as {
      ok: false;
      errors: { key: string; message: string }[];
    };
    expect(insecure.ok).toBe(false);
    expect(insecure.errors[0]).toMatchObject({ key: 'backendUrl', message: matching(/plain http/) });
    const notUrl = (await call(f, 'saveSettings', { backendUrl: 'not a url' })) as { ok: false; errors: { key: string }[] };
    expect(notUrl.errors.map((e) => e.key)).toContain('backendUrl');
    const badKey = (await call(f, 'saveSettings', { apiKey: 'has spaces in it' })) as {
      ok: false;
      errors: { key: string; message: string }[];
    };
    expect(badKey.errors).toEqual([{ key: 'apiKey', message: notContaining('has spaces') }]);
  });

  it('a BLE role change rebuilds kiosk and devices, but only after the running verification', async () => {
    fixture = await withPin({ rig: { behaviour: { consentDelayMs: 1_500 } } });
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready');
    await call(f, 'unlock', { pin: PIN });
    await call(f, 'qrScanned', { text: f.rig.phone.presentQr(), source: 'camera' });
    await f.waitState((s) => s.view.phase === 'transferring' || s.view.phase === 'ble_connecting', 10_000, 'a running verification');
    const saved = (await call(f, 'saveSettings', { bleRoles: 'central' })) as { ok: boolean };
    expect(saved.ok).toBe(true);
    expect(f.deviceBuilds).toHaveLength(1);
    await f.waitState((s) => s.view.phase === 'result', 15_000, 'the result');
    expect(f.reports[0]?.outcome?.verdict).toBe('verified');
    await f.service.settled();
    expect(f.deviceBuilds).toHaveLength(2);
    expect(f.deviceBuilds[1]?.ble.roles).toBe('central');
    expect(f.closedSets()).toBe(1);
    await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready on the rebuilt kiosk');
  });

  it('a timeout change rebuilds the kiosk but keeps the devices', async () => {
    fixture = await withPin();
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready');
    await call(f, 'unlock', { pin: PIN });
    const saved = (await call(f, 'saveSettings', { timeouts: { resultDisplayMs: 45_000 } })) as { ok: boolean };
    expect(saved.ok).toBe(true);
    await f.service.settled();
    expect(f.deviceBuilds).toHaveLength(1);
    expect(f.logs.events()).toContain('kiosk_rebuild');
    expect(f.service.config.timeouts.resultDisplayMs).toBe(45_000);
    await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready again');
  });

  it('a corrupt settings file shows config_error naming the bad key; saving fixes it', async () => {
    const { mkdtemp, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-service-bad-'));
    const pinHash = await hashPin(PIN, TEST_SCRYPT);
    await writeFile(
      join(dir, 'settings.json'),
      JSON.stringify({ version: 1, settings: { timeouts: { resultDisplayMs: 'long' } }, staff: { pinHash } }),
    );
    fixture = await startServiceFixture({ dataDir: dir });
    const f = fixture;
    const bad = await f.waitState((s) => s.view.phase === 'config_error', 5_000, 'config_error');
    expect(bad.view.error?.detail).toContain('settings.timeouts.resultDisplayMs');
    expect(bad.staff.pinConfigured).toBe(true);
    await call(f, 'unlock', { pin: PIN });
    expect(await call(f, 'saveSettings', { defaultLanguage: 'es' })).toMatchObject({ ok: true });
    await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready after fixing');
    expect(f.service.state().defaultLanguage).toBe('es');
  });

  it('stores the API key saved on the screen in a 0600 file secret store, never in settings.json', async () => {
    fixture = await withPin({ backend: 'none' });
    const f = fixture;
    await f.service.stop();
    const overrides = { staff: { pinHash: await hashPin(PIN, TEST_SCRYPT) } };
    const store = new FileSecretStore(f.dataDir);
    const service = new KioskService({
      devices: () => Promise.reject(new Error('no devices here')),
      dataDir: f.dataDir,
      env: {},
      overrides,
      secrets: store,
      logDestination: f.logs,
      pinScrypt: TEST_SCRYPT,
    });
    await service.start();
    try {
      expect(await service.unlock({ pin: PIN })).toMatchObject({ ok: true });
      expect(await service.saveSettings({ backendUrl: f.backend.url, apiKey: API_KEY })).toMatchObject({ ok: true });
      expect((await stat(store.path)).mode & 0o777).toBe(0o600);
      expect(await readFile(store.path, 'utf8')).toContain(API_KEY);
      expect(await readFile(join(f.dataDir, 'settings.json'), 'utf8')).not.toContain(API_KEY);
      expect(store.protection).toBe('file-permissions');
      // A service started later on the same directory finds the key there.
      await service.stop();
      const again = new KioskService({
        devices: () => Promise.reject(new Error('no devices here')),
        dataDir: f.dataDir,
        env: {},
        overrides,
        secrets: new FileSecretStore(f.dataDir),
        logDestination: f.logs,
        pinScrypt: TEST_SCRYPT,
      });
      await again.start();
      try {
        expect(await again.unlock({ pin: PIN })).toMatchObject({ ok: true });
        expect(again.getSettings()).toMatchObject({ apiKeySet: true, backendUrl: f.backend.url });
      } finally {
        await again.stop();
      }
    } finally {
      await service.stop();
    }
  });

  it('never sends the stored API key to another backend: a new backend address needs its key in the same save', async () => {
    const secrets = new MemorySecretStore();
    fixture = await withPin({ backend: 'none', secrets });
    const f = fixture;
    await call(f, 'unlock', { pin: PIN });
    expect(await call(f, 'saveSettings', { backendUrl: f.backend.url, apiKey: API_KEY })).toMatchObject({ ok: true });
    const moved = (await call(f, 'saveSettings', { backendUrl: 'https://collector.example' })) as {
      ok: boolean;
      errors: { key: string; message: string }[];
    };
    expect(moved.ok).toBe(false);
    expect(moved.errors[0]?.key).toBe('apiKey');
    expect(moved.errors[0]?.message).toMatch(/entered for .*enter the API key for this backend/);
    expect(((await call(f, 'getSettings', {})) as { backendUrl: string }).backendUrl).toBe(f.backend.url);
    // The same origin with another path keeps the key; a new origin with its own key is accepted.
    expect(await call(f, 'saveSettings', { backendUrl: `${f.backend.url}/` })).toMatchObject({ ok: true });
    expect(await call(f, 'saveSettings', { backendUrl: 'https://other.example', apiKey: 'other-key' })).toMatchObject({ ok: true });
    expect((await readStoredApiKey(secrets))?.key).toBe('other-key');
  });

  it("runs concurrent saves one after another, so neither loses the other's API key", async () => {
    const secrets = new MemorySecretStore();
    fixture = await withPin({ backend: 'none', secrets });
    const f = fixture;
    await call(f, 'unlock', { pin: PIN });
    const [first, second] = await Promise.all([
      call(f, 'saveSettings', { backendUrl: f.backend.url, apiKey: API_KEY }),
      call(f, 'saveSettings', { defaultLanguage: 'fr' }),
    ]);
    expect(first).toMatchObject({ ok: true });
    expect(second).toMatchObject({ ok: true, settings: { apiKeySet: true, defaultLanguage: 'fr', backendUrl: f.backend.url } });
    expect((await readStoredApiKey(secrets))?.key).toBe(API_KEY);
  });
});

/** Every WebSocket upgrade answered 404, as by a gateway that does not route the session socket. */
const GATEWAY_404 = { httpFailures: { upgrade: { status: 404, times: 1_000 } } };
/** Backoffs short enough for a test; the slowest pace (staff's cases) is 100–200 ms. */
const FAST_RETRY = { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 200 };

describe('KioskService: the retry history across rebuilds', () => {
  it('a save that rebuilds the kiosk keeps the failures in a row and the totals; a different backend URL starts afresh', async () => {
    fixture = await withPin({
      backend: 'none',
      config: (url) => ({ backend: { baseUrl: url }, session: FAST_RETRY }),
      backendFaults: GATEWAY_404,
    });
    const f = fixture;
    await call(f, 'unlock', { pin: PIN });
    expect(await call(f, 'saveSettings', { apiKey: API_KEY })).toMatchObject({ ok: true });
    await f.waitState((s) => s.view.error?.code === 'backend_refuses_socket', 15_000, 'the gateway refusal');
    const before = f.service.backendFailures();
    expect(before?.consecutive).toBeGreaterThanOrEqual(3);
    const refusedBefore = before?.totals.socket_refused ?? 0;

    // What the rebuilt kiosk shows first, with its report at that moment.
    const seen: { phase: string; consecutive: number; refused: number }[] = [];
    let rebuilding = false;
    const unsubscribe = f.service.onState((s) => {
      if (s.view.phase === 'starting') rebuilding = true;
      else if (rebuilding && (s.view.phase === 'offline' || s.view.phase === 'config_error')) {
        const report = f.service.backendFailures();
        seen.push({ phase: s.view.phase, consecutive: report?.consecutive ?? -1, refused: report?.totals.socket_refused ?? -1 });
      }
    });
    try {
      expect(await call(f, 'saveSettings', { timeouts: { resultDisplayMs: 45_000 } })).toMatchObject({ ok: true });
      await f.service.settled();
      expect(f.logs.events().filter((e) => e === 'kiosk_rebuild')).toHaveLength(2);
      await expect.poll(() => seen.length, { timeout: 10_000, message: 'a failure of the rebuilt kiosk' }).toBeGreaterThan(0);
    } finally {
      unsubscribe();
    }
    // A fresh policy would count this refusal as the first (offline, 1 in a row); the kept one knows it is
    // one more of a series and tells staff at once.
    expect(seen[0]?.phase).toBe('config_error');
    expect(seen[0]?.consecutive).toBeGreaterThan(before?.consecutive ?? Infinity);
    expect(seen[0]?.refused).toBeGreaterThan(refusedBefore);

    // Another backend: its history starts empty, and it is ready.
    const other = await startMockBackend({
      apiKeys: [API_KEY],
      engineFactory: createIsoReaderEngineFactory({ trustedIacaCertificates: [f.rig.phone.credential.pki.iaca.der] }),
    });
    try {
      expect(await call(f, 'saveSettings', { backendUrl: other.url, apiKey: API_KEY })).toMatchObject({ ok: true });
      await f.service.settled();
      await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready on the other backend');
      expect(f.service.backendFailures()).toMatchObject({ lastFailure: null, consecutive: 0, totals: {} });
    } finally {
      await f.service.stop();
      await other.stop();
    }
  }, 60_000);
});

describe('KioskService: a gateway that refuses the session socket', () => {
  it('needs staff naming the gateway (its own code, how often it is checked); diagnostics name the cause; ready by itself once fixed', async () => {
    fixture = await withPin({ config: { session: FAST_RETRY }, backendFaults: GATEWAY_404 });
    const f = fixture;
    const secrets: string[] = [];
    f.backend.sessions.onCreated((s) => secrets.push(s.id, s.clientSecret));
    const state = await f.waitState((s) => s.view.phase === 'config_error', 15_000, 'needs staff');
    expect(state.view.backend).toBe('needs_staff');
    expect(state.view.error).toEqual({
      code: 'backend_refuses_socket',
      detail:
        'the backend refuses the session connection (HTTP 404) — check the WebSocket route of the gateway (checked again within 60 s)',
      retryable: false,
    });

    await call(f, 'unlock', { pin: PIN });
    const diagnostics = Diagnostics.parse(await call(f, 'getDiagnostics', {}));
    expect(diagnostics.backend?.lastFailure).toMatchObject({
      kind: 'socket_refused',
      stage: 'handshake',
      status: 404,
      detail: containing('WebSocket route of the gateway'),
    });
    expect(diagnostics.backend?.lastFailure?.at).toBeGreaterThan(Date.now() - 10_000);
    expect(diagnostics.backend?.consecutive).toBeGreaterThanOrEqual(3);
    expect(diagnostics.backend?.totals.socket_refused).toBeGreaterThanOrEqual(3);
    expect(diagnostics.backend?.requestsLastMinute).toBeGreaterThanOrEqual(6);
    expect(diagnostics.backend?.maxRequestsPerMinute).toBe(20);
    const selfTest = (await call(f, 'selfTest', {})) as { checks: { name: string; ok: boolean; status: string; detail?: string }[] };
    expect(selfTest.checks[0]).toMatchObject({
      name: 'backend',
      ok: false,
      status: 'backend_refuses_socket',
      detail: containing('HTTP 404'),
    });
    // No session id, client secret or key in what staff see.
    expect(secrets.length).toBeGreaterThanOrEqual(2);
    const shown = JSON.stringify([diagnostics, selfTest, f.service.state()]);
    for (const secret of [API_KEY, ...secrets]) expect(shown).not.toContain(secret);

    // The gateway fixed: the kiosk finds it by itself (no staff retry), and the failures in a row end.
    f.backend.faults.clear();
    await f.waitState((s) => s.view.phase === 'ready', 10_000, 'ready once the gateway routes the socket');
    expect(f.service.backendFailures()?.totals.socket_refused).toBeGreaterThanOrEqual(3);
  }, 40_000);
});

describe('KioskService: diagnostics and self-test', () => {
  it('counts verifications and keeps no personal data in diagnostics or logs', async () => {
    fixture = await withPin({ config: { profile: 'full' } });
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready');
    await call(f, 'qrScanned', { text: f.rig.phone.presentQr(), source: 'camera' });
    await f.waitState((s) => s.view.phase === 'result', 20_000, 'result');
    const response = f.reports[0]?.outcome?.response ?? {};
    const elements = Object.values(response).reduce<Record<string, unknown>>((all, ns) => ({ ...all, ...ns }), {});
    const personal = ['family_name', 'given_name', 'document_number', 'portrait'].map((k) => elements[k]);
    expect(personal.every((v) => v !== undefined)).toBe(true);
    const probes = personal.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)).slice(0, 60));
    await call(f, 'unlock', { pin: PIN });
    const diagnostics = (await call(f, 'getDiagnostics', {})) as {
      counts: Record<string, number>;
      events: { event: string; detail?: string }[];
    };
    expect(diagnostics.counts).toMatchObject({ verifications: 1, 'verdict.verified': 1, 'result.complete': 1, 'scan.camera.accepted': 1 });
    // The answer to the request is counted too, and named in the event (a code, never a value).
    const answer = f.reports[0]?.outcome?.answer.result;
    expect(answer).toBeDefined();
    expect(diagnostics.counts[`answer.${answer ?? ''}`]).toBe(1);
    expect(diagnostics.events.find((e) => e.event === 'verification_outcome')?.detail).toContain(`answer=${answer ?? ''}`);
    expect(diagnostics.events.map((e) => e.event)).toContain('verification_outcome');
    const diagText = JSON.stringify(diagnostics);
    const logText = f.logs.text();
    for (const probe of probes) {
      expect(diagText).not.toContain(probe);
      expect(logText).not.toContain(probe);
    }
  });

  it('self-test reports the backend, the devices and the camera the screen reported', async () => {
    fixture = await withPin({ rig: { ble: { peripheral: false } } });
    const f = fixture;
    await f.waitState((s) => s.view.phase === 'ready');
    await call(f, 'unlock', { pin: PIN });
    const first = (await call(f, 'selfTest', {})) as { checks: { name: string; ok: boolean; status: string }[] };
    expect(first.checks).toEqual([
      { name: 'backend', ok: true, status: 'armed' },
      { name: 'nfc', ok: true, status: 'usable' },
      { name: 'ble_central', ok: true, status: 'usable' },
      expect.objectContaining({ name: 'ble_peripheral', ok: false, status: 'not_configured' }),
      expect.objectContaining({ name: 'camera', ok: false, status: 'not_reported' }),
    ]);
    await call(f, 'reportCamera', { state: 'denied', detail: 'NotAllowedError' });
    expect(f.service.state().camera.state).toBe('denied');
    const second = (await call(f, 'selfTest', {})) as { checks: { name: string; ok: boolean; status: string; detail?: string }[] };
    expect(second.checks[4]).toEqual({ name: 'camera', ok: false, status: 'denied', detail: 'NotAllowedError' });
    // The screen turns the camera off when it leaves Ready (e.g. for the staff screens): the problem stays
    // visible and keeps failing the self-test until the camera runs again.
    await call(f, 'reportCamera', { state: 'off' });
    expect(f.service.state().camera.state).toBe('denied');
    expect(((await call(f, 'selfTest', {})) as typeof second).checks[4]).toMatchObject({ ok: false, status: 'denied' });
    await call(f, 'reportCamera', { state: 'active' });
    await call(f, 'reportCamera', { state: 'off' });
    expect(f.service.state().camera.state).toBe('off');
    expect(((await call(f, 'selfTest', {})) as typeof second).checks[4]).toEqual({ name: 'camera', ok: true, status: 'idle' });
  });

  it('a device factory that fails leaves a running service with the QR queue only', async () => {
    const pinHash = await hashPin(PIN, TEST_SCRYPT);
    fixture = await startServiceFixture({
      overrides: { staff: { pinHash } },
      service: { devices: () => Promise.reject(new Error('bluetooth exploded')) },
    });
    const f = fixture;
    // Without Bluetooth nothing can be verified: Needs staff naming the cause, not Ready.
    const state = await f.waitState((s) => s.view.phase === 'cannot_verify', 10_000, 'cannot_verify');
    expect(state.view.error).toMatchObject({ code: 'ble_unavailable', retryable: false });
    expect(state.view.devices.nfc).toEqual({ usable: false, reason: 'not_configured' });
    expect(state.view.devices.qr.usable).toBe(true);
    await call(f, 'unlock', { pin: PIN });
    const diagnostics = (await call(f, 'getDiagnostics', {})) as { events: { event: string }[] };
    expect(diagnostics.events.map((e) => e.event)).toContain('devices_failed');
  });
});
