/**
 * This screen's own camera (src/renderer/qr/camera-status.ts): what its status bar and Ready show. A
 * problem stays until the camera runs again, so leaving Ready (camera off) or trying again (starting) does
 * not hide a blocked camera or offer it for a moment.
 */
import { describe, expect, it } from 'vitest';
import { nextShownCamera } from '../../../src/renderer/qr/camera-status.js';

describe('nextShownCamera', () => {
  it('a problem stays through off and starting, until the camera is active again', () => {
    let shown = nextShownCamera('off', 'starting');
    expect(shown).toBe('starting');
    shown = nextShownCamera(shown, 'denied');
    for (const report of ['off', 'starting', 'off'] as const) {
      shown = nextShownCamera(shown, report);
      expect(shown).toBe('denied');
    }
    expect(nextShownCamera(shown, 'unplugged')).toBe('unplugged');
    expect(nextShownCamera(shown, 'active')).toBe('active');
  });

  it('without a problem the state is as reported', () => {
    expect(nextShownCamera('active', 'off')).toBe('off');
    expect(nextShownCamera('off', 'active')).toBe('active');
  });
});
