/**
 * The reader engine wired into the real mock backend: `startMockBackend` with `createIsoReaderEngineFactory`,
 * a raw WebSocket client playing the kiosk (spec §4.2–4.5) and the test phone on the other side. Every
 * byte between phone and backend travels as base64 JSON through the relay protocol.
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CENTRAL_CLIENT_MODE } from '../../../../../src/qa/sim/iso/ble-uuids.js';
import { createIsoReaderEngineFactory } from '../../../../../src/qa/sim/mock-backend/reader/index.js';
import { startMockBackend, type MockBackend } from '../../../../../src/qa/sim/mock-backend/server.js';
import type { BleModeWire, OutcomeWire } from '../../../../../src/qa/sim/mock-backend/wire.js';
import { NS, PORTRAIT, TestPhone, createDocumentSigner, createIaca, issueMdl, type PhoneEvent } from './test-phone.js';

const KEY = 'reader-it-key';
const iaca = await createIaca();
const credential = await issueMdl(await createDocumentSigner(iaca));
const NAMESPACES = { [NS]: ['family_name', 'birth_date', 'portrait', 'age_over_21'] };

let backend: MockBackend | undefined;
const sockets: WebSocket[] = [];

afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await backend?.stop();
  backend = undefined;
});

type Message = Record<string, unknown> & { type: string; op?: string; params?: Record<string, unknown> };

class Kiosk {
  private readonly inbox: Message[] = [];
  private readonly waiters: ((m: Message) => void)[] = [];
  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString()) as Message;
      const waiter = this.waiters.shift();
      if (waiter) waiter(message);
      else this.inbox.push(message);
    });
  }
  next(): Promise<Message> {
    const queued = this.inbox.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no message from the backend')), 5_000);
      this.waiters.push((m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
  }
  step(op: string, fields: Record<string, unknown> = {}): void {
    this.ws.send(JSON.stringify({ type: 'step_result', op, status: 'ok', ...fields }));
  }
}

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
const bytes = (text: unknown): Uint8Array => Uint8Array.from(Buffer.from(String(text), 'base64'));

async function open(): Promise<{ kiosk: Kiosk; id: string; url: string }> {
  backend = await startMockBackend({
    apiKeys: [KEY],
    engineFactory: createIsoReaderEngineFactory({ trustedIacaCertificates: [iaca.der] }),
    closeGraceMs: 200,
  });
  const created = await fetch(`${backend.url}/sessions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } });
  const session = (await created.json()) as { id: string; client_secret: string };
  const ws = new WebSocket(
    `${backend.url.replace('http', 'ws')}/sessions/${session.id}/mdoc-proximity/ws?token=${encodeURIComponent(session.client_secret)}`,
  );
  sockets.push(ws);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { kiosk: new Kiosk(ws), id: session.id, url: backend.url };
}

/** The kiosk's BLE relay (spec §4.5) until `complete`; returns the outcome and every ble_write. */
async function relayBle(
  kiosk: Kiosk,
  phone: TestPhone,
  mode: BleModeWire,
): Promise<{ outcome: OutcomeWire; writes: { char: string; data: Uint8Array }[] }> {
  const writes: { char: string; data: Uint8Array }[] = [];
  const forward = (events: PhoneEvent[]): void => {
    for (const event of events)
      kiosk.step(mode.role === 'central' ? 'ble_notified' : 'ble_written', { char: event.char.toUpperCase(), data: b64(event.data) });
  };
  kiosk.step('ble_connected', { role: mode.role });
  if (mode.role === 'peripheral') {
    const ident = mode.characteristics.ident?.uuid ?? '';
    kiosk.ws.send(JSON.stringify({ type: 'step_result', op: 'ble_read_request', char: ident }));
    const answer = await kiosk.next();
    expect(answer).toMatchObject({ type: 'step_request', op: 'ble_read_response' });
    forward(phone.connectAsClient(bytes(answer.params?.data)));
  }
  for (;;) {
    const message = await kiosk.next();
    if (message.type === 'complete') return { outcome: message.outcome as OutcomeWire, writes };
    if (message.type !== 'step_request' || message.op !== 'ble_write') throw new Error(`unexpected ${JSON.stringify(message)}`);
    const write = { char: String(message.params?.char), data: bytes(message.params?.data) };
    writes.push(write);
    forward(await phone.fromReader(write.char, write.data));
  }
}

const EXPECTED: OutcomeWire = {
  response: {
    [NS]: { family_name: 'Doe', birth_date: '1990-04-12', portrait: Buffer.from(PORTRAIT).toString('base64'), age_over_21: true },
  },
  doc_types: ['org.iso.18013.5.1.mDL'],
  issuer_authentication: 'Valid',
  device_authentication: 'Valid',
  errors: {},
  warnings: {},
};

describe('mock backend + ISO reader engine + test phone over the relay protocol', () => {
  it('QR → central: complete with Valid/Valid and exactly the requested elements; GET /sessions/{id} agrees', async () => {
    const { kiosk, id, url } = await open();
    const phone = new TestPhone({ credential });
    kiosk.step('engage', { namespaces: NAMESPACES });
    kiosk.step('qr_scanned', { data: phone.qr() });
    const exchange = await kiosk.next();
    expect(exchange).toMatchObject({ type: 'step_request', op: 'ble_exchange' });
    const modes = exchange.params?.modes as BleModeWire[];
    expect(modes.map((m) => m.role)).toEqual(['central', 'peripheral']);
    const central = modes[0];
    if (central === undefined) throw new Error('no mode');
    const { outcome, writes } = await relayBle(kiosk, phone, central);
    expect(outcome).toEqual(EXPECTED);
    expect(Buffer.from(writes.at(-1)?.data ?? []).toString('hex')).toBe('02');
    expect(phone.endedByReader).toBe(true);
    const result = await fetch(`${url}/sessions/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(await result.json()).toMatchObject({ status: 'success', response: EXPECTED.response, errors: {}, warnings: {} });
  });

  it('NFC negotiated handover → peripheral: APDUs relayed, Ident read, complete', async () => {
    const { kiosk } = await open();
    const phone = new TestPhone({ credential, peripheralServer: false });
    const tag = phone.presentNfc('negotiated');
    kiosk.step('engage', { namespaces: NAMESPACES });
    kiosk.step('nfc_card_present');
    let message = await kiosk.next();
    let apdus = 0;
    while (message.op === 'nfc_apdu') {
      apdus++;
      kiosk.step('nfc_rapdu', { data: b64(tag(bytes(message.params?.data))) });
      message = await kiosk.next();
    }
    expect(apdus).toBe(12); // as many as Multipaz's testNegotiatedHandover transcript
    expect(message).toMatchObject({ type: 'step_request', op: 'ble_exchange' });
    const modes = message.params?.modes as BleModeWire[];
    expect(modes).toHaveLength(1);
    const peripheral = modes[0];
    if (peripheral === undefined) throw new Error('no mode');
    expect(peripheral.characteristics.ident?.uuid).toBe(CENTRAL_CLIENT_MODE.ident.uuid);
    const { outcome } = await relayBle(kiosk, phone, peripheral);
    expect(phone.identOk).toBe(true);
    expect(outcome).toEqual(EXPECTED);
  });
});
