/**
 * The Electron app's secret store over `safeStorage` (a faithful fake: AES-GCM under a per-"machine" key):
 * values round-trip and the plain text never reaches the disk; an unavailable OS store, Linux's
 * `basic_text` backend and a ciphertext from another machine are refused with errors that say what to do;
 * a plain-text `secrets.json` is moved in once and deleted.
 */
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ENCRYPTED_SECRETS_FILE, LEGACY_SECRETS_FILE, SafeStorageSecretStore } from '../../../src/main/safe-storage-secret-store.js';
import { FileSecretStore, SecretStoreError } from '../../../src/service/secret-store.js';
import { FakeSafeStorage } from '../service/fake-safe-storage.js';

const KEY = 'sk_live_a1B2c3D4e5F6g7H8';
const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-safe-storage-'));
  dirs.push(dir);
  return dir;
}

function store(
  dir: string,
  safeStorage = new FakeSafeStorage(),
  options: { platform?: NodeJS.Platform; allowBasicText?: boolean } = {},
): SafeStorageSecretStore {
  return new SafeStorageSecretStore({
    safeStorage,
    dataDir: dir,
    platform: options.platform ?? 'linux',
    allowBasicText: options.allowBasicText ?? false,
  });
}

/** Every byte under the data directory, as one string (latin1 keeps bytes as they are). */
async function everything(dir: string): Promise<string> {
  let text = '';
  for (const name of await readdir(dir)) text += `${name}\n${await readFile(join(dir, name), 'latin1')}\n`;
  return text;
}

function expectNoPlainText(text: string, secret: string): void {
  expect(text).not.toContain(secret);
  expect(text).not.toContain(Buffer.from(secret).toString('base64').slice(0, 20));
  expect(text).not.toContain(Buffer.from(secret).toString('hex').slice(0, 20));
}

describe('SafeStorageSecretStore', () => {
  it('round-trips values encrypted in secrets.enc.json (0600); the plain text is nowhere on disk', async () => {
    const dir = await dataDir();
    const s = store(dir);
    expect(s.protection).toBe('os-encrypted');
    expect(await s.get('backend.apiKey')).toBeUndefined();
    await s.set('backend.apiKey', KEY);
    expect(await s.get('backend.apiKey')).toBe(KEY);
    expect(await readdir(dir)).toEqual([ENCRYPTED_SECRETS_FILE]);
    if (process.platform !== 'win32') expect((await stat(s.path)).mode & 0o777).toBe(0o600);
    const file = JSON.parse(await readFile(s.path, 'utf8')) as { version: number; encryption: string; secrets: Record<string, string> };
    expect(file.version).toBe(1);
    expect(file.encryption).toBe('electron-safeStorage');
    expect(Object.keys(file.secrets)).toEqual(['backend.apiKey']);
    expectNoPlainText(await everything(dir), KEY);
    // Another instance (the next start) on the same machine reads it.
    expect(await store(dir).get('backend.apiKey')).toBe(KEY);
    await s.delete('backend.apiKey');
    expect(await s.get('backend.apiKey')).toBeUndefined();
  });

  it('runs writes one after another: two quick saves keep both values', async () => {
    const dir = await dataDir();
    const s = store(dir);
    await Promise.all([s.set('a', 'first-value'), s.set('b', 'second-value'), s.set('a', 'third-value')]);
    expect(await s.get('a')).toBe('third-value');
    expect(await s.get('b')).toBe('second-value');
  });

  it('refuses everything but delete when the OS store is not available, saying so', async () => {
    const dir = await dataDir();
    const safeStorage = new FakeSafeStorage();
    await store(dir, safeStorage).set('backend.apiKey', KEY);
    safeStorage.available = false;
    const s = store(dir, safeStorage);
    await expect(s.get('backend.apiKey')).rejects.toThrow(/^the operating system's secret store is not available: .*keyring/);
    await expect(s.set('backend.apiKey', 'new')).rejects.toBeInstanceOf(SecretStoreError);
    await s.delete('backend.apiKey');
    safeStorage.available = true;
    expect(await s.get('backend.apiKey')).toBeUndefined();
    // A safeStorage that throws (called before the app is ready) is the same refusal.
    const throwing = new FakeSafeStorage();
    throwing.failure = new Error('safeStorage cannot be used before app is ready');
    await expect(store(dir, throwing).get('x')).rejects.toThrow(/not available: safeStorage cannot be used before app is ready/);
  });

  it('on Linux refuses the basic_text and unknown backends unless the managed file allows basic_text', async () => {
    const dir = await dataDir();
    for (const backend of ['basic_text', 'unknown'] as const) {
      const safeStorage = new FakeSafeStorage();
      safeStorage.backend = backend;
      const refused = store(dir, safeStorage);
      await expect(refused.set('backend.apiKey', KEY)).rejects.toThrow(
        new RegExp(`'${backend}' backend on Linux.*app\\.allowBasicTextSecrets: true in the managed configuration file`),
      );
      await expect(refused.get('backend.apiKey')).rejects.toBeInstanceOf(SecretStoreError);
      expect(safeStorage.encryptCalls).toBe(0);
      const allowed = store(dir, safeStorage, { allowBasicText: true });
      await allowed.set('backend.apiKey', KEY);
      expect(await allowed.get('backend.apiKey')).toBe(KEY);
      // Allowed is not protected: diagnostics must not say "encrypted by the operating system".
      expect(allowed.protection).toBe('basic-text');
    }
    expect(store(dir).protection).toBe('os-encrypted');
    // Elsewhere the backend question does not exist (DPAPI, Keychain).
    for (const platform of ['win32', 'darwin'] as const) {
      const safeStorage = new FakeSafeStorage();
      safeStorage.backend = 'basic_text';
      await store(dir, safeStorage, { platform }).set('k', 'v');
      expect(store(dir, safeStorage, { platform }).protection).toBe('os-encrypted');
    }
    // A real keyring backend is fine.
    for (const backend of ['gnome_libsecret', 'kwallet5'] as const) {
      const safeStorage = new FakeSafeStorage();
      safeStorage.backend = backend;
      await store(dir, safeStorage).set('k', 'v');
    }
  });

  it('a value from another machine (or a reset keyring) is a clear error; saving a new value replaces it', async () => {
    const dir = await dataDir();
    await store(dir, new FakeSafeStorage('old-machine')).set('backend.apiKey', KEY);
    const here = store(dir, new FakeSafeStorage('new-machine'));
    const error = await here.get('backend.apiKey').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretStoreError);
    expect((error as Error).message).toBe(
      'the stored secret backend.apiKey cannot be decrypted (it was encrypted for another user or machine, or the OS keyring was reset); save the API key again on the settings screen to replace it',
    );
    await here.set('backend.apiKey', 'replacement-key');
    expect(await here.get('backend.apiKey')).toBe('replacement-key');
  });

  it('a damaged file is named (never its content) and replaced by the next save', async () => {
    const dir = await dataDir();
    const s = store(dir);
    await writeFile(s.path, `{"version":1,"encryption":"electron-safeStorage","secrets":{"backend.apiKey":"not base64 ${KEY}"}}`);
    const error = (await s.get('backend.apiKey').catch((e: unknown) => e)) as Error;
    expect(error.message).toBe(`${s.path}: secrets.backend.apiKey: unexpected content; save the API key again to replace it`);
    await writeFile(s.path, `{ oops ${KEY}`);
    const notJson = (await s.get('backend.apiKey').catch((e: unknown) => e)) as Error;
    expect(notJson.message).toMatch(/is not valid JSON; save the API key again/);
    expect(notJson.message).not.toContain(KEY);
    await s.set('backend.apiKey', 'fresh');
    expect(await s.get('backend.apiKey')).toBe('fresh');
  });

  it('refuses an oversized value', async () => {
    await expect(store(await dataDir()).set('k', 'x'.repeat(8_193))).rejects.toThrow(/too long/);
  });
});

describe('moving a plain-text secrets.json in', () => {
  it('encrypts its values into secrets.enc.json once, and deletes the plain text', async () => {
    const dir = await dataDir();
    await new FileSecretStore(dir).set('backend.apiKey', KEY);
    expect(await readdir(dir)).toEqual([LEGACY_SECRETS_FILE]);
    const s = store(dir);
    expect(await s.get('backend.apiKey')).toBe(KEY);
    expect(await readdir(dir)).toEqual([ENCRYPTED_SECRETS_FILE]);
    expectNoPlainText(await everything(dir), KEY);
    expect(await store(dir).get('backend.apiKey')).toBe(KEY);
  });

  it('a value already encrypted wins over the old file', async () => {
    const dir = await dataDir();
    await store(dir).set('backend.apiKey', 'current-key');
    await new FileSecretStore(dir).set('backend.apiKey', 'stale-key');
    expect(await store(dir).get('backend.apiKey')).toBe('current-key');
    expect(await readdir(dir)).toEqual([ENCRYPTED_SECRETS_FILE]);
  });

  it('leaves the plain text alone while the OS store is unavailable (nothing lost)', async () => {
    const dir = await dataDir();
    await new FileSecretStore(dir).set('backend.apiKey', KEY);
    const safeStorage = new FakeSafeStorage();
    safeStorage.available = false;
    await expect(store(dir, safeStorage).get('backend.apiKey')).rejects.toBeInstanceOf(SecretStoreError);
    expect(await readdir(dir)).toEqual([LEGACY_SECRETS_FILE]);
    safeStorage.available = true;
    expect(await store(dir, safeStorage).get('backend.apiKey')).toBe(KEY);
    expect(await readdir(dir)).toEqual([ENCRYPTED_SECRETS_FILE]);
  });

  it('an unreadable old file is named when the value is missing, and does not block a new key', async () => {
    const dir = await dataDir();
    await writeFile(join(dir, LEGACY_SECRETS_FILE), `{"version": 2, "secrets": {"backend.apiKey": "${KEY}"}}`);
    const s = store(dir);
    const error = (await s.get('backend.apiKey').catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(
      /^the old plain-text secret file cannot be moved into the encrypted store: .*secrets\.json: version: unexpected content/,
    );
    expect(error.message).not.toContain(KEY);
    await s.set('backend.apiKey', 'new-key');
    expect(await s.get('backend.apiKey')).toBe('new-key');
  });
});
