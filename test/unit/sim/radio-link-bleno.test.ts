/**
 * The radio link's bleno role (docs/radio-link.md) over real loopback TCP: the radio, a scripted GATT-client
 * phone and the RadioLinkServer play "process A"; BlenoPeripheral on RemoteBlenoBindings — bleno's own
 * GATT fed the ATT PDUs process A sends — plays "process B" (same test process, a real socket between).
 * One test runs process A (radio + virtual iphone) in a child process and the kiosk here.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BlenoPeripheral } from '../../../src/devices/ble/bleno-peripheral.js';
import type { GattProfile, PeripheralEvent } from '../../../src/devices/ports.js';
import { RemoteBlenoBindings, createRemoteBleno } from '../../../src/qa/devices/radio-link/remote-bleno-bindings.js';
import { RadioLinkServer } from '../../../src/qa/devices/radio-link/server.js';
import { VirtualRadio } from '../../../src/qa/sim/radio/virtual-radio.js';
import { clientProfile, expectVerifiedOutcome } from '../../support/ble-fixtures.js';
import { startE2e } from '../../support/e2e-stack.js';
import { acrossProcesses } from '../../support/radio-link-fixtures.js';
import { CLIENT_MODE as C, PhoneClient, hex, stack, until } from '../../support/radio-phone.js';

const SERVICE = 'C0FFEE00-1234-4321-ABCD-00000000BB02';

const profile = (): GattProfile => clientProfile(SERVICE);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function rig(): Promise<{
  radio: VirtualRadio;
  server: RadioLinkServer;
  phone: PhoneClient;
  bindings: RemoteBlenoBindings;
  port: BlenoPeripheral;
}> {
  const radio = new VirtualRadio();
  const phone = new PhoneClient(radio, 'phone');
  const server = await RadioLinkServer.start({ radio });
  cleanups.push(async () => {
    await server.stop();
    radio.shutdown();
  });
  const bindings = await RemoteBlenoBindings.connect({ port: server.port, name: 'kiosk-bleno' });
  const port = new BlenoPeripheral(createRemoteBleno(bindings), { teardownStepMs: 500 });
  cleanups.push(async () => {
    await port.close();
    await bindings.close();
  });
  await until(() => port.availability().usable, 2_000, 'bleno poweredOn over the link');
  return { radio, server, phone, bindings, port };
}

describe('radio link over loopback TCP (bleno)', () => {
  it('BlenoPeripheral over the link serves a GATT-client phone: long read, subscribe, 600 notifications and 200 writes in order, disconnect', async () => {
    const { radio, phone, bindings, port } = await rig();
    const log: string[] = [];
    const reads: number[] = [];
    const ident = Uint8Array.from({ length: 500 }, (_, i) => (i * 7) & 0xff);
    const onEvent = (event: PeripheralEvent): void => {
      if (event.kind === 'read') {
        reads.push(event.offset);
        event.respond(ident);
      } else if (event.kind === 'write') log.push(`write ${hex(event.data)}`);
      else if (event.kind === 'subscribe' || event.kind === 'unsubscribe') log.push(`${event.kind} ${event.characteristicUuid}`);
      else log.push(event.kind);
    };
    const session = await port.advertise(profile(), onEvent, new AbortController().signal);
    const kiosk = radio.findDevice(bindings.device.id);
    expect(kiosk?.peripheral.advertising).toEqual({ localName: 'mdl-kiosk', serviceUuids: [stack(SERVICE)] });

    const link = await phone.connect(SERVICE.toLowerCase());
    expect(link.mtu).toBe(247);
    // Long read: Read + Read Blobs on the radio, one reported read and one respond() in the kiosk.
    expect(hex(await phone.read(C.ident))).toBe(hex(ident));
    expect(reads).toEqual([0]);

    await phone.subscribe(C.state);
    await phone.subscribe(C.s2c);
    await until(() => log.filter((l) => l.startsWith('subscribe')).length === 2, 2_000, 'the subscriptions');

    const count = 600;
    const sent = Array.from({ length: count }, (_, i) => Buffer.from(`${i.toString().padStart(4, '0')}:${'y'.repeat(i % 200)}`));
    await Promise.all(sent.map((data) => session.notify(C.s2c, data)));
    await until(() => phone.notifications.all.length === count, 10_000, `${count} notifications`);
    expect(phone.notifications.all.map((n) => hex(n.data))).toEqual(sent.map(hex));

    const writes = Array.from({ length: 200 }, (_, i) => Buffer.from([i & 0xff, 0xc2]));
    await Promise.all(writes.map((data) => phone.write(C.c2s, data)));
    await until(() => log.filter((l) => l.startsWith('write')).length === writes.length, 5_000, 'the writes');
    expect(log.filter((l) => l.startsWith('write'))).toEqual(writes.map((w) => `write ${hex(w)}`));

    await phone.link.disconnect('done');
    await until(() => log.includes('disconnect'), 2_000, 'the disconnect');
    expect(log[0]).toBe('connect');
    // bleno's GATT drops the subscriptions when the ACL stream ends, before the disconnect.
    expect(log.at(-1)).toBe('disconnect');
    expect(new Set(log.slice(-3, -1))).toEqual(new Set([`unsubscribe ${C.state}`, `unsubscribe ${C.s2c}`]));
    expect(kiosk?.peripheral.connections).toEqual([]);
  });
});

describe('radio link across processes (bleno)', () => {
  const children = acrossProcesses();

  it('the kiosk (BlenoPeripheral over the link) verifies the virtual iphone living in a child process', { timeout: 60_000 }, async () => {
    const { host, ready } = await children.start('iphone');

    const bindings = await RemoteBlenoBindings.connect({ port: ready.port, name: 'kiosk-over-link' });
    const adapter = new BlenoPeripheral(createRemoteBleno(bindings));
    cleanups.push(async () => {
      await adapter.close();
      await bindings.close();
    });
    const e2e = children.track(
      await startE2e({
        profile: 'iphone',
        config: { profile: 'identity' },
        trusted: [new Uint8Array(Buffer.from(ready.iaca, 'base64'))],
        devices: (r) => ({ ...r.devices, blePeripheral: adapter }),
      }),
    );
    await e2e.ready();
    // The child's phone shows its QR; the kiosk's camera reads it.
    e2e.rig.qr.push(ready.qr);
    const report = await e2e.nextReport(30_000);
    expectVerifiedOutcome(report);
    expect(e2e.views.some((v) => v.role === 'peripheral')).toBe(true);
    await until(() => host.lines.some((l) => 'outcome' in l), 10_000, "the child phone's outcome");
    expect(host.lines.find((l) => 'outcome' in l)).toMatchObject({ outcome: 'shared' });
  });
});
