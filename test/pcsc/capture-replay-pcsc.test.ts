/**
 * Public captures of real wallets' NFC engagement (test/fixtures/captures) replayed through the kiosk relay
 * over the real PC/SC stack: a vpcd card answers with the captured R-APDUs, in order, through a private
 * pcscd; the kiosk's PC/SC adapter relays; the mock backend runs its ISO reader engine. Both ends are
 * recorded: every C-APDU the backend sent must reach the card unchanged, every R-APDU the card gave must
 * reach the backend unchanged, and the handover must finish at the capture's last step (so the engine
 * offers BLE). BLE then has no phone to talk to; the test stops once the handover is done.
 *
 * Replay note: the card ignores what the command says and answers the next captured response, so the
 * negotiated captures' HS answers our (BLE-only) HR instead of the captured reader's; the reader-side
 * replay (test/replay/reader-replay.test.ts) checks the commands themselves.
 * Needs pcscd, vsmartcard-vpcd and gcc, like the other tests under test/pcsc; without them it fails.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { NfcStep, ReaderEngine, ReaderEngineFactory } from '../../src/qa/sim/mock-backend/engine.js';
import { createIsoReaderEngineFactory } from '../../src/qa/sim/mock-backend/reader/index.js';
import { startMockBackend, type MockBackend } from '../../src/qa/sim/mock-backend/server.js';
import type { VirtualNfcTag } from '../../src/qa/sim/virtual-wallet/nfc-tag.js';
import { startPrivatePcscd, type PrivatePcscd } from '../../tools/pcscd/pcscd-daemon.js';
import { E2E_API_KEY } from '../support/e2e-stack.js';
import { startPcscStack, type PcscStack } from '../support/pcsc-stack.js';
import { CAPTURE_NAMES, hexBytes, loadCapture, toHex, type Capture } from '../replay/capture-fixtures.js';

const FLOW_MS = 20_000;

let pcscd: PrivatePcscd;
let backend: MockBackend | undefined;
let stack: PcscStack | undefined;

beforeAll(async () => {
  pcscd = await startPrivatePcscd({ readers: 2 });
}, 30_000);

afterAll(async () => {
  await pcscd.stop();
});

afterEach(async () => {
  await stack?.stop();
  stack = undefined;
  await backend?.stop();
  backend = undefined;
});

/** What the backend's engine sent and received, and how the handover ended. */
interface BackendSide {
  readonly sent: string[];
  readonly received: string[];
  end: NfcStep | undefined;
  readonly ended: Promise<NfcStep>;
}

/** Wraps the real engine factory so the test sees the APDUs at the backend's end of the relay. */
function recordingFactory(inner: ReaderEngineFactory, side: BackendSide, onEnd: (step: NfcStep) => void): ReaderEngineFactory {
  const note = (step: NfcStep): NfcStep => {
    if (step.kind === 'apdu') side.sent.push(toHex(step.apdu));
    else {
      side.end = step;
      onEnd(step);
    }
    return step;
  };
  return (context) => {
    const engine = inner(context);
    const wrapped: ReaderEngine = {
      qrScanned: (text) => engine.qrScanned(text),
      nfcStart: () => note(engine.nfcStart()),
      nfcResponse: async (response) => {
        side.received.push(toHex(response));
        return note(await engine.nfcResponse(response));
      },
      bleConnected: (role) => engine.bleConnected(role),
      bleNotified: (char, data) => engine.bleNotified(char, data),
      bleWritten: (char, data) => engine.bleWritten(char, data),
      bleReadRequest: (char) => engine.bleReadRequest(char),
      dispose: () => engine.dispose(),
    };
    return wrapped;
  };
}

/** The phone as a card that answers with the captured responses, in order, and records the commands. */
function replayCard(capture: Capture): { tag: VirtualNfcTag; commands: string[]; responses: string[] } {
  const commands: string[] = [];
  const responses: string[] = [];
  const tag: VirtualNfcTag = {
    fieldOn: () => undefined,
    fieldOff: () => undefined,
    processApdu: (command) => {
      commands.push(toHex(command));
      const step = capture.steps[commands.length - 1];
      // Beyond the capture: 6F00, which the engine reports as a failure the test then shows.
      const response = step === undefined ? '6f00' : step.response;
      responses.push(response);
      return hexBytes(response);
    },
  };
  return { tag, commands, responses };
}

describe('captured NFC engagements through pcscd + vpcd and the kiosk relay', () => {
  it.each(CAPTURE_NAMES.map((name) => ({ name })))(
    '$name: APDUs reach the card and the backend unchanged; the handover completes',
    async ({ name }) => {
      const capture = loadCapture(name);
      let resolveEnd: (step: NfcStep) => void = () => undefined;
      const side: BackendSide = { sent: [], received: [], end: undefined, ended: new Promise((resolve) => (resolveEnd = resolve)) };
      backend = await startMockBackend({
        apiKeys: [E2E_API_KEY],
        engineFactory: recordingFactory(
          // The trust anchor is never used: the replay ends before any DeviceResponse.
          createIsoReaderEngineFactory({
            trustedIacaCertificates: [Uint8Array.of(0x30, 0x00)],
            nfc: { readerBleUuid: () => '0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f0' },
          }),
          side,
          (step) => resolveEnd(step),
        ),
      });
      const slot = pcscd.readers[0];
      if (slot === undefined) throw new Error('no vpcd reader');
      stack = await startPcscStack({ slot, backend, profile: 'android', config: { profile: 'identity' } });
      await stack.ready();
      const card = replayCard(capture);
      await stack.tap(card.tag);
      const end = await Promise.race([
        side.ended,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`no end of the handover; backend sent ${side.sent.length} APDUs`)), FLOW_MS),
        ),
      ]);
      expect(end.kind === 'failed' ? end.reason : end.kind).toBe('done');
      // Backend → card: every C-APDU unchanged, one per captured step.
      expect(card.commands).toEqual(side.sent);
      expect(card.commands).toHaveLength(capture.steps.length);
      // Card → backend: every R-APDU unchanged, and those are the captured responses.
      expect(side.received).toEqual(card.responses);
      expect(side.received).toEqual(capture.steps.map((s) => s.response));
      // The captured reader's commands, where the capture shows them, crossed the relay as such too (the HR
      // write is ours: BLE only, see reader-replay.test.ts).
      capture.steps.forEach((step, i) => {
        if (step.command !== null && step.what !== 'UPDATE BINARY Handover Request')
          expect(card.commands[i], `${i}: ${step.what}`).toBe(step.command);
      });
    },
    40_000,
  );
});
