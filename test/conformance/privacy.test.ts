/**
 * "No secrets or personal data in logs, ever": full verifications over the real HTTP + WebSocket stack,
 * in both ways of sending the client secret (`Authorization` header and `?token=` query), with
 * successful outcomes full of personal data, APDU and BLE payloads carrying recognisable byte patterns,
 * backend errors, protocol violations, timeouts and refused credentials. Every log line is captured at
 * debug level and searched for the API key, the client secrets, the token URL, every payload (base64,
 * hex and as a JSON byte list) and every disclosed value. The `KioskView`s must carry no secret either.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { KioskView } from '../../src/common/kiosk-view.js';
import type { Kiosk, VerificationReport } from '../../src/kiosk/kiosk.js';
import { FakeBackend, type FakeConnection } from '../support/fake-backend.js';
import { NfcTransmitError, type FakePeripheralSession } from '../support/fake-devices.js';
import { startHarness, type Harness } from '../support/harness.js';

type AuthMode = 'header' | 'query';

const MDL_NS = 'org.iso.18013.5.1';
const SERVICE_UUID = '6c1e2f3a-9b8d-4e5f-a1b2-c3d4e5f60718';
const CENTRAL = {
  state: '00000001-a123-48ce-896b-4c76973373e6',
  c2s: '00000002-a123-48ce-896b-4c76973373e6',
  s2c: '00000003-a123-48ce-896b-4c76973373e6',
};
const PERIPHERAL = {
  state: '00000005-a123-48ce-896b-4c76973373e6',
  c2s: '00000006-a123-48ce-896b-4c76973373e6',
  s2c: '00000007-a123-48ce-896b-4c76973373e6',
  ident: '00000008-a123-48ce-896b-4c76973373e6',
};

const MODE_CENTRAL = {
  role: 'central',
  service_uuid: SERVICE_UUID,
  characteristics: {
    state: { uuid: CENTRAL.state, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
    c2s: { uuid: CENTRAL.c2s, operations: ['write_without_response'], permissions: ['writeable'] },
    s2c: { uuid: CENTRAL.s2c, operations: ['notify'], permissions: [] },
  },
};
const MODE_PERIPHERAL = {
  role: 'peripheral',
  service_uuid: SERVICE_UUID,
  characteristics: {
    state: { uuid: PERIPHERAL.state, operations: ['notify', 'write_without_response'], permissions: ['writeable'] },
    c2s: { uuid: PERIPHERAL.c2s, operations: ['write_without_response'], permissions: ['writeable'] },
    s2c: { uuid: PERIPHERAL.s2c, operations: ['notify'], permissions: ['readable'] },
    ident: { uuid: PERIPHERAL.ident, operations: ['read'], permissions: ['readable'] },
  },
};

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

// =====================================================================================================
// What must never be logged, collected per test
// =====================================================================================================

class Secrets {
  private readonly entries = new Map<string, string>();

  /** A text that must not appear in any log line. */
  add(name: string, value: string): void {
    if (value.length >= 6) this.entries.set(value, name);
  }

  /** A payload: its base64, its hex (both cases) and its bytes as a JSON list must not appear. */
  bytes(name: string, bytes: Uint8Array): Uint8Array {
    this.add(`${name} (base64)`, b64(bytes));
    const hex = Buffer.from(bytes).toString('hex');
    this.add(`${name} (hex)`, hex);
    this.add(`${name} (HEX)`, hex.toUpperCase());
    this.add(`${name} (byte list)`, Array.from(bytes.subarray(0, 8)).join(','));
    return bytes;
  }

  /** Every occurrence in `lines`, as "what: where". */
  findIn(lines: readonly string[]): string[] {
    const found: string[] = [];
    for (const line of lines) {
      for (const [value, name] of this.entries) {
        if (line.includes(value)) found.push(`${name} in: ${line.slice(0, 300)}`);
      }
    }
    return found;
  }
}

/** A payload with a recognisable pattern: a marker, a label and random bytes, so it occurs nowhere by chance. */
function pattern(label: string, extra: readonly number[] = []): Uint8Array {
  return Uint8Array.from([0xde, 0xad, 0xbe, 0xef, ...Buffer.from(label, 'ascii'), ...randomBytes(10), ...extra]);
}

/** Disclosed values that occur nowhere else. */
function personalData(): { values: Record<string, string>; portrait: Uint8Array } {
  const tag = randomBytes(3).toString('hex');
  return {
    values: {
      family_name: `Quennell-Vasquez-${tag}`,
      given_name: `Ottoline-${tag}`,
      birth_date: '1961-09-17',
      document_number: `DL-QX-${tag}-1197`,
      resident_address: `17 Larkspur Mews ${tag}`,
    },
    portrait: Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, ...Buffer.from(`JFIF-portrait-${tag}`), ...randomBytes(48), 0xff, 0xd9]),
  };
}

function outcomeWith(pii: ReturnType<typeof personalData>, secrets: Secrets): Record<string, unknown> {
  for (const [key, value] of Object.entries(pii.values)) secrets.add(`disclosed ${key}`, value);
  secrets.bytes('portrait', pii.portrait);
  return {
    response: { [MDL_NS]: { ...pii.values, portrait: b64(pii.portrait), age_over_21: true } },
    doc_types: ['org.iso.18013.5.1.mDL'],
    issuer_authentication: 'Valid',
    device_authentication: 'Valid',
    errors: {},
    warnings: { revocation: 'status list temporarily unavailable' },
  };
}

// =====================================================================================================
// Harness plumbing
// =====================================================================================================

let harness: Harness | undefined;
let backend: FakeBackend | undefined;

afterEach(async () => {
  await harness?.stop();
  await backend?.stop();
  harness = undefined;
  backend = undefined;
});

const QUICK = { resultDisplayMs: 1, errorDisplayMs: 1, removePhoneMs: 1 };

async function start(mode: AuthMode, secrets: Secrets, config: Record<string, unknown> = {}, apiKey?: string): Promise<Harness> {
  backend = await FakeBackend.start({ apiKey: `sk_live_${randomBytes(12).toString('hex')}` });
  secrets.add('API key', backend.apiKey);
  const {
    timeouts,
    session,
    backend: backendConfig,
    ...rest
  } = config as {
    timeouts?: Record<string, unknown>;
    session?: Record<string, unknown>;
    backend?: Record<string, unknown>;
  };
  harness = await startHarness({
    backend,
    config: {
      ...rest,
      backend: { wsAuth: mode, ...(apiKey ? { apiKey } : {}), ...backendConfig },
      timeouts: { ...QUICK, ...timeouts },
      session: { conflictBackoffMs: 5, offlineBackoffMinMs: 5, offlineBackoffMaxMs: 50, ...session },
    },
  });
  return harness;
}

function currentView(kiosk: Kiosk, predicate: (v: KioskView) => boolean): Promise<KioskView> {
  if (predicate(kiosk.currentView)) return Promise.resolve(kiosk.currentView);
  return new Promise((resolve) => {
    const off = kiosk.onView((v) => {
      if (!predicate(v)) return;
      off();
      resolve(v);
    });
  });
}

/** Ready, with the engaged connection. */
async function engaged(h: Harness): Promise<FakeConnection> {
  const conn = await h.backend.nextConnection();
  await conn.expect('engage');
  await currentView(h.kiosk, (v) => v.phase === 'ready');
  return conn;
}

/** Polls a condition of a fake device (they have no change events); bounded by the test timeout. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 2));
}

/** Adds every session secret the backend handed out, and the token forms of the WebSocket URL. */
function addSessionSecrets(h: Harness, secrets: Secrets): void {
  for (const session of h.backend.sessions.values()) {
    secrets.add('client secret', session.secret);
    secrets.add('token query', `token=${encodeURIComponent(session.secret)}`);
    secrets.add('bearer credential', `Bearer ${session.secret}`);
  }
  secrets.add('API key as bearer', `Bearer ${h.backend.apiKey}`);
}

/** The assertions of every test: nothing secret or personal in the logs, no secret in any view. */
function expectNoLeaks(h: Harness, secrets: Secrets, mode: AuthMode): void {
  addSessionSecrets(h, secrets);
  expect(h.logs.lines.length).toBeGreaterThan(5);
  expect(secrets.findIn(h.logs.lines)).toEqual([]);
  // A URL carrying a token, whatever the token.
  expect(h.logs.lines.filter((line) => /[?&]token=(?!<redacted>)/.test(line))).toEqual([]);

  // KioskView crosses to the UI: never a credential, in either auth mode.
  const credentials = new Secrets();
  credentials.add('API key', h.backend.apiKey);
  for (const session of h.backend.sessions.values()) credentials.add('client secret', session.secret);
  const views = h.views.map((v) => JSON.stringify(v));
  expect(credentials.findIn(views)).toEqual([]);
  expect(views.filter((v) => /token=|Bearer /i.test(v))).toEqual([]);
  // Error details are staff-facing text: no payload or personal data either (outcomes are shown by design).
  const details = h.views.flatMap((v) => (v.error ? [v.error.detail] : []));
  expect(secrets.findIn(details)).toEqual([]);

  if (mode === 'query') {
    expect(h.backend.handshakes.some((hs) => hs.query.startsWith('?token='))).toBe(true);
  } else {
    expect(h.backend.handshakes.every((hs) => hs.query === '')).toBe(true);
  }
}

// =====================================================================================================
// Flows
// =====================================================================================================

/** NFC handover with patterned APDUs (one failing once, re-tapped), then BLE central with patterned traffic. */
async function nfcCentralUpToTransfer(h: Harness, conn: FakeConnection, secrets: Secrets): Promise<void> {
  const commands = [pattern('SELECT-AID'), pattern('ENVELOPE-1'), pattern('ENVELOPE-2')].map((c, i) =>
    secrets.bytes(`APDU command ${i}`, c),
  );
  const responses = new Map(commands.map((c, i) => [b64(c), secrets.bytes(`APDU response ${i}`, pattern(`RAPDU-${i}`, [0x90, 0x00]))]));
  const failOnce = new Set([b64(commands[1] ?? new Uint8Array())]);
  const responder = (command: Uint8Array): Uint8Array | NfcTransmitError => {
    const key = b64(command);
    if (failOnce.delete(key)) return new NfcTransmitError('RemovedCard');
    return responses.get(key) ?? Uint8Array.from([0x6a, 0x82]);
  };
  h.nfc.tap(responder);
  await conn.expect('nfc_card_present');
  for (const command of commands) {
    conn.stepRequest('nfc_apdu', { data: b64(command) });
    const reply = await conn.expect('nfc_rapdu');
    if (reply.status === 'error') {
      conn.stepRequest('nfc_await_card', {});
      h.nfc.lift();
      h.nfc.tap(responder);
      await conn.expect('nfc_card_present');
      conn.stepRequest('nfc_apdu', { data: b64(command) });
      expect(await conn.expect('nfc_rapdu')).toMatchObject({ status: 'ok', data: b64(responses.get(b64(command)) ?? new Uint8Array()) });
    }
  }
  conn.stepRequest('ble_exchange', { modes: [MODE_CENTRAL] });
  expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'central' });
  const link = await h.central.nextLink();
  for (let i = 0; i < 3; i++) {
    conn.stepRequest('ble_write', { char: CENTRAL.c2s, data: b64(secrets.bytes(`BLE write ${i}`, pattern(`SESSION-EST-${i}`))) });
    const notification = secrets.bytes(`BLE notification ${i}`, pattern(`DEVICE-RESP-${i}`));
    link.notify(CENTRAL.s2c, notification);
    expect(await conn.expect('ble_notified')).toMatchObject({ data: b64(notification) });
  }
}

/** QR engagement with a patterned QR text, then BLE peripheral with patterned writes, reads and notifications. */
async function qrPeripheralUpToTransfer(h: Harness, conn: FakeConnection, secrets: Secrets): Promise<FakePeripheralSession> {
  const engagement = secrets.bytes('device engagement', pattern('QR-ENGAGEMENT'));
  const qrText = `mdoc:${Buffer.from(engagement).toString('base64url')}`;
  secrets.add('QR text', qrText);
  h.qr.push(qrText);
  expect(await conn.expect('qr_scanned')).toMatchObject({ data: qrText });
  conn.stepRequest('ble_exchange', { modes: [MODE_PERIPHERAL] });
  const session = await h.peripheral.nextSession();
  session.subscribe(PERIPHERAL.s2c);
  expect(await conn.expect('ble_connected')).toMatchObject({ status: 'ok', role: 'peripheral' });
  const ident = secrets.bytes('ident value', pattern('IDENT'));
  const read = session.read(PERIPHERAL.ident);
  await conn.expect('ble_read_request');
  conn.stepRequest('ble_read_response', { data: b64(ident) });
  expect(b64(await read)).toBe(b64(ident));
  for (let i = 0; i < 3; i++) {
    const written = secrets.bytes(`phone write ${i}`, pattern(`MDOC-WRITE-${i}`));
    session.write(PERIPHERAL.c2s, written);
    expect(await conn.expect('ble_written')).toMatchObject({ data: b64(written) });
    conn.stepRequest('ble_write', { char: PERIPHERAL.s2c, data: b64(secrets.bytes(`BLE notification ${i}`, pattern(`READER-MSG-${i}`))) });
  }
  return session;
}

function complete(conn: FakeConnection, outcome: Record<string, unknown>, stateUuid: string): void {
  conn.stepRequest('ble_write', { char: stateUuid, data: b64(Uint8Array.from([0x02])) });
  conn.send({ type: 'complete', outcome });
}

async function report(h: Harness): Promise<VerificationReport> {
  const r = await h.nextReport();
  h.nfc.lift();
  await currentView(h.kiosk, (v) => v.phase === 'ready');
  return r;
}

// =====================================================================================================
// Tests
// =====================================================================================================

describe.each<AuthMode>(['header', 'query'])('no secrets or personal data in logs (wsAuth %s)', (mode) => {
  it('NFC + BLE central: patterned APDUs (with a re-tap) and BLE traffic, an outcome full of personal data', async () => {
    const secrets = new Secrets();
    const h = await start(mode, secrets);
    const conn = await engaged(h);
    await nfcCentralUpToTransfer(h, conn, secrets);
    const pii = personalData();
    complete(conn, outcomeWith(pii, secrets), CENTRAL.state);
    const r = await report(h);
    expect(r.result).toBe('complete');
    expect(r.outcome?.verdict).toBe('verified');
    expect(r.outcome?.response[MDL_NS]?.family_name).toBe(pii.values.family_name);
    expect(h.views.some((v) => v.outcome?.response[MDL_NS]?.portrait === b64(pii.portrait))).toBe(true);
    expectNoLeaks(h, secrets, mode);
  });

  it('QR + BLE peripheral: patterned engagement, reads, writes and notifications, an outcome full of personal data', async () => {
    const secrets = new Secrets();
    const h = await start(mode, secrets);
    const conn = await engaged(h);
    await qrPeripheralUpToTransfer(h, conn, secrets);
    const pii = personalData();
    complete(conn, outcomeWith(pii, secrets), PERIPHERAL.state);
    const r = await report(h);
    expect(r.result).toBe('complete');
    expect(r.outcome?.response[MDL_NS]?.given_name).toBe(pii.values.given_name);
    expectNoLeaks(h, secrets, mode);
  });

  it('the socket drops after the end byte: the result with personal data is recovered over HTTP with the API key', async () => {
    const secrets = new Secrets();
    const h = await start(mode, secrets);
    const conn = await engaged(h);
    await nfcCentralUpToTransfer(h, conn, secrets);
    const pii = personalData();
    const outcome = outcomeWith(pii, secrets);
    conn.session.result = { status: 'success', ...outcome };
    conn.stepRequest('ble_write', { char: CENTRAL.state, data: b64(Uint8Array.from([0x02])) });
    const link = await h.central.nextLink();
    await until(() => link.writes.some((w) => w.data.length === 1 && w.data[0] === 0x02));
    conn.terminate();
    const r = await report(h);
    expect(r.result).toBe('recovered');
    expect(r.outcome?.response[MDL_NS]?.document_number).toBe(pii.values.document_number);
    expect(h.backend.http.some((x) => x.method === 'GET')).toBe(true);
    expectNoLeaks(h, secrets, mode);
  });

  it('backend errors during the handover, during the transfer and while idle', async () => {
    const secrets = new Secrets();
    const h = await start(mode, secrets);
    let conn = await engaged(h);
    h.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
    await conn.expect('nfc_card_present');
    conn.send({ type: 'error', message: 'NFC retries exhausted' });
    expect((await report(h)).result).toBe('backend_error');

    conn = await engaged(h);
    await nfcCentralUpToTransfer(h, conn, secrets);
    conn.send({ type: 'error', message: 'device response could not be decrypted' });
    expect((await report(h)).result).toBe('backend_error');

    conn = await engaged(h);
    conn.send({ type: 'error', message: 'session reset' });
    expect((await conn.closed).code).toBe(1000);
    await engaged(h);
    expectNoLeaks(h, secrets, mode);
  });

  it('backend error messages that quote a payload or a disclosed value are not logged or shown verbatim', async () => {
    // The message text is the backend's (spec §7.2: "The list of message texts: not shown"); a backend may
    // well echo what it choked on. The kiosk must not turn that into a log line or a staff-facing detail.
    const secrets = new Secrets();
    const h = await start(mode, secrets);
    const pii = personalData();
    for (const [key, value] of Object.entries(pii.values)) secrets.add(`disclosed ${key}`, value);
    let conn = await engaged(h);
    const response = secrets.bytes('APDU response quoted by the backend', pattern('QUOTED', [0x90, 0x00]));
    h.nfc.tap(() => response);
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64(secrets.bytes('APDU command', pattern('CMD'))) });
    await conn.expect('nfc_rapdu');
    conn.send({ type: 'error', message: `handover failed: cannot parse nfc_rapdu data ${b64(response)}` });
    expect((await report(h)).result).toBe('backend_error');

    conn = await engaged(h);
    await nfcCentralUpToTransfer(h, conn, secrets);
    conn.send({ type: 'error', message: `document ${pii.values.document_number} of ${pii.values.family_name} is revoked` });
    expect((await report(h)).result).toBe('backend_error');

    conn = await engaged(h);
    conn.send({ type: 'error', message: `session of ${pii.values.given_name} reset` });
    expect((await conn.closed).code).toBe(1000);
    await engaged(h);
    expectNoLeaks(h, secrets, mode);
  });

  it('protocol violations whose frames carry payloads and personal data', async () => {
    const secrets = new Secrets();
    const h = await start(mode, secrets);
    const pii = personalData();
    const outcome = outcomeWith(pii, secrets);
    const payload = secrets.bytes('stray payload', pattern('STRAY'));
    const frames: {
      readonly name: string;
      readonly at: 'idle' | 'nfc' | 'transfer';
      readonly send: (c: FakeConnection) => void;
      readonly code: number;
    }[] = [
      { name: 'PII as invalid base64', at: 'nfc', code: 1007, send: (c) => c.stepRequest('nfc_apdu', { data: pii.values.family_name }) },
      {
        name: 'payload base64 without padding',
        at: 'nfc',
        code: 1007,
        send: (c) => c.stepRequest('nfc_apdu', { data: b64(payload).replace(/=+$/, '') }),
      },
      {
        name: 'ble_write to a foreign characteristic',
        at: 'transfer',
        code: 1002,
        send: (c) => c.stepRequest('ble_write', { char: '0000aaaa-0000-1000-8000-00805f9b34fb', data: b64(payload) }),
      },
      { name: 'unknown op with a payload', at: 'transfer', code: 1002, send: (c) => c.stepRequest('nfc_apdu_v2', { data: b64(payload) }) },
      {
        name: 'outcome with a broken field',
        at: 'transfer',
        code: 1002,
        send: (c) => c.send({ type: 'complete', outcome: { ...outcome, doc_types: pii.values.given_name } }),
      },
      {
        name: 'outcome with personal data in an enum',
        at: 'nfc',
        code: 1002,
        send: (c) => c.send({ type: 'complete', outcome: { ...outcome, issuer_authentication: pii.values.family_name } }),
      },
      {
        name: 'truncated outcome',
        at: 'nfc',
        code: 1007,
        send: (c) => c.sendRaw(JSON.stringify({ type: 'complete', outcome }).slice(0, -20)),
      },
      { name: 'binary frame of payload bytes', at: 'transfer', code: 1003, send: (c) => c.sendBinary(payload) },
      { name: 'unsolicited outcome while idle', at: 'idle', code: 1002, send: (c) => c.send({ type: 'complete', outcome }) },
      {
        name: 'invalid base64 while idle',
        at: 'idle',
        code: 1007,
        send: (c) => c.stepRequest('ble_write', { char: CENTRAL.c2s, data: `${pii.values.birth_date}==` }),
      },
    ];
    for (const frame of frames) {
      const conn = await engaged(h);
      if (frame.at === 'nfc') {
        h.nfc.tap(() => Uint8Array.from([0x90, 0x00]));
        await conn.expect('nfc_card_present');
      } else if (frame.at === 'transfer') {
        await nfcCentralUpToTransfer(h, conn, secrets);
      }
      frame.send(conn);
      expect((await conn.closed).code, frame.name).toBe(frame.code);
      if (frame.at !== 'idle') expect((await report(h)).result, frame.name).toBe('violation');
    }
    await engaged(h);
    expectNoLeaks(h, secrets, mode);
  });

  it('timeouts: a mute card, a silent backend after APDUs and during BLE, an unanswered phone read', async () => {
    const secrets = new Secrets();
    const h = await start(mode, secrets, { timeouts: { apduMs: 40, backendReplyMs: 200, bleIdleMs: 200, bleReadResponseMs: 100 } });

    // The card never answers: the kiosk reports the PC/SC Timeout; the backend gives up.
    let conn = await engaged(h);
    h.nfc.tap(() => 'mute');
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64(secrets.bytes('APDU to a mute card', pattern('MUTE'))) });
    expect(await conn.expect('nfc_rapdu')).toMatchObject({ status: 'error', reason: 'Timeout' });
    conn.send({ type: 'error', message: 'card timeout' });
    expect((await report(h)).result).toBe('backend_error');

    // The backend falls silent in the handover.
    conn = await engaged(h);
    const command = secrets.bytes('APDU before silence', pattern('SILENT-CMD'));
    const response = secrets.bytes('RAPDU before silence', pattern('SILENT-RSP', [0x90, 0x00]));
    h.nfc.tap(() => response);
    await conn.expect('nfc_card_present');
    conn.stepRequest('nfc_apdu', { data: b64(command) });
    await conn.expect('nfc_rapdu');
    expect((await report(h)).result).toBe('timeout');
    expect((await conn.closed).code).toBe(4008);

    // The backend falls silent during the BLE transfer.
    conn = await engaged(h);
    await nfcCentralUpToTransfer(h, conn, secrets);
    expect((await report(h)).result).toBe('timeout');

    // The phone reads and the backend never answers.
    conn = await engaged(h);
    h.qr.push('mdoc:owBjMS4wAYIB2BhYS6QBAiABIVgg');
    await conn.expect('qr_scanned');
    conn.stepRequest('ble_exchange', { modes: [MODE_PERIPHERAL] });
    const session = await h.peripheral.nextSession();
    session.subscribe(PERIPHERAL.s2c);
    await conn.expect('ble_connected');
    const written = secrets.bytes('phone write before an unanswered read', pattern('UNANSWERED'));
    session.write(PERIPHERAL.c2s, written);
    await conn.expect('ble_written');
    const read = session.read(PERIPHERAL.ident).then(
      () => 'answered',
      () => 'failed',
    );
    await conn.expect('ble_read_request');
    expect((await report(h)).result).toBe('timeout');
    expect(await read).toBe('failed');

    expectNoLeaks(h, secrets, mode);
  });

  it('handshakes refused (404, 409, 500): the session is re-created or retried without logging the token URL', async () => {
    const secrets = new Secrets();
    const h = await start(mode, secrets);
    let conn = await engaged(h);
    // Next re-arm: the reconnect with the same secret is refused in turn with 409, 500, then 404.
    h.backend.handshakeStatuses.push(409, 500, 404);
    conn.close(1011, 'backend restarting');
    conn = await engaged(h);
    await nfcCentralUpToTransfer(h, conn, secrets);
    complete(conn, outcomeWith(personalData(), secrets), CENTRAL.state);
    expect((await report(h)).result).toBe('complete');
    expect(h.backend.handshakes.map((x) => x.status)).toEqual(expect.arrayContaining([409, 500, 404]));
    expectNoLeaks(h, secrets, mode);
  });

  it('credentials refused: the wrong API key is neither logged nor shown', async () => {
    const secrets = new Secrets();
    const wrongKey = `sk_live_wrong_${randomBytes(12).toString('hex')}`;
    secrets.add('wrong API key', wrongKey);
    const h = await start(mode, secrets, {}, wrongKey);
    const view = await currentView(h.kiosk, (v) => v.phase === 'config_error');
    expect(view.error?.retryable).toBe(false);
    expect(h.backend.http.some((x) => x.authorization === `Bearer ${wrongKey}`)).toBe(true);
    expect(secrets.findIn(h.views.map((v) => JSON.stringify(v)))).toEqual([]);
    addSessionSecrets(h, secrets);
    expect(secrets.findIn(h.logs.lines)).toEqual([]);
  });
});
