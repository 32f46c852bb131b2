/**
 * The Kiosk's screen parts alone (src/kiosk/screen/): the idle view from the keeper's status and the
 * devices (pure), and the screen timer's "More time" and "Next customer" with a clock the test moves.
 * The Kiosk as a whole is tested through the conformance suite.
 */
import { describe, expect, it } from 'vitest';
import type { ErrorView } from '../../src/common/kiosk-view.js';
import { parseConfig } from '../../src/platform/config.js';
import { backendStateFor, canServe, idleView } from '../../src/kiosk/screen/idle-view.js';
import { MORE_TIME_MS, MORE_TIME_PRESSES, ScreenTimer } from '../../src/kiosk/screen/screen-timer.js';
import type { KeeperStatus } from '../../src/kiosk/session-keeper.js';

const config = parseConfig({});
const NO_BLE: ErrorView = { code: 'ble_unavailable', detail: 'no Bluetooth role is usable', retryable: false };
const STARTING: ErrorView = { code: 'starting', detail: 'a Bluetooth role is starting', retryable: true };

function idle(status: KeeperStatus, refusal: ErrorView | undefined, backendAnswered = false): ReturnType<typeof idleView> {
  return idleView({ status, backendAnswered, profile: 'age_over_21', deviceRefusal: () => refusal, session: config.session });
}

describe('the idle view', () => {
  it('ready only when the devices can finish a verification; "starting" devices read as connecting', () => {
    expect(idle({ state: 'armed' }, undefined)).toMatchObject({
      phase: 'ready',
      prompt: 'tap_or_scan',
      error: null,
      backend: 'connected',
      profile: 'age_over_21',
    });
    expect(idle({ state: 'armed' }, STARTING)).toMatchObject({ phase: 'connecting', prompt: 'connecting', error: null });
    expect(idle({ state: 'standby' }, NO_BLE)).toMatchObject({ phase: 'cannot_verify', error: NO_BLE, backend: 'on_demand' });
  });

  it('a cause only staff can fix wins over offline and connecting, one that passes by itself does not', () => {
    expect(idle({ state: 'offline', detail: 'refused' }, NO_BLE)).toMatchObject({ phase: 'cannot_verify', error: NO_BLE });
    expect(idle({ state: 'offline', detail: 'refused' }, STARTING)).toMatchObject({
      phase: 'offline',
      error: { code: 'backend_unavailable', detail: 'refused' },
    });
    expect(idle({ state: 'arming' }, STARTING)).toMatchObject({ phase: 'connecting', backend: 'connecting' });
  });

  it('needs staff: refused credentials stay config_error, a failure still probed says how often', () => {
    expect(idle({ state: 'config_error', detail: 'key refused', retrying: false, kind: 'credentials_refused' }, undefined)).toMatchObject({
      phase: 'config_error',
      backend: 'needs_staff',
      error: { code: 'config_error', detail: 'key refused', retryable: false },
    });
    const probed = idle({ state: 'config_error', detail: 'gateway refuses', retrying: true, kind: 'socket_refused' }, undefined);
    expect(probed.error?.code).not.toBe('config_error');
    expect(probed.error?.detail).toMatch(/^gateway refuses \(checked again .+\)$/);
  });

  it('the status bar says connected in standby only after the backend answered', () => {
    expect(backendStateFor({ state: 'standby' }, false)).toBe('on_demand');
    expect(backendStateFor({ state: 'standby' }, true)).toBe('connected');
    expect(backendStateFor({ state: 'offline', detail: 'silent', code: 'backend_not_answering' }, true)).toBe('not_answering');
  });

  it('a tap can be served when the backend is not known down and the devices do not refuse', () => {
    expect(canServe({ state: 'armed' }, () => undefined)).toBe(true);
    expect(canServe({ state: 'arming' }, () => undefined)).toBe(true);
    expect(canServe({ state: 'armed' }, () => NO_BLE)).toBe(false);
    expect(canServe({ state: 'offline', detail: 'x' }, () => undefined)).toBe(false);
  });
});

describe('the screen timer', () => {
  function timer(): { timer: ScreenTimer; clock: { t: number } } {
    const clock = { t: 1_000 };
    return { timer: new ScreenTimer(config.timeouts, () => clock.t), clock };
  }

  it('an outcome takes no tap before its minimum; an error takes one at once', () => {
    const { timer: t } = timer();
    t.showResult(undefined);
    expect(t.current).toMatchObject({
      kind: 'timed',
      after: 'result',
      shownAt: 1_000,
      takesTapsAt: 1_000 + Math.min(config.timeouts.outcomeMinimumMs, config.timeouts.resultDisplayMs),
    });
    t.showError(undefined);
    expect(t.current).toMatchObject({ kind: 'timed', after: 'error', takesTapsAt: 1_000, until: 1_000 + config.timeouts.errorDisplayMs });
  });

  it('"More time" extends an error at most MORE_TIME_PRESSES times, never an outcome', async () => {
    const { timer: t, clock } = timer();
    t.showResult(undefined);
    expect(t.moreTime()).toBeUndefined();
    t.showError(undefined);
    const changed = t.nextChange();
    clock.t += 500;
    expect(t.moreTime()).toBe(config.timeouts.errorDisplayMs - 500 + MORE_TIME_MS);
    await expect(changed).resolves.toBeUndefined();
    for (let press = 2; press <= MORE_TIME_PRESSES; press++) expect(t.moreTime()).toBeGreaterThan(0);
    expect(t.moreTime()).toBeUndefined();
  });

  it('"Next customer" pressed before the wait began ends the screen at once', async () => {
    const { timer: t } = timer();
    t.showError(undefined);
    const screen = t.current;
    if (screen.kind === 'none') throw new Error('expected a timed screen');
    t.dismiss();
    await expect(t.ends(screen, new AbortController().signal)).resolves.toBeUndefined();
  });
});
