import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  applyUpdate,
  backendUrlTiedToKey,
  lockedKeys,
  lockSources,
  SettingsStore,
  settingKeyFor,
} from '../../../src/service/settings-store.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function dir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'mdl-kiosk-settings-'));
  dirs.push(d);
  return d;
}

describe('SettingsStore', () => {
  it('writes settings.json atomically with mode 0600 and reads it back', async () => {
    const d = await dir();
    const store = new SettingsStore(d);
    expect((await store.load()).problems).toEqual([]);
    await store.saveSettings({ profile: 'identity', timeouts: { resultDisplayMs: 20_000 } });
    expect((await stat(store.path)).mode & 0o777).toBe(0o600);
    const again = await new SettingsStore(d).load();
    expect(again.settings).toEqual({ profile: 'identity', timeouts: { resultDisplayMs: 20_000 } });
    expect(again.problems).toEqual([]);
  });

  it('names the bad key of an invalid file, and keeps the other section', async () => {
    const d = await dir();
    await writeFile(join(d, 'settings.json'), JSON.stringify({ version: 1, settings: { bleRoles: 'sideways' }, staff: { failures: 2 } }));
    const loaded = await new SettingsStore(d).load();
    expect(loaded.problems).toEqual([expect.stringContaining('settings.bleRoles')]);
    expect(loaded.staff.failures).toBe(2);
    await writeFile(join(d, 'settings.json'), '{not json');
    expect((await new SettingsStore(d).load()).problems).toEqual([expect.stringContaining('not valid JSON')]);
    await writeFile(join(d, 'settings.json'), JSON.stringify({ version: 1, settings: { surprise: true }, staff: {} }));
    expect((await new SettingsStore(d).load()).problems[0]).toMatch(/settings: Unrecognized key/);
  });
});

describe('settings map', () => {
  it('locks keys set by the environment, the command line or the demo backend', () => {
    expect(lockedKeys({ env: {} })).toEqual([]);
    // A key from a locked source locks the backend address too: the key belongs to its backend.
    expect(lockedKeys({ env: { MDL_KIOSK_API_KEY_FILE: '/run/key', MDL_KIOSK_PROFILE: 'identity' } })).toEqual([
      'backendUrl',
      'apiKey',
      'profile',
    ]);
    expect(lockSources({ env: { MDL_KIOSK_API_KEY: 'k' }, managed: { backend: { baseUrl: 'https://a.example' } } }).get('backendUrl')).toBe(
      'managed',
    );
    expect(lockSources({ env: { MDL_KIOSK_API_KEY: 'k' } }).get('backendUrl')).toBe('environment');
    expect(backendUrlTiedToKey({ env: { MDL_KIOSK_API_KEY: 'k' } })).toBe(true);
    expect(backendUrlTiedToKey({ env: { MDL_KIOSK_API_KEY: 'k', MDL_KIOSK_BACKEND_URL: 'https://a.example' } })).toBe(false);
    expect(backendUrlTiedToKey({ env: {} })).toBe(false);
    expect(lockedKeys({ env: {}, overrides: { ble: { roles: 'none' }, timeouts: { errorDisplayMs: 9_000 } } })).toEqual([
      'bleRoles',
      'timeouts.errorDisplayMs',
    ]);
    expect(lockedKeys({ env: {}, backendOverride: true })).toEqual(['backendUrl', 'apiKey']);
  });

  it('applies an update: null and blank clear a key, partial timeouts merge', () => {
    const before = { backendUrl: 'https://a.example', pcscReader: 'ACS', timeouts: { resultDisplayMs: 20_000 } };
    expect(applyUpdate(before, { backendUrl: null, pcscReader: '  ', timeouts: { errorDisplayMs: 5_000 } })).toEqual({
      timeouts: { resultDisplayMs: 20_000, errorDisplayMs: 5_000 },
    });
    expect(applyUpdate({}, { cameraDeviceId: 'cam-1', defaultLanguage: 'fr', bleRoles: 'central' })).toEqual({
      cameraDeviceId: 'cam-1',
      defaultLanguage: 'fr',
      bleRoles: 'central',
    });
  });

  it('maps configuration paths to settings keys', () => {
    expect(settingKeyFor(['backend', 'baseUrl'])).toBe('backendUrl');
    expect(settingKeyFor(['timeouts', 'removePhoneMs'])).toBe('timeouts.removePhoneMs');
    expect(settingKeyFor(['session', 'minRemainingToStartMs'])).toBe('session.minRemainingToStartMs');
  });
});
