/**
 * Staff and language in real Chromium. The kiosk starts with a backend URL but no API key, so it needs
 * staff; the settings open only with the staff PIN (a wrong one is refused), the API key is typed once and
 * never shown back; then a customer switches the language for their visit, gets verified, presses "Next",
 * and the next customer finds the default language and no trace of the previous one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnlockResult, dispatchIntent } from '../../src/common/kiosk-api.js';
import { join } from 'node:path';
import {
  HOLDER_NEEDLES,
  SCREENSHOT_DIR,
  base64Slice,
  checkScreen,
  pageTraces,
  personalDataLeft,
  startBrowserStack,
  stopBrowserStack,
  type BrowserStack,
} from '../support/e2e-browser.js';

const READY_EN = 'Tap your phone on the reader';

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack({ backendOverride: false, config: { profile: 'identity' } });
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

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
    expect(stack.service.staffUnlockedAnywhere()).toBe(false);
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

    // Changing the PIN asks for the current one; the host refuses a wrong one next to its field. (This
    // kiosk's PIN comes from the test setup, so the host then refuses the change itself, under "New PIN".)
    const newPin = '975310';
    const pinForm = page.getByTestId('pin-change');
    const fillPins = async (current: string): Promise<void> => {
      await pinForm.getByLabel('Current PIN').fill(current);
      await pinForm.getByLabel('New PIN', { exact: true }).fill(newPin);
      await pinForm.getByLabel('New PIN again').fill(newPin);
      await pinForm.getByRole('button', { name: 'Change PIN' }).click();
    };
    await fillPins('111111');
    await expect
      .poll(() => pinForm.locator('[data-field="pin.current"] [data-testid="field-error"]').textContent(), { timeout: 10_000 })
      .toContain('wrong PIN');
    expect(await pinForm.getByLabel('Current PIN').inputValue()).toBe('');
    await fillPins(stack.pin ?? '');
    await expect
      .poll(() => pinForm.locator('[data-field="pin.next"] [data-testid="field-error"]').textContent(), { timeout: 10_000 })
      .toContain('cannot be changed here');
    expect(await pinForm.locator('[data-field="pin.current"] [data-testid="field-error"]').count()).toBe(0);
    expect(stack.service.staffUnlockedAnywhere()).toBe(true);

    await page.getByRole('button', { name: 'Diagnostics' }).click();
    await stack.waitForScreen('diagnostics');
    await checkScreen(stack, 'diagnostics');
    expect(await pageTraces(page)).not.toContain(apiKey);
    // Newest event first.
    const times = await page.locator('[data-testid="events"] tbody tr td:first-child').allTextContents();
    expect(times.length).toBeGreaterThan(2);
    expect(times).toEqual([...times].sort().reverse());
    expect(times[0]).not.toBe(times.at(-1));

    // The self-test probes the camera from the screen first: the camera has not run yet on this kiosk
    // (it needed staff from the start, and the staff screens keep it off), and still the check passes.
    const cameraActive = (): unknown[] => stack.logs.records.filter((r) => r.event === 'camera_state' && r.state === 'active');
    expect(cameraActive()).toEqual([]);
    await page.getByTestId('self-test').click();
    await page.getByTestId('self-test-results').waitFor({ timeout: 15_000 });
    expect(await page.locator('[data-check="camera"]').getAttribute('data-ok')).toBe('true');
    expect(await page.locator('[data-check="camera"] [data-status]').getAttribute('data-status')).toBe('idle');
    expect(await page.locator('[data-check="camera"] [data-status]').textContent()).toBe('off between customers, worked before');
    expect(cameraActive().length).toBe(1);
    expect(stack.service.state().camera.state).toBe('off');
    await checkScreen(stack, 'diagnostics-self-test');

    // One button writes the support bundle and says where it is; nothing of the key is in it.
    await page.getByTestId('support-bundle-write').click();
    await expect
      .poll(() => page.getByTestId('support-bundle-status').textContent(), { timeout: 15_000 })
      .toContain('Support bundle written');
    const bundlePath = (await page.getByTestId('support-bundle-path').textContent()) ?? '';
    expect(bundlePath).toMatch(/\/support\/mdl-kiosk-support-.*\.tar\.gz$/);
    const { gunzipSync } = await import('node:zlib');
    const { readFileSync } = await import('node:fs');
    expect(gunzipSync(readFileSync(bundlePath)).toString('latin1')).not.toContain(apiKey);
    await page.getByTestId('support-bundle').scrollIntoViewIfNeeded();
    await checkScreen(stack, 'diagnostics-support-bundle');

    await page.getByRole('button', { name: 'Lock' }).click();
    await expect.poll(() => stack.service.staffUnlockedAnywhere()).toBe(false);

    // A staff session opened elsewhere is that connection's own: this screen stays locked and shows nothing
    // of it (and does not lock it either: that would be another screen's business).
    const unlocked = UnlockResult.parse(await dispatchIntent(stack.service, 'unlock', { pin: stack.pin ?? '' }, () => false));
    expect(unlocked.ok).toBe(true);
    // With the key the kiosk connects by itself.
    await stack.waitForScreen('ready', 30_000);
    expect(stack.service.staffUnlocked()).toBe(true);
    expect(await stack.screen()).toBe('ready');
    stack.service.lock();
    expect(stack.service.staffUnlockedAnywhere()).toBe(false);
  }, 60_000);

  it('a second tab neither sees nor ends the staff session of the first: the PIN does not bounce back to Ready', async () => {
    const { page } = stack;
    await stack.waitForScreen('ready', 30_000);
    const second = await stack.context.newPage();
    try {
      await second.goto(stack.host.url);
      await second.waitForSelector('main[data-screen="ready"]', { timeout: 15_000 });
      await page.getByTestId('staff-button').click();
      await stack.waitForScreen('staff_pin');
      await page.getByLabel('PIN', { exact: true }).fill(stack.pin ?? '');
      await page.getByRole('button', { name: 'Unlock' }).click();
      await stack.waitForScreen('settings');
      // The second tab shows the customer screen and is told nothing of the session …
      expect(await second.locator('main[data-screen]').getAttribute('data-screen')).toBe('ready');
      // … and the first stays in its settings (before, the second tab locked the kiosk-wide session at once).
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await stack.screen()).toBe('settings');
      expect(stack.service.staffUnlockedAnywhere()).toBe(true);
      await stack.shot('staff-two-tabs-first');
      await second.screenshot({ path: join(SCREENSHOT_DIR, 'staff-two-tabs-second.png') });
      // The second tab's own staff button asks for the PIN: it does not open the first tab's settings.
      await second.getByTestId('staff-button').click();
      await second.waitForSelector('main[data-screen="staff_pin"]', { timeout: 5_000 });
      await second.getByRole('button', { name: 'Cancel' }).click();
      await second.waitForSelector('main[data-screen="ready"]', { timeout: 5_000 });
      expect(await stack.screen()).toBe('settings');
    } finally {
      await second.close();
    }
    await page.getByRole('button', { name: 'Lock' }).click();
    await stack.waitForScreen('ready');
    await expect.poll(() => stack.service.staffUnlockedAnywhere()).toBe(false);
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
