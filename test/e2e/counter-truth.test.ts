/**
 * The counter tells the truth (issue 18), in real Chromium against the whole stack: the screen offers only
 * the ways that work and says Needs staff (naming Bluetooth) when nothing can; a tap while offline gets the
 * offline message at once; a staff paste shows its outcome; "Try again" keeps the customer's language and,
 * with the phone left on the reader, asks to lift it rather than thanking; a staff unlock/lock greets the
 * next customer in the default language; "Tap your phone again" has a way out; a code cut short is "could
 * not be read"; a page with a wrong token says its address is not valid; a gateway that refuses the session
 * socket is Needs staff naming it, and the staff diagnostics say why. Each screen is photographed and
 * checked with axe.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QrScannedResult, dispatchIntent } from '../../src/common/kiosk-api.js';
import {
  SCREENSHOT_DIR,
  axeViolations,
  checkScreen,
  scannerTypes,
  startBrowserStack,
  stopBrowserStack,
  type BrowserStack,
} from '../support/e2e-browser.js';

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack();
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

/** Records, in the page, every `data-screen` the app root shows from now on (a screen held for one frame too). */
async function recordScreens(page: Page): Promise<void> {
  await page.evaluate(`(() => {
    const seen = [];
    window.__screens = seen;
    const take = () => { const main = document.querySelector('main[data-screen]'); if (main) seen.push(main.getAttribute('data-screen')); };
    take();
    new MutationObserver(take).observe(document.querySelector('.app'), { subtree: true, childList: true, attributes: true, attributeFilter: ['data-screen'] });
  })()`);
}
const screensSeen = (page: Page): Promise<string[]> => page.evaluate<string[]>('window.__screens.slice()');

async function openStaff(page: Page): Promise<void> {
  await page.getByTestId('staff-button').click();
  await stack.waitForScreen('staff_pin');
  await page.getByLabel('PIN', { exact: true }).fill(stack.pin ?? '');
  await page.getByRole('button', { name: 'Unlock' }).click();
  await stack.waitForScreen('settings');
}

async function scrollToTop(page: Page): Promise<void> {
  await page.evaluate(
    `(() => { for (const el of [document.scrollingElement, ...document.querySelectorAll('main, .staff-columns')]) if (el) el.scrollTop = 0; })()`,
  );
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), animations: 'disabled', caret: 'hide' });
  expect(await axeViolations(page), name).toEqual([]);
}

describe('ready only when the kiosk can verify', () => {
  it('every device works: the tap and the camera are offered', async () => {
    const { page } = stack;
    await expect.poll(() => page.getByTestId('way-tap').count()).toBe(1);
    expect(await page.getByTestId('way-qr').getAttribute('data-by')).toBe('camera');
    expect(await page.locator('main h1').textContent()).toBe('Tap your phone on the reader');
  });

  it('no NFC reader: no "hold your phone on the reader", only the QR code', async () => {
    const { page } = stack;
    stack.counter.rig.nfc.setAvailability({ usable: false, reason: 'no_reader' });
    await expect.poll(() => page.getByTestId('way-tap').count()).toBe(0);
    expect(await page.locator('main h1').textContent()).toBe('Show your QR code');
    expect(await page.locator('main').textContent()).not.toContain('Hold your phone on the reader');
    await checkScreen(stack, 'ready-no-nfc');
    stack.counter.rig.nfc.setAvailability({ usable: true });
    await expect.poll(() => page.getByTestId('way-tap').count()).toBe(1);
  });

  it('no Bluetooth adapter and no NFC (`--nfc none` on such a machine): Needs staff naming Bluetooth, scans refused; a tap never says "hold still"; Ready again when Bluetooth is back', async () => {
    const { page, counter } = stack;
    // The kiosk's Bluetooth adapters of the in-memory radio (the emulated HCI radio has no such switch).
    const radio = counter.radioRig;
    if (!radio) throw new Error('this test needs the counter on the in-memory radio');
    await recordScreens(page);
    counter.rig.nfc.setAvailability({ usable: false, reason: 'no_reader' });
    radio.central.setAvailability({ usable: false, reason: 'no_adapter' });
    radio.peripheral.setAvailability({ usable: false, reason: 'no_adapter' });
    await stack.waitForScreen('cannot_verify', 10_000);
    expect(await page.getByTestId('needs-staff-cause').getAttribute('data-cause')).toBe('ble_unavailable');
    expect(await page.getByTestId('needs-staff-cause').textContent()).toBe('Bluetooth is not working on this kiosk.');
    expect(await page.locator('[data-status="summary"]').getAttribute('data-level')).toBe('problem');
    await checkScreen(stack, 'needs-staff-bluetooth', { docs: true });
    // Before: Ready, and every QR code ran to "Bluetooth is not working … Try again".
    const reports = stack.reports.length;
    const scanned = QrScannedResult.parse(
      await dispatchIntent(stack.service, 'qrScanned', { text: counter.presentQr(), source: 'camera' }, () => false),
    );
    expect(scanned).toEqual({ accepted: false, reason: 'not_waiting' });
    // The reader comes back, Bluetooth does not: a tap is refused at once (the kiosk never said "tap").
    counter.rig.nfc.setAvailability({ usable: true });
    counter.rig.tap();
    await expect.poll(() => stack.reports.length, { timeout: 10_000 }).toBe(reports + 1);
    expect(stack.reports.at(-1)).toMatchObject({ result: 'not_ready', error: { code: 'ble_unavailable', retryable: false } });
    expect(await screensSeen(page)).not.toContain('engaging');
    counter.rig.lift();
    radio.central.setAvailability({ usable: true });
    radio.peripheral.setAvailability({ usable: true });
    const retry = page.getByTestId('retry-button');
    if ((await stack.screen()) === 'error') await retry.click();
    await stack.waitForScreen('ready', 20_000);
    expect(await screensSeen(page)).not.toContain('engaging');
  }, 60_000);

  it('a camera denied on this screen: no "show the QR code to the camera", the scanner offered; another screen with a working camera still offers it', async () => {
    // A second screen of the same kiosk whose browser refuses the camera.
    const denied = await stack.context.newPage();
    try {
      await denied.addInitScript(
        `navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException('Permission denied', 'NotAllowedError'));`,
      );
      await denied.goto(stack.host.url);
      await denied.locator('main[data-screen="ready"]').waitFor({ timeout: 15_000 });
      await expect.poll(() => denied.getByTestId('way-qr').getAttribute('data-by'), { timeout: 10_000 }).toBe('scanner');
      const text = (await denied.locator('main').textContent()) ?? '';
      expect(text).toContain('If your wallet shows a QR code instead, hold it up to the scanner');
      expect(text).not.toContain('to the camera');
      expect(await denied.getByTestId('camera-preview').getAttribute('data-camera-state')).toBe('denied');
      await shot(denied, 'ready-camera-denied');
      // The first screen's camera works: it keeps offering it, whatever the other screen reported last.
      expect(stack.service.state().camera.state).toBe('denied');
      expect(await stack.page.getByTestId('way-qr').getAttribute('data-by')).toBe('camera');
    } finally {
      await denied.close();
    }
  }, 40_000);
});

describe('offline means offline', () => {
  it('a tap while offline: the offline message at once, never "hold your phone still", the status never "ready"', async () => {
    const { page, counter } = stack;
    await stack.backend.goOffline();
    await stack.waitForScreen('offline', 20_000);
    await recordScreens(page);
    await page.evaluate(`(() => {
      const levels = [];
      window.__levels = levels;
      const take = () => { const s = document.querySelector('[data-status="summary"]'); if (s) levels.push(s.getAttribute('data-level')); };
      take();
      new MutationObserver(take).observe(document.querySelector('.status-bar'), { subtree: true, childList: true, attributes: true, characterData: true });
    })()`);
    const reports = stack.reports.length;
    try {
      counter.rig.tap();
      await expect.poll(() => stack.reports.length, { timeout: 5_000 }).toBe(reports + 1);
      expect(stack.reports.slice(reports)).toMatchObject([{ result: 'not_ready', error: { code: 'backend_unavailable' } }]);
      // The offline screen stays (issue 28): no "That did not work" whose "Try again" cannot work, and no
      // "lift your phone and tap again" while still offline.
      await new Promise((done) => setTimeout(done, 1_000));
      expect(await stack.screen()).toBe('offline');
      const seen = await screensSeen(page);
      expect(seen).not.toContain('engaging');
      expect(seen).not.toContain('error');
      expect(seen).not.toContain('remove_phone');
      expect(await page.evaluate<string[]>('window.__levels.slice()')).not.toContain('ok');
      await checkScreen(stack, 'offline-tap');
    } finally {
      counter.rig.lift();
      await stack.backend.comeBack();
    }
    await stack.waitForScreen('ready', 20_000);
  }, 60_000);
});

describe('a gateway that refuses the session socket', () => {
  it('the customer sees Needs staff naming the cause, not "connecting" for ever; staff see why in the status bar and the diagnostics (kind, HTTP 404, in a row, the request budget); ready by itself once the gateway routes it', async () => {
    const { page, backend } = stack;
    await recordScreens(page);
    try {
      // Every WebSocket upgrade answered 404 from now on, as by a gateway redeployed without its WebSocket
      // route; the idle session's socket drops with the deployment.
      backend.faults.set({ httpFailures: { upgrade: { status: 404, times: 1_000 } } });
      expect(backend.backend.dropConnections('close')).toBe(1);
      await stack.waitForScreen('config_error', 20_000);
      // From Ready through connecting (and offline for the first refusals: a deployment may be under way).
      const path = await screensSeen(page);
      expect(path[0]).toBe('ready');
      expect(path.slice(1).every((name) => name === 'connecting' || name === 'offline' || name === 'config_error')).toBe(true);
      const cause = page.getByTestId('needs-staff-cause');
      expect(await cause.getAttribute('data-cause')).toBe('backend_refuses_socket');
      expect(await cause.textContent()).toBe('This kiosk cannot connect to its verification service.');
      expect(await page.locator('[data-status="summary"]').getAttribute('data-level')).toBe('problem');
      // It stays there while the kiosk keeps checking: no flicker back to "connecting".
      const shownSince = (await screensSeen(page)).length;
      await new Promise((done) => setTimeout(done, 2_500));
      expect((await screensSeen(page)).slice(shownSince).filter((s) => s !== 'config_error')).toEqual([]);
      await page.getByTestId('staff-detail').locator('summary').click();
      expect(await page.locator('.staff-detail-text').textContent()).toBe(
        'the backend refuses the session connection (HTTP 404) — check the WebSocket route of the gateway (checked again within 60 s)',
      );
      await checkScreen(stack, 'needs-staff-gateway-404');

      await openStaff(page);
      const backendStatus = page.locator('[data-status="backend"]');
      expect(await backendStatus.getAttribute('data-level')).toBe('problem');
      expect(await backendStatus.locator('.status-value').textContent()).toBe('refuses the session connection, retrying');
      await page.getByRole('button', { name: 'Diagnostics' }).click();
      await stack.waitForScreen('diagnostics');
      const card = page.getByTestId('backend-failures');
      await card.waitFor();
      expect(await card.getAttribute('data-failing')).toBe('true');
      expect(await card.locator('[data-backend="kind"]').getAttribute('data-kind')).toBe('socket_refused');
      expect(await card.locator('[data-backend="kind"]').textContent()).toBe('The backend refuses the session connection');
      expect(await card.locator('[data-backend="status"]').textContent()).toBe('404');
      expect(await card.locator('[data-backend="stage"]').textContent()).toBe('opening the session connection (WebSocket)');
      expect(await card.locator('[data-backend="detail"]').textContent()).toContain('check the WebSocket route of the gateway');
      expect(Number(await card.locator('[data-backend="consecutive"]').textContent())).toBeGreaterThanOrEqual(3);
      // The budget in use; at 20 of 20 the card also says why the kiosk is quiet for a while.
      expect(await card.locator('[data-backend="requests"]').textContent()).toMatch(
        /^(1?\d of 20|20 of 20 — spent: the next request waits for the oldest to leave the minute)$/,
      );
      expect(Number(await card.locator('[data-total="socket_refused"] dd').textContent())).toBeGreaterThanOrEqual(3);
      // The same cause in the self-test, in words.
      await page.getByTestId('self-test').click();
      await page.getByTestId('self-test-results').waitFor({ timeout: 15_000 });
      expect(await page.locator('[data-check="backend"] [data-status]').getAttribute('data-status')).toBe('backend_refuses_socket');
      expect(await page.locator('[data-check="backend"] [data-status]').textContent()).toBe('the backend refuses the session connection');
      // The picture from the top, as staff open the screen (the self-test scrolled its results into view).
      await scrollToTop(page);
      await checkScreen(stack, 'diagnostics-gateway-404');

      // The gateway routes the socket again: the kiosk finds it by itself, and the diagnostics say so. The
      // test's backoff (0.5–1 s) would spend the request budget (20 a minute) in seconds: the budget then
      // holds the next probe until its window moves on, up to a minute.
      backend.faults.clear();
      await stack.waitForPhase('ready', 75_000);
      await expect
        .poll(
          async () => {
            await page.getByRole('button', { name: 'Refresh' }).click();
            return card.getAttribute('data-failing');
          },
          { timeout: 20_000, interval: 1_000 },
        )
        .toBe('false');
      expect(await card.textContent()).toContain('Working again since the last failure.');
      await scrollToTop(page);
      await checkScreen(stack, 'diagnostics-gateway-fixed');
      await page.getByRole('button', { name: 'Lock' }).click();
      await stack.waitForScreen('ready', 10_000);
    } finally {
      // Whatever failed above, the next tests need the gateway fixed and the staff screens locked.
      backend.faults.clear();
      const lock = page.getByRole('button', { name: 'Lock' });
      if ((await lock.count()) > 0) await lock.click().catch(() => undefined);
    }
  }, 150_000);
});

describe('staff see what they asked for', () => {
  it('a code pasted on the staff screen verifies on the customer screen, and the outcome shows', async () => {
    const { page } = stack;
    await openStaff(page);
    const text = stack.counter.presentQr();
    const field = page.getByTestId('paste-scan').locator('textarea');
    await field.fill(text);
    await field.press('Enter');
    await stack.waitForScreen('result', 40_000);
    expect(await page.getByTestId('verdict').getAttribute('data-verdict')).toBe('verified');
    expect(stack.reports.at(-1)?.transport).toBe('qr');
    // Leaving the staff screens locked them.
    expect(stack.service.staffUnlocked()).toBe(false);
    await page.getByTestId('next-button').click();
    await stack.waitForScreen('ready');
  }, 60_000);
});

describe('the small ones', () => {
  it('"Try again" after an NFC error keeps the customer\'s language, and with the phone still on the reader asks to lift and tap again — no "thank you"', async () => {
    const { page, counter } = stack;
    await page.getByTestId('lang-es').click();
    await expect.poll(() => stack.service.state().language).toBe('es');
    stack.backend.faults.set({ errorOnOp: 'nfc_card_present' });
    counter.rig.tap();
    await stack.waitForScreen('error', 20_000);
    stack.backend.faults.clear();
    await page.getByTestId('retry-button').click();
    await stack.waitForScreen('remove_phone', 10_000);
    expect(await page.getByTestId('remove-body').getAttribute('data-after')).toBe('failure');
    const shown = (await page.locator('main').textContent()) ?? '';
    expect(shown).toContain('Retire el teléfono del lector');
    expect(shown).not.toContain('Gracias');
    expect(stack.service.state().language).toBe('es');
    await checkScreen(stack, 'remove-to-retry-es');
    counter.rig.lift();
    await stack.waitForScreen('ready', 20_000);
    // Before: English here.
    expect(stack.service.state().language).toBe('es');
    expect(await page.locator('html').getAttribute('lang')).toBe('es');
    await page.getByTestId('lang-en').click();
    await expect.poll(() => stack.service.state().language).toBe('en');
  }, 60_000);

  it("a staff unlock and lock end the customer's visit: the next customer is greeted in the default language", async () => {
    const { page } = stack;
    await page.getByTestId('lang-fr').click();
    await expect.poll(() => stack.service.state().language).toBe('fr');
    await page.getByTestId('staff-button').click();
    await stack.waitForScreen('staff_pin');
    await page.locator('main[data-screen="staff_pin"] input[type="password"]').fill(stack.pin ?? '');
    await page.locator('main[data-screen="staff_pin"] button[type="submit"]').click();
    await stack.waitForScreen('settings');
    expect(stack.service.state().language).toBe('en');
    await page.getByRole('button', { name: 'Lock' }).click();
    await stack.waitForScreen('ready');
    expect(await page.locator('main h1').textContent()).toBe('Tap your phone on the reader');
  }, 40_000);

  it('"Tap your phone again" has a way out: Cancel goes back to Ready at once without an error screen; no message count for the customer', async () => {
    const { page, counter } = stack;
    await counter.reconfigurePhone({ fieldDropAtApdu: 3 });
    try {
      await recordScreens(page);
      counter.rig.tap();
      await stack.waitForScreen('awaiting_card', 15_000);
      expect(await page.getByTestId('progress').textContent()).not.toMatch(/message/);
      await checkScreen(stack, 'tap-again');
      await page.getByTestId('cancel-button').click();
      const after = await stack.waitForScreen(['ready', 'remove_phone'], 10_000);
      if (after === 'remove_phone') counter.rig.lift();
      counter.rig.lift();
      await stack.waitForScreen('ready', 20_000);
      expect(await screensSeen(page)).not.toContain('error');
      expect(stack.reports.at(-1)?.result).toBe('cancelled');
    } finally {
      await counter.reconfigurePhone({ fieldDropAtApdu: null });
    }
  }, 60_000);

  it('a QR code cut short by the scanner: "This code could not be read", and no verification starts', async () => {
    const { page, counter } = stack;
    const reports = stack.reports.length;
    const text = counter.presentQr();
    await scannerTypes(page, text.slice(0, -12));
    await expect.poll(() => page.getByTestId('scan-hint').getAttribute('data-hint')).toBe('unreadable');
    expect(await page.getByTestId('scan-hint').textContent()).toContain('This code could not be read.');
    await checkScreen(stack, 'ready-scan-unreadable');
    await new Promise((done) => setTimeout(done, 300));
    expect(stack.reports.length).toBe(reports);
    expect(await stack.screen()).toBe('ready');
  });

  it('a page opened with a wrong token, or none, says its address is not valid for this kiosk, instead of "Connecting…" for ever; the status bar agrees', async () => {
    const wrong = await stack.context.newPage();
    try {
      await wrong.goto(stack.host.url.replace(/#token=.*$/, `#token=${'A'.repeat(43)}`));
      await wrong.locator('[data-testid="disconnected-body"][data-refused="true"]').waitFor({ timeout: 20_000 });
      expect(await wrong.locator('main h1').textContent()).toBe('This address is not valid for this kiosk');
      // The status bar agrees: no "connecting" under a page that will never connect.
      expect(await wrong.locator('[data-status="kiosk"]').getAttribute('data-level')).toBe('problem');
      expect(await wrong.locator('[data-status="kiosk"] .status-value').textContent()).toBe('needs staff');
      await shot(wrong, 'disconnected-bad-address');
      // Without any token (the hash dropped when the address was copied): the same, with that reason.
      await wrong.goto(stack.host.url.replace(/#token=.*$/, ''));
      await wrong.locator('[data-testid="disconnected-body"][data-missing-token="true"]').waitFor({ timeout: 20_000 });
      expect(await wrong.locator('main h1').textContent()).toBe('This address is not valid for this kiosk');
      expect(await wrong.locator('[data-status="kiosk"] .status-value').textContent()).toBe('needs staff');
      await shot(wrong, 'disconnected-no-token');
    } finally {
      await wrong.close();
    }
  }, 40_000);
});
