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
import { DEFAULT_SPEECH_SETTINGS } from '../../src/common/speech.js';
import jpeg from 'jpeg-js';
import type { Page } from 'playwright-core';
import type { Diagnostics, ScreenState, Settings } from '../../src/common/kiosk-api.js';
import type { OutcomeView } from '../../src/common/kiosk-view.js';
import { BUILT_IN_PROFILES } from '../../src/kiosk/profiles.js';
import { answerFor, type AskedRequest } from '../../src/kiosk/request-answer.js';
import { drawPortraitJpeg2000 } from '../../src/qa/sim/virtual-wallet/portrait.js';

/** The PIN the fake kiosk accepts. */
export const FAKE_PIN = '1234';
/** The fixture holder's names: a privacy check searches the page for them after the outcome clears. */
export const FIXTURE_HOLDER = { given: 'Erika', family: 'Mustermann' } as const;

export const FIXTURE_NAMES = [
  'disconnected',
  'starting',
  'connecting',
  'offline',
  'offline_not_answering',
  'config_error',
  'config_error_gateway',
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
  'result_identity',
  'result_age_no',
  'result_age_unknown',
  'result_rejected_reasons',
  'result_undetermined',
  'result_declined',
  'result_identity_missing',
  'result_portrait_undecodable',
  'result_hostile',
  'result_replaced',
  'error',
  'error_timeout',
  'error_backend',
  'error_unknown',
  'error_not_answering',
  'remove_phone',
  'remove_to_retry',
  'cannot_verify',
  'ready_no_nfc',
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
    case 'result_identity':
    case 'result_age_no':
    case 'result_age_unknown':
    case 'result_rejected_reasons':
    case 'result_undetermined':
    case 'result_portrait_undecodable':
    case 'result_hostile':
    case 'result_declined':
    case 'result_identity_missing':
    case 'result_replaced':
      return 'result';
    case 'remove_to_retry':
      return 'remove_phone';
    case 'ready_no_nfc':
      return 'ready';
    case 'config_error_gateway':
      return 'config_error';
    case 'error_timeout':
    case 'error_backend':
    case 'error_unknown':
    case 'error_not_answering':
      return 'error';
    case 'offline_not_answering':
      return 'offline';
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

const AGE_21: AskedRequest = { namespaces: BUILT_IN_PROFILES.age_over_21?.namespaces ?? {} };
const IDENTITY: AskedRequest = { namespaces: BUILT_IN_PROFILES.identity?.namespaces ?? {} };

/** The core's answer for an outcome (src/kiosk/request-answer.ts): fixtures answer as the kiosk would. */
function answered(view: Omit<OutcomeView, 'answer'>, asked: AskedRequest): OutcomeView {
  return { ...view, answer: answerFor(view, asked) };
}

function outcome(verdict: 'verified' | 'rejected'): OutcomeView {
  const ns = 'org.iso.18013.5.1';
  return answered(
    {
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
    },
    AGE_21,
  );
}

const MDL = 'org.iso.18013.5.1';
const AAMVA = 'org.iso.18013.5.1.aamva';

/** An identity disclosure with every kind of value the screen formats: dates, codes, privileges, AAMVA. */
export function identityResponse(portrait: string): OutcomeView['response'] {
  return {
    [MDL]: {
      family_name: FIXTURE_HOLDER.family,
      given_name: FIXTURE_HOLDER.given,
      birth_date: '1971-09-01',
      issue_date: '2021-10-01',
      expiry_date: '2031-10-01',
      issuing_country: 'US',
      issuing_authority: 'Virtual Department of Motor Vehicles',
      document_number: 'D1234567',
      portrait,
      driving_privileges: [
        { vehicle_category_code: 'B', issue_date: '2015-06-01', expiry_date: '2031-10-01' },
        {
          vehicle_category_code: 'A',
          issue_date: '2018-03-15',
          expiry_date: '2031-10-01',
          codes: [{ code: '78' }, { code: 'S01', sign: '<=', value: '2500' }],
        },
      ],
      sex: 2,
      height: 168,
      eye_colour: 'brown',
      resident_address: '1200 Capitol Mall, Apt 4',
      resident_city: 'Sacramento',
      portrait_capture_date: '2021-10-01T09:30:00Z',
      age_over_18: true,
      age_over_21: true,
    },
    [AAMVA]: { DHS_compliance: 'F', organ_donor: 1, veteran: 1 },
  };
}

/** A verified identity outcome with this portrait (base64 of JPEG or JPEG 2000 bytes, or anything else). */
export function identityOutcome(portrait: string): OutcomeView {
  return answered(
    {
      verdict: 'verified',
      reasons: [],
      response: identityResponse(portrait),
      docTypes: ['org.iso.18013.5.1.mDL'],
      issuerAuthentication: 'Valid',
      deviceAuthentication: 'Valid',
      errors: {},
      warnings: { validity: ['the document expires within 90 days'] },
      source: 'complete',
    },
    IDENTITY,
  );
}

/** A verified identity outcome whose holder withheld the photo and the licence number. */
function identityMissing(): OutcomeView {
  const response = identityResponse('');
  const mdl = { ...(response[MDL] ?? {}) };
  delete mdl.portrait;
  delete mdl.document_number;
  return answered({ ...identityOutcome(''), response: { [MDL]: mdl } }, IDENTITY);
}

/** The holder declined on the phone: nothing checked, nothing disclosed (the mock backend's shape). */
function declinedOutcome(): OutcomeView {
  return answered(
    {
      verdict: 'rejected',
      reasons: ['nothing_shared', 'errors_reported', 'issuer_authentication_unchecked', 'device_authentication_unchecked'],
      response: {},
      docTypes: [],
      issuerAuthentication: 'Unchecked',
      deviceAuthentication: 'Unchecked',
      errors: {
        session: ['the holder ended the session without a response (SessionData status 20): declined on the phone, or the wallet failed'],
      },
      warnings: {},
      source: 'complete',
    },
    AGE_21,
  );
}

/** An age-only disclosure (what the default `age_over_21` profile asks for). */
function ageOutcome(statements: Record<string, boolean>): OutcomeView {
  return answered({ ...outcome('verified'), response: { [MDL]: { ...statements, portrait: fixturePortraitBase64() } } }, AGE_21);
}

/** A rejected identity outcome with several reasons, the backend's errors by category, and a warning. */
function rejectedWithReasons(): OutcomeView {
  return answered(
    {
      ...identityOutcome(fixturePortraitBase64()),
      verdict: 'rejected',
      reasons: ['errors_reported', 'issuer_authentication_invalid', 'device_authentication_unchecked', 'revocation_status_unknown'],
      issuerAuthentication: 'Invalid',
      deviceAuthentication: 'Unchecked',
      errors: {
        data_integrity: [`digest mismatch for ${MDL}/family_name (digestID 7)`, `digest mismatch for ${MDL}/birth_date (digestID 9)`],
        validity: ['the document expired on 2024-01-31'],
        issuer_authentication: ['the document signer certificate is not trusted (IACA unknown)'],
      },
      warnings: { device_authentication: ['the phone did not sign the session transcript'] },
      source: 'recovered',
    },
    IDENTITY,
  );
}

/** The virtual wallet's face as a JPEG 2000 (JP2) file, base64: the screen decodes it in its wasm worker. */
export async function jpeg2000PortraitBase64(): Promise<string> {
  return Buffer.from(await drawPortraitJpeg2000({ width: 240, height: 320 })).toString('base64');
}

/** Bytes that say "JPEG" (SOI + APP0) and then are not a JPEG: the decoder must fail and say so. */
function undecodablePortraitBase64(): string {
  const bytes = Buffer.alloc(600, 0x5a);
  bytes.set([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00]);
  return bytes.toString('base64');
}

/**
 * What a hostile or broken backend might send (schema-valid at the contract, odd inside): huge and
 * unbroken strings, markup, bidi overrides, wrong types, deep nesting, long lists, long namespaces and
 * identifiers, a portrait that is a number, and a "verified" verdict contradicted by errors.
 */
export function hostileOutcome(): OutcomeView {
  return answered(hostileParts(), { namespaces: BUILT_IN_PROFILES.full?.namespaces ?? {} });
}

function hostileParts(): Omit<OutcomeView, 'answer'> {
  let deep: unknown = 'bottom';
  for (let i = 0; i < 40; i++) deep = { level: deep };
  const longToken = `x${'0123456789abcdef'.repeat(30)}`;
  return {
    verdict: 'verified',
    reasons: [],
    response: {
      [MDL]: {
        family_name: 'W'.repeat(5_000),
        given_name: '<img src=x onerror="alert(1)">\u202Eevil',
        birth_date: 'not a date',
        expiry_date: 20_991_231,
        portrait: 12_345,
        driving_privileges: { vehicle_category_code: ['B'.repeat(400)] },
        age_over_21: 'yes',
        nationality: null,
        resident_address: longToken,
        un_distinguishing_sign: Array.from({ length: 500 }, (_, i) => `item-${i}`),
        issuing_authority: deep,
        '': 'an element without a name',
      },
      [`org.example.${'very-long-namespace-'.repeat(12)}`]: { [`identifier_${'y'.repeat(200)}`]: { nested: [1, 2, { three: true }] } },
      '<script>alert(1)</script>': { '\u202Ereversed': 'markup is text' },
    },
    docTypes: [`org.example.${'doc'.repeat(100)}`, 'org.iso.18013.5.1.mDL'],
    issuerAuthentication: 'Valid',
    deviceAuthentication: 'Valid',
    errors: { [`category_${'z'.repeat(120)}`]: [longToken, 'x'.repeat(2_000)], session: 42 },
    warnings: { '': Array.from({ length: 40 }, (_, i) => `warning ${i}`) },
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
      backend: 'connected',
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
    speech: DEFAULT_SPEECH_SETTINGS,
    backendOrigin: 'http://127.0.0.1:8443',
    replaced: null,
  };
  const view = (patch: Partial<ScreenState['view']>): ScreenState => ({ ...base, view: { ...base.view, ...patch } });
  switch (name) {
    case 'disconnected':
    case 'starting':
      return view({ phase: 'starting', prompt: 'starting', backend: 'connecting' });
    case 'connecting':
      return {
        ...view({ phase: 'connecting', prompt: 'connecting', backend: 'connecting' }),
        session: { state: 'none', createdAt: null, expiresAt: null },
      };
    case 'offline':
      return {
        ...view({
          phase: 'offline',
          prompt: 'offline',
          backend: 'offline',
          error: {
            code: 'backend_unavailable',
            detail: 'POST /sessions: connect ECONNREFUSED 127.0.0.1:8443 (retry in 8 s)',
            retryable: true,
          },
        }),
        session: { state: 'none', createdAt: null, expiresAt: null },
      };
    case 'offline_not_answering':
      // A silent backend: the idle socket's ping went unanswered (docs/protocol.md §10.2).
      return {
        ...view({
          phase: 'offline',
          prompt: 'offline',
          backend: 'not_answering',
          error: {
            code: 'backend_not_answering',
            detail: 'the backend answered no ping on the idle session socket (timeouts.pongMs); the socket was dropped',
            retryable: true,
          },
        }),
        session: { state: 'none', createdAt: null, expiresAt: null },
      };
    case 'config_error':
      return {
        ...view({
          phase: 'config_error',
          prompt: 'config_error',
          backend: 'needs_staff',
          error: { code: 'config_error', detail: 'the backend refused the API key (401 Unauthorized)', retryable: false },
        }),
        session: { state: 'none', createdAt: null, expiresAt: null },
      };
    case 'config_error_gateway':
      // A gateway that answers 404 on every session socket: the kiosk keeps checking, staff must fix it.
      return {
        ...view({
          phase: 'config_error',
          prompt: 'config_error',
          backend: 'needs_staff',
          error: {
            code: 'backend_refuses_socket',
            detail:
              'the backend refuses the session connection (HTTP 404) — check the WebSocket route of the gateway (checked again every 15–30 s)',
            retryable: false,
          },
        }),
        session: { state: 'none', createdAt: null, expiresAt: null },
      };
    case 'cannot_verify':
      // No Bluetooth adapter on this computer: nothing can work, whatever the reader does.
      return view({
        phase: 'cannot_verify',
        prompt: 'cannot_verify',
        devices: {
          ...base.view.devices,
          bleCentral: { usable: false, reason: 'no_adapter' },
          blePeripheral: { usable: false, reason: 'no_adapter' },
        },
        error: {
          code: 'ble_unavailable',
          detail: 'no Bluetooth role is usable (Bluetooth central no_adapter, peripheral no_adapter)',
          retryable: false,
        },
      });
    case 'ready_no_nfc':
      // No NFC reader: only the QR code is offered.
      return {
        ...view({ devices: { ...base.view.devices, nfc: { usable: false, reason: 'no_reader' } } }),
        camera: { ...base.camera, scanning: true, state: 'active' },
      };
    case 'ready':
      // The installer said where the reader is (ui.readerPosition): Ready points there.
      return { ...base, camera: { ...base.camera, scanning: true, state: 'active' }, readerPosition: 'below' };
    case 'ready_es':
      return { ...base, language: 'es', camera: { ...base.camera, scanning: true, state: 'active' }, readerPosition: 'below' };
    case 'engaging_nfc':
      return {
        ...view({ phase: 'engaging', prompt: 'hold_still', transport: 'nfc', progress: { step: 1, apdus: 6, bleMessages: 0 } }),
        session: { ...base.session, state: 'busy' },
      };
    case 'engaging_qr':
      return {
        ...view({ phase: 'engaging', prompt: 'hold_still', transport: 'qr', progress: { step: 1, apdus: 0, bleMessages: 0 } }),
        session: { ...base.session, state: 'busy' },
      };
    case 'awaiting_card':
      return {
        ...view({ phase: 'awaiting_card', prompt: 'tap_again', transport: 'nfc', progress: { step: 1, apdus: 4, bleMessages: 0 } }),
        session: { ...base.session, state: 'busy' },
      };
    case 'ble_connecting':
      return {
        ...view({
          phase: 'ble_connecting',
          prompt: 'connecting_phone',
          transport: 'qr',
          role: 'central',
          progress: { step: 2, apdus: 0, bleMessages: 0 },
        }),
        session: { ...base.session, state: 'busy' },
      };
    case 'transferring_approve':
      return {
        ...view({
          phase: 'transferring',
          prompt: 'approve_on_phone',
          transport: 'nfc',
          role: 'central',
          progress: { step: 3, apdus: 12, bleMessages: 3 },
        }),
        session: { ...base.session, state: 'busy' },
      };
    case 'transferring_receiving':
      return {
        ...view({
          phase: 'transferring',
          prompt: 'receiving',
          transport: 'qr',
          role: 'peripheral',
          progress: { step: 3, apdus: 0, bleMessages: 37 },
        }),
        session: { ...base.session, state: 'busy' },
      };
    case 'result_verified':
      return {
        ...view({
          phase: 'result',
          prompt: 'verified',
          transport: 'nfc',
          role: 'central',
          progress: { step: 4, apdus: 12, bleMessages: 41 },
          outcome: outcome('verified'),
        }),
        clearsAt: now + 30_000,
      };
    case 'result_rejected':
      return {
        ...view({
          phase: 'result',
          prompt: 'rejected',
          transport: 'qr',
          role: 'peripheral',
          progress: { step: 4, apdus: 0, bleMessages: 39 },
          outcome: outcome('rejected'),
        }),
        clearsAt: now + 30_000,
      };
    case 'result_identity':
      return identityResult(base, now, fixturePortraitBase64());
    case 'result_age_no':
      return {
        ...view({
          phase: 'result',
          prompt: 'verified',
          transport: 'nfc',
          progress: { step: 4, apdus: 12, bleMessages: 0 },
          outcome: ageOutcome({ age_over_21: false, age_over_18: true }),
        }),
        clearsAt: now + 30_000,
      };
    case 'result_age_unknown':
      // Verified, but the only statement (18+) cannot answer a 21+ question.
      return {
        ...view({
          phase: 'result',
          prompt: 'verified',
          transport: 'qr',
          role: 'central',
          progress: { step: 4, apdus: 0, bleMessages: 21 },
          outcome: ageOutcome({ age_over_18: true }),
        }),
        clearsAt: now + 30_000,
      };
    case 'result_rejected_reasons':
      return {
        ...view({
          phase: 'result',
          prompt: 'rejected',
          transport: 'qr',
          role: 'central',
          profile: 'identity',
          progress: { step: 4, apdus: 0, bleMessages: 52 },
          outcome: rejectedWithReasons(),
        }),
        clearsAt: now + 30_000,
      };
    case 'result_undetermined':
      // A result recovered with GET /sessions/{id} that does not say whether the document is authentic.
      return {
        ...view({
          phase: 'result',
          prompt: 'undetermined',
          transport: 'qr',
          role: 'central',
          profile: 'age_over_21',
          progress: { step: 4, apdus: 0, bleMessages: 48 },
          outcome: answered(
            {
              ...ageOutcome({ age_over_21: true }),
              verdict: 'undetermined',
              reasons: ['issuer_authentication_not_reported', 'device_authentication_not_reported'],
              issuerAuthentication: null,
              deviceAuthentication: null,
              source: 'recovered',
            },
            AGE_21,
          ),
        }),
        clearsAt: now + 30_000,
      };
    case 'result_portrait_undecodable':
      return identityResult(base, now, undecodablePortraitBase64());
    case 'result_declined':
      return {
        ...view({
          phase: 'result',
          prompt: 'rejected',
          transport: 'nfc',
          role: 'central',
          progress: { step: 4, apdus: 12, bleMessages: 9 },
          outcome: declinedOutcome(),
        }),
        clearsAt: now + 30_000,
      };
    case 'result_identity_missing':
      return {
        ...view({
          phase: 'result',
          prompt: 'verified',
          transport: 'qr',
          role: 'central',
          profile: 'identity',
          progress: { step: 4, apdus: 0, bleMessages: 30 },
          outcome: identityMissing(),
        }),
        clearsAt: now + 30_000,
      };
    case 'result_hostile':
      return {
        ...view({
          phase: 'result',
          prompt: 'verified',
          transport: 'qr',
          role: 'peripheral',
          profile: 'full',
          progress: { step: 4, apdus: 0, bleMessages: 60 },
          outcome: hostileOutcome(),
        }),
        clearsAt: null,
      };
    case 'result_replaced':
      // The next customer's "21 or older" replaced a "NOT 21 or older" after the minimum: the status bar says so.
      return {
        ...view({
          phase: 'result',
          prompt: 'verified',
          transport: 'qr',
          role: 'central',
          progress: { step: 4, apdus: 0, bleMessages: 21 },
          outcome: ageOutcome({ age_over_21: true }),
        }),
        clearsAt: now + 30_000,
        replaced: replacedFixture(now),
      };
    case 'error_timeout':
      return {
        ...view({
          phase: 'error',
          prompt: 'try_again',
          transport: 'nfc',
          error: { code: 'timeout', detail: 'no answer from the phone within 15000 ms (awaiting_card)', retryable: true },
        }),
        clearsAt: now + 6_000,
      };
    case 'error_backend':
      return {
        ...view({
          phase: 'error',
          prompt: 'try_again',
          transport: 'qr',
          error: { code: 'backend_error', detail: 'POST /sessions/3f2a9c/complete: 502 Bad Gateway', retryable: false },
        }),
        clearsAt: null,
      };
    case 'error_unknown':
      return {
        ...view({
          phase: 'error',
          prompt: 'try_again',
          transport: 'qr',
          error: { code: `future_code_${'q'.repeat(60)}`, detail: `unexpected frame ${'a1b2c3d4'.repeat(40)}`, retryable: true },
        }),
        clearsAt: now + 6_000,
      };
    case 'error':
      return {
        ...view({
          phase: 'error',
          prompt: 'try_again',
          transport: 'qr',
          error: { code: 'ble_link_lost', detail: 'peripheral disconnected before the response was complete', retryable: true },
        }),
        clearsAt: now + 6_000,
      };
    case 'error_not_answering':
      // A tap the backend never answered (timeouts.firstReplyMs): told at once, not after the reply wait.
      return {
        ...view({
          phase: 'error',
          prompt: 'try_again',
          transport: 'nfc',
          backend: 'not_answering',
          error: {
            code: 'backend_not_answering',
            detail: 'no reply from the backend within 4000 ms of the nfc_card_present (timeouts.firstReplyMs)',
            retryable: true,
          },
        }),
        clearsAt: now + 6_000,
      };
    case 'remove_phone':
      return view({ phase: 'remove_phone', prompt: 'remove_phone', transport: 'nfc' });
    case 'remove_to_retry':
      return view({ phase: 'remove_phone', prompt: 'remove_to_retry', transport: 'nfc' });
    case 'stopped':
      return {
        ...view({ phase: 'stopped', prompt: 'stopped', backend: 'stopped' }),
        session: { state: 'none', createdAt: null, expiresAt: null },
      };
    case 'staff_pin':
      return base;
    case 'settings':
    case 'diagnostics':
      return { ...base, staff: { ...base.staff, unlocked: true, unlockedUntil: now + 120_000 } };
  }
}

/** An outcome ("NOT 21 or older", by NFC) a QR scan replaced 6 s after it showed; it would clear 24 s from now. */
export function replacedFixture(now: number): NonNullable<ScreenState['replaced']> {
  return {
    verdict: 'verified',
    answer: { kind: 'age', result: 'not_met', threshold: 21 },
    transport: 'nfc',
    shownAt: now - 6_000,
    replacedAt: now - 500,
    replacedBy: 'qr',
    clearsAt: now + 24_000,
  };
}

/** A verified identity outcome (profile `identity`) on the result screen. */
export function identityResult(base: ScreenState, now: number, portrait: string): ScreenState {
  return {
    ...base,
    view: {
      ...base.view,
      phase: 'result',
      prompt: 'verified',
      transport: 'nfc',
      role: 'central',
      profile: 'identity',
      progress: { step: 4, apdus: 14, bleMessages: 44 },
      outcome: identityOutcome(portrait),
      at: now,
    },
    clearsAt: now + 30_000,
  };
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
    speech: DEFAULT_SPEECH_SETTINGS,
    locked: ['backendUrl', 'apiKey'],
    lockedBy: { backendUrl: 'managed', apiKey: 'managed' },
  };
}

export function fixtureDiagnostics(now = Date.now()): Diagnostics {
  return {
    version: '0.1.0',
    startedAt: now - 3_600_000,
    events: [
      // A name this screen has no words for (a newer host): the generic line, the code beside it.
      { at: now - 660_000, level: 'info', event: 'future_event_name' },
      { at: now - 600_000, level: 'info', event: 'session_created' },
      { at: now - 420_000, level: 'info', event: 'verification_outcome', detail: 'verdict=verified source=complete' },
      { at: now - 300_000, level: 'warn', event: 'ble_link_lost', detail: 'peripheral disconnected' },
      { at: now - 120_000, level: 'error', event: 'backend_unavailable', detail: 'connect ECONNREFUSED' },
      { at: now - 60_000, level: 'info', event: 'staff_unlocked' },
    ],
    // The names the service counts (src/service/diagnostics.ts), so the screenshots show what staff see.
    counts: {
      verifications: 14,
      'verdict.verified': 11,
      'verdict.rejected': 2,
      'reason.issuer_authentication_invalid': 2,
      'error.backend_error': 1,
      'transport.qr': 9,
      'transport.nfc': 5,
      sessionsCreated: 16,
      sessionsCreatedLastDay: 16,
    },
    app: {
      flavour: 'production',
      secretsProtection: 'os-encrypted',
      managedConfigPath: '/etc/mdl-kiosk/config.json',
      managedKeys: ['backend.baseUrl', 'backend.apiKeyFile', 'app.updates.channel'],
      logDir: '/home/kiosk/.config/mdl-kiosk/logs',
      healthFile: '/home/kiosk/.config/mdl-kiosk/health.json',
      updates: { state: 'error', error: 'net::ERR_NAME_NOT_RESOLVED', checkedAt: now - 3_600_000 },
    },
    // A gateway that stopped routing the session socket a few minutes ago (the longest words staff see).
    backend: {
      lastFailure: {
        kind: 'socket_refused',
        stage: 'handshake',
        status: 404,
        detail: 'the backend refuses the session connection (HTTP 404) — check the WebSocket route of the gateway',
        at: now - 20_000,
      },
      consecutive: 7,
      totals: { socket_refused: 7, session_gone: 1, socket_lost: 2 },
      // The budget spent: its hint is the longest line of the card.
      requestsLastMinute: 20,
      maxRequestsPerMinute: 20,
    },
  };
}

/**
 * Settings with speech set by staff (always on, 60 %, the headset may say two elements) and two speech
 * keys locked by the managed file (headset-only and the start keys), as a fleet might set them.
 */
export function fixtureSpeechSettings(): Settings {
  const base = fixtureSettings();
  return {
    ...base,
    speech: {
      ...DEFAULT_SPEECH_SETTINGS,
      mode: 'always',
      volume: 0.6,
      headsetOutput: 'USB Audio',
      privateElements: ['given_name', 'age_over_21'],
      keys: { ...DEFAULT_SPEECH_SETTINGS.keys, start: ['Numpad5', 'NumpadEnter'] },
    },
    locked: [...base.locked, 'speech.headsetOnly', 'speech.keys.start'],
    lockedBy: { ...base.lockedBy, 'speech.headsetOnly': 'managed', 'speech.keys.start': 'managed' },
  };
}

/** Diagnostics with the screen's speech report: the OS voice on a headset that did not play, no Spanish voice. */
export function fixtureSpeechDiagnostics(now = Date.now()): Diagnostics {
  return {
    ...fixtureDiagnostics(now),
    speech: {
      screen: {
        active: true,
        engine: 'system',
        voiceName: 'Microsoft Zira - English (United States)',
        output: 'headset',
        outputName: 'Headphones (USB Audio Device)',
        outputWorks: false,
        problem: 'NotAllowedError: the output device refused to play',
        systemVoices: {
          en: ['Microsoft Zira - English (United States)', 'Microsoft David - English (United States)'],
          fr: ['Microsoft Hortense - French (France)'],
        },
      },
      builtIn: { state: 'ready', engine: 'espeak-ng 1.51 (wasm)', made: 37, medianMs: 48 },
    },
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
  var diagnostics = config.diagnostics;
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
    cancel: function (a) { record('cancel', a); return Promise.resolve({ cancelled: !!state && state.view.phase === 'awaiting_card' }); },
    moreTime: function (a) { record('moreTime', a);
      // As the service does: an error's clear time moves on; nothing else is extended.
      if (!state || state.view.phase !== 'error' || state.clearsAt === null) return Promise.resolve({ extended: false });
      setState(Object.assign({}, state, { clearsAt: Math.max(state.clearsAt, Date.now()) + 30000 }));
      return Promise.resolve({ extended: true }); },
    setLanguage: function (a) { record('setLanguage', a); if (state) setState(Object.assign({}, state, { language: a.language })); return Promise.resolve(ok); },
    reportCamera: function (a) { record('reportCamera', { state: a.state });
      // As the service does: the status bar shows what the screen last reported of the camera.
      if (state && state.camera.state !== a.state) setState(Object.assign({}, state, { camera: Object.assign({}, state.camera, { state: a.state }) }));
      return Promise.resolve(ok); },
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
      // Speech as the service saves it: a locked key refused by its name, the rest merged and on the screen state.
      if (a.speech) {
        Object.keys(a.speech).forEach(function (k) {
          if (k !== 'keys' && settings.locked.indexOf('speech.' + k) >= 0) errors.push({ key: 'speech.' + k, message: 'speech.' + k + ' is set by the managed configuration file' });
        });
        if (a.speech.keys) Object.keys(a.speech.keys).forEach(function (k) {
          if (settings.locked.indexOf('speech.keys.' + k) >= 0 && a.speech.keys[k].join() !== settings.speech.keys[k].join())
            errors.push({ key: 'speech.keys.' + k, message: 'speech.keys.' + k + ' is set by the managed configuration file' });
        });
        if (errors.length) return Promise.resolve({ ok: false, errors: errors });
        next.speech = Object.assign({}, settings.speech, a.speech);
        if (state) setState(Object.assign({}, state, { speech: next.speech }));
      }
      settings = next;
      return Promise.resolve({ ok: true, settings: settings }); },
    changePin: function (a) { record('changePin', {}); return Promise.resolve(ok); },
    getDiagnostics: function (a) { record('getDiagnostics', a); return Promise.resolve(diagnostics); },
    reportError: function (a) { record('reportError', { kind: a.kind }); return Promise.resolve(ok); },
    // The built-in voice as the host answers it: a quiet 0.2 s tone per request (what was asked is recorded for the speech tests).
    synthesizeSpeech: function (a) { record('synthesizeSpeech', { text: a.text, language: a.language, private: a.private === true });
      var n = 4410, bytes = '';
      for (var i = 0; i < n; i++) { var v = Math.round(Math.sin(i / 8) * 2000) & 0xffff; bytes += String.fromCharCode(v & 0xff, v >> 8); }
      return Promise.resolve({ sampleRate: 22050, pcm: btoa(bytes), engine: 'fake tone' }); },
    reportSpeech: function (a) { record('reportSpeech', a); return Promise.resolve(ok); },
    writeSupportBundle: function (a) { record('writeSupportBundle', a);
      var dir = a.volume ? a.volume : '/home/kiosk/.config/mDL Kiosk/support';
      return Promise.resolve({ path: dir + '/mdl-kiosk-support-2026-11-27T09-30-00-000Z.tar.gz', bytes: 48213 }); },
    prepareSupportDownload: function (a) { record('prepareSupportDownload', a); return Promise.resolve({ ticket: 'T'.repeat(43), name: 'mdl-kiosk-support-2026-11-27T09-30-00-000Z.tar.gz', bytes: 48213 }); },
    listSupportVolumes: function (a) { record('listSupportVolumes', a); return Promise.resolve({ volumes: config.volumes || [] }); },
    selfTest: function (a) { record('selfTest', a); return Promise.resolve({ checks: [
      { name: 'backend', ok: true, status: 'reachable', detail: 'http://127.0.0.1:8443 answered in 12 ms' },
      { name: 'nfc', ok: true, status: 'usable', detail: 'Virtual PC/SC reader 00 00' },
      { name: 'ble_central', ok: true, status: 'usable' },
      { name: 'ble_peripheral', ok: false, status: 'not_configured', detail: 'ble.roles is central' },
      { name: 'camera', ok: true, status: 'active' } ] }); }
  };
  Object.defineProperty(window, 'kiosk', { value: Object.freeze(kiosk), configurable: false, writable: false });
  // The camera as the page sees it: 'real' (the browser's own, e.g. a fake device), or a failure by name.
  var camera = 'real';
  var media = navigator.mediaDevices;
  if (media && media.getUserMedia) {
    var realGetUserMedia = media.getUserMedia.bind(media);
    media.getUserMedia = function (constraints) {
      if (camera === 'denied') return Promise.reject(new DOMException('Permission denied', 'NotAllowedError'));
      if (camera === 'missing') return Promise.reject(new DOMException('Requested device not found', 'NotFoundError'));
      return realGetUserMedia(constraints);
    };
  }
  window.__fakeKiosk = {
    setState: setState,
    calls: calls,
    getState: function () { return state; },
    setSettings: function (next) { settings = next; },
    setDiagnostics: function (next) { diagnostics = next; },
    resetStaff: function () { attemptsLeft = 5; },
    setCamera: function (mode) { camera = mode; }
  };
})`;

export interface FakeKioskOptions {
  /** Extra fields merged into the fixture's state (e.g. `{ testMode: false }`). */
  readonly patch?: Partial<ScreenState>;
  /** The removable volumes `listSupportVolumes` answers (default none). */
  readonly volumes?: readonly { readonly id: string; readonly label: string }[];
}

/** Installs the fake `window.kiosk` with the fixture's state; call before `page.goto`. */
export async function installFakeKiosk(page: Page, name: FixtureName, options: FakeKioskOptions = {}): Promise<void> {
  const state = name === 'disconnected' ? null : { ...screenState(name), ...options.patch };
  const config = { state, pin: FAKE_PIN, settings: fixtureSettings(), diagnostics: fixtureDiagnostics(), volumes: options.volumes ?? [] };
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

export type FakeCamera = 'real' | 'denied' | 'missing';

interface FakeKioskHandle {
  setState(state: unknown): void;
  setSettings(settings: Settings): void;
  setDiagnostics(diagnostics: Diagnostics): void;
  resetStaff(): void;
  setCamera(mode: FakeCamera): void;
}

/** Sends any state (validated by the screen like every other) through the fake kiosk. */
export async function setFakeState(page: Page, state: ScreenState): Promise<void> {
  await page.evaluate(({ s }) => (globalThis as unknown as { __fakeKiosk: FakeKioskHandle }).__fakeKiosk.setState(s), { s: state });
}

/** What `getSettings` answers from now on (e.g. nothing locked, so every field can show an error). */
export async function setFakeSettings(page: Page, settings: Settings): Promise<void> {
  await page.evaluate(({ s }) => (globalThis as unknown as { __fakeKiosk: FakeKioskHandle }).__fakeKiosk.setSettings(s), { s: settings });
}

/** What `getDiagnostics` answers from now on (e.g. with the screen's speech report). */
export async function setFakeDiagnostics(page: Page, diagnostics: Diagnostics): Promise<void> {
  await page.evaluate(({ d }) => (globalThis as unknown as { __fakeKiosk: FakeKioskHandle }).__fakeKiosk.setDiagnostics(d), {
    d: diagnostics,
  });
}

/** Five PIN attempts again (so "attempts left" reads the same in every run). */
export async function resetFakeStaff(page: Page): Promise<void> {
  await page.evaluate(() => (globalThis as unknown as { __fakeKiosk: FakeKioskHandle }).__fakeKiosk.resetStaff());
}

/** Makes the next camera start succeed (`real`) or fail as a denied or missing camera would. */
export async function setFakeCamera(page: Page, mode: FakeCamera): Promise<void> {
  await page.evaluate(({ m }) => (globalThis as unknown as { __fakeKiosk: FakeKioskHandle }).__fakeKiosk.setCamera(m), { m: mode });
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

/**
 * The intents the fake kiosk received, without the speech traffic the screen sends by itself (it makes the
 * current prompt ahead with `synthesizeSpeech` and reports its voice with `reportSpeech`, on no one's action):
 * what a press, a tap or a key asked is the rest, in order.
 */
export async function fakeKioskCalls(page: Page): Promise<{ intent: string; args: Record<string, unknown> }[]> {
  const all = await page.evaluate<{ intent: string; args: Record<string, unknown> }[]>('window.__fakeKiosk.calls.slice()');
  return all.filter((c) => c.intent !== 'synthesizeSpeech' && c.intent !== 'reportSpeech');
}
