/**
 * The noble BleCentral adapter on Windows: noble's JS layer on bindings that behave as noble's win binding's
 * sources show (test/support/fake-noble-win.ts): `connect` without a link, the link made by service discovery,
 * a per-report scan filter with scan responses reported non-connectable, refused CCCD writes reported as
 * success. The phone is the scripted GATT server of the virtual radio. Each case that names another binding
 * checks that its behaviour is unchanged.
 */
import { afterEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { Noble } from '@stoprocent/noble';
import { NobleCentral, type NobleCentralOptions } from '../../../../src/devices/ble/noble-central.js';
import type { NobleBindingKind } from '../../../../src/devices/ble/noble-support.js';
import { RadioNobleBindings, createVirtualNoble } from '../../../../src/qa/devices/noble-radio-bindings.js';
import { BleSetupError, type GattProfile } from '../../../../src/devices/ports.js';
import { AttError, VirtualRadio, type RadioDevice } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { WinNobleBindings, type WinAdvertising } from '../../../support/fake-noble-win.js';
import { Recorder, serverProfile } from '../../../support/ble-fixtures.js';
import { PhoneServer, SERVER_MODE, SERVER_MODE_TABLE, stack, until } from '../../../support/radio-phone.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000EE02';
const profile = (): GattProfile => serverProfile(SERVICE);
const signal = (): AbortSignal => new AbortController().signal;
/** ATT Insufficient Authentication: what a phone answers a CCCD write it will not take before pairing. */
const INSUFFICIENT_AUTHENTICATION = 0x05;

interface Setup {
  readonly radio: VirtualRadio;
  readonly phone: PhoneServer;
  readonly noble: Noble;
  readonly bindings: RadioNobleBindings;
  readonly central: NobleCentral;
}

let current: Setup | undefined;
let warn: MockInstance<typeof console.warn> | undefined;

afterEach(() => {
  if (current) {
    current.central.dispose();
    current.noble.stop();
    current.radio.shutdown();
  }
  current = undefined;
  expect(warn?.mock.calls ?? []).toEqual([]);
  warn?.mockRestore();
});

interface SetupOptions {
  readonly central?: NobleCentralOptions;
  /** How the phone advertises its UUID (win only). */
  readonly phoneAdvertising?: WinAdvertising;
  /** Other advertisers of the same service, with how they advertise (win only). */
  readonly others?: readonly WinAdvertising[];
  /** The bindings under noble (default: the win fake). */
  readonly bindings?: (kiosk: RadioDevice, advertising: ReadonlyMap<string, WinAdvertising>) => RadioNobleBindings;
  readonly platform?: NobleBindingKind;
  /** The phone refuses CCCD writes to these characteristics. */
  readonly refuseSubscriptions?: readonly string[];
}

async function setup(options: SetupOptions = {}): Promise<Setup & { readonly others: PhoneServer[] }> {
  warn = vi.spyOn(console, 'warn');
  const radio = new VirtualRadio();
  const phone = new PhoneServer(radio, { serviceUuid: SERVICE.toLowerCase(), mtu: 185 });
  const others = (options.others ?? []).map((_, i) => new PhoneServer(radio, { serviceUuid: SERVICE.toLowerCase(), name: `other-${i}` }));
  const advertising = new Map<string, WinAdvertising>([[phone.device.id, options.phoneAdvertising ?? 'adv']]);
  (options.others ?? []).forEach((kind, i) => advertising.set(others[i]?.device.id ?? '', kind));
  const kiosk = radio.addDevice({ name: 'kiosk' });
  const bindings = options.bindings?.(kiosk, advertising) ?? new WinNobleBindings(kiosk, { advertising });
  const noble = createVirtualNoble(kiosk, bindings);
  const central = new NobleCentral(noble, {
    platform: options.platform ?? 'win',
    scanTimeoutMs: 1_000,
    retryDelayMs: 5,
    ...options.central,
  });
  current = { radio, phone, noble, bindings, central };
  await until(() => central.availability().usable, 1_000, 'noble poweredOn');
  for (const other of others) await other.start();
  await phone.start();
  const refused = (options.refuseSubscriptions ?? []).map(stack);
  if (refused.length > 0) {
    // The same table, with a server that refuses the CCCD write of the listed characteristics.
    phone.device.peripheral.setServices([{ uuid: phone.serviceUuid, characteristics: SERVER_MODE_TABLE }], {
      onConnect: () => phone.events.push('connect'),
      onSubscribe: (request) => {
        if (refused.includes(stack(request.characteristicUuid))) throw new AttError(INSUFFICIENT_AUTHENTICATION);
        phone.events.push(`subscribe:${request.characteristicUuid}`);
      },
    });
  }
  return { ...current, others };
}

/** Radio bindings whose service discovery fails as Windows' does for a phone out of reach, once. */
class UnreachableOnceBindings extends RadioNobleBindings {
  failures = 1;
  connects = 0;
  override connect(id: string, parameters?: { readonly mtu?: number }): void {
    this.connects++;
    super.connect(id, parameters);
  }
  override discoverServices(id: string, uuids: readonly string[] | undefined): void {
    if (this.failures > 0) {
      this.failures--;
      setImmediate(() => this.emit('servicesDiscover', id, [], new Error('Device is unreachable while discovering services')));
      return;
    }
    super.discoverServices(id, uuids);
  }
}

const win = (bindings: RadioNobleBindings): WinNobleBindings => {
  if (!(bindings instanceof WinNobleBindings)) throw new Error('not the win bindings');
  return bindings;
};
const count = (bindings: RadioNobleBindings, request: string): number => win(bindings).requests.filter((r) => r === request).length;

describe('Windows central: the link is made by service discovery (issue 29, defect 2)', () => {
  it('a phone out of reach at the first try ("unreachable while discovering services") is tried again and connected', async () => {
    const s = await setup();
    s.phone.device.setFaults({ refuseConnections: 1 });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    expect(count(s.bindings, 'connect')).toBe(2);
    await until(() => s.phone.isSubscribed(SERVER_MODE.s2c));
    await link.close();
  });

  it('out of reach on every attempt: connect_failed after connectAttempts, naming the unreachable phone', async () => {
    const s = await setup({ central: { connectAttempts: 3 } });
    s.phone.device.setFaults({ refuseConnections: Number.POSITIVE_INFINITY });
    const failure = s.central.connect(profile(), new Recorder(), signal());
    await expect(failure).rejects.toBeInstanceOf(BleSetupError);
    await expect(failure).rejects.toMatchObject({
      reason: expect.stringMatching(/^connect_failed: .* after 3 attempts: Device is unreachable while discovering services$/) as unknown,
    });
    expect(count(s.bindings, 'connect')).toBe(3);
    // Nothing left in noble's cache (each failed attempt forgets the phone).
    expect((s.noble as unknown as { _peripherals: Map<string, unknown> })._peripherals.size).toBe(0);
  });

  it("the retries end with the caller's signal: an abort during the pause rejects at once as an abort", async () => {
    const s = await setup({ central: { retryDelayMs: 60_000 } });
    s.phone.device.setFaults({ refuseConnections: Number.POSITIVE_INFINITY });
    const controller = new AbortController();
    const failure = s.central.connect(profile(), new Recorder(), controller.signal);
    failure.catch(() => undefined);
    await until(
      () =>
        count(s.bindings, 'discoverServices') === 1 &&
        (s.noble as unknown as { _peripherals: Map<string, unknown> })._peripherals.size === 0,
    );
    controller.abort();
    await expect(failure).rejects.toThrow(/aborted/);
    expect(count(s.bindings, 'connect')).toBe(1);
  });

  it('on another binding the same discovery failure stays a discovery failure (no retry there)', async () => {
    let bindings: UnreachableOnceBindings | undefined;
    const s = await setup({
      platform: 'hci',
      bindings: (kiosk) => (bindings = new UnreachableOnceBindings(kiosk)),
    });
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: 'discovery_failed: service discovery: Device is unreachable while discovering services',
    });
    expect(bindings?.connects).toBe(1);
  });
});

describe('Windows central: a wallet with its UUID only in the scan response (issue 29, defect 4)', () => {
  it('is found and connected', async () => {
    const s = await setup({ phoneAdvertising: 'scan_response' });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    await until(() => s.phone.isSubscribed(SERVER_MODE.s2c));
    await link.close();
  });

  it('a wallet with the UUID in its advertisement is still found', async () => {
    const s = await setup({ phoneAdvertising: 'adv' });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    await link.close();
  });

  it('a beacon that is never connectable is ignored, though its scan response carries the UUID', async () => {
    const s = await setup({ phoneAdvertising: 'beacon' });
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: expect.stringMatching(/^scan_timeout: /) as unknown,
    });
    expect(count(s.bindings, 'connect')).toBe(0);
  });

  it('next to such a beacon, the wallet is the one connected', async () => {
    const s = await setup({ phoneAdvertising: 'scan_response', others: ['beacon'] });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    await until(() => s.phone.isSubscribed(SERVER_MODE.s2c));
    expect(s.others[0]?.connection).toBeUndefined();
    await link.close();
  });
});

describe('Windows central: a refused subscription reported as success (issue 29, defect 5)', () => {
  it('the CCCD read back shows notifications off: setup fails with subscribe_refused', async () => {
    const s = await setup({ refuseSubscriptions: [SERVER_MODE.s2c] });
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: `subscribe_refused: the phone did not turn notifications on for s2c (${SERVER_MODE.s2c}); its CCCD reads 0x0000`,
    });
    // The binding did hide the refusal (OnNotify ignores GattCommunicationStatus).
    expect(win(s.bindings).hiddenRefusals).toEqual([`notify ${stack(SERVER_MODE.s2c)} true`]);
    await until(() => s.phone.connection === undefined, 2_000, 'the phone released');
  });

  it('accepted subscriptions pass: two GATT requests more per subscribed characteristic, on win only', async () => {
    const s = await setup();
    const link = await s.central.connect(profile(), new Recorder(), signal());
    expect(count(s.bindings, 'discoverDescriptors')).toBe(2);
    expect(count(s.bindings, 'readValue')).toBe(2);
    await link.close();
  });

  it('confirmSubscriptions: false turns the read-back off', async () => {
    const s = await setup({ central: { confirmSubscriptions: false } });
    const link = await s.central.connect(profile(), new Recorder(), signal());
    expect(count(s.bindings, 'discoverDescriptors')).toBe(0);
    expect(count(s.bindings, 'readValue')).toBe(0);
    await link.close();
  });

  it('other bindings read nothing back (their refused CCCD writes are errors already): subscribe_failed', async () => {
    const s = await setup({ platform: 'hci', bindings: (kiosk) => new RadioNobleBindings(kiosk), refuseSubscriptions: [SERVER_MODE.s2c] });
    await expect(s.central.connect(profile(), new Recorder(), signal())).rejects.toMatchObject({
      reason: expect.stringMatching(/^subscribe_failed: subscribe to s2c: /) as unknown,
    });
  });
});
