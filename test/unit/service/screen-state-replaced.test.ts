/**
 * The replaced outcome in the ScreenState stream (issue 28), with fake time: staff see it while the
 * running Kiosk keeps it, and the stream publishes again when it ends, so the staff view drops it at the
 * moment the outcome would have cleared — not at the next unrelated change.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ScreenState } from '../../../src/common/kiosk-api.js';
import type { ReplacedOutcome } from '../../../src/common/kiosk-view.js';
import { parseConfig } from '../../../src/platform/config.js';
import { createLogger } from '../../../src/platform/log.js';
import { CameraStatus } from '../../../src/service/camera-status.js';
import { EMPTY_DEVICES, ScreenStateStream, deviceStatus, serviceView } from '../../../src/service/screen-state.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 1_800_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('ScreenState.replaced', () => {
  it('is the Kiosk’s record while it lasts, and a new state without it is published when it ends', () => {
    const config = parseConfig({});
    let record: ReplacedOutcome | null = null;
    const stream = new ScreenStateStream(
      {
        config: () => config,
        kioskTimeouts: () => config.timeouts,
        sessionFreshness: () => undefined,
        // As the Kiosk's getter: nothing once its time has come.
        replacedOutcome: () => (record !== null && Date.now() < record.clearsAt ? record : null),
        staff: {
          state: () => ({ pinConfigured: false, unlocked: false, unlockedUntil: null, lockedOutUntil: null }),
          anyUnlocked: () => false,
        },
        camera: new CameraStatus(),
        testMode: false,
        languageResetMs: 60_000,
        onNotBusy: () => undefined,
        now: () => Date.now(),
        log: () => createLogger({ level: 'silent' }),
      },
      serviceView('starting', 'age_over_21', deviceStatus(EMPTY_DEVICES), Date.now()),
    );
    const states: ScreenState[] = [];
    stream.onState((s) => states.push(s));
    expect(stream.state.replaced).toBeNull();
    const now = Date.now();
    record = {
      verdict: 'verified',
      answer: { kind: 'age', result: 'not_met', threshold: 21 },
      transport: 'nfc',
      shownAt: now - 6_000,
      replacedAt: now,
      replacedBy: 'qr',
      clearsAt: now + 24_000,
    };
    stream.publish();
    expect(stream.state.replaced).toEqual(record);
    vi.advanceTimersByTime(23_900);
    expect(stream.state.replaced).toEqual(record);
    const published = states.length;
    // No other change happens: the stream publishes by itself when the record ends.
    vi.advanceTimersByTime(200);
    expect(states.length).toBe(published + 1);
    expect(states.at(-1)?.replaced).toBeNull();
    stream.dispose();
  });
});
