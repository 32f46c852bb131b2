/**
 * Every screen a customer or staff member can meet, in real Chromium: reached through the real flow where
 * the flow can hold it still (backend delays, a slow holder), each one checked with axe-core (zero
 * violations) and photographed (artifacts/screenshots/, the main ones also docs/screens/ for the README).
 * The screens the other browser tests reach (tap again, rejected, error, offline, needs staff, settings,
 * identity outcome) are checked there the same way.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QrScannedResult, dispatchIntent, type ScreenState } from '../../src/common/kiosk-api.js';
import {
  SCREENSHOT_DIR,
  axeViolations,
  checkScreen,
  scannerTypes,
  startBrowserStack,
  stopBrowserStack,
  type BrowserStack,
} from '../support/e2e-browser.js';
import {
  fakeKioskCalls,
  FAKE_PIN,
  FIXTURE_HOLDER,
  installFakeKiosk,
  openStaffScreen,
  screenState,
  setFakeCamera,
  setFakeState,
} from '../support/screen-fixtures.js';

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack();
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

async function backToReady(): Promise<void> {
  if ((await stack.screen()) === 'result') await stack.page.getByTestId('next-button').click();
  stack.counter.rig.lift();
  await stack.waitForScreen('ready', 20_000);
}

/**
 * The screen on its own, against the fake `window.kiosk` of test/support/screen-fixtures.ts (the preload's
 * surface; it records every intent): what the screen sends and when, where the real host would hide it.
 * A second tab of the same browser, on the same host's page (with `window.kiosk` present it opens no
 * socket). Runs first: the last test of the file stops the host.
 */
describe('the screen against a fake kiosk', () => {
  let page: Page;

  beforeAll(async () => {
    page = await stack.context.newPage();
    page.on('pageerror', (error) => stack.consoleMessages.push(`pageerror: ${error.message}`));
    await installFakeKiosk(page, 'ready');
    await page.goto(stack.host.url);
    await page.locator('main[data-screen="ready"]').waitFor();
  });

  afterAll(async () => {
    await page.close();
  });

  const calls = async (): Promise<{ intent: string; args: Record<string, unknown> }[]> => fakeKioskCalls(page);
  const callsSince = async (from: number): Promise<{ intent: string; args: Record<string, unknown> }[]> => (await calls()).slice(from);
  const show = async (state: ScreenState, screen: string): Promise<void> => {
    await setFakeState(page, state);
    await page.locator(`main[data-screen="${screen}"]`).waitFor();
  };
  const backToReady = async (): Promise<void> => {
    if ((await page.locator('main[data-screen="staff_pin"]').count()) > 0) await page.getByRole('button', { name: 'Cancel' }).click();
    await show(screenState('ready'), 'ready');
  };

  it('"Try again" on the error screen re-arms (`retry`), it does not just dismiss (`next`)', async () => {
    await show(screenState('error'), 'error');
    const from = (await calls()).length;
    await page.getByTestId('retry-button').click();
    await expect.poll(async () => (await callsSince(from)).map((c) => c.intent)).toEqual(['retry']);
    await backToReady();
  });

  it('an outcome the host does not clear is hidden 5 s after its clearsAt: a neutral screen, no personal data', async () => {
    const now = Date.now();
    const result = { ...screenState('result_verified', now), clearsAt: now + 1_000 };
    await show(result, 'result');
    await expect.poll(() => page.getByTestId('portrait').getAttribute('data-portrait-state')).toBe('shown');
    expect(await page.locator('main').textContent()).toContain('21 or older');
    // The host goes quiet (or keeps repeating the same state) and the socket stays open.
    await page.locator('main[data-screen="waiting"]').waitFor({ timeout: 10_000 });
    const hiddenAfter = Date.now() - result.clearsAt;
    expect(hiddenAfter).toBeGreaterThanOrEqual(4_900);
    expect(hiddenAfter).toBeLessThan(8_000);
    const text = (await page.locator('html').innerHTML()) + (await page.locator('body').innerText());
    for (const needle of [FIXTURE_HOLDER.family, FIXTURE_HOLDER.given, 'D1234567', '21 or older']) expect(text).not.toContain(needle);
    expect(await page.getByTestId('portrait').count()).toBe(0);
    expect(await page.getByTestId('verdict').count()).toBe(0);
    // Repeated by the host: still hidden.
    await setFakeState(page, { ...result, session: { ...result.session, expiresAt: (result.session.expiresAt ?? 0) - 5_000 } });
    await new Promise((done) => setTimeout(done, 300));
    expect(await page.locator('main').getAttribute('data-screen')).toBe('waiting');
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'waiting.png'), animations: 'disabled', caret: 'hide' });
    expect(await axeViolations(page)).toEqual([]);
    // The host comes back with the next customer: shown as usual.
    await backToReady();
  });

  it("the PIN pad's Cancel locks; an unlocked session found under a customer screen is locked by the screen", async () => {
    let from = (await calls()).length;
    await openStaffScreen(page, 'staff_pin');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.locator('main[data-screen="ready"]').waitFor();
    await expect.poll(async () => (await callsSince(from)).map((c) => c.intent)).toContain('lock');

    // Unlocked elsewhere (a reload, a reconnection): the customer screen shows, so the screen locks at once.
    from = (await calls()).length;
    const ready = screenState('ready');
    await show({ ...ready, staff: { ...ready.staff, unlocked: true, unlockedUntil: Date.now() + 120_000 } }, 'ready');
    // (The camera on Ready may report its state meanwhile: not a staff intent.)
    const staffIntents = async (): Promise<string[]> => (await callsSince(from)).map((c) => c.intent).filter((i) => i !== 'reportCamera');
    await expect.poll(staffIntents).toEqual(['lock']);
    await expect.poll(() => page.evaluate('window.__fakeKiosk.getState().staff.unlocked')).toBe(false);

    // Lock on the staff screens: one lock, back to the customer screen.
    await openStaffScreen(page, 'settings');
    from = (await calls()).length;
    await page.getByRole('button', { name: 'Lock' }).click();
    await page.locator('main[data-screen="ready"]').waitFor();
    await new Promise((done) => setTimeout(done, 300));
    // (Back on Ready the camera starts again and says so: not a staff intent.)
    expect(await staffIntents()).toEqual(['lock']);
  });

  it('the request profile applies at once through setProfile; Save never sends it', async () => {
    await openStaffScreen(page, 'settings');
    await page.locator('[data-field="backendUrl"] input').waitFor();
    let from = (await calls()).length;
    await page.getByLabel('Request profile').selectOption('identity');
    await expect
      .poll(async () => (await callsSince(from)).filter((c) => c.intent !== 'getSettings'))
      .toEqual([{ intent: 'setProfile', args: { name: 'identity' } }]);
    await expect.poll(() => page.getByText('Request profile changed.').count()).toBe(1);
    from = (await calls()).length;
    await page.getByLabel('Bluetooth roles').selectOption('central');
    await page.getByTestId('settings-save').click();
    await expect.poll(() => page.getByTestId('settings-status').textContent()).toBe('Saved.');
    expect((await callsSince(from)).filter((c) => c.intent === 'saveSettings')).toEqual([
      { intent: 'saveSettings', args: { bleRoles: 'central' } },
    ]);
    await page.getByRole('button', { name: 'Lock' }).click();
    await page.locator('main[data-screen="ready"]').waitFor();
  });

  it('the self-test probes the camera first and reports it; statuses, counts and events in words, newest first', async () => {
    await setFakeCamera(page, 'real');
    await openStaffScreen(page, 'diagnostics');
    let from = (await calls()).length;
    await page.getByTestId('self-test').click();
    await page.getByTestId('self-test-results').waitFor();
    expect((await callsSince(from)).filter((c) => c.intent !== 'getDiagnostics')).toEqual([
      { intent: 'reportCamera', args: { state: 'active' } },
      { intent: 'reportCamera', args: { state: 'off' } },
      { intent: 'selfTest', args: {} },
    ]);
    // Status keys in words; one the screen does not know ("reachable" is not a service key) as it came.
    expect(await page.locator('[data-check="nfc"] [data-status]').textContent()).toBe('ready');
    expect(await page.locator('[data-check="ble_peripheral"] [data-status]').textContent()).toBe('not set up');
    expect(await page.locator('[data-check="camera"] [data-status]').textContent()).toBe('on');
    expect(await page.locator('[data-count="verifications"] dt').textContent()).toBe('Verifications');
    // Newest first (the fixture lists them oldest first: the screen sorts by time).
    const events = await page.evaluate<string[]>(
      `[...document.querySelectorAll('[data-testid="events"] td[data-event]')].map((c) => c.getAttribute('data-event'))`,
    );
    expect(events[0]).toBe('staff_unlocked');
    expect(events.at(-1)).toBe('future_event_name');
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'diagnostics-self-test.png'), animations: 'disabled', caret: 'hide' });
    expect(await axeViolations(page)).toEqual([]);

    // A camera the browser refuses: reported as denied before the self-test reads it.
    await setFakeCamera(page, 'denied');
    from = (await calls()).length;
    await page.getByTestId('self-test').click();
    await expect
      .poll(async () =>
        (await callsSince(from))
          .filter((c) => c.intent !== 'getDiagnostics')
          .map((c) => `${c.intent}${c.intent === 'reportCamera' ? `:${String(c.args.state)}` : ''}`),
      )
      .toEqual(['reportCamera:denied', 'selfTest']);
    await setFakeCamera(page, 'real');
    await page.getByRole('button', { name: 'Lock' }).click();
    await page.locator('main[data-screen="ready"]').waitFor();
  });

  it('after a PIN lockout ends, the focus is back in the PIN field (the field was disabled meanwhile)', async () => {
    const ready = screenState('ready');
    await show({ ...ready, staff: { ...ready.staff, lockedOutUntil: Date.now() + 1_500 } }, 'ready');
    await openStaffScreen(page, 'staff_pin');
    const field = page.locator('main[data-screen="staff_pin"] input[type="password"]');
    expect(await field.isDisabled()).toBe(true);
    await expect.poll(() => field.isDisabled(), { timeout: 5_000 }).toBe(false);
    await expect
      .poll(() =>
        page.evaluate('document.activeElement === document.querySelector(\'main[data-screen="staff_pin"] input[type="password"]\')'),
      )
      .toBe(true);
    await page.keyboard.type(FAKE_PIN);
    await page.keyboard.press('Enter');
    await page.locator('main[data-screen="settings"]').waitFor();
    await page.getByRole('button', { name: 'Lock' }).click();
    await page.locator('main[data-screen="ready"]').waitFor();
  });

  it('the status bar\'s camera is this screen\'s own: a denied camera here stays "access denied" when another screen reports its camera on', async () => {
    await setFakeCamera(page, 'denied');
    try {
      await show(screenState('starting'), 'starting');
      await show(screenState('ready'), 'ready');
      await expect.poll(() => page.getByTestId('camera-preview').getAttribute('data-camera-state')).toBe('denied');
      // Another browser of the kiosk reports a working camera: the host's state says so.
      await setFakeState(page, { ...screenState('ready'), camera: { ...screenState('ready').camera, state: 'active' } });
      await openStaffScreen(page, 'settings');
      await page.evaluate(
        `(() => { const s = window.__fakeKiosk.getState(); window.__fakeKiosk.setState(Object.assign({}, s, { camera: Object.assign({}, s.camera, { state: 'active' }) })); })()`,
      );
      await expect.poll(() => page.evaluate('window.__fakeKiosk.getState().camera.state')).toBe('active');
      await expect.poll(() => page.locator('[data-status="camera"] .status-value').textContent()).toBe('access denied');
      // For customers the bar is one line; the items are for staff.
      expect(await page.locator('[data-status="summary"]').count()).toBe(0);
      await page.getByRole('button', { name: 'Lock' }).click();
      await page.locator('main[data-screen="ready"]').waitFor();
      expect(await page.locator('[data-status="camera"]').count()).toBe(0);
      expect(await page.locator('[data-status="summary"] .status-value').textContent()).toBe('ready');
    } finally {
      await setFakeCamera(page, 'real');
    }
  });

  it('"Cancel" on "Tap your phone again" sends `cancel`', async () => {
    await show(screenState('awaiting_card'), 'awaiting_card');
    const from = (await calls()).length;
    await page.getByTestId('cancel-button').click();
    await expect.poll(async () => (await callsSince(from)).map((c) => c.intent)).toEqual(['cancel']);
    await backToReady();
  });

  it('changing the PIN asks for the current PIN first', async () => {
    await openStaffScreen(page, 'settings');
    const form = page.getByTestId('pin-change');
    await form.getByLabel('New PIN', { exact: true }).fill('13579');
    await form.getByLabel('New PIN again').fill('13579');
    const from = (await calls()).length;
    await form.getByRole('button', { name: 'Change PIN' }).click();
    await expect
      .poll(() => form.locator('[data-field="pin.current"] [data-testid="field-error"]').textContent())
      .toContain('Enter the current PIN.');
    expect((await callsSince(from)).map((c) => c.intent)).not.toContain('changePin');
    await form.getByLabel('Current PIN').fill('1234');
    await form.getByLabel('New PIN', { exact: true }).fill('13579');
    await form.getByLabel('New PIN again').fill('13579');
    await form.getByRole('button', { name: 'Change PIN' }).click();
    await expect.poll(() => page.getByTestId('pin-change-status').textContent()).toBe('PIN changed.');
    expect(await form.getByLabel('Current PIN').inputValue()).toBe('');
    await page.getByRole('button', { name: 'Lock' }).click();
    await page.locator('main[data-screen="ready"]').waitFor();
  });
});

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
