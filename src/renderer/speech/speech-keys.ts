/**
 * The keypad's keys (`speech.keys`, KeyboardEvent.code: the physical key whatever the layout). Pure: which
 * action a key press is, and whether this press may be taken at all — never on the staff screens or the PIN
 * pad (the caller says), never while a text field has the focus, never a key a handheld scanner typed (its
 * keys come a few milliseconds apart, as the wedge detector knows them), never Enter on a focused control
 * (it presses that control).
 */
import type { Language } from '../../common/kiosk-api.js';
import { LANGUAGES } from '../../common/kiosk-api.js';
import type { SpeechKeys } from '../../common/speech.js';
import { DEFAULT_WEDGE_OPTIONS } from '../qr/scanner-wedge.js';

export type SpeechAction = keyof SpeechKeys;

const ACTIONS: readonly SpeechAction[] = ['start', 'pause', 'volumeUp', 'volumeDown', 'language', 'stop'];

/** The action of a key, the first that lists it. */
export function actionFor(code: string, keys: SpeechKeys): SpeechAction | null {
  return ACTIONS.find((action) => keys[action].includes(code)) ?? null;
}

/** The parts of a key press that decide whether speech may take it. */
export interface SpeechKeyPress {
  readonly code: string;
  /** KeyboardEvent.timeStamp, ms. */
  readonly timeStamp: number;
  readonly ctrlKey: boolean;
  readonly altKey: boolean;
  readonly metaKey: boolean;
  readonly repeat: boolean;
  /** An input method is composing a character. */
  readonly isComposing: boolean;
  /** A text field has the focus (input, textarea, select, contenteditable). */
  readonly inEditable: boolean;
  /** A button, link or other control has the focus (Enter and Space press it). */
  readonly onControl: boolean;
}

const PRESSING_KEYS = new Set(['Enter', 'NumpadEnter', 'Space']);

export class SpeechKeyFilter {
  private lastAt = Number.NEGATIVE_INFINITY;
  private readonly maxGapMs: number;

  constructor(maxGapMs = DEFAULT_WEDGE_OPTIONS.maxGapMs) {
    this.maxGapMs = maxGapMs;
  }

  /** The action to take for this press on a customer screen, or null to let the key do what it does. */
  decide(press: SpeechKeyPress, keys: SpeechKeys): SpeechAction | null {
    const gap = press.timeStamp - this.lastAt;
    this.lastAt = press.timeStamp;
    if (press.ctrlKey || press.altKey || press.metaKey || press.repeat || press.isComposing || press.inEditable) return null;
    // Part of a burst: a scanner typing a QR code (5, 0 and L are in any base64 text).
    if (gap >= 0 && gap < this.maxGapMs) return null;
    if (press.onControl && PRESSING_KEYS.has(press.code)) return null;
    return actionFor(press.code, keys);
  }
}

/** EN → ES → FR → EN. */
export function nextLanguage(language: Language): Language {
  const at = LANGUAGES.indexOf(language);
  return LANGUAGES[(at + 1) % LANGUAGES.length] ?? 'en';
}

/** Where the focus is, as the filter needs it. */
export function focusKind(target: EventTarget | null): { inEditable: boolean; onControl: boolean } {
  if (!(target instanceof HTMLElement)) return { inEditable: false, onControl: false };
  const tag = target.tagName;
  const inEditable =
    target.isContentEditable ||
    tag === 'TEXTAREA' ||
    tag === 'SELECT' ||
    (tag === 'INPUT' && !['button', 'submit', 'reset', 'checkbox', 'radio'].includes((target as HTMLInputElement).type));
  const onControl = !inEditable && (tag === 'BUTTON' || tag === 'A' || tag === 'INPUT' || target.getAttribute('role') === 'button');
  return { inEditable, onControl };
}
