/**
 * The virtual phone end to end against a toolkit reader on the virtual radio: QR and NFC engagement, both
 * BLE modes (mdoc peripheral server: the reader is central; mdoc central client: the reader is peripheral
 * and serves Ident), DeviceResponse verified against the phone's IACA (Valid/Valid, only the requested
 * elements), and every behaviour with what it looks like on the wire. Nothing is left running after stop().
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CENTRAL_CLIENT_MODE } from '../../../../src/qa/sim/iso/ble-uuids.js';
import { decodeDeviceEngagement, deviceEngagementFromQr } from '../../../../src/qa/sim/iso/device-engagement.js';
import { decodeSessionData, encodeSessionData } from '../../../../src/qa/sim/iso/session-messages.js';
import { VirtualRadio, type RadioDevice } from '../../../../src/qa/sim/radio/virtual-radio.js';
import {
  VirtualPhone,
  getTestCredential,
  type PhoneBehaviour,
  type PhoneProfileName,
  type PresentationOutcome,
} from '../../../../src/qa/sim/virtual-wallet/index.js';
import { NS, TestReader, nfcEngage, readerCentral, readerPeripheral, until } from './reader-fixtures.js';

const REQUEST = { [NS]: ['family_name', 'given_name', 'birth_date', 'portrait', 'age_over_21'] };
const READER_UUID = '5ad7ab3c-0a6e-4b8e-9a63-3c1d0e6f7a21';

let radio: VirtualRadio;
let reader: RadioDevice;
const phones: VirtualPhone[] = [];

beforeEach(() => {
  radio = new VirtualRadio();
  reader = radio.addDevice({ name: 'reader' });
});

afterEach(async () => {
  for (const phone of phones.splice(0)) await phone.stop();
  radio.shutdown();
});

async function phoneWith(profile: PhoneProfileName, behaviour: PhoneBehaviour = {}, endTimeoutMs?: number): Promise<VirtualPhone> {
  const phone = await VirtualPhone.create({ profile, radio, behaviour, ...(endTimeoutMs === undefined ? {} : { endTimeoutMs }) });
  phones.push(phone);
  return phone;
}

/** Sends the SessionEstablishment, waits for the phone's message, decrypts and verifies it, then ends (0x02). */
async function exchange(
  phone: VirtualPhone,
  session: TestReader,
  transfer: { send(m: Uint8Array): Promise<void>; end(): Promise<void>; readonly messages: Uint8Array[] },
): Promise<{ outcome: PresentationOutcome; verdict: Awaited<ReturnType<TestReader['verify']>>; status: number | undefined }> {
  await transfer.send(session.sessionEstablishment);
  await until(() => transfer.messages.length > 0, 5_000, "the phone's answer");
  const { sessionData, deviceResponse } = session.open(transfer.messages[0] ?? new Uint8Array(0));
  const verdict = await session.verify(
    deviceResponse ?? new Uint8Array(0),
    [phone.credential.pki.iaca.der],
    phone.credential.deviceKey.publicKey,
  );
  await transfer.end();
  return { outcome: await phone.outcome, verdict, status: sessionData.status };
}

describe('QR engagement', () => {
  it('android → reader central (mdoc peripheral server mode): Valid/Valid, only the requested elements, S2C chunks sized by the MTU', async () => {
    const phone = await phoneWith('android');
    const qr = phone.presentQr();
    expect(qr).toMatch(/^mdoc:[A-Za-z0-9_-]+$/);
    const de = decodeDeviceEngagement(deviceEngagementFromQr(qr));
    expect(de.version).toBe('1.0');
    expect(de.ble).toMatchObject({
      peripheralServerMode: true,
      centralClientMode: true,
      peripheralServerModeUuid: phone.presentation?.serviceUuid,
      centralClientModeUuid: phone.presentation?.serviceUuid,
    });
    const session = TestReader.fromQr(qr, REQUEST);
    const transfer = await readerCentral(reader, de.ble?.peripheralServerModeUuid ?? '');
    const { outcome, verdict, status } = await exchange(phone, session, transfer);
    expect(status).toBe(20);
    expect(verdict).toMatchObject({ failed: [], device: 'signature', deviceValid: true });
    expect(outcome).toEqual({
      kind: 'shared',
      engagement: 'qr',
      bleMode: 'peripheralServer',
      requested: [{ docType: 'org.iso.18013.5.1.mDL', namespaces: REQUEST, readerAuth: false }],
      shared: REQUEST,
      deviceAuth: 'signature',
      ending: 'state_end',
    });
    // Reader MTU 247, phone 517 → ATT MTU 247 → 244-byte characteristic values (MTU − 3, ISO/IEC 18013-5 §8.3.3.1.1.6).
    expect(transfer.link.mtu).toBe(247);
    expect(transfer.chunks.length).toBeGreaterThan(2);
    expect(transfer.chunks.slice(0, -1).every((c) => c.length === 244 && c[0] === 0x01)).toBe(true);
    expect(transfer.chunks.at(-1)?.[0]).toBe(0x00);
    await until(() => transfer.link.disconnectInfo !== undefined, 2_000, 'the phone closing the link');
  });

  it('android → reader peripheral (mdoc central client mode): the phone finds the reader, not itself; checks Ident; Valid/Valid', async () => {
    const phone = await phoneWith('android');
    const qr = phone.presentQr();
    const session = TestReader.fromQr(qr, REQUEST);
    const server = await readerPeripheral(reader, session.de.ble?.centralClientModeUuid ?? '', session.ident);
    await server.started;
    expect(server.events.slice(0, 5)).toEqual(['connect', 'read:00000008', 'subscribe:00000005', 'subscribe:00000007', 'state:01']);
    const { outcome, verdict } = await exchange(phone, session, server);
    expect(verdict).toMatchObject({ failed: [], deviceValid: true });
    expect(outcome).toMatchObject({ kind: 'shared', bleMode: 'centralClient', shared: REQUEST, ending: 'state_end' });
    // The phone (central, MTU 517) and the reader (247): writes of 244 bytes to Client2Server.
    expect(server.chunks.slice(0, -1).every((c) => c.length === 244)).toBe(true);
    await server.close();
  });

  it('iphone: DE 1.1 with keys 5/6, central client mode only (UUID in key 11), 182-byte writes', async () => {
    const phone = await phoneWith('iphone');
    const qr = phone.presentQr();
    const de = decodeDeviceEngagement(deviceEngagementFromQr(qr));
    expect(de.version).toBe('1.1');
    expect(de.originInfos).toEqual([]);
    expect(de.capabilities).toEqual(
      new Map([
        [3, true],
        [4, true],
      ]),
    );
    expect(de.ble).toEqual({
      type: 'ble',
      peripheralServerMode: false,
      centralClientMode: true,
      centralClientModeUuid: phone.presentation?.serviceUuid,
    });
    expect(phone.device.peripheral.advertising).toBeUndefined();
    const session = TestReader.fromQr(qr, REQUEST);
    const server = await readerPeripheral(reader, de.ble?.centralClientModeUuid ?? '', session.ident);
    const { outcome, verdict } = await exchange(phone, session, server);
    expect(verdict.failed).toEqual([]);
    expect(outcome).toMatchObject({ kind: 'shared', bleMode: 'centralClient' });
    expect(server.chunks.slice(0, -1).every((c) => c.length === 182)).toBe(true);
    await server.close();
  });
});

describe('NFC engagement', () => {
  it('android static handover → reader central: Handover [HS, null] in the transcript, Valid/Valid', async () => {
    const phone = await phoneWith('android');
    const engagement = nfcEngage(phone.tag(), READER_UUID);
    expect(engagement.kind).toBe('static');
    const session = TestReader.fromNfc(engagement, REQUEST);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    const { outcome, verdict } = await exchange(phone, session, transfer);
    expect(verdict).toMatchObject({ failed: [], deviceValid: true });
    expect(outcome).toMatchObject({ kind: 'shared', engagement: 'nfc_static', bleMode: 'peripheralServer', shared: REQUEST });
  });

  it('iphone negotiated handover → reader peripheral on the HR UUID: Handover [HS, HR], Valid/Valid', async () => {
    const phone = await phoneWith('iphone');
    const engagement = nfcEngage(phone.tag(), READER_UUID);
    expect(engagement.kind).toBe('negotiated');
    const session = TestReader.fromNfc(engagement, REQUEST);
    const server = await readerPeripheral(reader, READER_UUID, session.ident);
    const { outcome, verdict } = await exchange(phone, session, server);
    expect(verdict).toMatchObject({ failed: [], deviceValid: true });
    expect(outcome).toMatchObject({ kind: 'shared', engagement: 'nfc_negotiated', bleMode: 'centralClient', shared: REQUEST });
    await server.close();
  });
});

describe('behaviours', () => {
  it('decline: SessionData {status: 20} without data; outcome declined', async () => {
    const phone = await phoneWith('android', { consent: 'decline' });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await transfer.send(session.sessionEstablishment);
    await until(() => transfer.messages.length > 0);
    expect(decodeSessionData(transfer.messages[0] ?? new Uint8Array(0))).toEqual({ status: 20 });
    await transfer.end();
    expect(await phone.outcome).toMatchObject({ kind: 'declined', ending: 'state_end', requested: [{ namespaces: REQUEST }] });
  });

  it('consent delay: the answer comes after the delay', async () => {
    const phone = await phoneWith('android', { consentDelayMs: 150 });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    const sent = performance.now();
    await transfer.send(session.sessionEstablishment);
    await until(() => transfer.messages.length > 0);
    expect(performance.now() - sent).toBeGreaterThanOrEqual(140);
    await transfer.end();
    expect(await phone.outcome).toMatchObject({ kind: 'shared' });
  });

  it('BLE drop after k chunks (peripheral server): the reader gets k chunks, then the link goes down', async () => {
    const phone = await phoneWith('android', { bleDropAfterChunks: 2 });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await transfer.send(session.sessionEstablishment);
    await until(() => transfer.disconnects.length > 0);
    expect(transfer.chunks).toHaveLength(2);
    expect(transfer.chunks.every((c) => c[0] === 0x01)).toBe(true);
    expect(transfer.messages).toEqual([]);
    expect(await phone.outcome).toMatchObject({ kind: 'aborted', reason: 'ble_drop', bleMode: 'peripheralServer' });
  });

  it('BLE drop after k chunks (central client): k C2S writes, then the phone disconnects', async () => {
    const phone = await phoneWith('iphone', { bleDropAfterChunks: 3 });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const server = await readerPeripheral(reader, phone.presentation?.serviceUuid ?? '', session.ident);
    await server.started;
    await server.send(session.sessionEstablishment);
    await until(() => server.disconnects.length > 0);
    expect(server.chunks).toHaveLength(3);
    expect(await phone.outcome).toMatchObject({ kind: 'aborted', reason: 'ble_drop', bleMode: 'centralClient' });
    await server.close();
  });

  it('wrong Ident: the phone reads Ident, then disconnects without writing State 0x01', async () => {
    const phone = await phoneWith('iphone', { wrongIdent: true });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const server = await readerPeripheral(reader, phone.presentation?.serviceUuid ?? '', session.ident);
    expect(await phone.outcome).toMatchObject({ kind: 'aborted', reason: 'ident_mismatch', bleMode: 'centralClient' });
    await until(() => server.events.includes('disconnect'));
    expect(server.events).toEqual(['connect', 'read:00000008', 'disconnect']);
    await server.close();
  });

  it('expired credential: only the MSO validity check fails', async () => {
    const phone = await phoneWith('android', { credential: 'expired' });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    const { outcome, verdict } = await exchange(phone, session, transfer);
    expect(verdict.failed).toEqual(['The MSO must be valid at the time of verification']);
    expect(verdict.deviceValid).toBe(true);
    expect(outcome.kind).toBe('shared');
  });

  it('tampered credential: only the family_name digest fails', async () => {
    const phone = await phoneWith('android', { credential: 'tampered' });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    const { verdict } = await exchange(phone, session, transfer);
    expect(verdict.failed).toEqual([
      `The calculated digest for ${NS}/family_name attribute must match the digest in the issuerAuth element`,
    ]);
  });

  it('MAC device authentication: deviceMac instead of deviceSignature, verified with EMacKey', async () => {
    const phone = await phoneWith('iphone', { deviceAuth: 'mac' });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const server = await readerPeripheral(reader, phone.presentation?.serviceUuid ?? '', session.ident);
    const { outcome, verdict } = await exchange(phone, session, server);
    expect(verdict).toMatchObject({ failed: [], device: 'mac', deviceValid: true });
    expect(outcome).toMatchObject({ kind: 'shared', deviceAuth: 'mac' });
    await server.close();
  });

  it('a request that does not decrypt: SessionData {status: 10}; outcome session_encryption_error once the reader ends', async () => {
    const phone = await phoneWith('android');
    const qr = phone.presentQr();
    const session = new TestReader(deviceEngagementFromQr(qr), { type: 'qr' }, REQUEST, { corruptData: true });
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await transfer.send(session.sessionEstablishment);
    await until(() => transfer.messages.length > 0);
    expect(decodeSessionData(transfer.messages[0] ?? new Uint8Array(0))).toEqual({ status: 10 });
    await transfer.end();
    expect(await phone.outcome).toMatchObject({ kind: 'aborted', reason: 'session_encryption_error' });
  });

  it('a message that is not CBOR: SessionData {status: 11}', async () => {
    const phone = await phoneWith('android');
    phone.presentQr();
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await transfer.send(Uint8Array.of(0xff, 0xff, 0xff));
    await until(() => transfer.messages.length > 0);
    expect(decodeSessionData(transfer.messages[0] ?? new Uint8Array(0))).toEqual({ status: 11 });
    await transfer.close();
    expect(await phone.outcome).toMatchObject({ kind: 'aborted', reason: 'cbor_decoding_error' });
  });

  it('the reader ends before its request (State 0x02, or SessionData status 20 during consent)', async () => {
    const phone = await phoneWith('android');
    phone.presentQr();
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await transfer.end();
    expect(await phone.outcome).toMatchObject({ kind: 'aborted', reason: 'reader_terminated' });

    phone.setBehaviour({ consentDelayMs: 1_000 });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const second = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await second.send(session.sessionEstablishment);
    await second.send(encodeSessionData({ status: 20 }));
    const outcome = await phone.outcome;
    expect(outcome).toMatchObject({ kind: 'aborted', reason: 'reader_terminated' });
    expect(second.messages).toEqual([]);
  });

  it('after the answer, SessionData {status: 20} from the reader also ends the session', async () => {
    const phone = await phoneWith('android');
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await transfer.send(session.sessionEstablishment);
    await until(() => transfer.messages.length > 0);
    await transfer.send(encodeSessionData({ status: 20 }));
    expect(await phone.outcome).toMatchObject({ kind: 'shared', ending: 'session_termination' });
  });

  it('without the reader ending, the presentation ends after endTimeoutMs ("timeout")', async () => {
    const phone = await phoneWith('android', {}, 50);
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await transfer.send(session.sessionEstablishment);
    expect(await phone.outcome).toMatchObject({ kind: 'shared', ending: 'timeout' });
    await until(() => transfer.disconnects.length > 0);
  });

  it('a reader that disconnects after State 0x01 but before the request: ble_disconnected', async () => {
    const phone = await phoneWith('android');
    phone.presentQr();
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await transfer.close();
    expect(await phone.outcome).toMatchObject({ kind: 'aborted', reason: 'ble_disconnected' });
  });

  it('before State 0x01 a reader may leave and come back (the phone keeps advertising)', async () => {
    const phone = await phoneWith('android');
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const first = await readerCentral(reader, phone.presentation?.serviceUuid ?? '', { skipStart: true });
    await first.close();
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    const { outcome } = await exchange(phone, session, transfer);
    expect(outcome.kind).toBe('shared');
  });
});

describe('lifecycle', () => {
  it('a new presentation supersedes the previous one; each has fresh keys and UUID', async () => {
    const phone = await phoneWith('android');
    const first = phone.presentQr();
    const firstOutcome = phone.outcome;
    const firstUuid = phone.presentation?.serviceUuid;
    const second = phone.presentQr();
    expect(second).not.toBe(first);
    expect(phone.presentation?.serviceUuid).not.toBe(firstUuid);
    expect(await firstOutcome).toMatchObject({ kind: 'aborted', reason: 'superseded' });
    const session = TestReader.fromQr(second, REQUEST);
    await until(() => phone.device.peripheral.advertising !== undefined);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    const { outcome } = await exchange(phone, session, transfer);
    expect(outcome.kind).toBe('shared');
  });

  it('stop(): outcome "stopped", no advertising, scan, link or timer left; the phone cannot present again', async () => {
    const before = new Set(process.getActiveResourcesInfo().filter((r) => r === 'Timeout'));
    const phone = await phoneWith('android', { consentDelayMs: 10_000 });
    const session = TestReader.fromQr(phone.presentQr(), REQUEST);
    const transfer = await readerCentral(reader, phone.presentation?.serviceUuid ?? '');
    await transfer.send(session.sessionEstablishment);
    await new Promise((resolve) => setTimeout(resolve, 20)); // consent timer running
    await phone.stop();
    expect(await phone.outcome).toMatchObject({ kind: 'aborted', reason: 'stopped' });
    await until(() => transfer.disconnects.length > 0);
    expect(phone.device.peripheral.advertising).toBeUndefined();
    expect(phone.device.peripheral.connections).toEqual([]);
    expect(phone.device.peripheral.services).toEqual([]);
    expect(phone.device.central.links).toEqual([]);
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).toBeLessThanOrEqual(before.size);
    expect(() => phone.presentQr()).toThrow(/stopped/);
    // The phone's central-client scan was stopped too: a reader advertising its UUID now sees no connection.
    const late = await readerPeripheral(radio.addDevice({ name: 'late-reader' }), phone.presentation?.serviceUuid ?? '', session.ident);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(late.events).toEqual([]);
    await late.close();
  });

  it('uses the given credential', async () => {
    const credential = await getTestCredential({ validity: 'expired' });
    const phone = await VirtualPhone.create({ profile: 'android', radio, credential });
    phones.push(phone);
    expect(phone.credential).toBe(credential);
    expect(CENTRAL_CLIENT_MODE.ident.uuid).toBe('00000008-a123-48ce-896b-4c76973373e6');
  });
});
