/**
 * Readiness from the device states (src/common/readiness.ts): the kiosk invites a customer only when a
 * verification can run to the end (every one ends in a Bluetooth transfer), and offers only the ways in
 * that work. Reproductions of issue 18: no Bluetooth adapter with `--nfc none` showed Ready; a denied camera
 * still showed the camera prompt.
 */
import { describe, expect, it } from 'vitest';
import type { KioskView } from '../../src/common/kiosk-view.js';
import { readinessOf } from '../../src/common/readiness.js';

type Devices = KioskView['devices'];
const ok = { usable: true };
const off = (reason: string) => ({ usable: false, reason });
const devices = (patch: Partial<Devices> = {}): Devices => ({
  nfc: ok,
  qr: ok,
  bleCentral: ok,
  blePeripheral: off('not_configured'),
  ...patch,
});

describe('readinessOf', () => {
  it('every device usable: ready, tap and camera offered', () => {
    expect(readinessOf(devices())).toMatchObject({
      canVerify: true,
      blocker: undefined,
      starting: false,
      ways: { tap: true, camera: true, scanner: true },
    });
  });

  it('no Bluetooth adapter (both roles no_adapter) with no NFC: cannot verify, the cause named, nothing starting', () => {
    const r = readinessOf(devices({ nfc: off('not_configured'), bleCentral: off('no_adapter'), blePeripheral: off('no_adapter') }));
    expect(r).toMatchObject({ canVerify: false, blocker: 'ble_unavailable', starting: false });
    expect(r.detail).toBe('no Bluetooth role is usable (Bluetooth central no_adapter, peripheral no_adapter)');
  });

  it('Bluetooth not set up at all (`--ble none`): cannot verify, whatever the reader and the camera', () => {
    expect(readinessOf(devices({ bleCentral: off('not_configured'), blePeripheral: off('not_configured') }), 'active').blocker).toBe(
      'ble_unavailable',
    );
  });

  it('one usable role is enough', () => {
    expect(readinessOf(devices({ bleCentral: off('powered_off'), blePeripheral: ok })).canVerify).toBe(true);
  });

  it('a role still starting (and none usable): not ready yet, but no blocker (getting ready, not needs staff)', () => {
    expect(readinessOf(devices({ bleCentral: off('starting'), blePeripheral: off('no_adapter') }))).toMatchObject({
      canVerify: false,
      blocker: undefined,
      starting: true,
    });
  });

  it('no NFC reader: only the QR code is offered; the kiosk can still verify', () => {
    expect(readinessOf(devices({ nfc: off('no_reader') }))).toMatchObject({
      canVerify: true,
      ways: { tap: false, camera: true, scanner: true },
    });
  });

  it('a camera denied, missing, unplugged or broken: no camera prompt, the scanner still offered', () => {
    for (const camera of ['denied', 'missing', 'unplugged', 'error'] as const) {
      expect(readinessOf(devices(), camera).ways, camera).toEqual({ tap: true, camera: false, scanner: true });
    }
    for (const camera of ['off', 'starting', 'active'] as const) expect(readinessOf(devices(), camera).ways.camera, camera).toBe(true);
  });

  it('neither the reader nor the QR input works: no way in, cannot verify', () => {
    expect(readinessOf(devices({ nfc: off('service_down'), qr: off('adapter_error') }))).toMatchObject({
      canVerify: false,
      blocker: 'no_input',
    });
    expect(readinessOf(devices({ nfc: off('starting'), qr: off('adapter_error') }))).toMatchObject({
      canVerify: false,
      blocker: undefined,
      starting: true,
    });
  });
});
