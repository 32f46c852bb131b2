/**
 * No screen flashes: the core moves through its in-between phases as fast as the phone answers (a
 * "Keep your phone near" may last 2 ms), and a prompt that flashes by cannot be read and looks like a
 * fault. An in-between screen therefore stays at least `MIN_SCREEN_MS` once shown; what comes meanwhile
 * waits, and only the latest state is kept (an in-between screen overtaken while waiting is skipped).
 * The end of a visit — an outcome or an error — only waits until the in-between screen has been up
 * `MAX_END_DELAY_MS` (so at most that long, and not at all after a step that lasted); a state with no kiosk
 * (disconnected) and any change that stays on the same screen (progress, language) show at once.
 */
import type { ScreenState } from '../../common/kiosk-api.js';
import { progressVariantFor } from '../screens/screen-name.js';

/** The least time an in-between screen stays once shown. */
export const MIN_SCREEN_MS = 1_000;
/** An outcome or an error waits until the in-between screen has been up this long (so at most this long). */
export const MAX_END_DELAY_MS = 250;

/** Screens between the customer's actions and the end of a visit (they may last only milliseconds). */
const IN_BETWEEN: ReadonlySet<ScreenState['view']['phase']> = new Set([
  'starting',
  'connecting',
  'engaging',
  'awaiting_card',
  'ble_connecting',
  'transferring',
  'remove_phone',
]);
/** The end of a visit: never held back for more than a glance. */
const VISIT_END: ReadonlySet<ScreenState['view']['phase']> = new Set(['result', 'error']);

/** What the customer sees as one screen: its phase, and the variant for the progress screens. */
export function screenKey(state: ScreenState | null): string {
  if (state === null) return 'none';
  const variant = progressVariantFor(state);
  return variant === null ? state.view.phase : `${state.view.phase}/${variant}`;
}

/**
 * How long `next` must wait before it replaces the screen shown (`shown`, on screen since `shownSince`):
 * 0 to show it now.
 */
export function holdDelay(shown: ScreenState | null, shownSince: number, next: ScreenState | null, now: number): number {
  if (shown === null || next === null) return 0;
  if (screenKey(shown) === screenKey(next)) return 0;
  if (!IN_BETWEEN.has(shown.view.phase)) return 0;
  const left = shownSince + (VISIT_END.has(next.view.phase) ? MAX_END_DELAY_MS : MIN_SCREEN_MS) - now;
  return Math.max(0, left);
}
