/**
 * The screen state's language rule and "More time": an error does not end the customer's visit (the
 * language stays, whether the error is dismissed or clears by itself); an outcome does. "More time" moves
 * an error's `clearsAt`, and only an error's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KioskPhase, KioskView } from '../../../src/common/kiosk-view.js';
import { parseConfig } from '../../../src/platform/config.js';
import { createLogger } from '../../../src/platform/log.js';
import { CameraStatus } from '../../../src/service/camera-status.js';
import { ScreenStateStream } from '../../../src/service/screen-state.js';

const config = parseConfig({});
let now = 1_000_000;
let stream: ScreenStateStream | undefined;

afterEach(() => {
  stream?.dispose();
  stream = undefined;
});

function view(phase: KioskPhase): KioskView {
  return {
    phase,
    prompt:
      phase === 'ready'
        ? 'tap_or_scan'
        : phase === 'error'
          ? 'try_again'
          : phase === 'result'
            ? 'verified'
            : phase === 'remove_phone'
              ? 'remove_to_retry'
              : 'connecting',
    transport: null,
    role: null,
    progress: { step: 0, apdus: 0, bleMessages: 0 },
    outcome: null,
    error: phase === 'error' ? { code: 'timeout', detail: 'took too long', retryable: true } : null,
    profile: 'age_over_21',
    devices: { nfc: { usable: true }, qr: { usable: true }, bleCentral: { usable: true }, blePeripheral: { usable: true } },
    backend: 'connected',
    at: now,
  };
}

function makeStream(): ScreenStateStream {
  const created = new ScreenStateStream(
    {
      config: () => config,
      kioskTimeouts: () => config.timeouts,
      sessionFreshness: () => undefined,
      replacedOutcome: () => null,
      staff: {
        state: () => ({ pinConfigured: false, unlocked: false, unlockedUntil: null, lockedOutUntil: null }),
        anyUnlocked: () => false,
      },
      camera: new CameraStatus(),
      testMode: true,
      languageResetMs: 60_000,
      onNotBusy: () => undefined,
      now: () => now,
      log: () => createLogger({ level: 'silent' }),
    },
    view('ready'),
  );
  stream = created;
  return created;
}

describe('ScreenStateStream: the language over a visit', () => {
  it('an error that clears by itself keeps the customer’s language (the visit goes on)', () => {
    const s = makeStream();
    s.chooseLanguage('es');
    for (const phase of ['engaging', 'error', 'ready'] as const) s.setView(view(phase));
    expect(s.state.view.phase).toBe('ready');
    expect(s.state.language).toBe('es');
  });

  it('an error, "lift your phone", then Ready: still the customer’s language', () => {
    const s = makeStream();
    s.chooseLanguage('fr');
    for (const phase of ['engaging', 'error', 'remove_phone', 'ready'] as const) s.setView(view(phase));
    expect(s.state.language).toBe('fr');
  });

  it('an outcome ends the visit: the next customer gets the default language', () => {
    const s = makeStream();
    s.chooseLanguage('es');
    for (const phase of ['engaging', 'error', 'ready', 'engaging', 'result', 'ready'] as const) s.setView(view(phase));
    expect(s.state.language).toBe('en');
  });

  it('"Try again" on an outcome (declined) keeps the language once', () => {
    const s = makeStream();
    s.chooseLanguage('es');
    for (const phase of ['engaging', 'result'] as const) s.setView(view(phase));
    s.keepLanguageForRetry();
    s.setView(view('ready'));
    expect(s.state.language).toBe('es');
    for (const phase of ['engaging', 'result', 'ready'] as const) s.setView(view(phase));
    expect(s.state.language).toBe('en');
  });
});

describe('ScreenStateStream: "More time"', () => {
  it('moves an error’s clearsAt, and nothing else’s', () => {
    const s = makeStream();
    s.setView(view('error'));
    expect(s.state.clearsAt).toBe(now + config.timeouts.errorDisplayMs);
    now += 2_000;
    s.extendClearsAt(34_000);
    expect(s.state.clearsAt).toBe(now + 34_000);
    s.setView(view('ready'));
    s.extendClearsAt(34_000);
    expect(s.state.clearsAt).toBeNull();
  });
});
