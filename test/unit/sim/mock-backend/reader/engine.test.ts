/**
 * The ISO reader engine end to end against a test phone (toolkit + @owf/mdoc Holder), without the
 * WebSocket: each flow drives the engine the way the relay session does (qrScanned / nfcStart+nfcResponse,
 * bleConnected, then the phone's notifications or writes) and checks the outcome of spec §2.4.
 */
import { describe, expect, it } from 'vitest';
import { CENTRAL_CLIENT_MODE, PERIPHERAL_SERVER_MODE } from '../../../../../src/qa/sim/iso/ble-uuids.js';
import type { BleActions, ReaderEngine } from '../../../../../src/qa/sim/mock-backend/engine.js';
import { createIsoReaderEngineFactory, type IsoReaderEngineOptions } from '../../../../../src/qa/sim/mock-backend/reader/index.js';
import type { BleModeWire, OutcomeWire } from '../../../../../src/qa/sim/mock-backend/wire.js';
import {
  DAY,
  NS,
  PORTRAIT,
  TestPhone,
  createDocumentSigner,
  createIaca,
  issueMdl,
  type Credential,
  type PhoneOptions,
} from './test-phone.js';

const REQUEST = { [NS]: ['family_name', 'given_name', 'birth_date', 'portrait', 'driving_privileges', 'age_over_21'] };
const EXPECTED_RESPONSE = {
  [NS]: {
    family_name: 'Doe',
    given_name: 'Jane',
    birth_date: '1990-04-12',
    portrait: Buffer.from(PORTRAIT).toString('base64'),
    driving_privileges: [{ vehicle_category_code: 'B', issue_date: '2010-05-06', expiry_date: '2034-01-02' }],
    age_over_21: true,
  },
};

const iaca = await createIaca();
const signer = await createDocumentSigner(iaca);
const credential = await issueMdl(signer);

type Engagement = { kind: 'qr' } | { kind: 'nfc'; mode: 'static' | 'negotiated' };

interface Run {
  readonly outcome?: OutcomeWire;
  readonly failure?: string;
  readonly modes: BleModeWire[];
  readonly phone: TestPhone;
  /** Every write the engine asked the kiosk to make, in order. */
  readonly writes: { char: string; data: Uint8Array }[];
  readonly engine: ReaderEngine;
}

function engineFor(options: Partial<IsoReaderEngineOptions> = {}, namespaces: Record<string, string[]> = REQUEST): ReaderEngine {
  const factory = createIsoReaderEngineFactory({ trustedIacaCertificates: [iaca.der], delay: () => Promise.resolve(), ...options });
  return factory({ sessionId: 'test', namespaces });
}

async function engage(engine: ReaderEngine, phone: TestPhone, how: Engagement): Promise<BleModeWire[]> {
  if (how.kind === 'qr') {
    const engagement = await engine.qrScanned(phone.qr());
    if (engagement.kind === 'failed') throw new Error(engagement.reason);
    return engagement.modes;
  }
  const tag = phone.presentNfc(how.mode);
  let step = engine.nfcStart();
  while (step.kind === 'apdu') step = await engine.nfcResponse(tag(step.apdu));
  if (step.kind === 'failed') throw new Error(step.reason);
  return step.modes;
}

/** Plays the relay between engine and phone until the engine ends the verification. */
async function run(options: {
  how: Engagement;
  role: 'central' | 'peripheral';
  phone?: Partial<PhoneOptions>;
  engine?: Partial<IsoReaderEngineOptions>;
  credential?: Credential;
  namespaces?: Record<string, string[]>;
}): Promise<Run> {
  const phone = new TestPhone({ credential: options.credential ?? credential, ...options.phone });
  const engine = engineFor(options.engine, options.namespaces);
  const modes = await engage(engine, phone, options.how);
  const writes: { char: string; data: Uint8Array }[] = [];
  const events: { char: string; data: Uint8Array }[] = [];
  let actions: BleActions = await engine.bleConnected(options.role);
  if (options.role === 'peripheral') events.push(...phone.connectAsClient(engine.bleReadRequest(CENTRAL_CLIENT_MODE.ident.uuid)));
  for (let guard = 0; guard < 10_000; guard++) {
    if (actions.failure !== undefined) return { failure: actions.failure, modes, phone, writes, engine };
    for (const write of actions.writes) {
      writes.push(write);
      events.push(...(await phone.fromReader(write.char, write.data)));
    }
    if (actions.outcome !== undefined) return { outcome: actions.outcome, modes, phone, writes, engine };
    const event = events.shift();
    if (event === undefined) throw new Error('the flow stalled: nothing left to deliver');
    actions =
      options.role === 'central' ? await engine.bleNotified(event.char, event.data) : await engine.bleWritten(event.char, event.data);
  }
  throw new Error('the flow did not end');
}

function expectValid(result: Run): OutcomeWire {
  expect(result.failure).toBeUndefined();
  const outcome = result.outcome;
  if (outcome === undefined) throw new Error('no outcome');
  expect(outcome).toEqual({
    response: EXPECTED_RESPONSE,
    doc_types: ['org.iso.18013.5.1.mDL'],
    issuer_authentication: 'Valid',
    device_authentication: 'Valid',
    errors: {},
    warnings: {},
  });
  // Spec §4.4: the last write before `complete` is the single byte 0x02 on the state characteristic.
  const last = result.writes.at(-1);
  expect(Buffer.from(last?.data ?? []).toString('hex')).toBe('02');
  expect(result.phone.endedByReader).toBe(true);
  expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome);
  return outcome;
}

describe('full verification per mode: Valid/Valid, no errors, exactly the requested elements', () => {
  it('QR → central (phone in peripheral server mode): State 0x01, then SessionEstablishment on Client2Server', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central' });
    expectValid(result);
    expect(result.modes.map((m) => m.role)).toEqual(['central', 'peripheral']);
    expect(result.modes.every((m) => m.service_uuid === result.phone.uuid)).toBe(true);
    const [first, second] = result.writes;
    expect(first?.char).toBe(PERIPHERAL_SERVER_MODE.state.uuid);
    expect(Buffer.from(first?.data ?? []).toString('hex')).toBe('01');
    expect(second?.char).toBe(PERIPHERAL_SERVER_MODE.client2Server.uuid);
    expect(result.writes.at(-1)?.char).toBe(PERIPHERAL_SERVER_MODE.state.uuid);
  });

  it('QR → peripheral (phone in central client mode): the phone reads Ident, writes State 0x01, gets S2C notifications', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'peripheral', phone: { peripheralServer: false } });
    expectValid(result);
    expect(result.modes.map((m) => m.role)).toEqual(['peripheral']);
    expect(result.phone.identOk).toBe(true);
    expect(result.writes.slice(0, -1).every((w) => w.char === CENTRAL_CLIENT_MODE.server2Client.uuid)).toBe(true);
    expect(result.writes.at(-1)?.char).toBe(CENTRAL_CLIENT_MODE.state.uuid);
  });

  it('NFC static handover → central', async () => {
    const result = await run({ how: { kind: 'nfc', mode: 'static' }, role: 'central' });
    expectValid(result);
    expect(result.phone.handover).toMatchObject({ type: 'nfc', handoverRequest: null });
    expect(result.modes.map((m) => m.role)).toEqual(['central', 'peripheral']);
  });

  it('NFC negotiated handover → peripheral (iPhone-like: central client mode, the HR UUID)', async () => {
    const hrUuid = '0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9';
    const result = await run({
      how: { kind: 'nfc', mode: 'negotiated' },
      role: 'peripheral',
      engine: { nfc: { readerBleUuid: () => hrUuid } },
    });
    expectValid(result);
    expect(result.modes).toHaveLength(1);
    expect(result.modes[0]).toMatchObject({ role: 'peripheral', service_uuid: hrUuid });
    expect(result.phone.identOk).toBe(true);
    expect(result.phone.handover.type === 'nfc' && result.phone.handover.handoverRequest !== null).toBe(true);
  });

  it('the DeviceRequest asks for the engage namespaces with intent_to_retain false, docType mDL, version 1.0, no readerAuth', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central' });
    const { cborDecode, EmbeddedCbor } = await import('../../../../../src/qa/sim/iso/cbor.js');
    const request = cborDecode(result.phone.receivedRequest ?? new Uint8Array()) as Map<string, unknown>;
    expect(request.get('version')).toBe('1.0');
    const docRequests = request.get('docRequests') as Map<string, unknown>[];
    expect(docRequests).toHaveLength(1);
    expect([...(docRequests[0]?.keys() ?? [])]).toEqual(['itemsRequest']);
    const itemsRequest = docRequests[0]?.get('itemsRequest');
    expect(itemsRequest).toBeInstanceOf(EmbeddedCbor);
    const items = (itemsRequest as InstanceType<typeof EmbeddedCbor>).decode() as Map<string, unknown>;
    expect(items.get('docType')).toBe('org.iso.18013.5.1.mDL');
    const namespaces = items.get('nameSpaces') as Map<string, Map<string, boolean>>;
    expect(Object.fromEntries([...(namespaces.get(NS) ?? new Map<string, boolean>())])).toEqual(
      Object.fromEntries(REQUEST[NS].map((e) => [e, false])),
    );
  });
});

describe('chunking', () => {
  it.each([20, 512])('maxCharacteristicSize %i: every write fits and the flow completes', async (size) => {
    for (const role of ['central', 'peripheral'] as const) {
      const result = await run({ how: { kind: 'qr' }, role, engine: { maxCharacteristicSize: size }, phone: { chunkSize: size } });
      expectValid(result);
      const data = result.writes.filter(
        (w) => w.char === (role === 'central' ? PERIPHERAL_SERVER_MODE.client2Server.uuid : CENTRAL_CLIENT_MODE.server2Client.uuid),
      );
      expect(data.every((w) => w.data.length <= size)).toBe(true);
      expect(data.slice(0, -1).every((w) => w.data.length === size && w.data[0] === 1)).toBe(true);
      expect(data.at(-1)?.data[0]).toBe(0);
    }
  });

  it('default 182 bytes per chunk, flag included', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central' });
    const data = result.writes.filter((w) => w.char === PERIPHERAL_SERVER_MODE.client2Server.uuid);
    expect(data.length).toBeGreaterThan(0);
    expect(Math.max(...data.map((w) => w.data.length))).toBeLessThanOrEqual(182);
  });

  it('rejects a characteristic size outside 2..512', () => {
    expect(() => createIsoReaderEngineFactory({ trustedIacaCertificates: [iaca.der], maxCharacteristicSize: 1 })).toThrow(RangeError);
    expect(() => createIsoReaderEngineFactory({ trustedIacaCertificates: [iaca.der], maxCharacteristicSize: 513 })).toThrow(RangeError);
    expect(() => createIsoReaderEngineFactory({ trustedIacaCertificates: [] })).toThrow(/trusted IACA/);
  });
});

describe('verification failures the user sees', () => {
  it('untrusted IACA: issuer_authentication Invalid with the chain error', async () => {
    const foreign = await createIaca();
    const result = await run({ how: { kind: 'qr' }, role: 'central', engine: { trustedIacaCertificates: [foreign.der] } });
    const outcome = result.outcome;
    expect(outcome?.issuer_authentication).toBe('Invalid');
    expect(outcome?.device_authentication).toBe('Valid');
    expect(outcome?.errors).toEqual({
      issuer_authentication: [expect.stringContaining('Issuer certificate must be valid: no trusted issuer found')],
    });
    expect(outcome?.response).toEqual(EXPECTED_RESPONSE);
  });

  it('tampered element: digest mismatch (data_integrity), issuer_authentication Invalid', async () => {
    // family_name "Doe" (63 446f65) → "Dog" inside its IssuerSignedItem, after the holder signed.
    const result = await run({
      how: { kind: 'qr' },
      role: 'central',
      phone: { tamper: { from: Uint8Array.of(0x63, 0x44, 0x6f, 0x65), to: Uint8Array.of(0x63, 0x44, 0x6f, 0x67) } },
    });
    const outcome = result.outcome;
    expect(outcome?.issuer_authentication).toBe('Invalid');
    expect(outcome?.errors).toEqual({ data_integrity: [expect.stringMatching(/^digest mismatch for org\.iso\.18013\.5\.1\/family_name/)] });
    expect(outcome?.device_authentication).toBe('Valid'); // the issuer-signed items are outside DeviceAuthentication
  });

  it('expired credential: a validity error; the signatures stay Valid', async () => {
    const now = Date.now();
    const expired = await issueMdl(signer, {
      signed: new Date(now - 10 * DAY),
      validFrom: new Date(now - 10 * DAY),
      validUntil: new Date(now - DAY),
    });
    const result = await run({ how: { kind: 'qr' }, role: 'central', credential: expired });
    const outcome = result.outcome;
    expect(outcome?.errors).toEqual({ validity: [expect.stringContaining('The MSO must be valid at the time of verification')] });
    expect([outcome?.issuer_authentication, outcome?.device_authentication]).toEqual(['Valid', 'Valid']);
  });

  it('the verification time comes from options.now', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central', engine: { now: () => new Date(Date.now() + 400 * DAY) } });
    expect(Object.keys(result.outcome?.errors ?? {}).sort()).toEqual(['issuer_authentication', 'validity']);
  });

  it('deviceMac made with the toolkit verifies Valid (our own MAC check, ISO/IEC 18013-5 §9.1.3.5)', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'peripheral', phone: { auth: 'mac' } });
    expectValid(result);
  });

  it('a wrong deviceMac is device_authentication Invalid', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central', phone: { auth: 'wrongMac' } });
    expect(result.outcome?.device_authentication).toBe('Invalid');
    expect(result.outcome?.issuer_authentication).toBe('Valid');
    expect(result.outcome?.errors).toEqual({ device_authentication: ['deviceMac: deviceMac tag mismatch'] });
  });

  it('an element disclosed but not requested is an error and stays out of the response', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central', phone: { extraElements: ['document_number'] } });
    expect(result.outcome?.errors).toEqual({ request: ['org.iso.18013.5.1/document_number was disclosed but not requested'] });
    expect(result.outcome?.response).toEqual(EXPECTED_RESPONSE);
    expect([result.outcome?.issuer_authentication, result.outcome?.device_authentication]).toEqual(['Valid', 'Valid']);
  });

  it('a requested element the wallet does not hold is a warning', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central', namespaces: { [NS]: ['family_name', 'nationality'] } });
    expect(result.outcome?.errors).toEqual({});
    expect(result.outcome?.warnings).toEqual({ request: ['requested org.iso.18013.5.1/nationality was not disclosed'] });
    expect(result.outcome?.response).toEqual({ [NS]: { family_name: 'Doe' } });
  });

  it('age_over_NN substitution (the wallet answers age_over_20 with age_over_21) is a warning, not an error', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central', namespaces: { [NS]: ['age_over_20'] }, phone: { unnarrowed: true } });
    expect(result.outcome?.errors).toEqual({});
    expect(result.outcome?.warnings).toEqual({
      request: ['requested org.iso.18013.5.1/age_over_20 was answered with age_over_21 (age_over_NN substitution)'],
    });
    expect(result.outcome?.response).toEqual({ [NS]: { age_over_21: true } });
  });
});

describe('how a session without a response ends', () => {
  it('decline (SessionData status 20 without data): complete, Unchecked/Unchecked, a session error', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central', phone: { respond: 'decline' } });
    expect(result.outcome).toEqual({
      response: {},
      doc_types: [],
      issuer_authentication: 'Unchecked',
      device_authentication: 'Unchecked',
      errors: { session: [expect.stringContaining('status 20')] },
      warnings: {},
    });
    expect(result.phone.endedByReader).toBe(true);
  });

  it('status 10 (the wallet could not decrypt): complete with a session error', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'peripheral', phone: { respond: 'status10' } });
    expect(result.outcome?.errors).toEqual({ session: [expect.stringContaining('status 10')] });
    expect(result.outcome?.issuer_authentication).toBe('Unchecked');
  });

  it('State 0x02 from the phone before a response ends as a decline', async () => {
    const engine = engineFor();
    const phone = new TestPhone({ credential });
    await engage(engine, phone, { kind: 'qr' });
    await engine.bleConnected('peripheral');
    const actions = await engine.bleWritten(CENTRAL_CLIENT_MODE.state.uuid, Uint8Array.of(2));
    expect(actions.writes).toEqual([{ char: CENTRAL_CLIENT_MODE.state.uuid, data: Uint8Array.of(2) }]);
    expect(actions.outcome?.errors).toEqual({ session: [expect.stringContaining('State 0x02')] });
  });

  it('undecryptable data → failure', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central', phone: { respond: 'undecryptable' } });
    expect(result.outcome).toBeUndefined();
    expect(result.failure).toMatch(/does not decrypt/);
  });

  it('SessionData that is not CBOR → failure', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'central', phone: { respond: 'notCbor' } });
    expect(result.failure).toMatch(/not valid CBOR/);
  });

  it('a bad chunk flag → failure', async () => {
    const result = await run({ how: { kind: 'qr' }, role: 'peripheral', phone: { badChunkFlag: true } });
    expect(result.failure).toMatch(/invalid chunk flag 0x05/);
  });
});

describe('BLE rules of the engine', () => {
  it('Ident is served for the Ident characteristic only; other reads are empty', async () => {
    const engine = engineFor();
    const phone = new TestPhone({ credential });
    await engage(engine, phone, { kind: 'qr' });
    await engine.bleConnected('peripheral');
    expect(engine.bleReadRequest(CENTRAL_CLIENT_MODE.ident.uuid.toUpperCase())).toHaveLength(16);
    expect(engine.bleReadRequest(CENTRAL_CLIENT_MODE.state.uuid)).toEqual(new Uint8Array(0));
  });

  it('Client2Server before State 0x01 is a failure; a repeated State 0x01 sends nothing more', async () => {
    const engine = engineFor();
    const phone = new TestPhone({ credential });
    await engage(engine, phone, { kind: 'qr' });
    await engine.bleConnected('peripheral');
    expect((await engine.bleWritten(CENTRAL_CLIENT_MODE.client2Server.uuid, Uint8Array.of(0, 1))).failure).toMatch(/before State 0x01/);

    const second = engineFor();
    await engage(second, new TestPhone({ credential }), { kind: 'qr' });
    await second.bleConnected('peripheral');
    expect((await second.bleWritten(CENTRAL_CLIENT_MODE.state.uuid, Uint8Array.of(1))).writes.length).toBeGreaterThan(0);
    expect(await second.bleWritten(CENTRAL_CLIENT_MODE.state.uuid, Uint8Array.of(1))).toEqual({ writes: [] });
    expect((await second.bleWritten(CENTRAL_CLIENT_MODE.state.uuid, Uint8Array.of(7))).failure).toMatch(/invalid State value 07/);
  });

  it('a role the phone did not offer, and BLE before engagement, are failures', async () => {
    const engine = engineFor();
    expect((await engine.bleConnected('central')).failure).toMatch(/phase idle/);
    const only = engineFor();
    await engage(only, new TestPhone({ credential, peripheralServer: false }), { kind: 'qr' });
    expect((await only.bleConnected('central')).failure).toMatch(/did not offer/);
  });

  it('a QR code that is not an mdoc engagement fails with a clear reason', async () => {
    for (const text of ['https://example.com', 'mdoc:owBjMS4w']) {
      const engagement = await engineFor().qrScanned(text);
      expect(engagement.kind === 'failed' ? engagement.reason : 'modes').toMatch(/^the QR code is not a usable mdoc DeviceEngagement: /);
    }
  });

  it('dispose drops the session: Ident reads become empty, later events do nothing', async () => {
    const engine = engineFor();
    await engage(engine, new TestPhone({ credential }), { kind: 'qr' });
    await engine.bleConnected('peripheral');
    engine.dispose();
    expect(engine.bleReadRequest(CENTRAL_CLIENT_MODE.ident.uuid)).toEqual(new Uint8Array(0));
    expect(await engine.bleWritten(CENTRAL_CLIENT_MODE.state.uuid, Uint8Array.of(1))).toEqual({ writes: [] });
  });
});
