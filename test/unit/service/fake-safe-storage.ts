/**
 * A stand-in for Electron's `safeStorage` (the real one needs the Electron binary): AES-256-GCM under a key
 * derived from a "machine" name, so a value encrypted on one machine (or before a keyring reset) fails to
 * decrypt on another, as the real one does. Availability and the Linux backend are settable.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { SafeStorageLike } from '../../../src/main/safe-storage-secret-store.js';

type Backend = ReturnType<SafeStorageLike['getSelectedStorageBackend']>;

export class FakeSafeStorage implements SafeStorageLike {
  available = true;
  /** Throws from isEncryptionAvailable, as safeStorage does when used too early. */
  failure: Error | undefined;
  backend: Backend = 'gnome_libsecret';
  encryptCalls = 0;

  constructor(public machine = 'kiosk-01') {}

  private key(): Buffer {
    return createHash('sha256').update(`fake-os-key:${this.machine}`).digest();
  }

  isEncryptionAvailable(): boolean {
    if (this.failure) throw this.failure;
    return this.available;
  }

  getSelectedStorageBackend(): Backend {
    return this.backend;
  }

  encryptString(plainText: string): Buffer {
    if (!this.available) throw new Error('Encryption is not available.');
    this.encryptCalls++;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key(), iv);
    const body = Buffer.concat([cipher.update(plainText, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from('v10'), iv, cipher.getAuthTag(), body]);
  }

  decryptString(encrypted: Buffer): string {
    if (!this.available) throw new Error('Decryption is not available.');
    try {
      if (encrypted.subarray(0, 3).toString() !== 'v10') throw new Error('bad prefix');
      const decipher = createDecipheriv('aes-256-gcm', this.key(), encrypted.subarray(3, 15));
      decipher.setAuthTag(encrypted.subarray(15, 31));
      return Buffer.concat([decipher.update(encrypted.subarray(31)), decipher.final()]).toString('utf8');
    } catch {
      throw new Error('Error while decrypting the ciphertext provided to safeStorage.decryptString.');
    }
  }
}
