/**
 * Issue 13, the two handover defects of the mock backend's reader:
 *
 * 1. A Tp one byte shorter than the TNEP layout, exactly as isomdl's holder writes it
 *    (spruceid/isomdl @ fcb49d15ad9d54afa028a12183ee7fab1e46a5dc, src/definitions/device_engagement/nfc/ndef_handover.rs,
 *    `generate_tp_ndef()`: payload 10 13 "urn:nfc:sn:handover" 00 0F FF FF — four bytes after the name where
 *    TNEP has five) and as isomdl's reader accepts it (ndef_handover_reader.rs `detect_tp_service()` reads
 *    only the name and the WT byte; apdu_handover.rs test `roundtrip_negotiated_handover`). It used to throw
 *    in the Tp parser and abort the negotiated handover.
 * 2. The reader's Handover Request offered an NFC carrier although the relay carries data over BLE only; a
 *    phone picking NFC ended the session with no clear reason. The HR now offers BLE only, and an HS that
 *    selects no usable carrier (NFC only, or nothing) ends the session with the named failure
 *    "no usable carrier".
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CapabilityContainer } from '../../../../../src/qa/sim/iso/apdu.js';
import { encodeCapabilityContainer } from '../../../../../src/qa/sim/iso/apdu.js';
import {
  BLE_CARRIER_ID,
  LeRole,
  MULTIPAZ_NFC_CARRIER,
  RTD_HANDOVER_SELECT,
  bleCarrierRecord,
  buildHandoverSelect,
  deviceEngagementRecord,
  encodeHandoverPayload,
  nfcCarrierRecord,
  parseHandoverRequest,
} from '../../../../../src/qa/sim/iso/handover.js';
import { Tnf, encodeNdefMessage, ndefRecord, parseNdefMessage } from '../../../../../src/qa/sim/iso/ndef.js';
import { findServiceParameter, parseServiceParameterPayload, tWaitMs } from '../../../../../src/qa/sim/iso/tnep.js';
import { createIsoReaderEngineFactory } from '../../../../../src/qa/sim/mock-backend/reader/index.js';
import { NO_USABLE_CARRIER, NfcHandoverDriver, type HandoverStep } from '../../../../../src/qa/sim/mock-backend/reader/nfc-handover.js';
import { startMockBackend, type MockBackend } from '../../../../../src/qa/sim/mock-backend/server.js';
import { MULTIPAZ_BLE_UUID, MULTIPAZ_DEVICE_ENGAGEMENT_HEX, MULTIPAZ_NEGOTIATED_HS_HEX, hex, toHex } from '../../iso/nfc-fixtures.js';
import { rawTag, type RawTag } from './t4t-tag.js';

const SERVICE_NAME_HEX = toHex(new TextEncoder().encode('urn:nfc:sn:handover'));
/** isomdl's holder Tp payload (ndef_handover.rs `generate_tp_ndef()`, commit above): 4 bytes after the name. */
const ISOMDL_TP_PAYLOAD_HEX = '1013' + SERVICE_NAME_HEX + '000fffff';
/** The same as the NDEF message its holder serves: short record, payload length 0x19. */
const ISOMDL_TP_MESSAGE_HEX = 'd1021954' + '70' + ISOMDL_TP_PAYLOAD_HEX;
/**
 * isomdl's holder CC for negotiated handover (apdu_handover.rs `CC_FILE_TEMPLATE`/`cc_file(true)`): MLe = MLc =
 * NFC_MAX_PAYLOAD_SIZE + 10 = 263, max NDEF file = 253 (ndef_handover.rs `NFC_MAX_PAYLOAD_SIZE = 255 - 2`).
 */
const ISOMDL_NEGOTIATED_CC: CapabilityContainer = {
  mappingVersion: 0x20,
  maxResponseDataSize: 263,
  maxCommandDataSize: 263,
  ndefFileId: 0xe104,
  maxNdefFileSize: 253,
  readAccess: 0x00,
  writeAccess: 0x00,
};
const MULTIPAZ_NEGOTIATED_CC_HEX = '000f207fff7fff0406e1047fff0000';
const MULTIPAZ_TP_MESSAGE_HEX = 'd1021a5470101375726e3a6e66633a736e3a68616e646f76657200000fffff';

const de = hex(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);

interface Run {
  readonly commands: string[];
  readonly delays: number[];
  readonly end: HandoverStep;
}

function run(tag: RawTag): Run {
  const driver = new NfcHandoverDriver({ readerBleUuid: () => MULTIPAZ_BLE_UUID });
  const commands: string[] = [];
  const delays: number[] = [];
  let step = driver.start();
  while (step.kind === 'command' && commands.length < 200) {
    commands.push(toHex(step.apdu));
    delays.push(step.delayMs);
    step = driver.respond(tag.answer(step.apdu));
  }
  return { commands, delays, end: step };
}

describe('defect 1: a Tp one byte short (isomdl holder) is tolerated', () => {
  it('the parser keeps the fields it can place, as isomdl reads them (WT = the byte after the comm mode)', () => {
    const sp = parseServiceParameterPayload(hex(ISOMDL_TP_PAYLOAD_HEX));
    expect(sp).toEqual({
      tnepVersion: 0x10,
      serviceName: 'urn:nfc:sn:handover',
      communicationMode: 0x00,
      minimumWaitingTime: 0x0f,
      maxWaitingTimeExtensions: 0xff,
    });
    expect(sp.maxNdefMessageSize).toBeUndefined();
    expect(findServiceParameter(parseNdefMessage(hex(ISOMDL_TP_MESSAGE_HEX)))?.serviceName).toBe('urn:nfc:sn:handover');
  });

  it('still rejects a Tp that is longer than the layout', () => {
    expect(() => parseServiceParameterPayload(hex(ISOMDL_TP_PAYLOAD_HEX + 'ffff'))).toThrow(/unexpected trailing byte/);
  });

  it('the reader completes a negotiated handover against isomdl-holder bytes (its CC and Tp), waiting t_wait from WT 0x0F', () => {
    const tag = rawTag({
      cc: encodeCapabilityContainer(ISOMDL_NEGOTIATED_CC),
      initial: hex(ISOMDL_TP_MESSAGE_HEX),
      answerHr: () => hex(MULTIPAZ_NEGOTIATED_HS_HEX),
    });
    const trace = run(tag);
    if (trace.end.kind !== 'done') throw new Error(`handover failed: ${trace.end.kind === 'failed' ? trace.end.reason : 'unfinished'}`);
    expect(trace.end.result.kind).toBe('negotiated');
    expect(toHex(trace.end.result.handoverSelect)).toBe(MULTIPAZ_NEGOTIATED_HS_HEX);
    // NLEN reads right after the Ts and HR writes wait t_wait(0x0F) = ceil(2^(15/4 − 1)) = 7 ms.
    expect(tWaitMs(0x0f)).toBe(7);
    const afterWrites = trace.commands.flatMap((c, i) =>
      c === '00b0000002' && trace.commands[i - 1]?.startsWith('00d6') === true ? [trace.delays[i]] : [],
    );
    expect(afterWrites).toEqual([7, 7]);
  });
});

function negotiatedTag(hs: Uint8Array): RawTag {
  return rawTag({ cc: hex(MULTIPAZ_NEGOTIATED_CC_HEX), initial: hex(MULTIPAZ_TP_MESSAGE_HEX), answerHr: () => hs });
}

const hsRecord = (carrierRefs: readonly string[]): ReturnType<typeof ndefRecord> =>
  ndefRecord(
    Tnf.WELL_KNOWN,
    RTD_HANDOVER_SELECT,
    encodeHandoverPayload({
      alternativeCarriers: carrierRefs.map((ref) => ({
        carrierPowerState: 1,
        carrierDataReference: ref,
        auxiliaryDataReferences: ['mdoc'],
      })),
    }),
  );

/** HS variants that select nothing the kiosk can carry. */
const UNUSABLE: readonly { readonly name: string; readonly hs: Uint8Array; readonly why: RegExp }[] = [
  // What Multipaz's holder answers when its picker takes the NFC carrier: ac "nfc" + DE + NFC record.
  {
    name: 'NFC only',
    hs: buildHandoverSelect({ deviceEngagement: de, nfc: MULTIPAZ_NFC_CARRIER }),
    why: /selects NFC \(iso\.org:18013:nfc\) only/,
  },
  // CH 1.5: an Hs payload of the version byte alone selects no carrier (the virtual phone's "nothing in common").
  { name: 'no carrier', hs: encodeNdefMessage([hsRecord([]), deviceEngagementRecord(de)]), why: /selects no carrier/ },
  // An ac for NFC with a stray, unselected BLE record: BLE was not selected, so it must not be used.
  {
    name: 'NFC selected, BLE record present but not selected',
    hs: encodeNdefMessage([
      hsRecord(['nfc']),
      deviceEngagementRecord(de),
      bleCarrierRecord({ leRole: LeRole.PERIPHERAL_ONLY, uuid: MULTIPAZ_BLE_UUID }),
      nfcCarrierRecord(MULTIPAZ_NFC_CARRIER),
    ]),
    why: /selects NFC \(iso\.org:18013:nfc\) only/,
  },
];

describe('defect 2: the HR offers BLE only; an HS selecting nothing usable fails with a named reason', () => {
  it('the Handover Request offers exactly one carrier, BLE ("0"), and no NFC carrier record', () => {
    const tag = negotiatedTag(hex(MULTIPAZ_NEGOTIATED_HS_HEX));
    const trace = run(tag);
    if (trace.end.kind !== 'done') throw new Error('handover failed');
    const hr = parseHandoverRequest(trace.end.result.handoverRequest ?? new Uint8Array(0));
    expect(hr.alternativeCarriers.map((ac) => ac.carrierDataReference)).toEqual([BLE_CARRIER_ID]);
    expect(hr.nfc).toBeUndefined();
    expect(hr.ble).toMatchObject({ leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: MULTIPAZ_BLE_UUID });
    // What the tag received is what the driver reports as the HR (the SessionTranscript hashes it, ISO/IEC 18013-5 §9.1.5.1).
    expect(tag.written.map(toHex)[1]).toBe(toHex(trace.end.result.handoverRequest ?? new Uint8Array(0)));
  });

  it.each(UNUSABLE)('negotiated HS with $name → failed: no usable carrier', ({ hs, why }) => {
    const trace = run(negotiatedTag(hs));
    expect(trace.end.kind).toBe('failed');
    const reason = trace.end.kind === 'failed' ? trace.end.reason : '';
    expect(reason).toContain(`NFC handover: ${NO_USABLE_CARRIER}:`);
    expect(reason).toMatch(why);
  });

  it('static HS selecting NFC only → failed: no usable carrier', () => {
    const staticCc = '000f207fff7fff0406e1047fff00ff';
    const trace = run(rawTag({ cc: hex(staticCc), initial: buildHandoverSelect({ deviceEngagement: de, nfc: MULTIPAZ_NFC_CARRIER }) }));
    expect(trace.end).toMatchObject({ kind: 'failed', reason: expect.stringContaining(NO_USABLE_CARRIER) as unknown });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The session over the relay protocol: the backend ends it with `error`, whose text names the failure.

let backend: MockBackend | undefined;
const sockets: WebSocket[] = [];

afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await backend?.stop();
  backend = undefined;
});

type Message = { readonly type: string; readonly op?: string; readonly message?: string; readonly params?: { readonly data?: string } };

async function openSession(): Promise<{ next: () => Promise<Message>; step: (op: string, fields?: Record<string, unknown>) => void }> {
  const key = 'defects-key';
  backend = await startMockBackend({
    apiKeys: [key],
    // Never reached: the session ends before any verification. Any bytes do as a trust anchor.
    engineFactory: createIsoReaderEngineFactory({ trustedIacaCertificates: [Uint8Array.of(0x30, 0x00)], delay: () => Promise.resolve() }),
    closeGraceMs: 200,
  });
  const created = await fetch(`${backend.url}/sessions`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
  const session = (await created.json()) as { id: string; client_secret: string };
  const ws = new WebSocket(
    `${backend.url.replace('http', 'ws')}/sessions/${session.id}/mdoc-proximity/ws?token=${encodeURIComponent(session.client_secret)}`,
  );
  sockets.push(ws);
  const inbox: Message[] = [];
  const waiters: ((m: Message) => void)[] = [];
  ws.on('message', (data: Buffer) => {
    const message = JSON.parse(data.toString()) as Message;
    const waiter = waiters.shift();
    if (waiter) waiter(message);
    else inbox.push(message);
  });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return {
    next: () => {
      const queued = inbox.shift();
      if (queued) return Promise.resolve(queued);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no message from the backend')), 5_000);
        waiters.push((m) => {
          clearTimeout(timer);
          resolve(m);
        });
      });
    },
    step: (op, fields = {}) => ws.send(JSON.stringify({ type: 'step_result', op, status: 'ok', ...fields })),
  };
}

describe('defect 2 over the relay protocol', () => {
  it('a phone answering the HR with NFC only: the backend sends error "reader: NFC handover: no usable carrier: …", no ble_exchange', async () => {
    const first = UNUSABLE[0];
    if (first === undefined) throw new Error('no case');
    const tag = negotiatedTag(first.hs);
    const kiosk = await openSession();
    kiosk.step('engage', { namespaces: { 'org.iso.18013.5.1': ['family_name'] } });
    kiosk.step('nfc_card_present');
    let message = await kiosk.next();
    while (message.op === 'nfc_apdu') {
      const response = tag.answer(Uint8Array.from(Buffer.from(message.params?.data ?? '', 'base64')));
      kiosk.step('nfc_rapdu', { data: Buffer.from(response).toString('base64') });
      message = await kiosk.next();
    }
    expect(message.type).toBe('error');
    expect(message.message).toMatch(new RegExp(`^reader: NFC handover: ${NO_USABLE_CARRIER}: the Handover Select selects NFC`));
  });
});
