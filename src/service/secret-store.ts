/**
 * Where the kiosk keeps secrets (the backend API key). A port, so that each host plugs in the best
 * protection it has: the Electron main process wraps `safeStorage` (OS-encrypted); the browser host uses
 * {@link FileSecretStore}, protected by file permissions only (0600 in a 0700 directory owned by the
 * kiosk's user); tests use {@link MemorySecretStore}. Values are never logged and never sent to a screen.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { readFileIfExists, writeFileAtomic } from './atomic-file.js';

export interface SecretStore {
  get(name: string): Promise<string | undefined>;
  set(name: string, value: string): Promise<void>;
  delete(name: string): Promise<void>;
  /** How the values are protected at rest (shown to staff in diagnostics). */
  readonly protection: 'os-encrypted' | 'basic-text' | 'file-permissions' | 'memory';
  /** The file the values are kept in, when there is one (its permissions are checked at start). */
  readonly path?: string;
}

/** The name under which the backend API key is kept. */
export const API_KEY_SECRET = 'backend.apiKey';
/** The origin a configured key without an address of its own was first used with (api-key-binding.ts). */
export const MACHINE_KEY_ORIGIN_SECRET = 'backend.machineKeyOrigin';

const MAX_SECRET_CHARS = 8_192;
const SecretFile = z.object({ version: z.literal(1), secrets: z.record(z.string().max(100), z.string().max(MAX_SECRET_CHARS)) }).strict();

export class SecretStoreError extends Error {
  override readonly name = 'SecretStoreError';
}

export class MemorySecretStore implements SecretStore {
  readonly protection = 'memory' as const;
  private readonly values = new Map<string, string>();

  get(name: string): Promise<string | undefined> {
    return Promise.resolve(this.values.get(name));
  }

  set(name: string, value: string): Promise<void> {
    this.values.set(name, value);
    return Promise.resolve();
  }

  delete(name: string): Promise<void> {
    this.values.delete(name);
    return Promise.resolve();
  }
}

/**
 * The values of a plain-text `secrets.json`, or undefined when there is none. Throws a
 * {@link SecretStoreError} naming the file and the bad key (never a value) when it is not ours.
 */
export async function readPlainSecretFile(path: string): Promise<Record<string, string> | undefined> {
  const text = await readFileIfExists(path);
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new SecretStoreError(`${path} is not valid JSON`);
  }
  const parsed = SecretFile.safeParse(value);
  if (!parsed.success)
    throw new SecretStoreError(`${path}: ${parsed.error.issues.map((i) => i.path.join('.') || '(root)').join(', ')}: unexpected content`);
  return parsed.data.secrets;
}

/** `secrets.json` in the data directory, mode 0600: protected by file permissions only. */
export class FileSecretStore implements SecretStore {
  readonly protection = 'file-permissions' as const;
  readonly path: string;
  /** Writes run one after another, so two quick saves cannot lose one another's change. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string) {
    this.path = join(dataDir, 'secrets.json');
  }

  private async readAll(): Promise<Record<string, string>> {
    return (await readPlainSecretFile(this.path)) ?? {};
  }

  private update(change: (secrets: Record<string, string>) => void): Promise<void> {
    const run = this.queue.then(async () => {
      const secrets = await this.readAll();
      change(secrets);
      await writeFileAtomic(this.path, `${JSON.stringify({ version: 1, secrets }, null, 2)}\n`);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async get(name: string): Promise<string | undefined> {
    await this.queue;
    return (await this.readAll())[name];
  }

  set(name: string, value: string): Promise<void> {
    if (value.length > MAX_SECRET_CHARS) return Promise.reject(new SecretStoreError(`secret ${name} is too long`));
    return this.update((s) => {
      s[name] = value;
    });
  }

  delete(name: string): Promise<void> {
    return this.update((s) => {
      // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- a record keyed by secret name
      delete s[name];
    });
  }
}
