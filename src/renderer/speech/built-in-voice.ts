/**
 * The built-in voice (eSpeak NG in the host, offline, the same on every OS): the host makes 16-bit samples
 * (`synthesizeSpeech`), the screen plays them through one AudioContext — a gain node for the volume (it
 * changes what plays now), `setSinkId` to route to a headset that is not the default output (only this
 * voice can be routed: the Web Speech API always speaks on the default output), and `resume()` after a user
 * gesture (Chromium keeps a context suspended until one; a keypad press counts).
 *
 * Texts go sentence by sentence: the first sentence is asked for first, and the next is made while the first
 * plays (start latency). Fixed prompts' audio is cached here (bounded); a private text is never cached.
 */
import type { KioskApi, Language } from '../../common/kiosk-api.js';
import type { SpeechAudio } from '../../common/speech.js';
import { MAX_SPEECH_TEXT } from '../../common/speech.js';
import type { SpeakOptions, SpeechEngine, SpeechHandle } from './speech-scheduler.js';
import { splitSentences } from './sentences.js';
import type { Utterance } from './utterances.js';

/** Pieces of audio kept (fixed prompts × languages fit; each is at most a few hundred kB). */
export const AUDIO_CACHE_ENTRIES = 64;

/** base64 16-bit little-endian mono → floats in −1…1. */
export function pcmToFloat(base64: string): Float32Array<ArrayBuffer> {
  const binary = atob(base64);
  const count = Math.floor(binary.length / 2);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const value = binary.charCodeAt(2 * i) | (binary.charCodeAt(2 * i + 1) << 8);
    out[i] = (value >= 0x8000 ? value - 0x10000 : value) / 0x8000;
  }
  return out;
}

type SinkContext = AudioContext & { setSinkId?: (sinkId: string) => Promise<void> };

export type Synthesize = KioskApi['synthesizeSpeech'];

export class BuiltInVoice implements SpeechEngine {
  private readonly synthesize: Synthesize;
  private readonly makeContext: () => AudioContext;
  private audioContext: SinkContext | null = null;
  private readonly cache = new Map<string, AudioBuffer>();
  private sinkId = '';
  /** What the host's voice calls itself (`espeak-ng 1.51 (wasm)`), once it answered. */
  engineName = '';

  constructor(synthesize: Synthesize, makeContext: () => AudioContext = () => new AudioContext()) {
    this.synthesize = synthesize;
    this.makeContext = makeContext;
  }

  /** Whether this page can route audio to a chosen output. */
  static canRoute(): boolean {
    return typeof AudioContext !== 'undefined' && 'setSinkId' in AudioContext.prototype;
  }

  /** The context's state (`running` once a user gesture let it play), or null before the first use. */
  contextState(): AudioContextState | null {
    return this.audioContext?.state ?? null;
  }

  /** Routes to `deviceId` ('' the default output). Resolves false when the page cannot route. */
  async routeTo(deviceId: string): Promise<boolean> {
    this.sinkId = deviceId;
    const context = this.audioContext;
    if (context === null) return BuiltInVoice.canRoute();
    if (typeof context.setSinkId !== 'function') return deviceId === '';
    await context.setSinkId(deviceId);
    return true;
  }

  /** A user gesture happened: let the context play (Chromium's autoplay rule). */
  unlock(): void {
    const context = this.context();
    if (context.state === 'suspended') void context.resume().catch(() => undefined);
  }

  private context(): SinkContext {
    if (this.audioContext === null || this.audioContext.state === 'closed') {
      this.audioContext = this.makeContext();
      if (this.sinkId !== '' && typeof this.audioContext.setSinkId === 'function')
        void this.audioContext.setSinkId(this.sinkId).catch(() => undefined);
    }
    return this.audioContext;
  }

  private async buffer(text: string, language: Language, rate: number, privateText: boolean): Promise<AudioBuffer> {
    const key = `${language}\n${rate}\n${text}`;
    const cached = this.cache.get(key);
    if (cached) {
      // Least recently used goes first: move this one to the end.
      this.cache.delete(key);
      this.cache.set(key, cached);
      return cached;
    }
    const audio: SpeechAudio = await this.synthesize({
      text: text.slice(0, MAX_SPEECH_TEXT),
      language,
      ...(rate === 1 ? {} : { rate }),
      ...(privateText ? { private: true } : {}),
    });
    this.engineName = audio.engine;
    const samples = pcmToFloat(audio.pcm);
    if (samples.length === 0) throw new Error('the built-in voice returned no audio');
    // A buffer needs no context: a prefetch before any gesture creates none (and no suspended one lingers).
    const buffer = new AudioBuffer({ numberOfChannels: 1, length: samples.length, sampleRate: audio.sampleRate });
    buffer.copyToChannel(samples, 0);
    if (!privateText) {
      this.cache.set(key, buffer);
      while (this.cache.size > AUDIO_CACHE_ENTRIES) {
        const oldest = this.cache.keys().next().value;
        if (oldest === undefined) break;
        this.cache.delete(oldest);
      }
    }
    return buffer;
  }

  /**
   * Makes the first sentence of a screen's prompt before anyone asks (not private texts: those are never
   * kept), so the first key press or headset on that screen starts at once. Failures are left to `speak`.
   */
  prefetch(utterance: Utterance, rate = 1): void {
    if (utterance.private) return;
    const first = splitSentences(utterance.text)[0];
    if (first !== undefined) this.buffer(first, utterance.language, rate, false).catch(() => undefined);
  }

  speak(utterance: Utterance, options: SpeakOptions): SpeechHandle {
    const pieces = splitSentences(utterance.text);
    const context = this.context();
    if (context.state === 'suspended') void context.resume().catch(() => undefined);
    const gain = context.createGain();
    gain.gain.value = options.volume;
    gain.connect(context.destination);
    // An object, not a let: the flag is set by cancel() while run() awaits.
    const control = { cancelled: false };
    const isCancelled = (): boolean => control.cancelled;
    let source: AudioBufferSourceNode | null = null;
    let endPiece: () => void = () => undefined;
    let resolveStarted: (started: boolean) => void = () => undefined;
    const started = new Promise<boolean>((resolve) => {
      resolveStarted = resolve;
    });

    const playOne = (buffer: AudioBuffer): Promise<void> =>
      new Promise<void>((resolve) => {
        const node = context.createBufferSource();
        node.buffer = buffer;
        node.connect(gain);
        node.onended = () => resolve();
        endPiece = resolve;
        source = node;
        node.start();
        // Playing reaches the output only in a running context (a suspended one waits for a gesture).
        resolveStarted(context.state === 'running');
      });

    const run = async (): Promise<void> => {
      let next: Promise<AudioBuffer> | null = this.buffer(pieces[0] ?? '', utterance.language, options.rate, utterance.private);
      for (let i = 0; i < pieces.length && next !== null; i++) {
        const buffer = await next;
        if (isCancelled()) return;
        // The next sentence is made while this one plays.
        next = i + 1 < pieces.length ? this.buffer(pieces[i + 1] ?? '', utterance.language, options.rate, utterance.private) : null;
        next?.catch(() => undefined);
        await playOne(buffer);
        if (isCancelled()) return;
      }
    };
    const done = run().finally(() => {
      resolveStarted(false);
      gain.disconnect();
    });
    return {
      done,
      started,
      cancel: () => {
        if (control.cancelled) return;
        control.cancelled = true;
        const playing: AudioBufferSourceNode | null = source;
        if (playing !== null) {
          playing.onended = null;
          try {
            playing.stop();
          } catch {
            // Never started or already stopped: nothing plays.
          }
        }
        endPiece();
      },
      pause: () => void context.suspend().catch(() => undefined),
      resume: () => void context.resume().catch(() => undefined),
      setVolume: (volume) => {
        gain.gain.value = volume;
      },
    };
  }
}
