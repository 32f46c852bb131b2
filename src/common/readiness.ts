/**
 * What the kiosk can do with the devices it has, as one pure function shared by the core (may it invite a
 * customer at all?) and the screen (which ways in may it offer?). Every verification ends in a Bluetooth
 * transfer, so without a usable Bluetooth role nothing can work, however well the reader or the camera
 * does; a way in is offered only when its device works: the tap when the NFC reader is usable, the camera
 * when the screen's camera is not known to be broken. A handheld scanner types into the same QR input and
 * cannot be detected, so with a broken camera QR codes are still taken, by scanner.
 */
import type { CameraState } from './kiosk-api.js';
import type { KioskView } from './kiosk-view.js';

export type Devices = KioskView['devices'];

/** Why no customer can be invited; the core shows it as the `cannot_verify` error code. */
export type ReadinessBlocker =
  /** No Bluetooth role is usable (and none is still starting). */
  | 'ble_unavailable'
  /** Neither the NFC reader nor the QR input works. */
  | 'no_input';

export interface Readiness {
  /** A verification can run to the end. */
  readonly canVerify: boolean;
  /** Set when `canVerify` is false and waiting will not help: staff are needed. */
  readonly blocker: ReadinessBlocker | undefined;
  /** Not ready yet, but a device is still starting: say "getting ready", not "needs staff". */
  readonly starting: boolean;
  /** The ways a customer may start, as the screen offers them. */
  readonly ways: { readonly tap: boolean; readonly camera: boolean; readonly scanner: boolean };
  /** Staff detail for a blocker: each Bluetooth role's or input's state, free of peer text. */
  readonly detail: string;
}

/** The camera states in which the camera is known not to work. */
const BROKEN_CAMERA: ReadonlySet<CameraState> = new Set<CameraState>(['denied', 'missing', 'unplugged', 'error']);

function reasonOf(device: Devices['nfc']): string {
  return device.usable ? 'usable' : (device.reason ?? 'unavailable').slice(0, 40);
}

/**
 * @param camera the screen's own camera, when the caller knows it (the core does not: it only knows
 *   that the QR input takes scans).
 */
export function readinessOf(devices: Devices, camera?: CameraState): Readiness {
  const ble = devices.bleCentral.usable || devices.blePeripheral.usable;
  const bleStarting = !ble && (devices.bleCentral.reason === 'starting' || devices.blePeripheral.reason === 'starting');
  const tap = devices.nfc.usable;
  const qr = devices.qr.usable;
  const cameraWorks = qr && (camera === undefined || !BROKEN_CAMERA.has(camera));
  const ways = { tap, camera: cameraWorks, scanner: qr };
  const inputStarting = !tap && !qr && (devices.nfc.reason === 'starting' || devices.qr.reason === 'starting');
  const bleDetail = `Bluetooth central ${reasonOf(devices.bleCentral)}, peripheral ${reasonOf(devices.blePeripheral)}`;
  if (!ble && !bleStarting)
    return { canVerify: false, blocker: 'ble_unavailable', starting: false, ways, detail: `no Bluetooth role is usable (${bleDetail})` };
  if (!tap && !qr && !inputStarting) {
    return {
      canVerify: false,
      blocker: 'no_input',
      starting: false,
      ways,
      detail: `no way in works (NFC reader ${reasonOf(devices.nfc)}, QR input ${reasonOf(devices.qr)})`,
    };
  }
  if (!ble || (!tap && !qr))
    return {
      canVerify: false,
      blocker: undefined,
      starting: true,
      ways,
      detail: `starting (${bleDetail}, NFC reader ${reasonOf(devices.nfc)})`,
    };
  return { canVerify: true, blocker: undefined, starting: false, ways, detail: '' };
}
