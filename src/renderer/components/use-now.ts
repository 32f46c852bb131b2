import { useEffect, useState } from 'react';

/** The current time, refreshed every `intervalMs` while `active` (countdowns, session freshness). */
export function useNow(intervalMs = 1_000, active = true): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return undefined;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs, active]);
  return now;
}

/** Whole seconds from `now` until `at` (never negative); rounded up so a countdown never shows 0 early. */
export function secondsUntil(at: number, now: number): number {
  return Math.max(0, Math.ceil((at - now) / 1_000));
}
