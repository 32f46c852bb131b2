/**
 * The staff screens in real Chromium against the fake `window.kiosk` (test/support/screen-fixtures.ts), on the
 * built screen served with the browser host's headers: the PIN pad by keyboard (Tab order as laid out,
 * Escape, the focus during a lockout), diagnostics' events in words, and screenshots at 1280×800 and
 * 1080×1920 of each (artifacts/screenshots/staff-*.png).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ScreenState } from '../../src/common/kiosk-api.js';
import { axeViolations, openBuiltScreen, SCREENSHOT_DIR, type BuiltScreenPage } from '../support/e2e-browser.js';
import { fakeKioskCalls, installFakeKiosk, openStaffScreen, screenState, setFakeState } from '../support/screen-fixtures.js';

const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 1080, height: 1920 },
] as const;

let screen: BuiltScreenPage | undefined;
let page: Page;

beforeAll(async () => {
  screen = await openBuiltScreen({
    viewport: VIEWPORTS[0],
    stillScreens: true,
    prepare: (p) => installFakeKiosk(p, 'ready', { volumes: [{ id: '/media/kiosk/SUPPORT-USB', label: 'SUPPORT-USB' }] }),
  });
  page = screen.page;
}, 60_000);

afterAll(async () => {
  await screen?.close();
});

const calls = async (): Promise<{ intent: string; args: Record<string, unknown> }[]> => fakeKioskCalls(page);

async function show(state: ScreenState, screen: string): Promise<void> {
  await setFakeState(page, state);
  await page.locator(`main[data-screen="${screen}"]`).waitFor();
}

/** Whatever a failed test left on screen: back to Ready (Cancel on the PIN pad, Lock on the staff screens). */
async function backToReady(): Promise<void> {
  if ((await page.locator('main[data-screen="staff_pin"]').count()) > 0)
    await page.getByRole('button', { name: /^(Cancel|Cancelar|Annuler)$/ }).click();
  if ((await page.locator('.staff-nav').count()) > 0) await page.getByRole('button', { name: /^(Lock|Bloquear|Verrouiller)$/ }).click();
  await show(screenState('ready'), 'ready');
}

beforeEach(backToReady);

async function screenshot(name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const { width, height } = page.viewportSize() ?? VIEWPORTS[0];
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.${width}x${height}.png`), animations: 'disabled', caret: 'hide' });
}

/** Which of the PIN form's blocks (its direct children: the field, the keypad, the actions…) holds the focus, and where that block is. */
const FOCUSED_BLOCK = `(() => {
  const form = document.querySelector('.pin-form');
  let el = document.activeElement;
  if (!form || !el || !form.contains(el)) return null;
  while (el.parentElement !== form) el = el.parentElement;
  const r = el.getBoundingClientRect();
  return { block: el.className || el.tagName, left: Math.round(r.left), top: Math.round(r.top) };
})()`;

interface Block {
  readonly block: string;
  readonly left: number;
  readonly top: number;
}

describe('the staff PIN pad by keyboard', () => {
  for (const viewport of VIEWPORTS) {
    it(`Tab goes through the pad in the order it is laid out (${viewport.width}×${viewport.height}): column by column, top to bottom`, async () => {
      await page.setViewportSize(viewport);
      await show(screenState('ready'), 'ready');
      await openStaffScreen(page, 'staff_pin');
      await page.keyboard.type('1'); // "Unlock" is enabled (focusable) once there is a digit
      const visited: Block[] = [];
      for (let i = 0; i < 16; i++) {
        const block = await page.evaluate<Block | null>(FOCUSED_BLOCK);
        if (block && visited.at(-1)?.block !== block.block) visited.push(block);
        await page.keyboard.press('Tab');
      }
      expect(visited.map((b) => b.block)).toEqual(['pin-input', 'keypad', 'form-actions']);
      // The reading order: the left column first, each column top to bottom.
      const reading = [...visited].sort((a, b) => (Math.abs(a.left - b.left) > 20 ? a.left - b.left : a.top - b.top));
      expect(visited).toEqual(reading);
      await screenshot('staff-pin');
      expect(await axeViolations(page)).toEqual([]);
      await page.keyboard.press('Escape');
      await page.locator('main[data-screen="ready"]').waitFor();
    });
  }

  it('Escape on the PIN pad goes back to the customer screen and locks, wherever the focus is', async () => {
    await page.setViewportSize(VIEWPORTS[0]);
    for (const focus of ['input', 'keypad']) {
      await openStaffScreen(page, 'staff_pin');
      if (focus === 'keypad') await page.locator('.keypad button').first().focus();
      const from = (await calls()).length;
      await page.keyboard.press('Escape');
      await page.locator('main[data-screen="ready"]').waitFor();
      await expect.poll(async () => (await calls()).slice(from).map((c) => c.intent)).toContain('lock');
    }
  });

  for (const [language, viewport] of [
    ['en', VIEWPORTS[0]],
    ['es', VIEWPORTS[1]],
    ['fr', VIEWPORTS[0]],
  ] as const) {
    it(`during a lockout the focus is on the message, not <body>; "59 s" never breaks between number and unit (${language})`, async () => {
      await page.setViewportSize(viewport);
      const ready = screenState('ready');
      await show({ ...ready, language, staff: { ...ready.staff, lockedOutUntil: Date.now() + 60_000 } }, 'ready');
      await openStaffScreen(page, 'staff_pin');
      const message = page.getByTestId('pin-message');
      await expect.poll(() => message.textContent()).toMatch(/[0-9]+\u00a0s\./);
      await expect.poll(() => page.evaluate('document.activeElement?.getAttribute("data-testid")')).toBe('pin-message');
      expect(await page.evaluate('document.activeElement === document.body')).toBe(false);
      expect(await message.getAttribute('role')).toBe('alert');
      // The number and its unit on one line box: one rectangle for the text node's "NN s." part.
      const rects = await page.evaluate<number>(`(() => {
        const p = document.querySelector('[data-testid="pin-message"]');
        const text = [...p.childNodes].find((n) => n.nodeType === 3 && /\\d/.test(n.textContent));
        const at = text.textContent.search(/[0-9]+\\u00a0s\\./);
        const range = document.createRange();
        range.setStart(text, at);
        range.setEnd(text, text.textContent.length);
        return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
      })()`);
      expect(rects).toBe(1);
      await screenshot(`staff-pin-lockout-${language}`);
      expect(await axeViolations(page)).toEqual([]);
      await page.keyboard.press('Escape');
      await show(ready, 'ready');
    });
  }
});

describe('diagnostics in words', () => {
  for (const [language, viewport, unlocked, unknown] of [
    ['en', VIEWPORTS[0], 'Staff unlocked the settings', 'Other event (see the code)'],
    ['es', VIEWPORTS[1], 'El personal desbloqueó los ajustes', 'Otro evento (vea el código)'],
    ['fr', VIEWPORTS[0], 'Le personnel a déverrouillé les réglages', 'Autre événement (voir le code)'],
  ] as const) {
    it(`recent events: a line in words, the code below it in small type; an unknown code gets the generic line (${language}, ${viewport.width}×${viewport.height})`, async () => {
      await page.setViewportSize(viewport);
      await show({ ...screenState('ready'), language }, 'ready');
      await openStaffScreen(page, 'diagnostics');
      const row = (event: string) => page.locator(`[data-testid="events"] td[data-event="${event}"]`);
      await row('staff_unlocked').waitFor();
      expect(await row('staff_unlocked').locator('.event-line').textContent()).toBe(unlocked);
      expect(await row('staff_unlocked').locator('.event-code').textContent()).toBe('staff_unlocked');
      expect(await row('future_event_name').locator('.event-line').textContent()).toBe(unknown);
      expect(await row('future_event_name').locator('.event-code').textContent()).toBe('future_event_name');
      // The code is the small print: smaller than the line it belongs to.
      const sizes = await page.evaluate<number[]>(
        `['.event-line', '.event-code'].map((s) => parseFloat(getComputedStyle(document.querySelector('td[data-event="staff_unlocked"] ' + s)).fontSize))`,
      );
      expect(sizes[1]).toBeLessThan(sizes[0] ?? 0);
      await screenshot(`staff-diagnostics-${language}`);
      expect(await axeViolations(page)).toEqual([]);
    });
  }
});

describe('the support bundle onto a removable drive', () => {
  for (const viewport of VIEWPORTS) {
    it(`the drives mounted now are offered beside the kiosk's folder; the bundle goes to the one chosen (${viewport.width}×${viewport.height})`, async () => {
      await page.setViewportSize(viewport);
      await openStaffScreen(page, 'diagnostics');
      const where = page.getByTestId('support-bundle-where');
      await expect
        .poll(() => where.locator('option').allTextContents())
        .toEqual(['this kiosk’s support folder', 'removable drive SUPPORT-USB']);
      expect(await page.getByLabel('Write it to').count()).toBe(1);
      await where.selectOption('/media/kiosk/SUPPORT-USB');
      const from = (await calls()).length;
      await page.getByTestId('support-bundle-write').click();
      await expect
        .poll(() => page.getByTestId('support-bundle-path').textContent())
        .toMatch(/^\/media\/kiosk\/SUPPORT-USB\/mdl-kiosk-support-/);
      expect((await calls()).slice(from).filter((c) => c.intent === 'writeSupportBundle')).toEqual([
        { intent: 'writeSupportBundle', args: { volume: '/media/kiosk/SUPPORT-USB' } },
      ]);
      await page.getByTestId('support-bundle').scrollIntoViewIfNeeded();
      await screenshot('staff-support-bundle');
      expect(await axeViolations(page)).toEqual([]);
    });
  }
});
