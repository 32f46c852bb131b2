/**
 * The staff status bar's items as plain data (label, status word, ok/problem), so the words are tested
 * without a DOM. Every item says its state in words as well as with a mark: never by colour alone.
 */
import type { CameraState, ScreenState } from '../../common/kiosk-api.js';

type T = (key: string, options?: Record<string, unknown>) => string;

export type ItemLevel = 'ok' | 'warn' | 'problem' | 'off';

export interface StatusItem {
  readonly id: 'nfc' | 'ble_central' | 'ble_peripheral' | 'camera' | 'backend' | 'session';
  readonly label: string;
  readonly value: string;
  readonly level: ItemLevel;
  /** Extra staff detail (the backend's origin, a device's raw reason), shown as a tooltip-free suffix. */
  readonly detail?: string;
}

function reasonText(reason: string | undefined, t: T): string | undefined {
  switch (reason) {
    case undefined:
      return t('status.unavailable');
    case 'not_configured':
      return t('status.reason.notConfigured');
    case 'adapter_error':
      return t('status.reason.adapterError');
    case 'not_installed':
      return t('status.reason.notInstalled');
    case 'no_reader':
      return t('status.reason.noReader');
    case 'powered_off':
      return t('status.reason.poweredOff');
    case 'unauthorized':
      return t('status.reason.unauthorized');
    case 'starting':
      return t('status.reason.starting');
    case 'unsupported_platform':
      return t('status.reason.unsupportedPlatform');
    case 'service_down':
      return t('status.reason.serviceDown');
    case 'no_adapter':
      return t('status.reason.noAdapter');
    case 'no_radio':
      return t('status.reason.noRadio');
    default:
      return undefined;
  }
}

function deviceItem(id: StatusItem['id'], label: string, device: { usable: boolean; reason?: string | undefined }, t: T): StatusItem {
  if (device.usable) return { id, label, value: t('status.ok'), level: 'ok' };
  const level = device.reason === 'not_configured' ? 'off' : device.reason === 'starting' ? 'warn' : 'problem';
  const words = reasonText(device.reason, t);
  // A reason the screen has no words for: the generic word, and the adapter's own key as the staff detail.
  return words === undefined
    ? { id, label, value: t('status.unavailable'), level, detail: (device.reason ?? '').slice(0, 40) }
    : { id, label, value: words, level };
}

/** The camera of this screen (`camera`, qr/camera-status.ts) when known, else as the host last heard it. */
export function cameraItem(state: ScreenState, t: T, camera: CameraState = state.camera.state): StatusItem {
  const label = t('status.camera');
  switch (camera) {
    case 'off':
      return { id: 'camera', label, value: t('status.cameraState.off'), level: 'off' };
    case 'starting':
      return { id: 'camera', label, value: t('status.cameraState.starting'), level: 'warn' };
    case 'active':
      return { id: 'camera', label, value: t('status.cameraState.active'), level: 'ok' };
    case 'denied':
      return { id: 'camera', label, value: t('status.cameraState.denied'), level: 'problem' };
    case 'missing':
      return { id: 'camera', label, value: t('status.cameraState.missing'), level: 'problem' };
    case 'unplugged':
      return { id: 'camera', label, value: t('status.cameraState.unplugged'), level: 'problem' };
    case 'error':
      return { id: 'camera', label, value: t('status.cameraState.error'), level: 'problem' };
  }
}

/**
 * Why the backend needs staff, when the core named the cause: a configuration failure it keeps probing (it
 * turns ready by itself once fixed, hence "retrying"). Otherwise (refused credentials, no backend set) the
 * generic words; the staff detail says which.
 */
function needsStaffText(code: string | undefined, t: T): string {
  switch (code) {
    case 'backend_refuses_socket':
      return t('status.backendState.refusesSocket');
    case 'backend_api_rejected':
      return t('status.backendState.apiRejected');
    case 'proxy_refused':
      return t('status.backendState.proxyRefused');
    default:
      return t('status.backendState.needsStaff');
  }
}

/** The backend as the core knows it (`view.backend`): connected only after a successful exchange. */
export function backendItem(state: ScreenState, t: T): StatusItem {
  const label = t('status.backend');
  const origin = state.backendOrigin ?? undefined;
  const withOrigin = (item: Omit<StatusItem, 'detail'>): StatusItem => (origin ? { ...item, detail: origin } : item);
  switch (state.view.backend) {
    case 'offline':
      return withOrigin({ id: 'backend', label, value: t('status.backendState.offline'), level: 'problem' });
    case 'not_answering':
      return withOrigin({ id: 'backend', label, value: t('status.backendState.notAnswering'), level: 'problem' });
    case 'needs_staff':
      return withOrigin({ id: 'backend', label, value: needsStaffText(state.view.error?.code, t), level: 'problem' });
    case 'connecting':
      return withOrigin({ id: 'backend', label, value: t('status.backendState.connecting'), level: 'warn' });
    case 'on_demand':
      return withOrigin({ id: 'backend', label, value: t('status.backendState.onDemand'), level: 'ok' });
    case 'stopped':
      return withOrigin({ id: 'backend', label, value: t('status.backendState.stopped'), level: 'off' });
    case 'connected':
      return withOrigin({ id: 'backend', label, value: t('status.backendState.connected'), level: 'ok' });
  }
}

/** "fresh · 7 min left" from the session's expiry; minutes rounded down, at least 1 while not expired. */
export function sessionItem(state: ScreenState, now: number, t: T): StatusItem {
  const { session } = state;
  const label = t('status.session');
  if (session.state === 'none' || session.expiresAt === null)
    return { id: 'session', label, value: t('status.sessionState.none'), level: 'warn' };
  const leftMs = session.expiresAt - now;
  if (leftMs <= 0) return { id: 'session', label, value: t('status.sessionState.expired'), level: 'problem' };
  const minutes = Math.max(1, Math.floor(leftMs / 60_000));
  return session.state === 'armed'
    ? { id: 'session', label, value: t('status.sessionState.fresh', { minutes }), level: 'ok' }
    : { id: 'session', label, value: t('status.sessionState.busy', { minutes }), level: 'ok' };
}

export function statusItems(state: ScreenState, now: number, t: T, camera?: CameraState): StatusItem[] {
  const { devices } = state.view;
  return [
    deviceItem('nfc', t('status.nfc'), devices.nfc, t),
    deviceItem('ble_central', t('status.bleCentral'), devices.bleCentral, t),
    deviceItem('ble_peripheral', t('status.blePeripheral'), devices.blePeripheral, t),
    cameraItem(state, t, camera),
    backendItem(state, t),
    sessionItem(state, now, t),
  ];
}

/** Phases with a customer at the counter: no summary line under them. */
const CUSTOMER_PHASES: ReadonlySet<ScreenState['view']['phase']> = new Set([
  'engaging',
  'awaiting_card',
  'ble_connecting',
  'transferring',
  'result',
  'error',
  'remove_phone',
]);

/**
 * The one line customers see instead of the staff items: whether the kiosk can serve them, in words. The
 * phase and the backend decide (the core only shows Ready when a verification can run to the end): ready,
 * getting ready, or needs staff. Which device or backend is at fault is staff detail, behind the Staff
 * button.
 */
export function summaryItem(state: ScreenState, t: T): { readonly value: string; readonly level: ItemLevel } | undefined {
  // The backend as the core knows it counts on every screen (an error screen while offline needs staff).
  if (state.view.backend === 'offline' || state.view.backend === 'not_answering' || state.view.backend === 'needs_staff')
    return { value: t('status.summary.problem'), level: 'problem' };
  // A customer is being served (a verification, its outcome or error, "remove your phone"): the screen says
  // what is going on, and "Kiosk: ready" under it would not be true. Nothing then.
  if (CUSTOMER_PHASES.has(state.view.phase)) return undefined;
  switch (state.view.phase) {
    case 'offline':
    case 'config_error':
    case 'cannot_verify':
    case 'stopped':
      return { value: t('status.summary.problem'), level: 'problem' };
    case 'starting':
    case 'connecting':
      return { value: t('status.summary.warn'), level: 'warn' };
    default:
      return { value: t('status.summary.ok'), level: 'ok' };
  }
}
