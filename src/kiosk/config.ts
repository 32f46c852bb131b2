/**
 * Kiosk configuration: one schema, documented defaults, validated at load time.
 *
 * Sources, lowest precedence first: built-in defaults → JSON file (`--config` or `MDL_KIOSK_CONFIG`) →
 * environment (`MDL_KIOSK_BACKEND_URL`, `MDL_KIOSK_API_KEY`, `MDL_KIOSK_API_KEY_FILE`, `MDL_KIOSK_PROFILE`,
 * `MDL_KIOSK_PCSC_READER`)
 * → explicit overrides (CLI flags). Every timeout the relay waits on lives in `timeouts`, so no wait is
 * unbounded and each one can be tuned per site.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { BleRoles, Language } from '../common/kiosk-api.js';
import { HeaderToken, Namespaces } from '../common/protocol/messages.js';

const ms = (def: number) => z.number().int().positive().default(def);

export const RequestProfileConfig = z.object({
  label: z.string().min(1).optional(),
  namespaces: Namespaces.refine((ns) => Object.values(ns).some((els) => els.length > 0), {
    error: 'a profile must request at least one element',
  }),
});

export const KioskConfigSchema = z
  .object({
    backend: z
      .object({
        /** HTTPS base address of the service (spec `{base_url}`). */
        baseUrl: z.url().optional(),
        /** API key for the session endpoints. Prefer `apiKeyFile` or the environment over a config file. */
        apiKey: HeaderToken.optional(),
        /** File holding the API key (first line), e.g. a secret mounted by the fleet tooling. */
        apiKeyFile: z.string().min(1).optional(),
        /**
         * How the WebSocket carries the client secret: `header` (Authorization: Bearer, default; never in a
         * URL) or `query` (`?token=`, for proxies that strip headers).
         */
        wsAuth: z.enum(['header', 'query']).default('header'),
        /** Allow plain http/ws to hosts other than loopback (labs only). */
        allowInsecure: z.boolean().default(false),
        /** JSON body of `POST /sessions` (the spec does not show one; `{}` by default). */
        createSessionBody: z.record(z.string(), z.unknown()).default({}),
        /** Largest WebSocket message accepted from the backend (the spec shows no limit). */
        maxMessageBytes: z.number().int().positive().default(16 * 1024 * 1024),
      })
      .prefault({}),
    session: z
      .object({
        /** Session lifetime from `POST /sessions` (spec §8). */
        lifetimeMs: ms(600_000),
        /** Renew an idle pre-warmed session when this little time is left. */
        renewBeforeExpiryMs: ms(240_000),
        /** Never start a verification on a session with less time left than this. */
        minRemainingToStartMs: ms(180_000),
        /** Handshake 409 (a connection still open): retries, with exponential backoff from `conflictBackoffMs`. */
        conflictRetries: z.number().int().min(0).max(20).default(5),
        conflictBackoffMs: ms(250),
        /** Backoff bounds while the backend is unreachable. */
        offlineBackoffMinMs: ms(1_000),
        offlineBackoffMaxMs: ms(30_000),
      })
      .prefault({}),
    timeouts: z
      .object({
        /** HTTP requests to the session endpoints (spec §8 recommends about 5 s). */
        httpMs: ms(5_000),
        /** WebSocket handshake. */
        connectMs: ms(5_000),
        /** A reply from the backend after a message that expects one (`qr_scanned`, `nfc_rapdu`, …). */
        backendReplyMs: ms(15_000),
        /** One APDU exchange with the card. */
        apduMs: ms(5_000),
        /** Re-tap after `nfc_await_card`. */
        awaitCardMs: ms(30_000),
        /** BLE setup: scan + connect (central) or advertise until the phone's first GATT event (peripheral). */
        bleSetupMs: ms(30_000),
        /** BLE transfer with no traffic in either direction (the holder may be consenting on the phone). */
        bleIdleMs: ms(60_000),
        /** One `ble_write` (write or notification). */
        bleWriteMs: ms(10_000),
        /** `ble_read_response` after `ble_read_request` (the phone's ATT timeout is 30 s). */
        bleReadResponseMs: ms(5_000),
        /** After the BLE link drops, how long the backend may still send `complete`. */
        bleLinkLossGraceMs: ms(3_000),
        /** After `complete`, how long queued `ble_write`s (the 0x02 end byte) may take before teardown. */
        completionFlushMs: ms(2_000),
        /** The whole verification, from tap or scan to outcome. */
        verificationMs: ms(150_000),
        /** Closing handshake of the WebSocket before the socket is destroyed. */
        socketCloseMs: ms(2_000),
        /** WebSocket ping interval; a socket without a pong by the next ping is dropped (half-open connections). */
        heartbeatMs: z.number().int().min(0).default(20_000),
        /** How long to wait for an armed session when a tap arrives while none is ready. */
        armWaitMs: ms(15_000),
        /** Polling `GET /sessions/{id}` for a result after the socket dropped at the end of a transfer. */
        recoverResultMs: ms(6_000),
        /** Result on screen before it is cleared (privacy). */
        resultDisplayMs: ms(30_000),
        /** Error on screen before the kiosk re-arms. */
        errorDisplayMs: ms(6_000),
        /** "Remove your phone" prompt after a verification before the kiosk stops waiting. */
        removePhoneMs: ms(30_000),
      })
      .prefault({}),
    /** Active request profile: a built-in name or a key of `profiles`. */
    profile: z.string().min(1).default('age_over_21'),
    /** Custom request profiles (add to or override the built-ins). */
    profiles: z.record(z.string().min(1), RequestProfileConfig).default({}),
    qr: z
      .object({
        /** Ignore scans that are not `mdoc:` device engagements instead of sending them to the backend. */
        requireMdocPrefix: z.boolean().default(true),
        /** A scan older than this is stale and not used when the kiosk becomes ready. */
        scanFreshMs: ms(10_000),
      })
      .prefault({}),
    /** The PC/SC contactless reader (`--nfc pcsc`). */
    pcsc: z
      .object({
        /**
         * Reader to use: its name or a part of it (case-insensitive), or `/regex/flags`. Unset: the first
         * contactless (PICC) reader; SAM slots are never chosen automatically.
         */
        reader: z.string().min(1).optional(),
        /** `shared` lets pcsc_scan and other tools use the reader too; `exclusive` keeps them out. */
        shareMode: z.enum(['shared', 'exclusive']).default('shared'),
        /** Protocols offered to SCardConnect: `any` (T=0 or T=1; phones answer T=1), `T1` or `T0`. */
        protocol: z.enum(['any', 'T0', 'T1']).default('any'),
        /** While the PC/SC service is absent or lost: first retry after this, doubling up to the maximum. */
        serviceRetryMinMs: ms(500),
        serviceRetryMaxMs: ms(10_000),
        /** Bound on connecting to a card that has just been tapped. */
        connectMs: ms(5_000),
      })
      .prefault({}),
    /** Which Bluetooth LE roles the kiosk sets up on this machine's stack (the screen's settings). */
    ble: z
      .object({
        roles: BleRoles.default('both'),
      })
      .prefault({}),
    /** The screen. */
    ui: z
      .object({
        /** Language of the screen for each new customer (a customer may switch for their visit). */
        defaultLanguage: Language.default('en'),
        /** Camera used for QR codes (a `MediaDeviceInfo.deviceId`); unset: the system's default camera. */
        cameraDeviceId: z.string().min(1).max(512).optional(),
        /** Camera frames decoded per second at most (keeps the CPU cool while idle). */
        qrDecodesPerSecond: z.number().int().min(1).max(30).default(8),
      })
      .prefault({}),
    /** The staff screens (settings, diagnostics). */
    staff: z
      .object({
        /** `scrypt$N$r$p$salt$hash` (base64 salt and hash) of the staff PIN; unset: staff screens stay locked. */
        pinHash: z.string().max(300).optional(),
        /** Wrong PINs in a row before a lockout. */
        maxAttempts: z.number().int().min(1).max(20).default(5),
        /** Lockout after `maxAttempts` wrong PINs (doubles with each further lockout, up to 1 hour). */
        lockoutMs: ms(60_000),
        /** An unlocked staff session ends after this long without a staff action. */
        unlockMs: ms(120_000),
      })
      .prefault({}),
    privacy: z
      .object({
        /**
         * Show and log the text of backend `error` messages. Off by default: the spec does not show their
         * texts (§7.2) and a backend may quote request data in them; staff see a generic message and the
         * logs the length, which with the session id and time finds the backend's own log entry.
         */
        backendErrorText: z.boolean().default(false),
      })
      .prefault({}),
    log: z
      .object({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      })
      .prefault({}),
  })
  .superRefine((c, ctx) => {
    if (c.session.minRemainingToStartMs < c.timeouts.verificationMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['session', 'minRemainingToStartMs'],
        message: 'must be at least timeouts.verificationMs, or a verification could outlive its session',
      });
    }
    if (c.session.renewBeforeExpiryMs <= c.session.minRemainingToStartMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['session', 'renewBeforeExpiryMs'],
        message: 'must exceed session.minRemainingToStartMs, or an idle session expires before renewal',
      });
    }
    if (c.session.renewBeforeExpiryMs >= c.session.lifetimeMs) {
      ctx.addIssue({ code: 'custom', path: ['session', 'renewBeforeExpiryMs'], message: 'must be below lifetimeMs' });
    }
  });

export type KioskConfig = z.infer<typeof KioskConfigSchema>;
export type KioskConfigInput = z.input<typeof KioskConfigSchema>;
export type Timeouts = KioskConfig['timeouts'];

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}

/** Validates a configuration object (defaults filled in); throws {@link ConfigError} with every problem. */
export function parseConfig(input: unknown): KioskConfig {
  const parsed = KioskConfigSchema.safeParse(input);
  if (!parsed.success) throw new ConfigError(`invalid configuration: ${formatIssues(parsed.error)}`);
  return parsed.data;
}

type Json = Record<string, unknown>;
const isJsonObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Deep merge of plain objects; arrays and scalars of `over` replace those of `base`. */
export function mergeConfig(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    const prev = out[key];
    out[key] = isJsonObject(prev) && isJsonObject(value) ? mergeConfig(prev, value) : value;
  }
  return out;
}

export interface LoadConfigOptions {
  /** Path of a JSON config file; falls back to `env.MDL_KIOSK_CONFIG`. */
  readonly file?: string;
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Settings the staff saved on the kiosk's screen, in the config's own shape: above the file, below the
   * environment and the CLI flags (so a managed value always wins over a local edit).
   */
  readonly persisted?: Json;
  /** Highest-precedence values (CLI flags), in the config's own shape. */
  readonly overrides?: Json;
}

function readJsonFile(path: string): Json {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`cannot read config file ${path}: ${(e as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(e as Error).message}`);
  }
  if (!isJsonObject(value)) throw new ConfigError(`config file ${path} must hold a JSON object`);
  return value;
}

function readSecretFile(path: string): string {
  try {
    const first = readFileSync(path, 'utf8').split(/\r?\n/, 1)[0]?.trim() ?? '';
    if (first === '') throw new ConfigError(`API key file ${path} is empty`);
    return first;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(`cannot read API key file ${path}: ${(e as Error).message}`);
  }
}

/**
 * A layer that names a key file replaces the key of the layers below it, and a layer that names a key
 * replaces their key file, so the documented precedence holds for the key whichever way it is given.
 */
function applyLayer(merged: Json, layer: Json): Json {
  const backend = isJsonObject(layer.backend) ? layer.backend : {};
  const base = isJsonObject(merged.backend) ? { ...merged.backend } : {};
  if (backend.apiKey !== undefined) delete base.apiKeyFile;
  else if (backend.apiKeyFile !== undefined) delete base.apiKey;
  return mergeConfig({ ...merged, backend: base }, layer);
}

/** The environment's layer, in the config's shape (undefined where a variable is not set). */
export function environmentLayer(env: NodeJS.ProcessEnv): Json {
  return {
    backend: {
      baseUrl: env.MDL_KIOSK_BACKEND_URL,
      apiKey: env.MDL_KIOSK_API_KEY,
      apiKeyFile: env.MDL_KIOSK_API_KEY_FILE,
    },
    profile: env.MDL_KIOSK_PROFILE,
    pcsc: { reader: env.MDL_KIOSK_PCSC_READER === '' ? undefined : env.MDL_KIOSK_PCSC_READER },
  };
}

/** Every source merged in precedence order, not yet validated (the settings screen validates a candidate). */
export function mergeConfigSources(options: LoadConfigOptions = {}): Json {
  const env = options.env ?? process.env;
  let merged: Json = {};
  const file = options.file ?? env.MDL_KIOSK_CONFIG;
  if (file) merged = applyLayer(merged, readJsonFile(file));
  if (options.persisted) merged = applyLayer(merged, options.persisted);
  merged = applyLayer(merged, environmentLayer(env));
  if (options.overrides) merged = applyLayer(merged, options.overrides);
  return merged;
}

/** Loads, merges and validates the configuration from every source. */
export function loadConfig(options: LoadConfigOptions = {}): KioskConfig {
  return readApiKeyFile(parseConfig(mergeConfigSources(options)));
}

/** A validated configuration with the key of `backend.apiKeyFile` read in (when no key is given directly). */
export function readApiKeyFile(config: KioskConfig): KioskConfig {
  if (config.backend.apiKey === undefined && config.backend.apiKeyFile !== undefined) {
    const apiKey = readSecretFile(config.backend.apiKeyFile);
    if (!HeaderToken.safeParse(apiKey).success) {
      throw new ConfigError(`API key file ${config.backend.apiKeyFile}: the key must be visible ASCII without spaces`);
    }
    return { ...config, backend: { ...config.backend, apiKey } };
  }
  return config;
}
