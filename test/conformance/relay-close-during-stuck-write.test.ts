/**
 * Relay conformance, the backend closing the session socket while a `ble_write` is stuck in the Bluetooth
 * stack (issue 27 item 6). A close is terminal in every phase (docs/protocol.md §10 "a dropped socket
 * mid-verification"): the attempt ends at once as `dropped` — not when the write's own timeout
 * (`bleWriteMs`) passes — the stuck write is abandoned (its signal aborted), and the result is looked for
 * with `GET /sessions/{id}`; when the stuck write was the 0x02 end byte the backend already has the phone's
 * answer, so the look is polled while the backend may still be writing the result.
 *
 * Both roles (central: a write to the phone; peripheral: a notification), and both ways a socket ends: a
 * close frame and an abrupt drop without one. The write timeout is 10 s and the idle watchdog longer, so
 * only the close can end the attempt within the second the tests allow.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionResult } from '../../src/common/protocol/messages.js';
import type { FakeConnection, FakeSession } from '../support/fake-backend.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/session-harness.js';
import {
  CENTRAL_CHARS,
  Latch,
  PERIPHERAL_CHARS,
  armed,
  b64,
  connectCentral,
  connectPeripheral,
  scanQr,
} from '../support/relay-fixtures.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const WRITE_TIMEOUT_MS = 10_000;
/** "At once": far below the write timeout, with room for a loaded CI machine. */
const AT_ONCE_MS = 1_000;
/** Waits long enough to see a kiosk that ends only at the write timeout fail on the timing, not on a wait. */
const PATIENCE_MS = WRITE_TIMEOUT_MS + 4_000;
const CONFIG = {
  timeouts: { bleWriteMs: WRITE_TIMEOUT_MS, bleIdleMs: 30_000, recoverResultMs: 5_000 },
};

const MDL_NS = 'org.iso.18013.5.1';
const RESULT = {
  status: 'success',
  response: { [MDL_NS]: { age_over_21: true } },
  errors: {},
  warnings: {},
  issuer_authentication: 'Valid',
  device_authentication: 'Valid',
} satisfies SessionResult;

type Role = 'central' | 'peripheral';
type Ending = 'close frame' | 'drop without a close frame';

/** The stack took the write and never finishes it; records the signal the kiosk gave it. */
interface StuckWrite {
  readonly entered: Latch<AbortSignal>;
  readonly hook: (uuid: string, data: Uint8Array, signal: AbortSignal | undefined) => Promise<void>;
}

function stuckWrite(): StuckWrite {
  const entered = new Latch<AbortSignal>();
  return {
    entered,
    hook: (_uuid, _data, signal) => {
      if (!signal) throw new Error('the kiosk gave the write no abort signal');
      entered.open(signal);
      return new Promise<void>(() => undefined); // ignores the signal too: the kiosk must not wait on the stack
    },
  };
}

interface StuckTransfer {
  readonly harness: Harness;
  readonly conn: FakeConnection;
  readonly stuck: StuckWrite;
  /** The state characteristic (the end byte) and the one data goes to the phone on, in this role. */
  readonly state: string;
  readonly data: string;
}

/** Armed, scanned, BLE connected in `role`, with every write or notification to the phone stuck. */
async function transferWithStuckWrites(role: Role): Promise<StuckTransfer> {
  const harness = await startHarness({ config: CONFIG });
  h = harness;
  const stuck = stuckWrite();
  if (role === 'central') harness.central.behaviour = { onWrite: stuck.hook };
  else harness.peripheral.behaviour = { onNotify: stuck.hook };
  const conn = await armed(harness);
  await scanQr(harness, conn);
  if (role === 'central') await connectCentral(harness, conn);
  else await connectPeripheral(harness, conn);
  // Central writes the phone's c2s; peripheral notifies on its own s2c.
  return role === 'central'
    ? { harness, conn, stuck, state: CENTRAL_CHARS.state, data: CENTRAL_CHARS.c2s }
    : { harness, conn, stuck, state: PERIPHERAL_CHARS.state, data: PERIPHERAL_CHARS.s2c };
}

/** The backend ends the socket the given way; returns when (performance.now()) it did. */
function endSocket(conn: FakeConnection, ending: Ending): number {
  const at = performance.now();
  if (ending === 'close frame') conn.close(1011, 'backend restarting');
  else conn.terminate();
  return at;
}

function storedSession(harness: Harness, conn: FakeConnection): FakeSession {
  const stored = harness.backend.sessions.get(conn.session.id);
  if (!stored) throw new Error('fake backend lost the session');
  return stored;
}

const resultGets = (harness: Harness, conn: FakeConnection) =>
  harness.backend.http.filter((r) => r.method === 'GET' && r.path === `/v1/sessions/${conn.session.id}`);

/** Neither the API key nor the session's client secret reached the logs. */
function expectNoSecretsLogged(harness: Harness, conn: FakeConnection): void {
  const text = harness.logs.text();
  expect(text).not.toContain(harness.backend.apiKey);
  expect(text).not.toContain(conn.session.secret);
}

describe.each([['central'], ['peripheral']] as const)('backend closes the socket while a ble_write is stuck (%s)', (role) => {
  describe.each([['close frame'], ['drop without a close frame']] as const)('%s', (ending) => {
    it(`a stuck data write: ended at once as dropped (not after the ${WRITE_TIMEOUT_MS} ms write timeout), the write abandoned, the result recovered with one GET /sessions/{id}`, async () => {
      const { harness, conn, stuck, data } = await transferWithStuckWrites(role);
      storedSession(harness, conn).result = RESULT; // the backend has the result already
      conn.stepRequest('ble_write', { char: data, data: b64([0x01, 0x02, 0x03]) });
      const signal = await stuck.entered.promise;
      expect(signal.aborted).toBe(false);

      const closedAt = endSocket(conn, ending);
      const report = await harness.nextReport(PATIENCE_MS);
      const endedAfter = performance.now() - closedAt;

      expect(signal.aborted, 'the stuck write is abandoned').toBe(true);
      expect(report.result).toBe('recovered');
      expect(report.outcome).toMatchObject({ verdict: 'verified', source: 'recovered' });
      expect(report.error).toBeNull();
      expect(endedAfter, 'the attempt ends at the close, not at the write timeout').toBeLessThan(AT_ONCE_MS);
      const gets = resultGets(harness, conn);
      expect(gets).toHaveLength(1);
      expect(gets[0]?.authorization).toBe(`Bearer ${harness.backend.apiKey}`);
      expect(harness.logs.records.find((r) => r.event === 'socket_dropped')).toMatchObject({ transferFinished: false });
      expect(harness.logs.events()).not.toContain('watchdog_timeout');
      await harness.view((v) => v.phase === 'result' && v.outcome?.source === 'recovered' && v.prompt === 'verified');
      expectNoSecretsLogged(harness, conn);
    });

    it('the stuck write was the 0x02 end byte: ended at once, the write abandoned, and GET /sessions/{id} is polled until the backend has written the result', async () => {
      const { harness, conn, stuck, state } = await transferWithStuckWrites(role);
      const stored = storedSession(harness, conn);
      stored.result = 404; // still verifying: the first look finds no result
      conn.stepRequest('ble_write', { char: state, data: b64([0x02]) });
      const signal = await stuck.entered.promise;

      const closedAt = endSocket(conn, ending);
      await until(() => resultGets(harness, conn).length >= 1, 'the first GET /sessions/{id}', PATIENCE_MS);
      const firstGet = resultGets(harness, conn)[0];
      expect(signal.aborted, 'the stuck end byte is abandoned').toBe(true);
      expect((firstGet?.at ?? Number.POSITIVE_INFINITY) - closedAt, 'the attempt ends at the close, not at the write timeout').toBeLessThan(
        AT_ONCE_MS,
      );
      stored.result = RESULT; // the backend finishes verifying after the kiosk's first look

      const report = await harness.nextReport();
      expect(report.result).toBe('recovered');
      expect(report.outcome).toMatchObject({ verdict: 'verified', source: 'recovered' });
      expect(resultGets(harness, conn).length).toBeGreaterThanOrEqual(2);
      expect(harness.logs.records.find((r) => r.event === 'socket_dropped')).toMatchObject({ transferFinished: true });
      expect(harness.logs.events()).not.toContain('watchdog_timeout');
      await harness.view((v) => v.phase === 'result' && v.outcome?.source === 'recovered');
      // The session is spent: the next customer gets a new one.
      const next = await harness.backend.nextConnection();
      await next.expect('engage');
      expect(next.session.id).not.toBe(conn.session.id);
      expectNoSecretsLogged(harness, conn);
    });

    it('the end byte queued behind a stuck data write: the backend has the answer all the same, so GET /sessions/{id} is polled', async () => {
      const { harness, conn, stuck, state, data } = await transferWithStuckWrites(role);
      const stored = storedSession(harness, conn);
      stored.result = 404;
      conn.stepRequest('ble_write', { char: data, data: b64([0x01]) });
      const signal = await stuck.entered.promise;
      conn.stepRequest('ble_write', { char: state, data: b64([0x02]) });
      // Nothing the kiosk sends shows the queued end byte; once it has left the backend's buffer for the
      // kernel, TCP delivers it ahead of the close or the drop.
      await until(() => conn.socket.bufferedAmount === 0, 'the end byte sent');

      endSocket(conn, ending);
      await until(() => resultGets(harness, conn).length >= 1, 'the first GET /sessions/{id}', PATIENCE_MS);
      expect(signal.aborted).toBe(true);
      stored.result = RESULT;
      const report = await harness.nextReport();
      expect(report.result).toBe('recovered');
      expect(harness.logs.records.find((r) => r.event === 'socket_dropped')).toMatchObject({ transferFinished: true });
    });
  });
});
