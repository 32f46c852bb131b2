/**
 * End to end through the real noble object model: the kiosk's BLE central is the noble adapter on
 * `@stoprocent/noble`'s JS layer, whose bindings drive the kiosk's own radio device; the virtual phone,
 * the mock backend and the ISO crypto are the real ones. Each flow ends `complete` with issuer and device
 * authentication `Valid`.
 */
import type { Noble } from '@stoprocent/noble';
import { afterEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { NobleCentral } from '../../src/devices/ble/noble-central.js';
import { createVirtualNoble } from '../../src/qa/devices/noble-radio-bindings.js';
import { expectVerified } from '../support/ble-fixtures.js';
import { startE2e, type E2eOptions, type E2eStack } from '../support/e2e-stack.js';

let stack: E2eStack | undefined;
let adapter: { central: NobleCentral; noble: Noble } | undefined;
let warn: MockInstance<typeof console.warn> | undefined;

afterEach(async () => {
  await stack?.stop();
  adapter?.central.dispose();
  adapter?.noble.stop();
  stack = undefined;
  adapter = undefined;
  // noble prints its 'warning' events with console.warn: a clean run has none.
  expect(warn?.mock.calls ?? []).toEqual([]);
  warn?.mockRestore();
});

/** The rig with its virtual central replaced by the noble adapter on the kiosk's radio device. */
async function startWithNoble(options: E2eOptions): Promise<E2eStack> {
  warn = vi.spyOn(console, 'warn');
  return startE2e({
    ...options,
    devices: (rig) => {
      // rig.central is the virtual central on the kiosk's radio device (virtual-rig.ts); noble takes its place.
      const noble = createVirtualNoble(rig.central.device);
      const central = new NobleCentral(noble, { platform: 'hci' });
      adapter = { central, noble };
      return { ...rig.devices, bleCentral: central };
    },
  });
}

describe('end to end with the noble central (kiosk + noble JS layer on the radio + mock backend + virtual phone)', () => {
  it('QR → kiosk central (android phone in peripheral server mode)', async () => {
    stack = await startWithNoble({ profile: 'android', ble: { peripheral: false }, config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.showQr();
    const report = await stack.nextReport(20_000);
    expectVerified(report);
    expect(stack.views.some((v) => v.role === 'central')).toBe(true);
    // noble asked for 517 and the android phone accepts 517: the ATT MTU reached the kiosk's log.
    expect(stack.logs.records.some((r) => r.event === 'ble_connected' && r.mtu === 517)).toBe(true);
  });

  it('NFC static handover → kiosk central (android)', async () => {
    stack = await startWithNoble({ profile: 'android', ble: { peripheral: false }, config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.tap();
    const report = await stack.nextReport(20_000);
    expectVerified(report);
    expect(report.apdus).toBeGreaterThanOrEqual(6);
    expect(stack.views.some((v) => v.role === 'central')).toBe(true);
  });

  it('two verifications in a row on one noble instance, nothing left connected', async () => {
    stack = await startWithNoble({ profile: 'android', ble: { peripheral: false }, config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.showQr();
    expectVerified(await stack.nextReport(20_000));
    await stack.ready();
    stack.rig.showQr();
    expectVerified(await stack.nextReport(20_000));
    expect(stack.rig.central.device.central.links).toEqual([]);
  });
});
