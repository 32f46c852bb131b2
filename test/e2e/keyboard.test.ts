/**
 * The kiosk driven by keyboard alone, in real Chromium (issue 10 item 5, "fully keyboard operable"): a
 * customer switches the language, staff open the settings with the PIN and lock them again, and "Next
 * customer" clears an outcome — Tab to reach a control, Enter to use it, digits to type the PIN. No click.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkScreen, startBrowserStack, stopBrowserStack, type BrowserStack } from '../support/e2e-browser.js';

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack();
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

interface Focused {
  readonly testId: string | null;
  readonly text: string;
}

/** Presses Tab until the focused control matches (at most `max` presses); fails naming what it passed. */
async function tabTo(page: Page, matches: (focused: Focused) => boolean, max = 40): Promise<void> {
  const seen: string[] = [];
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const focused = page.locator(':focus');
    if ((await focused.count()) === 0) continue;
    const current: Focused = {
      testId: await focused.first().getAttribute('data-testid'),
      text: ((await focused.first().textContent()) ?? '').trim(),
    };
    if (matches(current)) return;
    seen.push(current.testId ?? current.text.slice(0, 30));
  }
  throw new Error(`no matching control reached with Tab; focus went through: ${seen.join(' | ')}`);
}

describe('keyboard only', () => {
  it('a customer switches the language with Tab and Enter', async () => {
    const { page } = stack;
    await tabTo(page, (f) => f.testId === 'lang-es');
    await page.keyboard.press('Enter');
    await expect.poll(() => stack.service.state().language).toBe('es');
    await expect.poll(() => page.locator('html').getAttribute('lang')).toBe('es');
    await tabTo(page, (f) => f.testId === 'lang-en');
    await page.keyboard.press('Enter');
    await expect.poll(() => stack.service.state().language).toBe('en');
  });

  it('staff reach the settings with Tab, Enter and the PIN typed on the keyboard, and lock them again', async () => {
    const { page } = stack;
    await tabTo(page, (f) => f.testId === 'staff-button');
    await page.keyboard.press('Enter');
    await stack.waitForScreen('staff_pin');
    // The PIN pad takes the focus: digits and Enter are all it needs.
    await page.keyboard.type(stack.pin ?? '');
    await page.keyboard.press('Enter');
    await stack.waitForScreen('settings');
    expect(stack.service.staffUnlockedAnywhere()).toBe(true);
    await checkScreen(stack, 'keyboard-settings');
    await tabTo(page, (f) => f.text === 'Lock');
    await page.keyboard.press('Enter');
    await stack.waitForScreen('ready');
    await expect.poll(() => stack.service.staffUnlockedAnywhere()).toBe(false);
  });

  it('"Next customer" is reached and used by keyboard', async () => {
    const { page } = stack;
    stack.counter.rig.tap();
    await stack.waitForScreen('result', 30_000);
    await tabTo(page, (f) => f.testId === 'next-button');
    await page.keyboard.press('Enter');
    stack.counter.rig.lift();
    await stack.waitForScreen('ready', 15_000);
  });
});
