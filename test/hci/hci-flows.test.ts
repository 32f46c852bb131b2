/**
 * The kiosk over real Bluetooth LE stacks: noble's and bleno's own HCI, L2CAP, ATT/GATT, MTU exchange and
 * ACL flow control, on BlueZ's emulated controllers (tools/btvirt), the virtual phone's wallet on the
 * opposite library, the mock backend with real ISO 18013-5 crypto. Needs bluez-test-tools, socat,
 * libssl-dev and gcc (`.ci/run` installs them); without them these tests fail, never skip.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PcscNfcReader } from '../../src/devices/pcsc/pcsc-nfc-reader.js';
import { VpcdCard } from '../../src/qa/sim/vpcd/vpcd-card.js';
import { startPrivatePcscd, type PrivatePcscd } from '../../tools/pcscd/pcscd-daemon.js';
import { waitForEmptyReader } from '../support/availability-wait.js';
import { expectVerified } from '../support/ble-fixtures.js';
import { startSlowProxy, type SlowProxy } from '../support/slow-proxy.js';
import { expectByteExact, startHciRadio, startHciStack, type HciRadio, type HciStack, type HciStackOptions } from '../support/hci-stack.js';

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

describe('NFC (pcscd + vpcd) → BLE over HCI', () => {
  let pcscd: PrivatePcscd | undefined;
  afterAll(async () => {
    await pcscd?.stop();
  });

  /** A tap through the pcsclite adapter, on a private pcscd whose vpcd reader holds the phone's tag. */
  async function tapThroughPcscd(options: HciStackOptions, role: 'central' | 'peripheral', minApdus: number): Promise<void> {
    pcscd ??= await startPrivatePcscd({ readers: 2 });
    const slot = pcscd.readers[0];
    if (!slot) throw new Error('no vpcd reader');
    const reader = new PcscNfcReader({ serviceRetryMinMs: 50, serviceRetryMaxMs: 500, reader: slot.name });
    await waitForEmptyReader(reader, slot.name);
    const card = new VpcdCard({ host: slot.host, port: slot.port });
    try {
      stack = await startHciStack(radio, { ...options, config: { profile: 'identity' }, nfcReader: reader });
      await stack.ready();
      await card.insert(stack.rig.phone.tag());
      const report = await stack.nextReport(30_000);
      expectVerified(report);
      expect(report.apdus).toBeGreaterThanOrEqual(minApdus);
      expect(stack.views.some((v) => v.role === role)).toBe(true);
      expectByteExact(stack);
    } finally {
      await card.remove();
      await stack?.stop();
      stack = undefined;
      await reader.close();
    }
  }

  it('NFC static handover through the pcsclite adapter → kiosk central (noble) and a bleno phone, byte-exact', async () => {
    await tapThroughPcscd({ profile: 'android', ble: { peripheral: false } }, 'central', 6);
  });

  it('NFC negotiated handover through the pcsclite adapter → kiosk peripheral (bleno) and a noble phone, byte-exact', async () => {
    await tapThroughPcscd({ profile: 'iphone' }, 'peripheral', 10);
  });
});

describe('radio failures over HCI', () => {
  it('the phone goes out of range mid-transfer (its side drops the link after 2 chunks of its answer): ble_link_lost, ready again, nothing left connected (central)', async () => {
    stack = await startHciStack(radio, {
      profile: 'android',
      ble: { peripheral: false },
      behaviour: { bleDropAfterChunks: 2 },
      config: { profile: 'identity' },
    });
    await stack.ready();
    stack.rig.showQr();
    const report = await stack.nextReport(30_000);
    expect(report.result).toBe('ble_link_lost');
    await stack.ready();
    expect(stack.rig.phone.device.peripheral.connections).toEqual([]);
    expectByteExact(stack, { dropped: true });
  });

  it('the phone goes out of range mid-transfer (peripheral): ble_link_lost, then the next phone verifies on the same bleno', async () => {
    stack = await startHciStack(radio, { profile: 'iphone', behaviour: { bleDropAfterChunks: 2 }, config: { profile: 'identity' } });
    await stack.ready();
    stack.rig.showQr();
    expect((await stack.nextReport(30_000)).result).toBe('ble_link_lost');
    await stack.ready();
    stack.rig.phone.setBehaviour({});
    stack.rig.showQr();
    expectVerified(await stack.nextReport(30_000));
  });

  it('a phone that connects, reads the Ident and never subscribes: the idle bound ends it, the kiosk is ready again', async () => {
    stack = await startHciStack(radio, {
      profile: 'iphone',
      behaviour: { neverSubscribe: true },
      config: { profile: 'identity', timeouts: { bleIdleMs: 1_500 } },
    });
    await stack.ready();
    stack.rig.showQr();
    const report = await stack.nextReport(30_000);
    expect(report.result).toBe('timeout');
    await stack.ready();
    expect(stack.logs.records.some((r) => r.event === 'ble_connected' && r.role === 'peripheral')).toBe(true);
  });

  it("the phone notifies its answer while the kiosk's socket to the backend is slow (8 kB/s): every notification relayed in order, byte-exact, verified", async () => {
    let proxy: SlowProxy | undefined;
    try {
      stack = await startHciStack(radio, {
        profile: 'android',
        ble: { peripheral: false },
        config: { profile: 'identity' },
        via: async (url) => {
          proxy = await startSlowProxy(url, 8_000);
          return proxy.url;
        },
      });
      await stack.ready();
      stack.rig.showQr();
      expectVerified(await stack.nextReport(45_000));
      expectByteExact(stack);
    } finally {
      await stack?.stop();
      stack = undefined;
      await proxy?.stop();
    }
  }, 90_000);
});
