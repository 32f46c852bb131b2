/**
 * One counter day in real Chromium: the kiosk screen served by the browser host, the embedded mock
 * backend, the virtual phone driven from its own QA page and from the test. Each flow changes the phone
 * (or the backend) while the kiosk keeps running, as QA does, and checks what the customer sees.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchIntent } from '../../src/common/kiosk-api.js';
import { DEFAULT_HOLDER_DATA, drawPortraitRgb } from '../../src/qa/index.js';
import {
  PORTRAIT_COLOURS,
  canvasPixels,
  canvasRgb,
  checkScreen,
  scannerTypes,
  startBrowserStack,
  stopBrowserStack,
  type BrowserStack,
} from '../support/e2e-browser.js';

let stack: BrowserStack;

/**
 * Records, in the kiosk's page, every text the page ever showed (text added to the DOM, text changed in
 * place, attribute values such as aria-label), so the privacy check covers every screen of the run, not
 * only the last one. Plain JS evaluated in the page (this project has no DOM types).
 */
const TEXT_RECORDER = `(() => {
  const seen = [];
  const take = (text) => { if (text) seen.push(text); };
  take(document.documentElement.textContent);
  new MutationObserver((records) => {
    for (const r of records) {
      if (r.type === 'characterData') take(r.target.data);
      else if (r.type === 'attributes') take(r.target.getAttribute(r.attributeName));
      else r.addedNodes.forEach((node) => take(node.textContent));
    }
  }).observe(document.documentElement, { subtree: true, childList: true, characterData: true, attributes: true });
  window.__shownText = seen;
})()`;

beforeAll(async () => {
  // The reader's place as an installer sets it (ui.readerPosition): Ready points there.
  stack = await startBrowserStack({ phonePage: true, config: { ui: { readerPosition: 'below' } } });
  await stack.page.evaluate(TEXT_RECORDER);
  await stack.waitForScreen('ready', 30_000);
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

/** The phone leaves the reader and the screen is back to Ready for the next customer. */
async function nextCustomer(): Promise<void> {
  const { page } = stack;
  if ((await stack.screen()) === 'result' || (await stack.screen()) === 'error') await page.getByTestId('next-button').click();
  stack.counter.rig.lift();
  await stack.waitForScreen('ready');
}

async function verdict(): Promise<string | null> {
  await stack.waitForScreen('result', 40_000);
  return stack.page.getByTestId('verdict').getAttribute('data-verdict');
}

describe('the kiosk screen, flow by flow', () => {
  it('NFC: Tap on the phone page → verified, "21 or older" as the headline, the portrait drawn', async () => {
    const phone = stack.phone;
    if (!phone) throw new Error('no phone page');
    expect(await stack.page.getByTestId('reader-pointer').getAttribute('data-at')).toBe('below');
    await checkScreen(stack, 'ready', { docs: true });
    await phone.getByRole('button', { name: 'Tap (NFC)' }).click();
    await stack.waitForScreen(['engaging', 'ble_connecting', 'transferring', 'result'], 10_000);
    expect(await verdict()).toBe('verified');
    await expect.poll(() => stack.page.getByTestId('age-answer').getAttribute('data-age')).toBe('yes');
    const portrait = stack.page.getByTestId('portrait');
    await expect.poll(() => portrait.getAttribute('data-portrait-state'), { timeout: 10_000 }).toBe('shown');
    const pixels = await canvasPixels(stack.page, '[data-testid="portrait"]', [PORTRAIT_COLOURS.skin, PORTRAIT_COLOURS.background]);
    expect(pixels.width).toBeGreaterThan(0);
    expect(pixels.colours).toBeGreaterThan(8);
    expect(pixels.shares[0], 'skin pixels').toBeGreaterThan(0.05);
    expect(pixels.shares[1], 'background pixels').toBeGreaterThan(0.05);
    await checkScreen(stack, 'result-verified-age', { docs: true });

    // The host pushes a new state for every unrelated change (here the camera's reports; also session
    // freshness and device availability): the same outcome arrives in new objects each time. The portrait
    // must not blank, show "Loading photo…" or be decoded again, and nothing is re-announced.
    await stack.page.evaluate(`(() => {
      const changes = [];
      window.__outcomeChanges = changes;
      new MutationObserver((records) => {
        for (const r of records) {
          const target = r.type === 'characterData' ? r.target.parentElement : r.target;
          if (target && target.closest('.outcome-countdown')) continue;
          changes.push(r.type === 'attributes' ? r.attributeName + '=' + r.target.getAttribute(r.attributeName) : r.type + ':' + (target ? target.textContent : ''));
        }
      }).observe(document.querySelector('main'), { subtree: true, childList: true, characterData: true, attributes: true });
    })()`);
    const before = stack.service.state();
    for (const camera of ['starting', 'off', 'starting', 'off'] as const) {
      await dispatchIntent(stack.service, 'reportCamera', { state: camera }, () => false);
      await expect.poll(() => stack.service.state().camera.state).toBe(camera);
      await new Promise((done) => setTimeout(done, 300));
    }
    expect(stack.service.state().view.outcome).toEqual(before.view.outcome);
    expect(await stack.page.evaluate('window.__outcomeChanges'), 'changes in the outcome while unrelated states arrived').toEqual([]);
    expect(await portrait.getAttribute('data-portrait-state')).toBe('shown');
    expect((await canvasPixels(stack.page, '[data-testid="portrait"]', [PORTRAIT_COLOURS.skin])).shares[0]).toBeGreaterThan(0.05);
    // The phone page shows what the phone did.
    await expect.poll(() => phone.getByTestId('phone-outcome').textContent(), { timeout: 5_000 }).toBe('shared');
    await phone.getByRole('button', { name: 'Lift' }).click();
    await stack.page.getByTestId('next-button').click();
    await stack.waitForScreen('ready');
  });

  it('a keyboard-wedge scanner types the QR text and Enter → verified', async () => {
    const text = stack.counter.presentQr();
    await scannerTypes(stack.page, text);
    expect(await verdict()).toBe('verified');
    expect(stack.reports.at(-1)?.transport).toBe('qr');
    await nextCustomer();
  }, 40_000);

  it('the NFC field drops: "Tap again", then the re-tap finishes the verification', async () => {
    await stack.counter.reconfigurePhone({ fieldDropAtApdu: 3 });
    stack.counter.rig.tap();
    await stack.waitForScreen('awaiting_card', 15_000);
    await checkScreen(stack, 'tap-again', { docs: true });
    stack.counter.rig.retap();
    expect(await verdict()).toBe('verified');
    await stack.counter.reconfigurePhone({ fieldDropAtApdu: null });
    await nextCustomer();
  });

  it('a tampered credential is rejected, with reasons and no green word', async () => {
    await stack.counter.reconfigurePhone({ credential: 'tampered' });
    stack.counter.rig.tap();
    expect(await verdict()).toBe('rejected');
    await checkScreen(stack, 'result-rejected', { docs: true });
    await nextCustomer();
  });

  it('an expired credential is rejected', async () => {
    await stack.counter.reconfigurePhone({ credential: 'expired' });
    stack.counter.rig.tap();
    expect(await verdict()).toBe('rejected');
    await stack.counter.reconfigurePhone({ credential: 'valid' });
    await nextCustomer();
  });

  it('the holder declines on the phone: a neutral "You declined to share" (not the red "not accepted"), nothing disclosed', async () => {
    await stack.counter.reconfigurePhone({ consent: 'decline' });
    stack.counter.rig.tap();
    expect(await verdict()).toBe('declined');
    expect(stack.reports.at(-1)?.outcome).toMatchObject({
      verdict: 'rejected',
      reasons: expect.arrayContaining(['nothing_shared']) as unknown,
    });
    const shown = (await stack.page.locator('main').textContent()) ?? '';
    expect(shown).toContain('You declined to share');
    expect(shown).not.toContain('Not accepted');
    expect(shown).not.toContain('ID not accepted');
    expect(await stack.page.getByTestId('portrait').count()).toBe(0);
    expect(await stack.page.getByTestId('element-row').count()).toBe(0);
    // The session's status (SessionData 20) is for staff: behind "Details for staff", closed.
    expect(await stack.page.getByTestId('staff-details').getAttribute('open')).toBeNull();
    await checkScreen(stack, 'result-declined', { docs: true });
    await stack.counter.reconfigurePhone({ consent: 'approve' });
    await nextCustomer();
  });

  it('the backend sends an error: the error screen, then "Try again" and a verification that works', async () => {
    stack.backend.faults.set({ errorOnOp: 'nfc_card_present' });
    stack.counter.rig.tap();
    await stack.waitForScreen('error', 20_000);
    await checkScreen(stack, 'error', { docs: true });
    stack.backend.faults.clear();
    stack.counter.rig.lift();
    await stack.page.getByTestId('retry-button').click();
    await stack.waitForScreen('ready', 20_000);
    stack.counter.rig.tap();
    expect(await verdict()).toBe('verified');
    await nextCustomer();
  });

  it('the backend goes away: "Offline", and the kiosk recovers by itself when it is back', async () => {
    await stack.backend.goOffline();
    await stack.waitForScreen('offline', 20_000);
    await checkScreen(stack, 'offline', { docs: true });
    await stack.backend.comeBack();
    await stack.waitForScreen('ready', 20_000);
    stack.counter.rig.tap();
    expect(await verdict()).toBe('verified');
    await nextCustomer();
  });

  it('a JPEG 2000 portrait is decoded and drawn (pixels checked)', async () => {
    await stack.counter.reconfigurePhone({ portrait: 'jpeg2000' });
    stack.counter.rig.tap();
    expect(await verdict()).toBe('verified');
    const portraitBase64 = stack.portraits.at(-1) ?? '';
    // A JP2 file starts with its signature box: 0000000C 6A502020.
    expect(Buffer.from(portraitBase64.slice(0, 16), 'base64').subarray(4, 8).toString('latin1')).toBe('jP  ');
    const portrait = stack.page.getByTestId('portrait');
    await expect
      .poll(() => portrait.getAttribute('data-portrait-state'), { timeout: 15_000 })
      .not.toBe('loading')
      .catch(() => undefined);
    // When decoding failed, the page's console says why: show it with the failure.
    expect(await portrait.getAttribute('data-portrait-state'), stack.consoleMessages.slice(-10).join('\n')).toBe('shown');
    const pixels = await canvasPixels(stack.page, '[data-testid="portrait"]', [
      PORTRAIT_COLOURS.skin,
      PORTRAIT_COLOURS.hair,
      PORTRAIT_COLOURS.background,
    ]);
    // The codestream is lossless: the canvas must hold the very face the phone drew, pixel for pixel.
    const drawn = drawPortraitRgb();
    const shown = await canvasRgb(stack.page, '[data-testid="portrait"]');
    expect({ width: shown.width, height: shown.height }).toEqual({ width: drawn.width, height: drawn.height });
    expect(Buffer.from(shown.rgb, 'base64').equals(Buffer.from(drawn.data))).toBe(true);
    expect(pixels.shares[0], 'skin pixels').toBeGreaterThan(0.05);
    expect(pixels.shares[1], 'hair pixels').toBeGreaterThan(0.01);
    expect(pixels.shares[2], 'background pixels').toBeGreaterThan(0.05);
    await stack.counter.reconfigurePhone({ portrait: 'jpeg' });
    await nextCustomer();
  });

  it("the page never showed the holder's name under the age profile, and logged no personal data", async () => {
    const holder = {
      family_name: DEFAULT_HOLDER_DATA.family_name,
      given_name: DEFAULT_HOLDER_DATA.given_name,
      document_number: DEFAULT_HOLDER_DATA.document_number,
    };
    // Whole words: "Doe" must not match "Does" in an unrelated message.
    const patterns = Object.entries(holder).map(([element, value]) => ({
      element,
      pattern: new RegExp(`\\b${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`),
    }));
    for (const { element, pattern } of patterns)
      expect(pattern.test(`Holder: ${holder[element as keyof typeof holder]}.`), element).toBe(true);
    const shown = await stack.page.evaluate<string[]>('window.__shownText');
    // The recorder listened while the flows disclosed outcomes (the age answer and the portrait row).
    expect(
      shown.some((text) => text.includes('21 or older')),
      'the page recorder saw the outcomes',
    ).toBe(true);
    const places: [string, string][] = [
      ['page (any text it ever showed)', [...shown, await stack.page.locator('html').innerHTML()].join('\n')],
      // The kiosk page's own console and its workers; the virtual phone's page is the holder's side.
      ['console', stack.consoleMessages.filter((m) => !m.startsWith('phone page')).join('\n')],
      ['kiosk log', stack.logs.text()],
    ];
    const found = places.flatMap(([where, text]) =>
      patterns.filter((p) => p.pattern.test(text)).map((p) => `${p.element} in the ${where}`),
    );
    expect(found).toEqual([]);
    expect(stack.consoleMessages.filter((m) => m.startsWith('pageerror'))).toEqual([]);
  });
});
