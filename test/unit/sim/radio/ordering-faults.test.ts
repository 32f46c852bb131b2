/** Virtual radio: order under load in both directions, and the fault hooks (drop after k, latency, refusals, MTU). */
import { afterEach, describe, expect, it } from 'vitest';
import type { DisconnectInfo, RadioLink } from '../../../../src/qa/sim/radio/virtual-radio.js';
import { until } from '../../../support/radio-phone.js';
import { CHR, SVC, bytes, connected, pair, type Pair } from './radio-fixtures.js';

let current: Pair | undefined;
afterEach(() => {
  current?.radio.shutdown();
  current = undefined;
});
const setup = async (...args: Parameters<typeof pair>): Promise<Pair> => (current = await pair(...args));

const seq = (i: number): Uint8Array => Uint8Array.of(i >> 8, i & 0xff);
const num = (data: Uint8Array): number => ((data[0] ?? 0) << 8) | (data[1] ?? 0);

/** A connected pair with the notify characteristic subscribed; returns the server-side handle. */
async function subscribed(p: Pair): Promise<{ link: RadioLink; handle: number }> {
  const link = await connected(p);
  await link.subscribe(SVC, CHR.notify);
  const handle = p.phone.peripheral.connections[0]?.handle ?? -1;
  return { link, handle };
}

describe('order under load', () => {
  it('1,000 notifications sent back to back arrive in order, one event each', async () => {
    const p = await setup();
    const { link, handle } = await subscribed(p);
    const got: number[] = [];
    link.onNotification((n) => got.push(num(n.data)));
    await Promise.all(Array.from({ length: 1000 }, (_, i) => p.phone.peripheral.notify(handle, SVC, CHR.notify, seq(i))));
    await until(() => got.length === 1000);
    expect(got).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it('1,000 write commands issued without waiting arrive in order; mixed with requests the call order holds', async () => {
    const got: string[] = [];
    const p = await setup({ onWrite: (r) => void got.push(`${r.withoutResponse ? 'c' : 'r'}${num(r.data)}`) });
    const link = await connected(p);
    const sends = Array.from({ length: 1000 }, (_, i) =>
      link.write(SVC, i % 100 === 99 ? CHR.rw : CHR.wwr, seq(i), { withoutResponse: i % 100 !== 99 }),
    );
    await Promise.all(sends);
    await until(() => got.length === 1000);
    expect(got).toEqual(Array.from({ length: 1000 }, (_, i) => `${i % 100 === 99 ? 'r' : 'c'}${i}`));
  });

  it('both directions at once under latency: each keeps its order', async () => {
    const got = { up: [] as number[], down: [] as number[] };
    const p = await setup({ onWrite: (r) => void got.up.push(num(r.data)) });
    p.phone.setFaults({ latencyMs: 2 });
    const { link, handle } = await subscribed(p);
    link.onNotification((n) => got.down.push(num(n.data)));
    const up = (async (): Promise<void> => {
      for (let i = 0; i < 200; i++) await link.write(SVC, CHR.wwr, seq(i), { withoutResponse: true });
    })();
    const down = Promise.all(Array.from({ length: 200 }, (_, i) => p.phone.peripheral.notify(handle, SVC, CHR.notify, seq(i))));
    await Promise.all([up, down]);
    await until(() => got.up.length === 200 && got.down.length === 200);
    expect(got.up).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(got.down).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });
});

describe('faults', () => {
  it('dropAfterPackets.toCentral: exactly k notifications arrive, then both sides see a link loss', async () => {
    const serverSide: DisconnectInfo[] = [];
    const p = await setup({ onDisconnect: (_c, i) => serverSide.push(i) });
    p.phone.setFaults({ dropAfterPackets: { toCentral: 5, reason: 'phone out of range' } });
    const { link, handle } = await subscribed(p);
    const got: number[] = [];
    const central: DisconnectInfo[] = [];
    link.onNotification((n) => got.push(num(n.data)));
    link.onDisconnect((i) => central.push(i));
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => p.phone.peripheral.notify(handle, SVC, CHR.notify, seq(i))),
    );
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true); // all went on the air…
    await until(() => central.length === 1 && serverSide.length === 1);
    expect(got).toEqual([0, 1, 2, 3, 4]); // …five arrived
    expect(central[0]).toEqual({ reason: 'phone out of range', hciCode: 0x08, by: 'radio' });
    expect(serverSide[0]).toEqual(central[0]);
    await expect(p.phone.peripheral.notify(handle, SVC, CHR.notify, seq(11))).rejects.toMatchObject({ code: 'not_connected' });
  });

  it('dropAfterPackets.toPeripheral counts writes; 0 drops the link right after it is set up', async () => {
    const writes: number[] = [];
    const p = await setup({ onWrite: (r) => void writes.push(num(r.data)) });
    p.kiosk.setFaults({ dropAfterPackets: { toPeripheral: 3 } });
    const link = await connected(p);
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => link.write(SVC, CHR.wwr, seq(i), { withoutResponse: true })),
    );
    await until(() => !link.connected);
    expect(writes).toEqual([0, 1, 2]);
    expect(link.disconnectInfo?.reason).toBe('connection timeout');
    expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThanOrEqual(3);

    p.kiosk.setFaults({ dropAfterPackets: { toCentral: 0 } });
    const again = await connected(p);
    await until(() => !again.connected);
  });

  it('latency delays every packet and connection attempt by the sum of both devices’ settings', async () => {
    const p = await setup({ onRead: () => Uint8Array.of(1) });
    p.phone.setFaults({ latencyMs: 15 });
    p.kiosk.setFaults({ latencyMs: 10 });
    let started = performance.now();
    const link = await connected(p);
    expect(performance.now() - started).toBeGreaterThanOrEqual(24);
    started = performance.now();
    await link.read(SVC, CHR.rw); // request + response
    expect(performance.now() - started).toBeGreaterThanOrEqual(48);
  });

  it('refuseConnections refuses the next n attempts, then connections are accepted again', async () => {
    const p = await setup();
    p.phone.setFaults({ refuseConnections: 2 });
    await expect(connected(p)).rejects.toMatchObject({ code: 'connection_refused' });
    await expect(connected(p)).rejects.toMatchObject({ code: 'connection_refused' });
    expect((await connected(p)).connected).toBe(true);
  });

  it('mtu forces the negotiated MTU (enforced); reportedMtu makes the link report a wrong one', async () => {
    const p = await setup({ onWrite: () => undefined });
    p.phone.setFaults({ mtu: 23, reportedMtu: 247 });
    const link = await connected(p);
    expect(link.mtu).toBe(247);
    expect(p.phone.peripheral.connections[0]?.mtu).toBe(247);
    await expect(link.write(SVC, CHR.wwr, bytes(21), { withoutResponse: true })).rejects.toMatchObject({ code: 'payload_too_large' });
    await link.write(SVC, CHR.wwr, bytes(20), { withoutResponse: true });
  });

  it('dropLinks: a radio loss ends every link of the device at once', async () => {
    const p = await setup();
    const link = await connected(p);
    const info = new Promise<DisconnectInfo>((resolve) => link.onDisconnect(resolve));
    p.phone.dropLinks('walked out of range');
    expect(await info).toEqual({ reason: 'walked out of range', hciCode: 0x08, by: 'radio' });
    expect(p.phone.peripheral.connections).toEqual([]);
  });
});
