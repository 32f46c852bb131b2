/**
 * A local fallback for privacy: the host clears an outcome (or an error) at `clearsAt`, but if it stops
 * sending states, or sends only invalid ones while the socket stays open, the last state would stay on
 * screen with the holder's data. A short while after `clearsAt` the screen hides it by itself and shows a
 * neutral waiting screen until the host sends a state that may be shown.
 */
import { EditableTimeouts, type ScreenState } from '../../common/kiosk-api.js';

/** How long past `clearsAt` the screen waits for the host before hiding the outcome itself. */
export const STALE_GRACE_MS = 5_000;
/** An outcome without a `clearsAt` (out of contract) stays at most as long as the longest result time allows. */
export const MAX_UNTIMED_RESULT_MS = EditableTimeouts.shape.resultDisplayMs.maxValue ?? 300_000;
/** setTimeout's longest delay; a later deadline is re-armed in steps. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * When the screen must stop showing `state` (ms since the epoch), or null when it may show it for as long
 * as the host says. `shownSince`: when the current phase began on this screen.
 */
export function hideAt(state: ScreenState | null, shownSince: number): number | null {
  if (state === null) return null;
  const { phase } = state.view;
  if (phase !== 'result' && phase !== 'error') return null;
  if (state.clearsAt !== null) return state.clearsAt + STALE_GRACE_MS;
  // An error without a clear time waits for staff and holds no personal data; an outcome always clears.
  return phase === 'result' ? shownSince + MAX_UNTIMED_RESULT_MS + STALE_GRACE_MS : null;
}

export interface WatchClock {
  now(): number;
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: WatchClock = {
  now: () => Date.now(),
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};

/**
 * Follows the states the screen receives and says (through `onStale`) whether the current one must be
 * hidden: at once when it arrives already past its time, else by a timer that needs no further state.
 */
export class StaleScreenWatch {
  #phase: string | null = null;
  #since = 0;
  #timer: unknown = undefined;
  #stale = false;
  #disposed = false;

  constructor(
    private readonly onStale: (stale: boolean) => void,
    private readonly clock: WatchClock = realClock,
  ) {}

  get stale(): boolean {
    return this.#stale;
  }

  /** Call with every state shown (null when there is none, e.g. disconnected). */
  update(state: ScreenState | null): void {
    if (this.#disposed) return;
    const now = this.clock.now();
    const phase = state?.view.phase ?? null;
    if (phase !== this.#phase) {
      this.#phase = phase;
      this.#since = now;
    }
    this.#cancel();
    const at = hideAt(state, this.#since);
    if (at === null) {
      this.#set(false);
    } else if (now >= at) {
      this.#set(true);
    } else {
      this.#set(false);
      this.#arm(at);
    }
  }

  dispose(): void {
    this.#disposed = true;
    this.#cancel();
  }

  #arm(at: number): void {
    const wait = Math.min(Math.max(0, at - this.clock.now()), MAX_TIMER_MS);
    this.#timer = this.clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#disposed) return;
      if (this.clock.now() >= at) this.#set(true);
      else this.#arm(at);
    }, wait);
  }

  #cancel(): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #set(stale: boolean): void {
    if (stale === this.#stale) return;
    this.#stale = stale;
    this.onStale(stale);
  }
}
