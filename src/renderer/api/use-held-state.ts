/** The state the customer screens draw: the host's, with in-between screens held (see screen-hold.ts). */
import { useEffect, useRef, useState } from 'react';
import type { ScreenState } from '../../common/kiosk-api.js';
import { holdDelay, screenKey } from './screen-hold.js';

export function useHeldState(state: ScreenState | null): ScreenState | null {
  const [shown, setShown] = useState(state);
  const current = useRef(state);
  const since = useRef(Date.now());
  useEffect(() => {
    const apply = (): void => {
      if (screenKey(state) !== screenKey(current.current)) since.current = Date.now();
      current.current = state;
      setShown(state);
    };
    const delay = holdDelay(current.current, since.current, state, Date.now());
    if (delay === 0) {
      apply();
      return undefined;
    }
    const timer = setTimeout(apply, delay);
    return () => clearTimeout(timer);
  }, [state]);
  // No kiosk (disconnected): nothing of the last state stays, not even for a frame.
  return state === null ? null : shown;
}
