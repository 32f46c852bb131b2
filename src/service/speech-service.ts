/**
 * The service's side of speech (docs/speech-voice.md): `synthesizeSpeech` through the built-in voice (the
 * voice process, devices/speech/), with fixed prompts cached so a screen's prompt starts fast, and
 * `reportSpeech`, the screen's last word on its speech, for diagnostics and the support bundle.
 *
 * Privacy: a text is never logged, never written anywhere, and a `private` one (what only a headset may
 * say) is not cached either: it lives only as long as its request. The cache holds the texts of fixed
 * prompts in memory, bounded by entries and bytes, and is dropped when the service stops.
 */
import { KioskApiError } from '../common/kiosk-api.js';
import type { BuiltInVoiceStatus, SpeechAudio, SpeechDiagnostics, SpeechReport, SpeechRequest } from '../common/speech.js';
import { MAX_SPEECH_PCM_BASE64 } from '../common/speech.js';
import type { ChildLauncher } from '../devices/shared/child-launcher.js';
import { VoiceError, VoiceProcess, type VoiceLog, type VoiceStatus } from '../devices/speech/voice-process.js';
import { VOICE_OF_LANGUAGE, wordsPerMinute } from '../devices/speech/voices.js';

export interface SpeechServiceOptions {
  /** Starts the voice process; undefined: this host has no built-in voice (tests, a support-bundle run). */
  readonly launcher: ChildLauncher | undefined;
  readonly log: () => VoiceLog;
  /** Cache bounds (default 64 utterances, 8 MiB of base64: the screen's prompts in three languages fit). */
  readonly cacheEntries?: number;
  readonly cacheBytes?: number;
  /** The voice process's own bounds (tests shorten them). */
  readonly deadlineMs?: number;
  readonly maxQueue?: number;
}

/** A least-recently-used map bounded by entries and by the bytes of its values. */
export class AudioCache {
  private readonly entries = new Map<string, SpeechAudio>();
  private bytes = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get usedBytes(): number {
    return this.bytes;
  }

  get(key: string): SpeechAudio | undefined {
    const hit = this.entries.get(key);
    if (hit === undefined) return undefined;
    // Map keeps insertion order: moving a hit to the end makes the first entry the least recently used.
    this.entries.delete(key);
    this.entries.set(key, hit);
    return hit;
  }

  set(key: string, audio: SpeechAudio): void {
    const size = audio.pcm.length;
    if (size > this.maxBytes) return;
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.bytes -= old.pcm.length;
    }
    this.entries.set(key, audio);
    this.bytes += size;
    for (const [oldest, value] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= value.pcm.length;
    }
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}

const NOT_SET_UP: BuiltInVoiceStatus = {
  state: 'stopped',
  engine: 'eSpeak NG',
  detail: 'this host runs no built-in voice',
  made: 0,
  medianMs: null,
};

export class SpeechService {
  private readonly voice: VoiceProcess | undefined;
  private readonly cache: AudioCache;
  private screen: SpeechReport | null = null;

  constructor(options: SpeechServiceOptions) {
    this.cache = new AudioCache(options.cacheEntries ?? 64, options.cacheBytes ?? 8 * 1024 * 1024);
    const log: VoiceLog = {
      info: (fields, message) => options.log().info({ component: 'speech', ...fields }, message),
      warn: (fields, message) => options.log().warn({ component: 'speech', ...fields }, message),
    };
    this.voice =
      options.launcher === undefined
        ? undefined
        : new VoiceProcess({
            launcher: options.launcher,
            log,
            ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
            ...(options.maxQueue === undefined ? {} : { maxQueue: options.maxQueue }),
          });
  }

  /** Starts the voice process (the service's start, unless `speech.mode` is `off`). */
  start(): void {
    this.voice?.start();
  }

  /** The voice process's pid while one runs (tests). */
  get voicePid(): number | undefined {
    return this.voice?.pid;
  }

  async synthesize(request: SpeechRequest): Promise<SpeechAudio> {
    if (this.voice === undefined) throw new KioskApiError('internal', 'this kiosk has no built-in voice: use a system voice');
    const wpm = wordsPerMinute(request.rate);
    const voiceName = VOICE_OF_LANGUAGE[request.language];
    const key = `${voiceName}\u0000${wpm}\u0000${request.text}`;
    if (request.private !== true) {
      const hit = this.cache.get(key);
      if (hit !== undefined) return hit;
    }
    let audio: SpeechAudio;
    try {
      const made = await this.voice.speak(request.text, voiceName, wpm);
      audio = {
        sampleRate: made.sampleRate,
        pcm: Buffer.from(made.pcm.buffer, made.pcm.byteOffset, made.pcm.byteLength).toString('base64'),
        engine: made.engine,
      };
    } catch (e) {
      // The screen tells a full queue or a missed deadline from the message; the contract has no code of its own for them.
      if (e instanceof VoiceError) throw new KioskApiError('internal', e.message);
      throw e;
    }
    if (audio.pcm.length > MAX_SPEECH_PCM_BASE64) throw new KioskApiError('internal', 'the utterance is longer than one answer may carry');
    if (request.private !== true) this.cache.set(key, audio);
    return audio;
  }

  /** The screen's report, kept as the last one (it carries no text: the schema has none). */
  report(report: SpeechReport): void {
    this.screen = report;
  }

  builtInStatus(): BuiltInVoiceStatus {
    if (this.voice === undefined) return NOT_SET_UP;
    const status: VoiceStatus = this.voice.status();
    return {
      state: status.state,
      engine: status.engine.slice(0, 100),
      ...(status.detail === undefined ? {} : { detail: status.detail.slice(0, 300) }),
      made: status.made,
      medianMs: status.medianMs,
    };
  }

  diagnostics(): SpeechDiagnostics {
    return { screen: this.screen, builtIn: this.builtInStatus() };
  }

  /** Ends the voice process and drops the cache. */
  async close(): Promise<void> {
    this.cache.clear();
    await this.voice?.close();
  }
}
