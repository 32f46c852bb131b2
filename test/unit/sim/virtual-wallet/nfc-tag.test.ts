/**
 * The virtual phone's Type 4 Tag: byte-exact against the published Multipaz static and negotiated handover
 * transcripts (Multipaz `MdocNfcEngagementHelperTest.kt`) when given the transcripts' DeviceEngagement and
 * UUID; the phone's own profiles (android static, iphone negotiated with Apple's CC/Tp and an HS that is not
 * ready at first) driven by the mock backend's reader driver; T4T edge cases; field drops.
 */
import { describe, expect, it } from 'vitest';
import {
  APPLE_WALLET_CAPABILITY_CONTAINER,
  AID_MDOC_DATA_TRANSFER,
  encodeCommandApdu,
  multipazCapabilityContainer,
  ndefWriteCommands,
  parseResponseApdu,
  readBinary,
  selectAid,
  selectFile,
  AID_NDEF_APPLICATION,
  FILE_ID_CAPABILITY_CONTAINER,
  type CommandApdu,
} from '../../../../src/qa/sim/iso/apdu.js';
import { decodeDeviceEngagement } from '../../../../src/qa/sim/iso/device-engagement.js';
import { LeRole, MULTIPAZ_NFC_CARRIER, buildHandoverRequest, parseHandoverSelect } from '../../../../src/qa/sim/iso/handover.js';
import { parseNdefMessage, recordTypeText } from '../../../../src/qa/sim/iso/ndef.js';
import { buildServiceSelectMessage, parseTnepStatusMessage } from '../../../../src/qa/sim/iso/tnep.js';
import { NfcHandoverDriver, offeredFromHandover, type HandoverResult } from '../../../../src/qa/sim/mock-backend/reader/index.js';
import { VirtualRadio } from '../../../../src/qa/sim/radio/virtual-radio.js';
import {
  ANDROID_PROFILE,
  HandoverTag,
  NfcFieldLostError,
  TNEP_STATUS_PROTOCOL_ERROR,
  TagSw,
  VirtualPhone,
  answerHandoverRequest,
  staticHandoverSelect,
  type CompletedHandover,
  type PhoneProfile,
  type VirtualNfcTag,
} from '../../../../src/qa/sim/virtual-wallet/index.js';
import {
  MULTIPAZ_BLE_UUID,
  MULTIPAZ_DEVICE_ENGAGEMENT_HEX,
  MULTIPAZ_HR_HEX,
  MULTIPAZ_NEGOTIATED_HS_HEX,
  MULTIPAZ_NEGOTIATED_TRANSCRIPT,
  MULTIPAZ_STATIC_HS_HEX,
  MULTIPAZ_STATIC_TRANSCRIPT,
  hex,
  toHex,
  type Exchange,
} from '../iso/nfc-fixtures.js';

const multipazDe = hex(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);
/** Multipaz's phone in negotiated mode: Multipaz CC (writable) and Tp, HS at once. */
const MULTIPAZ_NEGOTIATED: PhoneProfile = {
  ...ANDROID_PROFILE,
  name: 'multipaz-negotiated',
  handover: 'negotiated',
  capabilityContainer: multipazCapabilityContainer('negotiated'),
};

function replay(tag: VirtualNfcTag, transcript: readonly Exchange[]): void {
  for (const [index, exchange] of transcript.entries()) {
    expect(toHex(tag.processApdu(hex(exchange.command))), `response ${index}`).toBe(exchange.response.toLowerCase());
  }
}

const apdu = (command: CommandApdu): Uint8Array => encodeCommandApdu(command);
const sw = (response: Uint8Array): number => parseResponseApdu(response).sw;

/** Runs the mock backend's NFC reader driver against a tag (waits skipped); returns the result and the APDU count. */
function driveBackendReader(
  tag: VirtualNfcTag,
  options: { readerBleUuid?: () => string } = {},
): { result: HandoverResult; commands: string[] } {
  const driver = new NfcHandoverDriver({ ...options, lockedPollDelayMs: 0 });
  const commands: string[] = [];
  let step = driver.start();
  for (let guard = 0; guard < 200; guard++) {
    if (step.kind === 'done') return { result: step.result, commands };
    if (step.kind === 'failed') throw new Error(step.reason);
    commands.push(toHex(step.apdu));
    let response: Uint8Array;
    try {
      response = tag.processApdu(step.apdu);
    } catch (error) {
      if (!(error instanceof NfcFieldLostError)) throw error;
      tag.fieldOff();
      tag.fieldOn(); // re-tapped: the relay resends the failed APDU (spec §3)
      response = tag.processApdu(step.apdu);
    }
    step = driver.respond(response);
  }
  throw new Error('the handover did not finish');
}

describe('byte-exact against the Multipaz transcripts (MdocNfcEngagementHelperTest)', () => {
  it('static handover: read-only CC, HS with DE + BLE OOB (LE role 03, UUID) + NFC carrier', () => {
    const completed: CompletedHandover[] = [];
    const built = staticHandoverSelect(ANDROID_PROFILE, multipazDe, MULTIPAZ_BLE_UUID);
    expect(built.ble).toEqual({ peripheralServerUuid: MULTIPAZ_BLE_UUID, centralClientUuid: MULTIPAZ_BLE_UUID });
    const tag = new HandoverTag({
      mode: 'static',
      capabilityContainer: ANDROID_PROFILE.capabilityContainer,
      handoverSelect: built.handoverSelect,
      onHandoverComplete: (h) => completed.push(h),
    });
    replay(tag, MULTIPAZ_STATIC_TRANSCRIPT);
    expect(completed).toHaveLength(1);
    expect(toHex(completed[0]?.handoverSelect ?? new Uint8Array(0))).toBe(MULTIPAZ_STATIC_HS_HEX);
    expect(completed[0]?.handoverRequest).toBeNull();
  });

  it('negotiated handover: writable CC, Tp, Ts → Te 00, HR → HS (central client mode, no UUID)', () => {
    const completed: CompletedHandover[] = [];
    const answers: ReturnType<typeof answerHandoverRequest>[] = [];
    const tag = new HandoverTag({
      mode: 'negotiated',
      capabilityContainer: MULTIPAZ_NEGOTIATED.capabilityContainer,
      serviceParameter: MULTIPAZ_NEGOTIATED.serviceParameter,
      onHandoverRequest: (hr) => {
        const answer = answerHandoverRequest(MULTIPAZ_NEGOTIATED, multipazDe, '11111111-2222-3333-4444-555555555555', hr);
        answers.push(answer);
        return answer.handoverSelect;
      },
      onHandoverComplete: (h) => completed.push(h),
    });
    replay(tag, MULTIPAZ_NEGOTIATED_TRANSCRIPT);
    expect(answers.map((a) => [a.mode, a.ble])).toEqual([['centralClient', { centralClientUuid: MULTIPAZ_BLE_UUID }]]);
    expect(completed).toHaveLength(1);
    expect(toHex(completed[0]?.handoverSelect ?? new Uint8Array(0))).toBe(MULTIPAZ_NEGOTIATED_HS_HEX);
    expect(toHex(completed[0]?.handoverRequest ?? new Uint8Array(0))).toBe(MULTIPAZ_HR_HEX);
  });
});

describe('the phone profiles against the mock backend reader driver', () => {
  const radio = new VirtualRadio();

  it('android: static handover; HS LE role 03 with the presentation UUID, NFC carrier; DE 1.0 with the EDeviceKey', async () => {
    const phone = await VirtualPhone.create({ profile: 'android', radio });
    try {
      const tag = phone.tag();
      const { result, commands } = driveBackendReader(tag);
      expect(commands).toHaveLength(6);
      expect(commands[2]).toBe('00b000000f');
      expect(result.kind).toBe('static');
      expect(result.handoverRequest).toBeNull();
      const info = phone.presentation;
      expect(result.ble.leRole).toBe(LeRole.BOTH_CENTRAL_PREFERRED);
      expect(result.ble.uuid).toBe(info?.serviceUuid);
      expect(result.ble.modes).toMatchObject({ peripheralServer: true, centralClient: true });
      expect(parseHandoverSelect(result.handoverSelect).nfc?.maxCommandDataLength).toBe(0xffff);
      const de = decodeDeviceEngagement(result.deviceEngagement);
      expect(de.version).toBe('1.0');
      expect(de.retrievalMethods).toEqual([]);
      expect(de.eDeviceKeyBytes).toEqual(info?.eDeviceKeyBytes);
      expect(info?.handover).toEqual({ type: 'nfc', handoverSelect: result.handoverSelect, handoverRequest: null });
      // BLE started once the HS was read: the phone advertises its UUID (both modes: it also scans).
      await new Promise((resolve) => setImmediate(resolve));
      expect(phone.device.peripheral.advertising?.serviceUuids).toEqual([info?.serviceUuid.replaceAll('-', '')]);
      expect(info?.ble).toEqual({ peripheralServerUuid: info?.serviceUuid, centralClientUuid: info?.serviceUuid });
    } finally {
      await phone.stop();
    }
    expect(phone.device.peripheral.advertising).toBeUndefined();
  });

  it('iphone: Apple CC and Tp, Ts → Te, HR → "not ready" once, then the Apple-ordered HS (LE role 01, no UUID), DE 1.1 with keys 5/6', async () => {
    const phone = await VirtualPhone.create({ profile: 'iphone', radio });
    try {
      const tag = phone.tag();
      const readerUuid = 'c0ffee00-1234-4abc-8def-0123456789ab';
      const { result, commands } = driveBackendReader(tag, { readerBleUuid: () => readerUuid });
      expect(result.kind).toBe('negotiated');
      expect(commands[2]).toBe('00b000000f');
      // HR write, NLEN read answered 0000, NLEN read again, then the HS.
      const hrWrite = commands.findIndex((c) => c.startsWith('00d60000') && c.length > 100);
      expect(commands.slice(hrWrite + 1, hrWrite + 3)).toEqual(['00b0000002', '00b0000002']);
      const records = parseNdefMessage(result.handoverSelect).map(recordTypeText);
      expect(records).toEqual(['Hs', 'application/vnd.bluetooth.le.oob', 'iso.org:18013:deviceengagement']);
      expect(result.ble.leRole).toBe(LeRole.CENTRAL_ONLY);
      expect(result.ble.uuid).toBeUndefined();
      expect(offeredFromHandover(result.ble, result.readerBleUuid)).toEqual({ centralClient: readerUuid });
      const de = decodeDeviceEngagement(result.deviceEngagement);
      expect(de.version).toBe('1.1');
      expect(de.originInfos).toEqual([]);
      expect(de.capabilities).toEqual(
        new Map([
          [3, true],
          [4, true],
        ]),
      );
      expect(phone.presentation?.handover).toEqual({
        type: 'nfc',
        handoverSelect: result.handoverSelect,
        handoverRequest: result.handoverRequest,
      });
      expect(phone.presentation?.ble).toEqual({ centralClientUuid: readerUuid });
    } finally {
      await phone.stop();
    }
  });

  it('iphone with an HR that offers only mdoc peripheral server mode: HS selects no carrier, presentation aborts', async () => {
    const phone = await VirtualPhone.create({ profile: 'iphone', radio });
    try {
      const tag = phone.tag();
      const hr = buildHandoverRequest({ ble: { leRole: LeRole.CENTRAL_ONLY, uuid: MULTIPAZ_BLE_UUID }, nfc: MULTIPAZ_NFC_CARRIER });
      const ok = (bytes: Uint8Array): Uint8Array => {
        const r = parseResponseApdu(tag.processApdu(bytes));
        expect(r.sw).toBe(0x9000);
        return r.data;
      };
      ok(apdu(selectAid(AID_NDEF_APPLICATION)));
      ok(apdu(selectFile(0xe104)));
      for (const c of ndefWriteCommands(buildServiceSelectMessage())) ok(apdu(c));
      for (const c of ndefWriteCommands(hr)) ok(apdu(c));
      expect(ok(apdu(readBinary(0, 2)))).toEqual(Uint8Array.of(0, 0)); // not ready
      const nlen = ok(apdu(readBinary(0, 2)));
      const n = ((nlen[0] ?? 0) << 8) | (nlen[1] ?? 0);
      const hs = ok(apdu(readBinary(2, n)));
      expect(parseHandoverSelect(hs).alternativeCarriers).toEqual([]);
      await expect(phone.outcome).resolves.toMatchObject({ kind: 'aborted', reason: 'no_common_transport', engagement: 'nfc_negotiated' });
    } finally {
      await phone.stop();
    }
  });

  it('a field drop at APDU n: no answer, the tag restarts on the new field, the driver recovers', async () => {
    const phone = await VirtualPhone.create({ profile: 'iphone', radio, behaviour: { nfcFieldDropAtApdu: [5, 12] } });
    try {
      const { result } = driveBackendReader(phone.tag());
      expect(result.kind).toBe('negotiated');
      expect(phone.presentation?.handover?.type).toBe('nfc');
    } finally {
      await phone.stop();
    }
  });
});

describe('Type 4 Tag details', () => {
  const staticTag = (): HandoverTag =>
    new HandoverTag({
      mode: 'static',
      capabilityContainer: ANDROID_PROFILE.capabilityContainer,
      handoverSelect: staticHandoverSelect(ANDROID_PROFILE, multipazDe, MULTIPAZ_BLE_UUID).handoverSelect,
    });
  const negotiatedTag = (): HandoverTag =>
    new HandoverTag({
      mode: 'negotiated',
      capabilityContainer: APPLE_WALLET_CAPABILITY_CONTAINER,
      onHandoverRequest: (hr) => answerHandoverRequest(MULTIPAZ_NEGOTIATED, multipazDe, MULTIPAZ_BLE_UUID, hr).handoverSelect,
    });

  it('status words: other AIDs 6A82, files before the application 6A82, reads without a file 6986, writes to a static tag 6982, bad APDU 6700, unknown INS 6D00', () => {
    const tag = staticTag();
    expect(sw(tag.processApdu(apdu(selectAid(AID_MDOC_DATA_TRANSFER))))).toBe(0x6a82);
    expect(sw(tag.processApdu(apdu(selectFile(FILE_ID_CAPABILITY_CONTAINER))))).toBe(0x6a82);
    expect(sw(tag.processApdu(apdu(readBinary(0, 2))))).toBe(TagSw.NO_CURRENT_EF);
    expect(sw(tag.processApdu(apdu(selectAid(AID_NDEF_APPLICATION))))).toBe(0x9000);
    expect(sw(tag.processApdu(apdu(selectFile(0x1234))))).toBe(0x6a82);
    expect(sw(tag.processApdu(apdu(selectFile(0xe104))))).toBe(0x9000);
    expect(sw(tag.processApdu(Uint8Array.of(0x00, 0xd6, 0x00, 0x00, 0x02, 0x00, 0x00)))).toBe(TagSw.SECURITY_STATUS_NOT_SATISFIED);
    expect(sw(tag.processApdu(apdu(readBinary(0x7000, 2))))).toBe(TagSw.WRONG_P1P2);
    expect(sw(tag.processApdu(Uint8Array.of(0x00)))).toBe(TagSw.WRONG_LENGTH);
    expect(sw(tag.processApdu(Uint8Array.of(0x00, 0xca, 0x00, 0x00, 0x00)))).toBe(0x6d00);
    expect(tag.apduCount).toBe(10);
  });

  it('TNEP: an HR before the Ts, or a Ts for another service, gets a Te protocol error', () => {
    const tag = negotiatedTag();
    const read = (): Uint8Array => {
      const nlen = parseResponseApdu(tag.processApdu(apdu(readBinary(0, 2)))).data;
      return parseResponseApdu(tag.processApdu(apdu(readBinary(2, ((nlen[0] ?? 0) << 8) | (nlen[1] ?? 0))))).data;
    };
    tag.processApdu(apdu(selectAid(AID_NDEF_APPLICATION)));
    tag.processApdu(apdu(selectFile(0xe104)));
    for (const c of ndefWriteCommands(hex(MULTIPAZ_HR_HEX))) tag.processApdu(apdu(c));
    expect(parseTnepStatusMessage(read())).toBe(TNEP_STATUS_PROTOCOL_ERROR);
    for (const c of ndefWriteCommands(buildServiceSelectMessage('urn:nfc:sn:other'))) tag.processApdu(apdu(c));
    expect(parseTnepStatusMessage(read())).toBe(TNEP_STATUS_PROTOCOL_ERROR);
  });

  it('TNEP writes in the T4T §7.5.5 form (0000, data pieces, NLEN) work too', () => {
    const tag = negotiatedTag();
    tag.processApdu(apdu(selectAid(AID_NDEF_APPLICATION)));
    tag.processApdu(apdu(selectFile(0xe104)));
    const write = (message: Uint8Array): void => {
      const commands = ndefWriteCommands(message, 10);
      expect(commands.length).toBeGreaterThan(2);
      for (const c of commands) expect(sw(tag.processApdu(apdu(c)))).toBe(0x9000);
    };
    const read = (): Uint8Array => {
      const nlen = parseResponseApdu(tag.processApdu(apdu(readBinary(0, 2)))).data;
      return parseResponseApdu(tag.processApdu(apdu(readBinary(2, ((nlen[0] ?? 0) << 8) | (nlen[1] ?? 0))))).data;
    };
    write(buildServiceSelectMessage());
    expect(parseTnepStatusMessage(read())).toBe(0);
    write(hex(MULTIPAZ_HR_HEX));
    expect(toHex(read())).toBe(MULTIPAZ_NEGOTIATED_HS_HEX);
  });

  it('a field drop throws NfcFieldLostError for that APDU only and resets the selection', () => {
    const tag = new HandoverTag({
      mode: 'static',
      capabilityContainer: ANDROID_PROFILE.capabilityContainer,
      handoverSelect: staticHandoverSelect(ANDROID_PROFILE, multipazDe, MULTIPAZ_BLE_UUID).handoverSelect,
      fieldDropAtApdu: [3],
    });
    expect(sw(tag.processApdu(apdu(selectAid(AID_NDEF_APPLICATION))))).toBe(0x9000);
    expect(sw(tag.processApdu(apdu(selectFile(FILE_ID_CAPABILITY_CONTAINER))))).toBe(0x9000);
    expect(() => tag.processApdu(apdu(readBinary(0, 15)))).toThrow(NfcFieldLostError);
    expect(sw(tag.processApdu(apdu(readBinary(0, 15))))).toBe(TagSw.NO_CURRENT_EF);
    tag.fieldOn();
    replay(tag, MULTIPAZ_STATIC_TRANSCRIPT);
  });
});
