/**
 * Which voice speaks, and what happens when it fails. `speech.voice`: `auto` takes the OS voice for the
 * language when a local one exists, else the built-in one; `system` and `built_in` force one (with the
 * other as the fallback). A headset that is not the default output can only be reached by the built-in
 * voice (the Web Speech API always speaks on the default output), so private listening there takes it,
 * with no fallback: the speaker must not say a private answer instead.
 */
import type { SpeechVoice } from '../../common/speech.js';
import type { SpeakOptions, SpeechEngine, SpeechHandle } from './speech-scheduler.js';
import type { Utterance } from './utterances.js';

export type EngineKind = 'system' | 'built_in';

export function chooseVoice(setting: SpeechVoice, hasSystemVoice: boolean, mustRoute: boolean): EngineKind {
  if (mustRoute) return 'built_in';
  if (setting === 'built_in') return 'built_in';
  if (setting === 'system') return hasSystemVoice ? 'system' : 'built_in';
  return hasSystemVoice ? 'system' : 'built_in';
}

export interface NamedEngine {
  readonly kind: EngineKind;
  readonly engine: SpeechEngine;
}

/**
 * Speaks with the first engine; when it fails before any sound, with the second (one after the other, never
 * both). `used` says which engine spoke last ('none' when both failed).
 */
export class FallbackVoice implements SpeechEngine {
  private readonly first: NamedEngine;
  private readonly second: NamedEngine | null;
  used: EngineKind | 'none' | null = null;

  constructor(first: NamedEngine, second: NamedEngine | null) {
    this.first = first;
    this.second = second;
  }

  speak(utterance: Utterance, options: SpeakOptions): SpeechHandle {
    let current = this.first.engine.speak(utterance, options);
    // An object, not lets: cancel(), pause() and setVolume() change it while the first engine plays.
    const control = { cancelled: false, paused: false, volume: options.volume };
    let resolveStarted: (started: boolean) => void = () => undefined;
    const started = new Promise<boolean>((resolve) => {
      resolveStarted = resolve;
    });
    const watchStart = (handle: SpeechHandle, kind: EngineKind): void => {
      void handle.started.then((yes) => {
        if (yes && handle === current) {
          this.used = kind;
          resolveStarted(true);
        }
      });
    };
    watchStart(current, this.first.kind);
    const done = (async (): Promise<void> => {
      try {
        await current.done;
        if (this.used === null) this.used = this.first.kind;
      } catch (e) {
        const second = this.second;
        if (control.cancelled || second === null) {
          this.used = 'none';
          throw e;
        }
        current = second.engine.speak(utterance, { ...options, volume: control.volume });
        if (control.paused) current.pause();
        watchStart(current, second.kind);
        try {
          await current.done;
        } catch (again) {
          this.used = 'none';
          const why = (x: unknown): string => (x instanceof Error ? x.message : String(x));
          throw new Error(`${why(e)}; ${why(again)}`);
        }
      }
    })().finally(() => resolveStarted(false));
    return {
      done,
      started,
      cancel: () => {
        control.cancelled = true;
        current.cancel();
      },
      pause: () => {
        control.paused = true;
        current.pause();
      },
      resume: () => {
        control.paused = false;
        current.resume();
      },
      setVolume: (value) => {
        control.volume = value;
        current.setVolume?.(value);
      },
    };
  }
}
