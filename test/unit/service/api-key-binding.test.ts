/**
 * The API key is bound to the backend origin it was configured with, whatever its source: the settings
 * screen (the secret store), the config file (`backend.apiKey`, `backend.apiKeyFile`), the environment
 * (`MDL_KIOSK_API_KEY`, `MDL_KIOSK_API_KEY_FILE`), the command line, the managed file and the test setup.
 * A "collector" server on loopback stands for whoever would like the fleet's key: it records every request,
 * and no request may ever carry the key configured for the real backend (the real-crypto mock backend).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dispatchIntent, type SaveResult } from '../../../src/common/kiosk-api.js';
import {
  decodeStoredApiKey,
  encodeMachineKeyOrigin,
  encodeStoredApiKey,
  readStoredApiKey,
  rememberedMachineKeyOrigin,
} from '../../../src/service/api-key-binding.js';
import { MACHINE_KEY_ORIGIN_SECRET, MemorySecretStore } from '../../../src/service/secret-store.js';
import { hashPin } from '../../../src/service/staff-pin.js';
import { startRecordingServer, type RecordingServer } from '../../support/recording-server.js';
import { API_KEY, startServiceFixture, TEST_SCRYPT, type ServiceFixture, type ServiceFixtureOptions } from './service-fixture.js';

const PIN = '246810';

let fixture: ServiceFixture | undefined;
let collector: RecordingServer;
let dir: string;

beforeEach(async () => {
  collector = await startRecordingServer();
  dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-key-binding-'));
});

afterEach(async () => {
  await fixture?.stop();
  fixture = undefined;
  await collector.stop();
  await rm(dir, { recursive: true, force: true });
});

async function start(options: ServiceFixtureOptions): Promise<ServiceFixture> {
  const pinHash = await hashPin(PIN, TEST_SCRYPT);
  fixture = await startServiceFixture({ backend: 'none', ...options, overrides: { staff: { pinHash }, ...options.overrides } });
  return fixture;
}

function call(f: ServiceFixture, intent: string, args: unknown): Promise<unknown> {
  return dispatchIntent(f.service, intent, args, () => f.service.staffUnlocked());
}

async function save(f: ServiceFixture, update: unknown): Promise<SaveResult> {
  return (await call(f, 'saveSettings', update)) as SaveResult;
}

async function keyFile(name: string, key = API_KEY): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `${key}\n`, { mode: 0o600 });
  return path;
}

/** The kiosk still works against its own backend, and the collector never saw the fleet key. */
async function stillOnItsOwnBackend(f: ServiceFixture): Promise<void> {
  await f.service.settled();
  await f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready on its own backend');
  expect(f.service.state().backendOrigin).toBe(new URL(f.backend.url).origin);
  expect(collector.authorizations.filter((a) => a.includes(API_KEY))).toEqual([]);
}

describe('a URL change without a key for the new origin is refused, for every key source', () => {
  it('the key saved on the settings screen', async () => {
    const f = await start({ secrets: new MemorySecretStore() });
    await call(f, 'unlock', { pin: PIN });
    expect(await save(f, { backendUrl: f.backend.url, apiKey: API_KEY })).toMatchObject({ ok: true });
    const moved = await save(f, { backendUrl: collector.url });
    expect(moved).toMatchObject({ ok: false, errors: [{ key: 'apiKey' }] });
    expect(JSON.stringify(moved)).toMatch(/entered for http:\/\/127\.0\.0\.1:\d+.*enter the API key for this backend/);
    expect(JSON.stringify(moved)).not.toContain(API_KEY);
    await stillOnItsOwnBackend(f);
  });

  for (const [name, config] of [
    ['backend.apiKey in the config file', (url: string) => ({ backend: { baseUrl: url, apiKey: API_KEY } })],
    ['backend.apiKeyFile in the config file', (url: string) => ({ backend: { baseUrl: url, apiKeyFile: join(dir, 'config-key.txt') } })],
  ] as const) {
    it(`${name}: refused without a key; accepted with a key for the new backend, which gets only that key`, async () => {
      await keyFile('config-key.txt');
      const f = await start({ config });
      await f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready on the configured backend');
      await call(f, 'unlock', { pin: PIN });
      const moved = await save(f, { backendUrl: collector.url });
      expect(moved).toMatchObject({ ok: false, errors: [{ key: 'apiKey' }] });
      expect(JSON.stringify(moved)).toMatch(/the API key from the configuration file is only sent to http:\/\/127\.0\.0\.1:\d+/);
      await stillOnItsOwnBackend(f);

      // With its own key the new backend is accepted: the collector then gets that key and never the fleet's.
      expect(await save(f, { backendUrl: collector.url, apiKey: 'collector-own-key' })).toMatchObject({ ok: true });
      await f.service.settled();
      await f.waitState((s) => s.view.phase === 'offline', 15_000, 'offline against the collector');
      expect(collector.authorizations.length).toBeGreaterThan(0);
      expect(new Set(collector.authorizations)).toEqual(new Set(['Bearer collector-own-key']));
      // Clearing the stored key would make the config file's key surface at the collector: refused.
      const cleared = await save(f, { clearApiKey: true });
      expect(cleared).toMatchObject({ ok: false, errors: [{ key: 'apiKey' }] });
      expect(collector.authorizations.filter((a) => a.includes(API_KEY))).toEqual([]);
    });
  }

  for (const [name, options, sourceName] of [
    ['MDL_KIOSK_API_KEY', { env: { MDL_KIOSK_API_KEY: API_KEY } }, 'the environment'],
    ['MDL_KIOSK_API_KEY_FILE', { envKeyFile: true }, 'the environment'],
    ['the command line', { overrides: { backend: { apiKeyFile: '' } } }, 'the command line'],
    ['the managed file', { managedKeyFile: true }, 'the managed configuration file'],
  ] as const) {
    it(`${name}: the key's source locks the backend address too (with the URL from the config file)`, async () => {
      const source = sourceName;
      const file = await keyFile('env-key.txt');
      const managed =
        'managedKeyFile' in options ? { path: join(dir, 'managed.json'), layer: { backend: { apiKeyFile: file } } } : undefined;
      const f = await start({
        config: (url) => ({ backend: { baseUrl: url } }),
        ...('env' in options ? { env: options.env } : {}),
        ...('envKeyFile' in options ? { env: { MDL_KIOSK_API_KEY_FILE: file } } : {}),
        ...('overrides' in options ? { overrides: { backend: { apiKeyFile: file } } } : {}),
        ...(managed ? { service: { managed } } : {}),
      });
      await f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready on the configured backend');
      await call(f, 'unlock', { pin: PIN });
      const settings = (await call(f, 'getSettings', {})) as { locked: string[] };
      expect(settings.locked).toContain('backendUrl');
      const moved = await save(f, { backendUrl: collector.url });
      expect(moved).toMatchObject({ ok: false, errors: [{ key: 'backendUrl' }] });
      expect(JSON.stringify(moved)).toContain(`belongs to the API key set by ${source}`);
      await stillOnItsOwnBackend(f);
    });
  }

  it("the test setup (the QA demo's embedded backend): address and key locked together", async () => {
    const f = await start({ backend: 'override' });
    await f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready');
    await call(f, 'unlock', { pin: PIN });
    expect(await save(f, { backendUrl: collector.url })).toMatchObject({ ok: false, errors: [{ key: 'backendUrl' }] });
    await stillOnItsOwnBackend(f);
  });
});

describe('at start, a key never goes to an address it was not configured with', () => {
  it('a stored key whose backend address was changed in settings.json by hand: config_error, nothing sent', async () => {
    const secrets = new MemorySecretStore();
    await secrets.set('backend.apiKey', encodeStoredApiKey({ key: API_KEY, origin: 'https://verifier.example' }));
    await writeFile(join(dir, 'settings.json'), JSON.stringify({ version: 1, settings: { backendUrl: collector.url }, staff: {} }));
    const f = await start({ secrets, dataDir: dir });
    const state = await f.waitState((s) => s.view.phase === 'config_error', 10_000, 'config_error');
    expect(state.view.error?.detail).toMatch(
      /entered for https:\/\/verifier\.example, and the backend address is now http:\/\/127\.0\.0\.1/,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(collector.authorizations).toEqual([]);
  });

  it("a config-file key with the settings screen's address over the config file's: config_error, nothing sent", async () => {
    await writeFile(join(dir, 'settings.json'), JSON.stringify({ version: 1, settings: { backendUrl: collector.url }, staff: {} }));
    const f = await start({ dataDir: dir, config: (url) => ({ backend: { baseUrl: url, apiKey: API_KEY } }) });
    const state = await f.waitState((s) => s.view.phase === 'config_error', 10_000, 'config_error');
    expect(state.view.error?.detail).toMatch(/the API key from the configuration file is only sent to/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(collector.authorizations).toEqual([]);
  });

  it('a key without an address of its own, whose first backend cannot be read from the secret store: not sent to the address settings.json gives, config_error', async () => {
    // A binding that cannot be read must not fall back to whatever settings.json says now.
    class UnreadableBinding extends MemorySecretStore {
      override get(name: string): Promise<string | undefined> {
        return name === MACHINE_KEY_ORIGIN_SECRET ? Promise.reject(new Error('keyring locked')) : super.get(name);
      }
    }
    await writeFile(join(dir, 'settings.json'), JSON.stringify({ version: 1, settings: { backendUrl: collector.url }, staff: {} }));
    const f = await start({ secrets: new UnreadableBinding(), dataDir: dir, env: { MDL_KIOSK_API_KEY: API_KEY } });
    const state = await f.waitState((s) => s.view.phase === 'config_error', 10_000, 'config_error');
    expect(state.view.error?.detail).toMatch(
      /the API key from the environment comes with no backend address of its own, so it is not sent to http:\/\/127\.0\.0\.1/,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(collector.authorizations).toEqual([]);
  });

  it('a key without an address of its own is bound to the address of its first start, remembered (by fingerprint, not the key) for the next', async () => {
    const secrets = new MemorySecretStore();
    // Here the recording server plays the first backend (the host test restarts against another one).
    await writeFile(join(dir, 'settings.json'), JSON.stringify({ version: 1, settings: { backendUrl: collector.url }, staff: {} }));
    const f = await start({ secrets, dataDir: dir, env: { MDL_KIOSK_API_KEY: API_KEY } });
    await f.waitState((s) => s.view.phase === 'offline', 15_000, 'offline against its first backend');
    const stored = await secrets.get(MACHINE_KEY_ORIGIN_SECRET);
    expect(stored).toBeDefined();
    expect(stored).not.toContain(API_KEY);
    expect(rememberedMachineKeyOrigin(stored, API_KEY)).toBe(new URL(collector.url).origin);
  });

  it('a key stored before keys were bound is bound to the backend it is used with, and stored again with it', async () => {
    const secrets = new MemorySecretStore();
    await secrets.set('backend.apiKey', API_KEY);
    const f = await start({ secrets, dataDir: dir, config: (url) => ({ backend: { baseUrl: url } }) });
    await f.waitState((s) => s.view.phase === 'ready', 15_000, 'ready');
    expect(await readStoredApiKey(secrets)).toEqual({ key: API_KEY, origin: new URL(f.backend.url).origin });
    await call(f, 'unlock', { pin: PIN });
    expect(await save(f, { backendUrl: collector.url })).toMatchObject({ ok: false });
    await stillOnItsOwnBackend(f);
  });
});

describe('the stored form', () => {
  it('round-trips key and origin; anything else is a key stored before keys were bound', () => {
    expect(decodeStoredApiKey(encodeStoredApiKey({ key: 'k-1', origin: 'https://a.example' }))).toEqual({
      key: 'k-1',
      origin: 'https://a.example',
    });
    expect(decodeStoredApiKey(encodeStoredApiKey({ key: 'k-1', origin: null }))).toEqual({ key: 'k-1', origin: null });
    expect(decodeStoredApiKey('plain-key')).toEqual({ key: 'plain-key' });
    expect(decodeStoredApiKey('{not-json')).toEqual({ key: '{not-json' });
    expect(decodeStoredApiKey('{"v":1,"key":"has space","origin":null}')).toEqual({ key: '{"v":1,"key":"has space","origin":null}' });
  });

  it('the remembered origin of a key without an address of its own: for that very key only, and never holding the key', () => {
    const text = encodeMachineKeyOrigin('fleet-k-1', 'https://a.example');
    expect(text).not.toContain('fleet-k-1');
    expect(rememberedMachineKeyOrigin(text, 'fleet-k-1')).toBe('https://a.example');
    expect(rememberedMachineKeyOrigin(text, 'fleet-k-2')).toBeUndefined(); // a new key is bound afresh
    expect(rememberedMachineKeyOrigin(undefined, 'fleet-k-1')).toBeUndefined();
    expect(rememberedMachineKeyOrigin('{not-json', 'fleet-k-1')).toBeUndefined();
    expect(rememberedMachineKeyOrigin('{"v":1,"fingerprint":"x","origin":"https://a.example","extra":1}', 'fleet-k-1')).toBeUndefined();
  });
});
