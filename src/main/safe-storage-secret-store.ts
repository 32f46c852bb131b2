/**
 * The Electron app's secret store: values encrypted with Electron's `safeStorage` (DPAPI on Windows, the
 * Keychain on macOS, libsecret / KWallet on Linux; electronjs.org/docs/latest/api/safe-storage) and kept,
 * base64, in `<data dir>/secrets.enc.json` (0600, written atomically, one write at a time). The plain text
 * of a secret never reaches the disk.
 *
 * Refusals, each a {@link SecretStoreError} that says what to do (the service shows it to staff and keeps
 * verifying when the key comes from elsewhere):
 * - `isEncryptionAvailable()` is false: no OS secret store for this user (or the app is not ready yet).
 * - Linux picked the `basic_text` backend (no keyring found: secrets would only be obfuscated with a key
 *   baked into Chromium) or `unknown` — unless the managed file sets `app.allowBasicTextSecrets`.
 * - A stored value cannot be decrypted (another user or machine, a reset keyring).
 *
 * A plain-text `secrets.json` left by the browser host's file store is moved in once: its values are
 * encrypted into this file and the plain-text file is deleted.
 *
 * Uses the synchronous `safeStorage` calls: Electron 45 marks them deprecated in favour of the async
 * variants, but they are the ones whose behaviour (and the `basic_text` check) is documented per OS today.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { SafeStorage } from 'electron';
import { z } from 'zod';
import { readFileIfExists, writeFileAtomic } from '../service/atomic-file.js';
import { readPlainSecretFile, SecretStoreError, type SecretStore } from '../service/secret-store.js';
import { errorText } from '../common/error-text.js';

export type SafeStorageLike = Pick<SafeStorage, 'isEncryptionAvailable' | 'encryptString' | 'decryptString' | 'getSelectedStorageBackend'>;

const MAX_SECRET_CHARS = 8_192;
/** base64 of a ciphertext a little longer than its plain text (the OS adds a header, an IV and a tag). */
const MAX_CIPHERTEXT_CHARS = 16_384;
const EncryptedSecretFile = z
  .object({
    version: z.literal(1),
    /** Which encryption wrote the values (a reader must not guess). */
    encryption: z.literal('electron-safeStorage'),
    secrets: z.record(z.string().min(1).max(100), z.base64().max(MAX_CIPHERTEXT_CHARS)),
  })
  .strict();

export const ENCRYPTED_SECRETS_FILE = 'secrets.enc.json';
/** The browser host's plain-text file store (src/service/secret-store.ts). */
export const LEGACY_SECRETS_FILE = 'secrets.json';

export class SafeStorageSecretStore implements SecretStore {
  readonly path: string;
  readonly legacyPath: string;
  private readonly safeStorage: SafeStorageLike;
  private readonly platform: NodeJS.Platform;
  private readonly allowBasicText: boolean;
  /** Reads wait for writes; writes run one after another, so two quick saves cannot lose one another. */
  private queue: Promise<unknown> = Promise.resolve();
  private migrated = false;

  constructor(options: { safeStorage: SafeStorageLike; dataDir: string; platform: NodeJS.Platform; allowBasicText: boolean }) {
    this.safeStorage = options.safeStorage;
    this.platform = options.platform;
    this.allowBasicText = options.allowBasicText;
    this.path = join(options.dataDir, ENCRYPTED_SECRETS_FILE);
    this.legacyPath = join(options.dataDir, LEGACY_SECRETS_FILE);
  }

  /**
   * `basic-text` when Linux fell back to Electron's obfuscation with a fixed key (the managed file allowed
   * it): staff must not read "encrypted by the operating system" then.
   */
  get protection(): 'os-encrypted' | 'basic-text' {
    if (this.platform !== 'linux') return 'os-encrypted';
    try {
      const backend = this.safeStorage.getSelectedStorageBackend();
      return backend === 'basic_text' || backend === 'unknown' ? 'basic-text' : 'os-encrypted';
    } catch {
      // Before the app is ready the backend is not chosen yet; what will be used is not known.
      return 'os-encrypted';
    }
  }

  /** Throws, with what to do about it, when values cannot be protected by the OS here. */
  private assertUsable(): void {
    let available: boolean;
    try {
      // eslint-disable-next-line @typescript-eslint/no-deprecated -- see the module comment
      available = this.safeStorage.isEncryptionAvailable();
    } catch (e) {
      throw new SecretStoreError(`the operating system's secret store is not available: ${errorText(e)}`.slice(0, 500));
    }
    if (!available) {
      throw new SecretStoreError(
        "the operating system's secret store is not available: Electron safeStorage reports no encryption for this user " +
          '(Linux: start a keyring such as gnome-keyring or KWallet in the kiosk session; macOS: unlock the login Keychain)',
      );
    }
    if (this.platform !== 'linux') return;
    const backend = this.safeStorage.getSelectedStorageBackend();
    if ((backend === 'basic_text' || backend === 'unknown') && !this.allowBasicText) {
      throw new SecretStoreError(
        `the operating system's secret store is not protected: Electron chose the '${backend}' backend on Linux, which only obfuscates ` +
          'secrets with a fixed key. Run a keyring (gnome-keyring or KWallet) in the kiosk session, or accept the risk with ' +
          'app.allowBasicTextSecrets: true in the managed configuration file',
      );
    }
  }

  private async readEncrypted(): Promise<Record<string, string>> {
    const text = await readFileIfExists(this.path);
    if (text === undefined) return {};
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new SecretStoreError(`${this.path} is not valid JSON; save the API key again to replace it`);
    }
    const parsed = EncryptedSecretFile.safeParse(value);
    // Names the bad key, never a value.
    if (!parsed.success) {
      throw new SecretStoreError(
        `${this.path}: ${parsed.error.issues.map((i) => i.path.join('.') || '(root)').join(', ')}: unexpected content; save the API key again to replace it`,
      );
    }
    return parsed.data.secrets;
  }

  private async writeEncrypted(secrets: Record<string, string>): Promise<void> {
    await writeFileAtomic(this.path, `${JSON.stringify({ version: 1, encryption: 'electron-safeStorage', secrets }, null, 2)}\n`);
  }

  private encrypt(value: string): string {
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- see the module comment
    return this.safeStorage.encryptString(value).toString('base64');
  }

  /**
   * Moves a plain-text `secrets.json` in, once: encrypted values already here win, and the plain text is
   * deleted only after the encrypted file is on disk. Runs only when the OS store is usable (else the
   * plain text stays where it is, and nothing is lost). Returns why an unreadable old file was left.
   */
  private async migrateLegacy(): Promise<string | undefined> {
    if (this.migrated) return undefined;
    let legacy: Record<string, string> | undefined;
    try {
      legacy = await readPlainSecretFile(this.legacyPath);
    } catch (e) {
      return `the old plain-text secret file cannot be moved into the encrypted store: ${errorText(e)}; save the API key again, then delete that file`;
    }
    if (legacy !== undefined) {
      const secrets = await this.readEncrypted();
      for (const [name, value] of Object.entries(legacy)) {
        if (!Object.hasOwn(secrets, name)) secrets[name] = this.encrypt(value);
      }
      await this.writeEncrypted(secrets);
      await rm(this.legacyPath, { force: true });
    }
    this.migrated = true;
    return undefined;
  }

  private run<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  get(name: string): Promise<string | undefined> {
    return this.run(async () => {
      this.assertUsable();
      const legacyProblem = await this.migrateLegacy();
      const stored = (await this.readEncrypted())[name];
      if (stored === undefined) {
        if (legacyProblem !== undefined) throw new SecretStoreError(legacyProblem);
        return undefined;
      }
      try {
        // eslint-disable-next-line @typescript-eslint/no-deprecated -- see the module comment
        return this.safeStorage.decryptString(Buffer.from(stored, 'base64'));
      } catch {
        throw new SecretStoreError(
          `the stored secret ${name} cannot be decrypted (it was encrypted for another user or machine, or the OS keyring was reset); save the API key again on the settings screen to replace it`,
        );
      }
    });
  }

  set(name: string, value: string): Promise<void> {
    if (value.length > MAX_SECRET_CHARS) return Promise.reject(new SecretStoreError(`secret ${name} is too long`));
    return this.run(async () => {
      this.assertUsable();
      // An old file that cannot be moved must not block a new key (nor can an unreadable encrypted file).
      await this.migrateLegacy().catch(() => undefined);
      let secrets: Record<string, string>;
      try {
        secrets = await this.readEncrypted();
      } catch {
        // An unreadable file is replaced: the new value is what staff want, and the old ones were lost anyway.
        secrets = {};
      }
      secrets[name] = this.encrypt(value);
      await this.writeEncrypted(secrets);
    });
  }

  delete(name: string): Promise<void> {
    // Deleting needs no encryption: it works even while the OS store is unavailable.
    return this.run(async () => {
      const secrets: Record<string, string> = await this.readEncrypted().catch(() => ({}));
      if (!Object.hasOwn(secrets, name)) return;
      // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- a record keyed by secret name
      delete secrets[name];
      await this.writeEncrypted(secrets);
    });
  }
}
