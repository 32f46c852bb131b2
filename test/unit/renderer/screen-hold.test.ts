/** The screen-level hold: in-between screens stay long enough to read; the end of a visit barely waits. */
import { describe, expect, it } from 'vitest';
import { holdDelay, MAX_END_DELAY_MS, MIN_SCREEN_MS, screenKey } from '../../../src/renderer/api/screen-hold.js';
import { screenState } from '../../support/screen-fixtures.js';

const T0 = 1_000_000;

describe('holdDelay', () => {
  it('an in-between screen replaced by another after 5 ms waits out its minimum', () => {
    expect(holdDelay(screenState('engaging_nfc'), T0, screenState('ble_connecting'), T0 + 5)).toBe(MIN_SCREEN_MS - 5);
    expect(holdDelay(screenState('transferring_approve'), T0, screenState('transferring_receiving'), T0 + 100)).toBe(MIN_SCREEN_MS - 100);
    expect(holdDelay(screenState('remove_phone'), T0, screenState('ready'), T0 + 10)).toBe(MIN_SCREEN_MS - 10);
  });

  it('an outcome or an error waits at most a glance, and not at all after a step that lasted', () => {
    expect(holdDelay(screenState('engaging_nfc'), T0, screenState('result_verified'), T0 + 2)).toBe(MAX_END_DELAY_MS - 2);
    expect(holdDelay(screenState('ble_connecting'), T0, screenState('error'), T0 + 200)).toBe(MAX_END_DELAY_MS - 200);
    expect(holdDelay(screenState('transferring_receiving'), T0, screenState('result_verified'), T0 + MAX_END_DELAY_MS)).toBe(0);
    expect(MAX_END_DELAY_MS).toBeLessThanOrEqual(300);
  });

  it('no wait once the minimum is over, on the same screen, after a screen that is not in-between, or without a kiosk', () => {
    expect(holdDelay(screenState('engaging_nfc'), T0, screenState('ble_connecting'), T0 + MIN_SCREEN_MS)).toBe(0);
    const more = screenState('transferring_receiving');
    expect(
      holdDelay(more, T0, { ...more, view: { ...more.view, progress: { ...more.view.progress, apdus: 99 } }, language: 'fr' }, T0 + 1),
    ).toBe(0);
    expect(holdDelay(screenState('ready'), T0, screenState('engaging_nfc'), T0 + 1)).toBe(0);
    expect(holdDelay(screenState('result_verified'), T0, screenState('ready'), T0 + 1)).toBe(0);
    expect(holdDelay(screenState('engaging_nfc'), T0, null, T0 + 1)).toBe(0);
    expect(holdDelay(null, T0, screenState('engaging_nfc'), T0 + 1)).toBe(0);
  });

  it('the variants of one phase are different screens', () => {
    expect(screenKey(screenState('transferring_approve'))).not.toBe(screenKey(screenState('transferring_receiving')));
    expect(screenKey(screenState('engaging_nfc'))).not.toBe(screenKey(screenState('engaging_qr')));
    expect(screenKey(null)).toBe('none');
  });
});
