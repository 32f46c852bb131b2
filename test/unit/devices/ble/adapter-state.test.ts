import { describe, expect, it } from 'vitest';
import { nextAvailability } from '../../../../src/devices/ble/adapter-state.js';

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
