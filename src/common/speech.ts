/**
 * Speech for customers who cannot see the screen (EN 301 549 §5.1.3, closed functionality): what the staff
 * and the managed file set, what the screen asks the built-in voice for, and what it reports back for
 * diagnostics. The screen composes what is said from the view in the customer's language; the built-in voice
 * (eSpeak NG in a process of its own) turns text into samples; the OS voices are the screen's own.
 */
import { z } from 'zod';

/** `KeyboardEvent.code` values (`Numpad5`, `Digit5`, `NumpadEnter`, `KeyL` …): the physical key, whatever the layout. */
export const KeyCode = z.string().regex(/^[A-Za-z0-9]{1,32}$/, { error: 'a KeyboardEvent.code such as Numpad5 or NumpadEnter' });

/** What each key does while a customer screen is shown (never on the staff screens). */
export const SpeechKeys = z
  .object({
    /** Turns speech on for this customer; once on, the same key repeats what was last said. */
    start: z.array(KeyCode).max(8),
    /** Pauses or resumes what is being said (EN 301 549 §5.1.3.4). */
    pause: z.array(KeyCode).max(8),
    volumeUp: z.array(KeyCode).max(8),
    volumeDown: z.array(KeyCode).max(8),
    /** The next language (EN → ES → FR → EN), said in that language. */
    language: z.array(KeyCode).max(8),
    /** Turns speech off for this customer. */
    stop: z.array(KeyCode).max(8),
  })
  .strict();
export type SpeechKeys = z.infer<typeof SpeechKeys>;

/**
 * Defaults for a USB keypad (numeric keypad with the tactile dot on 5, as ATMs and fare machines have) and
 * a keyboard: 5 or keypad Enter starts and repeats, 0 pauses, + and − (or ↑ and ↓) set the volume, * the
 * language, / ends speech.
 */
export const DEFAULT_SPEECH_KEYS: SpeechKeys = {
  start: ['Numpad5', 'Digit5', 'NumpadEnter'],
  pause: ['Numpad0', 'Digit0'],
  volumeUp: ['NumpadAdd', 'ArrowUp'],
  volumeDown: ['NumpadSubtract', 'ArrowDown'],
  language: ['NumpadMultiply', 'KeyL'],
  stop: ['NumpadDivide'],
};

/**
 * When the kiosk speaks. `on_request`: silent until a customer asks (a start key, a headset plugged in, or
 * staff turning it on for the visit); `always`: every customer screen is spoken; `off`: never.
 */
export const SpeechMode = z.enum(['off', 'on_request', 'always']);
export type SpeechMode = z.infer<typeof SpeechMode>;

/** Which voice: `auto` an OS voice for the language when there is one, else the built-in one. */
export const SpeechVoice = z.enum(['auto', 'system', 'built_in']);
export type SpeechVoice = z.infer<typeof SpeechVoice>;

/** An mdoc data element identifier staff allow a headset to say (`given_name`, `age_over_21` …). */
export const SpeakableElement = z.string().regex(/^[a-z0-9_]{1,64}$/, { error: 'a data element identifier such as given_name' });

export const SpeechSettings = z
  .object({
    mode: SpeechMode,
    /** The volume each customer starts at, 0.1–1 (it goes back to this after every customer, EN 301 549 §5.1.3.13). */
    volume: z.number().min(0.1).max(1),
    voice: SpeechVoice,
    /** Speak only through a headset: the speaker stays silent even when speech is on. */
    headsetOnly: z.boolean(),
    /**
     * How the screen knows a headset: empty, any audio output whose name says headset, headphone or
     * earphone; otherwise part of the output's name (the kiosk's own jack, a USB headset adapter).
     */
    headsetOutput: z.string().max(200),
    /** What a headset may say beyond the answer (the speaker never says any of the holder's data). */
    privateElements: z.array(SpeakableElement).max(20),
    keys: SpeechKeys,
  })
  .strict();
export type SpeechSettings = z.infer<typeof SpeechSettings>;

export const DEFAULT_SPEECH_SETTINGS: SpeechSettings = {
  mode: 'on_request',
  volume: 0.8,
  voice: 'auto',
  headsetOnly: false,
  headsetOutput: '',
  privateElements: [],
  keys: DEFAULT_SPEECH_KEYS,
};

/** Longest text the built-in voice takes at once (the longest outcome answer with private elements fits). */
export const MAX_SPEECH_TEXT = 600;
/** The built-in voice's sample rate (eSpeak NG's). */
export const SPEECH_SAMPLE_RATE = 22_050;
/** Bound on the samples one request returns: 60 s of 16-bit mono, base64. */
export const MAX_SPEECH_PCM_BASE64 = Math.ceil((60 * SPEECH_SAMPLE_RATE * 2 * 4) / 3) + 4;

export const SpeechRequest = z
  .object({
    text: z.string().min(1).max(MAX_SPEECH_TEXT),
    language: z.enum(['en', 'es', 'fr']),
    /** Speaking rate, 1 = the voice's normal. */
    rate: z.number().min(0.5).max(2).optional(),
    /**
     * The text holds what only a headset may say: the host neither caches nor keeps it (fixed prompts are
     * cached to start fast).
     */
    private: z.boolean().optional(),
  })
  .strict();
export type SpeechRequest = z.infer<typeof SpeechRequest>;

export const SpeechAudio = z
  .object({
    sampleRate: z.number().int().min(8_000).max(48_000),
    /** 16-bit little-endian mono samples, base64. */
    pcm: z.string().max(MAX_SPEECH_PCM_BASE64),
    /** Which engine made them, for diagnostics (`espeak-ng 1.51 (wasm)`). */
    engine: z.string().max(100),
  })
  .strict();
export type SpeechAudio = z.infer<typeof SpeechAudio>;

/** What the screen reports about speech, for diagnostics and the support bundle (no utterance text). */
export const SpeechReport = z
  .object({
    /** Speech is on for the customer at the screen now. */
    active: z.boolean(),
    /** The voice in use: `system` (its name) or `built_in`; `none` when there is no working voice. */
    engine: z.enum(['system', 'built_in', 'none']),
    voiceName: z.string().max(200),
    /** Where speech goes: the speaker, a headset (private), or nowhere (no output device). */
    output: z.enum(['speaker', 'headset', 'none']),
    outputName: z.string().max(200),
    /** The last attempt to play reached the output (`null`: nothing played yet). */
    outputWorks: z.boolean().nullable(),
    /** Why it did not, for staff. */
    problem: z.string().max(300).optional(),
    /** OS voices the screen found per language (names). */
    systemVoices: z.partialRecord(z.enum(['en', 'es', 'fr']), z.array(z.string().max(200)).max(20)),
  })
  .strict();
export type SpeechReport = z.infer<typeof SpeechReport>;

/** The built-in voice as the host sees it. */
export const BuiltInVoiceStatus = z
  .object({
    state: z.enum(['starting', 'ready', 'failed', 'stopped']),
    engine: z.string().max(100),
    detail: z.string().max(300).optional(),
    /** Utterances made since start, and the median time to make one (ms). */
    made: z.number().int().min(0),
    medianMs: z.number().min(0).nullable(),
  })
  .strict();
export type BuiltInVoiceStatus = z.infer<typeof BuiltInVoiceStatus>;

/** Diagnostics' speech section: the screen's last report and the built-in voice. */
export const SpeechDiagnostics = z
  .object({
    screen: SpeechReport.nullable(),
    builtIn: BuiltInVoiceStatus,
  })
  .strict();
export type SpeechDiagnostics = z.infer<typeof SpeechDiagnostics>;
