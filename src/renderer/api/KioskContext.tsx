/**
 * Gives every screen the `KioskApi` and the latest validated `ScreenState`. The state lives only here, in
 * React state: when the host drops the connection the state is dropped too, so a stale outcome never
 * stays on screen while the kiosk is unreachable.
 */
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import type { KioskApi, ScreenState } from '../../common/kiosk-api.js';
import type { KioskConnection } from './connect.js';
import type { ConnectionStatus } from './socket-transport.js';

export interface KioskContextValue {
  readonly api: KioskApi | null;
  readonly state: ScreenState | null;
  readonly connection: ConnectionStatus;
  /** The page was opened without the host's token (and there is no preload). */
  readonly missingToken: boolean;
}

const KioskContext = createContext<KioskContextValue | null>(null);

export function KioskProvider(props: { connection: KioskConnection | { readonly missingToken: true }; children: ReactNode }): ReactNode {
  const { connection } = props;
  const [state, setState] = useState<ScreenState | null>(null);
  const [status, setStatus] = useState<ConnectionStatus>({ kind: 'connecting', attempt: 1, lastProblem: null });

  useEffect(() => {
    if ('missingToken' in connection) return undefined;
    const offState = connection.api.onState(setState);
    const offStatus = connection.onStatus((s) => {
      setStatus(s);
      if (s.kind !== 'open') setState(null);
    });
    return () => {
      offState();
      offStatus();
    };
  }, [connection]);

  const value: KioskContextValue =
    'missingToken' in connection
      ? { api: null, state: null, connection: { kind: 'stopped', lastProblem: null }, missingToken: true }
      : { api: connection.api, state, connection: status, missingToken: false };
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
