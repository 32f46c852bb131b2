/**
 * What staff read about the Bluetooth adapter on each binding, and which binding the kiosk believes noble
 * runs on (issue 29, defect 6).
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Noble } from '@stoprocent/noble';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AdapterAvailability,
  MAC_PERMISSION_DETAIL,
  MAC_PERMISSION_WAIT_MS,
  macPermissionWait,
} from '../../../../src/devices/ble/adapter-state.js';
import { BlenoPeripheral } from '../../../../src/devices/ble/bleno-peripheral.js';
import type { Bleno, BlenoConstructor } from '../../../../src/devices/ble/bleno-types.js';
import { NobleCentral } from '../../../../src/devices/ble/noble-central.js';
import { WIN_NO_RADIO, availabilityOf, defaultBindingKind } from '../../../../src/devices/ble/noble-support.js';

const requireCjs = createRequire(import.meta.url);

afterEach(() => {
  vi.useRealTimers();
});

describe('noble binding choice follows stoprocent’s rules (lib/resolve-bindings.js getDefaultBindings)', () => {
  it.each([
    ['linux', {}, 'hci'],
    ['freebsd', {}, 'hci'],
    ['darwin', {}, 'mac'],
    ['win32', {}, 'win'],
    ['linux', { NOBLE_BINDINGS: 'dbus' }, 'dbus'],
    ['darwin', { NOBLE_BINDINGS: 'HCI' }, 'hci'],
    ['win32', { NOBLE_BINDINGS: 'mac' }, 'mac'],
    ['darwin', { NOBLE_BINDINGS: 'bogus' }, 'mac'],
    ['darwin', { BLUETOOTH_HCI_SOCKET_UART_PORT: '/dev/ttyUSB0' }, 'hci'],
    ['win32', { BLUETOOTH_HCI_SOCKET_FORCE_UART: '1' }, 'hci'],
    ['win32', { BLUETOOTH_HCI_SOCKET_USB_VID: '2357', BLUETOOTH_HCI_SOCKET_USB_PID: '0604' }, 'hci'],
    ['win32', { BLUETOOTH_HCI_SOCKET_USB_VID: '2357' }, 'win'],
  ] as const)('%s with %j → %s', (platform, env, kind) => {
    expect(defaultBindingKind(platform, env)).toBe(kind);
  });
});

describe('Windows: no radio is not "not supported"', () => {
  it('unsupported on the win binding is no_radio (staff: the service is stopped or the adapter missing), not unsupported_platform', () => {
    const win = availabilityOf('unsupported', 'win');
    expect(win).toEqual({ usable: false, reason: 'no_radio', detail: WIN_NO_RADIO });
    expect(win.detail).toMatch(/Bluetooth service is stopped or the adapter is missing/);
    // The other bindings keep theirs.
    expect(availabilityOf('unsupported', 'mac').detail).toMatch(/not supported/);
    expect(availabilityOf('unsupported', 'hci').reason).toBe('no_adapter');
  });
});

describe('macOS: a pending Bluetooth permission prompt', () => {
  const starting = { usable: false, reason: 'starting', detail: 'the Bluetooth adapter state is not known yet' } as const;

  it('unknown for MAC_PERMISSION_WAIT_MS reads "waiting for Bluetooth permission"; an answer clears it', () => {
    const clock = { t: 0 };
    const state = { unknown: true, raw: starting as { usable: boolean; reason?: string; detail?: string } };
    const a = new AdapterAvailability(
      () => state.raw,
      3_000,
      () => clock.t,
      macPermissionWait('mac', () => state.unknown),
    );
    expect(a.current).toEqual(starting);
    clock.t = MAC_PERMISSION_WAIT_MS - 1;
    a.update();
    expect(a.current.detail).toBe(starting.detail);
    clock.t = MAC_PERMISSION_WAIT_MS;
    a.update();
    expect(a.current).toEqual({ ...starting, detail: MAC_PERMISSION_DETAIL });
    state.unknown = false;
    state.raw = { usable: true };
    a.update();
    expect(a.current).toEqual({ usable: true });
    a.dispose();
  });

  it('no such hint on the other bindings', () => {
    expect(macPermissionWait('hci', () => true)).toBeUndefined();
    expect(macPermissionWait('win', () => true)).toBeUndefined();
  });

  /** Bindings that start and never report a state: CoreBluetooth while the prompt waits. */
  class SilentBindings extends EventEmitter {
    start(): void {}
    init(): void {}
    stop(): void {}
  }

  it('the noble central on the mac binding says so by itself once the wait is over (no state change needed)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const NobleClass = requireCjs('@stoprocent/noble/lib/noble') as new (bindings: EventEmitter) => Noble;
    const mac = new NobleCentral(new NobleClass(new SilentBindings()), { platform: 'mac' });
    const hci = new NobleCentral(new NobleClass(new SilentBindings()), { platform: 'hci' });
    await vi.advanceTimersByTimeAsync(MAC_PERMISSION_WAIT_MS);
    expect(mac.availability()).toMatchObject({ usable: false, reason: 'starting', detail: MAC_PERMISSION_DETAIL });
    expect(hci.availability().detail).not.toBe(MAC_PERMISSION_DETAIL);
    mac.dispose();
    hci.dispose();
  });

  it('and so does the bleno peripheral on the mac binding', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const BlenoClass = requireCjs('@stoprocent/bleno/lib/bleno') as BlenoConstructor;
    const bleno: Bleno = new BlenoClass(new SilentBindings() as never);
    const peripheral = new BlenoPeripheral(bleno, { binding: 'mac' });
    await vi.advanceTimersByTimeAsync(MAC_PERMISSION_WAIT_MS);
    expect(peripheral.availability()).toMatchObject({ usable: false, reason: 'starting', detail: MAC_PERMISSION_DETAIL });
    await peripheral.close();
  });
});
