/**
 * Every API key is bound to the backend origin it was configured with, and is never sent anywhere else
 * (docs/browser-host.md, "Which backend gets the API key"). Whoever may edit the backend address (staff
 * with the PIN, or a hand-edited settings.json) must not be able to collect the fleet's key by pointing
 * the kiosk at a server of their own.
 *
 * - The key saved on the settings screen is stored with the origin it was entered for (one secret holding
 *   both, so neither can change without the other).
 * - A key from the machine's configuration (config file, key file, environment, command line, managed
 *   file, test setup) is bound to the origin that configuration gives with it; where it gives none, to the
 *   origin in effect at the first start with that key, remembered in the secret store (the key's
 *   fingerprint with the origin, never the key), so that an address edited by hand in settings.json
 *   between starts does not take the key with it.
 * - A configuration whose key would go to another origin is refused: a save is refused with a field
 *   error, and at start the kiosk stays in `config_error` naming what staff must do.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { HeaderToken } from '../common/protocol/messages.js';
import { API_KEY_SECRET, type SecretStore } from './secret-store.js';

/** The key saved on the settings screen and the origin it was entered for (`null`: no backend then). */
export interface StoredApiKey {
  readonly key: string;
  readonly origin: string | null;
}

const StoredForm = z.object({ v: z.literal(1), key: HeaderToken, origin: z.string().max(300).nullable() }).strict();

export function encodeStoredApiKey(stored: StoredApiKey): string {
  return JSON.stringify({ v: 1, key: stored.key, origin: stored.origin });
}

/**
 * A stored value: the bound form, or a key stored before keys were bound (`origin` undefined: it is bound
 * to the origin in effect at the first start that reads it, and stored again in the bound form).
 */
export function decodeStoredApiKey(text: string): { readonly key: string; readonly origin?: string | null } {
  if (text.startsWith('{')) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    const bound = StoredForm.safeParse(value);
    if (bound.success) return { key: bound.data.key, origin: bound.data.origin };
  }
  return { key: text };
}

/** The stored key, decoded (tests and tools; the service keeps its own copy). */
export async function readStoredApiKey(
  secrets: SecretStore,
): Promise<{ readonly key: string; readonly origin?: string | null } | undefined> {
  const text = await secrets.get(API_KEY_SECRET);
  return text === undefined ? undefined : decodeStoredApiKey(text);
}

/** Scheme, host and port of a backend address; `null` for none or an address without an origin. */
export function originOf(baseUrl: string | undefined): string | null {
  if (baseUrl === undefined) return null;
  try {
    const origin = new URL(baseUrl).origin;
    return origin === 'null' ? null : origin.slice(0, 300);
  } catch {
    return null;
  }
}

const MachineKeyOriginForm = z.object({ v: z.literal(1), fingerprint: z.string().max(100), origin: z.string().max(300) }).strict();

/** Names a key without holding it (SHA-256): what the remembered origin of a machine key is stored under. */
function keyFingerprint(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('base64url');
}

/** The remembered origin of a machine key without an address of its own, in its stored form. */
export function encodeMachineKeyOrigin(key: string, origin: string): string {
  return JSON.stringify({ v: 1, fingerprint: keyFingerprint(key), origin });
}

/** The origin remembered for `key`, when the stored value is one and for this very key (another key: none). */
export function rememberedMachineKeyOrigin(text: string | undefined, key: string): string | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = MachineKeyOriginForm.safeParse(value);
  return parsed.success && parsed.data.fingerprint === keyFingerprint(key) ? parsed.data.origin : undefined;
}

/** The key the machine's configuration gives (every source but the settings screen) and its origin. */
export interface MachineKey {
  readonly key: string | undefined;
  /** Origin of the address that configuration gives with it; `null` when it gives none. */
  readonly origin: string | null;
  /** Where it comes from, in words for staff ("the environment", "the configuration file", …). */
  readonly source: string;
}

export interface KeyBindings {
  readonly stored: StoredApiKey | undefined;
  readonly machine: MachineKey;
  /**
   * The machine key's origin at its first start (remembered), when the configuration gives none and it was
   * the key in effect.
   */
  readonly machineStartOrigin: string | null | undefined;
}

/**
 * Why the key of `config` must not go to its backend address, or undefined when it may (or when there
 * is no key or no address: then nothing is sent).
 */
export function bindingProblem(key: string | undefined, baseUrl: string | undefined, bindings: KeyBindings): string | undefined {
  const origin = originOf(baseUrl);
  if (key === undefined || origin === null) return undefined;
  const { stored, machine } = bindings;
  if (stored !== undefined && key === stored.key && stored.origin === origin) return undefined;
  const machineOrigin = machine.origin ?? bindings.machineStartOrigin ?? null;
  if (key === machine.key && machineOrigin === origin) return undefined;
  if (stored !== undefined && key === stored.key) {
    return `the API key saved on this kiosk was entered for ${stored.origin ?? 'no backend'}, and the backend address is now ${origin}: enter the API key for this backend (a key is only ever sent to the backend it was entered for)`;
  }
  if (machineOrigin === null) {
    return `the API key from ${machine.source} comes with no backend address of its own, so it is not sent to ${origin}: set the backend address in the same place as the key, or enter a key for this backend on the settings screen`;
  }
  return machine.origin === null
    ? `the API key from ${machine.source} is only sent to ${machineOrigin}, the backend it was first used with (it comes with no backend address of its own), and the backend address is now ${origin}: set the backend address in the same place as the key, or enter a key for this backend on the settings screen`
    : `the API key from ${machine.source} is only sent to ${machineOrigin}, the backend configured with it, and the backend address is now ${origin}: change both in the same place, or enter a key for this backend on the settings screen`;
}
