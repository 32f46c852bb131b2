/**
 * The virtual phone page (QA only) in real Chromium, against the kiosk core on a virtual counter: its
 * buttons tap, lift and show the QR, "Scan it" hands the QR to the kiosk, its form changes the phone's
 * behaviour at run time (a new credential or profile without restarting anything), it shows what the
 * phone did, it passes axe, and its API refuses bad input with clear errors.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKiosk } from '../../src/kiosk/compose.js';
import { mergeConfig, parseConfig } from '../../src/platform/config.js';
import type { Kiosk } from '../../src/kiosk/kiosk.js';
import { createLogger } from '../../src/platform/log.js';
import {
  PHONE_PAGE_CSP,
  createVirtualCounter,
  getTestPki,
  startPhonePage,
  type PhonePage,
  type VirtualCounter,
} from '../../src/qa/index.js';
import { BROWSER_E2E_TIMEOUTS, CHROMIUM, SCREENSHOT_DIR, axeViolations } from '../support/e2e-browser.js';
import { LogCapture, observeKiosk, type KioskObserver } from '../support/harness.js';

let counter: VirtualCounter;
let kiosk: Kiosk;
let observed: KioskObserver;
let phonePage: PhonePage;
let context: BrowserContext;
let page: Page;
let profileDir: string;
const requests: string[] = [];
const scans: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is missing at ${CHROMIUM}: install it (apt-get install chromium); the browser tests never skip`);
  counter = await createVirtualCounter({ pki: await getTestPki(), phoneEndTimeoutMs: 2_000 });
  const backend = counter.backend;
  if (!backend) throw new Error('no backend');
  const config = parseConfig(
    mergeConfig(
      {
        backend: { baseUrl: backend.url, apiKey: backend.apiKey },
        timeouts: { ...BROWSER_E2E_TIMEOUTS, resultDisplayMs: 300, errorDisplayMs: 300, removePhoneMs: 1_000 },
      },
      {},
    ),
  );
  kiosk = createKiosk(config, counter.rig.devices, createLogger({ level: 'silent' }, new LogCapture()));
  observed = observeKiosk(kiosk);
  kiosk.start();
  phonePage = await startPhonePage({
    counter,
    scan: (text) => {
      scans.push(text);
      counter.rig.qr.push(text);
      return Promise.resolve({ accepted: true });
    },
    kioskPhase: () => observed.views.at(-1)?.phase,
  });
  profileDir = await mkdtemp(join(tmpdir(), 'mdl-kiosk-phone-page-'));
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  context.on('request', (r) => requests.push(r.url()));
  page = context.pages()[0] ?? (await context.newPage());
  await page.goto(phonePage.url);
}, 60_000);

afterAll(async () => {
  // Each part may be missing when beforeAll failed half-way.
  await (context as BrowserContext | undefined)?.close();
  if ((profileDir as string | undefined) !== undefined) await rm(profileDir, { recursive: true, force: true });
  await (phonePage as PhonePage | undefined)?.stop();
  await (kiosk as Kiosk | undefined)?.stop();
  await (counter as VirtualCounter | undefined)?.stop();
  observed.assertViewsValid();
  expect(requests.filter((u) => !u.startsWith(`${phonePage.origin}/`) && !u.startsWith('data:'))).toEqual([]);
}, 30_000);

const outcome = () => page.getByTestId('phone-outcome').textContent();

describe('the virtual phone page', () => {
  it('is accessible (axe) and served with a strict CSP', async () => {
    await expect.poll(() => page.locator('input[name="profile"]:checked').getAttribute('value')).toBe('android');
    expect(await axeViolations(page)).toEqual([]);
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'qa-phone-page.png') });
    const res = await fetch(phonePage.url.replace(/#.*/, ''));
    expect(res.headers.get('content-security-policy')).toBe(PHONE_PAGE_CSP);
  });

  it('Tap (NFC) → the kiosk verifies; the page shows "shared"; Lift takes the phone away', async () => {
    await observed.view((v) => v.phase === 'ready', 20_000);
    const report = observed.nextReport(40_000);
    await page.getByRole('button', { name: 'Tap (NFC)' }).click();
    expect((await report).outcome?.verdict).toBe('verified');
    await expect.poll(outcome, { timeout: 10_000 }).toBe('shared');
    await page.getByRole('button', { name: 'Lift' }).click();
    await expect.poll(() => page.locator('#last-action').textContent()).toBe('lift');
  }, 60_000);

  it('Show QR draws the engagement QR; "Scan it" hands its text to the kiosk unchanged → verified', async () => {
    await observed.view((v) => v.phase === 'ready' && v.at > Date.now() - 60_000, 20_000);
    await page.getByRole('button', { name: 'Show QR' }).click();
    const image = page.getByRole('img', { name: "The phone's engagement QR code" });
    await expect.poll(() => image.getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
    const text = await page.getByLabel('QR text').inputValue();
    expect(text).toMatch(/^mdoc:/);
    expect(counter.currentQr).toBe(text);
    const report = observed.nextReport(40_000);
    await page.getByRole('button', { name: 'Scan it' }).click();
    const done = await report;
    expect(done.transport).toBe('qr');
    expect(done.outcome?.verdict).toBe('verified');
    expect(scans.at(-1)).toBe(text);
    await expect.poll(outcome, { timeout: 10_000 }).toBe('shared');
  }, 60_000);

  it('the form changes the phone at run time: an iPhone that declines', async () => {
    await page.locator('input[name="profile"][value="iphone"]').check();
    await page.locator('input[name="consent"][value="decline"]').check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => counter.settings.profile).toBe('iphone');
    expect(counter.settings.consent).toBe('decline');
    expect(counter.rig.phone.profile.name).toBe('iphone');
    await observed.view((v) => v.phase === 'ready', 20_000);
    const report = observed.nextReport(40_000);
    await page.getByRole('button', { name: 'Tap (NFC)' }).click();
    expect((await report).outcome?.verdict).toBe('rejected');
    await expect.poll(outcome, { timeout: 10_000 }).toBe('declined');
    await page.getByRole('button', { name: 'Lift' }).click();
    await counter.reconfigurePhone({ profile: 'android', consent: 'approve' });
  }, 60_000);

  it('a new credential variant (tampered) is a new phone on the same radio; the kiosk rejects it', async () => {
    // On the in-memory radio, so the phone's radio device can be looked at.
    const before = counter.radioRig?.phone;
    expect(before).toBeDefined();
    await counter.reconfigurePhone({ credential: 'tampered' });
    expect(counter.rig.phone).not.toBe(before);
    expect(before?.device.powered).toBe(false);
    await observed.view((v) => v.phase === 'ready', 20_000);
    const report = observed.nextReport(40_000);
    counter.rig.tap();
    const done = await report;
    expect(done.outcome?.verdict).toBe('rejected');
    counter.rig.lift();
    await counter.reconfigurePhone({ credential: 'valid' });
  }, 60_000);

  it('Mock backend: "Go silent" makes the embedded backend answer nothing (the kiosk finds it: not answering); "Answer again" brings it back', async () => {
    const backend = counter.backend;
    if (!backend) throw new Error('no backend');
    await observed.view((v) => v.phase === 'ready', 20_000);
    expect(await page.getByTestId('backend-state').textContent()).toBe('answering');
    expect(await page.getByRole('button', { name: 'Answer again' }).isDisabled()).toBe(true);
    const from = observed.views.length;
    await page.getByRole('button', { name: 'Go silent' }).click();
    await expect.poll(() => page.getByTestId('backend-state').textContent()).toBe('silent (answers nothing)');
    expect(backend.silent).toBe(true);
    // heartbeatMs + pongMs (7.5 s with the defaults), with room for a loaded machine.
    await observed.view((v) => observed.views.indexOf(v) >= from && v.backend === 'not_answering' && v.phase === 'offline', 12_000);
    await page.getByRole('button', { name: 'Answer again' }).click();
    await expect.poll(() => page.getByTestId('backend-state').textContent()).toBe('answering');
    await observed.view((v) => observed.views.indexOf(v) >= from && v.phase === 'ready' && v.backend === 'connected', 40_000);
  }, 70_000);

  it('its API refuses bad input with clear errors and keeps working', async () => {
    const { origin, token } = phonePage;
    const call = (path: string, init: RequestInit = {}) => fetch(`${origin}${path}`, init);
    const auth = { authorization: `Bearer ${token}` };
    const json = { ...auth, 'content-type': 'application/json' };
    expect((await call('/api/state')).status).toBe(401);
    expect((await call('/api/state', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const badSettings = await call('/api/settings', { method: 'POST', headers: json, body: JSON.stringify({ consentDelayMs: -1 }) });
    expect(badSettings.status).toBe(400);
    expect(((await badSettings.json()) as { error: string }).error).toMatch(/consentDelayMs/);
    const unknownKey = await call('/api/settings', { method: 'POST', headers: json, body: JSON.stringify({ colour: 'red' }) });
    expect(unknownKey.status).toBe(400);
    const badAction = await call('/api/action', { method: 'POST', headers: json, body: JSON.stringify({ action: 'explode' }) });
    expect(badAction.status).toBe(400);
    expect(((await badAction.json()) as { error: string }).error).toMatch(/action/);
    expect((await call('/api/action', { method: 'POST', headers: json, body: '{not json' })).status).toBe(400);
    expect((await call('/api/action', { method: 'POST', headers: auth, body: JSON.stringify({ action: 'tap' }) })).status).toBe(415);
    expect(
      (await call('/api/action', { method: 'POST', headers: json, body: JSON.stringify({ action: 'tap', pad: 'x'.repeat(10_000) }) }))
        .status,
    ).toBe(413);
    const foreign = await call('/api/action', {
      method: 'POST',
      headers: { ...json, origin: 'http://evil.example' },
      body: JSON.stringify({ action: 'tap' }),
    });
    expect(foreign.status).toBe(403);
    expect((await call('/api/settings', { headers: auth })).status).toBe(405);
    expect((await call('/nope')).status).toBe(404);
    const state = await call('/api/state', { headers: auth });
    expect(state.status).toBe(200);
    expect(((await state.json()) as { settings: { credential: string } }).settings.credential).toBe('valid');
  });
});
