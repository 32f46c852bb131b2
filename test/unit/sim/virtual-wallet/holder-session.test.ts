/**
 * The holder session: Annex D (decrypting the SessionEstablishment with the Annex D EDeviceKey gives the
 * DEVICE_REQUEST; our SessionTranscript equals SESSION_TRANSCRIPT_BYTES; the device cipher reproduces
 * SESSION_DATA), then the session against a toolkit reader: status 10/11, decline, consent, disclosure
 * limited to the request, signature and MAC device authentication.
 */
import { describe, expect, it } from 'vitest';
import { cborDecode, expectMap } from '../../../../src/qa/sim/iso/cbor.js';
import { p256PrivateKeyFromRaw } from '../../../../src/qa/sim/iso/cose-key.js';
import { readDeviceSigned } from '../../../../src/qa/sim/iso/device-mac.js';
import { decodeSessionData, encodeSessionData } from '../../../../src/qa/sim/iso/session-messages.js';
import { parseSessionTranscriptBytes } from '../../../../src/qa/sim/iso/session-transcript.js';
import {
  createEngagementKeys,
  getTestCredential,
  HolderSession,
  buildDeviceResponse,
  disclosedElements,
  openSessionEstablishment,
  qrDeviceEngagement,
  summarizeDeviceRequest,
  ANDROID_PROFILE,
  type ConsentDecision,
  type DeviceAuthMethod,
} from '../../../../src/qa/sim/virtual-wallet/index.js';
import { annexD, hex } from '../iso/annex-d-vectors.js';
import { MDL, NS, TestReader, encodeRequest } from './reader-fixtures.js';

describe('Annex D', () => {
  const transcript = parseSessionTranscriptBytes(annexD('SESSION_TRANSCRIPT_BYTES'));
  const eDevice = p256PrivateKeyFromRaw(annexD('EPHEMERAL_DEVICE_KEY_D'));
  const open = (): ReturnType<typeof openSessionEstablishment> =>
    openSessionEstablishment({
      message: annexD('SESSION_ESTABLISHMENT'),
      eDevicePrivateKey: eDevice,
      deviceEngagement: transcript.deviceEngagement ?? new Uint8Array(0),
      handover: transcript.handover ?? { type: 'qr' },
    });

  it('the NFC negotiated handover of the transcript, rebuilt from raw parts, is SESSION_TRANSCRIPT_BYTES', () => {
    expect(transcript.handover?.type).toBe('nfc');
    expect(hex(open().transcript.taggedBytes)).toBe(hex(annexD('SESSION_TRANSCRIPT_BYTES')));
  });

  it('decrypting the SessionEstablishment with the Annex D EDeviceKey gives DEVICE_REQUEST', () => {
    expect(hex(open().deviceRequest)).toBe(hex(annexD('DEVICE_REQUEST')));
  });

  it('the device cipher then encrypts DEVICE_RESPONSE to the data of SESSION_DATA', () => {
    const session = open();
    const expected = decodeSessionData(annexD('SESSION_DATA')).data;
    expect(hex(session.encryption.encrypt(annexD('DEVICE_RESPONSE')))).toBe(hex(expected ?? new Uint8Array(0)));
  });

  it('summarizes the Annex D request (with readerAuth)', () => {
    const [document] = summarizeDeviceRequest(annexD('DEVICE_REQUEST'));
    expect(document?.docType).toBe(MDL);
    expect(document?.readerAuth).toBe(true);
    expect(document?.namespaces[NS]).toEqual([
      'family_name',
      'document_number',
      'driving_privileges',
      'issue_date',
      'expiry_date',
      'portrait',
    ]);
  });
});

describe('HolderSession', async () => {
  const credential = await getTestCredential();
  const keys = createEngagementKeys();
  const de = qrDeviceEngagement(ANDROID_PROFILE, keys);
  const session = (options: { consent?: () => Promise<ConsentDecision>; deviceAuth?: DeviceAuthMethod } = {}): HolderSession =>
    new HolderSession({
      eDevicePrivateKey: keys.eDeviceKey,
      deviceEngagement: de,
      handover: () => ({ type: 'qr' }),
      credential,
      deviceAuth: options.deviceAuth ?? 'signature',
      consent: options.consent ?? (() => Promise.resolve('approve')),
    });

  it('answers with SessionData {data, status: 20}; only the requested elements; Valid/Valid', async () => {
    const reader = new TestReader(de, { type: 'qr' }, { [NS]: ['family_name', 'portrait', 'age_over_21', 'driving_privileges'] });
    const reply = await session().onMessage(reader.sessionEstablishment);
    expect(reply.result).toMatchObject({
      kind: 'responded',
      shared: { [NS]: ['family_name', 'portrait', 'age_over_21', 'driving_privileges'] },
      deviceAuth: 'signature',
    });
    const { sessionData, deviceResponse } = reader.open(reply.message ?? new Uint8Array(0));
    expect(sessionData.status).toBe(20);
    const verdict = await reader.verify(deviceResponse ?? new Uint8Array(0), [credential.pki.iaca.der], credential.deviceKey.publicKey);
    expect(verdict.failed).toEqual([]);
    expect(verdict.deviceValid).toBe(true);
  });

  it('MAC variant: deviceMac with EMacKey verifies (toolkit), issuer checks pass', async () => {
    const reader = new TestReader(de, { type: 'qr' }, { [NS]: ['given_name', 'birth_date'] });
    const reply = await session({ deviceAuth: 'mac' }).onMessage(reader.sessionEstablishment);
    const deviceResponse = reader.open(reply.message ?? new Uint8Array(0)).deviceResponse ?? new Uint8Array(0);
    const [document] = readDeviceSigned(deviceResponse);
    expect(document?.deviceSignature).toBeUndefined();
    expect(hex(document?.deviceMac?.subarray(0, 5) ?? new Uint8Array(0))).toBe('8443a10105'); // protected {1: 5}: HMAC 256/256 (ISO/IEC 18013-5 §9.1.3.5)
    const verdict = await reader.verify(deviceResponse, [credential.pki.iaca.der], credential.deviceKey.publicKey);
    expect(verdict).toMatchObject({ failed: [], device: 'mac', deviceValid: true });
  });

  it('decline: SessionData {status: 20} without data', async () => {
    const reader = new TestReader(de, { type: 'qr' }, { [NS]: ['family_name'] });
    const reply = await session({ consent: () => Promise.resolve('decline') }).onMessage(reader.sessionEstablishment);
    expect(hex(reply.message ?? new Uint8Array(0))).toBe('a16673746174757314'); // {"status": 20}, the Annex D SESSION_TERMINATION vector
    expect(reply.result).toMatchObject({ kind: 'declined', requested: [{ docType: MDL, namespaces: { [NS]: ['family_name'] } }] });
  });

  it('status 10 when the request does not decrypt; status 11 for bad CBOR (message or DeviceRequest)', async () => {
    const corrupted = new TestReader(de, { type: 'qr' }, { [NS]: ['family_name'] }, { corruptData: true });
    const s10 = await session().onMessage(corrupted.sessionEstablishment);
    expect(decodeSessionData(s10.message ?? new Uint8Array(0))).toEqual({ status: 10 });
    expect(s10.result).toMatchObject({ kind: 'error', status: 10 });
    const s11 = await session().onMessage(Uint8Array.of(0xa1, 0x61));
    expect(decodeSessionData(s11.message ?? new Uint8Array(0))).toEqual({ status: 11 });
    const notCbor = new TestReader(de, { type: 'qr' }, {}, { rawDeviceRequest: Uint8Array.of(0xff, 0x00) });
    const s11b = await session().onMessage(notCbor.sessionEstablishment);
    expect(s11b.result).toMatchObject({ kind: 'error', status: 11 });
  });

  it('a different Handover in the reader transcript fails decryption (status 10)', async () => {
    const reader = new TestReader(
      de,
      { type: 'nfc', handoverSelect: Uint8Array.of(0xd0, 0x00, 0x00), handoverRequest: null },
      { [NS]: ['family_name'] },
    );
    const reply = await session().onMessage(reader.sessionEstablishment);
    expect(reply.result).toMatchObject({ kind: 'error', status: 10 });
  });

  it('elements the credential lacks and other document types are left out', async () => {
    const reader = new TestReader(
      de,
      { type: 'qr' },
      {},
      {
        rawDeviceRequest: encodeRequest({ [NS]: ['family_name', 'biometric_template_face'], 'org.example.ns': ['x'] }),
      },
    );
    const reply = await session().onMessage(reader.sessionEstablishment);
    expect(reply.result).toMatchObject({ kind: 'responded', shared: { [NS]: ['family_name'] } });
    const other = new TestReader(
      de,
      { type: 'qr' },
      {},
      { rawDeviceRequest: encodeRequest({ 'org.example.ns': ['x'] }, 'org.example.doc') },
    );
    const otherReply = await session().onMessage(other.sessionEstablishment);
    const response = expectMap(
      cborDecode(other.open(otherReply.message ?? new Uint8Array(0)).deviceResponse ?? new Uint8Array(0)),
      'DeviceResponse',
    );
    expect(response.get('documents')).toBeUndefined();
    expect(response.get('documentErrors')).toEqual([new Map([['org.example.doc', 0]])]);
    expect(response.get('status')).toBe(0);
  });

  it('a reader SessionData {status: 20} while consent is pending ends the session ("terminated"); later messages are ignored', async () => {
    let approve: (decision: ConsentDecision) => void = () => undefined;
    const holder = session({ consent: () => new Promise<ConsentDecision>((resolve) => (approve = resolve)) });
    const reader = new TestReader(de, { type: 'qr' }, { [NS]: ['family_name'] });
    const first = holder.onMessage(reader.sessionEstablishment);
    await new Promise((resolve) => setImmediate(resolve));
    const end = await holder.onMessage(encodeSessionData({ status: 20 }));
    expect(end.result).toEqual({ kind: 'terminated', status: 20 });
    approve('approve');
    expect(await first).toEqual({ message: undefined, result: undefined });
    expect(holder.over).toBe(true);
    expect(await holder.onMessage(reader.sessionEstablishment)).toEqual({ message: undefined, result: undefined });
  });

  it('buildDeviceResponse / disclosedElements agree; the age_over_NN rule of @owf/mdoc answers with the element itself', async () => {
    const reader = new TestReader(de, { type: 'qr' }, { [NS]: ['age_over_18', 'age_over_60'] });
    const response = await buildDeviceResponse({
      credential,
      requested: [{ docType: MDL, namespaces: { [NS]: ['age_over_18', 'age_over_60'] }, readerAuth: false }],
      transcript: reader.transcript,
      eReaderKey: reader.eReader.publicKey,
      deviceAuth: 'signature',
    });
    expect(disclosedElements(response)).toEqual([{ docType: MDL, namespaces: { [NS]: ['age_over_18', 'age_over_60'] } }]);
  });
});
