/**
 * Handheld 2D scanners that "type" what they read as a keyboard (keyboard wedge). A scanner types a burst
 * of characters a few milliseconds apart and ends it with Enter; a person types tens to hundreds of
 * milliseconds apart. The detector tells the two apart from key timestamps only, so it is a pure class
 * tested with synthetic times; `useScannerWedge` wires it to the window.
 *
 * Bursts are handed over whatever they start with: the host decides what is an `mdoc:` engagement and the
 * screen shows a hint for anything else. The text is handed over unmodified, without the final Enter.
 */
import { useEffect, useRef } from 'react';
import { MAX_QR_TEXT } from '../../common/kiosk-api.js';

export interface WedgeOptions {
  /** Longest gap between two keys of one burst, ms. Scanners type 1–20 ms apart; people rarely below 80. */
  readonly maxGapMs?: number;
  /** Fewest characters that make a burst (fewer, then Enter, is a person pressing keys). */
  readonly minLength?: number;
  /** Longest text kept; a longer burst is dropped whole (a QR code never holds more). */
  readonly maxLength?: number;
}

export const DEFAULT_WEDGE_OPTIONS: Required<WedgeOptions> = { maxGapMs: 50, minLength: 8, maxLength: MAX_QR_TEXT };

/** The parts of a KeyboardEvent the detector looks at. */
export interface WedgeKey {
  readonly key: string;
  /** Event time, ms (KeyboardEvent.timeStamp). */
  readonly timeStamp: number;
  readonly ctrlKey?: boolean;
  readonly altKey?: boolean;
  readonly metaKey?: boolean;
  readonly repeat?: boolean;
  readonly isComposing?: boolean;
  /** A text field (input, textarea, select, contenteditable) has the focus: it gets the keys, not us. */
  readonly inEditable?: boolean;
}

export type WedgeVerdict =
  /** Not ours: let the key do what it normally does. */
  | { readonly kind: 'pass' }
  /** Part of a recognised burst: the caller should preventDefault. */
  | { readonly kind: 'consume' }
  /** Enter ended a burst: `text` is what the scanner typed. The caller should preventDefault. */
  | { readonly kind: 'scan'; readonly text: string };

/** Keys a scanner sends around characters (a Shift press for capitals) that neither add nor break a burst. */
const NEUTRAL_KEYS = new Set(['Shift', 'CapsLock', 'Unidentified', 'Process']);

const PASS: WedgeVerdict = { kind: 'pass' };
const CONSUME: WedgeVerdict = { kind: 'consume' };

function isPrintable(key: string): boolean {
  // One character (otherwise `key` is a name such as "Enter" or "ArrowUp"); `u` counts a character outside
  // the BMP as one, `s` lets a typed line break count too.
  return /^.$/su.test(key);
}

export class ScannerWedgeDetector {
  readonly #maxGapMs: number;
  readonly #minLength: number;
  readonly #maxLength: number;
  #chars: string[] = [];
  #lastAt = Number.NEGATIVE_INFINITY;
  /** The current run went past maxLength: swallow it to its end, report nothing. */
  #overflowed = false;

  constructor(options: WedgeOptions = {}) {
    const merged = { ...DEFAULT_WEDGE_OPTIONS, ...options };
    if (!(merged.maxGapMs > 0) || !(merged.minLength >= 1) || !(merged.maxLength >= merged.minLength)) {
      throw new RangeError('wedge options: maxGapMs > 0 and 1 ≤ minLength ≤ maxLength');
    }
    this.#maxGapMs = merged.maxGapMs;
    this.#minLength = merged.minLength;
    this.#maxLength = merged.maxLength;
  }

  /** How many characters are buffered now (for tests; the text itself is never exposed before Enter). */
  get buffered(): number {
    return this.#chars.length;
  }

  /** Forgets a partial burst (focus moved, the hook was disabled, a pause). */
  reset(): void {
    this.#chars = [];
    this.#overflowed = false;
    this.#lastAt = Number.NEGATIVE_INFINITY;
  }

  /** Drops a partial burst whose last key is older than the gap (a burst without Enter, then a pause). */
  expire(now: number): void {
    if (now - this.#lastAt > this.#maxGapMs) this.reset();
  }

  key(event: WedgeKey): WedgeVerdict {
    if (event.inEditable === true || event.isComposing === true) {
      this.reset();
      return PASS;
    }
    if (NEUTRAL_KEYS.has(event.key)) return this.#inBurst() ? CONSUME : PASS;
    const shortcut = (event.ctrlKey === true || event.metaKey === true) && !(event.ctrlKey === true && event.altKey === true); // Ctrl+Alt is AltGr
    if (shortcut || event.repeat === true) {
      this.reset();
      return PASS;
    }
    const gap = event.timeStamp - this.#lastAt;
    const continues = gap >= 0 && gap <= this.#maxGapMs;

    if (event.key === 'Enter') {
      const chars = this.#chars;
      const overflowed = this.#overflowed;
      this.reset();
      if (!continues) return PASS;
      if (overflowed) return CONSUME;
      if (chars.length < this.#minLength) return PASS;
      return { kind: 'scan', text: chars.join('') };
    }
    if (!isPrintable(event.key)) {
      this.reset();
      return PASS;
    }
    if (!continues) this.reset();
    this.#lastAt = event.timeStamp;
    if (this.#overflowed) return CONSUME;
    if (this.#chars.length >= this.#maxLength) {
      this.#chars = [];
      this.#overflowed = true;
      return CONSUME;
    }
    this.#chars.push(event.key);
    return this.#inBurst() ? CONSUME : PASS;
  }

  #inBurst(): boolean {
    return this.#overflowed || this.#chars.length >= this.#minLength;
  }
}

/** The parts of an Element that tell whether it takes typed text. */
export interface FocusTarget {
  readonly tagName: string;
  readonly isContentEditable?: boolean;
}

/** A focused element that receives keystrokes as text: the wedge leaves its keys alone. */
export function isEditableTarget(element: FocusTarget | null | undefined): boolean {
  if (element === null || element === undefined) return false;
  const tag = element.tagName.toUpperCase();
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || element.isContentEditable === true;
}

/**
 * Listens for scanner bursts on the whole window while `enabled`. Keys typed into a text field are left
 * alone (a scanner aimed at the staff paste field fills it natively).
 */
export function useScannerWedge({
  enabled,
  onScan,
  options,
}: {
  enabled: boolean;
  onScan: (text: string) => void;
  options?: WedgeOptions;
}): void {
  const onScanRef = useRef(onScan);
  useEffect(() => {
    onScanRef.current = onScan;
  }, [onScan]);
  const maxGapMs = options?.maxGapMs;
  const minLength = options?.minLength;
  const maxLength = options?.maxLength;

  useEffect(() => {
    if (!enabled) return undefined;
    const detector = new ScannerWedgeDetector({
      ...(maxGapMs === undefined ? {} : { maxGapMs }),
      ...(minLength === undefined ? {} : { minLength }),
      ...(maxLength === undefined ? {} : { maxLength }),
    });
    const gapMs = maxGapMs ?? DEFAULT_WEDGE_OPTIONS.maxGapMs;
    let expiry: ReturnType<typeof setTimeout> | undefined;

    const onKeyDown = (event: KeyboardEvent): void => {
      const active = document.activeElement;
      const verdict = detector.key({
        key: event.key,
        timeStamp: event.timeStamp,
        ctrlKey: event.ctrlKey,
        altKey: event.altKey,
        metaKey: event.metaKey,
        repeat: event.repeat,
        isComposing: event.isComposing,
        inEditable: isEditableTarget(active instanceof HTMLElement ? active : null),
      });
      if (verdict.kind !== 'pass') event.preventDefault();
      // A partial burst must not linger in memory (it may be part of someone's engagement).
      clearTimeout(expiry);
      if (detector.buffered > 0) expiry = setTimeout(() => detector.expire(performance.now()), gapMs * 2);
      if (verdict.kind === 'scan') onScanRef.current(verdict.text);
    };
    window.addEventListener('keydown', onKeyDown, { capture: true });
    return () => {
      window.removeEventListener('keydown', onKeyDown, { capture: true });
      clearTimeout(expiry);
      detector.reset();
    };
  }, [enabled, maxGapMs, minLength, maxLength]);
}
