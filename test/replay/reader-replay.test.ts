/**
 * Public captures of real wallets' NFC engagement (test/fixtures/captures, sources in each file) replayed
 * byte for byte against the mock backend's reader: the sans-IO NfcHandoverDriver and the IsoReaderEngine
 * around it. The captured R-APDUs are fed in order; our C-APDUs must equal the captured reader's wherever
 * the capture shows them, and the handover result must keep the phone's bytes verbatim.
 *
 * Where our reader legitimately differs, the structure is asserted instead:
 * - the Handover Request: ours offers BLE only with our own UUID (issue 13: the relay carries no NFC data),
 *   the captured readers (Multipaz, isomdl) also offered NFC and used their own (random) UUID;
 * - SELECT of the NDEF application: isomdl's reader appends Le = 00, ours (like Multipaz) omits it; the
 *   isomdl captures do not show that command, so only its structure is checked.
 * What cannot be replayed as-is: the negotiated HS answered the captured reader's HR, not ours; we feed it
 * as the answer to our HR. Where it carries no UUID (central client mode) the phone connected to the
 * captured reader's UUID, whereas our result names the UUID of our HR (ISO 18013-5 §8.3.3.1.1.2). The session after
 * the handover needs the phone's private key and is not replayed.
 */
import { describe, expect, it } from 'vitest';
import { parseCapabilityContainer } from '../../src/qa/sim/iso/apdu.js';
import { decodeDeviceEngagement } from '../../src/qa/sim/iso/device-engagement.js';
import { LeRole, parseHandoverRequest, parseHandoverSelect } from '../../src/qa/sim/iso/handover.js';
import { findServiceParameter, tWaitMs } from '../../src/qa/sim/iso/tnep.js';
import { parseNdefMessage } from '../../src/qa/sim/iso/ndef.js';
import { IsoReaderEngine } from '../../src/qa/sim/mock-backend/reader/iso-reader-engine.js';
import { NfcHandoverDriver, type HandoverResult } from '../../src/qa/sim/mock-backend/reader/nfc-handover.js';
import { createNodeMdocContext } from '../../src/qa/sim/iso/mdoc-context.js';
import { CAPTURE_NAMES, hexBytes, loadCapture, responseData, toHex, type Capture, type CaptureName } from './capture-fixtures.js';

const READER_UUID = '0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0';

interface Expected {
  readonly mle: number;
  readonly maxNdefFile: number;
  /** TNEP WT (negotiated only). */
  readonly wt?: number;
  /** NLEN reads answered 0000 (Te or HS not ready). */
  readonly notReadyPolls: number;
  readonly leRole: LeRole;
  /** The HS's own UUID, or undefined when it carries none (our HR's UUID applies). */
  readonly hsUuid: string | undefined;
  readonly deVersion: string;
  /** BLE modes the engine offers the kiosk, in order. */
  readonly roles: readonly ('central' | 'peripheral')[];
}

/** What each capture shows (read from its bytes; the tests below check every field against them). */
const EXPECTED: Record<CaptureName, Expected> = {
  'multipaz-loopback-static': {
    mle: 0x7fff,
    maxNdefFile: 0x7fff,
    notReadyPolls: 0,
    leRole: LeRole.BOTH_CENTRAL_PREFERRED,
    hsUuid: 'b3d52ac4-a1b6-4b51-a22e-78ee55ef6eb6',
    deVersion: '1.0',
    roles: ['central', 'peripheral'],
  },
  'multipaz-loopback-negotiated': {
    mle: 0x7fff,
    maxNdefFile: 0x7fff,
    wt: 0x00,
    notReadyPolls: 0,
    leRole: LeRole.CENTRAL_ONLY,
    hsUuid: undefined,
    deVersion: '1.0',
    roles: ['peripheral'],
  },
  'multipaz-android-static': {
    mle: 0x7fff,
    maxNdefFile: 0x7fff,
    notReadyPolls: 0,
    leRole: LeRole.CENTRAL_ONLY,
    hsUuid: 'e0812e0e-9ea0-4d40-b07a-79bf672abc43',
    deVersion: '1.0',
    roles: ['peripheral'],
  },
  'multipaz-android-negotiated': {
    mle: 0x7fff,
    maxNdefFile: 0x7fff,
    wt: 0x00,
    notReadyPolls: 0,
    leRole: LeRole.CENTRAL_ONLY,
    hsUuid: undefined,
    deVersion: '1.0',
    roles: ['peripheral'],
  },
  'multipaz-android-negotiated-not-ready': {
    mle: 0x7fff,
    maxNdefFile: 0x7fff,
    wt: 0x00,
    notReadyPolls: 4,
    leRole: LeRole.CENTRAL_ONLY,
    hsUuid: undefined,
    deVersion: '1.0',
    roles: ['peripheral'],
  },
  'apple-wallet-negotiated': {
    mle: 0x0400,
    maxNdefFile: 0x0802,
    wt: 0x14,
    notReadyPolls: 3,
    leRole: LeRole.CENTRAL_ONLY,
    hsUuid: undefined,
    deVersion: '1.1',
    roles: ['peripheral'],
  },
  'google-wallet-negotiated': {
    mle: 0x7fff,
    maxNdefFile: 0x7fff,
    wt: 0x10,
    notReadyPolls: 0,
    leRole: LeRole.CENTRAL_ONLY,
    hsUuid: 'e34db7dd-1b1e-4fdb-a402-c0b493579cb8',
    deVersion: '1.0',
    roles: ['peripheral'],
  },
  'samsung-wallet-static': {
    mle: 0x7fff,
    maxNdefFile: 0x7fff,
    notReadyPolls: 0,
    leRole: LeRole.CENTRAL_ONLY,
    hsUuid: 'bdc087ee-77c5-4987-a639-d109438e3c10',
    deVersion: '1.0',
    roles: ['peripheral'],
  },
};

interface Replay {
  readonly commands: string[];
  readonly delays: number[];
  readonly result: HandoverResult;
}

/** Feeds the captured responses in order; the driver must finish exactly at the last one. */
function replay(capture: Capture): Replay {
  const driver = new NfcHandoverDriver({ readerBleUuid: () => READER_UUID });
  const commands: string[] = [];
  const delays: number[] = [];
  let step = driver.start();
  for (const captured of capture.steps) {
    if (step.kind !== 'command')
      throw new Error(`the reader stopped before "${captured.what}": ${step.kind === 'failed' ? step.reason : 'done'}`);
    commands.push(toHex(step.apdu));
    delays.push(step.delayMs);
    step = driver.respond(hexBytes(captured.response));
  }
  if (step.kind !== 'done')
    throw new Error(
      `the reader did not finish at the end of the capture: ${step.kind === 'failed' ? step.reason : `next ${toHex(step.apdu)}`}`,
    );
  return { commands, delays, result: step.result };
}

const isHrWrite = (capture: Capture, index: number): boolean => capture.steps[index]?.what === 'UPDATE BINARY Handover Request';
const INS_BY_WHAT: readonly [RegExp, string][] = [
  [/^SELECT/, 'a4'],
  [/^READ BINARY/, 'b0'],
  [/^UPDATE BINARY/, 'd6'],
];

describe.each(CAPTURE_NAMES.map((name) => ({ name, capture: loadCapture(name) })))('capture $name', ({ name, capture }) => {
  const expected = EXPECTED[name];

  it('the fixture cites a public source at a commit, and its CC and Tp say what the table says', () => {
    expect(capture.source.repository).toMatch(/^(spruceid\/isomdl|openwallet-foundation\/multipaz)$/);
    const ccStep = capture.steps.find((s) => s.what === 'READ BINARY capability container');
    if (ccStep === undefined) throw new Error('no CC read in the capture');
    const cc = parseCapabilityContainer(responseData(ccStep));
    expect({ mle: cc.maxResponseDataSize, maxNdefFile: cc.maxNdefFileSize, writable: cc.writeAccess === 0 }).toEqual({
      mle: expected.mle,
      maxNdefFile: expected.maxNdefFile,
      writable: capture.handover === 'negotiated',
    });
    const tpStep = capture.steps.find((s) => s.what === 'READ BINARY Tp');
    const tp = tpStep === undefined ? undefined : findServiceParameter(parseNdefMessage(responseData(tpStep)));
    expect(tp?.minimumWaitingTime).toBe(expected.wt);
  });

  it("our C-APDUs equal the captured reader's where the capture shows them; the rest have the captured structure", () => {
    const { commands } = replay(capture);
    expect(commands).toHaveLength(capture.steps.length);
    capture.steps.forEach((step, i) => {
      const ours = commands[i] ?? '';
      if (isHrWrite(capture, i)) return; // checked below: ours legitimately differs
      if (step.command !== null) expect(ours, `${i}: ${step.what}`).toBe(step.command);
      const ins = INS_BY_WHAT.find(([re]) => re.test(step.what))?.[1];
      expect(ours.slice(2, 4), `${i}: ${step.what} INS`).toBe(ins);
    });
  });

  it('the result keeps the HS and the DeviceEngagement verbatim and names the BLE mode and UUID the phone picked', () => {
    const { result } = replay(capture);
    const lastStep = capture.steps.at(-1);
    if (lastStep === undefined) throw new Error('empty capture');
    const hs = responseData(lastStep);
    expect(result.kind).toBe(capture.handover);
    expect(toHex(result.handoverSelect)).toBe(toHex(hs));
    // DeviceEngagementBytes must be the record payload as the phone wrote it (ISO 18013-5 §8.1, isomdl 3ad4471).
    const de = parseHandoverSelect(hs).deviceEngagement;
    expect(toHex(result.deviceEngagement)).toBe(toHex(de));
    expect(toHex(hs)).toContain(toHex(result.deviceEngagement));
    expect(decodeDeviceEngagement(result.deviceEngagement).version).toBe(expected.deVersion);
    expect(result.ble.leRole).toBe(expected.leRole);
    expect(result.ble.uuid).toBe(expected.hsUuid);
    expect(result.ble.alternativeCarrier?.carrierDataReference).toBe('0');
  });

  it('waits t_wait from the Tp before reads after a write and between not-ready polls', () => {
    const { commands, delays } = replay(capture);
    const polls = capture.steps.filter((s) => s.response === '00009000').length;
    expect(polls).toBe(expected.notReadyPolls);
    if (expected.wt === undefined) {
      expect(delays.every((d) => d === 0)).toBe(true);
      return;
    }
    const tWait = tWaitMs(expected.wt);
    commands.forEach((command, i) => {
      const afterWriteOrPoll = (commands[i - 1]?.startsWith('00d6') ?? false) || capture.steps[i - 1]?.response === '00009000';
      if (command === '00b0000002' && afterWriteOrPoll) expect(delays[i], `${i}: ${capture.steps[i]?.what ?? ''}`).toBe(tWait);
    });
  });

  if (capture.handover === 'negotiated') {
    it('our HR write: UPDATE BINARY of NLEN || HR at offset 0, BLE only with our UUID, the ReaderEngagement; the result is what was written', () => {
      const { commands, result } = replay(capture);
      const index = capture.steps.findIndex((_, i) => isHrWrite(capture, i));
      const write = hexBytes(commands[index] ?? '');
      expect(toHex(write.subarray(0, 4))).toBe('00d60000');
      const hr = write.subarray(7);
      expect(write[4]).toBe(hr.length + 2);
      expect((write[5] ?? 0) * 256 + (write[6] ?? 0)).toBe(hr.length);
      expect(toHex(hr)).toBe(toHex(result.handoverRequest ?? new Uint8Array(0)));
      const parsed = parseHandoverRequest(hr);
      expect(parsed.alternativeCarriers.map((ac) => ac.carrierDataReference)).toEqual(['0']);
      expect(parsed.nfc).toBeUndefined();
      expect(parsed.ble).toMatchObject({ leRole: LeRole.BOTH_CENTRAL_PREFERRED, uuid: READER_UUID });
      expect(toHex(parsed.readerEngagement ?? new Uint8Array(0))).toBe('a10063312e30');
      // The captured reader's HR, where the capture shows it (Multipaz), offered NFC as well: the difference.
      const captured = capture.steps[index]?.command;
      if (captured !== null && captured !== undefined) {
        const theirs = parseHandoverRequest(hexBytes(captured).subarray(7));
        expect(theirs.alternativeCarriers.map((ac) => ac.carrierDataReference)).toEqual(['0', 'nfc']);
        expect(theirs.ble?.leRole).toBe(LeRole.BOTH_CENTRAL_PREFERRED);
      }
      if (capture.hrWrite !== undefined) {
        // isomdl's HR (Google Wallet capture) has the same BLE OOB record up to its UUID (LE role 03); in ours
        // it is the last record, so its header byte has ME set (5a, not 1a).
        const bleOob = '2015016170706c69636174696f6e2f766e642e626c7565746f6f74682e6c652e6f6f6230021c031107';
        expect(capture.hrWrite.prefix.endsWith('1a' + bleOob)).toBe(true);
        expect(toHex(hr)).toContain('5a' + bleOob);
        expect(capture.hrWrite.suffix).toContain('69736f2e6f72673a31383031333a6e6663'); // theirs: "iso.org:18013:nfc"
        expect(toHex(hr)).not.toContain('69736f2e6f72673a31383031333a6e6663');
      }
    });
  }

  it('the IsoReaderEngine turns the capture into the BLE modes the kiosk is offered', async () => {
    const engine = new IsoReaderEngine(
      { sessionId: 'replay', namespaces: { 'org.iso.18013.5.1': ['family_name'] } },
      {
        trustedCertificates: [Uint8Array.of(0x30, 0x00)], // never used: no DeviceResponse in a handover capture
        maxCharacteristicSize: 182,
        maxMessageSize: 1 << 20,
        now: () => new Date(),
        nfc: { readerBleUuid: () => READER_UUID },
        delay: () => Promise.resolve(),
        context: createNodeMdocContext(),
      },
    );
    let step = engine.nfcStart();
    for (const captured of capture.steps) {
      if (step.kind !== 'apdu')
        throw new Error(`engine stopped before "${captured.what}": ${step.kind === 'failed' ? step.reason : 'done'}`);
      step = await engine.nfcResponse(hexBytes(captured.response));
    }
    if (step.kind !== 'done') throw new Error(`engine did not finish: ${step.kind === 'failed' ? step.reason : 'apdu'}`);
    expect(step.modes.map((m) => m.role)).toEqual(expected.roles);
    const uuid = expected.hsUuid ?? READER_UUID;
    expect(step.modes.every((m) => m.service_uuid.toLowerCase() === uuid)).toBe(true);
    engine.dispose();
  });
});
