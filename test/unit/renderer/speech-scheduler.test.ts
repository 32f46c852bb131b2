/**
 * The speech scheduler with a fake engine that is as strict as the guide asks: it throws when asked to
 * speak while an utterance it started still plays un-cancelled (two voices at once), and records every call.
 */
import { describe, expect, it } from 'vitest';
import {
  SpeechScheduler,
  VisitTracker,
  clampVolume,
  type SchedulerOptions,
  type SpeakOptions,
  type SpeechEngine,
  type SpeechHandle,
} from '../../../src/renderer/speech/speech-scheduler.js';
import type { Utterance } from '../../../src/renderer/speech/utterances.js';

interface Playing {
  readonly utterance: Utterance;
  readonly options: SpeakOptions;
  cancelled: boolean;
  ended: boolean;
  paused: boolean;
  volume: number;
  end(): void;
  fail(message: string): void;
}

class StrictEngine implements SpeechEngine {
  readonly calls: Playing[] = [];
  /** false: cancel leaves `done` unsettled, as a voice still waiting for its samples does (it may fail later). */
  cancelSettles = true;
  readonly log: string[] = [];

  get current(): Playing | undefined {
    return this.calls.at(-1);
  }

  speak(utterance: Utterance, options: SpeakOptions): SpeechHandle {
    const busy = this.calls.find((call) => !call.cancelled && !call.ended);
    if (busy) throw new Error(`overlap: "${utterance.key}" while "${busy.utterance.key}" plays`);
    let resolveDone: () => void = () => undefined;
    let rejectDone: (e: Error) => void = () => undefined;
    const done = new Promise<void>((resolve, reject) => {
      resolveDone = resolve;
      rejectDone = reject;
    });
    const playing: Playing = {
      utterance,
      options,
      cancelled: false,
      ended: false,
      paused: false,
      volume: options.volume,
      end: () => {
        playing.ended = true;
        resolveDone();
      },
      fail: (message) => {
        playing.ended = true;
        rejectDone(new Error(message));
      },
    };
    this.calls.push(playing);
    this.log.push(`speak ${utterance.key} ${options.volume}`);
    return {
      done,
      started: Promise.resolve(true),
      cancel: () => {
        playing.cancelled = true;
        this.log.push(`cancel ${utterance.key}`);
        if (this.cancelSettles) resolveDone();
      },
      pause: () => {
        playing.paused = true;
        this.log.push(`pause ${utterance.key}`);
      },
      resume: () => {
        playing.paused = false;
        this.log.push(`resume ${utterance.key}`);
      },
      setVolume: (volume) => {
        playing.volume = volume;
      },
    };
  }
}

const u = (key: string, text = `text of ${key}`, language: Utterance['language'] = 'en'): Utterance => ({
  key,
  text,
  language,
  private: false,
});

function setup(options: Partial<SchedulerOptions> = {}): {
  engine: StrictEngine;
  scheduler: SpeechScheduler;
  marks: string[];
  problems: string[];
} {
  const engine = new StrictEngine();
  const marks: string[] = [];
  const problems: string[] = [];
  const scheduler = new SpeechScheduler(engine, {
    defaultVolume: 0.8,
    activeByDefault: false,
    mark: (name) => marks.push(name),
    onProblem: (problem) => problems.push(problem),
    ...options,
  });
  return { engine, scheduler, marks, problems };
}

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

describe('speech scheduler', () => {
  it('stays silent in on_request mode until the start key, which says the current screen', () => {
    const { engine, scheduler } = setup();
    scheduler.show(u('ready'));
    expect(engine.calls).toHaveLength(0);
    scheduler.start();
    expect(engine.log).toEqual(['speak ready 0.8']);
    expect(scheduler.state().active).toBe(true);
  });

  it('cuts the previous utterance off before a new screen speaks, never two at once', () => {
    const { engine, scheduler } = setup({ activeByDefault: true });
    scheduler.show(u('ready'));
    scheduler.show(u('progress.nfcReading'));
    scheduler.show(u('progress.approve'));
    expect(engine.log).toEqual([
      'speak ready 0.8',
      'cancel ready',
      'speak progress.nfcReading 0.8',
      'cancel progress.nfcReading',
      'speak progress.approve 0.8',
    ]);
  });

  it('does not restart the same utterance on a re-render, and says it again when the text changes', () => {
    const { engine, scheduler } = setup({ activeByDefault: true });
    scheduler.show(u('ready'));
    scheduler.show(u('ready'));
    scheduler.show({ ...u('ready') });
    expect(engine.calls).toHaveLength(1);
    scheduler.show(u('ready', 'Abra su cartera', 'es'));
    expect(engine.calls).toHaveLength(2);
    expect(engine.current?.utterance.language).toBe('es');
  });

  it('repeat says the last utterance again, cutting off what plays', async () => {
    const { engine, scheduler } = setup({ activeByDefault: true });
    scheduler.show(u('error.timeout'));
    engine.current?.end();
    await tick();
    scheduler.start();
    expect(engine.log).toEqual(['speak error.timeout 0.8', 'speak error.timeout 0.8']);
    scheduler.repeat();
    expect(engine.log.slice(2)).toEqual(['cancel error.timeout', 'speak error.timeout 0.8']);
  });

  it('pauses and resumes what plays; a new screen interrupts a paused utterance', () => {
    const { engine, scheduler } = setup({ activeByDefault: true });
    scheduler.show(u('ready'));
    scheduler.togglePause();
    expect(engine.current?.paused).toBe(true);
    expect(scheduler.state().paused).toBe(true);
    scheduler.togglePause();
    expect(engine.current?.paused).toBe(false);
    scheduler.togglePause();
    scheduler.show(u('progress.nfcReading'));
    expect(engine.calls[0]?.cancelled).toBe(true);
    expect(scheduler.state().paused).toBe(false);
    expect(engine.current?.utterance.key).toBe('progress.nfcReading');
  });

  it('steps the volume by 10 % within 0.1–1, now and for what plays next', () => {
    const { engine, scheduler } = setup({ activeByDefault: true });
    scheduler.show(u('ready'));
    scheduler.volumeUp();
    expect(engine.current?.volume).toBe(0.9);
    for (let i = 0; i < 5; i++) scheduler.volumeUp();
    expect(scheduler.state().volume).toBe(1);
    for (let i = 0; i < 20; i++) scheduler.volumeDown();
    expect(scheduler.state().volume).toBe(0.1);
    scheduler.volumeUp();
    scheduler.show(u('progress.nfcReading'));
    expect(engine.current?.options.volume).toBe(0.2);
    expect(clampVolume(Number.NaN)).toBe(1);
    expect(clampVolume(0.8 + 0.1 + 0.1 - 0.1)).toBe(0.9);
  });

  it('keys do nothing while speech is off (no volume change, no pause, no repeat)', () => {
    const { engine, scheduler } = setup();
    scheduler.show(u('ready'));
    scheduler.volumeUp();
    scheduler.togglePause();
    scheduler.repeat();
    expect(engine.calls).toHaveLength(0);
    expect(scheduler.state().volume).toBe(0.8);
  });

  it('stop silences and turns speech off; the next screen is not spoken', () => {
    const { engine, scheduler } = setup();
    scheduler.show(u('ready'));
    scheduler.start();
    scheduler.stop();
    expect(engine.calls[0]?.cancelled).toBe(true);
    scheduler.show(u('progress.nfcReading'));
    expect(engine.calls).toHaveLength(1);
  });

  it('resets for the next customer: silence, the default volume, off again in on_request mode', () => {
    const { engine, scheduler } = setup();
    scheduler.show(u('result'));
    scheduler.start();
    scheduler.volumeUp();
    scheduler.volumeUp();
    expect(scheduler.state().volume).toBe(1);
    scheduler.resetForNextCustomer();
    expect(engine.calls[0]?.cancelled).toBe(true);
    expect(scheduler.state()).toMatchObject({ active: false, volume: 0.8, speaking: false });
    scheduler.show(u('ready'));
    expect(engine.calls).toHaveLength(1);
  });

  it('in always mode the next customer is spoken to at the default volume', () => {
    const { engine, scheduler } = setup({ activeByDefault: true });
    scheduler.show(u('result'));
    scheduler.volumeDown();
    scheduler.resetForNextCustomer();
    scheduler.show(u('ready'));
    expect(engine.current?.options.volume).toBe(0.8);
    expect(scheduler.state().active).toBe(true);
  });

  it('a headset turns speech on and says the current prompt from its start', () => {
    const { engine, scheduler } = setup();
    scheduler.show(u('progress.approve'));
    scheduler.activate();
    expect(engine.log).toEqual(['speak progress.approve 0.8']);
  });

  it('the language key turns speech on without saying the old language first; the new one is said', () => {
    const { engine, scheduler } = setup();
    scheduler.show(u('ready'));
    scheduler.activate(false);
    expect(engine.calls).toHaveLength(0);
    scheduler.show(u('ready', 'Abra su cartera', 'es'));
    expect(engine.log).toEqual(['speak ready 0.8']);
    expect(engine.current?.utterance.language).toBe('es');
  });

  it('an engine that fails reports a problem and never throws to the caller; the next screen still speaks', async () => {
    const { engine, scheduler, problems } = setup({ activeByDefault: true });
    scheduler.show(u('ready'));
    engine.current?.fail('the built-in voice is not set up');
    await tick();
    expect(problems).toEqual(['the built-in voice is not set up']);
    expect(scheduler.state().speaking).toBe(false);
    const throwing: SpeechEngine = {
      speak: () => {
        throw new Error('boom');
      },
    };
    scheduler.setEngine(throwing);
    expect(() => scheduler.show(u('progress.nfcReading'))).not.toThrow();
    expect(problems.at(-1)).toBe('boom');
    // A failure of an utterance that was already cut off is not reported.
    scheduler.setEngine(engine);
    engine.cancelSettles = false;
    scheduler.show(u('progress.approve'));
    const cutOff = engine.current;
    scheduler.show(u('progress.receiving'));
    cutOff?.fail('late failure');
    await tick();
    expect(problems).not.toContain('late failure');
  });

  it('marks screen then start for the timing of screen change → speech start', async () => {
    const { scheduler, marks } = setup({ activeByDefault: true });
    scheduler.show(u('ready'));
    await tick();
    expect(marks).toEqual(['screen', 'start']);
  });

  it('another engine cuts off what the old one plays', () => {
    const { engine, scheduler } = setup({ activeByDefault: true });
    scheduler.show(u('ready'));
    const other = new StrictEngine();
    scheduler.setEngine(other);
    expect(engine.calls[0]?.cancelled).toBe(true);
    scheduler.repeat();
    expect(other.calls).toHaveLength(1);
  });
});

describe('the next customer', () => {
  it('is Ready after an outcome, not after an error, nor after "You declined to share"', () => {
    const visits = new VisitTracker();
    expect(visits.screen('ready', 'ready.tap')).toBe(false);
    expect(visits.screen('engaging', 'progress.nfcReading')).toBe(false);
    expect(visits.screen('error', 'error.timeout')).toBe(false);
    expect(visits.screen('ready', 'ready.tap')).toBe(false);
    expect(visits.screen('result', 'outcome.declined')).toBe(false);
    expect(visits.screen('ready', 'ready.tap')).toBe(false);
    expect(visits.screen('result', 'outcome.age_accepted')).toBe(false);
    expect(visits.screen('remove_phone', 'remove')).toBe(false);
    expect(visits.screen('ready', 'ready.tap')).toBe(true);
    expect(visits.screen('ready', 'ready.tap')).toBe(false);
  });
});
