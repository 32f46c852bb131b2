/**
 * `KioskApi`: the one contract between the screen (renderer) and the side that owns the truth (the
 * browser host today, the Electron main process next). The screen receives a state stream and sends
 * intents; it holds no protocol logic (docs/protocol.md §1). Every host implements the same table of intents, and
 * both directions are validated with these schemas, so a malformed message gets a clear error instead of
 * a crash on either side.
 *
 * Kept deliberately small: it becomes the preload's `window.kiosk` surface.
 */
import type { IpcIntentName } from './ipc-contract.js';
import { z } from 'zod';
import { BackendFailureKind, FailureStage } from './backend-failure-kinds.js';
import { KioskView, ReplacedOutcome } from './kiosk-view.js';
import { SpeechAudio, SpeechDiagnostics, SpeechReport, SpeechRequest, SpeechSettings } from './speech.js';

// ---------------------------------------------------------------- shared values

/** Languages the screen is translated into; the customer may switch, and it resets for the next one. */
export const Language = z.enum(['en', 'es', 'fr']);
export type Language = z.infer<typeof Language>;
export const LANGUAGES: readonly Language[] = Language.options;

/** What the staff may choose for the kiosk's Bluetooth (which roles are set up). */
export const BleRoles = z.enum(['both', 'central', 'peripheral', 'none']);
export type BleRoles = z.infer<typeof BleRoles>;

/** Bounds on what the renderer may send: a QR code holds at most 7,089 characters (version 40, numeric). */
export const MAX_QR_TEXT = 8_192;
/** Largest message a host accepts from the screen (intents are small). */
export const MAX_API_MESSAGE_BYTES = 64 * 1024;
/**
 * Largest message the screen accepts from a host. A state carries the outcome, whose `response` may hold a
 * large portrait: the core accepts `complete` messages up to `backend.maxMessageBytes` (16 MiB by default),
 * and the state's JSON adds the outcome's envelope and the rest of the view.
 */
export const MAX_HOST_MESSAGE_BYTES = 24 * 1024 * 1024;

/** Where a scanned text came from; used for diagnostics counts only, never logged with the text. */
export const ScanSource = z.enum(['camera', 'scanner', 'paste']);
export type ScanSource = z.infer<typeof ScanSource>;

/** The camera as the renderer sees it (the renderer owns the camera; the host only records its state). */
export const CameraState = z.enum(['off', 'starting', 'active', 'denied', 'missing', 'unplugged', 'error']);
export type CameraState = z.infer<typeof CameraState>;

// ---------------------------------------------------------------- state stream

export const ProfileChoice = z.object({ name: z.string().min(1).max(100), label: z.string().min(1).max(200) });
export type ProfileChoice = z.infer<typeof ProfileChoice>;

export const SessionFreshness = z.object({
  /** `armed`: a pre-warmed session is waiting; `busy`: a verification uses it; `none`: no session yet. */
  state: z.enum(['none', 'armed', 'busy']),
  /** Local clock (ms) when the session in use or waiting was created, and when it expires. */
  createdAt: z.number().nullable(),
  expiresAt: z.number().nullable(),
});
export type SessionFreshness = z.infer<typeof SessionFreshness>;

export const StaffState = z.object({
  /** A staff PIN exists; without one the staff screens stay locked and say how to set it. */
  pinConfigured: z.boolean(),
  unlocked: z.boolean(),
  /** While unlocked: when the staff session ends by itself (ms since the epoch). */
  unlockedUntil: z.number().nullable(),
  /** After too many wrong PINs: when the next attempt is allowed. */
  lockedOutUntil: z.number().nullable(),
});
export type StaffState = z.infer<typeof StaffState>;

/** Where the NFC reader sits, seen from the customer facing the screen (`ui.readerPosition`). */
export const ReaderPosition = z.enum(['left', 'right', 'below']);
export type ReaderPosition = z.infer<typeof ReaderPosition>;

export const ScreenState = z.object({
  view: KioskView,
  profiles: z.array(ProfileChoice).max(100),
  language: Language,
  defaultLanguage: Language,
  /** Whether the screen should run the camera now (it is waiting for a scan), and which camera. */
  camera: z.object({
    scanning: z.boolean(),
    deviceId: z.string().max(512).nullable(),
    state: CameraState,
    /** Cap on decoded frames per second (keeps the CPU cool). */
    maxDecodesPerSecond: z.number().int().min(1).max(30),
  }),
  /** When the outcome or error on screen clears by itself (ms since the epoch), for a countdown. */
  clearsAt: z.number().nullable(),
  session: SessionFreshness,
  staff: StaffState,
  /** The embedded mock backend and virtual phone are in use: the screen shows TEST MODE. */
  testMode: z.boolean(),
  /** The backend's origin, for the staff status bar (never a path, query or credential). */
  backendOrigin: z.string().max(300).nullable(),
  /** The outcome a new customer replaced, for staff, until it would have cleared (no disclosed value). */
  replaced: ReplacedOutcome.nullable(),
  /** Where Ready points the customer to the NFC reader; absent: the installer did not say (no pointer). */
  readerPosition: ReaderPosition.optional(),
  /** Speech for customers who cannot see the screen (`speech.*`): when it speaks, how loud, its keys. */
  speech: SpeechSettings,
});
export type ScreenState = z.infer<typeof ScreenState>;

// ---------------------------------------------------------------- settings

/** Timeouts the staff may change on the counter, in milliseconds. */
export const EditableTimeouts = z.object({
  resultDisplayMs: z.number().int().min(5_000).max(300_000),
  errorDisplayMs: z.number().int().min(2_000).max(120_000),
  removePhoneMs: z.number().int().min(5_000).max(300_000),
});
export type EditableTimeouts = z.infer<typeof EditableTimeouts>;

/**
 * Where a locked setting comes from: the managed machine file (fleet policy), the environment, the command
 * line, or the QA setup's embedded backend.
 */
export const LockSource = z.enum(['managed', 'environment', 'command_line', 'test_setup']);
export type LockSource = z.infer<typeof LockSource>;

/** Settings as the staff screen shows them. The API key is write-only: only whether one is set comes back. */
export const Settings = z.object({
  backendUrl: z.string().max(2_000).nullable(),
  apiKeySet: z.boolean(),
  profile: z.string().max(100),
  pcscReader: z.string().max(300).nullable(),
  bleRoles: BleRoles,
  cameraDeviceId: z.string().max(512).nullable(),
  defaultLanguage: Language,
  timeouts: EditableTimeouts,
  speech: SpeechSettings,
  /** Keys set by the environment, the command line or a managed file: shown, not editable here. */
  locked: z.array(z.string().max(100)).max(50),
  /** Which source locks each locked key (the screen says where to change it). */
  lockedBy: z
    .record(z.string().max(100), LockSource)
    .refine((r) => Object.keys(r).length <= 50, { error: 'at most 50 keys' })
    .optional(),
});
export type Settings = z.infer<typeof Settings>;

export const SettingsUpdate = z
  .object({
    backendUrl: z.string().max(2_000).nullable(),
    /** A new API key; absent = unchanged. */
    apiKey: z.string().min(1).max(4_096),
    clearApiKey: z.literal(true),
    profile: z.string().min(1).max(100),
    pcscReader: z.string().max(300).nullable(),
    bleRoles: BleRoles,
    cameraDeviceId: z.string().max(512).nullable(),
    defaultLanguage: Language,
    timeouts: EditableTimeouts.partial(),
    speech: SpeechSettings.partial(),
  })
  .partial()
  .strict();
export type SettingsUpdate = z.infer<typeof SettingsUpdate>;

export const FieldError = z.object({ key: z.string().max(200), message: z.string().max(1_000) });
export type FieldError = z.infer<typeof FieldError>;

// ---------------------------------------------------------------- diagnostics and self-test

/** One recent event for the staff's diagnostics screen: categories and counts, never personal data. */
export const DiagnosticEvent = z.object({
  at: z.number(),
  level: z.enum(['info', 'warn', 'error']),
  event: z.string().max(100),
  detail: z.string().max(500).optional(),
});
export type DiagnosticEvent = z.infer<typeof DiagnosticEvent>;

/** The desktop application's updater (src/main/updater.ts), as diagnostics and the health record show it. */
export const UpdateStatus = z.object({
  state: z.enum(['disabled', 'idle', 'checking', 'downloading', 'downloaded', 'installing', 'error']),
  /** The version found, downloading or downloaded. */
  version: z.string().max(100).optional(),
  /** Why the last check, download or install failed (or why updates are off), for staff. */
  error: z.string().max(500).optional(),
  /** When the feed last answered (ms since the epoch). */
  checkedAt: z.number().optional(),
});
export type UpdateStatus = z.infer<typeof UpdateStatus>;

/** How the application around the kiosk is set up: shown to staff on the diagnostics screen. */
export const AppStatus = z.object({
  /** `qa` ships the simulators and always shows TEST MODE. */
  flavour: z.enum(['production', 'qa']),
  /**
   * How the API key is kept at rest. `basic-text`: Electron's Linux fallback without a keyring, which
   * only obfuscates with a fixed key (allowed by the managed file): unprotected.
   */
  secretsProtection: z.enum(['os-encrypted', 'basic-text', 'file-permissions', 'memory']),
  /** Why the secret store could not be read (staff can save the key again). */
  secretsProblem: z.string().max(500).optional(),
  /** Files holding the PIN hash or the API key that other users could read (found, and tightened, at start). */
  permissionProblems: z.array(z.string().max(500)).max(10).optional(),
  /** The managed machine configuration file, when there is one. */
  managedConfigPath: z.string().max(1_000).optional(),
  /** Every key the managed file sets (dotted paths): locked everywhere else. */
  managedKeys: z.array(z.string().max(200)).max(100),
  logDir: z.string().max(1_000).optional(),
  updates: UpdateStatus.optional(),
  /** The health record a monitoring agent reads. */
  healthFile: z.string().max(1_000).optional(),
  /** The operating system's camera consent (macOS, Windows; `not_applicable` on Linux). */
  cameraAccess: z.enum(['granted', 'denied', 'restricted', 'not_determined', 'unknown', 'not_applicable']).optional(),
});
export type AppStatus = z.infer<typeof AppStatus>;

/**
 * The backend's failures as the kiosk's retry policy counts them (src/kiosk/retry-policy.ts): the last one,
 * how many in a row since the backend last worked, every failure since start by kind, and the request
 * budget in use. The detail is the kiosk's own staff-facing English, free of secrets by construction.
 */
export const BackendFailures = z.object({
  lastFailure: z
    .object({
      kind: BackendFailureKind,
      stage: FailureStage,
      /** The HTTP status, when there was one (the proxy's for `proxy_refused`). */
      status: z.number().int().min(100).max(599).nullable(),
      detail: z.string().max(500),
      /** When it happened (ms since the epoch). */
      at: z.number(),
    })
    .nullable(),
  consecutive: z.number().int().min(0),
  totals: z.partialRecord(BackendFailureKind, z.number().int().min(0)),
  requestsLastMinute: z.number().int().min(0),
  maxRequestsPerMinute: z.number().int().min(1),
});
export type BackendFailures = z.infer<typeof BackendFailures>;

export const Diagnostics = z.object({
  version: z.string().max(100),
  startedAt: z.number(),
  events: z.array(DiagnosticEvent).max(500),
  counts: z.record(z.string().max(100), z.number().int().min(0)),
  app: AppStatus.optional(),
  /** Absent while no kiosk runs (its configuration cannot build one). */
  backend: BackendFailures.optional(),
  /** What the screen last said about speech, and the built-in voice. */
  speech: SpeechDiagnostics.optional(),
});
export type Diagnostics = z.infer<typeof Diagnostics>;

export const SelfTestCheck = z.object({
  name: z.enum(['backend', 'nfc', 'ble_central', 'ble_peripheral', 'camera']),
  ok: z.boolean(),
  /** A stable key the screen translates (`usable`, `no_reader`, `unreachable`, …). */
  status: z.string().max(100),
  /** Staff detail, free of secrets and personal data. */
  detail: z.string().max(500).optional(),
});
export type SelfTestCheck = z.infer<typeof SelfTestCheck>;

// ---------------------------------------------------------------- intents

const Empty = z.object({}).strict();
const Ok = z.object({ ok: z.literal(true) });

/**
 * What "Retry now" on Offline came to (src/kiosk/session-keeper.ts `RetryAttempt`): tried at `at` and the
 * backend answered or not (`detail`: the failure, backend-influenced text, bounded), or not tried because
 * the retry policy's request budget says wait (`waitMs`) or the kiosk is stopping.
 */
export const RetryAttempt = z.union([
  z.object({ tried: z.literal(true), at: z.number(), reachable: z.literal(true) }).strict(),
  z.object({ tried: z.literal(true), at: z.number(), reachable: z.literal(false), detail: z.string().max(300) }).strict(),
  z
    .object({
      tried: z.literal(false),
      at: z.number(),
      reason: z.enum(['request_budget', 'stopped']),
      waitMs: z.number().int().min(0).max(3_600_000).optional(),
    })
    .strict(),
]);
export type RetryAttempt = z.infer<typeof RetryAttempt>;

/** `attempt`: present when the retry was of the backend (Offline); absent for "Try again" after an error. */
export const RetryResult = z.object({ ok: z.literal(true), attempt: RetryAttempt.optional() }).strict();
export type RetryResult = z.infer<typeof RetryResult>;

export const QrScannedResult = z.union([
  z.object({ accepted: z.literal(true) }),
  /** `unreadable`: an `mdoc:` code whose engagement is cut short or damaged (a scanner dropped characters). */
  z.object({ accepted: z.literal(false), reason: z.enum(['empty', 'not_mdoc', 'unreadable', 'not_waiting']) }),
]);
export type QrScannedResult = z.infer<typeof QrScannedResult>;

export const UnlockResult = z.union([
  z.object({ ok: z.literal(true), unlockedUntil: z.number() }),
  z.object({
    ok: z.literal(false),
    reason: z.enum(['wrong_pin', 'locked_out', 'no_pin']),
    attemptsLeft: z.number().int().min(0).optional(),
    retryAfterMs: z.number().int().min(0).optional(),
  }),
]);
export type UnlockResult = z.infer<typeof UnlockResult>;

export const SaveResult = z.union([
  z.object({ ok: z.literal(true), settings: Settings }),
  z.object({ ok: z.literal(false), errors: z.array(FieldError).max(50) }),
]);
export type SaveResult = z.infer<typeof SaveResult>;

/** Bounds of a forwarded screen error (the screen truncates before sending). */
export const MAX_RENDERER_ERROR_MESSAGE = 500;
export const MAX_RENDERER_ERROR_STACK = 4_000;

export const RendererError = z
  .object({
    kind: z.enum(['error', 'unhandledrejection', 'render']),
    message: z.string().max(MAX_RENDERER_ERROR_MESSAGE),
    stack: z.string().max(MAX_RENDERER_ERROR_STACK).optional(),
  })
  .strict();
export type RendererError = z.infer<typeof RendererError>;

/** A removable volume a support bundle can be written to (src/service/removable-volumes.ts). */
export const SupportVolume = z.object({ id: z.string().min(1).max(4_096), label: z.string().max(255) }).strict();
export type SupportVolume = z.infer<typeof SupportVolume>;

/** Pins are digits only, 4 to 12 of them. */
export const Pin = z.string().regex(/^[0-9]{4,12}$/, { error: 'a PIN is 4 to 12 digits' });

/**
 * Every intent: its arguments and its result. `staff: true` intents are refused with `staff_required`
 * unless the staff session is unlocked.
 */
export const KIOSK_INTENTS = {
  /** A camera, a keyboard-wedge scanner or the staff paste field read this text. Sent unmodified. */
  qrScanned: { args: z.object({ text: z.string().max(MAX_QR_TEXT), source: ScanSource }).strict(), result: QrScannedResult, staff: false },
  /** "Next customer": clear the outcome or error now. */
  next: { args: Empty, result: Ok, staff: false },
  /** "Try again": re-arm now after an error, or retry the backend while offline (then says what came of it). */
  retry: { args: Empty, result: RetryResult, staff: false },
  /**
   * "Cancel" on "Tap your phone again": the customer gives up the verification that waits for the re-tap.
   * Only then (`cancelled: false` otherwise): other screens of a verification run to their own end.
   */
  cancel: { args: Empty, result: z.object({ cancelled: z.boolean() }), staff: false },
  /**
   * "More time" on an error screen (WCAG 2.2.1): the error stays longer (its `clearsAt` moves), a bounded
   * number of times; `extended: false` when nothing was extended (no error on screen, or presses spent).
   */
  moreTime: { args: Empty, result: z.object({ extended: z.boolean() }), staff: false },
  /** The customer's language for this visit; back to the default for the next customer. */
  setLanguage: { args: z.object({ language: Language }).strict(), result: Ok, staff: false },
  /** The renderer reports what its camera is doing (for the status bar, self-test and diagnostics). */
  reportCamera: { args: z.object({ state: CameraState, detail: z.string().max(300).optional() }).strict(), result: Ok, staff: false },
  unlock: { args: z.object({ pin: z.string().max(64) }).strict(), result: UnlockResult, staff: false },
  lock: { args: Empty, result: Ok, staff: false },
  setProfile: { args: z.object({ name: z.string().min(1).max(100) }).strict(), result: Ok, staff: true },
  getSettings: { args: Empty, result: Settings, staff: true },
  saveSettings: { args: SettingsUpdate, result: SaveResult, staff: true },
  changePin: {
    /** The current PIN again, so an unlocked screen left alone cannot be used to take the PIN over. */
    args: z.object({ current: z.string().max(64), next: Pin }).strict(),
    result: z.union([Ok, z.object({ ok: z.literal(false), errors: z.array(FieldError).max(10) })]),
    staff: true,
  },
  getDiagnostics: { args: Empty, result: Diagnostics, staff: true },
  selfTest: { args: Empty, result: z.object({ checks: z.array(SelfTestCheck).max(20) }), staff: true },
  /**
   * Writes a support bundle (no personal data, no secrets) into the kiosk's support folder, or onto one of
   * the removable volumes `listSupportVolumes` named (`volume`: its id); says where.
   */
  writeSupportBundle: {
    args: z.object({ volume: z.string().min(1).max(4_096).optional() }).strict(),
    result: z.object({ path: z.string().max(4_096), bytes: z.number().int().min(0) }),
    staff: true,
  },
  /**
   * Browser host: writes a support bundle and returns a one-time ticket for it, good for one download of
   * `/support-bundle/<ticket>` from this host within a minute (the staff's own browser saves it).
   */
  prepareSupportDownload: {
    args: Empty,
    result: z
      .object({ ticket: z.string().regex(/^[A-Za-z0-9_-]{43}$/), name: z.string().max(255), bytes: z.number().int().min(0) })
      .strict(),
    staff: true,
  },
  /** The removable volumes (USB sticks) mounted now, where a support bundle can go. */
  listSupportVolumes: { args: Empty, result: z.object({ volumes: z.array(SupportVolume).max(20) }), staff: true },
  /**
   * The built-in voice (eSpeak NG, offline, every OS): the samples for one utterance. The host never logs
   * the text; `private` texts are not cached either.
   */
  synthesizeSpeech: { args: SpeechRequest, result: SpeechAudio, staff: false },
  /** The screen reports its speech (voice, output, whether playing works) for diagnostics; never the text. */
  reportSpeech: { args: SpeechReport, result: Ok, staff: false },
  /** The screen hit an error (a script error, an unhandled rejection, a component that failed to render). */
  reportError: { args: RendererError, result: Ok, staff: false },
} as const;

export type IntentName = keyof typeof KIOSK_INTENTS;

/** Compile-time proof that the IPC contract (src/common/ipc-contract.ts) lists exactly these intents. */
type SameKeys<A extends PropertyKey, B extends PropertyKey> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
export const IPC_NAMES_MATCH: SameKeys<IntentName, IpcIntentName> = true;
export const INTENT_NAMES = Object.keys(KIOSK_INTENTS) as IntentName[];
export type IntentArgs<K extends IntentName> = z.input<(typeof KIOSK_INTENTS)[K]['args']>;
export type IntentResult<K extends IntentName> = z.infer<(typeof KIOSK_INTENTS)[K]['result']>;

/** The screen's view of the kiosk: one async function per intent, plus the state stream. */
export type KioskApi = { readonly [K in IntentName]: (args: IntentArgs<K>) => Promise<IntentResult<K>> } & {
  /** Calls `listener` with every new state (and at once with the current one, when known). */
  readonly onState: (listener: (state: ScreenState) => void) => () => void;
};

/** What a host implements; the dispatcher below validates around it. */
export type KioskApiHandlers = {
  readonly [K in IntentName]: (args: z.infer<(typeof KIOSK_INTENTS)[K]['args']>) => IntentResult<K> | Promise<IntentResult<K>>;
};

// ---------------------------------------------------------------- errors

export const ApiErrorCode = z.enum(['invalid_message', 'unknown_intent', 'invalid_args', 'staff_required', 'too_large', 'internal']);
export type ApiErrorCode = z.infer<typeof ApiErrorCode>;
export const ApiErrorBody = z.object({ code: ApiErrorCode, message: z.string().max(1_000) });
export type ApiErrorBody = z.infer<typeof ApiErrorBody>;

export class KioskApiError extends Error {
  override readonly name = 'KioskApiError';
  constructor(
    readonly code: ApiErrorCode,
    message: string,
  ) {
    super(message);
  }
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}

export function isIntentName(name: unknown): name is IntentName {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(KIOSK_INTENTS, name);
}

/**
 * Host side: validates the intent's name and arguments, checks the staff gate, runs the handler and
 * validates what it returns. Every failure is a {@link KioskApiError} with a clear message.
 */
export async function dispatchIntent(
  handlers: KioskApiHandlers,
  intent: unknown,
  args: unknown,
  staffUnlocked: () => boolean,
): Promise<unknown> {
  if (!isIntentName(intent)) {
    throw new KioskApiError(
      'unknown_intent',
      `unknown intent: ${typeof intent === 'string' ? JSON.stringify(intent.slice(0, 60)) : typeof intent}`,
    );
  }
  const spec = KIOSK_INTENTS[intent];
  const parsed = spec.args.safeParse(args ?? {});
  if (!parsed.success) throw new KioskApiError('invalid_args', `${intent}: ${describeIssues(parsed.error)}`);
  if (spec.staff && !staffUnlocked()) throw new KioskApiError('staff_required', `${intent} needs the staff PIN`);
  const handler = handlers[intent] as (a: unknown) => unknown;
  const result: unknown = await handler(parsed.data);
  const checked = spec.result.safeParse(result);
  if (!checked.success) throw new KioskApiError('internal', `${intent} produced an invalid result: ${describeIssues(checked.error)}`);
  return checked.data;
}

/** Screen side: validates a host's result for `intent`. */
export function parseIntentResult<K extends IntentName>(intent: K, result: unknown): IntentResult<K> {
  const checked = KIOSK_INTENTS[intent].result.safeParse(result);
  if (!checked.success)
    throw new KioskApiError('invalid_message', `${intent}: the host sent an invalid result: ${describeIssues(checked.error)}`);
  return checked.data as IntentResult<K>;
}

/** Screen side: validates a state pushed by a host. */
export function parseScreenState(value: unknown): ScreenState {
  const checked = ScreenState.safeParse(value);
  if (!checked.success) throw new KioskApiError('invalid_message', `the host sent an invalid state: ${describeIssues(checked.error)}`);
  return checked.data;
}

// ---------------------------------------------------------------- one transport: messages over a socket

/** Renderer → host. */
export const ClientMessage = z
  .object({
    type: z.literal('call'),
    id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    intent: z.string().max(60),
    args: z.unknown(),
  })
  .strict();
export type ClientMessage = z.infer<typeof ClientMessage>;

/** Host → renderer. A plain union: two `reply` shapes (ok / error) share one `type`, which a discriminated union refuses. */
export const HostMessage = z.union([
  z.object({ type: z.literal('state'), state: z.unknown() }),
  z.object({ type: z.literal('reply'), id: z.number().int().min(0), ok: z.literal(true), result: z.unknown() }),
  z.object({ type: z.literal('reply'), id: z.number().int().min(0), ok: z.literal(false), error: ApiErrorBody }),
  /** A message the host could not take at all (no id to answer): the renderer shows it to staff. */
  z.object({ type: z.literal('refused'), error: ApiErrorBody }),
]);
export type HostMessage = z.infer<typeof HostMessage>;

/**
 * Builds a `KioskApi` on any request/response transport (the browser host's WebSocket, the preload's
 * IPC): results and states are validated here, so the screen never renders what it did not check.
 */
export function createKioskApiClient(transport: {
  call(intent: IntentName, args: unknown): Promise<unknown>;
  onState(listener: (state: unknown) => void): () => void;
  onInvalidState?(error: KioskApiError): void;
}): KioskApi {
  const api: Record<string, unknown> = {};
  for (const intent of INTENT_NAMES) {
    api[intent] = async (args: unknown) => parseIntentResult(intent, await transport.call(intent, args ?? {}));
  }
  api.onState = (listener: (state: ScreenState) => void) =>
    transport.onState((raw) => {
      let state: ScreenState;
      try {
        state = parseScreenState(raw);
      } catch (e) {
        transport.onInvalidState?.(e as KioskApiError);
        return;
      }
      listener(state);
    });
  return api as KioskApi;
}
