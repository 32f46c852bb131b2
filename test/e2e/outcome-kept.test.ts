/**
 * Issue 28 in real Chromium against the embedded backend and the virtual phone: one rule for what a tap
 * or a scan does on every screen. An outcome stays for `timeouts.outcomeMinimumMs`: a second phone tapped
 * (or a QR scanned) before that is held and replaces it only after; the replaced outcome is never silent
 * (a status line at the counter, its verdict and answer behind the staff PIN until it would have cleared);
 * and a tap while staff are in Settings is not run unseen.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkScreen, scannerTypes, startBrowserStack, stopBrowserStack, type BrowserStack } from '../support/e2e-browser.js';

const MINIMUM_MS = 3_000;
const DISPLAY_MS = 14_000;

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack({ config: { timeouts: { resultDisplayMs: DISPLAY_MS, outcomeMinimumMs: MINIMUM_MS } } });
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

async function verdictShown(): Promise<string | null> {
  return stack.page.getByTestId('verdict').getAttribute('data-verdict');
}

/** A first customer whose ID is not accepted; resolves when the outcome is on screen. */
async function rejectedCustomer(): Promise<number> {
  await stack.counter.reconfigurePhone({ credential: 'tampered' });
  stack.counter.rig.tap();
  await stack.waitForScreen('result', 40_000);
  const shownAt = Date.now();
  expect(await verdictShown()).toBe('rejected');
  stack.counter.rig.lift();
  await stack.counter.reconfigurePhone({ credential: 'valid' });
  return shownAt;
}

/** Staff open the settings with the PIN. */
async function openSettings(): Promise<void> {
  const { page } = stack;
  await page.getByTestId('staff-button').click();
  await stack.waitForScreen('staff_pin');
  await page.getByLabel('PIN', { exact: true }).fill(stack.pin ?? '');
  await page.getByRole('button', { name: 'Unlock' }).click();
  await stack.waitForScreen('settings');
}

async function backToReady(): Promise<void> {
  const { page } = stack;
  if ((await stack.screen()) === 'result' || (await stack.screen()) === 'error') await page.getByTestId('next-button').click();
  stack.counter.rig.lift();
  await stack.waitForScreen('ready', 20_000);
}

describe('an outcome stays until its minimum has passed, for a tap and a scan alike', () => {
  it('a second phone tapped at once is held: the "Not accepted" stays, then the new customer replaces it; staff see the replaced one until it would have cleared', async () => {
    const { page } = stack;
    const shownAt = await rejectedCustomer();
    const reports = stack.reports.length;
    // The next customer's phone, on the reader 1 s into the outcome.
    stack.counter.rig.tap();
    // Before: a tap replaced the outcome at once (a "NOT 21" became another phone's green 1.6 s later).
    while (Date.now() - shownAt < MINIMUM_MS - 700) {
      expect(await stack.screen()).toBe('result');
      expect(await verdictShown()).toBe('rejected');
      await new Promise((done) => setTimeout(done, 200));
    }
    expect(stack.reports.length).toBe(reports);
    // Held, not lost: once the minimum has passed, the phone on the reader is read (the virtual phone is
    // fast: the new outcome may be the next thing on screen, so the start is read from its report).
    await expect.poll(() => stack.reports.length, { timeout: 40_000, interval: 20 }).toBe(reports + 1);
    const report = stack.reports.at(-1);
    expect(report?.transport).toBe('nfc');
    await expect.poll(verdictShown, { timeout: 10_000 }).toBe('verified');
    // Never silent: a discreet line at the counter…
    const marker = page.locator('[data-status="replaced"]');
    await expect.poll(() => marker.count()).toBe(1);
    expect(await marker.textContent()).toContain('replaced by the next customer');
    expect(await marker.textContent()).not.toContain('accepted');
    await checkScreen(stack, 'outcome-kept', { docs: true });
    // …and behind the PIN what it was, when, and replaced by what.
    stack.counter.rig.lift();
    await openSettings();
    const card = page.getByTestId('replaced-outcome');
    await expect.poll(() => card.count()).toBe(1);
    expect(await card.getAttribute('data-verdict')).toBe('rejected');
    // The hold measured by the kiosk's own clock (the test's reading of when the outcome showed lags the
    // screen by its polling, which under load passed the 200 ms slack an outside measure had).
    const replaced = stack.service.state().replaced;
    expect(replaced?.replacedBy).toBe('nfc');
    expect((replaced?.replacedAt ?? 0) - (replaced?.shownAt ?? 0)).toBeGreaterThanOrEqual(MINIMUM_MS);
    expect(await card.textContent()).toMatch(/ID not accepted.*after a tap; replaced at .* by a tap\./);
    await checkScreen(stack, 'staff-outcome-replaced', { docs: true });
    // Gone when it would have cleared by itself (privacy): no longer than resultDisplayMs after it showed.
    await expect.poll(() => card.count(), { timeout: DISPLAY_MS + 3_000, interval: 250 }).toBe(0);
    expect(Date.now() - shownAt).toBeGreaterThanOrEqual(DISPLAY_MS - 500);
    await page.getByRole('button', { name: 'Lock' }).click();
    await backToReady();
  }, 90_000);

  it('a QR scanned during the minimum is held the same way; after the minimum a scan replaces the outcome at once', async () => {
    const shownAt = await rejectedCustomer();
    await scannerTypes(stack.page, stack.counter.presentQr());
    while (Date.now() - shownAt < MINIMUM_MS - 700) {
      expect(await verdictShown()).toBe('rejected');
      await new Promise((done) => setTimeout(done, 200));
    }
    await expect.poll(verdictShown, { timeout: 40_000 }).toBe('verified');
    expect(Date.now() - shownAt).toBeGreaterThanOrEqual(MINIMUM_MS - 200);
    expect(stack.reports.at(-1)?.transport).toBe('qr');
    // This outcome is past its minimum: the next scan is taken at once.
    await new Promise((done) => setTimeout(done, MINIMUM_MS));
    const reports = stack.reports.length;
    const scannedAt = Date.now();
    await scannerTypes(stack.page, stack.counter.presentQr());
    await expect.poll(() => stack.reports.length, { timeout: 40_000, interval: 20 }).toBe(reports + 1);
    // Started at once (not held): within a second of the scan.
    expect(Date.now() - (stack.reports.at(-1)?.durationMs ?? 0) - scannedAt).toBeLessThan(1_000);
    await backToReady();
  }, 90_000);
});

describe('a tap while staff are in Settings', () => {
  it('is not run unseen: the staff screen says a verification is running and its outcome is one press away', async () => {
    const { page } = stack;
    await openSettings();
    stack.counter.rig.tap();
    const note = page.getByTestId('counter-activity');
    await expect.poll(() => note.count(), { timeout: 10_000 }).toBe(1);
    expect(['running', 'result']).toContain(await note.getAttribute('data-activity'));
    await checkScreen(stack, 'staff-verification-running', { docs: true });
    await expect.poll(() => note.getAttribute('data-activity'), { timeout: 40_000 }).toBe('result');
    await page.getByTestId('show-customer-screen').click();
    await stack.waitForScreen('result');
    expect(await verdictShown()).toBe('verified');
    // Leaving the staff screens locks them, as it always does.
    await expect.poll(() => stack.service.staffUnlockedAnywhere()).toBe(false);
    await backToReady();
  }, 60_000);
});
