import { describe, expect, it, vi } from 'vitest';
import type { Availability } from '../../../../src/devices/ports.js';
import { AdapterAvailability, nextAvailability } from '../../../../src/devices/ble/adapter-state.js';

describe('nextAvailability', () => {
  const off = { usable: false, reason: 'powered_off' } as const;
  it('keeps an absent adapter absent when the device poll reports it switched off', () => {
    const absent = { usable: false, reason: 'no_adapter', detail: 'no Bluetooth LE adapter (hci binding)' } as const;
    expect(nextAvailability(absent, off)).toBe(absent);
    const unsupported = { usable: false, reason: 'unsupported_platform' } as const;
    expect(nextAvailability(unsupported, off)).toBe(unsupported);
  });

  it('takes every other change', () => {
    expect(nextAvailability({ usable: false, reason: 'no_adapter' }, { usable: true })).toEqual({ usable: true });
    expect(nextAvailability({ usable: true }, off)).toBe(off);
    expect(nextAvailability({ usable: false, reason: 'starting' }, off)).toBe(off);
  });
});

describe('AdapterAvailability: an adapter coming up is starting, not switched off', () => {
  const on = { usable: true } as const;
  const off = { usable: false, reason: 'powered_off', detail: 'off' } as const;
  const resetting = { usable: false, reason: 'starting', detail: 'resetting' } as const;

  function tracker(first: Availability): { state: { raw: Availability }; clock: { t: number }; a: AdapterAvailability } {
    const state = { raw: first };
    const clock = { t: 0 };
    return {
      state,
      clock,
      a: new AdapterAvailability(
        () => state.raw,
        3_000,
        () => clock.t,
      ),
    };
  }

  it('poweredOff first and poweredOn 20 ms later (hci over a UART) reads starting, then usable — never powered_off', () => {
    const { state, clock, a } = tracker(off);
    const seen: (string | undefined)[] = [a.current.reason];
    a.onChange((v) => seen.push(v.usable ? 'usable' : v.reason));
    clock.t = 20;
    state.raw = on;
    a.update();
    expect(seen).toEqual(['starting', 'usable']);
    a.dispose();
  });

  it('an adapter still off after the settle window is powered_off (a timer re-reads it)', () => {
    vi.useFakeTimers();
    try {
      const state = { raw: off as Availability };
      const a = new AdapterAvailability(() => state.raw, 3_000);
      expect(a.current.reason).toBe('starting');
      vi.advanceTimersByTime(2_999);
      expect(a.current.reason).toBe('starting');
      vi.advanceTimersByTime(2);
      expect(a.current.reason).toBe('powered_off');
      a.dispose();
    } finally {
      vi.useRealTimers();
    }
  });

  it('after it was on, switching off is powered_off at once; a reset opens a new window', () => {
    const { state, clock, a } = tracker(on);
    state.raw = off;
    clock.t = 100;
    a.update();
    expect(a.current.reason).toBe('powered_off');
    state.raw = resetting;
    a.update();
    expect(a.current.reason).toBe('starting');
    state.raw = off;
    clock.t = 200;
    a.update();
    expect(a.current.reason).toBe('starting');
    clock.t = 3_300;
    a.update();
    expect(a.current.reason).toBe('powered_off');
    a.dispose();
  });

  it('an absent adapter stays absent through the poll that reports it off', () => {
    const absent = { usable: false, reason: 'no_adapter' } as const;
    const { state, a } = tracker(absent);
    state.raw = off;
    a.update();
    expect(a.current.reason).toBe('no_adapter');
    a.dispose();
  });
});
