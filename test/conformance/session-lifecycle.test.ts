/**
 * Conformance of the session and connection layer against the scripted fake backend: engage, the
 * pre-warmed session, WebSocket authentication, renewal before expiry, handshake failures (404/409/401/403),
 * backend outages, `error` and dropped sockets with re-arming on the same session, result recovery with
 * `GET /sessions/{id}`, the verdict rules and a clean stop. Each test names the spec section it checks
 * (docs/protocol.md) or its §10 for kiosk policy the contract leaves open.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { KioskView } from '../../src/common/kiosk-view.js';
import type { Outcome, SessionResult } from '../../src/common/protocol/messages.js';
import { ConfigError } from '../../src/platform/config.js';
import { outcomeFromComplete, outcomeFromResult } from '../../src/kiosk/outcome.js';
import { NO_REQUEST } from '../../src/kiosk/request-answer.js';
import { resolveProfile } from '../../src/kiosk/profiles.js';
import { FakeBackend, type FakeConnection } from '../support/fake-backend.js';
import type { FakeCentralLink } from '../support/fake-devices.js';
import { startHarness, type Harness, type HarnessOptions } from '../support/harness.js';
import { CENTRAL_CHARS, connectCentral, endTransfer, freshQr } from '../support/relay-fixtures.js';
import { TcpGate, TestClock, startClockedHarness, until, viewAfter } from '../support/session-harness.js';

// ---------------------------------------------------------------- fixtures

const b64 = (bytes: number[]): string => Buffer.from(bytes).toString('base64');
const MDL_NS = 'org.iso.18013.5.1';
const STATE_UUID = '00000001-a123-48ce-896b-4c76973373e6';
const MODE_CENTRAL = {
  role: 'central',
  service_uuid: '6c1e2f3a-9b8d-4e5f-a1b2-c3d4e5f60718',
  characteristics: {
    state: { uuid: STATE_UUID, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
    c2s: { uuid: '00000002-a123-48ce-896b-4c76973373e6', operations: ['write_without_response'], permissions: ['writeable'] },
    s2c: { uuid: '00000003-a123-48ce-896b-4c76973373e6', operations: ['notify'], permissions: [] },
  },
};

function outcome(patch: Partial<Outcome> = {}): Outcome {
  return {
    response: { [MDL_NS]: { age_over_21: true } },
    doc_types: ['org.iso.18013.5.1.mDL'],
    issuer_authentication: 'Valid',
    device_authentication: 'Valid',
    errors: {},
    warnings: {},
    ...patch,
  };
}

/** The retry policy's random source drawing every backoff at its ceiling: the schedule can then be timed. */
const AT_CEILING = (): number => 0.999_999;

/** Fast backoffs so that a retry loop, if there were one, would show up quickly. */
const FAST_RETRY = { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 400, conflictBackoffMs: 20 };

/** Short lifetime consistent with the superRefine rules of config.ts. */
const SHORT_LIFETIME = {
  // Renewal is due 1.5 s after creation, retirement 4 s after: a wide margin for a loaded machine.
  session: { lifetimeMs: 6_000, renewBeforeExpiryMs: 4_500, minRemainingToStartMs: 2_000 },
  timeouts: { verificationMs: 2_000 },
};

// ---------------------------------------------------------------- lifecycle of the fixtures

let h: Harness | undefined;
let ownBackend: FakeBackend | undefined;
let gate: TcpGate | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
  await gate?.shut();
  gate = undefined;
  await ownBackend?.stop();
  ownBackend = undefined;
});

async function start(options: HarnessOptions = {}): Promise<Harness> {
  h = await startHarness(options);
  return h;
}

/** A backend prepared before the kiosk starts (forced statuses for the very first requests). */
async function backendWith(prepare: (backend: FakeBackend) => void): Promise<FakeBackend> {
  ownBackend = await FakeBackend.start();
  prepare(ownBackend);
  return ownBackend;
}

const posts = (backend: FakeBackend): number => backend.http.filter((r) => r.method === 'POST').length;
const gets = (backend: FakeBackend): number => backend.http.filter((r) => r.method === 'GET').length;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for the armed idle session: its connection, its engage and the ready view. */
async function armed(harness: Harness): Promise<FakeConnection> {
  const conn = await harness.backend.nextConnection();
  await conn.expect('engage');
  await harness.view((v) => v.phase === 'ready');
  return conn;
}

/** NFC tap → handover → BLE central → the final 0x02 on the state characteristic has been written. */
async function transferFinished(harness: Harness, conn: FakeConnection): Promise<FakeCentralLink> {
  harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
  await conn.expect('nfc_card_present');
  conn.stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) });
  await conn.expect('nfc_rapdu');
  conn.stepRequest('ble_exchange', { modes: [MODE_CENTRAL] });
  expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'central' });
  const link = await harness.central.nextLink();
  conn.stepRequest('ble_write', { char: STATE_UUID, data: b64([0x01]) });
  conn.stepRequest('ble_write', { char: STATE_UUID, data: b64([0x02]) });
  // The kiosk publishes step 4 once the end byte went out to the phone.
  await harness.view((v) => v.progress.step === 4);
  expect(link.writes.map((w) => Array.from(w.data))).toEqual([[0x01], [0x02]]);
  return link;
}

/** QR scan → BLE central → end byte → `complete` with the given outcome. */
async function qrVerification(harness: Harness, conn: FakeConnection, result: Outcome): Promise<void> {
  harness.qr.push('mdoc:owBjMS4wAYIB2BhYS6QBAiABIVggTEST');
  await conn.expect('qr_scanned');
  conn.stepRequest('ble_exchange', { modes: [MODE_CENTRAL] });
  await conn.expect('ble_connected');
  await harness.central.nextLink();
  conn.stepRequest('ble_write', { char: STATE_UUID, data: b64([0x02]) });
  conn.send({ type: 'complete', outcome: result });
}

// ================================================================ §3 "WebSocket open", §4.3 engage

describe('engage (spec §3 "WebSocket open", §4.3 engage)', () => {
  it('engage is the first message right after the socket opens, with the active profile namespaces (§4.3)', async () => {
    const harness = await start({ config: { profile: 'identity' } });
    const conn = await harness.backend.nextConnection();
    const first = await conn.receive();
    expect(first).toEqual({
      type: 'step_result',
      op: 'engage',
      status: 'ok',
      namespaces: resolveProfile(harness.config, 'identity').namespaces,
    });
    await harness.view((v) => v.phase === 'ready' && v.profile === 'identity');
    // Nothing else is sent while idle.
    await conn.expectSilence(150);
  });

  it('a custom profile from the configuration is what engage requests (§2.3)', async () => {
    const namespaces = { [MDL_NS]: ['age_over_18', 'expiry_date'], 'org.iso.18013.5.1.aamva': ['DHS_compliance'] };
    const harness = await start({ config: { profile: 'door', profiles: { door: { namespaces } } } });
    const conn = await harness.backend.nextConnection();
    expect((await conn.receive()).namespaces).toEqual(namespaces);
  });

  it('setProfile re-engages the idle session with the new namespaces, on the same session (§3, §5 rule 1)', async () => {
    const harness = await start();
    const conn1 = await armed(harness);
    const postsBefore = posts(harness.backend);

    harness.kiosk.setProfile('age_over_18');
    expect((await conn1.closed).code).toBe(1000);
    const conn2 = await harness.backend.nextConnection();
    const engage = await conn2.receive();
    expect(engage).toMatchObject({ op: 'engage', status: 'ok', namespaces: { [MDL_NS]: ['age_over_18', 'portrait'] } });
    expect(conn2.session.id).toBe(conn1.session.id);
    expect(posts(harness.backend)).toBe(postsBefore);
    await harness.view((v) => v.profile === 'age_over_18' && v.phase === 'ready');

    // The next tap runs on the re-engaged socket.
    harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    await conn2.expect('nfc_card_present');
  });

  it('setProfile during a verification: the view keeps the profile that verification asked with until the kiosk is idle', async () => {
    const harness = await start({ config: { timeouts: { resultDisplayMs: 300 } } });
    const conn = await armed(harness);
    harness.qr.push(freshQr());
    await conn.expect('qr_scanned');
    harness.kiosk.setProfile('identity');
    const link = await connectCentral(harness, conn);
    expect(harness.kiosk.currentView.profile).toBe('age_over_21');
    endTransfer(conn, CENTRAL_CHARS.state);
    const result = await harness.view((v) => v.phase === 'result');
    expect(result.profile).toBe('age_over_21');
    expect(link.writes.at(-1)?.data).toEqual(Uint8Array.from([0x02]));
    // Once the outcome has cleared, the new profile is shown and the next session asks for it.
    await harness.view((v) => v.phase === 'ready' && v.profile === 'identity');
  });

  it('setProfile closes the old socket before reconnecting: no second concurrent connection, no 409 (§8, §7.1)', async () => {
    const harness = await start();
    const conn1 = await armed(harness);
    harness.kiosk.setProfile('identity');
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    expect(conn2.session.id).toBe(conn1.session.id);
    const statuses = harness.backend.handshakes.filter((r) => r.sessionId === conn1.session.id).map((r) => r.status);
    expect(statuses).toEqual([101, 101]);
    expect(harness.logs.events()).not.toContain('session_conflict');
  });
});

// ================================================================ pre-warmed session

describe('pre-warmed session (docs/protocol.md §10 "Both flows", spec §8 "create it shortly before")', () => {
  it('while idle a session exists, its socket is open and engage has been sent', async () => {
    const harness = await start();
    const conn = await harness.backend.nextConnection();
    await harness.view((v) => v.phase === 'ready' && v.prompt === 'tap_or_scan');
    expect(harness.backend.sessions.size).toBe(1);
    expect(harness.backend.http.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/sessions']);
    expect(harness.backend.handshakes.map((r) => r.status)).toEqual([101]);
    expect(conn.isClosed).toBe(false);
    expect(await conn.receive()).toMatchObject({ type: 'step_result', op: 'engage', status: 'ok' });
    expect(conn.isClosed).toBe(false);
  });

  it('a tap reaches nfc_card_present with no HTTP request and no new socket between the tap and the message', async () => {
    const harness = await start();
    const conn = await armed(harness);
    const httpBefore = harness.backend.http.length;
    const handshakesBefore = harness.backend.handshakes.length;

    harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    const first = await conn.receive();

    expect(first).toEqual({ type: 'step_result', op: 'nfc_card_present', status: 'ok' });
    expect(harness.backend.http.length).toBe(httpBefore);
    expect(harness.backend.handshakes.length).toBe(handshakesBefore);
  });

  it('a QR scan reaches qr_scanned on the pre-warmed socket with no HTTP request in between', async () => {
    const harness = await start();
    const conn = await armed(harness);
    const httpBefore = harness.backend.http.length;
    harness.qr.push('mdoc:owBjMS4wAYIB2BhYS6QBAiABIVgg\r\n');
    const first = await conn.receive();
    expect(first).toEqual({ type: 'step_result', op: 'qr_scanned', status: 'ok', data: 'mdoc:owBjMS4wAYIB2BhYS6QBAiABIVgg' });
    expect(harness.backend.http.length).toBe(httpBefore);
  });
});

// ================================================================ §4.2, §5 authentication

describe('WebSocket authentication (spec §4.2, §5)', () => {
  it('by default the client secret is sent in the Authorization header and not in the URL (§5, docs/privacy.md)', async () => {
    const harness = await start();
    const conn = await armed(harness);
    const secret = conn.session.secret;
    expect(conn.auth).toBe('header');
    const [handshake] = harness.backend.handshakes;
    expect(handshake?.authorization).toBe(`Bearer ${secret}`);
    expect(handshake?.query).toBe('');
    expect(handshake?.path).toBe(`/v1/sessions/${conn.session.id}/mdoc-proximity/ws`);
    expect(handshake?.path).not.toContain(secret);
  });

  it("with backend.wsAuth='query' the secret is sent in the token query parameter (§4.2)", async () => {
    const harness = await start({ config: { backend: { wsAuth: 'query' } } });
    const conn = await armed(harness);
    expect(conn.auth).toBe('query');
    const [handshake] = harness.backend.handshakes;
    expect(new URLSearchParams(handshake?.query).get('token')).toBe(conn.session.secret);
    expect(handshake?.authorization).toBeUndefined();
  });

  it.each(['header', 'query'] as const)('logs never contain the client secret or the API key (wsAuth=%s)', async (wsAuth) => {
    const harness = await start({ config: { backend: { wsAuth }, session: FAST_RETRY } });
    // Idle error → re-arm, a verification that ends in error → re-arm, a 409, a dropped socket.
    const conn1 = await armed(harness);
    harness.backend.handshakeStatuses.push(409);
    conn1.send({ type: 'error', message: 'idle error' });
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    await conn2.expect('nfc_card_present');
    conn2.send({ type: 'error', message: 'NFC retries exhausted' });
    await harness.nextReport();
    const conn3 = await harness.backend.nextConnection();
    await conn3.expect('engage');
    conn3.terminate();
    const conn4 = await harness.backend.nextConnection();
    await conn4.expect('engage');

    const text = harness.logs.text();
    expect(harness.logs.events()).toEqual(
      expect.arrayContaining(['session_created', 'session_armed', 'session_conflict', 'backend_error']),
    );
    expect(text).not.toContain(harness.backend.apiKey);
    for (const session of harness.backend.sessions.values()) expect(text).not.toContain(session.secret);
    expect(text).not.toMatch(/token=/i);
    expect(text).not.toMatch(/Bearer/i);
  });

  it('an API key that is not a valid header value is refused at start, without echoing it', async () => {
    // e.g. a key pasted into the environment with a line break in the middle
    ownBackend = await FakeBackend.start({ apiKey: 'sk_live_part_one\nsk_live_part_two' });
    const failure = await start({ backend: ownBackend, config: { session: FAST_RETRY } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(ConfigError);
    const message = (failure as Error).message;
    expect(message).toMatch(/backend\.apiKey/);
    for (const part of ['sk_live_part_one', 'sk_live_part_two']) expect(message).not.toContain(part);
  });
});

// ================================================================ renewal

describe('renewal before expiry (spec §8 session lifetime, docs/protocol.md §10)', () => {
  it('the idle session is replaced before expiry: new POST, new socket engaged, old socket closed 1000', async () => {
    const harness = await start({ config: SHORT_LIFETIME });
    const conn1 = await armed(harness);
    const readyIndex = harness.views.length;

    const conn2 = await harness.backend.nextConnection(8_000);
    // The old session stays open until its replacement is connected.
    expect(conn1.isClosed).toBe(false);
    expect(conn2.session.id).not.toBe(conn1.session.id);
    await conn2.expect('engage');
    expect((await conn1.closed).code).toBe(1000);
    expect(posts(harness.backend)).toBeGreaterThanOrEqual(2);
    expect(harness.backend.handshakes.filter((r) => r.status === 101).map((r) => r.sessionId)).toEqual(
      expect.arrayContaining([conn1.session.id, conn2.session.id]),
    );
    // The kiosk stays ready throughout: renewal happens behind the ready screen.
    expect(harness.views.slice(readyIndex).every((v) => v.phase === 'ready')).toBe(true);

    // A tap now uses the replacement.
    harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    await conn2.expect('nfc_card_present');
  });

  it('the lifetime counts from the moment POST /sessions was sent: a session whose answer took most of its lifetime is renewed at once', async () => {
    const lifetimeMs = 600_000;
    const renewBeforeExpiryMs = 240_000;
    // The wall clock jumps while the first POST is in flight (after the request left, before the answer):
    // counted from the request, the session arrives with less than renewBeforeExpiryMs left (but more than
    // minRemainingToStartMs), so it is renewed straight away; counted from the answer it would look new.
    const inFlightMs = lifetimeMs - renewBeforeExpiryMs + 10_000;
    const clock = new TestClock();
    const backend = await backendWith((b) => {
      let advanced = false;
      const push = b.http.push.bind(b.http);
      b.http.push = (...records) => {
        // Recorded when the request has arrived and before it is answered.
        if (!advanced && records.some((r) => r.method === 'POST')) {
          advanced = true;
          clock.advance(inFlightMs);
        }
        return push(...records);
      };
    });
    const harness = await start({
      backend,
      now: clock.now,
      config: { session: { lifetimeMs, renewBeforeExpiryMs, minRemainingToStartMs: 180_000 } },
    });
    const conn1 = await armed(harness);
    // The replacement is created and engaged at once (no clock moves after the first POST), then the old one closes.
    const conn2 = await harness.backend.nextConnection();
    expect(conn2.session.id).not.toBe(conn1.session.id);
    await conn2.expect('engage');
    expect((await conn1.closed).code).toBe(1000);
    expect(posts(backend)).toBe(2);
    // What the kiosk computed for the first session (its log): the time in flight counted against it.
    const armedLog = harness.logs.records.find((r) => r.event === 'session_armed' && r.sessionId === conn1.session.id);
    expect(armedLog?.remainingMs).toBeLessThanOrEqual(lifetimeMs - inFlightMs);
    expect(armedLog?.remainingMs).toBeGreaterThan(lifetimeMs - inFlightMs - 60_000);
    // The replacement's lifetime was not eaten by a slow answer: it is kept, not renewed again.
    await sleep(300);
    expect(posts(backend)).toBe(2);
    expect(conn2.isClosed).toBe(false);
  });

  it('an idle session that cannot be renewed is retired before less than minRemainingToStartMs is left', async () => {
    const harness = await start({ config: { ...SHORT_LIFETIME, session: { ...SHORT_LIFETIME.session, ...FAST_RETRY } } });
    const conn1 = await armed(harness);
    // From now on the backend refuses to create sessions.
    harness.backend.createStatuses.push(...Array.from({ length: 1_000 }, () => 503));
    expect((await conn1.closed).code).toBe(1000);
    await harness.view((v) => v.phase === 'offline');
    expect(posts(harness.backend)).toBeGreaterThan(1);
    // The backend recovers: a fresh session is armed.
    harness.backend.createStatuses.length = 0;
    const conn2 = await harness.backend.nextConnection(8_000);
    expect(conn2.session.id).not.toBe(conn1.session.id);
    await conn2.expect('engage');
  });

  it('a verification never starts on a session with less than minRemainingToStartMs left', async () => {
    const clocked = await startClockedHarness();
    h = clocked;
    const conn1 = await armed(clocked);
    const postsBefore = posts(clocked.backend);
    const { lifetimeMs, minRemainingToStartMs } = clocked.config.session;
    // The idle session now has less than minRemainingToStartMs left (but is not expired on the backend).
    clocked.clock.advance(lifetimeMs - minRemainingToStartMs + 5_000);

    clocked.nfc.tap(() => Uint8Array.from([0x90, 0x00]));

    const conn2 = await clocked.backend.nextConnection();
    expect(conn2.session.id).not.toBe(conn1.session.id);
    await conn2.expect('engage');
    expect(await conn2.receive()).toMatchObject({ op: 'nfc_card_present' });
    expect(posts(clocked.backend)).toBe(postsBefore + 1);
    // The old socket was closed without ever carrying the tap.
    expect((await conn1.closed).code).toBe(1000);
    expect(conn1.pending).toEqual([]);
  });
});

// ================================================================ §7.1 handshake failures

describe('handshake failures (spec §7.1, §3 "10 minutes elapse", §8 one connection per session)', () => {
  it('404 on the handshake → a new session is created (§7.1)', async () => {
    const backend = await backendWith((b) => b.handshakeStatuses.push(404));
    const harness = await start({ backend });
    const conn = await armed(harness);
    expect(harness.backend.handshakes.map((r) => [r.sessionId, r.status])).toEqual([
      ['sess-1', 404],
      ['sess-2', 101],
    ]);
    expect(conn.session.id).toBe('sess-2');
    expect(posts(harness.backend)).toBe(2);
  });

  it('an expired session (404 when re-arming after the idle socket closed) is replaced by a new one (§3, §7.1)', async () => {
    const harness = await start({ config: { session: FAST_RETRY } });
    const conn1 = await armed(harness);
    const session = harness.backend.sessions.get(conn1.session.id);
    if (!session) throw new Error('fake backend lost the session');
    session.expired = true;
    conn1.close(1000, 'expired');
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    expect(conn2.session.id).not.toBe(conn1.session.id);
    const forOld = harness.backend.handshakes.filter((r) => r.sessionId === conn1.session.id).map((r) => r.status);
    expect(forOld).toEqual([101, 404]);
  });

  it('409 → backs off and retries the same session conflictRetries times, then uses a new session (§7.1, §8)', async () => {
    const backend = await backendWith((b) => b.handshakeStatuses.push(409, 409, 409));
    const harness = await start({ backend, config: { session: { ...FAST_RETRY, conflictRetries: 2 } } });
    const conn = await armed(harness);
    expect(harness.backend.handshakes.map((r) => [r.sessionId, r.status])).toEqual([
      ['sess-1', 409],
      ['sess-1', 409],
      ['sess-1', 409],
      ['sess-2', 101],
    ]);
    expect(conn.session.id).toBe('sess-2');
    expect(posts(harness.backend)).toBe(2);
    // Every 409 is a failure to the retry policy (counted in a row); the third one gives the session up.
    const conflicts = harness.logs.records.filter((r) => r.event === 'session_conflict').map((r) => r.consecutive);
    expect(conflicts).toEqual([1, 2, 3]);
    expect(harness.logs.events()).toContain('session_conflict_exhausted');
  });

  it('409 → the retries back off exponentially from conflictBackoffMs (timed between handshakes) (§7.1, §8)', async () => {
    const backend = await backendWith((b) => b.handshakeStatuses.push(409, 409, 409));
    const harness = await start({
      backend,
      random: AT_CEILING,
      config: { session: { ...FAST_RETRY, conflictBackoffMs: 150, offlineBackoffMaxMs: 5_000 } },
    });
    await armed(harness);
    const at = harness.backend.handshakes.map((r) => r.at);
    const gaps = at.slice(1).map((t, i) => t - (at[i] ?? t));
    expect(gaps).toHaveLength(3);
    // Lower bounds only (timers never fire early); 5 ms of slack for the clock's granularity.
    expect(gaps[0]).toBeGreaterThanOrEqual(150 - 5);
    expect(gaps[1]).toBeGreaterThanOrEqual(300 - 5);
    expect(gaps[2]).toBeGreaterThanOrEqual(600 - 5);
  });

  it('409 with Retry-After → the kiosk waits at least that long before the same session again (RFC 9110 §10.2.3)', async () => {
    const backend = await backendWith((b) => {
      b.handshakeStatuses.push(409);
      b.handshakeRetryAfter.push('1');
    });
    const harness = await start({ backend, config: { session: { ...FAST_RETRY, conflictBackoffMs: 20, offlineBackoffMaxMs: 5_000 } } });
    const conn = await armed(harness);
    const [first, second] = harness.backend.handshakes;
    expect(conn.session.id).toBe(first?.sessionId);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_000 - 5);
  });

  it('409 with an absurd Retry-After waits no longer than offlineBackoffMaxMs', async () => {
    const backend = await backendWith((b) => {
      b.handshakeStatuses.push(409);
      b.handshakeRetryAfter.push('86400');
    });
    const harness = await start({ backend, config: { session: { ...FAST_RETRY, conflictBackoffMs: 20, offlineBackoffMaxMs: 300 } } });
    const conn = await armed(harness);
    expect(conn.session.id).toBe(harness.backend.handshakes[0]?.sessionId);
    expect(harness.backend.handshakes.map((r) => r.status)).toEqual([409, 101]);
  });

  it('409 that clears within the retries → the same session is used (§8)', async () => {
    const backend = await backendWith((b) => b.handshakeStatuses.push(409, 409));
    const harness = await start({ backend, config: { session: FAST_RETRY } });
    const conn = await armed(harness);
    expect(harness.backend.handshakes.map((r) => [r.sessionId, r.status])).toEqual([
      ['sess-1', 409],
      ['sess-1', 409],
      ['sess-1', 101],
    ]);
    expect(conn.session.id).toBe('sess-1');
    expect(posts(harness.backend)).toBe(1);
  });

  it.each([401, 403])('%d on the handshake → config_error view and no retry loop; kiosk.retry() tries again (§5)', async (status) => {
    const backend = await backendWith((b) => b.handshakeStatuses.push(status));
    const harness = await start({ backend, config: { session: FAST_RETRY } });
    const view = await harness.view((v) => v.phase === 'config_error');
    expect(view.prompt).toBe('config_error');
    expect(view.error).toMatchObject({ code: 'config_error', retryable: false });

    const requests = (): number => harness.backend.http.length + harness.backend.handshakes.length;
    const count = requests();
    // With 20 ms backoffs a retry loop would make many requests in this window.
    await sleep(400);
    expect(requests()).toBe(count);
    expect(harness.kiosk.currentView.phase).toBe('config_error');

    const from = harness.views.length;
    harness.kiosk.retry();
    const conn = await harness.backend.nextConnection();
    await conn.expect('engage');
    await viewAfter(harness, from, (v) => v.phase === 'ready');
    expect(requests()).toBeGreaterThan(count);
  });

  it.each([401, 403])(
    '%d on POST /sessions → config_error view and no retry loop; kiosk.retry() tries again (§4.1, §5)',
    async (status) => {
      const backend = await backendWith((b) => b.createStatuses.push(status));
      const harness = await start({ backend, config: { session: FAST_RETRY } });
      const view = await harness.view((v) => v.phase === 'config_error');
      expect(view.error).toMatchObject({ code: 'config_error', retryable: false });
      expect(view.error?.detail).not.toContain(harness.backend.apiKey);

      await sleep(400);
      expect(posts(harness.backend)).toBe(1);
      expect(harness.backend.handshakes).toHaveLength(0);

      const from = harness.views.length;
      harness.kiosk.retry();
      await armed(harness);
      await viewAfter(harness, from, (v) => v.phase === 'ready');
      expect(posts(harness.backend)).toBe(2);
    },
  );

  it('a gateway answering 404 on the upgrade of every new session: after three, needs staff with a code of its own, the cause and how often it is checked; a tap says the same; ready by itself once it routes the socket (§10)', async () => {
    const backend = await backendWith((b) => b.handshakeStatuses.push(404, 404, 404, 404));
    const harness = await start({ backend, config: { session: FAST_RETRY } });
    const view = await harness.view((v) => v.phase === 'config_error');
    expect(view.backend).toBe('needs_staff');
    expect(view.error).toEqual({
      code: 'backend_refuses_socket',
      detail:
        'the backend refuses the session connection (HTTP 404) — check the WebSocket route of the gateway (checked again every 0.2–0.4 s)',
      retryable: false,
    });
    expect(harness.kiosk.backendFailures).toMatchObject({
      lastFailure: { kind: 'socket_refused', stage: 'handshake', status: 404 },
      consecutive: 3,
      totals: { socket_refused: 3 },
    });

    // The fourth refusal, then the gateway routes the socket: ready without anyone pressing retry.
    const conn = await harness.backend.nextConnection();
    await conn.expect('engage');
    await harness.view((v) => v.phase === 'ready');
    expect(harness.backend.handshakes.map((r) => r.status)).toEqual([404, 404, 404, 404, 101]);
    expect(harness.kiosk.backendFailures.totals).toEqual({ socket_refused: 4 });
    // While it probed, the screen kept saying why: no "connecting" between needs staff and ready.
    const phases = harness.views.map((v) => v.phase).filter((p, i, all) => p !== all[i - 1]);
    expect(phases.slice(phases.indexOf('config_error'))).toEqual(['config_error', 'ready']);
  });

  it('POST /sessions answering 404 again and again (the session API is not at backend.baseUrl): needs staff as backend_api_rejected, ready by itself once it answers (§10)', async () => {
    const backend = await backendWith((b) => b.createStatuses.push(404, 404, 404));
    const harness = await start({ backend, config: { session: FAST_RETRY } });
    const view = await harness.view((v) => v.phase === 'config_error');
    expect(view.error).toMatchObject({
      code: 'backend_api_rejected',
      detail: expect.stringMatching(/HTTP 404.*not at this address.*backend\.baseUrl.*checked again every/) as string,
      retryable: false,
    });
    expect(harness.kiosk.backendFailures).toMatchObject({
      lastFailure: { kind: 'api_rejected', stage: 'create', status: 404 },
      consecutive: 3,
    });
    await armed(harness);
    expect(posts(harness.backend)).toBe(4);
  });

  it('a tap while the gateway refuses the session socket ends at once with its code and makes no request (§10)', async () => {
    const backend = await backendWith((b) => b.handshakeStatuses.push(...Array.from({ length: 50 }, () => 404)));
    const harness = await start({
      backend,
      config: { session: { ...FAST_RETRY, offlineBackoffMaxMs: 30_000 }, timeouts: { armWaitMs: 500 } },
    });
    await harness.view((v) => v.phase === 'config_error');
    const count = harness.backend.http.length + harness.backend.handshakes.length;
    harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    const report = await harness.nextReport();
    expect(report.result).toBe('not_ready');
    expect(report.error).toMatchObject({
      code: 'backend_refuses_socket',
      detail: expect.stringMatching(/HTTP 404.*checked again every 15–30 s/) as string,
      retryable: false,
    });
    expect(harness.backend.http.length + harness.backend.handshakes.length).toBe(count);
  });

  it('a tap during config_error ends with a config_error report and makes no request (§5)', async () => {
    const backend = await backendWith((b) => b.createStatuses.push(401));
    const harness = await start({ backend, config: { session: FAST_RETRY, timeouts: { armWaitMs: 500 } } });
    await harness.view((v) => v.phase === 'config_error');
    const count = harness.backend.http.length;
    harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    const report = await harness.nextReport();
    expect(report.result).toBe('not_ready');
    expect(report.error).toMatchObject({ code: 'config_error', retryable: false });
    expect(harness.backend.http.length).toBe(count);
  });
});

// ================================================================ backend offline

describe('backend offline (docs/protocol.md §10, kiosk policy: offline view and exponential backoff)', () => {
  it('POST /sessions answering 503 → offline view with exponential backoff, then ready once it answers', async () => {
    const backend = await backendWith((b) => b.createStatuses.push(503, 503, 503, 503));
    const harness = await start({
      backend,
      random: AT_CEILING,
      config: { session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 1_000 } },
    });
    const offline = await harness.view((v) => v.phase === 'offline');
    expect(offline.prompt).toBe('offline');
    expect(offline.error).toMatchObject({ code: 'backend_unavailable', retryable: true });
    await armed(harness);
    expect(harness.views.findIndex((v) => v.phase === 'offline')).toBeLessThan(harness.views.findIndex((v) => v.phase === 'ready'));
    expect(posts(harness.backend)).toBe(5);
    const delays = harness.logs.records.filter((r) => r.event === 'backend_unavailable').map((r) => r.retryInMs);
    expect(delays).toEqual([20, 40, 80, 160]);
  });

  it('after an outage, a profile change shows connecting until the new engage: never ready without an armed session', async () => {
    // Found by the soak: the failures counted during the outage kept the status at `armed` while the
    // idle session was closed and re-engaged, so the screen said "tap or scan" with no session ready.
    const backend = await backendWith((b) => b.createStatuses.push(503, 503));
    const harness = await start({ backend, config: { session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 100 } } });
    const conn1 = await armed(harness);
    const from = harness.views.length;
    harness.kiosk.setProfile('identity');
    expect(harness.kiosk.currentView.phase).toBe('connecting');
    const conn2 = await harness.backend.nextConnection();
    expect(conn2.session.id).toBe(conn1.session.id);
    await conn2.expect('engage');
    await viewAfter(harness, from, (v) => v.phase === 'ready' && v.profile === 'identity');
    const phases = harness.views.slice(from).map((v) => v.phase);
    expect(phases.filter((p, i) => p !== phases[i - 1])).toEqual(['connecting', 'ready']);
  });

  it('the offline backoff doubles from offlineBackoffMinMs and is capped at offlineBackoffMaxMs', async () => {
    const backend = await backendWith((b) => b.createStatuses.push(503, 503, 503, 503, 503, 503));
    const harness = await start({
      backend,
      random: AT_CEILING,
      config: { session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 100 } },
    });
    await armed(harness);
    const delays = harness.logs.records.filter((r) => r.event === 'backend_unavailable').map((r) => r.retryInMs);
    expect(delays).toEqual([20, 40, 80, 100, 100, 100]);
  });

  it('server stopped (connection refused, idle socket cut) → offline view, then ready on the same session when it is back', async () => {
    ownBackend = await FakeBackend.start();
    gate = await TcpGate.open(ownBackend.port);
    const harness = await start({
      backend: ownBackend,
      random: AT_CEILING,
      config: { backend: { baseUrl: gate.baseUrl() }, session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 200 } },
    });
    const conn1 = await armed(harness);
    const from = harness.views.length;

    await gate.shut();
    await viewAfter(harness, from, (v) => v.phase === 'offline' && v.error?.code === 'backend_unavailable');
    const failures = (): number[] => harness.logs.records.filter((r) => r.event === 'backend_unavailable').map((r) => Number(r.retryInMs));
    await until(() => failures().length >= 4, 'four failed attempts while the backend is down');
    const delays = failures();
    for (let i = 1; i < delays.length; i++) {
      expect(delays[i]).toBe(Math.min(200, (delays[i - 1] ?? 0) * 2));
    }

    const back = harness.views.length;
    await gate.reopen();
    const conn2 = await harness.backend.nextConnection(8_000);
    await conn2.expect('engage');
    await viewAfter(harness, back, (v) => v.phase === 'ready');
    // The outage said nothing about the session: it is re-armed, not replaced.
    expect(conn2.session.id).toBe(conn1.session.id);
  });

  it('backend unreachable from the start (connection refused) → offline, then ready when it comes up', async () => {
    ownBackend = await FakeBackend.start();
    gate = await TcpGate.open(ownBackend.port);
    await gate.shut();
    const harness = await start({
      backend: ownBackend,
      config: { backend: { baseUrl: gate.baseUrl() }, session: { offlineBackoffMinMs: 20, offlineBackoffMaxMs: 200 } },
    });
    const offline = await harness.view((v) => v.phase === 'offline');
    expect(offline.error?.code).toBe('backend_unavailable');
    expect(harness.backend.http).toHaveLength(0);
    await gate.reopen();
    await armed(harness);
  });
});

// ================================================================ §3 "Any phase: backend sends error"

describe('backend error (spec §3 "Any phase / backend sends error", §5 rule 2, §7.2)', () => {
  it('after error during the NFC handover the kiosk closes the socket and re-arms on the same id and client_secret', async () => {
    const harness = await start();
    const conn1 = await armed(harness);
    harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    await conn1.expect('nfc_card_present');
    conn1.stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) });
    await conn1.expect('nfc_rapdu');

    conn1.send({ type: 'error', message: 'NFC retries exhausted' });

    // The client closes the socket (§7.2 "After error, the client closes the socket").
    expect((await conn1.closed).code).toBe(1000);
    const report = await harness.nextReport();
    expect(report.result).toBe('backend_error');
    expect(report.error).toMatchObject({ code: 'backend_error', retryable: true });
    expect(report.sessionId).toBe(conn1.session.id);
    await harness.view((v) => v.phase === 'error' && v.error?.code === 'backend_error');

    const conn2 = await harness.backend.nextConnection();
    expect(await conn2.receive()).toMatchObject({ op: 'engage' });
    expect(conn2.session.id).toBe(conn1.session.id);
    const last = harness.backend.handshakes.at(-1);
    expect(last?.sessionId).toBe(conn1.session.id);
    expect(last?.authorization).toBe(`Bearer ${conn1.session.secret}`);
    expect(posts(harness.backend)).toBe(1);
  });

  it('after error while idle the kiosk closes the socket and re-arms on the same session (§3 "Any phase")', async () => {
    const harness = await start({ config: { session: FAST_RETRY } });
    const conn1 = await armed(harness);
    conn1.send({ type: 'error', message: 'session reset' });
    expect((await conn1.closed).code).toBe(1000);
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    expect(conn2.session.id).toBe(conn1.session.id);
    expect(harness.backend.handshakes.at(-1)?.authorization).toBe(`Bearer ${conn1.session.secret}`);
    expect(posts(harness.backend)).toBe(1);
  });

  it('a session without enough time left is not re-armed after error: a new one is created ("as long as the session lives")', async () => {
    const clocked = await startClockedHarness();
    h = clocked;
    const conn1 = await armed(clocked);
    clocked.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    await conn1.expect('nfc_card_present');
    const { lifetimeMs, minRemainingToStartMs } = clocked.config.session;
    clocked.clock.advance(lifetimeMs - minRemainingToStartMs + 5_000);

    conn1.send({ type: 'error', message: 'NFC retries exhausted' });
    expect((await conn1.closed).code).toBe(1000);

    const conn2 = await clocked.backend.nextConnection();
    await conn2.expect('engage');
    expect(conn2.session.id).not.toBe(conn1.session.id);
    expect(posts(clocked.backend)).toBe(2);
  });
});

// ================================================================ dropped sockets

describe('dropped socket (docs/protocol.md §10 "End", spec §1 result via GET /sessions/{id}, §4.1)', () => {
  it('dropped mid-verification (NFC handover) → error view connection_lost, reconnect on the same session, engage again', async () => {
    const harness = await start();
    const conn1 = await armed(harness);
    harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    await conn1.expect('nfc_card_present');
    conn1.stepRequest('nfc_apdu', { data: b64([0x00, 0xa4, 0x04, 0x00]) });
    await conn1.expect('nfc_rapdu');

    conn1.terminate();

    const report = await harness.nextReport();
    expect(report.result).toBe('dropped');
    expect(report.outcome).toBeNull();
    expect(report.error).toMatchObject({ code: 'connection_lost', retryable: true });
    await harness.view((v) => v.phase === 'error' && v.error?.code === 'connection_lost');

    const conn2 = await harness.backend.nextConnection();
    expect(await conn2.receive()).toMatchObject({ op: 'engage', status: 'ok' });
    expect(conn2.session.id).toBe(conn1.session.id);
    expect(harness.backend.handshakes.at(-1)?.authorization).toBe(`Bearer ${conn1.session.secret}`);
    expect(posts(harness.backend)).toBe(1);
  });

  it('dropped after the final 0x02 ble_write, before complete → result recovered with GET /sessions/{id}; with its authentication results it is verified', async () => {
    const harness = await start();
    const conn1 = await armed(harness);
    await transferFinished(harness, conn1);
    const id = conn1.session.id;
    const stored = harness.backend.sessions.get(id);
    if (!stored) throw new Error('fake backend lost the session');
    const response = { [MDL_NS]: { age_over_21: true, portrait: 'AAEC' } };
    stored.result = {
      status: 'success',
      response,
      errors: {},
      warnings: {},
      issuer_authentication: 'Valid',
      device_authentication: 'Valid',
    } satisfies SessionResult;

    conn1.terminate();

    const report = await harness.nextReport();
    expect(report.result).toBe('recovered');
    expect(report.sessionId).toBe(id);
    expect(report.error).toBeNull();
    expect(report.outcome).toMatchObject({ verdict: 'verified', source: 'recovered', response, errors: {} });
    await harness.view((v) => v.phase === 'result' && v.outcome?.source === 'recovered' && v.prompt === 'verified');
    const get = harness.backend.http.find((r) => r.method === 'GET');
    expect(get?.path).toBe(`/v1/sessions/${id}`);
    expect(get?.authorization).toBe(`Bearer ${harness.backend.apiKey}`);

    // The spent session is not reused.
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    expect(conn2.session.id).not.toBe(id);
  });

  it.each([
    [
      'errors non-empty → rejected',
      { doc_signature: 'invalid' },
      {},
      'rejected',
      ['errors_reported', 'issuer_authentication_not_reported', 'device_authentication_not_reported'],
    ],
    // Fail closed: success and no errors say the session completed, not that the document is genuine.
    [
      'no authentication results → undetermined, never verified',
      {},
      { revocation: 'temporarily unavailable' },
      'undetermined',
      ['issuer_authentication_not_reported', 'device_authentication_not_reported'],
    ],
  ] as const)('recovered result with %s (§2.2, §7.4)', async (_name, errors, warnings, verdict, reasons) => {
    const harness = await start();
    const conn1 = await armed(harness);
    await transferFinished(harness, conn1);
    const stored = harness.backend.sessions.get(conn1.session.id);
    if (!stored) throw new Error('fake backend lost the session');
    stored.result = { status: 'success', response: { [MDL_NS]: { age_over_21: true } }, errors, warnings } satisfies SessionResult;
    conn1.terminate();
    const report = await harness.nextReport();
    expect(report.result).toBe('recovered');
    expect(report.outcome?.verdict).toBe(verdict);
    expect(report.outcome?.reasons).toEqual(reasons);
    expect(report.outcome?.warnings).toEqual(warnings);
    await harness.view((v) => v.phase === 'result' && v.prompt === verdict);
  });

  it('dropped after the transfer finished but no result is available → connection_lost, a new session (the phone is done with this one)', async () => {
    const harness = await start();
    const conn1 = await armed(harness);
    await transferFinished(harness, conn1);
    // The fake backend answers 404 for a session without a result.
    conn1.terminate();
    const report = await harness.nextReport();
    expect(report.result).toBe('dropped');
    expect(report.error?.code).toBe('connection_lost');
    expect(gets(harness.backend)).toBeGreaterThanOrEqual(1);
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    expect(conn2.session.id).not.toBe(conn1.session.id);
    expect(posts(harness.backend)).toBe(2);
  });
});

// ================================================================ idle socket

describe('idle socket (spec §3 "Any phase", docs/protocol.md §10)', () => {
  it('idle socket closed by the backend → re-armed on the same session', async () => {
    const harness = await start({ config: { session: FAST_RETRY } });
    const conn1 = await armed(harness);
    const from = harness.views.length;
    conn1.close(1000, 'bye');
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    expect(conn2.session.id).toBe(conn1.session.id);
    await viewAfter(harness, from, (v) => v.phase === 'ready');
    expect(posts(harness.backend)).toBe(1);
  });

  it('idle socket dropped without a close frame → re-armed on the same session', async () => {
    const harness = await start({ config: { session: FAST_RETRY } });
    const conn1 = await armed(harness);
    conn1.terminate();
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    expect(conn2.session.id).toBe(conn1.session.id);
  });

  it('backend error while idle → socket closed by the kiosk and re-armed', async () => {
    const harness = await start({ config: { session: FAST_RETRY } });
    const conn1 = await armed(harness);
    const from = harness.views.length;
    conn1.send({ type: 'error', message: 'reset' });
    expect((await conn1.closed).code).toBe(1000);
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    await viewAfter(harness, from, (v) => v.phase === 'ready');
    expect(harness.logs.records.some((r) => r.event === 'backend_error' && r.phase === 'idle')).toBe(true);
  });

  it('an unsolicited step_request while idle → protocol error close (1002) and re-armed', async () => {
    const harness = await start({ config: { session: FAST_RETRY } });
    const conn1 = await armed(harness);
    conn1.stepRequest('nfc_apdu', { data: b64([0x00]) });
    expect((await conn1.closed).code).toBe(1002);
    const conn2 = await harness.backend.nextConnection();
    await conn2.expect('engage');
    expect(conn2.session.id).toBe(conn1.session.id);
  });
});

// ================================================================ outcome verdict

describe('outcome verdict (spec §2.4, §7.4; outcome.ts)', () => {
  it.each([
    ['no errors, both Valid → verified', outcome(), 'verified', []],
    ['warnings do not reject', outcome({ warnings: { revocation: 'unavailable' } }), 'verified', []],
    ['errors → rejected', outcome({ errors: { issuer: 'bad signature' } }), 'rejected', ['errors_reported']],
    ['issuer Unchecked → rejected', outcome({ issuer_authentication: 'Unchecked' }), 'rejected', ['issuer_authentication_unchecked']],
    ['issuer Invalid → rejected', outcome({ issuer_authentication: 'Invalid' }), 'rejected', ['issuer_authentication_invalid']],
    ['device Unchecked → rejected', outcome({ device_authentication: 'Unchecked' }), 'rejected', ['device_authentication_unchecked']],
    ['device Invalid → rejected', outcome({ device_authentication: 'Invalid' }), 'rejected', ['device_authentication_invalid']],
    [
      'every problem is listed',
      outcome({ errors: { x: 1 }, issuer_authentication: 'Invalid', device_authentication: 'Unchecked', warnings: { y: 2 } }),
      'rejected',
      ['errors_reported', 'issuer_authentication_invalid', 'device_authentication_unchecked'],
    ],
  ] as const)('complete: %s', (_name, given, verdict, reasons) => {
    const view = outcomeFromComplete(given, NO_REQUEST);
    expect(view.verdict).toBe(verdict);
    expect(view.reasons).toEqual(reasons);
    expect(view.source).toBe('complete');
    expect(view.warnings).toEqual(given.warnings);
    expect(view.response).toEqual(given.response);
  });

  it('recovered result: success, empty errors and both authentications Valid → verified; either not reported → undetermined (never verified); errors → rejected; other status → no outcome', () => {
    const base = {
      status: 'success',
      response: { [MDL_NS]: { age_over_18: true } },
      errors: {},
      warnings: {},
      issuer_authentication: 'Valid',
      device_authentication: 'Valid',
    };
    expect(outcomeFromResult(base, NO_REQUEST)).toMatchObject({ verdict: 'verified', source: 'recovered', reasons: [] });
    expect(outcomeFromResult({ ...base, warnings: { w: 1 } }, NO_REQUEST)?.verdict).toBe('verified');
    const unauthenticated = { status: base.status, response: base.response, errors: base.errors, warnings: base.warnings };
    expect(outcomeFromResult(unauthenticated, NO_REQUEST)).toMatchObject({
      verdict: 'undetermined',
      reasons: ['issuer_authentication_not_reported', 'device_authentication_not_reported'],
    });
    expect(outcomeFromResult({ ...unauthenticated, issuer_authentication: 'Valid' }, NO_REQUEST)).toMatchObject({
      verdict: 'undetermined',
      reasons: ['device_authentication_not_reported'],
    });
    expect(outcomeFromResult({ ...base, errors: { e: 1 } }, NO_REQUEST)).toMatchObject({
      verdict: 'rejected',
      reasons: ['errors_reported'],
    });
    expect(outcomeFromResult({ ...base, status: 'pending' }, NO_REQUEST)).toBeUndefined();
    expect(outcomeFromResult({ status: 'success' }, NO_REQUEST)).toBeUndefined();
    // Authentication metadata, when the backend reports it, is honoured.
    expect(outcomeFromResult({ ...base, issuer_authentication: 'Unchecked' }, NO_REQUEST)?.verdict).toBe('rejected');
    expect(outcomeFromResult({ ...base, device_authentication: 'Invalid' }, NO_REQUEST)?.verdict).toBe('rejected');
    expect(outcomeFromResult({ ...base, issuer_authentication: 'valid-ish' }, NO_REQUEST)?.verdict).toBe('rejected');
  });

  it.each([
    ['issuer Unchecked', 'rejected', outcome({ issuer_authentication: 'Unchecked' })],
    ['device Invalid', 'rejected', outcome({ device_authentication: 'Invalid' })],
    ['errors', 'rejected', outcome({ errors: { mso: 'expired' } })],
    ['warnings only', 'verified', outcome({ warnings: { revocation: 'unavailable' } })],
  ] as const)('end to end over QR: %s → %s', async (_name, verdict, given) => {
    const prompt = verdict;
    const harness = await start();
    const conn = await armed(harness);
    await qrVerification(harness, conn, given);
    const report = await harness.nextReport();
    expect(report.result).toBe('complete');
    expect(report.outcome?.verdict).toBe(verdict);
    await harness.view((v: KioskView) => v.phase === 'result' && v.prompt === prompt);
    expect((await conn.closed).code).toBe(1000);
  });
});

// ================================================================ stop

describe('kiosk.stop()', () => {
  it('closes the idle socket with 1001 (going away) and leaves no timers', async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const harness = await start({ config: { ...SHORT_LIFETIME, session: { ...SHORT_LIFETIME.session, ...FAST_RETRY } } });
    const conn = await armed(harness);
    await harness.kiosk.stop();
    expect((await conn.closed).code).toBe(1001);
    expect(harness.kiosk.currentView.phase).toBe('stopped');
    expect(timers()).toBeLessThanOrEqual(before);

    // Nothing happens any more: no renewal, no retry (renewal would be due within 1.5 s).
    const count = harness.backend.http.length + harness.backend.handshakes.length;
    await sleep(1_800);
    expect(harness.backend.http.length + harness.backend.handshakes.length).toBe(count);
  });

  it('during a verification it closes the session socket with 1001 and ends in the stopped view', async () => {
    const harness = await start();
    const conn = await armed(harness);
    harness.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    await conn.expect('nfc_card_present');
    await harness.kiosk.stop();
    expect((await conn.closed).code).toBe(1001);
    expect(harness.kiosk.currentView.phase).toBe('stopped');
  });

  it('a process running a kiosk exits on its own after stop(): no timers or handles left', async () => {
    const probe = fileURLToPath(new URL('../support/session-stop-probe.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', probe], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const guard = setTimeout(() => child.kill('SIGKILL'), 25_000);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.on('exit', (c, s) => resolve([c, s])),
    );
    clearTimeout(guard);
    expect(signal, `probe was killed; stderr: ${stderr}`).toBeNull();
    expect(code, stderr).toBe(0);
    const report = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { closeCode?: number; resources?: string[] };
    expect(report.closeCode).toBe(1001);
    expect(report.resources).not.toContain('Timeout');
  }, 30_000);
});
