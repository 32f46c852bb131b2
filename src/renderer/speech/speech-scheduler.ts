/**
 * When speech plays (pure: the engine, the clock and the timing marks are handed in). EN 301 549 §5.1.3.4
 * (the user pauses and repeats), EN 301 549 §5.1.3.5 (speech stops when the screen moves on), EN 301 549 §5.1.3.13 (volume back
 * to the default for the next user):
 *
 * - a new utterance for the screen cuts off the one playing, then starts (never two at once);
 * - the same utterance shown again (a re-render, a republished view) is not restarted;
 * - repeat says the last one again; pause and resume hold it; volume steps by 10 % within 0.1–1, applied
 *   to what plays next and, when the engine can, to what plays now;
 * - `resetForNextCustomer` cuts off, puts the volume back to the staff default and, in `on_request` mode,
 *   turns speech off again.
 *
 * The scheduler never throws into its caller: an engine that fails reports through `onProblem`.
 */
import type { Utterance } from './utterances.js';

export interface SpeakOptions {
  /** 0.1–1. */
  readonly volume: number;
  /** 1 = the voice's normal. */
  readonly rate: number;
}

/** One utterance playing. `cancel` after `done` settled is harmless. */
export interface SpeechHandle {
  /** Settles when the utterance ended, was cancelled, or failed (rejects with why). */
  readonly done: Promise<void>;
  /** Settles when the first sound reached the output (true) or could not (false). */
  readonly started: Promise<boolean>;
  cancel(): void;
  pause(): void;
  resume(): void;
  /** Changes the volume of what plays now, when the engine can (the built-in voice's gain can). */
  setVolume?(volume: number): void;
}

export interface SpeechEngine {
  speak(utterance: Utterance, options: SpeakOptions): SpeechHandle;
}

export const VOLUME_STEP = 0.1;
export const MIN_VOLUME = 0.1;
export const MAX_VOLUME = 1;

/** Clamp to 0.1–1 and round to the step, so ten presses up and ten down land where they began. */
export function clampVolume(volume: number): number {
  if (!Number.isFinite(volume)) return MAX_VOLUME;
  return Math.round(Math.min(MAX_VOLUME, Math.max(MIN_VOLUME, volume)) * 10) / 10;
}

export interface SchedulerOptions {
  /** The staff default volume (`speech.volume`). */
  readonly defaultVolume: number;
  /** Speech on from the start (`always`), or only once asked (`on_request`). */
  readonly activeByDefault: boolean;
  readonly rate?: number;
  /** Timing marks: `screen` when a new utterance is due, `start` when its first sound reached the output. */
  readonly mark?: (name: 'screen' | 'start') => void;
  readonly onProblem?: (problem: string, started: boolean | null) => void;
  /** Called whenever what the badge shows may have changed. */
  readonly onChange?: () => void;
}

export interface SchedulerState {
  readonly active: boolean;
  readonly volume: number;
  readonly paused: boolean;
  readonly speaking: boolean;
}

function sameUtterance(a: Utterance | null, b: Utterance | null): boolean {
  return a !== null && b !== null && a.key === b.key && a.language === b.language && a.text === b.text && a.private === b.private;
}

export class SpeechScheduler {
  private engine: SpeechEngine;
  private options: SchedulerOptions;
  private active: boolean;
  private volume: number;
  private paused = false;
  /** What the screen says now (spoken or not). */
  private current: Utterance | null = null;
  /** What was last spoken (repeat says it again). */
  private lastSpoken: Utterance | null = null;
  private playing: SpeechHandle | null = null;

  constructor(engine: SpeechEngine, options: SchedulerOptions) {
    this.engine = engine;
    this.options = options;
    this.active = options.activeByDefault;
    this.volume = clampVolume(options.defaultVolume);
  }

  state(): SchedulerState {
    return { active: this.active, volume: this.volume, paused: this.paused, speaking: this.playing !== null };
  }

  /** Another engine (the voice changed, a headset came): cuts off what plays on the old one. */
  setEngine(engine: SpeechEngine): void {
    if (engine === this.engine) return;
    this.cutOff();
    this.engine = engine;
  }

  /** New staff settings: the default volume and mode; the current customer's volume is kept. */
  configure(options: SchedulerOptions): void {
    this.options = options;
    if (options.activeByDefault && !this.active) this.active = true;
  }

  /** The screen now says `utterance` (null: nothing). Speaks it when speech is on and it is new. */
  show(utterance: Utterance | null): void {
    if (sameUtterance(utterance, this.current)) return;
    this.current = utterance;
    if (!this.active) return;
    if (utterance === null) {
      this.cutOff();
      this.changed();
      return;
    }
    this.options.mark?.('screen');
    this.play(utterance);
  }

  /** The start key: turns speech on and says the current screen, or, when on, says the last utterance again. */
  start(): void {
    if (!this.active) {
      this.active = true;
      if (this.current) this.play(this.current);
      else this.changed();
      return;
    }
    this.repeat();
  }

  /**
   * Turns speech on (a headset plugged in) and says the current screen from its start; `sayCurrent` false
   * when what comes next replaces it at once (the language key: the prompt in the new language follows).
   */
  activate(sayCurrent = true): void {
    this.active = true;
    if (sayCurrent && this.current) this.play(this.current);
    else this.changed();
  }

  repeat(): void {
    if (!this.active) return;
    const again = this.current ?? this.lastSpoken;
    if (again) this.play(again);
  }

  togglePause(): void {
    if (!this.active || !this.playing) return;
    this.paused = !this.paused;
    if (this.paused) this.playing.pause();
    else this.playing.resume();
    this.changed();
  }

  volumeUp(): void {
    this.setVolume(this.volume + VOLUME_STEP);
  }

  volumeDown(): void {
    this.setVolume(this.volume - VOLUME_STEP);
  }

  /** Says `utterance` now whatever the screen shows (a language change, said in the new language). */
  sayNow(utterance: Utterance): void {
    if (!this.active) return;
    this.current = utterance;
    this.play(utterance);
  }

  /** The stop key: silence, and speech off for this customer. */
  stop(): void {
    this.cutOff();
    this.active = false;
    this.changed();
  }

  /** The next customer (EN 301 549 §5.1.3.13): silence, the default volume, and speech off unless it is always on. */
  resetForNextCustomer(): void {
    this.cutOff();
    this.volume = clampVolume(this.options.defaultVolume);
    this.active = this.options.activeByDefault;
    this.lastSpoken = null;
    this.changed();
  }

  /** Leaving the customer screens (staff) or unmounting: silence, state kept. */
  silence(): void {
    this.cutOff();
    this.current = null;
    this.changed();
  }

  private setVolume(volume: number): void {
    if (!this.active) return;
    this.volume = clampVolume(volume);
    this.playing?.setVolume?.(this.volume);
    this.changed();
  }

  private cutOff(): void {
    const playing = this.playing;
    this.playing = null;
    this.paused = false;
    playing?.cancel();
  }

  private play(utterance: Utterance): void {
    this.cutOff();
    this.lastSpoken = utterance;
    let handle: SpeechHandle;
    try {
      handle = this.engine.speak(utterance, { volume: this.volume, rate: this.options.rate ?? 1 });
    } catch (e) {
      this.options.onProblem?.(e instanceof Error ? e.message : String(e), false);
      this.changed();
      return;
    }
    this.playing = handle;
    this.changed();
    handle.started.then(
      (started) => {
        if (started && this.playing === handle) this.options.mark?.('start');
      },
      () => undefined,
    );
    handle.done.then(
      () => this.finished(handle),
      (e: unknown) => {
        // A failure of an utterance already cut off is nobody's problem now.
        const current = this.playing === handle;
        this.finished(handle);
        if (current) this.options.onProblem?.(e instanceof Error ? e.message : String(e), null);
      },
    );
  }

  private finished(handle: SpeechHandle): void {
    if (this.playing !== handle) return;
    this.playing = null;
    this.paused = false;
    this.changed();
  }

  private changed(): void {
    this.options.onChange?.();
  }
}

/**
 * Which screen change brings the next customer (EN 301 549 §5.1.3.13), as the host decides the language (service/
 * screen-state.ts): the visit ends when Ready comes back after an outcome — except after "You declined to
 * share", where the same person usually tries again. An error does not end the visit (the customer is likely
 * still there); Ready left alone for `idleMs` ends it too (see `useSpeech`).
 */
export class VisitTracker {
  private outcomeSeen = false;
  private declined = false;

  /** Returns true when this screen is the next customer's. */
  screen(screen: string, utteranceKey: string | null): boolean {
    if (screen === 'result') {
      this.outcomeSeen = true;
      this.declined = utteranceKey === 'outcome.declined';
      return false;
    }
    if (screen === 'ready' && this.outcomeSeen) {
      const next = !this.declined;
      this.outcomeSeen = false;
      this.declined = false;
      return next;
    }
    return false;
  }
}
