/**
 * The support bundle saved by the staff's own browser on the browser host (issue 28 item 4), in real
 * Chromium against the whole kiosk: staff unlock, open diagnostics, press "Download to this computer", and
 * the browser receives a gzip archive through `/support-bundle/<ticket>`; the same link a second time is
 * refused (one-time ticket). Screenshots of the card at 1280×800 and 1080×1920.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, SCREENSHOT_DIR, startBrowserStack, stopBrowserStack, type BrowserStack } from '../support/e2e-browser.js';

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack();
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

describe('support bundle download (browser host)', () => {
  it('"Download to this computer" hands a gzip bundle to the browser, once', async () => {
    const { page } = stack;
    await page.getByTestId('staff-button').click();
    await stack.waitForScreen('staff_pin');
    await page.keyboard.type(stack.pin ?? '');
    await page.keyboard.press('Enter');
    await stack.waitForScreen('settings');
    await page.getByRole('button', { name: 'Diagnostics' }).click();
    await stack.waitForScreen('diagnostics');
    const button = page.getByTestId('support-bundle-download');
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 30_000 }), button.click()]);
    expect(download.suggestedFilename()).toMatch(/^mdl-kiosk-support-.*\.tar\.gz$/);
    const bytes = await readFile(await download.path());
    expect([bytes[0], bytes[1]]).toEqual([0x1f, 0x8b]);
    await expect
      .poll(() => page.getByTestId('support-bundle-status').textContent())
      .toMatch(/^Support bundle handed to this browser’s downloads \(\d[\d,]* KB\):/);
    // The link is spent: the same URL again is refused.
    const again = await page.evaluate<number>(`fetch(${JSON.stringify(new URL(download.url()).pathname)}).then((r) => r.status)`);
    expect(again).toBe(404);
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 1080, height: 1920 },
    ]) {
      await page.setViewportSize(viewport);
      await page.getByTestId('support-bundle').scrollIntoViewIfNeeded();
      await page.screenshot({
        path: join(SCREENSHOT_DIR, `staff-support-download.${viewport.width}x${viewport.height}.png`),
        animations: 'disabled',
        caret: 'hide',
      });
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Lock' }).click();
    await stack.waitForScreen('ready');
  });
});
