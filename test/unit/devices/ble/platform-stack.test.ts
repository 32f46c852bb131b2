/**
 * Loading the BLE libraries per OS (src/devices/ble/platform-stack.ts). Windows is replayed with bleno's own
 * code: on win32 its index takes the raw HCI binding on bluetooth-hci-socket's libusb driver
 * (lib/resolve-bindings.js, bluetooth-hci-socket index.js), which is what
 * `resolve-bindings('hci', { hciDriver: 'usb' })` builds here too, over this machine's USB devices (none of them
 * a Bluetooth dongle): its init() puts `exit` and `SIGINT` handlers on the process, then throws "No
 * compatible USB Bluetooth 4.0 device found!", and at exit the handler writes through the device it never
 * found.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { loadPlatformBle, WINDOWS_PERIPHERAL_UNAVAILABLE, type PlatformBle } from '../../../../src/devices/ble/platform-stack.js';
import type { Bleno } from '../../../../src/devices/ble/bleno-types.js';

const requireCjs = createRequire(import.meta.url);
const host: NodeJS.EventEmitter = process;
const EVENTS = ['exit', 'SIGINT'] as const;
const baseline = new Map(EVENTS.map((event) => [event, [...host.listeners(event)]]));

let loaded: PlatformBle | undefined;

afterEach(async () => {
  await loaded?.close();
  loaded = undefined;
  // Whatever a test's library left on the process goes (a leftover exit handler would throw in this worker).
  for (const event of EVENTS) {
    for (const listener of host.listeners(event)) {
      if (!baseline.get(event)?.includes(listener)) host.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
});

const added = (): Record<string, number> =>
  Object.fromEntries(EVENTS.map((event) => [event, host.listenerCount(event) - (baseline.get(event)?.length ?? 0)]));

/** Module loading as on a Windows PC: bleno's index is its hci binding on the libusb driver; noble is not asked for. */
function windowsLoader(ids: string[]): (id: string) => unknown {
  return (id) => {
    ids.push(id);
    if (id === '@stoprocent/bleno') {
      const withBindings = requireCjs('@stoprocent/bleno/lib/resolve-bindings') as (kind: string, options: object) => Bleno;
      return withBindings('hci', { hciDriver: 'usb' });
    }
    return requireCjs(id) as unknown;
  };
}

describe('Windows', () => {
  it('without a USB dongle bleno is never loaded: the peripheral role says why, nothing is left on the process', () => {
    const ids: string[] = [];
    loaded = loadPlatformBle({ central: false, peripheral: true, platform: 'win32', load: windowsLoader(ids) });
    expect(ids).toEqual([]);
    expect(loaded.problems).toEqual([`peripheral: ${WINDOWS_PERIPHERAL_UNAVAILABLE}`]);
    expect(loaded.problems.join(' ')).not.toMatch(/USB Bluetooth 4\.0|libusb/);
    expect(loaded.peripheral?.availability()).toEqual({
      usable: false,
      reason: 'unsupported_platform',
      detail: WINDOWS_PERIPHERAL_UNAVAILABLE,
    });
    expect(added()).toEqual({ exit: 0, SIGINT: 0 });
  });

  it('advertising on that role is refused with the reason (the backend hears it in ble_connected)', async () => {
    loaded = loadPlatformBle({ central: false, peripheral: true, platform: 'win32', load: windowsLoader([]) });
    const profile = { serviceUuid: '0000fff0-0000-1000-8000-00805f9b34fb', characteristics: {} } as never;
    await expect(loaded.peripheral?.advertise(profile, () => undefined, new AbortController().signal)).rejects.toMatchObject({
      name: 'BleSetupError',
      reason: `unsupported_platform: ${WINDOWS_PERIPHERAL_UNAVAILABLE}`,
    });
  });
});

describe('a USB dongle for bleno (ble.usbDongle)', () => {
  it('one that is not plugged in: the role reads no_adapter naming it, and the exit and SIGINT handlers bleno’s init added are gone', () => {
    loaded = loadPlatformBle({ central: false, peripheral: true, platform: 'win32', usbDongle: { vid: 0xfffe, pid: 0xfffd } });
    expect(loaded.problems).toEqual(['peripheral (bleno on the USB dongle fffe:fffd): No compatible USB Bluetooth 4.0 device found!']);
    expect(loaded.peripheral?.availability()).toMatchObject({ usable: false, reason: 'no_adapter' });
    expect(loaded.peripheral?.availability().detail).toMatch(/USB Bluetooth dongle fffe:fffd \(ble\.usbDongle\)/);
    expect(added()).toEqual({ exit: 0, SIGINT: 0 });
  });

  it('a build without the USB driver (the usb module left out of the package) says so in one line', () => {
    const missing = Object.assign(
      new Error("Cannot find module 'usb'\nRequire stack:\n- /app/node_modules/@stoprocent/bluetooth-hci-socket/lib/usb.js"),
      { code: 'MODULE_NOT_FOUND' },
    );
    const load = (id: string): unknown => {
      if (id === '@stoprocent/bleno/lib/resolve-bindings') throw missing;
      return requireCjs(id) as unknown;
    };
    loaded = loadPlatformBle({ central: false, peripheral: true, platform: 'win32', usbDongle: { vid: 0x0a12, pid: 0x0001 }, load });
    expect(loaded.problems).toEqual([
      'peripheral (bleno on the USB dongle 0a12:0001): this build does not include the USB Bluetooth driver (the usb module)',
    ]);
    expect(loaded.peripheral?.availability()).toMatchObject({ usable: false, reason: 'no_adapter' });
  });

  it('a process that tried it quits cleanly (bleno’s exit handler no longer writes through a device it never found)', () => {
    const script = [
      "import { loadPlatformBle } from './src/devices/ble/platform-stack.ts';",
      "const ble = loadPlatformBle({ central: false, peripheral: true, platform: 'win32', usbDongle: { vid: 0xfffe, pid: 0xfffd } });",
      'console.log(JSON.stringify(ble.problems));',
    ].join('\n');
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).not.toMatch(/TypeError|controlTransfer/);
    expect(run.stdout).toContain('No compatible USB Bluetooth 4.0 device found!');
    expect(run.status).toBe(0);
  });
});
