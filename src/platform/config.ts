/**
 * Kiosk configuration: one schema, documented defaults, validated at load time.
 *
 * Sources, lowest precedence first: built-in defaults → JSON file (`--config` or `MDL_KIOSK_CONFIG`) →
 * saved settings → environment (`MDL_KIOSK_BACKEND_URL`, `MDL_KIOSK_API_KEY`, `MDL_KIOSK_API_KEY_FILE`,
 * `MDL_KIOSK_PROFILE`, `MDL_KIOSK_PCSC_READER`) → explicit overrides (CLI flags) → the managed machine file.
 * Every timeout the relay waits on lives in `timeouts`, so no wait is unbounded and each one can be tuned
 * per site.
 */
import { DEFAULT_SPEECH_KEYS, DEFAULT_SPEECH_SETTINGS, KeyCode, SpeakableElement, SpeechMode, SpeechVoice } from '../common/speech.js';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { BleRoles, Language, ReaderPosition } from '../common/kiosk-api.js';
import { HeaderToken, Namespaces } from '../common/protocol/messages.js';
// Hosts an update feed may reach over plain http (a local mirror on this machine): the backend's rule.
import { isLoopbackHost } from './loopback-host.js';
import { parsePinHash } from './pin-hash-format.js';
import { TIME_WINDOW } from './time-window.js';
import { currentPlatform, osCapabilities } from './os.js';
import { errorText } from '../common/error-text.js';

/**
 * Every duration is bounded: Node's timers take at most 2^31 − 1 ms and fire at once beyond it (so a
 * lifetime of 1e10 ms renewed the session in a loop), and no kiosk wait needs more than a day.
 */
export const MAX_DURATION_MS = 86_400_000;
const ms = (def: number, max = MAX_DURATION_MS) =>
  z
    .number()
    .int()
    .positive()
    .max(max, { error: `at most ${max} ms (${max >= 3_600_000 ? `${max / 3_600_000} h` : `${max / 60_000} min`})` })
    .default(def);

export const RequestProfileConfig = z.object({
  label: z.string().min(1).optional(),
  namespaces: Namespaces.refine((ns) => Object.values(ns).some((els) => els.length > 0), {
    error: 'a profile must request at least one element',
  }),
});

/** `HH:MM-HH:MM`, local time; the window may wrap midnight (`23:00-01:30`). */
export const MAINTENANCE_WINDOW = TIME_WINDOW;

/** The URL, or undefined when it does not parse (zod runs every check; `z.url()` reports that case itself). */
function parsedUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/** No user name or password in the URL (one that does not parse is reported by `z.url()` itself). */
function withoutCredentials(value: string): boolean {
  const url = parsedUrl(value);
  return url === undefined || (url.username === '' && url.password === '');
}

const UpdateFeedUrl = z
  .url({ error: 'must be an absolute URL, e.g. https://updates.example.com/mdl-kiosk/' })
  .refine(
    (value) => {
      const url = parsedUrl(value);
      return url === undefined || url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
    },
    { error: 'must be an https:// address (plain http only to a loopback host such as 127.0.0.1, for a local mirror)' },
  )
  // It would be logged and shown with the update status; a feed needing credentials belongs behind a proxy.
  .refine(withoutCredentials, { error: 'must not carry a user name or password' });

const ProxyUrl = z
  .url({ error: "must be the proxy's address, e.g. http://proxy.example:3128" })
  .refine(
    (value) => {
      const url = parsedUrl(value);
      return url === undefined || url.protocol === 'http:' || url.protocol === 'https:';
    },
    { error: 'must be an http:// or https:// proxy' },
  )
  // It would be shown on the settings screen and could reach a log: credentials go in a file of their own.
  .refine(withoutCredentials, { error: 'must not carry a user name or password: put them in backend.proxy.credentialsFile' });

export const AppConfig = z
  .object({
    /** Full-screen kiosk window (BrowserWindow `kiosk` + `fullscreen`). */
    kioskMode: z.boolean().default(true),
    /** Start with the user's session (app.setLoginItemSettings; Windows and macOS). */
    startAtLogin: z.boolean().default(false),
    /**
     * Who restarts the app after a fatal error in main or a screen crash loop: `self` (app.relaunch(), for a
     * kiosk started at login) or `supervisor` (exit with code 75, EX_TEMPFAIL, and let Windows Shell
     * Launcher, launchd or systemd restart it: a self-relaunched copy is no longer the supervisor's child,
     * and a supervisor that also restarts would race it for the single-instance lock).
     */
    restartBy: z.enum(['self', 'supervisor']).default('self'),
    /** Developer tools: honoured only in the QA flavour or an unpackaged run. */
    devTools: z.boolean().default(false),
    /**
     * The GPU for drawing the screen. `false` for a kiosk PC whose GPU driver shows a black or frozen window
     * (Chromium then draws in software); read before the app is ready, so a restart applies it.
     */
    hardwareAcceleration: z.boolean().default(true),
    /**
     * Linux: accept Electron's `basic_text` secret backend (obfuscation with a fixed key, no keyring). Honoured
     * only from the managed machine file, so a user-writable file cannot weaken how the API key is kept.
     */
    allowBasicTextSecrets: z.boolean().default(false),
    updates: z
      .object({
        enabled: z.boolean().default(false),
        /** Generic-provider feed (the folder holding latest.yml / latest-mac.yml / latest-linux.yml). */
        url: UpdateFeedUrl.optional(),
        /** Update channel, for staged rings (`latest`, `pilot`, …). */
        channel: z
          .string()
          .regex(/^[a-z][a-z0-9-]{0,31}$/, {
            error: 'must be lower-case letters, digits and dashes, starting with a letter (at most 32), e.g. latest or pilot',
          })
          .default('latest'),
        checkEveryMinutes: z.number().int().min(15).max(1_440).default(240),
        /** Installs wait for this local-time window (`HH:MM-HH:MM`, may wrap midnight); unset: whenever idle. */
        maintenanceWindow: z
          .string()
          .regex(MAINTENANCE_WINDOW, { error: 'must be HH:MM-HH:MM in local time, e.g. 02:00-04:30 (it may wrap midnight: 23:00-01:00)' })
          .refine((w) => w.slice(0, 5) !== w.slice(6), { error: 'must not start and end at the same minute' })
          .optional(),
      })
      .prefault({}),
    logs: z
      .object({
        /** Log files older than this many days are deleted. */
        retentionDays: z.number().int().min(1).max(365).default(14),
        /** A log file is rotated when it reaches this size (and every day). */
        maxFileMegabytes: z.number().int().min(1).max(100).default(10),
      })
      .prefault({}),
    health: z
      .object({
        /** How often `health.json` is rewritten (it is also rewritten after each verification). */
        everySeconds: z.number().int().min(5).max(3_600).default(30),
        /**
         * The same figures as Prometheus text, for node_exporter's textfile collector (a `.prom` file in its
         * `--collector.textfile.directory`); unset: not written.
         */
        metricsFile: z.string().min(1).max(4_096).optional(),
      })
      .prefault({}),
  })
  .prefault({});

/**
 * The Bluetooth roles set up when the configuration names none: both, except on Windows, where bleno
 * reaches no built-in radio (its index takes the raw HCI binding there, which drives a USB dongle through
 * libusb: @stoprocent/bleno lib/resolve-bindings.js:18-27, bluetooth-hci-socket index.js:20-30), so the
 * kiosk is central there unless a dongle is set up (`ble.usbDongle`).
 */
export function defaultBleRoles(platform: NodeJS.Platform = currentPlatform()): BleRoles {
  return osCapabilities(platform).builtInBlePeripheral ? 'both' : 'central';
}

/** A USB device as `VID:PID` in hex (`0a12:0001`), as Device Manager and lsusb show them. */
export const UsbDeviceId = z
  .string()
  .regex(/^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$/, 'a USB device as VID:PID in hex, e.g. 0a12:0001')
  .transform((id) => ({ vid: parseInt(id.slice(0, 4), 16), pid: parseInt(id.slice(5), 16) }));

/** Every section and value, without the rules that relate values across sections (see below). */
export const KioskConfigShape = z.object({
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
      maxMessageBytes: z
        .number()
        .int()
        .positive()
        .default(16 * 1024 * 1024),
      /**
       * TLS trust for the backend (src/kiosk/tls-trust.ts): `caFile`, a PEM bundle of extra CAs trusted
       * besides the bundled roots (enterprise TLS inspection); `pinSha256`, accepted SHA-256 pins of the
       * server's SubjectPublicKeyInfo (base64), one of which must match a certificate of its chain.
       */
      /**
       * The forward proxy to the backend (src/kiosk/backend-proxy.ts): `url` (http:// or https://, no user
       * or password in it), `credentialsFile` (first line `user:password`), `noProxy` (hosts reached
       * directly), `caFile` (PEM CAs trusted for an https:// proxy's own certificate, besides the bundled
       * roots; the backend's certificate stays under `tls`); `useEnvironment: false` ignores `HTTPS_PROXY`
       * and `NO_PROXY` alike.
       */
      proxy: z
        .object({
          url: ProxyUrl.optional(),
          credentialsFile: z.string().min(1).max(4_096).optional(),
          noProxy: z.array(z.string().min(1).max(300)).max(100).optional(),
          useEnvironment: z.boolean().default(true),
          caFile: z.string().min(1).max(4_096).optional(),
        })
        // Set with an http:// proxy it would silently do nothing: there is no proxy certificate to check.
        .refine((p) => p.caFile === undefined || p.url === undefined || parsedUrl(p.url)?.protocol !== 'http:', {
          error: 'caFile applies to an https:// proxy only; backend.proxy.url is http://',
          path: ['caFile'],
        })
        .prefault({}),
      tls: z
        .object({
          caFile: z.string().min(1).max(4_096).optional(),
          pinSha256: z
            .array(
              z.string().regex(/^[A-Za-z0-9+/]{43}=$/, { error: 'a pin is the base64 SHA-256 of a SubjectPublicKeyInfo (44 characters)' }),
            )
            .min(1)
            .max(10)
            .optional(),
        })
        .prefault({}),
    })
    .prefault({}),
  session: z
    .object({
      /** Session lifetime from `POST /sessions` (spec §8). */
      lifetimeMs: ms(600_000, 3_600_000),
      /** Renew an idle pre-warmed session when this little time is left. */
      renewBeforeExpiryMs: ms(240_000),
      /** Never start a verification on a session with less time left than this. */
      minRemainingToStartMs: ms(180_000),
      /** Handshake 409 (a connection still open): retries, with exponential backoff from `conflictBackoffMs`. */
      conflictRetries: z.number().int().min(0).max(20).default(5),
      conflictBackoffMs: ms(250),
      /**
       * Backoff after failures (src/kiosk/retry-policy.ts): the n-th failure in a row waits a random time up to
       * min(offlineBackoffMaxMs, offlineBackoffMinMs·2^(n−1)) (full jitter); the cap also bounds `Retry-After`.
       */
      offlineBackoffMinMs: ms(1_000),
      offlineBackoffMaxMs: ms(30_000),
      /**
       * At most this many requests to the backend (`POST /sessions`, WebSocket upgrades, `GET /sessions/{id}`) in
       * any 60 s, whatever fails; only the session that follows a verification the backend served (a customer's
       * due, not a retry) is not counted. Raise it only for test rigs that fail faster than any customer.
       */
      maxRequestsPerMinute: z.number().int().min(4).max(600).default(20),
      /**
       * When a session is kept pre-warmed (created, socket open, `engage` sent) so a tap goes straight to
       * the first APDU: `always` (renewed before each expiry: with the defaults about 240 sessions a day per
       * idle kiosk); `business_hours` (inside `businessHours`, local time); `on_demand` (created when a
       * customer taps or scans, then kept warm for `keepWarmAfterUseMs`). Outside, a tap waits for a new
       * session (one HTTP round trip, a WebSocket and `engage`): fewer sessions, a slower first tap.
       */
      prewarm: z.enum(['always', 'business_hours', 'on_demand']).default('always'),
      businessHours: z
        .string()
        .regex(TIME_WINDOW, { error: 'must be HH:MM-HH:MM in local time, e.g. 08:00-18:30 (it may wrap midnight: 22:00-02:00)' })
        .default('07:00-20:00'),
      keepWarmAfterUseMs: ms(600_000),
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
      /**
       * The backend's first reply after a tap or a scan (`nfc_card_present`, `qr_scanned`): a backend that
       * says nothing by then is not answering, and the customer is told so at once (docs/protocol.md §10.2).
       */
      firstReplyMs: ms(4_000, 60_000),
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
      /** WebSocket ping interval; 0 turns the periodic ping off. */
      heartbeatMs: z
        .number()
        .int()
        .min(0)
        .max(MAX_DURATION_MS, { error: `at most ${MAX_DURATION_MS} ms (24 h)` })
        .default(5_000),
      /**
       * How long each ping may wait for its pong (at most `heartbeatMs`): no pong by then and the socket is
       * dropped as not answering. A silent backend is found within `heartbeatMs + pongMs` while idle.
       */
      pongMs: ms(2_500, 60_000),
      /** How long to wait for an armed session when a tap arrives while none is ready. */
      armWaitMs: ms(15_000),
      /** Polling `GET /sessions/{id}` for a result after the socket dropped at the end of a transfer. */
      recoverResultMs: ms(6_000),
      /** Result on screen before it is cleared (privacy). */
      resultDisplayMs: ms(30_000),
      /**
       * How long an outcome stays on screen before a new customer's tap or scan may replace it (staff "Next"
       * always clears). A tap or scan meanwhile is held, not lost: it starts once this time has passed. 0: at
       * once. At most 10 s, and never more than `qr.scanFreshMs` (a scan held longer would go stale).
       */
      outcomeMinimumMs: z.number().int().min(0).max(10_000, { error: 'at most 10000 ms (10 s)' }).default(5_000),
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
      /** Default `both`; on Windows `central` (see `defaultBleRoles`). */
      roles: BleRoles.default(() => defaultBleRoles()),
      /**
       * A USB Bluetooth dongle bleno drives itself for the peripheral role, through libusb (`VID:PID`). On
       * Windows the only way to the peripheral role: the dongle gets the WinUSB driver and leaves Windows'
       * own Bluetooth. Unset on Windows: no peripheral role.
       */
      usbDongle: UsbDeviceId.optional(),
      /**
       * Where noble and bleno run: `separate` (default) in a radio process of their own, so a native crash,
       * a hang or stray output costs one verification, not the app (docs/ARCHITECTURE.md "The radio
       * process"); `inline` in the kiosk's own process.
       */
      process: z.enum(['separate', 'inline']).default('separate'),
      /**
       * With `process: separate`: a role whose adapter stays gone (switched off, unplugged, the OS's
       * Bluetooth service stopped) this long while no verification uses it gets a fresh radio process, and
       * then after twice as long each time, at most every 5 min; 0 never. A library instance does not always
       * find its adapter again by itself (a serial HCI adapter never does once its port closed).
       */
      adapterRecoveryMs: z.number().int().min(0).max(600_000).default(15_000),
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
      /**
       * Where the NFC reader sits, seen from the customer facing the screen: Ready points there with an
       * arrow and says it in words. Unset: no pointer (a wrong arrow is worse than none).
       */
      readerPosition: ReaderPosition.optional(),
    })
    .prefault({}),
  /**
   * Speech for customers who cannot see the screen (docs/accessibility.md): when the kiosk speaks, at what
   * volume each customer starts, which voice, headset-only, how a headset is known, what a headset may say
   * beyond the answer, and the keypad's keys.
   */
  speech: z
    .object({
      mode: SpeechMode.default(DEFAULT_SPEECH_SETTINGS.mode),
      volume: z.number().min(0.1).max(1).default(DEFAULT_SPEECH_SETTINGS.volume),
      voice: SpeechVoice.default(DEFAULT_SPEECH_SETTINGS.voice),
      headsetOnly: z.boolean().default(DEFAULT_SPEECH_SETTINGS.headsetOnly),
      headsetOutput: z.string().max(200).default(DEFAULT_SPEECH_SETTINGS.headsetOutput),
      privateElements: z
        .array(SpeakableElement)
        .max(20)
        .default([...DEFAULT_SPEECH_SETTINGS.privateElements]),
      keys: z
        .object({
          start: z
            .array(KeyCode)
            .max(8)
            .default([...DEFAULT_SPEECH_KEYS.start]),
          pause: z
            .array(KeyCode)
            .max(8)
            .default([...DEFAULT_SPEECH_KEYS.pause]),
          volumeUp: z
            .array(KeyCode)
            .max(8)
            .default([...DEFAULT_SPEECH_KEYS.volumeUp]),
          volumeDown: z
            .array(KeyCode)
            .max(8)
            .default([...DEFAULT_SPEECH_KEYS.volumeDown]),
          language: z
            .array(KeyCode)
            .max(8)
            .default([...DEFAULT_SPEECH_KEYS.language]),
          stop: z
            .array(KeyCode)
            .max(8)
            .default([...DEFAULT_SPEECH_KEYS.stop]),
        })
        .strict()
        .prefault({}),
    })
    .strict()
    .prefault({}),
  /** The staff screens (settings, diagnostics). */
  staff: z
    .object({
      /** `scrypt$N$r$p$salt$hash` (base64 salt and hash) of the staff PIN; unset: staff screens stay locked. */
      pinHash: z
        .string()
        .max(300)
        .superRefine((value, ctx) => {
          try {
            parsePinHash(value);
          } catch (e) {
            // The message names what is wrong with the form, never the value.
            ctx.addIssue({
              code: 'custom',
              message: `${e instanceof Error ? e.message : 'unusable'}; make one with --set-pin (installer guide §5.4)`,
            });
          }
        })
        .optional(),
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
  /** The desktop application (Electron): window, secrets, updates, log files, health record. */
  app: AppConfig,
});

/** The whole configuration: each value valid, and the values consistent with each other. */
export const KioskConfigSchema = KioskConfigShape.superRefine((c, ctx) => {
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
  if (c.timeouts.outcomeMinimumMs > c.qr.scanFreshMs) {
    ctx.addIssue({
      code: 'custom',
      path: ['timeouts', 'outcomeMinimumMs'],
      message: 'must not exceed qr.scanFreshMs, or a scan held while an outcome shows would go stale',
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

const TYPE_WORDS: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object ({…})',
  array: 'a list ([…])',
  record: 'an object ({…})',
};
const SIZE_UNITS: Record<string, [string, string]> = {
  string: ['character', 'characters'],
  array: ['entry', 'entries'],
  set: ['entry', 'entries'],
  file: ['byte', 'bytes'],
};

/**
 * One configuration problem in an installer's words. The schema's own messages ("must be an https://
 * address …") stay; zod's generic ones ("Too small: expected string to have >=1 characters") — and the
 * same issues as another library's global error map may word them — are said from the issue itself.
 */
export function configIssueText(issue: z.core.$ZodIssue): string {
  const generic =
    /^(Too (small|big)|Invalid (input|option|string|number|key|element|value|type)|Unrecognized key|expected |Expected )/.test(
      issue.message,
    );
  if (!generic) return issue.message;
  const count = (n: number | bigint, origin: string): string => {
    const unit = SIZE_UNITS[origin];
    return unit ? `${n.toString()} ${Number(n) === 1 ? unit[0] : unit[1]}` : n.toString();
  };
  switch (issue.code) {
    case 'too_small': {
      const sized = Object.hasOwn(SIZE_UNITS, issue.origin);
      if (sized && Number(issue.minimum) === 1 && issue.inclusive !== false && issue.exact !== true) return 'must not be empty';
      const least = issue.exact === true ? 'exactly' : issue.inclusive === false ? 'more than' : 'at least';
      return sized
        ? `must have ${least} ${count(issue.minimum, issue.origin)}`
        : `must be ${issue.exact === true ? '' : issue.inclusive === false ? 'greater than ' : 'at least '}${issue.minimum.toString()}`;
    }
    case 'too_big': {
      const sized = Object.hasOwn(SIZE_UNITS, issue.origin);
      const most = issue.exact === true ? 'exactly' : issue.inclusive === false ? 'fewer than' : 'at most';
      return sized
        ? `must have ${most} ${count(issue.maximum, issue.origin)}`
        : `must be ${issue.exact === true ? '' : issue.inclusive === false ? 'less than ' : 'at most '}${issue.maximum.toString()}`;
    }
    case 'invalid_type': {
      if (/received undefined$/.test(issue.message)) return 'is required';
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    }
    case 'invalid_value': {
      const values = issue.values.map((v) => JSON.stringify(v));
      return values.length === 1
        ? `must be ${values[0] ?? ''}`
        : `must be one of ${values.slice(0, -1).join(', ')} or ${values.at(-1) ?? ''}`;
    }
    case 'invalid_format':
      return issue.format === 'url'
        ? 'must be an absolute URL'
        : issue.format === 'regex'
          ? 'is not in the expected form'
          : `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor.toString()}`;
    case 'unrecognized_keys':
      return `unknown key${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}`;
    case 'invalid_union':
      return 'is not one of the accepted forms';
    default:
      return issue.message;
  }
}

/** Every problem of a failed parse, each as `key.path: what is wrong` (the order the schema met them). */
export function configIssues(error: z.ZodError): string[] {
  return error.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${configIssueText(i)}`);
}

function formatIssues(error: z.ZodError): string {
  return configIssues(error).join('; ');
}

/** Validates a configuration object (defaults filled in); throws {@link ConfigError} with every problem. */
export function parseConfig(input: unknown): KioskConfig {
  const parsed = KioskConfigSchema.safeParse(input);
  if (!parsed.success) throw new ConfigError(`invalid configuration: ${formatIssues(parsed.error)}`);
  return parsed.data;
}

type Json = Record<string, unknown>;
const isJsonObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Unwraps defaults and optionals down to the schema that describes the value itself. */
function inner(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    if (
      current instanceof z.ZodDefault ||
      current instanceof z.ZodPrefault ||
      current instanceof z.ZodOptional ||
      current instanceof z.ZodNullable
    ) {
      current = current.unwrap() as z.ZodType;
    } else {
      return current;
    }
  }
}

/**
 * Dotted paths of what a layer sets, following the schema's objects; a record (profiles, a request body) or
 * a scalar is one key. Keys the schema does not know are collected apart: the schema would drop them
 * silently, and a mistyped policy key must not look applied.
 */
export function layerKeys(layer: Json, schema: z.ZodType = KioskConfigShape): { keys: string[]; unknown: string[] } {
  const keys: string[] = [];
  const unknown: string[] = [];
  const walk = (value: Json, node: z.ZodType, prefix: string): void => {
    const object = inner(node);
    if (!(object instanceof z.ZodObject)) return;
    const shape = object.shape as Record<string, z.ZodType>;
    for (const [key, child] of Object.entries(value)) {
      if (child === undefined) continue;
      const path = prefix === '' ? key : `${prefix}.${key}`;
      const childSchema = Object.hasOwn(shape, key) ? shape[key] : undefined;
      if (childSchema === undefined) {
        unknown.push(path);
        continue;
      }
      if (isJsonObject(child) && inner(childSchema) instanceof z.ZodObject) walk(child, childSchema, path);
      else keys.push(path);
    }
  };
  walk(layer, schema, '');
  return { keys, unknown };
}

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

/**
 * Keys a packaged production kiosk takes only from the managed machine file: they loosen the lockdown,
 * change where updates or trust come from, or weaken the staff PIN's protection, and every other source
 * (a config file in the kiosk user's folder, the environment, the launcher's command line) can be changed
 * by whoever may edit the kiosk user's files or its shortcut. A path names a key or a whole section.
 * docs/installer-guide.md lists them with the reason for each.
 */
export const MANAGED_ONLY_KEYS: readonly string[] = [
  'app.kioskMode',
  'app.devTools',
  'app.allowBasicTextSecrets',
  'app.updates',
  'backend.allowInsecure',
  'backend.tls.caFile',
  'privacy.backendErrorText',
  'staff.pinHash',
  'staff.maxAttempts',
  'staff.lockoutMs',
  'staff.unlockMs',
];

/** A layer without the given dotted paths, and which of them it set. */
export function withoutPaths(layer: Json, paths: readonly string[]): { layer: Json; removed: string[] } {
  const removed: string[] = [];
  const out = structuredClone(layer);
  for (const path of paths) {
    const keys = path.split('.');
    let node: unknown = out;
    for (const key of keys.slice(0, -1)) node = isJsonObject(node) ? node[key] : undefined;
    const last = keys.at(-1) ?? '';
    if (isJsonObject(node) && node[last] !== undefined) {
      removed.push(path);
      // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- removing a key named by the policy list
      delete node[last];
    }
  }
  return { layer: out, removed };
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
  /** Command-line values, in the config's own shape: above the environment. */
  readonly overrides?: Json;
  /**
   * The managed machine file's layer (src/service/managed-config.ts): the highest precedence, above the
   * command line, because it is the fleet's policy and a local shortcut or script must not undo it.
   */
  readonly managed?: Json;
  /**
   * Paths honoured only from the managed layer ({@link MANAGED_ONLY_KEYS} in a packaged production app):
   * every other layer's values for them are dropped, and `onIgnored` hears of each.
   */
  readonly managedOnly?: readonly string[];
  readonly onIgnored?: (source: 'config file' | 'saved settings' | 'environment' | 'command line', path: string) => void;
}

/**
 * A JSON syntax error without the text it quotes: V8 puts a slice of the input into the message
 * (`Unexpected token 'S', "{"apiKey": S…" is not valid JSON`), and a config file may hold an API key.
 */
export function jsonSyntaxText(e: unknown): string {
  const message = errorText(e);
  const quoted = message.indexOf(', "');
  const text = quoted >= 0 && message.endsWith('is not valid JSON') ? message.slice(0, quoted) : message;
  return text.slice(0, 200);
}

function readJsonFile(path: string): Json {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`cannot read config file ${path}: ${errorText(e)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${jsonSyntaxText(e)}`);
  }
  if (!isJsonObject(value)) throw new ConfigError(`config file ${path} must hold a JSON object`);
  // The schema would pass over a key it does not know: a misspelt one must not look applied.
  const { unknown } = layerKeys(value);
  if (unknown.length > 0) {
    const shown = unknown.slice(0, 20).map((key) => key.slice(0, 200));
    const more = unknown.length > shown.length ? ` and ${unknown.length - shown.length} more` : '';
    throw new ConfigError(
      `config file ${path}: unknown key${unknown.length === 1 ? '' : 's'} ${shown.join(', ')}${more} (misspelt, or from another version? docs/configuration.md lists every key)`,
    );
  }
  return value;
}

function readSecretFile(path: string): string {
  try {
    const first = readFileSync(path, 'utf8').split(/\r?\n/, 1)[0]?.trim() ?? '';
    if (first === '') throw new ConfigError(`API key file ${path} is empty`);
    return first;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(`cannot read API key file ${path}: ${errorText(e)}`);
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
  const below = (source: Parameters<NonNullable<LoadConfigOptions['onIgnored']>>[0], layer: Json): Json => {
    if (!options.managedOnly) return layer;
    const stripped = withoutPaths(layer, options.managedOnly);
    for (const path of stripped.removed) options.onIgnored?.(source, path);
    return stripped.layer;
  };
  let merged: Json = {};
  const file = options.file ?? env.MDL_KIOSK_CONFIG;
  if (file) merged = applyLayer(merged, below('config file', readJsonFile(file)));
  if (options.persisted) merged = applyLayer(merged, below('saved settings', options.persisted));
  merged = applyLayer(merged, below('environment', environmentLayer(env)));
  if (options.overrides) merged = applyLayer(merged, below('command line', options.overrides));
  if (options.managed) merged = applyLayer(merged, options.managed);
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
