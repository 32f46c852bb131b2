/**
 * Which eSpeak NG voice speaks each of the screen's languages, and how a speaking rate becomes words per
 * minute. English is `en-us`: the mobile driving licences the kiosk verifies (ISO/IEC 18013-5) are deployed
 * first by US states, and the outcome it speaks most ("21 or older") is a US age check; British English is
 * eSpeak NG's `en` (its WebAssembly build ignores `en-gb`, keeping the previous voice without a word: a
 * name is added to VoiceName only once a test has heard it). Spanish is `es` (Castilian) and French `fr`
 * (France): eSpeak NG's default voices of those languages.
 */
import type { SpeechRequest } from '../../common/speech.js';
import { MAX_WPM, MIN_WPM, type VoiceName } from './voice-protocol.js';

export const VOICE_OF_LANGUAGE: Readonly<Record<SpeechRequest['language'], VoiceName>> = { en: 'en-us', es: 'es', fr: 'fr' };

/** eSpeak NG's normal rate (its `-s` default), which `rate: 1` means. */
export const NORMAL_WPM = 175;

/** `rate` (1 = normal, 0.5–2) as eSpeak NG's words per minute, within its bounds. */
export function wordsPerMinute(rate = 1): number {
  return Math.min(MAX_WPM, Math.max(MIN_WPM, Math.round(NORMAL_WPM * rate)));
}
