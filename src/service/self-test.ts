/**
 * The staff's device self-test: what each part of the counter can do right now, as stable status keys
 * the screen translates plus a short staff detail. It only reads state (the kiosk's phase, the ports'
 * availability, the camera the renderer reported); it never starts a verification or touches a phone.
 */
import { isNeedsStaffCode } from '../common/backend-failure-kinds.js';
import type { CameraState, SelfTestCheck } from '../common/kiosk-api.js';
import type { KioskView } from '../common/kiosk-view.js';
import type { AvailabilitySource, DevicePorts } from '../devices/ports.js';

export interface SelfTestInput {
  readonly view: KioskView;
  readonly ports: DevicePorts;
  /** The camera as the renderer last reported it; undefined when it never did. */
  /** The camera's last problem or state, and whether it has delivered frames since the start. */
  readonly camera: { readonly state: CameraState; readonly detail?: string; readonly worked?: boolean } | undefined;
}

const MAX_DETAIL = 300;

function clip(text: string | undefined): string | undefined {
  return text === undefined || text === '' ? undefined : text.slice(0, MAX_DETAIL);
}

function backendCheck(view: KioskView): SelfTestCheck {
  // A silent backend is named whatever the screen shows (an error after a tap nobody answered, Offline).
  if (view.backend === 'not_answering') return { name: 'backend', ok: false, status: 'not_answering', ...withDetail(view.error?.detail) };
  switch (view.phase) {
    case 'ready':
      return { name: 'backend', ok: true, status: 'armed' };
    case 'engaging':
    case 'awaiting_card':
    case 'ble_connecting':
    case 'transferring':
    case 'result':
    case 'remove_phone':
      return { name: 'backend', ok: true, status: 'in_use' };
    case 'offline':
      return { name: 'backend', ok: false, status: 'unreachable', ...withDetail(view.error?.detail) };
    case 'config_error':
      // A cause with a code of its own (a gateway refusing the session socket, …) is named, not "configuration".
      return {
        name: 'backend',
        ok: false,
        status: isNeedsStaffCode(view.error?.code) ? view.error.code : 'config_error',
        ...withDetail(view.error?.detail),
      };
    case 'cannot_verify':
      // The backend is fine; the devices are not (their own checks below say which).
      return { name: 'backend', ok: true, status: 'armed' };
    case 'error':
      return { name: 'backend', ok: false, status: 'last_attempt_failed', ...withDetail(view.error?.code) };
    case 'starting':
    case 'connecting':
      return { name: 'backend', ok: false, status: 'connecting' };
    case 'stopped':
      return { name: 'backend', ok: false, status: 'stopped' };
  }
}

function withDetail(detail: string | undefined): { detail?: string } {
  const d = clip(detail);
  return d === undefined ? {} : { detail: d };
}

function portCheck(name: SelfTestCheck['name'], port: AvailabilitySource | undefined): SelfTestCheck {
  if (!port) return { name, ok: false, status: 'not_configured' };
  try {
    const a = port.availability();
    return { name, ok: a.usable, status: a.usable ? 'usable' : (a.reason ?? 'unusable'), ...withDetail(a.detail) };
  } catch {
    return { name, ok: false, status: 'adapter_error' };
  }
}

function cameraCheck(camera: SelfTestInput['camera']): SelfTestCheck {
  if (!camera) return { name: 'camera', ok: false, status: 'not_reported', detail: 'no screen has reported its camera yet' };
  if (camera.state === 'active' || camera.state === 'starting')
    return { name: 'camera', ok: true, status: camera.state, ...withDetail(camera.detail) };
  // Off between customers: fine if it has delivered frames before and no problem was reported since.
  if (camera.state === 'off')
    return camera.worked
      ? { name: 'camera', ok: true, status: 'idle' }
      : { name: 'camera', ok: false, status: 'not_reported', detail: 'the camera has not run since the kiosk started' };
  return { name: 'camera', ok: false, status: camera.state, ...withDetail(camera.detail) };
}

export function runSelfTest(input: SelfTestInput): SelfTestCheck[] {
  return [
    backendCheck(input.view),
    portCheck('nfc', input.ports.nfc),
    portCheck('ble_central', input.ports.bleCentral),
    portCheck('ble_peripheral', input.ports.blePeripheral),
    cameraCheck(input.camera),
  ];
}
