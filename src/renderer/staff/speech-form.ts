/**
 * The Speech section of the settings form as plain data (issue 32): what its fields show for the speech
 * settings in effect, and the partial `speech` update with only what staff changed. The keys are sent as
 * one object with every action (the contract's shape); an action locked by a higher source goes with the
 * value in effect, which the host accepts unchanged.
 */
import type { Settings, SettingsUpdate } from '../../common/kiosk-api.js';
import {
  DEFAULT_SPEECH_KEYS,
  KeyCode,
  type SpeechKeys,
  type SpeechMode,
  type SpeechSettings,
  type SpeechVoice,
} from '../../common/speech.js';

export const SPEECH_ACTIONS = [
  'start',
  'pause',
  'volumeUp',
  'volumeDown',
  'language',
  'stop',
] as const satisfies readonly (keyof SpeechKeys)[];
export type SpeechAction = (typeof SPEECH_ACTIONS)[number];

export type SpeechFieldKey =
  | 'speech.mode'
  | 'speech.volume'
  | 'speech.voice'
  | 'speech.headsetOnly'
  | 'speech.headsetOutput'
  | 'speech.privateElements'
  | `speech.keys.${SpeechAction}`;

export const SPEECH_FIELD_KEYS: readonly SpeechFieldKey[] = [
  'speech.mode',
  'speech.volume',
  'speech.voice',
  'speech.headsetOnly',
  'speech.headsetOutput',
  'speech.privateElements',
  ...SPEECH_ACTIONS.map((a): SpeechFieldKey => `speech.keys.${a}`),
];

/**
 * The data elements offered to a headset: the common mDL elements a customer may want to hear checked
 * (ISO/IEC 18013-5 Table 5 identifiers). One the managed file set beyond these is shown too.
 */
export const SPEAKABLE_ELEMENTS = [
  'given_name',
  'family_name',
  'birth_date',
  'age_over_18',
  'age_over_21',
  'document_number',
  'expiry_date',
  'issuing_authority',
] as const;

/** The volume as offered: 10 % to 100 % in steps of 10 (the contract's 0.1–1). */
export const VOLUME_STEPS = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100] as const;

/** The longest headset output name (the contract's bound). */
export const MAX_HEADSET_OUTPUT = 200;
/** Keys per action (the contract's bound). */
export const MAX_KEYS_PER_ACTION = 8;

export interface SpeechValues {
  readonly mode: SpeechMode;
  /** Percent, one of VOLUME_STEPS (a configured value between steps shows at the nearest). */
  readonly volumePercent: number;
  readonly voice: SpeechVoice;
  readonly headsetOnly: boolean;
  readonly headsetOutput: string;
  readonly privateElements: readonly string[];
  readonly keys: SpeechKeys;
}

/** A speech field's error before translation. */
export type SpeechFormError =
  | { readonly kind: 'tooLong'; readonly max: number }
  /** The key already does another action (the first one listed keeps it). */
  | { readonly kind: 'keyTwice'; readonly code: string; readonly action: SpeechAction };

export function nearestVolumeStep(volume: number): number {
  const percent = volume * 100;
  return VOLUME_STEPS.reduce((best, step) => (Math.abs(step - percent) < Math.abs(best - percent) ? step : best), VOLUME_STEPS[0]);
}

export function speechValuesFrom(speech: SpeechSettings): SpeechValues {
  return {
    mode: speech.mode,
    volumePercent: nearestVolumeStep(speech.volume),
    voice: speech.voice,
    headsetOnly: speech.headsetOnly,
    headsetOutput: speech.headsetOutput,
    privateElements: [...speech.privateElements],
    keys: copyKeys(speech.keys),
  };
}

function copyKeys(keys: SpeechKeys): SpeechKeys {
  return Object.fromEntries(SPEECH_ACTIONS.map((a) => [a, [...keys[a]]])) as SpeechKeys;
}

const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
const sameSet = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x) => b.includes(x));

/** The elements in the order the screen lists them: the common ones first, then any other. */
export function orderedElements(elements: readonly string[]): string[] {
  const known: readonly string[] = SPEAKABLE_ELEMENTS;
  return [...known.filter((e) => elements.includes(e)), ...elements.filter((e) => !known.includes(e))];
}

/** A key added to an action: once, at most MAX_KEYS_PER_ACTION, only a valid `KeyboardEvent.code`. */
export function withKey(keys: SpeechKeys, action: SpeechAction, code: string): SpeechKeys {
  if (!KeyCode.safeParse(code).success || keys[action].includes(code) || keys[action].length >= MAX_KEYS_PER_ACTION) return keys;
  return { ...keys, [action]: [...keys[action], code] };
}

export function withoutKey(keys: SpeechKeys, action: SpeechAction, code: string): SpeechKeys {
  return { ...keys, [action]: keys[action].filter((c) => c !== code) };
}

/** The defaults for every action staff may change (locked ones keep what is in effect). */
export function defaultKeys(keys: SpeechKeys, open: (action: SpeechAction) => boolean): SpeechKeys {
  return Object.fromEntries(SPEECH_ACTIONS.map((a) => [a, open(a) ? [...DEFAULT_SPEECH_KEYS[a]] : [...keys[a]]])) as SpeechKeys;
}

export interface BuiltSpeechUpdate {
  readonly speech: SettingsUpdate['speech'] | undefined;
  readonly errors: Partial<Record<SpeechFieldKey, SpeechFormError>>;
}

/** The speech changes against the settings in effect, leaving out locked keys; errors found before sending. */
export function buildSpeechUpdate(values: SpeechValues, settings: Settings, open: (key: SpeechFieldKey) => boolean): BuiltSpeechUpdate {
  const current = settings.speech;
  const speech: { -readonly [K in keyof NonNullable<SettingsUpdate['speech']>]: NonNullable<SettingsUpdate['speech']>[K] } = {};
  const errors: Partial<Record<SpeechFieldKey, SpeechFormError>> = {};
  if (open('speech.mode') && values.mode !== current.mode) speech.mode = values.mode;
  if (open('speech.volume') && values.volumePercent !== nearestVolumeStep(current.volume)) speech.volume = values.volumePercent / 100;
  if (open('speech.voice') && values.voice !== current.voice) speech.voice = values.voice;
  if (open('speech.headsetOnly') && values.headsetOnly !== current.headsetOnly) speech.headsetOnly = values.headsetOnly;
  if (open('speech.headsetOutput')) {
    const output = values.headsetOutput.trim();
    if (output.length > MAX_HEADSET_OUTPUT) errors['speech.headsetOutput'] = { kind: 'tooLong', max: MAX_HEADSET_OUTPUT };
    else if (output !== current.headsetOutput) speech.headsetOutput = output;
  }
  if (open('speech.privateElements') && !sameSet(values.privateElements, current.privateElements)) {
    speech.privateElements = orderedElements(values.privateElements);
  }
  const keys = Object.fromEntries(
    SPEECH_ACTIONS.map((a) => [a, open(`speech.keys.${a}`) ? [...values.keys[a]] : [...current.keys[a]]]),
  ) as SpeechKeys;
  // One key, one action: the customer could not tell which one a key would do.
  const owner = new Map<string, SpeechAction>();
  for (const action of SPEECH_ACTIONS) {
    for (const code of keys[action]) {
      const first = owner.get(code);
      if (first !== undefined && errors[`speech.keys.${action}`] === undefined)
        errors[`speech.keys.${action}`] = { kind: 'keyTwice', code, action: first };
      else owner.set(code, action);
    }
  }
  if (SPEECH_ACTIONS.some((a) => !sameList(keys[a], current.keys[a]))) speech.keys = keys;
  return { speech: Object.keys(speech).length > 0 ? speech : undefined, errors };
}

/**
 * A `KeyboardEvent.code` in words staff recognise on the keypad or keyboard: `Numpad5` → "Keypad 5",
 * `NumpadAdd` → "Keypad +", `Digit5` → "5", `KeyL` → "L", `ArrowUp` → "↑". `keypad` is the translated word.
 */
export function keyLabel(code: string, keypad: string): string {
  const numpad: Record<string, string> = { Add: '+', Subtract: '−', Multiply: '*', Divide: '/', Decimal: '.', Enter: 'Enter', Equal: '=' };
  const arrows: Record<string, string> = { ArrowUp: '↑', ArrowDown: '↓', ArrowLeft: '←', ArrowRight: '→' };
  if (code.startsWith('Numpad')) {
    const rest = code.slice('Numpad'.length);
    return `${keypad} ${numpad[rest] ?? rest}`;
  }
  if (/^Digit[0-9]$/.test(code)) return code.slice(5);
  if (/^Key[A-Z]$/.test(code)) return code.slice(3);
  return arrows[code] ?? code;
}
