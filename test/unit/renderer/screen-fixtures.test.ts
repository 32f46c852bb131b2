import { describe, expect, it } from 'vitest';
import { ScreenState } from '../../../src/common/kiosk-api.js';
import { customerScreenFor } from '../../../src/renderer/screens/screen-name.js';
import { FIXTURE_NAMES, screenOf, screenState } from '../../support/screen-fixtures.js';

describe('screen fixtures', () => {
  it('every fixture state passes the contract schema', () => {
    for (const name of FIXTURE_NAMES) {
      const parsed = ScreenState.safeParse(screenState(name));
      expect(parsed.success, `${name}: ${parsed.success ? '' : parsed.error.message}`).toBe(true);
    }
  });

  it('every customer fixture shows the screen it is named for', () => {
    for (const name of FIXTURE_NAMES) {
      if (name === 'disconnected' || name === 'staff_pin' || name === 'settings' || name === 'diagnostics') continue;
      expect(customerScreenFor(screenState(name)), name).toBe(screenOf(name));
    }
    expect(customerScreenFor(null)).toBe('disconnected');
  });
});
