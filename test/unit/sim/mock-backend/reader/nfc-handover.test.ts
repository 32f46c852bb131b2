/**
 * The reader's NFC handover driver against the published Multipaz transcripts (`MdocNfcEngagementHelperTest.kt`
 * `testStaticHandover` / `testNegotiatedHandover`, byte-exact, both directions), an Apple-Wallet-like
 * negotiated tag (Apple's CC and Tp from isomdl's `drive_apple_to_hr_ack()`: WT 0x14, HS not ready at first),
 * the T4T write rule for long messages, and failure responses.
 */
import { describe, expect, it } from 'vitest';
import {
  APPLE_WALLET_CAPABILITY_CONTAINER,
  AID_NDEF_APPLICATION,
  FILE_ID_CAPABILITY_CONTAINER,
  Sw,
  encodeCapabilityContainer,
  encodeResponseApdu,
  interpretT4tCommand,
  multipazCapabilityContainer,
  parseCommandApdu,
  parseNlen,
  responseOk,
  responseStatus,
  type CapabilityContainer,
} from '../../../../../src/qa/sim/iso/apdu.js';
import { bytesEqual } from '../../../../../src/qa/sim/iso/cbor.js';
import { LeRole, buildHandoverRequest, buildHandoverSelect, parseHandoverRequest } from '../../../../../src/qa/sim/iso/handover.js';
import { Tnf, findRecord, parseNdefMessage } from '../../../../../src/qa/sim/iso/ndef.js';
import {
  APPLE_WALLET_SERVICE_PARAMETER,
  MULTIPAZ_SERVICE_PARAMETER,
  buildServiceParameterMessage,
  buildTnepStatusMessage,
  type ServiceParameter,
} from '../../../../../src/qa/sim/iso/tnep.js';
import {
  NfcHandoverDriver,
  type HandoverResult,
  type HandoverStep,
  type NfcHandoverOptions,
} from '../../../../../src/qa/sim/mock-backend/reader/nfc-handover.js';
import {
  APPLE_HS_DE_OFFSET,
  APPLE_HS_HEX,
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
} from '../../iso/nfc-fixtures.js';

const driver = (options: NfcHandoverOptions = {}): NfcHandoverDriver =>
  new NfcHandoverDriver({ readerBleUuid: () => MULTIPAZ_BLE_UUID, ...options });

interface Trace {
  readonly commands: string[];
  readonly delays: number[];
  readonly end: HandoverStep;
}

/** Runs the driver against a responder; collects commands (hex) and the delay before each. */
function drive(d: NfcHandoverDriver, answer: (command: Uint8Array, index: number) => Uint8Array, limit = 500): Trace {
  const commands: string[] = [];
  const delays: number[] = [];
  let step = d.start();
  while (step.kind === 'command' && commands.length < limit) {
    commands.push(toHex(step.apdu));
    delays.push(step.delayMs);
    step = d.respond(answer(step.apdu, commands.length - 1));
  }
  return { commands, delays, end: step };
}

/** Our HR offers BLE only (issue 13), so the HR write of the Multipaz negotiated transcript is ours, not Multipaz's. */
const OUR_HR_HEX = toHex(buildHandoverRequest({ ble: { leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: MULTIPAZ_BLE_UUID } }));
const HR_WRITE_INDEX = 9;
const ourHrWrite = (): string =>
  toHex(Uint8Array.of(0x00, 0xd6, 0x00, 0x00, OUR_HR_HEX.length / 2 + 2, 0x00, OUR_HR_HEX.length / 2)) + OUR_HR_HEX;

function replay(transcript: readonly Exchange[], options: NfcHandoverOptions = {}): Trace {
  return drive(driver(options), (command, index) => {
    const exchange = transcript[index];
    if (exchange === undefined) throw new Error(`the driver sent command ${index} beyond the transcript`);
    const expected =
      transcript === MULTIPAZ_NEGOTIATED_TRANSCRIPT && index === HR_WRITE_INDEX ? ourHrWrite() : exchange.command.toLowerCase();
    expect(toHex(command), `command ${index}`).toBe(expected);
    return hex(exchange.response);
  });
}

function done(trace: Trace): HandoverResult {
  if (trace.end.kind !== 'done')
    throw new Error(`handover did not finish: ${trace.end.kind === 'failed' ? trace.end.reason : 'still running'}`);
  return trace.end.result;
}

function failed(trace: Trace): string {
  if (trace.end.kind !== 'failed') throw new Error(`expected a failure, got ${trace.end.kind}`);
  return trace.end.reason;
}

describe('the Multipaz transcripts, byte-exact', () => {
  it('static handover: six commands, Handover = [HS, null], the raw DeviceEngagement, the HS BLE carrier', () => {
    const trace = replay(MULTIPAZ_STATIC_TRANSCRIPT);
    expect(trace.commands).toHaveLength(MULTIPAZ_STATIC_TRANSCRIPT.length);
    expect(trace.delays.every((d) => d === 0)).toBe(true);
    const result = done(trace);
    expect(result.kind).toBe('static');
    expect(toHex(result.handoverSelect)).toBe(MULTIPAZ_STATIC_HS_HEX);
    expect(result.handoverRequest).toBeNull();
    expect(toHex(result.deviceEngagement)).toBe(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);
    expect(result.ble).toMatchObject({
      leRole: LeRole.BOTH_CENTRAL_PREFERRED,
      uuid: MULTIPAZ_BLE_UUID,
      modes: { peripheralServer: true, centralClient: true },
    });
    expect(result.readerBleUuid).toBeUndefined();
  });

  it('negotiated handover: Ts, Te, our BLE-only HR (Multipaz wrote 168 bytes with NFC), HS; waits t_wait (WT 0 → 1 ms) before each read after a write', () => {
    const trace = replay(MULTIPAZ_NEGOTIATED_TRANSCRIPT);
    expect(trace.commands).toHaveLength(MULTIPAZ_NEGOTIATED_TRANSCRIPT.length);
    // Reads of NLEN right after the Ts write (index 7) and the HR write (index 10) wait t_wait.
    expect(trace.delays).toEqual([0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0]);
    const result = done(trace);
    expect(result.kind).toBe('negotiated');
    expect(toHex(result.handoverSelect)).toBe(MULTIPAZ_NEGOTIATED_HS_HEX);
    expect(toHex(result.handoverRequest ?? new Uint8Array())).toBe(OUR_HR_HEX);
    expect(toHex(result.deviceEngagement)).toBe(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);
    // The mdoc picked central client mode without a UUID: ours from the HR applies (ISO/IEC 18013-5 §8.3.3.1.1.2).
    expect(result.ble).toMatchObject({ leRole: LeRole.CENTRAL_ONLY, modes: { peripheralServer: false, centralClient: true } });
    expect(result.ble.uuid).toBeUndefined();
    expect(result.readerBleUuid).toBe(MULTIPAZ_BLE_UUID);
  });

  it('the HR offers BLE for both modes with our UUID and no NFC carrier: the relay carries BLE only (issue 13)', () => {
    const result = done(replay(MULTIPAZ_NEGOTIATED_TRANSCRIPT));
    const hr = parseHandoverRequest(result.handoverRequest ?? new Uint8Array());
    expect(hr.ble).toMatchObject({ leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: MULTIPAZ_BLE_UUID });
    expect(hr.alternativeCarriers.map((ac) => ac.carrierDataReference)).toEqual(['0']);
    expect(hr.nfc).toBeUndefined();
    // Apart from the NFC carrier, the layout is Multipaz's HR (`generateHandoverRequestMessage()`).
    expect(OUR_HR_HEX.length).toBeLessThan(MULTIPAZ_HR_HEX.length);
    expect(toHex(hr.readerEngagement ?? new Uint8Array())).toBe('a10063312e30');
  });

  it('a fresh UUID per driver unless injected', () => {
    expect(new NfcHandoverDriver().readerBleUuid).not.toBe(new NfcHandoverDriver().readerBleUuid);
    expect(new NfcHandoverDriver().readerBleUuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// A configurable Type 4 Tag for the other cases

interface TagOptions {
  readonly cc?: CapabilityContainer;
  readonly tp?: ServiceParameter;
  /** The HS to answer the HR with (negotiated) or to hold (static). */
  readonly hs: Uint8Array;
  /** NLEN reads answered 0 after the HR write before the HS appears (Apple ACKs early: isomdl `apple_wallet_hs_polls_then_done`). */
  readonly hsNotReadyReads?: number;
  readonly teStatus?: number;
  /** Overrides the response of the n-th command (0-based). */
  readonly override?: (index: number, command: Uint8Array) => Uint8Array | undefined;
}

interface Tag {
  answer(command: Uint8Array, index: number): Uint8Array;
  readonly writes: Uint8Array[];
  readonly received: Uint8Array[];
}

function tag(options: TagOptions): Tag {
  const negotiated = options.tp !== undefined;
  const cc = options.cc ?? multipazCapabilityContainer(negotiated ? 'negotiated' : 'static');
  const withNlen = (message: Uint8Array): Uint8Array => Uint8Array.from([message.length >> 8, message.length & 0xff, ...message]);
  let file = withNlen(options.tp === undefined ? options.hs : buildServiceParameterMessage(options.tp));
  let notReady = 0;
  let selected = 'none';
  const writes: Uint8Array[] = [];
  const received: Uint8Array[] = [];
  const answer = (bytes: Uint8Array, index: number): Uint8Array => {
    const overridden = options.override?.(index, bytes);
    if (overridden !== undefined) return overridden;
    const command = interpretT4tCommand(parseCommandApdu(bytes));
    switch (command.kind) {
      case 'selectAid':
        selected = bytesEqual(command.aid, AID_NDEF_APPLICATION) ? 'app' : 'none';
        return encodeResponseApdu(selected === 'app' ? responseOk() : responseStatus(Sw.FILE_NOT_FOUND));
      case 'selectFile':
        selected = command.fileId === FILE_ID_CAPABILITY_CONTAINER ? 'cc' : 'ndef';
        return encodeResponseApdu(responseOk());
      case 'readBinary': {
        if (selected === 'cc')
          return encodeResponseApdu(responseOk(encodeCapabilityContainer(cc).slice(command.offset, command.offset + command.length)));
        if (command.offset === 0 && notReady > 0) {
          notReady--;
          return encodeResponseApdu(responseOk(Uint8Array.of(0, 0)));
        }
        return encodeResponseApdu(responseOk(file.slice(command.offset, command.offset + command.length)));
      }
      case 'updateBinary': {
        writes.push(bytes);
        const next = new Uint8Array(Math.max(file.length, command.offset + command.data.length));
        next.set(file);
        next.set(command.data, command.offset);
        file = next;
        const nlen = parseNlen(file.subarray(0, 2));
        if (nlen > 0 && file.length >= 2 + nlen) {
          const message = file.slice(2, 2 + nlen);
          received.push(message);
          if (findRecord(parseNdefMessage(message), Tnf.WELL_KNOWN, 'Ts') !== undefined)
            file = withNlen(buildTnepStatusMessage(options.teStatus ?? 0));
          else {
            file = withNlen(options.hs);
            notReady = options.hsNotReadyReads ?? 0;
          }
        }
        return encodeResponseApdu(responseOk());
      }
      case 'unsupported':
        return encodeResponseApdu(responseStatus(Sw.INS_NOT_SUPPORTED));
    }
  };
  return { answer, writes, received };
}

describe('Apple-Wallet-like negotiated handover (Apple Wallet captures in isomdl)', () => {
  it('CC MLe 0x400, WT 0x14 → t_wait 16 ms; NLEN 0 after the HR is polled; the Apple HS and its 1.1 DE verbatim', () => {
    const appleHs = hex(APPLE_HS_HEX);
    const t = tag({ cc: APPLE_WALLET_CAPABILITY_CONTAINER, tp: APPLE_WALLET_SERVICE_PARAMETER, hs: appleHs, hsNotReadyReads: 3 });
    const trace = drive(driver(), (c, i) => t.answer(c, i));
    const result = done(trace);
    expect(toHex(result.handoverSelect)).toBe(APPLE_HS_HEX.toLowerCase());
    expect(toHex(result.deviceEngagement)).toBe(toHex(appleHs.subarray(APPLE_HS_DE_OFFSET)));
    expect(result.ble).toMatchObject({ leRole: LeRole.CENTRAL_ONLY, modes: { centralClient: true, peripheralServer: false } });
    const nlenReads = trace.commands.map((c, i) => [c, trace.delays[i]] as const).filter(([c]) => c === '00b0000002');
    // initial, Te, then HS: 3 not-ready polls + the real one, each after t_wait.
    expect(nlenReads.map(([, d]) => d)).toEqual([0, 16, 16, 16, 16, 16]);
  });

  it('gives up when NLEN stays 0 (bounded polling, isomdl MAX_NO_PROGRESS_POLLS)', () => {
    const t = tag({ tp: MULTIPAZ_SERVICE_PARAMETER, hs: hex(MULTIPAZ_NEGOTIATED_HS_HEX), hsNotReadyReads: 1_000 });
    const trace = drive(driver({ emptyPolls: 5 }), (c, i) => t.answer(c, i));
    expect(failed(trace)).toMatch(/Handover Select: NLEN still 0 after 6 reads/);
  });
});

describe('T4T write rule for messages of 254 bytes or more (NFC Forum T4T §7.5.5)', () => {
  it('with MLc 0x40 the HR goes as 0000, 64-byte pieces from offset 2, then the real NLEN; the tag reassembles it', () => {
    const cc: CapabilityContainer = { ...multipazCapabilityContainer('negotiated'), maxCommandDataSize: 0x40 };
    const t = tag({ cc, tp: MULTIPAZ_SERVICE_PARAMETER, hs: hex(MULTIPAZ_NEGOTIATED_HS_HEX) });
    const result = done(drive(driver(), (c, i) => t.answer(c, i)));
    const hrWrites = t.writes.slice(1).map(toHex); // the first write is the 27-byte Ts, in one piece
    expect(hrWrites[0]).toBe('00d60000020000');
    expect(hrWrites.slice(1, -1).map((w) => w.slice(4, 8))).toEqual(['0002', '0042']); // offsets 2, 66 (the BLE-only HR is 123 bytes)
    expect(hrWrites.at(-1)).toBe('00d6000002007b');
    expect(toHex(t.received[1] ?? new Uint8Array())).toBe(OUR_HR_HEX);
    expect(toHex(result.handoverRequest ?? new Uint8Array())).toBe(OUR_HR_HEX);
  });
});

describe('failure responses', () => {
  const staticHs = hex(MULTIPAZ_STATIC_HS_HEX);

  it('a locked phone (SELECT AID → 6A82) is polled, bounded', () => {
    let locked = 2;
    const t = tag({ hs: staticHs, override: (i) => (i < 10 && locked-- > 0 ? hex('6A82') : undefined) });
    const trace = drive(driver({ lockedPollDelayMs: 50 }), (c, i) => t.answer(c, i));
    expect(done(trace).kind).toBe('static');
    expect(trace.commands.slice(0, 3)).toEqual(['00a4040007d2760000850101', '00a4040007d2760000850101', '00a4040007d2760000850101']);
    expect(trace.delays.slice(0, 4)).toEqual([0, 50, 50, 0]);

    const never = drive(driver({ lockedPolls: 3 }), () => hex('6A82'));
    expect(failed(never)).toBe(
      'NFC handover: SELECT NDEF application (D2760000850101) still answered 6a82 after 4 attempts: the phone is locked or has no mdoc engagement',
    );
  });

  it('status words other than 9000 fail with the command and the status word', () => {
    const at = (index: number, sw: string): string => {
      const t = tag({ hs: staticHs });
      return failed(drive(driver({ maxRestarts: 0 }), (c, i) => (i === index ? hex(sw) : t.answer(c, i))));
    };
    expect(at(0, '6D00')).toBe('NFC handover: SELECT NDEF application (D2760000850101) failed with status 6d00');
    expect(at(1, '6A82')).toBe('NFC handover: SELECT capability container (E103) failed with status 6a82');
    expect(at(2, '6982')).toBe('NFC handover: READ BINARY capability container failed with status 6982');
    expect(at(4, '6F00')).toBe('NFC handover: READ BINARY NLEN (initial NDEF message) failed with status 6f00');
  });

  it('after a re-tap the resent APDU fails; the driver restarts from SELECT AID and completes', () => {
    const t = tag({ hs: staticHs });
    // The phone lost its state at command 5 (the message read): it answers 6986 (no current EF) once.
    const trace = drive(driver(), (c, i) => (i === 5 ? hex('6986') : t.answer(c, i)));
    expect(done(trace).kind).toBe('static');
    expect(trace.commands[6]).toBe('00a4040007d2760000850101');
    const nlenRead = '00b0000002';
    const tooMany = drive(driver({ maxRestarts: 1 }), (c, i) => (toHex(c) === nlenRead ? hex('6986') : t.answer(c, i)));
    expect(failed(tooMany)).toBe('NFC handover: READ BINARY NLEN (initial NDEF message) failed with status 6986 (after 1 restart)');
  });

  it('TNEP status other than 00, a static message that is no HS, a short read, a 1-byte response', () => {
    const negotiated = tag({ tp: MULTIPAZ_SERVICE_PARAMETER, hs: hex(MULTIPAZ_NEGOTIATED_HS_HEX), teStatus: 0x02 });
    expect(failed(drive(driver(), (c, i) => negotiated.answer(c, i)))).toBe(
      'NFC handover: TNEP status 0x02: the phone refused the handover service',
    );

    const notHs = tag({ hs: buildTnepStatusMessage(0) });
    expect(failed(drive(driver(), (c, i) => notHs.answer(c, i)))).toMatch(
      /^NFC handover: the NDEF message \(no Tp record, so static handover\) is not a usable Handover Select: NDEF message has no Handover Select/,
    );

    const short = tag({ hs: staticHs, override: (i) => (i === 5 ? hex('00112233' + '9000') : undefined) });
    expect(failed(drive(driver(), (c, i) => short.answer(c, i)))).toBe(
      'NFC handover: READ BINARY initial NDEF message at offset 0: expected 254 bytes, got 4',
    );

    expect(failed(drive(driver(), () => Uint8Array.of(0x90)))).toMatch(/SELECT NDEF application .*needs at least the 2 status bytes/);
  });

  it('a read-only NDEF file that offers TNEP, NLEN beyond the file, an unreadable CC', () => {
    const readOnly = tag({ cc: multipazCapabilityContainer('static'), tp: MULTIPAZ_SERVICE_PARAMETER, hs: staticHs });
    expect(failed(drive(driver(), (c, i) => readOnly.answer(c, i)))).toMatch(/offers TNEP \(Tp record\) but its NDEF file is read-only/);
    const huge = tag({ hs: staticHs, override: (i) => (i === 4 ? hex('7FFF9000') : undefined) });
    expect(failed(drive(driver(), (c, i) => huge.answer(c, i)))).toMatch(/NLEN 32767 exceeds the NDEF file size 32767/);
    const badCc = tag({ hs: staticHs, override: (i) => (i === 2 ? hex('000F20' + '9000') : undefined) });
    expect(failed(drive(driver(), (c, i) => badCc.answer(c, i)))).toMatch(/Capability Container/);
  });

  it('responses after the end are refused', () => {
    const d = driver();
    const t = tag({ hs: staticHs });
    const trace = drive(d, (c, i) => t.answer(c, i));
    expect(done(trace).kind).toBe('static');
    expect(d.respond(hex('9000'))).toEqual({ kind: 'failed', reason: 'NFC handover: a response arrived after the handover ended' });
    expect(() => d.start()).toThrow(/already started/);
  });
});

describe('HS variants the driver accepts', () => {
  it('a negotiated HS choosing peripheral server mode carries its own UUID', () => {
    const de = hex(MULTIPAZ_DEVICE_ENGAGEMENT_HEX);
    const hs = buildHandoverSelect({
      deviceEngagement: de,
      ble: { leRole: LeRole.PERIPHERAL_ONLY, uuid: '11111111-2222-4333-8444-555555555555' },
    });
    const t = tag({ tp: MULTIPAZ_SERVICE_PARAMETER, hs });
    const result = done(drive(driver(), (c, i) => t.answer(c, i)));
    expect(result.ble).toMatchObject({
      uuid: '11111111-2222-4333-8444-555555555555',
      modes: { peripheralServer: true, centralClient: false },
    });
  });
});
