/**
 * A silent backend in real Chromium, reached as QA reaches it: the virtual phone page's "Go silent" makes
 * the embedded mock backend take the traffic and answer nothing (src/qa/wiring/silent-gate.ts). A tap
 * then is told "not answering" within seconds, never "hold still" for the reply wait nor "That took too
 * long"; the kiosk leaves Ready (customer line, staff "Backend: not answering"); "Answer again" brings it
 * back by itself. Pictures at 1280×800 and 1080×1920 (docs/screens/offline-not-answering.png).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkScreen, startBrowserStack, stopBrowserStack, type BrowserStack } from '../support/e2e-browser.js';

const NOT_ANSWERING_TAP = 'The verification service is not answering. Please try again in a moment.';
const NOT_ANSWERING_OFFLINE = 'The verification service is not answering. We keep trying: please wait a moment or ask staff.';
/** pongMs (2.5 s, the default) and generous room for Chromium and crypto on two busy cores. */
const TAP_BOUND_MS = 2_500 + 3_000;
/** heartbeatMs + pongMs (the defaults), with the same room. */
const IDLE_BOUND_MS = 5_000 + 2_500 + 3_000;

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack({ phonePage: true });
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

async function statusBarText(): Promise<string> {
  return (await stack.page.getByTestId('status-bar').textContent()) ?? '';
}

describe('QA "Go silent": the backend takes the traffic and answers nothing', () => {
  it('a tap right after the backend went silent: "not answering" within seconds, no "That took too long"', async () => {
    const phone = stack.phone;
    if (!phone) throw new Error('no phone page');
    expect(await statusBarText()).toContain('Kiosk: ready');
    await phone.getByRole('button', { name: 'Go silent' }).click();
    await expect.poll(() => phone.getByTestId('backend-state').textContent()).toBe('silent (answers nothing)');
    expect(stack.backend.silent).toBe(true);

    const tapAt = Date.now();
    await phone.getByRole('button', { name: 'Tap (NFC)' }).click();
    await stack.waitForScreen('error', TAP_BOUND_MS);
    expect(Date.now() - tapAt).toBeLessThanOrEqual(TAP_BOUND_MS);
    const line = await stack.page.getByTestId('error-line').textContent();
    expect(line).toBe(NOT_ANSWERING_TAP);
    expect(await stack.page.getByText('That took too long').count()).toBe(0);
    expect(await statusBarText()).not.toContain('Kiosk: ready');
    await checkScreen(stack, 'error-not-answering');
    const report = stack.reports.at(-1);
    expect(report).toMatchObject({ result: 'not_answering', error: { code: 'backend_not_answering' } });
    stack.counter.rig.lift();
  }, 30_000);

  it('after it: Offline, "the verification service is not answering"; Ready, "Kiosk: ready" and "Backend: connected" are gone', async () => {
    const { page } = stack;
    await page.getByTestId('retry-button').click();
    await stack.waitForScreen('offline', IDLE_BOUND_MS);
    expect(await page.getByTestId('offline-line').textContent()).toBe(NOT_ANSWERING_OFFLINE);
    expect(await statusBarText()).not.toContain('ready');
    expect(stack.service.state().view.backend).toBe('not_answering');
    await checkScreen(stack, 'offline-not-answering', { docs: true });
    await page.setViewportSize({ width: 1080, height: 1920 });
    try {
      await checkScreen(stack, 'offline-not-answering.1080x1920');
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
    // Staff, behind the PIN: the backend "not answering", never "connected".
    await page.getByTestId('staff-button').click();
    await stack.waitForScreen('staff_pin');
    await page.getByLabel('PIN', { exact: true }).fill(stack.pin ?? '');
    await page.getByRole('button', { name: 'Unlock' }).click();
    await stack.waitForScreen('settings');
    await expect.poll(statusBarText).toContain('Backend: not answering, retrying');
    expect(await statusBarText()).not.toContain('Backend: connected');
    await checkScreen(stack, 'settings-not-answering');
    await page.getByRole('button', { name: 'Lock' }).first().click();
  }, 40_000);

  it('"Answer again": the kiosk comes back to Ready by itself and verifies', async () => {
    const phone = stack.phone;
    if (!phone) throw new Error('no phone page');
    await phone.getByRole('button', { name: 'Answer again' }).click();
    await expect.poll(() => phone.getByTestId('backend-state').textContent()).toBe('answering');
    await stack.waitForScreen('ready', 45_000);
    expect(await statusBarText()).toContain('Kiosk: ready');
    stack.counter.rig.tap();
    await stack.waitForScreen('result', 40_000);
    expect(await stack.page.getByTestId('verdict').getAttribute('data-verdict')).toBe('verified');
  }, 90_000);

  it('while idle: "Go silent" takes the kiosk out of Ready within heartbeatMs + pongMs, without a tap', async () => {
    const phone = stack.phone;
    if (!phone) throw new Error('no phone page');
    await stack.page.getByTestId('next-button').click();
    stack.counter.rig.lift();
    await stack.waitForScreen('ready', 20_000);
    const silentAt = Date.now();
    await phone.getByRole('button', { name: 'Go silent' }).click();
    await stack.waitForScreen('offline', IDLE_BOUND_MS);
    expect(Date.now() - silentAt).toBeLessThanOrEqual(IDLE_BOUND_MS);
    expect(await stack.page.getByTestId('offline-line').textContent()).toBe(NOT_ANSWERING_OFFLINE);
    await phone.getByRole('button', { name: 'Answer again' }).click();
    await stack.waitForScreen('ready', 45_000);
  }, 90_000);
});
