/**
 * Relay conformance under load: §4.4 `ble_write` "Execute in the order received" (each write finished
 * before the next), §4.3 `ble_notified` "One message per s2c notification … not buffered or combined",
 * §4.3 `ble_written` "forwarded immediately", and §4.5 "the client handles both concurrently".
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.js';
import {
  CENTRAL_CHARS,
  PERIPHERAL_CHARS,
  armed,
  arr,
  at,
  b64,
  connectCentral,
  connectPeripheral,
  endTransfer,
  receiveMany,
  scanQr,
  stackSpelling,
} from '../support/relay-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const N = 1_000;
/** Payload `i`: its index in two bytes and a length that varies, so a merge or a split would show. */
const payload = (i: number): number[] => [i >> 8, i & 0xff, ...Array.from({ length: i % 7 }, () => 0x5a)];

/** A slow, asynchronous stack operation that records overlap: each call must finish before the next starts. */
function serialProbe(): { run: () => Promise<void>; readonly maxConcurrent: number } {
  let active = 0;
  let maxConcurrent = 0;
  let calls = 0;
  return {
    run: async () => {
      active++;
      maxConcurrent = Math.max(maxConcurrent, active);
      calls++;
      // Alternate microtask, macrotask and timer delays so the kiosk really has to wait.
      if (calls % 3 === 0) await new Promise<void>((resolve) => setTimeout(resolve, 0));
      else if (calls % 3 === 1) await new Promise<void>((resolve) => setImmediate(resolve));
      else await Promise.resolve();
      active--;
    },
    get maxConcurrent() {
      return maxConcurrent;
    },
  };
}

// The kiosk may wait for queued writes after `complete` for completionFlushMs; make that long enough that
// the whole queue is flushed whatever the machine load, so the test checks order, not speed.
const LOAD_CONFIG = { timeouts: { completionFlushMs: 15_000, bleWriteMs: 5_000, bleIdleMs: 15_000 } };

describe('ordering under load', () => {
  it(`§4.4 ble_write (central): ${N} writes executed strictly in order, each finished before the next, then 0x02 and complete`, async () => {
    h = await startHarness({ config: LOAD_CONFIG });
    const probe = serialProbe();
    h.central.behaviour = { onWrite: () => probe.run() };
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    for (let i = 0; i < N; i++) conn.stepRequest('ble_write', { char: CENTRAL_CHARS.c2s, data: b64(payload(i)) });
    endTransfer(conn, CENTRAL_CHARS.state);
    const report = await h.nextReport(15_000);
    expect(report.result).toBe('complete');
    expect(link.writes).toHaveLength(N + 1);
    expect(link.writes.slice(0, N).map((w) => arr(w.data))).toEqual(Array.from({ length: N }, (_, i) => payload(i)));
    expect(arr(at(link.writes, N).data)).toEqual([0x02]);
    expect(probe.maxConcurrent).toBe(1);
    // No replies to ble_write.
    expect(conn.pending).toHaveLength(0);
  });

  it(`§4.3 ble_notified (central): ${N} notifications forwarded in order, one message each, never combined`, async () => {
    h = await startHarness({ config: LOAD_CONFIG });
    const conn = await armed(h);
    await scanQr(h, conn);
    const link = await connectCentral(h, conn);
    for (let i = 0; i < N; i++) link.notify(stackSpelling(CENTRAL_CHARS.s2c), Uint8Array.from(payload(i)));
    const messages = await receiveMany(conn, N);
    expect(messages).toEqual(
      Array.from({ length: N }, (_, i) => ({ type: 'step_result', op: 'ble_notified', char: CENTRAL_CHARS.s2c, data: b64(payload(i)) })),
    );
    endTransfer(conn, CENTRAL_CHARS.state);
    expect((await h.nextReport()).result).toBe('complete');
  });

  it(`§4.4 ble_write (peripheral): ${N} notifications to the phone strictly in order, each finished before the next`, async () => {
    h = await startHarness({ config: LOAD_CONFIG });
    const probe = serialProbe();
    h.peripheral.behaviour = { onNotify: () => probe.run() };
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    for (let i = 0; i < N; i++) conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(payload(i)) });
    endTransfer(conn, PERIPHERAL_CHARS.state);
    expect((await h.nextReport(15_000)).result).toBe('complete');
    expect(session.notifications.map((n) => arr(n.data))).toEqual([...Array.from({ length: N }, (_, i) => payload(i)), [0x02]]);
    expect(probe.maxConcurrent).toBe(1);
  });

  it(`§4.3 ble_written (peripheral): ${N} phone writes forwarded in order, one message each`, async () => {
    h = await startHarness({ config: LOAD_CONFIG });
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    for (let i = 0; i < N; i++) session.write(stackSpelling(PERIPHERAL_CHARS.c2s), Uint8Array.from(payload(i)));
    expect(await receiveMany(conn, N)).toEqual(
      Array.from({ length: N }, (_, i) => ({ type: 'step_result', op: 'ble_written', char: PERIPHERAL_CHARS.c2s, data: b64(payload(i)) })),
    );
  });

  it('§4.5 concurrency (peripheral): interleaved phone writes and slow backend notifications keep both orders, one message per phone write', async () => {
    h = await startHarness({ config: LOAD_CONFIG });
    const probe = serialProbe();
    h.peripheral.behaviour = { onNotify: () => probe.run() };
    const conn = await armed(h);
    await scanQr(h, conn);
    const session = await connectPeripheral(h, conn);
    const M = 300;
    for (let i = 0; i < M; i++) {
      conn.stepRequest('ble_write', { char: PERIPHERAL_CHARS.s2c, data: b64(payload(i)) });
      session.write(stackSpelling(PERIPHERAL_CHARS.c2s), Uint8Array.from(payload(i)));
    }
    expect(await receiveMany(conn, M)).toEqual(
      Array.from({ length: M }, (_, i) => ({ type: 'step_result', op: 'ble_written', char: PERIPHERAL_CHARS.c2s, data: b64(payload(i)) })),
    );
    endTransfer(conn, PERIPHERAL_CHARS.state);
    expect((await h.nextReport(15_000)).result).toBe('complete');
    expect(session.notifications.map((n) => arr(n.data))).toEqual([...Array.from({ length: M }, (_, i) => payload(i)), [0x02]]);
    expect(probe.maxConcurrent).toBe(1);
  });
});
