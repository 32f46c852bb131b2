/**
 * End to end through bleno's real object model: the kiosk's peripheral port is the bleno adapter on a
 * bleno instance whose bindings sit on the kiosk's virtual radio device (bleno's own GATT server fed ATT
 * PDUs), talking to the virtual phone in mdoc central client mode. Each flow must end in `complete` with
 * issuer and device authentication `Valid`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BlenoPeripheral } from '../../src/devices/ble/bleno-peripheral.js';
import type { Bleno } from '../../src/devices/ble/bleno-types.js';
import { createVirtualBleno } from '../../src/qa/devices/bleno-radio-bindings.js';
import { expectVerified } from '../support/ble-fixtures.js';
import { startE2e, type E2eStack } from '../support/e2e-stack.js';

let stack: E2eStack | undefined;
let adapter: BlenoPeripheral | undefined;
afterEach(async () => {
  await stack?.stop();
  await adapter?.close();
  stack = undefined;
  adapter = undefined;
});

interface BlenoStack {
  readonly stack: E2eStack;
  readonly bleno: Bleno;
}

async function startWithBleno(): Promise<BlenoStack> {
  let bleno: Bleno | undefined;
  stack = await startE2e({
    profile: 'iphone',
    config: { profile: 'identity' },
    devices: (rig) => {
      // The rig's virtual peripheral port and the bleno bindings share the kiosk's radio device; only bleno is used.
      bleno = createVirtualBleno(rig.peripheral.device);
      adapter = new BlenoPeripheral(bleno);
      return { ...rig.devices, blePeripheral: adapter };
    },
  });
  if (!bleno) throw new Error('devices() was not called');
  return { stack, bleno };
}

describe('end to end through bleno (kiosk peripheral = BlenoPeripheral on the virtual radio)', () => {
  it('QR → kiosk peripheral (iphone: central client mode, Ident read)', async () => {
    const { stack: s, bleno } = await startWithBleno();
    await s.ready();
    s.rig.showQr();
    const report = await s.nextReport(20_000);
    expectVerified(report);
    expect(s.views.some((v) => v.role === 'peripheral')).toBe(true);
    // The phone's link went through bleno's GATT: its Exchange MTU set bleno.mtu.
    expect(bleno.mtu).toBeGreaterThan(23); // bleno starts at 20 until an Exchange MTU
  });

  it('NFC negotiated handover → kiosk peripheral (iphone)', async () => {
    const { stack: s, bleno } = await startWithBleno();
    await s.ready();
    s.rig.tap();
    const report = await s.nextReport(20_000);
    expectVerified(report);
    expect(report.apdus).toBeGreaterThanOrEqual(10);
    expect(s.views.some((v) => v.role === 'peripheral')).toBe(true);
    expect(bleno.mtu).toBeGreaterThan(23); // bleno starts at 20 until an Exchange MTU
  });

  it('two verifications in a row on the same bleno instance, each with its own service UUID', async () => {
    const { stack: s, bleno } = await startWithBleno();
    const advertised: string[] = [];
    s.rig.radio.onLog((entry) => {
      if (entry.event === 'advertising_start' && entry.device?.includes('kiosk') && entry.service) advertised.push(entry.service);
    });
    await s.ready();
    s.rig.showQr();
    expectVerified(await s.nextReport(20_000));
    await s.ready();
    s.rig.showQr();
    expectVerified(await s.nextReport(20_000));
    expect(new Set(advertised).size).toBeGreaterThanOrEqual(2);
    // Nothing of the sessions is left on bleno.
    for (const event of ['accept', 'disconnect', 'advertisingStart', 'advertisingStop', 'servicesSet'])
      expect(bleno.listenerCount(event)).toBe(0);
  });
});
