/**
 * Every screen a customer or staff member can meet, in real Chromium: reached through the real flow where
 * the flow can hold it still (backend delays, a slow holder), each one checked with axe-core (zero
 * violations) and photographed (artifacts/screenshots/, the main ones also docs/screens/ for the README).
 * The screens the other browser tests reach (tap again, rejected, error, offline, needs staff, settings,
 * identity outcome) are checked there the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QrScannedResult, dispatchIntent } from '../../src/common/kiosk-api.js';
import { checkScreen, scannerTypes, startBrowserStack, type BrowserStack } from '../support/e2e-browser.js';

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack();
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(async () => {
  if ((stack as BrowserStack | undefined) === undefined) return; // beforeAll failed (and cleaned up)
  const outside = stack.nonLocalRequests();
  await stack.stop();
  expect(outside, 'requests that left 127.0.0.1').toEqual([]);
}, 30_000);

async function backToReady(): Promise<void> {
  if ((await stack.screen()) === 'result') await stack.page.getByTestId('next-button').click();
  stack.counter.rig.lift();
  await stack.waitForScreen('ready', 20_000);
}

describe('every screen: axe and a screenshot', () => {
  it('reading the phone over NFC (held by a slow backend)', async () => {
    stack.backend.faults.set({ delayMs: { nfc_apdu: 1_500 } });
    stack.counter.rig.tap();
    await stack.waitForScreen('engaging', 10_000);
    expect(await stack.page.getByTestId('progress').count()).toBe(1);
    await checkScreen(stack, 'engaging-nfc', { docs: true });
    stack.backend.faults.clear();
    await stack.waitForScreen('result', 40_000);
    await backToReady();
  }, 60_000);

  it('a QR code was read, connecting to the phone (held by a slow backend)', async () => {
    stack.backend.faults.set({ delayMs: { ble_exchange: 2_500 } });
    const text = stack.counter.presentQr();
    const scanned = QrScannedResult.parse(await dispatchIntent(stack.service, 'qrScanned', { text, source: 'camera' }, () => false));
    expect(scanned).toEqual({ accepted: true });
    await stack.waitForScreen('engaging', 10_000);
    await checkScreen(stack, 'engaging-qr');
    stack.backend.faults.clear();
    await stack.waitForScreen('result', 40_000);
    await backToReady();
  }, 60_000);

  it('approve on your phone (a holder who takes their time), then the age outcome and "remove your phone"', async () => {
    await stack.counter.reconfigurePhone({ consentDelayMs: 4_000 });
    stack.counter.rig.tap();
    await stack.waitForScreen('transferring', 20_000);
    await expect.poll(() => stack.service.state().view.prompt, { timeout: 10_000 }).toBe('approve_on_phone');
    await checkScreen(stack, 'approve-on-phone', { docs: true });
    await stack.waitForScreen('result', 40_000);
    await stack.counter.reconfigurePhone({ consentDelayMs: 0 });
    await checkScreen(stack, 'result-verified-age');
    // "Next" while the phone still lies on the reader.
    await stack.page.getByTestId('next-button').click();
    const after = await stack.waitForScreen(['remove_phone', 'ready'], 10_000);
    if (after === 'remove_phone') await checkScreen(stack, 'remove-phone');
    await backToReady();
  }, 60_000);

  it('a scan that is not an mdoc: engagement gets a hint on Ready', async () => {
    await scannerTypes(stack.page, 'https://example.com/not-a-licence');
    await expect.poll(() => stack.page.getByTestId('scan-hint').isVisible()).toBe(true);
    await checkScreen(stack, 'ready-scan-hint');
  });

  it('the kiosk stops, then the host goes away: "closed", then "connecting to the kiosk"', async () => {
    await stack.service.stop();
    await stack.waitForScreen('stopped', 10_000);
    await checkScreen(stack, 'stopped');
    await stack.host.stop();
    await stack.waitForScreen('disconnected', 10_000);
    await checkScreen(stack, 'disconnected');
  }, 30_000);
});
