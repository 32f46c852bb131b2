/**
 * The camera path in real Chromium: Chromium's fake camera films the virtual phone's engagement QR (a
 * `.y4m` written before the browser starts), the screen decodes it in its worker and sends it to the
 * kiosk; the identity outcome shows the expected fields and the portrait; then the outcome clears itself
 * and no personal data is left anywhere the page, the console or the kiosk's log keeps things.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_HOLDER_DATA } from '../../src/qa/index.js';
import { HOLDER_NEEDLES, PORTRAIT_COLOURS, base64Slice, canvasPixels, checkScreen, personalDataLeft, startBrowserStack, type BrowserStack } from '../support/e2e-browser.js';

const NS = 'org.iso.18013.5.1';
/** Long enough to look at the outcome, short enough to watch it clear itself. */
const RESULT_DISPLAY_MS = 6_000;

let stack: BrowserStack;

beforeAll(async () => {
  stack = await startBrowserStack({ camera: 'qr', config: { profile: 'identity', timeouts: { resultDisplayMs: RESULT_DISPLAY_MS } } });
}, 60_000);

afterAll(async () => {
  if ((stack as BrowserStack | undefined) === undefined) return; // beforeAll failed (and cleaned up)
  const outside = stack.nonLocalRequests();
  await stack.stop();
  expect(outside, 'requests that left 127.0.0.1').toEqual([]);
}, 30_000);

describe('QR from the camera', () => {
  it('the fake camera shows the phone\'s QR → the screen reads it → verified identity with fields and portrait', async () => {
    await stack.waitForScreen('result', 45_000);
    expect(stack.reports.at(-1)?.transport).toBe('qr');
    expect(await stack.page.getByTestId('verdict').getAttribute('data-verdict')).toBe('verified');
    const row = (element: string) => stack.page.locator(`[data-testid="element-row"][data-element="${NS}/${element}"]`);
    await expect.poll(() => row('family_name').textContent()).toContain(DEFAULT_HOLDER_DATA.family_name);
    expect(await row('given_name').textContent()).toContain(DEFAULT_HOLDER_DATA.given_name);
    expect(await row('document_number').textContent()).toContain(DEFAULT_HOLDER_DATA.document_number);
    expect(await row('birth_date').textContent()).toContain('1990');
    expect(await row('issuing_authority').textContent()).toContain(DEFAULT_HOLDER_DATA.issuing_authority);
    const portrait = stack.page.getByTestId('portrait');
    await expect.poll(() => portrait.getAttribute('data-portrait-state'), { timeout: 10_000 }).toBe('shown');
    const pixels = await canvasPixels(stack.page, '[data-testid="portrait"]', [PORTRAIT_COLOURS.skin, PORTRAIT_COLOURS.background]);
    expect(pixels.colours).toBeGreaterThan(8);
    expect(pixels.shares[0], 'skin pixels').toBeGreaterThan(0.05);
    expect(pixels.shares[1], 'background pixels').toBeGreaterThan(0.05);
    await checkScreen(stack, 'result-verified-identity', { docs: true });
  }, 60_000);

  it('the outcome clears itself: afterwards no name, document number or portrait bytes anywhere', async () => {
    const portrait = stack.portraits.at(-1);
    expect(portrait, 'the backend disclosed a portrait').toBeDefined();
    // Once the result is gone the screen is back to waiting (the camera may see the used code again).
    await stack.page.waitForSelector('main[data-screen]:not([data-screen="result"])', { timeout: RESULT_DISPLAY_MS + 10_000 });
    expect(await stack.page.getByTestId('portrait').count()).toBe(0);
    expect(await personalDataLeft(stack, [...HOLDER_NEEDLES, base64Slice(portrait ?? '')])).toEqual([]);
  }, 30_000);
});
