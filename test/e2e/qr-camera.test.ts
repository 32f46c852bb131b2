/**
 * The camera path in real Chromium: Chromium's fake camera films the virtual phone's engagement QR (a
 * `.y4m` written before the browser starts), the screen decodes it in its worker and sends it to the
 * kiosk; the identity outcome shows the expected fields and the portrait; then the outcome clears itself
 * and no personal data is left anywhere the page, the console or the kiosk's log keeps things.
 */
import { renameSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_HOLDER_DATA } from '../../src/qa/index.js';
import {
  HOLDER_NEEDLES,
  PORTRAIT_COLOURS,
  base64Slice,
  canvasPixels,
  checkScreen,
  personalDataLeft,
  scannerTypes,
  startBrowserStack,
  stopBrowserStack,
  type BrowserStack,
} from '../support/e2e-browser.js';
import { writeBlankY4m } from '../support/fake-camera.js';

const NS = 'org.iso.18013.5.1';
/** Long enough to look at the outcome, short enough to watch it clear itself. */
const RESULT_DISPLAY_MS = 6_000;

let stack: BrowserStack;

// Page callbacks run in Chromium (this project has no DOM lib): what the camera instrumentation touches.
interface PageStream {
  getTracks(): { readonly readyState: string }[];
}
declare const navigator: { readonly mediaDevices: { getUserMedia(constraints?: unknown): Promise<PageStream> } };
declare const window: { mdlKioskTestStreams?: PageStream[] };

/** Keeps every stream the page's getUserMedia hands out, so the test can see whether its tracks still run. */
function recordCameraStreams(): void {
  const media = navigator.mediaDevices;
  const open = media.getUserMedia.bind(media);
  const streams: PageStream[] = [];
  window.mdlKioskTestStreams = streams;
  media.getUserMedia = async (constraints) => {
    const stream = await open(constraints);
    streams.push(stream);
    return stream;
  };
}

/** `readyState` of every track of every stream the page opened so far ('live' or 'ended'). */
function cameraTracks(page: Page): Promise<string[]> {
  return page.evaluate(() => (window.mdlKioskTestStreams ?? []).flatMap((stream) => stream.getTracks().map((track) => track.readyState)));
}

beforeAll(async () => {
  stack = await startBrowserStack({ camera: 'qr', config: { profile: 'identity', timeouts: { resultDisplayMs: RESULT_DISPLAY_MS } } });
}, 60_000);

afterAll(() => stopBrowserStack(stack), 30_000);

describe('QR from the camera', () => {
  it("the fake camera shows the phone's QR → the screen reads it → verified identity with fields and portrait", async () => {
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

  it('the camera is released as soon as a verification starts (every track ended) and runs again back on Ready', async () => {
    const { page, cameraFile } = stack;
    if (cameraFile === undefined) throw new Error('the stack has no fake camera');
    // From now on the camera films an empty counter (the used code must not start a visit by itself);
    // Chromium reads the file again when the page next opens the camera.
    writeBlankY4m(`${cameraFile}.next`, { width: 640, height: 480, frames: 2 });
    renameSync(`${cameraFile}.next`, cameraFile);
    await page.addInitScript(recordCameraStreams);
    await page.reload();
    if ((await stack.waitForScreen(['ready', 'result', 'error'], 30_000)) !== 'ready') await page.getByTestId('next-button').click();
    await stack.waitForScreen('ready');

    const preview = page.getByTestId('camera-preview');
    await expect.poll(() => preview.getAttribute('data-camera-state'), { timeout: 15_000 }).toBe('active');
    const onReady = await cameraTracks(page);
    expect(onReady, 'the camera runs on Ready (the instrumentation sees its stream)').toContain('live');

    // A scanner hands over the phone's engagement: the kiosk starts the verification and leaves Ready.
    await scannerTypes(page, stack.counter.presentQr());
    await page.waitForSelector('main[data-screen]:not([data-screen="ready"])', { timeout: 15_000 });
    const previewState = async (): Promise<string> =>
      (await preview.count()) === 0 ? 'gone' : ((await preview.getAttribute('data-camera-state')) ?? 'no state');
    await expect.poll(previewState, { timeout: 2_000 }).toMatch(/^(gone|off)$/);
    await expect.poll(() => cameraTracks(page), { timeout: 2_000 }).not.toContain('live');
    const opened = (await cameraTracks(page)).length;
    expect(opened).toBeGreaterThanOrEqual(onReady.length);

    // Still released while the outcome is shown; back on Ready the camera opens again.
    await stack.waitForScreen('result', 45_000);
    expect(await cameraTracks(page)).not.toContain('live');
    expect(await previewState()).toMatch(/^(gone|off)$/);
    await page.getByTestId('next-button').click();
    await stack.waitForScreen('ready');
    await expect.poll(() => preview.getAttribute('data-camera-state'), { timeout: 15_000 }).toBe('active');
    const again = await cameraTracks(page);
    expect(again.length, 'a new camera stream was opened').toBeGreaterThan(opened);
    expect(
      again.filter((state) => state === 'live'),
      'exactly the new stream runs',
    ).toHaveLength(again.length - opened);
  }, 120_000);
});
