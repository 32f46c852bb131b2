/**
 * A scripted ScreenState for every screen of the kiosk, and a fake `window.kiosk` (the preload's surface)
 * that a Playwright page gets through `addInitScript`, so screenshots and axe can visit rare screens
 * (offline, needs staff, every error) without driving a real verification there.
 *
 *   await installFakeKiosk(page, 'offline');           // before page.goto
 *   await page.goto(url);
 *   await showFixture(page, 'error');                   // switch screens in place
 *   await openStaffScreen(page, 'settings');            // PIN 1234 unlocks
 *
 * The fake answers every intent with a schema-valid result and records the calls in `window.__fakeKiosk`.
 */
import jpeg from 'jpeg-js';
import type { Page } from 'playwright-core';
import type { Diagnostics, ScreenState, Settings } from '../../src/common/kiosk-api.js';
import type { OutcomeView } from '../../src/common/kiosk-view.js';

/** The PIN the fake kiosk accepts. */
export const FAKE_PIN = '1234';
/** The fixture holder's names: a privacy check searches the page for them after the outcome clears. */
export const FIXTURE_HOLDER = { given: 'Erika', family: 'Mustermann' } as const;

export const FIXTURE_NAMES = [
  'disconnected',
  'starting',
  'connecting',
  'offline',
  'config_error',
  'ready',
  'ready_es',
  'engaging_nfc',
  'engaging_qr',
  'awaiting_card',
  'ble_connecting',
  'transferring_approve',
  'transferring_receiving',
  'result_verified',
  'result_rejected',
  'error',
  'remove_phone',
  'stopped',
  'staff_pin',
  'settings',
  'diagnostics',
] as const;
export type FixtureName = (typeof FIXTURE_NAMES)[number];

/** The `data-screen` each fixture shows. */
export function screenOf(name: FixtureName): string {
  switch (name) {
    case 'ready_es':
      return 'ready';
    case 'engaging_nfc':
    case 'engaging_qr':
      return 'engaging';
    case 'transferring_approve':
    case 'transferring_receiving':
      return 'transferring';
    case 'result_verified':
    case 'result_rejected':
      return 'result';
    default:
      return name;
  }
}

/** A small grey-scale JPEG "portrait" (an oval face on a plain background), base64. */
export function fixturePortraitBase64(): string {
  const width = 120;
  const height = 150;
  const data = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const dx = (x - width / 2) / 40;
      const dy = (y - height / 2.2) / 52;
      const inFace = dx * dx + dy * dy < 1;
      const shoulders = y > height * 0.8 && Math.abs(x - width / 2) < 55;
      const v = inFace ? 205 : shoulders ? 90 : 235;
      const i = (y * width + x) * 4;
      data[i] = v;
      data[i + 1] = inFace ? v - 30 : v;
      data[i + 2] = inFace ? v - 55 : v;
      data[i + 3] = 255;
    }
  }
  return Buffer.from(jpeg.encode({ data, width, height }, 80).data).toString('base64');
}

function outcome(verdict: 'verified' | 'rejected'): OutcomeView {
  const ns = 'org.iso.18013.5.1';
  return {
    verdict,
    reasons: verdict === 'verified' ? [] : ['issuer_authentication_invalid'],
    response: {
      [ns]: {
        family_name: FIXTURE_HOLDER.family,
        given_name: FIXTURE_HOLDER.given,
        birth_date: '1971-09-01',
        age_over_21: true,
        issuing_country: 'US',
        document_number: 'D1234567',
        expiry_date: '2031-10-01',
        portrait: fixturePortraitBase64(),
        driving_privileges: [{ vehicle_category_code: 'B', issue_date: '2021-10-01', expiry_date: '2031-10-01' }],
      },
    },
    docTypes: ['org.iso.18013.5.1.mDL'],
    issuerAuthentication: verdict === 'verified' ? 'Valid' : 'Invalid',
    deviceAuthentication: 'Valid',
    errors: {},
    warnings: {},
    source: 'complete',
  };
}

/** The state a fixture shows (`null` for `disconnected`: the fake never sends one). */
export function screenState(name: FixtureName, now = Date.now()): ScreenState {
  const base: ScreenState = {
    view: {
      phase: 'ready',
      prompt: 'tap_or_scan',
      transport: null,
      role: null,
      progress: { step: 0, apdus: 0, bleMessages: 0 },
      outcome: null,
      error: null,
      profile: 'age_over_21',
      devices: {
        nfc: { usable: true },
        qr: { usable: true },
        bleCentral: { usable: true },
        blePeripheral: { usable: false, reason: 'not_configured' },
      },
      at: now,
    },
    profiles: [
      { name: 'age_over_18', label: 'Age 18+' },
      { name: 'age_over_21', label: 'Age 21+' },
      { name: 'identity', label: 'Identity' },
      { name: 'full', label: 'Full mDL' },
    ],
    language: 'en',
    defaultLanguage: 'en',
    camera: { scanning: false, deviceId: null, state: 'off', maxDecodesPerSecond: 8 },
    clearsAt: null,
    session: { state: 'armed', createdAt: now - 180_000, expiresAt: now + 450_000 },
    staff: { pinConfigured: true, unlocked: false, unlockedUntil: null, lockedOutUntil: null },
    testMode: true,
    backendOrigin: 'http://127.0.0.1:8443',
  };
  const view = (patch: Partial<ScreenState['view']>): ScreenState => ({ ...base, view: { ...base.view, ...patch } });
  switch (name) {
    case 'disconnected':
    case 'starting':
      return view({ phase: 'starting', prompt: 'starting' });
    case 'connecting':
      return { ...view({ phase: 'connecting', prompt: 'connecting' }), session: { state: 'none', createdAt: null, expiresAt: null } };
    case 'offline':
      return {
        ...view({ phase: 'offline', prompt: 'offline', error: { code: 'backend_unavailable', detail: 'POST /sessions: connect ECONNREFUSED 127.0.0.1:8443 (retry in 8 s)', retryable: true } }),
        session: { state: 'none', createdAt: null, expiresAt: null },
      };
    case 'config_error':
      return {
        ...view({ phase: 'config_error', prompt: 'config_error', error: { code: 'config_error', detail: 'the backend refused the API key (401 Unauthorized)', retryable: false } }),
        session: { state: 'none', createdAt: null, expiresAt: null },
      };
    case 'ready':
      return { ...base, camera: { ...base.camera, scanning: true, state: 'active' } };
    case 'ready_es':
      return { ...base, language: 'es', camera: { ...base.camera, scanning: true, state: 'active' } };
    case 'engaging_nfc':
      return { ...view({ phase: 'engaging', prompt: 'hold_still', transport: 'nfc', progress: { step: 1, apdus: 6, bleMessages: 0 } }), session: { ...base.session, state: 'busy' } };
    case 'engaging_qr':
      return { ...view({ phase: 'engaging', prompt: 'hold_still', transport: 'qr', progress: { step: 1, apdus: 0, bleMessages: 0 } }), session: { ...base.session, state: 'busy' } };
    case 'awaiting_card':
      return { ...view({ phase: 'awaiting_card', prompt: 'tap_again', transport: 'nfc', progress: { step: 1, apdus: 4, bleMessages: 0 } }), session: { ...base.session, state: 'busy' } };
    case 'ble_connecting':
      return {
        ...view({ phase: 'ble_connecting', prompt: 'connecting_phone', transport: 'qr', role: 'central', progress: { step: 2, apdus: 0, bleMessages: 0 } }),
        session: { ...base.session, state: 'busy' },
      };
    case 'transferring_approve':
      return {
        ...view({ phase: 'transferring', prompt: 'approve_on_phone', transport: 'nfc', role: 'central', progress: { step: 3, apdus: 12, bleMessages: 3 } }),
        session: { ...base.session, state: 'busy' },
      };
    case 'transferring_receiving':
      return {
        ...view({ phase: 'transferring', prompt: 'receiving', transport: 'qr', role: 'peripheral', progress: { step: 3, apdus: 0, bleMessages: 37 } }),
        session: { ...base.session, state: 'busy' },
      };
    case 'result_verified':
      return { ...view({ phase: 'result', prompt: 'verified', transport: 'nfc', role: 'central', progress: { step: 4, apdus: 12, bleMessages: 41 }, outcome: outcome('verified') }), clearsAt: now + 30_000 };
    case 'result_rejected':
      return { ...view({ phase: 'result', prompt: 'rejected', transport: 'qr', role: 'peripheral', progress: { step: 4, apdus: 0, bleMessages: 39 }, outcome: outcome('rejected') }), clearsAt: now + 30_000 };
    case 'error':
      return { ...view({ phase: 'error', prompt: 'try_again', transport: 'qr', error: { code: 'ble_link_lost', detail: 'peripheral disconnected before the response was complete', retryable: true } }), clearsAt: now + 6_000 };
    case 'remove_phone':
      return view({ phase: 'remove_phone', prompt: 'remove_phone', transport: 'nfc' });
    case 'stopped':
      return { ...view({ phase: 'stopped', prompt: 'stopped' }), session: { state: 'none', createdAt: null, expiresAt: null } };
    case 'staff_pin':
      return base;
    case 'settings':
    case 'diagnostics':
      return { ...base, staff: { ...base.staff, unlocked: true, unlockedUntil: now + 120_000 } };
  }
}

export function fixtureSettings(): Settings {
  return {
    backendUrl: 'http://127.0.0.1:8443',
    apiKeySet: true,
    profile: 'age_over_21',
    pcscReader: null,
    bleRoles: 'both',
    cameraDeviceId: null,
    defaultLanguage: 'en',
    timeouts: { resultDisplayMs: 30_000, errorDisplayMs: 6_000, removePhoneMs: 30_000 },
    locked: ['backendUrl', 'apiKey'],
  };
}

export function fixtureDiagnostics(now = Date.now()): Diagnostics {
  return {
    version: '0.1.0',
    startedAt: now - 3_600_000,
    events: [
      { at: now - 600_000, level: 'info', event: 'session_created' },
      { at: now - 420_000, level: 'info', event: 'verification_outcome', detail: 'verdict=verified source=complete' },
      { at: now - 300_000, level: 'warn', event: 'ble_link_lost', detail: 'peripheral disconnected' },
      { at: now - 120_000, level: 'error', event: 'backend_unavailable', detail: 'connect ECONNREFUSED' },
      { at: now - 60_000, level: 'info', event: 'staff_unlocked' },
    ],
    counts: { verifications: 14, verified: 11, rejected: 2, errors: 1, qr_scans: 9, nfc_taps: 5 },
  };
}

/** The browser side of the fake: plain JS (no transpiler helpers), installed before the app loads. */
const FAKE_KIOSK_SOURCE = String.raw`
(function install(config) {
  var listeners = new Set();
  var state = config.state;
  var calls = [];
  var attemptsLeft = 5;
  var settings = config.settings;
  function emit() { if (!state) return; listeners.forEach(function (l) { l(state); }); }
  function setState(next) { state = next; emit(); }
  function patchStaff(patch) { if (state) setState(Object.assign({}, state, { staff: Object.assign({}, state.staff, patch) })); }
  function record(intent, args) { calls.push({ intent: intent, args: args }); }
  var ok = { ok: true };
  var kiosk = {
    onState: function (l) { listeners.add(l); if (state) l(state); return function () { listeners.delete(l); }; },
    qrScanned: function (a) { record('qrScanned', a);
      if (!a.text) return Promise.resolve({ accepted: false, reason: 'empty' });
      if (a.text.indexOf('mdoc:') !== 0) return Promise.resolve({ accepted: false, reason: 'not_mdoc' });
      return Promise.resolve({ accepted: true }); },
    next: function (a) { record('next', a); return Promise.resolve(ok); },
    retry: function (a) { record('retry', a); return Promise.resolve(ok); },
    setLanguage: function (a) { record('setLanguage', a); if (state) setState(Object.assign({}, state, { language: a.language })); return Promise.resolve(ok); },
    reportCamera: function (a) { record('reportCamera', { state: a.state }); return Promise.resolve(ok); },
    unlock: function (a) { record('unlock', {});
      if (!state || !state.staff.pinConfigured) return Promise.resolve({ ok: false, reason: 'no_pin' });
      if (a.pin === config.pin) { var until = Date.now() + 120000; attemptsLeft = 5; patchStaff({ unlocked: true, unlockedUntil: until }); return Promise.resolve({ ok: true, unlockedUntil: until }); }
      attemptsLeft -= 1;
      if (attemptsLeft <= 0) { attemptsLeft = 5; patchStaff({ lockedOutUntil: Date.now() + 60000 }); return Promise.resolve({ ok: false, reason: 'locked_out', retryAfterMs: 60000 }); }
      return Promise.resolve({ ok: false, reason: 'wrong_pin', attemptsLeft: attemptsLeft }); },
    lock: function (a) { record('lock', a); patchStaff({ unlocked: false, unlockedUntil: null }); return Promise.resolve(ok); },
    setProfile: function (a) { record('setProfile', a); return Promise.resolve(ok); },
    getSettings: function (a) { record('getSettings', a); return Promise.resolve(settings); },
    saveSettings: function (a) { record('saveSettings', a);
      var errors = [];
      if (typeof a.backendUrl === 'string' && !/^https?:\/\//.test(a.backendUrl)) errors.push({ key: 'backendUrl', message: 'must be an http(s) URL' });
      if (errors.length) return Promise.resolve({ ok: false, errors: errors });
      var next = Object.assign({}, settings);
      ['backendUrl', 'profile', 'pcscReader', 'bleRoles', 'cameraDeviceId', 'defaultLanguage'].forEach(function (k) { if (a[k] !== undefined) next[k] = a[k]; });
      if (a.apiKey !== undefined) next.apiKeySet = true;
      if (a.clearApiKey) next.apiKeySet = false;
      if (a.timeouts) next.timeouts = Object.assign({}, settings.timeouts, a.timeouts);
      settings = next;
      return Promise.resolve({ ok: true, settings: settings }); },
    changePin: function (a) { record('changePin', {}); return Promise.resolve(ok); },
    getDiagnostics: function (a) { record('getDiagnostics', a); return Promise.resolve(config.diagnostics); },
    selfTest: function (a) { record('selfTest', a); return Promise.resolve({ checks: [
      { name: 'backend', ok: true, status: 'reachable', detail: 'http://127.0.0.1:8443 answered in 12 ms' },
      { name: 'nfc', ok: true, status: 'usable', detail: 'Virtual PC/SC reader 00 00' },
      { name: 'ble_central', ok: true, status: 'usable' },
      { name: 'ble_peripheral', ok: false, status: 'not_configured', detail: 'ble.roles is central' },
      { name: 'camera', ok: true, status: 'active' } ] }); }
  };
  Object.defineProperty(window, 'kiosk', { value: Object.freeze(kiosk), configurable: false, writable: false });
  window.__fakeKiosk = { setState: setState, calls: calls, getState: function () { return state; } };
})`;

export interface FakeKioskOptions {
  /** Extra fields merged into the fixture's state (e.g. `{ testMode: false }`). */
  readonly patch?: Partial<ScreenState>;
}

/** Installs the fake `window.kiosk` with the fixture's state; call before `page.goto`. */
export async function installFakeKiosk(page: Page, name: FixtureName, options: FakeKioskOptions = {}): Promise<void> {
  const state = name === 'disconnected' ? null : { ...screenState(name), ...options.patch };
  const config = { state, pin: FAKE_PIN, settings: fixtureSettings(), diagnostics: fixtureDiagnostics() };
  await page.addInitScript({ content: `${FAKE_KIOSK_SOURCE}(${JSON.stringify(config)});` });
}

/** Switches the fake kiosk to another fixture's state (customer screens; for staff screens see below). */
export async function showFixture(page: Page, name: Exclude<FixtureName, 'disconnected'>, options: FakeKioskOptions = {}): Promise<void> {
  const state = { ...screenState(name), ...options.patch };
  await page.evaluate((s) => {
    // Runs in the page; typed without the DOM library (this file is also compiled as Node code).
    (globalThis as unknown as { __fakeKiosk: { setState(s: unknown): void } }).__fakeKiosk.setState(s);
  }, state);
  await page.locator(`main[data-screen="${screenOf(name)}"]`).waitFor();
}

/** Opens a staff screen through the UI: the Staff button, the PIN pad (PIN 1234), then the tab. */
export async function openStaffScreen(page: Page, screen: 'staff_pin' | 'settings' | 'diagnostics'): Promise<void> {
  await page.getByTestId('staff-button').click();
  if (screen === 'staff_pin') {
    await page.locator('main[data-screen="staff_pin"]').waitFor();
    return;
  }
  const pin = page.locator('main[data-screen="staff_pin"] input[type="password"]');
  if (await pin.count()) {
    await pin.fill(FAKE_PIN);
    await pin.press('Enter');
  }
  await page.locator('main[data-screen="settings"]').waitFor();
  if (screen === 'diagnostics') {
    await page.locator('.staff-nav button').nth(1).click();
    await page.locator('main[data-screen="diagnostics"]').waitFor();
  }
}
