/**
 * The QA noble and bleno bindings are as unforgiving as the native ones (src/qa/devices/binding-lifecycle.ts):
 * after `stop()` every call throws what lib/mac/src/noble_mac.mm and bleno_mac.mm throw, in process and over
 * the radio link, and a new start makes a working binding again (the native `Start`/`Init`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BlenoRadioBindings } from '../../../src/qa/devices/bleno-radio-bindings.js';
import { RadioNobleBindings } from '../../../src/qa/devices/noble-radio-bindings.js';
import { RemoteBlenoBindings } from '../../../src/qa/devices/radio-link/remote-bleno-bindings.js';
import { RemoteNobleBindings } from '../../../src/qa/devices/radio-link/remote-noble-bindings.js';
import { RadioLinkServer } from '../../../src/qa/devices/radio-link/server.js';
import { VirtualRadio } from '../../../src/qa/sim/radio/virtual-radio.js';

const NOBLE_CALLS: readonly [method: string, native: string, call: (b: RadioNobleBindings | RemoteNobleBindings) => void][] = [
  ['startScanning', 'Scan', (b) => b.startScanning([], false)],
  ['stopScanning', 'StopScan', (b) => b.stopScanning()],
  ['connect', 'Connect', (b) => b.connect('aabbccddeeff')],
  ['disconnect', 'Disconnect', (b) => b.disconnect('aabbccddeeff')],
  ['discoverServices', 'DiscoverServices', (b) => b.discoverServices('aabbccddeeff', [])],
  ['write', 'Write', (b) => b.write('aabbccddeeff', 's', 'c', Uint8Array.of(1), true)],
  ['notify', 'Notify', (b) => b.notify('aabbccddeeff', 's', 'c', true)],
  ['stop', 'Stop', (b) => b.stop()],
];

let radio: VirtualRadio | undefined;
let server: RadioLinkServer | undefined;
const remotes: { close(): Promise<void> }[] = [];

afterEach(async () => {
  for (const r of remotes.splice(0)) await r.close();
  await server?.stop();
  server = undefined;
  radio?.shutdown();
  radio = undefined;
});

describe('noble bindings after stop()', () => {
  it('in process: every call throws "<Fn>: BLEManager has already been cleaned up"; addressToId still answers; start makes a new manager', () => {
    radio = new VirtualRadio();
    const bindings = new RadioNobleBindings(radio.addDevice({ name: 'kiosk' }));
    expect(() => bindings.startScanning([], false)).toThrow('Scan: BLEManager has already been cleaned up');
    bindings.start();
    bindings.stopScanning();
    bindings.stop();
    for (const [method, native, call] of NOBLE_CALLS)
      expect(() => call(bindings), method).toThrow(new TypeError(`${native}: BLEManager has already been cleaned up`));
    expect(bindings.addressToId('AA:BB:CC:DD:EE:FF')).toBe('aabbccddeeff');
    bindings.start();
    expect(() => bindings.stopScanning()).not.toThrow();
    bindings.stop();
  });

  it('over the radio link: the same, thrown here before anything is sent', async () => {
    radio = new VirtualRadio();
    radio.addDevice({ name: 'kiosk' });
    server = await RadioLinkServer.start({ radio });
    const bindings = await RemoteNobleBindings.connect({ port: server.port, name: 'kiosk-noble' });
    remotes.push(bindings);
    bindings.start();
    bindings.stop();
    for (const [method, native, call] of NOBLE_CALLS)
      expect(() => call(bindings), method).toThrow(`${native}: BLEManager has already been cleaned up`);
  });
});

describe('bleno bindings after stop()', () => {
  it('in process: every call throws "BLEManager has already been cleaned up" until init() again', () => {
    radio = new VirtualRadio();
    const bindings = new BlenoRadioBindings(radio.addDevice({ name: 'kiosk' }));
    bindings.init();
    bindings.stop();
    expect(() => bindings.startAdvertising('kiosk', ['fff0'])).toThrow('BLEManager has already been cleaned up');
    expect(() => bindings.setServices([])).toThrow('BLEManager has already been cleaned up');
    expect(() => bindings.disconnect()).toThrow('BLEManager has already been cleaned up');
    expect(() => bindings.stop()).toThrow('BLEManager has already been cleaned up');
    bindings.init();
    expect(() => bindings.stopAdvertising()).not.toThrow();
    bindings.stop();
  });

  it('over the radio link: the same', async () => {
    radio = new VirtualRadio();
    radio.addDevice({ name: 'kiosk' });
    server = await RadioLinkServer.start({ radio });
    const bindings = await RemoteBlenoBindings.connect({ port: server.port, name: 'kiosk' });
    remotes.push(bindings);
    bindings.init();
    bindings.stop();
    expect(() => bindings.startAdvertising('kiosk', ['fff0'])).toThrow('BLEManager has already been cleaned up');
    expect(() => bindings.updateRssi()).toThrow('BLEManager has already been cleaned up');
  });
});
