/**
 * NFC through the real PC/SC stack (issue 4): the kiosk's PC/SC adapter (`smartcard` binding) against a private pcscd whose
 * vsmartcard-vpcd reader has the virtual phone as its card; mock backend with real ISO 18013-5 crypto;
 * BLE through the virtual radio. These tests need pcscd, vsmartcard-vpcd and gcc (`.ci/run` installs
 * them); without them they fail, they never skip.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualNfcTag } from '../../src/qa/sim/virtual-wallet/nfc-tag.js';
import { VpcdCard } from '../../src/qa/sim/vpcd/vpcd-card.js';
import { startPrivatePcscd, type PrivatePcscd } from '../../tools/pcscd/pcscd-daemon.js';
import type { E2eStack } from '../support/e2e-stack.js';
import { readerAvailability, startPcscStack, type PcscStack, type PcscStackOptions } from '../support/pcsc-stack.js';

const FLOW_MS = 30_000;

let pcscd: PrivatePcscd;
let stack: PcscStack | undefined;
const extraCards: VpcdCard[] = [];

beforeAll(async () => {
  pcscd = await startPrivatePcscd({ readers: 2 });
}, 30_000);

afterAll(async () => {
  await pcscd.stop();
});

afterEach(async (context) => {
  if (process.env.PCSC_TEST_DEBUG && context.task.result?.state === 'fail' && stack) {
    for (const r of stack.logs.records) process.stderr.write(`${JSON.stringify(r)}\n`);
  }
  await Promise.all(extraCards.splice(0).map((c) => c.remove()));
  await stack?.stop();
  stack = undefined;
});

const slot = (i: number): PcscStackOptions['slot'] => {
  const reader = pcscd.readers[i];
  if (!reader) throw new Error(`no reader ${i}`);
  return reader;
};

function expectVerified(report: Awaited<ReturnType<E2eStack['nextReport']>>): void {
  expect(report.result).toBe('complete');
  expect(report.outcome?.verdict).toBe('verified');
  expect(report.outcome?.issuerAuthentication).toBe('Valid');
  expect(report.outcome?.deviceAuthentication).toBe('Valid');
}

/** The reasons the kiosk forwarded for failed APDUs, from its log. */
const apduFailures = (s: PcscStack): string[] => s.logs.records.filter((r) => r.event === 'apdu_failed').map((r) => String(r.reason));

/** Wraps a tag so that the phone is lifted right after it answered APDU `n` (between two APDUs). */
function liftAfter(s: PcscStack, tag: VirtualNfcTag, n: number): VirtualNfcTag {
  let answered = 0;
  return {
    fieldOn: () => tag.fieldOn(),
    fieldOff: () => tag.fieldOff(),
    processApdu: (command) => {
      const response = tag.processApdu(command);
      if (++answered === n) setImmediate(() => void s.lift());
      return response;
    },
  };
}

describe('NFC engagement through pcscd + vpcd (PC/SC adapter on smartcard)', () => {
  it('static handover (android) → kiosk central → complete, verified', async () => {
    stack = await startPcscStack({ slot: slot(0), profile: 'android', config: { profile: 'identity' } });
    await stack.ready();
    await stack.tap();
    const report = await stack.nextReport(FLOW_MS);
    expectVerified(report);
    expect(report.apdus).toBeGreaterThanOrEqual(6);
    expect(stack.views.some((v) => v.role === 'central')).toBe(true);
    expect(apduFailures(stack)).toEqual([]);
    // The adapter logs events, never APDU bytes (the SELECT of the NDEF application, in hex or base64).
    expect(stack.adapterLogs.text()).toContain('pcsc_card_connected');
    for (const text of [stack.logs.text(), stack.adapterLogs.text()]) expect(text).not.toMatch(/d2760000850101|AKQEAAfSdgAAhQEB/i);
  });

  it('negotiated handover (iphone) → kiosk peripheral → complete, verified', async () => {
    stack = await startPcscStack({ slot: slot(0), profile: 'iphone', config: { profile: 'identity' } });
    await stack.ready();
    await stack.tap();
    const report = await stack.nextReport(FLOW_MS);
    expectVerified(report);
    expect(stack.views.some((v) => v.role === 'peripheral')).toBe(true);
  });

  it.each([
    { n: 1, delayed: false },
    { n: 3, delayed: false },
    { n: 5, delayed: true },
  ])(
    'phone lifted after APDU $n (backend slow: $delayed) → RemovedCard or NotTransacted → nfc_await_card → re-tap → complete',
    async ({ n, delayed }) => {
      // With the backend's next APDU held back, pcscd has seen the removal (EMPTY) before it arrives.
      stack = await startPcscStack({
        slot: slot(0),
        profile: 'android',
        ...(delayed ? { backendFaults: { delayMs: { nfc_apdu: 600 } } } : {}),
      });
      await stack.ready();
      const s = stack;
      const tag = s.rig.phone.tag();
      await s.card.insert(liftAfter(s, tag, n));
      await s.view((v) => v.phase === 'awaiting_card', FLOW_MS);
      const reasons = apduFailures(s);
      expect(reasons).toHaveLength(1);
      expect(['RemovedCard', 'NotTransacted']).toContain(reasons[0]);
      if (delayed) expect(reasons[0]).toBe('RemovedCard');
      await s.card.reinsert(tag); // the same presentation continues on the re-tap
      const report = await s.nextReport(FLOW_MS);
      expectVerified(report);
    },
  );

  it('an APDU longer than ISO 7816-4 extended length (70,000 bytes) is refused by the kiosk before it reaches pcscd: protocol violation → error, no PC/SC failure', async () => {
    // It used to reach pcscd, which answered InsufficientBuffer; the kiosk now bounds the field itself
    // (MAX_APDU_BYTES, src/common/protocol/messages.ts), so the card never sees it.
    stack = await startPcscStack({ slot: slot(0), profile: 'android', backendFaults: { oversizeApduAt: 2 } });
    await stack.ready();
    await stack.tap();
    const report = await stack.nextReport(FLOW_MS);
    expect(report.result).toBe('violation');
    expect(report.error?.detail).toContain('longer than 65544 bytes');
    expect(apduFailures(stack)).toEqual([]);
    await stack.view((v) => v.phase === 'error');
  });

  it('a mute card takes the timeout path (Timeout → error) without hanging, and the reader works afterwards', async () => {
    stack = await startPcscStack({ slot: slot(0), profile: 'android', config: { timeouts: { apduMs: 800 } } });
    await stack.ready();
    stack.card.setMute(true);
    await stack.tap();
    const started = performance.now();
    const failed = await stack.nextReport(FLOW_MS);
    expect(failed.result).toBe('backend_error');
    expect(apduFailures(stack)).toEqual(['Timeout']);
    expect(performance.now() - started).toBeLessThan(8_000);
    await stack.lift();
    stack.card.setMute(false);
    await stack.view(
      (v) => v.phase === 'ready' && stack !== undefined && stack.views.indexOf(v) > stack.views.findIndex((e) => e.phase === 'error'),
      FLOW_MS,
    );
    await stack.tap();
    expectVerified(await stack.nextReport(FLOW_MS));
  });

  it('pcscd killed and restarted while idle → the adapter reconnects and the next verification completes', async () => {
    stack = await startPcscStack({ slot: slot(0), profile: 'android' });
    await stack.ready();
    await pcscd.kill();
    await readerAvailability(stack.reader, (a) => a.reason === 'service_down');
    await pcscd.restart();
    await readerAvailability(stack.reader, (a) => a.usable, 15_000);
    await stack.tap();
    expectVerified(await stack.nextReport(FLOW_MS));
  });

  it('two readers: only the one chosen by name engages the phone', async () => {
    stack = await startPcscStack({ slot: slot(1), profile: 'android' });
    expect(stack.reader.readerNames).toEqual(expect.arrayContaining([slot(0).name, slot(1).name]));
    expect(stack.reader.readerName).toBe(slot(1).name);
    await stack.ready();
    // A card on the other reader is not engaged.
    const other = new VpcdCard({ host: slot(0).host, port: slot(0).port });
    extraCards.push(other);
    await other.insert({ fieldOn: () => undefined, fieldOff: () => undefined, processApdu: () => Uint8Array.from([0x90, 0x00]) });
    await new Promise((r) => setTimeout(r, 1_200));
    expect(other.apdus).toBe(0);
    expect(stack.views.at(-1)?.phase).toBe('ready');
    await stack.tap();
    expectVerified(await stack.nextReport(FLOW_MS));
  });
});
