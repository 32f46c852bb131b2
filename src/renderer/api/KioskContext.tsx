/**
 * Gives every screen the `KioskApi` and the latest validated `ScreenState`. The state lives only here, in
 * React state: when the host drops the connection the state is dropped too, so a stale outcome never
 * stays on screen while the kiosk is unreachable; and when the host keeps the connection but stops
 * clearing an outcome, the screen hides it by itself shortly after its `clearsAt` (`stale`).
 */
import { createContext, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import type { KioskApi, ScreenState } from '../../common/kiosk-api.js';
import type { KioskConnection } from './connect.js';
import type { ConnectionStatus } from './socket-transport.js';
import { StaleScreenWatch } from './stale-screen.js';
import { keepOutcomeIdentity } from './state-identity.js';

export interface KioskContextValue {
  readonly api: KioskApi | null;
  readonly state: ScreenState | null;
  readonly connection: ConnectionStatus;
  /** The page was opened without the host's token (and there is no preload). */
  readonly missingToken: boolean;
  /**
   * The state's outcome or error is past its time and the host has not cleared it: the screen shows a
   * neutral waiting screen instead (and `state` carries no outcome).
   */
  readonly stale: boolean;
}

function withoutOutcome(state: ScreenState | null): ScreenState | null {
  return state?.view.outcome ? { ...state, view: { ...state.view, outcome: null } } : state;
}

const KioskContext = createContext<KioskContextValue | null>(null);

export function KioskProvider(props: { connection: KioskConnection | { readonly missingToken: true }; children: ReactNode }): ReactNode {
  const { connection } = props;
  const [state, setState] = useState<ScreenState | null>(null);
  const [status, setStatus] = useState<ConnectionStatus>({ kind: 'connecting', attempt: 1, lastProblem: null });
  const [stale, setStale] = useState(false);

  useEffect(() => {
    if ('missingToken' in connection) return undefined;
    // Updated in the same callbacks as the state, so React renders both together: an outcome that arrives
    // already past its time is never drawn, not even for one frame.
    const watch = new StaleScreenWatch((isStale) => {
      setStale(isStale);
      // Past its time: the holder's data leaves the screen's memory too (a later push may bring it back
      // into `state`, but it is never shown again).
      if (isStale) setState((previous) => withoutOutcome(previous));
    });
    const offState = connection.api.onState((next) => {
      // An unchanged outcome keeps its identity, so nothing of it is presented or decoded again.
      setState((previous) => keepOutcomeIdentity(previous, next));
      watch.update(next);
    });
    const offStatus = connection.onStatus((s) => {
      setStatus(s);
      if (s.kind !== 'open') {
        setState(null);
        watch.update(null);
      }
    });
    return () => {
      offState();
      offStatus();
      watch.dispose();
    };
  }, [connection]);

  // A stale state keeps its phase for the status bar and the staff screens, never its outcome.
  const shown = useMemo(() => (stale ? withoutOutcome(state) : state), [stale, state]);

  const value: KioskContextValue =
    'missingToken' in connection
      ? { api: null, state: null, connection: { kind: 'stopped', lastProblem: null }, missingToken: true, stale: false }
      : { api: connection.api, state: shown, connection: status, missingToken: false, stale };
  return <KioskContext.Provider value={value}>{props.children}</KioskContext.Provider>;
}

export function useKiosk(): KioskContextValue {
  const value = useContext(KioskContext);
  if (!value) throw new Error('useKiosk() outside <KioskProvider>');
  return value;
}

/** For components that render only once connected (every screen except `disconnected`). */
export function useConnectedKiosk(): { api: KioskApi; state: ScreenState } {
  const { api, state } = useKiosk();
  if (!api || !state) throw new Error('useConnectedKiosk() before the first state');
  return { api, state };
}
