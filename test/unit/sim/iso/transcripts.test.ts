/**
 * Replays the Multipaz static and negotiated handover APDU transcripts (Multipaz `MdocNfcEngagementHelperTest.kt` @ af670c68) against
 * the toolkit from both sides: a reader written only with the toolkit's builders must emit every command
 * byte-exact, and a Type 4 Tag written only with the toolkit must give every response byte-exact.
 */
import { describe, expect, it } from 'vitest';
import {
  AID_NDEF_APPLICATION,
  FILE_ID_CAPABILITY_CONTAINER,
  Sw,
  encodeCapabilityContainer,
  encodeCommandApdu,
  encodeResponseApdu,
  handoverModeOf,
  interpretT4tCommand,
  multipazCapabilityContainer,
  ndefReadCommands,
  ndefWriteCommands,
  parseCapabilityContainer,
  parseCommandApdu,
  parseNlen,
  parseResponseApdu,
  readBinary,
  readChunkSize,
  responseOk,
  responseStatus,
  selectAid,
  selectFile,
} from '../../../../src/qa/sim/iso/apdu.js';
import type { CommandApdu, HandoverMode, ResponseApdu } from '../../../../src/qa/sim/iso/apdu.js';
import {
  LeRole,
  MULTIPAZ_NFC_CARRIER,
  buildHandoverRequest,
  buildHandoverSelect,
  parseHandoverRequest,
  parseHandoverSelect,
} from '../../../../src/qa/sim/iso/handover.js';
import { Tnf, findRecord, parseNdefMessage } from '../../../../src/qa/sim/iso/ndef.js';
import {
  MULTIPAZ_SERVICE_PARAMETER,
  TNEP_HANDOVER_SERVICE,
  buildServiceParameterMessage,
  buildServiceSelectMessage,
  buildTnepStatusMessage,
  findServiceParameter,
  parseServiceSelectMessage,
  parseTnepStatusMessage,
  tWaitMs,
} from '../../../../src/qa/sim/iso/tnep.js';
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
} from './nfc-fixtures.js';
import type { Exchange } from './nfc-fixtures.js';

const deviceEngagement = hex(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);
const readerHr = (): Uint8Array =>
  buildHandoverRequest({ ble: { leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: MULTIPAZ_BLE_UUID }, nfc: MULTIPAZ_NFC_CARRIER });

interface ReaderResult {
  readonly hs: Uint8Array;
  readonly hr?: Uint8Array;
  readonly tWait?: number;
}

/** The reader steps of Multipaz `mdocReaderNfcHandover.kt` as a generator: yields commands, receives responses. */
function* reader(hr: Uint8Array): Generator<CommandApdu, ReaderResult, ResponseApdu> {
  const ok = (response: ResponseApdu): ResponseApdu => {
    expect(response.sw).toBe(Sw.OK);
    return response;
  };
  ok(yield selectAid(AID_NDEF_APPLICATION));
  ok(yield selectFile(FILE_ID_CAPABILITY_CONTAINER));
  const cc = parseCapabilityContainer(ok(yield readBinary(0, 15)).data);
  ok(yield selectFile(cc.ndefFileId));
  const chunk = readChunkSize(cc);
  function* readMessage(): Generator<CommandApdu, Uint8Array, ResponseApdu> {
    const nlen = parseNlen(ok(yield readBinary(0, 2)).data);
    const parts: number[] = [];
    for (const command of ndefReadCommands(nlen, chunk)) parts.push(...ok(yield command).data);
    return Uint8Array.from(parts);
  }
  const initial = yield* readMessage();
  const sp = findServiceParameter(parseNdefMessage(initial));
  if (sp === undefined) return { hs: initial };
  for (const command of ndefWriteCommands(buildServiceSelectMessage())) ok(yield command);
  expect(parseTnepStatusMessage(yield* readMessage())).toBe(0);
  for (const command of ndefWriteCommands(hr)) ok(yield command);
  return { hs: yield* readMessage(), hr, tWait: tWaitMs(sp.minimumWaitingTime) };
}

/** A Type 4 Tag holding the NDEF file, built from the toolkit (what the virtual phone will do). */
function tag(mode: HandoverMode): (command: Uint8Array) => Uint8Array {
  const cc = multipazCapabilityContainer(mode);
  const withNlen = (message: Uint8Array): Uint8Array => Uint8Array.from([message.length >> 8, message.length & 0xff, ...message]);
  let ndefFile =
    mode === 'static'
      ? withNlen(
          buildHandoverSelect({
            deviceEngagement,
            ble: { leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: MULTIPAZ_BLE_UUID },
            nfc: MULTIPAZ_NFC_CARRIER,
          }),
        )
      : withNlen(buildServiceParameterMessage(MULTIPAZ_SERVICE_PARAMETER));
  let selected: 'none' | 'app' | 'cc' | 'ndef' = 'none';
  const onMessage = (message: Uint8Array): Uint8Array => {
    const records = parseNdefMessage(message);
    if (findRecord(records, Tnf.WELL_KNOWN, 'Ts') !== undefined) {
      expect(parseServiceSelectMessage(message)).toBe(TNEP_HANDOVER_SERVICE);
      return buildTnepStatusMessage(0);
    }
    const hr = parseHandoverRequest(message);
    // Multipaz's picker takes the first offered method: mdoc central client mode; the HR UUID is reused.
    expect(hr.ble?.modes.centralClient).toBe(true);
    return buildHandoverSelect({ deviceEngagement, ble: { leRole: LeRole.CENTRAL_ONLY } });
  };
  return (bytes) => {
    const command = interpretT4tCommand(parseCommandApdu(bytes));
    let response: ResponseApdu;
    switch (command.kind) {
      case 'selectAid':
        selected = toHex(command.aid) === toHex(AID_NDEF_APPLICATION) ? 'app' : 'none';
        response = selected === 'app' ? responseOk() : responseStatus(Sw.FILE_NOT_FOUND);
        break;
      case 'selectFile':
        selected = command.fileId === FILE_ID_CAPABILITY_CONTAINER ? 'cc' : command.fileId === cc.ndefFileId ? 'ndef' : selected;
        response = responseOk();
        break;
      case 'readBinary': {
        const file = selected === 'cc' ? encodeCapabilityContainer(cc) : ndefFile;
        response = responseOk(file.slice(command.offset, command.offset + command.length));
        break;
      }
      case 'updateBinary': {
        const next = new Uint8Array(Math.max(ndefFile.length, command.offset + command.data.length));
        next.set(ndefFile);
        next.set(command.data, command.offset);
        ndefFile = next;
        const nlen = parseNlen(ndefFile.subarray(0, 2));
        if (nlen > 0 && ndefFile.length >= 2 + nlen) ndefFile = withNlen(onMessage(ndefFile.slice(2, 2 + nlen)));
        response = responseOk();
        break;
      }
      case 'unsupported':
        response = responseStatus(Sw.INS_NOT_SUPPORTED);
        break;
    }
    return encodeResponseApdu(response);
  };
}

function replayReader(transcript: readonly Exchange[], hr: Uint8Array): ReaderResult {
  const run = reader(hr);
  let step = run.next();
  for (const [index, exchange] of transcript.entries()) {
    if (step.done === true) throw new Error(`reader finished before exchange ${index}`);
    expect(toHex(encodeCommandApdu(step.value)), `command ${index}`).toBe(exchange.command.toLowerCase());
    step = run.next(parseResponseApdu(hex(exchange.response)));
  }
  if (step.done !== true) throw new Error('reader wants more exchanges than the transcript has');
  return step.value;
}

function replayTag(transcript: readonly Exchange[], mode: HandoverMode): void {
  const answer = tag(mode);
  for (const [index, exchange] of transcript.entries()) {
    expect(toHex(answer(hex(exchange.command))), `response ${index}`).toBe(exchange.response.toLowerCase());
  }
}

describe('every command and response of the Multipaz transcripts parses', () => {
  it.each([
    ['static', MULTIPAZ_STATIC_TRANSCRIPT],
    ['negotiated', MULTIPAZ_NEGOTIATED_TRANSCRIPT],
  ] as const)('%s handover', (_name, transcript) => {
    const kinds: string[] = [];
    for (const exchange of transcript) {
      const command = parseCommandApdu(hex(exchange.command));
      expect(command.extended).toBe(false);
      expect(toHex(encodeCommandApdu(command))).toBe(exchange.command.toLowerCase());
      kinds.push(interpretT4tCommand(command).kind);
      const response = parseResponseApdu(hex(exchange.response));
      expect(response.sw).toBe(0x9000);
      expect(toHex(encodeResponseApdu(response))).toBe(exchange.response.toLowerCase());
    }
    expect(kinds.slice(0, 5)).toEqual(['selectAid', 'selectFile', 'readBinary', 'selectFile', 'readBinary']);
    expect(kinds).not.toContain('unsupported');
  });

  it('the static CC is read-only, the negotiated one writable', () => {
    const ccOf = (transcript: readonly Exchange[]): HandoverMode =>
      handoverModeOf(parseCapabilityContainer(parseResponseApdu(hex(transcript[2]?.response ?? '')).data));
    expect(ccOf(MULTIPAZ_STATIC_TRANSCRIPT)).toBe('static');
    expect(ccOf(MULTIPAZ_NEGOTIATED_TRANSCRIPT)).toBe('negotiated');
  });

  it('the negotiated writes carry the Ts and the 168-byte HR after their NLEN', () => {
    const writes = MULTIPAZ_NEGOTIATED_TRANSCRIPT.map((e) => interpretT4tCommand(parseCommandApdu(hex(e.command)))).filter(
      (c) => c.kind === 'updateBinary',
    );
    expect(writes).toHaveLength(2);
    const [ts, hr] = writes.map((w) => w.data);
    expect(parseServiceSelectMessage(ts?.subarray(2) ?? new Uint8Array(0))).toBe(TNEP_HANDOVER_SERVICE);
    expect(parseNlen(hr?.subarray(0, 2) ?? new Uint8Array(0))).toBe(168);
    expect(toHex(hr?.subarray(2) ?? new Uint8Array(0))).toBe(MULTIPAZ_HR_HEX);
  });
});

describe('reader side: the toolkit emits the transcript commands byte-exact', () => {
  it('static handover ends with Handover = [HS, null]', () => {
    const result = replayReader(MULTIPAZ_STATIC_TRANSCRIPT, readerHr());
    expect(toHex(result.hs)).toBe(MULTIPAZ_STATIC_HS_HEX);
    expect(result.hr).toBeUndefined();
    expect(toHex(parseHandoverSelect(result.hs).deviceEngagement)).toBe(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);
  });

  it('negotiated handover writes Ts and the HR and ends with Handover = [HS, HR]; WT 0 → t_wait 1 ms', () => {
    const result = replayReader(MULTIPAZ_NEGOTIATED_TRANSCRIPT, readerHr());
    expect(toHex(result.hs)).toBe(MULTIPAZ_NEGOTIATED_HS_HEX);
    expect(toHex(result.hr ?? new Uint8Array(0))).toBe(MULTIPAZ_HR_HEX);
    expect(result.tWait).toBe(1);
    // The mdoc chose central client mode without a UUID: the reader keeps its HR UUID (ISO 18013-5 §8.3.3.1.1.2).
    const hs = parseHandoverSelect(result.hs);
    expect(hs.ble?.uuid ?? parseHandoverRequest(result.hr ?? new Uint8Array(0)).ble?.uuid).toBe(MULTIPAZ_BLE_UUID);
  });
});

describe('tag side: the toolkit answers the transcript commands byte-exact', () => {
  it('static handover (read-only NDEF file with the HS)', () => {
    replayTag(MULTIPAZ_STATIC_TRANSCRIPT, 'static');
  });

  it('negotiated handover (Tp, then Te after Ts, then HS after HR)', () => {
    replayTag(MULTIPAZ_NEGOTIATED_TRANSCRIPT, 'negotiated');
  });
});
