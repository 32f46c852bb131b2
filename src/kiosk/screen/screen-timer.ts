/**
 * How long what is on screen stays there: an outcome (with the minimum staff get to read it before the next
 * customer's tap is taken), an error (with "More time"), "remove your phone" (until the phone leaves), and
 * "Next customer", which ends any of them at once. It decides time only; what the screen shows is the
 * view's (view-publisher.ts).
 */
import type { NfcCard } from '../../devices/ports.js';
import type { KioskConfig } from '../../platform/config.js';
import { AbortedError, deferred, sleep } from '../async-tools.js';

/** "More time" on an error screen (WCAG 2.2.1): each press adds this much, at most `MORE_TIME_PRESSES` times. */
export const MORE_TIME_MS = 30_000;
export const MORE_TIME_PRESSES = 10;

export type Screen =
  | { readonly kind: 'none' }
  /**
   * An outcome or an error on screen; what follows it depends on which (`after`). Before `takesTapsAt` no
   * tap or scan is taken: one made meanwhile waits (the phone on the reader, the scan queued) until then.
   */
  | {
      readonly kind: 'timed';
      readonly shownAt: number;
      readonly until: number;
      readonly takesTapsAt: number;
      readonly card: NfcCard | undefined;
      readonly after: 'result' | 'error';
      /** How many times "More time" was pressed (an error only). */
      readonly extended?: number;
    }
  | { readonly kind: 'remove_phone'; readonly until: number; readonly card: NfcCard };

export type ShownScreen = Exclude<Screen, { kind: 'none' }>;

export class ScreenTimer {
  private screen: Screen = { kind: 'none' };
  /** A screen "Next" was pressed on before the loop started waiting for its end. */
  private dismissed: Screen | undefined;
  private kick = new AbortController();
  private changed = deferred<undefined>();

  constructor(
    private readonly timeouts: KioskConfig['timeouts'],
    private readonly now: () => number,
  ) {}

  get current(): Screen {
    return this.screen;
  }

  /** Nothing timed on screen: idle, or a verification runs. */
  clear(): void {
    this.screen = { kind: 'none' };
  }

  /** An outcome shown now, with `card` the phone still on the reader (if it was a tap). */
  showResult(card: NfcCard | undefined): void {
    const { resultDisplayMs, outcomeMinimumMs } = this.timeouts;
    const shownAt = this.now();
    // Staff get at least the minimum to read it: the next customer's tap waits that long (issue 28).
    this.set({
      kind: 'timed',
      shownAt,
      until: shownAt + resultDisplayMs,
      takesTapsAt: shownAt + Math.min(outcomeMinimumMs, resultDisplayMs),
      card,
      after: 'result',
    });
  }

  /** An error shown now. */
  showError(card: NfcCard | undefined): void {
    const shownAt = this.now();
    // A failure has nothing to protect: tapping again is the way to retry.
    this.set({ kind: 'timed', shownAt, until: shownAt + this.timeouts.errorDisplayMs, takesTapsAt: shownAt, card, after: 'error' });
  }

  /** "Remove your phone" until the phone leaves or its time is up. */
  showRemovePhone(card: NfcCard): void {
    this.screen = { kind: 'remove_phone', until: this.now() + this.timeouts.removePhoneMs, card };
  }

  /**
   * "More time" on the error on screen: it stays `MORE_TIME_MS` longer, at most `MORE_TIME_PRESSES` times.
   * Returns the time left on screen (ms), or undefined when no error is timed or its extensions are spent.
   */
  moreTime(): number | undefined {
    const screen = this.screen;
    if (screen.kind !== 'timed' || screen.after !== 'error') return undefined;
    const extended = (screen.extended ?? 0) + 1;
    if (extended > MORE_TIME_PRESSES) return undefined;
    const now = this.now();
    const until = Math.max(screen.until, now) + MORE_TIME_MS;
    this.set({ ...screen, until, extended });
    return until - now;
  }

  /** "Next customer": the screen ends now. */
  dismiss(): void {
    // Remembered for the screen on show: the loop may not be waiting on it yet (closing the socket).
    if (this.screen.kind !== 'none') this.dismissed = this.screen;
    this.kick.abort();
  }

  /** Resolves at the next outcome, error or "More time" shown from now on. */
  nextChange(): Promise<undefined> {
    this.changed = deferred<undefined>();
    return this.changed.promise;
  }

  /** Resolves when `screen` is done: its time is up, "Next" was pressed, or the phone left (remove_phone). */
  async ends(screen: ShownScreen, signal: AbortSignal): Promise<void> {
    if (this.dismissed === screen) {
      this.dismissed = undefined;
      return;
    }
    this.kick = new AbortController();
    const kick = this.kick.signal;
    const both = AbortSignal.any([signal, kick]);
    const wait = Math.max(0, screen.until - this.now());
    try {
      if (screen.kind === 'remove_phone') {
        // The phone left, the time is up, or the reader cannot tell any more: the screen is done.
        const removed = screen.card.waitForRemoval(both).catch(() => {
          if (both.aborted) throw new AbortedError('screen wait abandoned');
        });
        await Promise.race([removed, sleep(wait, both)]);
      } else {
        await sleep(wait, both);
      }
    } catch (e) {
      if (!kick.aborted) throw e; // stopped, or a trigger won: not the end of the screen
    }
  }

  private set(screen: Screen): void {
    this.screen = screen;
    // The main loop may be waiting with no screen to time out: let it look again.
    this.changed.resolve(undefined);
  }
}
