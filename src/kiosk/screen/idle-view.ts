/**
 * What the screen says while no customer is served: the backend's state as the status bar names it, and the
 * idle view (ready, connecting, offline, needs staff, cannot verify) from the session keeper's status and
 * the devices. Pure: the keeper's status and the devices' refusal are passed in.
 */
import { needsStaffCode } from '../../common/backend-failure-kinds.js';
import type { BackendState, ErrorView, KioskView } from '../../common/kiosk-view.js';
import type { KioskConfig } from '../../platform/config.js';
import { slowPaceText } from '../retry-policy.js';
import type { KeeperStatus } from '../session-keeper.js';

export type ConfigErrorStatus = Extract<KeeperStatus, { state: 'config_error' }>;

/**
 * What the status bar may say of the backend: connected only after a successful exchange.
 * `backendAnswered`: the backend answered since the last failure (in standby, no session kept, it still counts as reached).
 */
export function backendStateFor(status: KeeperStatus, backendAnswered: boolean): BackendState {
  switch (status.state) {
    case 'armed':
      return 'connected';
    case 'standby':
      return backendAnswered ? 'connected' : 'on_demand';
    case 'arming':
      return 'connecting';
    case 'offline':
      return status.code === 'backend_not_answering' ? 'not_answering' : 'offline';
    case 'config_error':
      return 'needs_staff';
    case 'stopped':
      return 'stopped';
  }
}

/**
 * What staff are told of a keeper that needs them. A configuration failure the keeper still probes (a
 * gateway refusing the session socket, a session API not at the address, a proxy refusing the tunnel) has
 * a code of its own and says how often it is checked: the kiosk turns ready by itself once it is fixed.
 * Refused credentials stay `config_error`: nothing is tried again until staff act.
 */
export function configErrorView(status: ConfigErrorStatus, session: KioskConfig['session']): ErrorView {
  const code = status.retrying ? needsStaffCode(status.kind) : undefined;
  if (code === undefined) return { code: 'config_error', detail: status.detail, retryable: false };
  const { offlineBackoffMaxMs, maxRequestsPerMinute } = session;
  return { code, detail: `${status.detail} (checked again ${slowPaceText(offlineBackoffMaxMs, maxRequestsPerMinute)})`, retryable: false };
}

/** A tap now could start a verification: the devices can finish one and the backend is not known down. */
export function canServe(status: KeeperStatus, deviceRefusal: () => ErrorView | undefined): boolean {
  const { state } = status;
  return state !== 'offline' && state !== 'config_error' && state !== 'stopped' && deviceRefusal() === undefined;
}

export interface IdleInputs {
  readonly status: KeeperStatus;
  readonly backendAnswered: boolean;
  /** The request profile in use, by name. */
  readonly profile: string;
  /** Why the devices cannot serve a customer (asked only where it decides the view: it reads the ports). */
  readonly deviceRefusal: () => ErrorView | undefined;
  readonly session: KioskConfig['session'];
}

/** The idle view: never a prompt the kiosk cannot honour. */
export function idleView({ status, backendAnswered, profile, deviceRefusal, session }: IdleInputs): Partial<KioskView> {
  const base = {
    transport: null,
    role: null,
    outcome: null,
    progress: { step: 0, apdus: 0, bleMessages: 0 },
    profile,
    backend: backendStateFor(status, backendAnswered),
  };
  if (status.state === 'offline' || status.state === 'arming') {
    // A cause only staff can fix (no Bluetooth) wins over one that passes by itself: "offline" or
    // "connecting" would have staff wait for nothing.
    const refusal = deviceRefusal();
    if (refusal !== undefined && refusal.code !== 'starting')
      return { ...base, phase: 'cannot_verify', prompt: 'cannot_verify', error: refusal };
  }
  switch (status.state) {
    case 'armed':
    case 'standby': {
      // Ready only when a verification can run to the end.
      const refusal = deviceRefusal();
      if (refusal === undefined) return { ...base, phase: 'ready', prompt: 'tap_or_scan', error: null };
      if (refusal.code === 'starting') return { ...base, phase: 'connecting', prompt: 'connecting', error: null };
      return { ...base, phase: 'cannot_verify', prompt: 'cannot_verify', error: refusal };
    }
    case 'arming':
      return { ...base, phase: 'connecting', prompt: 'connecting', error: null };
    case 'offline':
      return {
        ...base,
        phase: 'offline',
        prompt: 'offline',
        error: { code: status.code ?? 'backend_unavailable', detail: status.detail, retryable: true },
      };
    case 'config_error':
      return { ...base, phase: 'config_error', prompt: 'config_error', error: configErrorView(status, session) };
    case 'stopped':
      return { ...base, phase: 'stopped', prompt: 'stopped', error: null };
  }
}
