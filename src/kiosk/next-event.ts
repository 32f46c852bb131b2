/**
 * What the main loop waits for: the next tap or scan, or the end of what is on screen, whichever comes
 * first. While an outcome is younger than its minimum no tap or scan is taken (one made meanwhile is taken
 * when the minimum ends).
 */
import { sleep } from './async-tools.js';
import type { ScreenTimer } from './screen/screen-timer.js';
import type { TriggerSource } from './triggers.js';
import type { Trigger } from './verification/results.js';

export type NextEvent =
  | { readonly kind: 'trigger'; readonly trigger: Trigger }
  /** The outcome, error or "remove your phone" on screen is done. */
  | { readonly kind: 'screen_done' }
  /** Something else went on screen: look again. */
  | { readonly kind: 'screen_changed' }
  /** The outcome's minimum time is over: taps and scans are taken again. */
  | { readonly kind: 'takes_taps' };

export async function nextEvent(timer: ScreenTimer, triggers: TriggerSource, now: () => number, stop: AbortSignal): Promise<NextEvent> {
  const local = new AbortController();
  const onStop = (): void => local.abort();
  stop.addEventListener('abort', onStop, { once: true });
  const changed = timer.nextChange();
  const screen = timer.current;
  const holdFor = screen.kind === 'timed' ? screen.takesTapsAt - now() : 0;
  const trigger = holdFor > 0 ? undefined : triggers.next(local.signal);
  const contenders: Promise<NextEvent>[] = [changed.then(() => ({ kind: 'screen_changed' }) as const)];
  if (trigger) contenders.push(trigger.then((t) => ({ kind: 'trigger', trigger: t }) as const));
  else contenders.push(sleep(holdFor, local.signal).then(() => ({ kind: 'takes_taps' }) as const));
  if (screen.kind !== 'none') contenders.push(timer.ends(screen, local.signal).then(() => ({ kind: 'screen_done' }) as const));
  try {
    const next = await Promise.race(contenders);
    // A tap or scan that completes just as the screen changes is kept for the next round, not lost.
    if (trigger && next.kind !== 'trigger')
      trigger.then(
        (t) => triggers.stash(t),
        () => undefined,
      );
    return next;
  } finally {
    local.abort();
    stop.removeEventListener('abort', onStop);
  }
}
