/**
 * The OS voice through the Web Speech API (Chromium in Electron: SAPI on Windows, AVSpeechSynthesizer on
 * macOS, speech-dispatcher on Linux when installed). Only local voices: a network voice would send what is
 * said to someone else's server, and it needs a network the kiosk may not have. Chromium's quirks handled:
 * the voice list arrives late (`voiceschanged`), `cancel()` is the only reliable interrupt, and long
 * utterances can stall — so text goes sentence by sentence.
 */
import type { Language } from '../../common/kiosk-api.js';
import type { SpeakOptions, SpeechEngine, SpeechHandle } from './speech-scheduler.js';
import { splitSentences } from './sentences.js';
import type { Utterance } from './utterances.js';

/** The local voices for a language, the platform's default first. */
export function localVoicesFor(voices: readonly SpeechSynthesisVoice[], language: Language): SpeechSynthesisVoice[] {
  const matching = voices.filter((voice) => voice.localService && voice.lang.toLowerCase().replace('_', '-').split('-')[0] === language);
  return matching.sort((a, b) => Number(b.default) - Number(a.default));
}

export class SystemVoice implements SpeechEngine {
  private readonly synth: SpeechSynthesis;

  constructor(synth: SpeechSynthesis) {
    this.synth = synth;
  }

  /** The Web Speech API when the page has one. */
  static available(): SpeechSynthesis | null {
    return typeof window !== 'undefined' && 'speechSynthesis' in window ? window.speechSynthesis : null;
  }

  voiceFor(language: Language): SpeechSynthesisVoice | null {
    return localVoicesFor(this.synth.getVoices(), language)[0] ?? null;
  }

  /** Names of the local voices per language, for diagnostics. */
  voiceNames(): Partial<Record<Language, string[]>> {
    const voices = this.synth.getVoices();
    const out: Partial<Record<Language, string[]>> = {};
    for (const language of ['en', 'es', 'fr'] as const) {
      const names = localVoicesFor(voices, language).map((voice) => voice.name.slice(0, 200));
      if (names.length > 0) out[language] = names.slice(0, 20);
    }
    return out;
  }

  /** Calls `listener` when the voice list changes (it fills in after start); returns the unsubscribe. */
  onVoicesChanged(listener: () => void): () => void {
    this.synth.addEventListener('voiceschanged', listener);
    return () => this.synth.removeEventListener('voiceschanged', listener);
  }

  speak(utterance: Utterance, options: SpeakOptions): SpeechHandle {
    const voice = this.voiceFor(utterance.language);
    const pieces = splitSentences(utterance.text);
    const synth = this.synth;
    let cancelled = false;
    let volume = options.volume;
    let resolveStarted: (started: boolean) => void = () => undefined;
    const started = new Promise<boolean>((resolve) => {
      resolveStarted = resolve;
    });
    // Anything queued by someone else (or a stalled utterance) goes first: never two at once.
    synth.cancel();
    const done = new Promise<void>((resolve, reject) => {
      if (voice === null) {
        resolveStarted(false);
        reject(new Error(`no local system voice for ${utterance.language}`));
        return;
      }
      const next = (index: number): void => {
        if (cancelled || index >= pieces.length) {
          resolve();
          return;
        }
        const piece = new SpeechSynthesisUtterance(pieces[index]);
        piece.voice = voice;
        piece.lang = voice.lang;
        piece.volume = volume;
        piece.rate = options.rate;
        piece.onstart = () => resolveStarted(true);
        piece.onend = () => next(index + 1);
        piece.onerror = (event) => {
          // `interrupted`/`canceled` are our own cancel; anything else is a voice that failed.
          if (cancelled || event.error === 'interrupted' || event.error === 'canceled') resolve();
          else {
            resolveStarted(false);
            reject(new Error(`system voice: ${event.error}`));
          }
        };
        synth.speak(piece);
      };
      next(0);
    });
    done.then(
      () => resolveStarted(false),
      () => resolveStarted(false),
    );
    return {
      done,
      started,
      cancel: () => {
        if (cancelled) return;
        cancelled = true;
        synth.cancel();
      },
      pause: () => synth.pause(),
      resume: () => synth.resume(),
      // The Web Speech API cannot change a playing utterance's volume: the next sentence gets it.
      setVolume: (value) => {
        volume = value;
      },
    };
  }
}
