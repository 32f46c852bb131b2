/**
 * The messages between the kiosk and its built-in voice process (eSpeak NG in a process of its own,
 * docs/speech-voice.md). Both sides validate what they receive against these schemas, with bounded sizes;
 * a message that does not parse is dropped (the child) or ends the request it names (the parent), never
 * thrown at the receiver. Samples travel as bytes (16-bit little-endian mono): structured clone keeps them
 * binary over Node's `fork` (`serialization: 'advanced'`) and Electron's `utilityProcess` alike.
 */
import { z } from 'zod';
import { MAX_SPEECH_TEXT } from '../../common/speech.js';

/** 60 s of 16-bit mono at 22,050 Hz: the longest utterance (600 characters at half speed) is well inside. */
export const MAX_VOICE_PCM_BYTES = 60 * 22_050 * 2;
/** eSpeak NG's own bounds on the speaking rate (words per minute). */
export const MIN_WPM = 80;
export const MAX_WPM = 450;
/** The voices the child may be asked for (eSpeak NG identifiers). */
export const VoiceName = z.enum(['en-us', 'es', 'fr']);
export type VoiceName = z.infer<typeof VoiceName>;

const Id = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const Text = z.string().min(1).max(MAX_SPEECH_TEXT);
const Detail = z.string().max(300);
const Pcm = z
  .custom<Uint8Array>((v) => v instanceof Uint8Array, { message: 'expected bytes (Uint8Array)' })
  .refine((b) => b.byteLength <= MAX_VOICE_PCM_BYTES && b.byteLength % 2 === 0, {
    message: `not 16-bit samples of at most ${MAX_VOICE_PCM_BYTES} bytes`,
  });

export const VoiceParentMessage = z.discriminatedUnion('t', [
  /** The samples of one utterance. */
  z.strictObject({ t: z.literal('speak'), id: Id, text: Text, voice: VoiceName, wpm: z.number().int().min(MIN_WPM).max(MAX_WPM) }),
  /** The phonemes eSpeak NG makes of a text (IPA), for the tests that hear it and for staff checks of a voice. */
  z.strictObject({ t: z.literal('phonemes'), id: Id, text: Text, voice: VoiceName }),
  z.strictObject({ t: z.literal('shutdown') }),
]);
export type VoiceParentMessage = z.infer<typeof VoiceParentMessage>;

export const VoiceChildMessage = z.discriminatedUnion('t', [
  /** The engine is loaded: its name for diagnostics, and how long loading took. */
  z.strictObject({
    t: z.literal('ready'),
    engine: z.string().min(1).max(100),
    sampleRate: z.number().int().min(8_000).max(48_000),
    initMs: z.number().min(0),
  }),
  /** The engine could not be loaded (the process then exits). */
  z.strictObject({ t: z.literal('failed'), detail: Detail }),
  z.strictObject({ t: z.literal('audio'), id: Id, pcm: Pcm, ms: z.number().min(0) }),
  z.strictObject({ t: z.literal('phonemes'), id: Id, ipa: z.string().max(20 * MAX_SPEECH_TEXT) }),
  /** One request failed; the message never holds the text. */
  z.strictObject({ t: z.literal('error'), id: Id, detail: Detail }),
]);
export type VoiceChildMessage = z.infer<typeof VoiceChildMessage>;

/** The first issue of a failed parse, without the value (which may be a customer's text): zod 4 names the path and the rule only. */
export { describeIssue as describeVoiceIssue } from '../ble/radio-process/protocol.js';
