/**
 * Staff control of speech (issue 32) in real Chromium against the fake `window.kiosk`
 * (test/support/screen-fixtures.ts), on the built screen served with the browser host's headers: the Speech
 * section behind the PIN changes the mode and the volume and the screen state follows; a key set by the
 * managed file is shown locked; a key is set by pressing it, by keyboard alone; the diagnostics' Speech card
 * shows the screen's report or says there is none. Axe 0 and screenshots at 1280×800 and 1080×1920
 * (artifacts/screenshots/staff-speech-*.png).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ScreenState } from '../../src/common/kiosk-api.js';
import { DEFAULT_SPEECH_KEYS } from '../../src/common/speech.js';
import { axeViolations, openBuiltScreen, SCREENSHOT_DIR, type BuiltScreenPage } from '../support/e2e-browser.js';
import {
  fixtureDiagnostics,
  fixtureSettings,
  fixtureSpeechDiagnostics,
  fixtureSpeechSettings,
  installFakeKiosk,
  openStaffScreen,
  screenState,
  setFakeDiagnostics,
  setFakeSettings,
  setFakeState,
} from '../support/screen-fixtures.js';

const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 1080, height: 1920 },
] as const;

let screen: BuiltScreenPage | undefined;
let page: Page;

beforeAll(async () => {
  screen = await openBuiltScreen({ viewport: VIEWPORTS[0], stillScreens: true, prepare: (p) => installFakeKiosk(p, 'ready') });
  page = screen.page;
}, 60_000);

afterAll(async () => {
  await screen?.close();
});

type Call = { intent: string; args: Record<string, unknown> };
const calls = async (): Promise<Call[]> => page.evaluate<Call[]>('window.__fakeKiosk.calls.slice()');
const fakeState = async (): Promise<ScreenState> => page.evaluate<ScreenState>('window.__fakeKiosk.getState()');

async function show(state: ScreenState, screen: string): Promise<void> {
  await setFakeState(page, state);
  await page.locator(`main[data-screen="${screen}"]`).waitFor();
}

/** Back to Ready with the fixture's settings and diagnostics (Lock on the staff screens). */
beforeEach(async () => {
  if ((await page.locator('.staff-nav').count()) > 0) await page.getByRole('button', { name: /^(Lock|Bloquear|Verrouiller)$/ }).click();
  await show(screenState('ready'), 'ready');
  await setFakeSettings(page, fixtureSettings());
  await setFakeDiagnostics(page, fixtureDiagnostics());
});

async function screenshot(name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const { width, height } = page.viewportSize() ?? VIEWPORTS[0];
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.${width}x${height}.png`), animations: 'disabled', caret: 'hide' });
}

async function openSettings(): Promise<void> {
  await openStaffScreen(page, 'settings');
  await page.getByTestId('speech-settings').waitFor();
}

describe('the Speech section of the settings', () => {
  for (const viewport of VIEWPORTS) {
    it(`mode and volume saved behind the PIN reach the screen state (${viewport.width}×${viewport.height})`, async () => {
      await page.setViewportSize(viewport);
      await openSettings();
      const section = page.getByTestId('speech-settings');
      await section.getByLabel('Speech', { exact: true }).selectOption('always');
      await section.getByLabel('Volume each customer starts at').selectOption({ label: '50 %' });
      // Runs in the page; typed without the DOM library (this project's tsconfig has none).
      await section
        .locator('legend')
        .first()
        .evaluate((el) => {
          (el as { scrollIntoView(options: { block: string }): void }).scrollIntoView({ block: 'start' });
        });
      await screenshot('staff-speech-settings-top');
      await page.getByTestId('speech-keys').scrollIntoViewIfNeeded();
      await screenshot('staff-speech-settings');
      expect(await axeViolations(page)).toEqual([]);
      await page.getByTestId('settings-save').click();
      await expect.poll(() => page.getByTestId('settings-status').textContent()).toBe('Saved.');
      const saved = (await calls()).filter((c) => c.intent === 'saveSettings').at(-1);
      expect(saved?.args).toEqual({ speech: { mode: 'always', volume: 0.5 } });
      const state = await fakeState();
      expect(state.speech).toMatchObject({ mode: 'always', volume: 0.5 });
      // The form shows what was saved.
      await expect.poll(() => section.getByLabel('Speech', { exact: true }).inputValue()).toBe('always');
    });
  }

  it('a key set by the managed file is shown locked, with no way to change it; the other keys can be', async () => {
    await page.setViewportSize(VIEWPORTS[0]);
    await setFakeSettings(page, fixtureSpeechSettings());
    await openSettings();
    const start = page.locator('[data-field="speech.keys.start"]');
    await expect.poll(() => start.locator('.field-locked').getAttribute('data-locked-by')).toBe('managed');
    expect(await start.getByRole('button').count()).toBe(0);
    expect(await page.getByTestId('speech-key-add-stop').isEnabled()).toBe(true);
    expect(await page.locator('[data-field="speech.headsetOnly"] input').isDisabled()).toBe(true);
    expect(await page.locator('[data-field="speech.mode"] select').isDisabled()).toBe(false);
    await page.getByTestId('speech-keys').scrollIntoViewIfNeeded();
    await screenshot('staff-speech-locked');
    expect(await axeViolations(page)).toEqual([]);
  });

  it('a key is set by pressing it, by keyboard alone; Escape cancels; the save sends every action with it', async () => {
    await page.setViewportSize(VIEWPORTS[0]);
    await openSettings();
    const add = page.getByTestId('speech-key-add-stop');
    await add.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => add.getAttribute('aria-pressed')).toBe('true');
    await page.keyboard.press('Escape');
    await expect.poll(() => add.getAttribute('aria-pressed')).toBe('false');
    expect(await page.locator('[data-field="speech.keys.stop"] li[data-code]').count()).toBe(DEFAULT_SPEECH_KEYS.stop.length);
    await page.keyboard.press('Enter');
    await page.keyboard.press('KeyS');
    await page.locator('[data-field="speech.keys.stop"] li[data-code="KeyS"]').waitFor();
    // A key another action has is refused before sending, next to the action.
    await page.keyboard.press('Enter');
    await page.keyboard.press('Numpad5');
    await page.getByTestId('settings-save').click();
    await expect.poll(() => page.locator('[data-field="speech.keys.stop"] .field-error').textContent()).toContain('Start speech');
    await page.getByRole('button', { name: 'Remove Keypad 5 from “End speech”' }).click();
    await page.getByTestId('settings-save').click();
    await expect.poll(() => page.getByTestId('settings-status').textContent()).toBe('Saved.');
    const saved = (await calls()).filter((c) => c.intent === 'saveSettings').at(-1);
    expect(saved?.args).toEqual({ speech: { keys: { ...DEFAULT_SPEECH_KEYS, stop: [...DEFAULT_SPEECH_KEYS.stop, 'KeyS'] } } });
    expect((await fakeState()).speech.keys.stop).toEqual([...DEFAULT_SPEECH_KEYS.stop, 'KeyS']);
  });
});

describe('the Speech card of diagnostics', () => {
  for (const viewport of VIEWPORTS) {
    it(`shows the screen's report: voice, output, why it does not play, the OS voices per language (${viewport.width}×${viewport.height})`, async () => {
      await page.setViewportSize(viewport);
      await setFakeDiagnostics(page, fixtureSpeechDiagnostics());
      await openStaffScreen(page, 'diagnostics');
      const card = page.getByTestId('speech-card');
      await card.waitFor();
      await card.scrollIntoViewIfNeeded();
      const text = (await card.textContent()) ?? '';
      expect(text).toContain('the computer’s voice: Microsoft Zira - English (United States)');
      expect(text).toContain('headset (private): Headphones (USB Audio Device)');
      expect(text).toContain('no: NotAllowedError: the output device refused to play');
      expect(text).toContain('no Spanish voice: the built-in voice is used');
      expect(text).toContain('48 ms over 37');
      await screenshot('staff-speech-diagnostics');
      expect(await axeViolations(page)).toEqual([]);
    });
  }

  it('says the screen has not reported speech yet when diagnostics have no speech section', async () => {
    await page.setViewportSize(VIEWPORTS[0]);
    await openStaffScreen(page, 'diagnostics');
    await expect.poll(() => page.getByTestId('speech-card').textContent()).toContain('The screen has not reported speech yet.');
  });
});
