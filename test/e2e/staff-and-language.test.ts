/**
 * Staff and language in real Chromium. The kiosk starts with a backend URL but no API key, so it needs
 * staff; the settings open only with the staff PIN (a wrong one is refused), the API key is typed once and
 * never shown back; then a customer switches the language for their visit, gets verified, presses "Next",
 * and the next customer finds the default language and no trace of the previous one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOLDER_NEEDLES, base64Slice, checkScreen, pageTraces, personalDataLeft, startBrowserStack, type BrowserStack } from '../support/e2e-browser.js';

const READY_EN = 'Tap your phone or show your QR code';

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack({ backendOverride: false, config: { profile: 'identity' } });
}, 60_000);

afterAll(async () => {
  if ((stack as BrowserStack | undefined) === undefined) return; // beforeAll failed (and cleaned up)
  const outside = stack.nonLocalRequests();
  await stack.stop();
  expect(outside, 'requests that left 127.0.0.1').toEqual([]);
}, 30_000);

describe('staff settings and languages', () => {
  it('without an API key the kiosk asks for staff', async () => {
    await stack.waitForScreen('config_error', 30_000);
    await checkScreen(stack, 'needs-staff', { docs: true });
  });

  it('the settings open only with the right PIN; the API key is saved and never shown back', async () => {
    const { page } = stack;
    await page.getByTestId('staff-button').click();
    await stack.waitForScreen('staff_pin');
    await checkScreen(stack, 'staff-pin');
    const pinField = page.getByLabel('PIN', { exact: true });
    await pinField.fill('000000');
    await page.getByRole('button', { name: 'Unlock' }).click();
    await expect.poll(() => page.getByText('Wrong PIN.').count()).toBeGreaterThan(0);
    expect(stack.service.staffUnlocked()).toBe(false);
    await pinField.fill(stack.pin ?? '');
    await page.getByRole('button', { name: 'Unlock' }).click();
    await stack.waitForScreen('settings');
    await expect.poll(() => page.getByText('Current API key: not set').count()).toBeGreaterThan(0);
    await checkScreen(stack, 'settings', { docs: true });

    const apiKey = stack.backend.apiKey;
    await page.getByLabel('API key', { exact: true }).fill(apiKey);
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.getByText('Saved.').count(), { timeout: 10_000 }).toBeGreaterThan(0);
    await expect.poll(() => page.getByText('Current API key: set').count()).toBeGreaterThan(0);
    expect(await page.getByLabel('API key', { exact: true }).inputValue()).toBe('');
    expect(await pageTraces(page)).not.toContain(apiKey);
    expect(stack.consoleMessages.join('\n')).not.toContain(apiKey);
    expect(stack.logs.text()).not.toContain(apiKey);

    await page.getByRole('button', { name: 'Diagnostics' }).click();
    await stack.waitForScreen('diagnostics');
    await checkScreen(stack, 'diagnostics');
    expect(await pageTraces(page)).not.toContain(apiKey);

    await page.getByRole('button', { name: 'Lock' }).click();
    expect(stack.service.staffUnlocked()).toBe(false);
    // With the key the kiosk connects by itself.
    await stack.waitForScreen('ready', 30_000);
  }, 60_000);

  it('a customer switches to Spanish; after "Next" the next customer gets English and no trace of them', async () => {
    const { page } = stack;
    await expect.poll(() => page.locator('main').textContent()).toContain(READY_EN);
    await page.getByTestId('lang-es').click();
    await expect.poll(() => stack.service.state().language).toBe('es');
    await expect.poll(() => page.locator('main').textContent()).not.toContain(READY_EN);
    expect(await page.locator('html').getAttribute('lang')).toBe('es');
    await checkScreen(stack, 'ready-es');

    stack.counter.rig.tap();
    await stack.waitForScreen('result', 40_000);
    expect(await page.getByTestId('verdict').getAttribute('data-verdict')).toBe('verified');
    expect(await page.locator('html').getAttribute('lang')).toBe('es');
    await checkScreen(stack, 'result-verified-identity-es');

    await page.getByTestId('next-button').click();
    stack.counter.rig.lift();
    await stack.waitForScreen('ready');
    await expect.poll(() => stack.service.state().language).toBe('en');
    await expect.poll(() => page.locator('main').textContent()).toContain(READY_EN);
    const portrait = stack.portraits.at(-1);
    expect(portrait).toBeDefined();
    expect(await personalDataLeft(stack, [...HOLDER_NEEDLES, base64Slice(portrait ?? '')])).toEqual([]);
  }, 60_000);
});
