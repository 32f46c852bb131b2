/**
 * Speech wired to the screen: what the shown customer screen says goes to the scheduler, the keypad's keys
 * act on it, a headset switches to private listening, the voice is chosen and falls back, and what speech
 * does is reported to the host for diagnostics (never the text). Nothing here throws into React: the
 * engines report problems, which end up in the report.
 */
import { useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import type { CameraState, KioskApi, Language, ScreenState } from '../../common/kiosk-api.js';
import { DEFAULT_SPEECH_SETTINGS, type SpeechReport, type SpeechSettings } from '../../common/speech.js';
import type { ScreenName } from '../screens/screen-name.js';
import { CUSTOMER_SCREENS, type CustomerScreen } from '../screens/screen-name.js';
import { findHeadset, watchAudioOutputs, type AudioOutput } from './audio-outputs.js';
import { BuiltInVoice } from './built-in-voice.js';
import { SpeechKeyFilter, focusKind, nextLanguage } from './speech-keys.js';
import { SpeechScheduler, VisitTracker, type SchedulerState, type SpeechEngine } from './speech-scheduler.js';
import { SystemVoice } from './system-voice.js';
import { speechBadgeText, utteranceFor } from './utterances.js';
import './speech.css';
import { FallbackVoice, chooseVoice, type NamedEngine } from './voice-choice.js';

/** Ready left alone this long with speech on ends the visit (the next customer starts silent). */
export const READY_IDLE_RESET_MS = 90_000;
/** Reports to the host at most this often (only when something changed). */
export const REPORT_INTERVAL_MS = 2_000;

/** A screen shown this long is worth its prompt made ahead (the in-between screens pass quicker). */
const PREFETCH_AFTER_MS = 300;

/** performance marks bench:ui reads: screen change → speech start. */
export const SPEECH_MARKS = { screen: 'speech:screen', start: 'speech:start', measure: 'speech:latency' } as const;

function mark(name: 'screen' | 'start'): void {
  try {
    performance.mark(SPEECH_MARKS[name]);
    if (name === 'start') performance.measure(SPEECH_MARKS.measure, SPEECH_MARKS.screen, SPEECH_MARKS.start);
  } catch {
    // A measure without its screen mark (a repeat): nothing to time.
  }
}

function isCustomerScreen(name: ScreenName): name is CustomerScreen {
  return (CUSTOMER_SCREENS as readonly string[]).includes(name) || name === 'cannot_verify';
}

export interface SpeechInput {
  readonly api: KioskApi | null;
  /** The state the customer screen draws (held in-between screens included). */
  readonly state: ScreenState | null;
  /** The screen shown now (a staff screen or the PIN pad: speech is silent and the keys do nothing). */
  readonly screen: ScreenName;
  readonly camera: CameraState;
}

export interface SpeechView {
  /** The badge's text while speech is on for this customer, else null. */
  readonly badge: string | null;
  readonly headset: boolean;
}

/** A voice that cannot speak: used when there is no voice at all, so the scheduler still has an engine. */
const NO_VOICE: SpeechEngine = {
  speak: () => ({
    done: Promise.reject(new Error('no voice: no OS voice for the language and no built-in voice')),
    started: Promise.resolve(false),
    cancel: () => undefined,
    pause: () => undefined,
    resume: () => undefined,
  }),
};

export function useSpeech(input: SpeechInput): SpeechView {
  const { api, state, screen, camera } = input;
  const settings: SpeechSettings = state?.speech ?? DEFAULT_SPEECH_SETTINGS;
  const language: Language = state?.language ?? 'en';
  const customer = isCustomerScreen(screen);

  const [outputs, setOutputs] = useState<AudioOutput[]>([]);
  const [voicesVersion, setVoicesVersion] = useState(0);
  const [schedulerState, setSchedulerState] = useState<SchedulerState | null>(null);
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const [outputWorks, setOutputWorks] = useState<boolean | null>(null);

  const system = useMemo(() => {
    const synth = SystemVoice.available();
    return synth ? new SystemVoice(synth) : null;
  }, []);
  const builtIn = useMemo(() => (api ? new BuiltInVoice((args) => api.synthesizeSpeech(args)) : null), [api]);

  const schedulerRef = useRef<SpeechScheduler | null>(null);
  const fallbackRef = useRef<FallbackVoice | null>(null);
  if (schedulerRef.current === null) {
    schedulerRef.current = new SpeechScheduler(NO_VOICE, {
      defaultVolume: settings.volume,
      activeByDefault: settings.mode === 'always',
    });
  }
  const scheduler = schedulerRef.current;

  // The scheduler's options follow the staff settings; its callbacks feed the badge and the report.
  useEffect(() => {
    scheduler.configure({
      defaultVolume: settings.volume,
      activeByDefault: settings.mode === 'always',
      mark: (name) => {
        mark(name);
        if (name === 'start') {
          setOutputWorks(true);
          setProblem(undefined);
        }
      },
      onProblem: (why) => {
        setProblem(why.slice(0, 300));
        setOutputWorks(false);
      },
      onChange: () => setSchedulerState(scheduler.state()),
    });
    setSchedulerState(scheduler.state());
  }, [scheduler, settings.volume, settings.mode]);

  // Voices arrive late in Chromium; outputs change when a headset is plugged.
  useEffect(() => system?.onVoicesChanged(() => setVoicesVersion((v) => v + 1)), [system]);
  useEffect(() => watchAudioOutputs(typeof navigator === 'undefined' ? undefined : navigator.mediaDevices, setOutputs), []);

  const headset = useMemo(() => findHeadset(outputs, settings.headsetOutput), [outputs, settings.headsetOutput]);
  const privateMode = headset !== null;
  const mustRoute = privateMode && !headset.isDefault;
  // biome-ignore lint/correctness/useExhaustiveDependencies: voicesVersion re-reads the voice list when it changes
  const hasSystemVoice = useMemo(() => system?.voiceFor(language) != null, [system, language, voicesVersion]);
  const kind = chooseVoice(settings.voice, hasSystemVoice, mustRoute);

  // The engine: the chosen voice, the other as its fallback (none when the private answer must stay in the headset).
  useEffect(() => {
    const systemEngine: NamedEngine | null = system && hasSystemVoice ? { kind: 'system', engine: system } : null;
    const builtInEngine: NamedEngine | null = builtIn ? { kind: 'built_in', engine: builtIn } : null;
    const first = kind === 'system' ? systemEngine : builtInEngine;
    const second = mustRoute ? null : kind === 'system' ? builtInEngine : systemEngine;
    const chosen = first ?? second;
    const fallback = chosen ? new FallbackVoice(chosen, chosen === first ? second : null) : null;
    fallbackRef.current = fallback;
    scheduler.setEngine(fallback ?? NO_VOICE);
  }, [scheduler, system, builtIn, kind, mustRoute, hasSystemVoice]);

  useEffect(() => {
    if (!builtIn) return;
    builtIn.routeTo(headset !== null && !headset.isDefault ? headset.headset.deviceId : '').catch((e: unknown) => {
      setProblem(`cannot route to the headset: ${e instanceof Error ? e.message : String(e)}`.slice(0, 300));
    });
  }, [builtIn, headset]);

  // Speaks only on customer screens, never with speech off, and with headset-only never on the speaker.
  const maySpeak = customer && settings.mode !== 'off' && (privateMode || !settings.headsetOnly);

  // A headset plugged in turns speech on (private) and says the current prompt there.
  const hadHeadset = useRef(false);
  useEffect(() => {
    const plugged = privateMode && !hadHeadset.current;
    hadHeadset.current = privateMode;
    if (plugged && settings.mode !== 'off') scheduler.activate();
  }, [scheduler, privateMode, settings.mode]);

  const utterance = useMemo(
    () =>
      customer
        ? utteranceFor({
            screen,
            view: state?.view ?? null,
            language,
            readerPosition: state?.readerPosition,
            camera,
            sayKeys: settings.mode !== 'off',
            private: privateMode,
            privateElements: settings.privateElements,
          })
        : null,
    [customer, screen, state?.view, language, state?.readerPosition, camera, settings.mode, privateMode, settings.privateElements],
  );

  // The next customer: volume back to the default, speech off again unless always on (§5.1.3.13).
  const visits = useRef(new VisitTracker());
  const utteranceKey = utterance?.key ?? null;
  useEffect(() => {
    if (visits.current.screen(screen, utteranceKey)) scheduler.resetForNextCustomer();
  }, [scheduler, screen, utteranceKey]);

  // What the screen says goes to the scheduler (it speaks only what is new, and only while on).
  useEffect(() => {
    if (maySpeak) scheduler.show(utterance);
    else scheduler.silence();
  }, [scheduler, maySpeak, utterance]);
  useEffect(() => () => scheduler.silence(), [scheduler]);

  // Speech may be asked for on this screen (a key, a headset): its prompt is made ahead, once the screen has
  // settled, so the first sound does not wait for the voice process.
  useEffect(() => {
    if (!builtIn || utterance === null || !maySpeak || kind === 'system') return;
    const timer = setTimeout(() => builtIn.prefetch(utterance), PREFETCH_AFTER_MS);
    return () => clearTimeout(timer);
  }, [builtIn, utterance, maySpeak, kind]);

  // Ready left alone with speech on: the customer has gone.
  const active = schedulerState?.active ?? false;
  const [lastKeyAt, setLastKeyAt] = useState(0);
  useEffect(() => {
    if (screen !== 'ready' || !active || settings.mode === 'always') return;
    const timer = setTimeout(() => scheduler.resetForNextCustomer(), READY_IDLE_RESET_MS);
    return () => clearTimeout(timer);
  }, [scheduler, screen, active, settings.mode, lastKeyAt]);

  // The keypad: on customer screens only, never with speech off.
  const keysEnabled = customer && settings.mode !== 'off' && api !== null;
  const keys = settings.keys;
  useEffect(() => {
    if (!keysEnabled) return;
    const filter = new SpeechKeyFilter();
    const onKey = (event: KeyboardEvent): void => {
      const action = filter.decide(
        {
          code: event.code,
          timeStamp: event.timeStamp,
          ctrlKey: event.ctrlKey,
          altKey: event.altKey,
          metaKey: event.metaKey,
          repeat: event.repeat,
          isComposing: event.isComposing,
          ...focusKind(event.target),
        },
        keys,
      );
      if (action === null) return;
      event.preventDefault();
      // A key press is the user gesture that lets audio play.
      builtIn?.unlock();
      setLastKeyAt(event.timeStamp);
      switch (action) {
        case 'start':
          scheduler.start();
          break;
        case 'pause':
          scheduler.togglePause();
          break;
        case 'volumeUp':
          scheduler.volumeUp();
          break;
        case 'volumeDown':
          scheduler.volumeDown();
          break;
        case 'stop':
          scheduler.stop();
          break;
        case 'language': {
          // Said in the new language when the state comes back with it (the utterance changes).
          if (!scheduler.state().active) scheduler.activate(false);
          void api.setLanguage({ language: nextLanguage(language) }).catch(() => undefined);
          break;
        }
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [keysEnabled, keys, scheduler, builtIn, api, language]);

  // The report for diagnostics: only on change, at most every REPORT_INTERVAL_MS, never the text.
  const fallbackUsed = fallbackRef.current?.used ?? null;
  const report: SpeechReport | null = useMemo(() => {
    if (!api) return null;
    const engine = fallbackUsed === 'none' ? 'none' : (fallbackUsed ?? kind);
    const voiceName =
      engine === 'system' ? (system?.voiceFor(language)?.name ?? '') : engine === 'built_in' ? (builtIn?.engineName ?? 'built-in') : '';
    return {
      active,
      engine,
      voiceName: voiceName.slice(0, 200),
      output: privateMode ? 'headset' : outputs.length === 0 && outputWorks === false ? 'none' : 'speaker',
      outputName: (privateMode ? headset.headset.label : (outputs.find((o) => o.deviceId === 'default')?.label ?? '')).slice(0, 200),
      outputWorks,
      ...(problem === undefined ? {} : { problem }),
      systemVoices: system?.voiceNames() ?? {},
    };
    // biome-ignore lint/correctness/useExhaustiveDependencies: voicesVersion refreshes the voice names
  }, [api, active, fallbackUsed, kind, system, builtIn, language, privateMode, headset, outputs, outputWorks, problem, voicesVersion]);
  useThrottledReport(api, report);

  const volume = schedulerState?.volume ?? settings.volume;
  const badge = active && maySpeak ? speechBadgeText(language, volume, privateMode) : null;
  return { badge, headset: privateMode };
}

function useThrottledReport(api: KioskApi | null, report: SpeechReport | null): void {
  const sent = useRef('');
  const lastAt = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => {
    if (!api || !report) return;
    const text = JSON.stringify(report);
    if (text === sent.current) return;
    const send = (): void => {
      sent.current = text;
      lastAt.current = Date.now();
      void api.reportSpeech(report).catch(() => undefined);
    };
    clearTimeout(timer.current);
    const wait = lastAt.current + REPORT_INTERVAL_MS - Date.now();
    if (wait <= 0) send();
    else timer.current = setTimeout(send, wait);
  }, [api, report]);
  useEffect(() => () => clearTimeout(timer.current), []);
}

/** The badge: speech is on, and how loud (for a companion or staff who can see the screen). */
export function SpeechBadge(props: { text: string | null }): ReactNode {
  if (props.text === null) return null;
  return (
    <p className="speech-badge" data-testid="speech-badge">
      {props.text}
    </p>
  );
}
