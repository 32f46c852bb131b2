/**
 * The kiosk over real Bluetooth LE stacks: noble's and bleno's own HCI, L2CAP, ATT/GATT, MTU exchange and
 * ACL flow control, on BlueZ's emulated controllers (tools/btvirt), the virtual phone's wallet on the
 * opposite library, the mock backend with real ISO 18013-5 crypto. Needs bluez-test-tools, socat,
 * libssl-dev and gcc (`.ci/run` installs them); without them these tests fail, never skip.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectVerified } from '../support/ble-fixtures.js';
import { expectByteExact, startHciRadio, startHciStack, type HciRadio, type HciStack } from '../support/hci-stack.js';

let radio: HciRadio;
let stack: HciStack | undefined;

beforeAll(async () => {
  radio = await startHciRadio();
}, 30_000);

afterAll(async () => {
  await radio.radio.stop();
});

afterEach(async (context) => {
  if (process.env.HCI_TEST_DEBUG && context.task.result?.state === 'fail' && stack) {
    for (const r of stack.logs.records) process.stderr.write(`${JSON.stringify(r)}\n`);
  }
  await stack?.stop();
  stack = undefined;
});

describe('verifications over HCI (btvirt)', () => {
  it('QR → kiosk central (noble) with a bleno phone in peripheral server mode, byte-exact', async () => {
    stack = await startHciStack(radio, { profile: 'android', ble: { peripheral: false }, config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.showQr();
    const report = await stack.nextReport(30_000);
    expectVerified(report);
    expect(stack.views.some((v) => v.role === 'central')).toBe(true);
    // noble asked for 517; bleno's GATT server caps the exchange at 256.
    expect(stack.logs.records.some((r) => r.event === 'ble_connected' && r.mtu === 256)).toBe(true);
    expectByteExact(stack);
  });

  it('QR → kiosk peripheral (bleno) with a noble phone in central client mode, byte-exact', async () => {
    stack = await startHciStack(radio, { profile: 'iphone', config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.showQr();
    const report = await stack.nextReport(30_000);
    expectVerified(report);
    expect(stack.views.some((v) => v.role === 'peripheral')).toBe(true);
    expectByteExact(stack);
  });
});
