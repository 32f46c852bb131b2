/** The screen's decisions as plain data: which screen and words for a state, the status bar, the settings form. */
import { describe, expect, it } from 'vitest';
import { NEEDS_STAFF_CODE_LIST } from '../../../src/common/backend-failure-kinds.js';
import type { Settings } from '../../../src/common/kiosk-api.js';
import { createI18n } from '../../../src/renderer/i18n/index.js';
import { errorLine } from '../../../src/renderer/screens/error-copy.js';
import { customerProfileText } from '../../../src/renderer/screens/profile-label.js';
import { isInProgress, progressVariantFor } from '../../../src/renderer/screens/screen-name.js';
import { buildUpdate, hostErrors, isLocked, timeoutBounds, valuesFrom } from '../../../src/renderer/staff/settings-form.js';
import { backendItem, sessionItem, statusItems, summaryItem } from '../../../src/renderer/staff/status-items.js';
import { fixtureSettings, screenState } from '../../support/screen-fixtures.js';

const i18n = createI18n('en');
const t = i18n.t.bind(i18n) as (key: string, options?: Record<string, unknown>) => string;

describe('screen choice', () => {
  it('tells NFC reading, QR read, approve and receiving apart from transport and prompt', () => {
    expect(progressVariantFor(screenState('engaging_nfc'))).toBe('nfc_reading');
    expect(progressVariantFor(screenState('engaging_qr'))).toBe('qr_read');
    expect(progressVariantFor(screenState('awaiting_card'))).toBe('tap_again');
    expect(progressVariantFor(screenState('ble_connecting'))).toBe('ble_connecting');
    expect(progressVariantFor(screenState('transferring_approve'))).toBe('approve_on_phone');
    expect(progressVariantFor(screenState('transferring_receiving'))).toBe('receiving');
    expect(progressVariantFor(screenState('ready'))).toBeNull();
    expect(isInProgress('transferring')).toBe(true);
    expect(isInProgress('result')).toBe(false);
  });

  it('gives every error code of the core its own customer line, and unknown codes a generic one', () => {
    const codes = [
      'backend_error',
      'timeout',
      'ble_unavailable',
      'no_input',
      'starting',
      'ble_setup_failed',
      'ble_link_lost',
      'connection_lost',
      'cancelled',
      'backend_unavailable',
      'config_error',
      'backend_refuses_socket',
    ];
    const lines = codes.map((c) => errorLine(c, t));
    expect(new Set(lines).size).toBe(codes.length);
    // Every backend the kiosk cannot connect to until staff fix it is one line for the customer.
    for (const code of NEEDS_STAFF_CODE_LIST)
      expect(errorLine(code, t), code).toBe('This kiosk cannot connect to its verification service.');
    expect(errorLine('protocol_violation', t)).toBe(errorLine('backend_error', t));
    expect(errorLine('internal_error', t)).toBe('Something went wrong. Please try again.');
    expect(errorLine('never_heard_of_it', t)).toBe('Something went wrong. Please try again.');
    for (const line of lines) expect(line).not.toMatch(/[a-z]+_[a-z]+/); // no raw keys for customers
  });

  it('describes built-in profiles in the customer language and custom ones by their label', () => {
    expect(customerProfileText('age_over_21', 'Age 21+', t)).toBe('proof that you are 21 or older, and your photo');
    const es = createI18n('es');
    expect(customerProfileText('age_over_21', 'Age 21+', es.t.bind(es) as (k: string) => string)).toMatch(/21 años/);
    expect(customerProfileText('bar_staff', 'Bar staff check', t)).toBe('Bar staff check');
  });
});

describe('status bar', () => {
  it('says every device state in words, with a level for its mark', () => {
    const items = statusItems(screenState('ready'), Date.now(), t);
    expect(items.map((i) => [i.id, i.value, i.level])).toEqual([
      ['nfc', 'ready', 'ok'],
      ['ble_central', 'ready', 'ok'],
      ['ble_peripheral', 'not set up', 'off'],
      ['camera', 'on', 'ok'],
      ['backend', 'connected', 'ok'],
      ['session', 'fresh · 7 min left', 'ok'],
    ]);
    const offline = statusItems(screenState('offline'), Date.now(), t);
    expect(offline.find((i) => i.id === 'backend')).toMatchObject({
      value: 'offline, retrying',
      level: 'problem',
      detail: 'http://127.0.0.1:8443',
    });
    expect(offline.find((i) => i.id === 'session')).toMatchObject({ value: 'none yet' });
  });

  it('says the backend is connected only when the core says so (view.backend), not because a verification runs', () => {
    // A verification screen while the backend is unreachable (the old rule read "connected" off the phase).
    const engaging = screenState('engaging_nfc');
    expect(backendItem({ ...engaging, view: { ...engaging.view, backend: 'offline' } }, t)).toMatchObject({
      value: 'offline, retrying',
      level: 'problem',
    });
    expect(backendItem({ ...engaging, view: { ...engaging.view, backend: 'connecting' } }, t)).toMatchObject({
      value: 'connecting',
      level: 'warn',
    });
    expect(backendItem(engaging, t)).toMatchObject({ value: 'connected', level: 'ok' });
    const ready = screenState('ready');
    expect(backendItem({ ...ready, view: { ...ready.view, backend: 'on_demand' } }, t).value).toBe('contacted when a customer comes');
  });

  it('customers get one line: ready, getting ready or needs staff — never ready while the backend is offline', () => {
    expect(summaryItem(screenState('ready'), t)).toEqual({ value: 'ready', level: 'ok' });
    expect(summaryItem(screenState('connecting'), t)).toEqual({ value: 'getting ready', level: 'warn' });
    for (const name of ['offline', 'config_error', 'cannot_verify'] as const)
      expect(summaryItem(screenState(name), t)?.level, name).toBe('problem');
    const error = screenState('error');
    expect(summaryItem({ ...error, view: { ...error.view, backend: 'offline' } }, t)?.level).toBe('problem');
  });

  it('says nothing while a customer is served: no "Kiosk: ready" under a verification, an outcome or an error', () => {
    const served = [
      'engaging_nfc',
      'awaiting_card',
      'ble_connecting',
      'transferring_approve',
      'result_verified',
      'result_age_no',
      'error',
      'error_timeout',
      'remove_phone',
      'remove_to_retry',
    ] as const;
    for (const name of served) expect(summaryItem(screenState(name), t), name).toBeUndefined();
  });

  it('a silent backend: staff read "not answering" (never "connected"), customers "needs staff", and the error line says the service is not answering', () => {
    const engaging = screenState('engaging_nfc');
    const silent = { ...engaging, view: { ...engaging.view, backend: 'not_answering' as const } };
    expect(backendItem(silent, t)).toMatchObject({ value: 'not answering, retrying', level: 'problem' });
    expect(summaryItem(silent, t)).toEqual({ value: 'needs staff', level: 'problem' });
    expect(errorLine('backend_not_answering', t)).toBe('The verification service is not answering. Please try again in a moment.');
    expect(errorLine('backend_not_answering', t)).not.toBe(errorLine('timeout', t));
  });

  it("the camera item is the screen's own camera when given, else the host's", () => {
    const ready = screenState('ready');
    expect(statusItems(ready, Date.now(), t, 'denied').find((i) => i.id === 'camera')).toMatchObject({
      value: 'access denied',
      level: 'problem',
    });
    expect(statusItems(ready, Date.now(), t).find((i) => i.id === 'camera')).toMatchObject({ value: 'on' });
  });

  it('shows an unknown device reason as its key, never blank', () => {
    const state = screenState('ready');
    const odd = { ...state, view: { ...state.view, devices: { ...state.view.devices, nfc: { usable: false, reason: 'reader_on_fire' } } } };
    expect(statusItems(odd, Date.now(), t)[0]).toMatchObject({ value: 'unavailable', detail: 'reader_on_fire', level: 'problem' });
  });

  it('a Windows central without a radio reads "service stopped or adapter missing", not "not supported"', () => {
    const state = screenState('ready');
    const win = {
      ...state,
      view: { ...state.view, devices: { ...state.view.devices, bleCentral: { usable: false, reason: 'no_radio' } } },
    };
    expect(statusItems(win, Date.now(), t).find((i) => i.id === 'ble_central')).toMatchObject({
      value: 'service stopped or adapter missing',
      level: 'problem',
    });
  });

  it('counts session minutes down and says when it expired', () => {
    const now = 1_000_000;
    const state = screenState('ready', now);
    const at = (expiresAt: number, s: 'armed' | 'busy' = 'armed') =>
      sessionItem({ ...state, session: { state: s, createdAt: now, expiresAt } }, now, t).value;
    expect(at(now + 7 * 60_000 + 59_000)).toBe('fresh · 7 min left');
    expect(at(now + 20_000)).toBe('fresh · 1 min left');
    expect(at(now + 5 * 60_000, 'busy')).toBe('in use · 5 min left');
    expect(at(now - 1)).toBe('expired');
  });
});

describe('settings form', () => {
  const settings: Settings = { ...fixtureSettings(), locked: ['backendUrl'] };

  it('sends nothing when nothing changed, and never the API key unless one was typed', () => {
    expect(buildUpdate(valuesFrom(settings), settings)).toEqual({ update: {}, errors: {} });
    expect(valuesFrom(settings).apiKey).toBe('');
  });

  it('sends only the changed fields, timeouts in milliseconds, empty text as null', () => {
    const values = {
      ...valuesFrom(settings),
      apiKey: 'new-key',
      pcscReader: '  ',
      bleRoles: 'central' as const,
      timeouts: { resultDisplayMs: '45', errorDisplayMs: '6', removePhoneMs: '30' },
    };
    expect(buildUpdate(values, { ...settings, pcscReader: 'ACS ACR1252' }).update).toEqual({
      apiKey: 'new-key',
      pcscReader: null,
      bleRoles: 'central',
      timeouts: { resultDisplayMs: 45_000 },
    });
    expect(buildUpdate({ ...valuesFrom(settings), clearApiKey: true }, settings).update).toEqual({ clearApiKey: true });
  });

  it('leaves out locked keys, even if their field was edited', () => {
    expect(isLocked('backendUrl', settings.locked)).toBe(true);
    expect(isLocked('timeouts.removePhoneMs', ['timeouts'])).toBe(true);
    expect(buildUpdate({ ...valuesFrom(settings), backendUrl: 'https://elsewhere.example' }, settings).update).toEqual({});
  });

  it('refuses timeouts out of the contract bounds or not whole seconds, next to the field', () => {
    expect(timeoutBounds('resultDisplayMs')).toEqual({ min: 5, max: 300 });
    expect(timeoutBounds('errorDisplayMs')).toEqual({ min: 2, max: 120 });
    for (const bad of ['4', '301', '12.5', '', 'abc', '-10']) {
      const built = buildUpdate(
        { ...valuesFrom(settings), timeouts: { ...valuesFrom(settings).timeouts, resultDisplayMs: bad } },
        settings,
      );
      expect(built.errors['timeouts.resultDisplayMs'], bad).toEqual({ kind: 'range', min: 5, max: 300 });
      expect(built.update.timeouts).toBeUndefined();
    }
  });

  it('places the host field errors next to their fields and keeps the others apart', () => {
    const mapped = hostErrors([
      { key: 'backendUrl', message: 'must be an http(s) URL' },
      { key: 'timeouts.removePhoneMs', message: 'too long' },
      { key: 'log.level', message: 'odd' },
    ]);
    expect(mapped.byField.backendUrl).toEqual({ kind: 'host', message: 'must be an http(s) URL' });
    expect(mapped.byField['timeouts.removePhoneMs']).toEqual({ kind: 'host', message: 'too long' });
    expect(mapped.other).toEqual(['log.level: odd']);
  });
});
