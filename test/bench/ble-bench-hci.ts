/**
 * The HCI half of `npm run bench:ble`: the kiosk's adapters on real noble/bleno stacks over BlueZ's emulated
 * controllers (tools/btvirt), so the figures include HCI, L2CAP, ATT, ACL fragmentation and the emulated
 * controller's flow control (one ACL packet in flight, ACL MTU 192).
 *
 *   notify    2,000 notifications of 240 B from a bleno phone, back to back, into `NobleCentral` on the
 *             kiosk's controller; the floor is the same stream into a bare noble on another controller of
 *             the same air, no adapter in between (ratio = adapter / floor). Each path takes one
 *             unmeasured stream, then STREAMS measured ones, and gives their median: the first 2,000 values
 *             through noble's HCI code in a process ran ~20 % slower while V8 compiled it, and the ratio
 *             still swings 0.83–1.15 between runs on a shared 2-core machine (docs/ble-limits.md);
 *   verify    whole QR → central verifications (kiosk + mock backend + the virtual phone on bleno) with a
 *             ≥ 20 kB response (a large portrait), from the scan to the outcome; median of the runs.
 */
import { performance } from 'node:perf_hooks';
import { NobleCentral } from '../../src/devices/ble/noble-central.js';
import type { BleCentralLink, GattProfile } from '../../src/devices/ports.js';
import { createHciRig, createHciStacks, HCI_CONTROLLER_NAMES, hciTtysIn, type HciStacks } from '../../src/qa/hci/hci-rig.js';
import { HciPhoneRadio } from '../../src/qa/hci/hci-phone-radio.js';
import { issueTestCredential } from '../../src/qa/sim/virtual-wallet/credential.js';
import { drawPortraitJpeg } from '../../src/qa/sim/virtual-wallet/portrait.js';
import { startEmulatedRadio } from '../../tools/btvirt/emulated-radio.js';
import { startE2eOn } from '../support/e2e-stack.js';
import { forkLauncher } from '../../src/devices/ble/radio-process/launcher.js';
import { RadioProcess } from '../../src/devices/ble/radio-process/radio-process.js';
import { SERVER_MODE } from '../support/radio-phone.js';
import { describeSummary, summarize } from './bench-tools.js';

const NOTIFICATIONS = 2_000;
/** Measured streams per path, after one unmeasured (the figure is their median). */
const STREAMS = 3;
const VALUE_BYTES = 240;
const VERIFICATIONS = 5;
const MIN_RESPONSE_BYTES = 20_000;

export interface HciFigures {
  readonly notifiedPerSecond: number;
  readonly floorPerSecond: number;
  readonly verificationMedianMs: number;
  /** The same verifications with the kiosk's noble in the production radio process (a forked child). */
  readonly processVerificationMedianMs: number;
  readonly responseBytes: number;
  readonly failures: readonly string[];
}

/** The kiosk's profile in mdoc peripheral server mode (the phone is the GATT server); ble-bench.ts uses it too. */
export function serverModeProfile(serviceUuid: string): GattProfile {
  return {
    serviceUuid,
    characteristics: {
      state: { uuid: SERVER_MODE.state, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
      c2s: { uuid: SERVER_MODE.c2s, operations: ['write_without_response'], permissions: ['writeable'] },
      s2c: { uuid: SERVER_MODE.s2c, operations: ['notify'], permissions: [] },
    },
  };
}

const value = (i: number): Uint8Array => {
  const out = new Uint8Array(VALUE_BYTES).fill(0xa5);
  new DataView(out.buffer).setUint32(0, i);
  return out;
};
const indexOf = (data: Uint8Array): number => new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(0);

/** The phone as a GATT server on bleno, serving `serviceUuid`; resolves once `isSubscribed` says so. */
async function phoneServer(phone: HciPhoneRadio, serviceUuid: string): Promise<{ handle: () => number }> {
  let handle = -1;
  let subscribed = false;
  phone.peripheral.setServices(
    [
      {
        uuid: serviceUuid,
        characteristics: [
          { uuid: SERVER_MODE.state, properties: ['notify', 'writeWithoutResponse'] },
          { uuid: SERVER_MODE.c2s, properties: ['writeWithoutResponse'] },
          { uuid: SERVER_MODE.s2c, properties: ['notify'] },
        ],
      },
    ],
    {
      onConnect: (c) => {
        handle = c.handle;
      },
      onSubscribe: (r) => {
        if (r.characteristicUuid === SERVER_MODE.s2c) subscribed = true;
      },
    },
  );
  await phone.peripheral.startAdvertising({ localName: 'phone', serviceUuids: [serviceUuid] });
  return {
    handle: () => {
      if (!subscribed) throw new Error('not subscribed yet');
      return handle;
    },
  };
}

/** One unmeasured stream (warm-up, see the header), then the median rate of STREAMS measured ones. */
async function warmStream(
  phone: HciPhoneRadio,
  handle: number,
  serviceUuid: string,
  sink: { expected: number; failures: string[]; done?: () => void },
): Promise<number> {
  const rates: number[] = [];
  for (let round = 0; round <= STREAMS; round++) {
    sink.expected = 0;
    const rate = await stream(phone, handle, serviceUuid, sink);
    if (round > 0) rates.push(rate);
  }
  return summarize(rates).median;
}

/** Sends NOTIFICATIONS values from the phone and resolves with the rate at which `arrived` saw them all, in order. */
async function stream(
  phone: HciPhoneRadio,
  handle: number,
  serviceUuid: string,
  sink: { expected: number; failures: string[]; done?: () => void },
): Promise<number> {
  const finished = new Promise<number>((resolve) => (sink.done = () => resolve(performance.now())));
  const start = performance.now();
  for (let i = 0; i < NOTIFICATIONS; i++) await phone.peripheral.notify(handle, serviceUuid, SERVER_MODE.s2c, value(i));
  const end = await Promise.race([
    finished,
    new Promise<number>((_, reject) => setTimeout(() => reject(new Error('notifications stopped arriving')), 60_000)),
  ]);
  return NOTIFICATIONS / ((end - start) / 1000);
}

function receiver(sink: { expected: number; failures: string[]; done?: () => void }): (data: Uint8Array) => void {
  return (data) => {
    const index = indexOf(data);
    if (index !== sink.expected) sink.failures.push(`notification ${index} arrived where ${sink.expected} was expected`);
    sink.expected = index + 1;
    if (index === NOTIFICATIONS - 1) sink.done?.();
  };
}

async function until(test: () => boolean, what: string, ms = 10_000): Promise<void> {
  for (const t0 = performance.now(); !test(); ) {
    if (performance.now() - t0 > ms) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function notifyFigures(stacks: HciStacks, failures: string[]): Promise<{ adapter: number; floor: number }> {
  // The phone's bleno serves both streams; noble on the kiosk's controller through the adapter, then a bare
  // noble (the phone's central controller, no adapter) as the floor.
  const phone = new HciPhoneRadio({ bleno: stacks.phoneBleno, noble: stacks.phoneNoble });
  const central = new NobleCentral(stacks.kioskNoble, { platform: 'hci' });
  let link: BleCentralLink | undefined;
  try {
    await until(() => central.availability().usable, 'the kiosk noble powered on');
    const service = '11111111-2222-4333-8444-5555555555a1';
    const server = await phoneServer(phone, service);
    const viaAdapter = { expected: 0, failures: [] as string[] };
    link = await central.connect(
      serverModeProfile(service),
      { onNotification: (_u, d) => receiver(viaAdapter)(d), onDisconnect: () => undefined },
      new AbortController().signal,
    );
    await until(() => {
      try {
        server.handle();
        return true;
      } catch {
        return false;
      }
    }, 'the adapter subscribed'); // prettier-ignore
    const adapter = await warmStream(phone, server.handle(), service, viaAdapter);
    await link.close();
    link = undefined;
    await until(() => phone.peripheral.connections.length === 0, 'the adapter left');
    await phone.peripheral.stopAdvertising();

    const floorService = '11111111-2222-4333-8444-5555555555a2';
    const floorServer = await phoneServer(phone, floorService);
    const bare = new HciPhoneRadio({ noble: stacks.phoneNoble });
    const viaBare = { expected: 0, failures: [] as string[] };
    const report = await bare.central.scanFor(floorService);
    const bareLink = await bare.central.connect(report.peripheral.id);
    await bareLink.discover([floorService]);
    bareLink.onNotification((e) => receiver(viaBare)(e.data));
    await bareLink.subscribe(floorService, SERVER_MODE.s2c);
    await until(() => {
      try {
        floorServer.handle();
        return true;
      } catch {
        return false;
      }
    }, 'the bare noble subscribed'); // prettier-ignore
    const floor = await warmStream(phone, floorServer.handle(), floorService, viaBare);
    await bareLink.disconnect();
    await phone.peripheral.stopAdvertising();
    phone.peripheral.setServices([]);
    bare.dispose();
    failures.push(...viaAdapter.failures, ...viaBare.failures);
    return { adapter, floor };
  } finally {
    await link?.close();
    central.dispose();
    phone.dispose();
  }
}

async function verificationFigures(
  stacks: HciStacks,
  failures: string[],
  radioProcess?: RadioProcess,
): Promise<{ medianMs: number; responseBytes: number }> {
  // A portrait large enough that the phone's answer is at least 20 kB.
  const portrait = drawPortraitJpeg({ width: 360, height: 480, quality: 92 });
  const credential = await issueTestCredential({ holder: { portrait } });
  // Through the radio process, the kiosk's libraries here stay unstarted: the child owns the controller.
  const rig = await createHciRig(stacks, {
    profile: 'android',
    credential,
    ble: radioProcess ? { central: false, peripheral: false } : { peripheral: false },
  });
  const stack = await startE2eOn(rig, {
    config: { profile: 'identity' },
    captureLogs: false,
    ...(radioProcess ? { devices: () => ({ ...rig.devices, bleCentral: radioProcess.central }) } : {}),
  });
  const samples: number[] = [];
  let responseBytes = 0;
  try {
    for (let i = 0; i < VERIFICATIONS; i++) {
      await stack.ready();
      const before = rig.phone.device.trace.length;
      const started = performance.now();
      rig.showQr();
      const report = await stack.nextReport(60_000);
      const took = performance.now() - started;
      if (report.result !== 'complete' || report.outcome?.verdict !== 'verified') {
        failures.push(`HCI verification ${i + 1}: ${report.result} ${report.outcome?.verdict ?? ''}`);
        continue;
      }
      samples.push(took);
      responseBytes = rig.phone.device.trace
        .slice(before)
        .filter((v) => v.direction === 'sent')
        .reduce((n, v) => n + v.data.length, 0);
    }
  } finally {
    await stack.stop();
  }
  if (responseBytes < MIN_RESPONSE_BYTES)
    failures.push(`the phone's answer was ${responseBytes} bytes, below the ${MIN_RESPONSE_BYTES} the figure is for`);
  const s = summarize(samples);
  console.log(
    `HCI QR → central verification${radioProcess ? ', noble in the radio process,' : ''} ms (response ${responseBytes} B): ${describeSummary(s, 1)}`,
  );
  return { medianMs: s.median, responseBytes };
}

export async function hciFigures(): Promise<HciFigures> {
  const failures: string[] = [];
  const radio = await startEmulatedRadio({
    controllers: Object.values(HCI_CONTROLLER_NAMES),
    dir: `/tmp/mdl-kiosk-btvirt-bench-${process.pid}`,
  });
  try {
    const stacks = createHciStacks(hciTtysIn(radio.dir));
    const { adapter, floor } = await notifyFigures(stacks, failures);
    console.log(
      `\nHCI notifications (${NOTIFICATIONS} × ${VALUE_BYTES} B, median of ${STREAMS} streams per path after one unmeasured): through NobleCentral ${adapter.toFixed(0)}/s, bare noble ${floor.toFixed(0)}/s (ratio ${(adapter / floor).toFixed(2)})`,
    );
    const verify = await verificationFigures(stacks, failures);
    stacks.kioskNoble.stop(); // its UART closes: the radio process opens it next
    const silent = { info: () => undefined, warn: () => undefined };
    const radioProcess = new RadioProcess({
      launcher: forkLauncher({ env: { BLUETOOTH_HCI_SOCKET_UART_PORT: hciTtysIn(radio.dir).kioskCentral } }),
      init: { central: true, peripheral: false },
      log: silent,
    });
    let viaProcess = Number.NaN;
    try {
      const problems = await radioProcess.started();
      if (problems.length > 0) throw new Error(`radio process: ${problems.join('; ')}`);
      await until(() => radioProcess.central?.availability().usable === true, 'the radio process powered on', 20_000);
      viaProcess = (await verificationFigures(stacks, failures, radioProcess)).medianMs;
    } finally {
      await radioProcess.close();
    }
    stacks.phoneNoble.stop();
    return {
      notifiedPerSecond: adapter,
      floorPerSecond: floor,
      verificationMedianMs: verify.medianMs,
      processVerificationMedianMs: viaProcess,
      responseBytes: verify.responseBytes,
      failures,
    };
  } catch (e) {
    failures.push(`HCI: ${e instanceof Error ? e.message : String(e)}`);
    return {
      notifiedPerSecond: Number.NaN,
      floorPerSecond: Number.NaN,
      verificationMedianMs: Number.NaN,
      processVerificationMedianMs: Number.NaN,
      responseBytes: 0,
      failures,
    };
  } finally {
    await radio.stop();
  }
}
