/**
 * The phone page's QA switches for the kiosk's devices and the holder's age: validated like the other
 * settings, applied at once to the kiosk's device ports (worded as the real adapters word it), and an
 * under-21 holder is a new credential whose birth date agrees with age_over_21 false.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ageAt } from '../../../src/qa/sim/virtual-wallet/credential.js';
import { createVirtualCounter, getTestPki, type VirtualCounter } from '../../../src/qa/index.js';
import {
  DEFAULT_PHONE_SETTINGS,
  PhoneSettingsChangeSchema,
  deviceAvailability,
  needsNewPhone,
  underAgeBirthDate,
} from '../../../src/qa/wiring/phone-settings.js';

let counter: VirtualCounter | undefined;
afterEach(async () => {
  await counter?.stop();
  counter = undefined;
});

describe('QA switches: missing devices and an under-21 holder', () => {
  it('are validated like the other settings', () => {
    expect(PhoneSettingsChangeSchema.safeParse({ holder: 'under_21', nfcReader: 'unplugged', bluetooth: 'off' }).success).toBe(true);
    for (const bad of [{ holder: 'under_18' }, { nfcReader: 'gone' }, { bluetooth: true }, { bluetooth: 'off', extra: 1 }])
      expect(PhoneSettingsChangeSchema.safeParse(bad).success).toBe(false);
    expect(DEFAULT_PHONE_SETTINGS).toMatchObject({ holder: 'adult', nfcReader: 'present', bluetooth: 'on' });
  });

  it('say what the real adapters say for each way a device goes missing', () => {
    expect(deviceAvailability({ nfcReader: 'present', bluetooth: 'on' })).toEqual({ nfc: { usable: true }, bluetooth: { usable: true } });
    expect(deviceAvailability({ nfcReader: 'unplugged', bluetooth: 'off' })).toMatchObject({
      nfc: { usable: false, reason: 'no_reader' },
      bluetooth: { usable: false, reason: 'powered_off' },
    });
    expect(deviceAvailability({ nfcReader: 'service_down', bluetooth: 'no_adapter' })).toMatchObject({
      nfc: { reason: 'service_down' },
      bluetooth: { reason: 'no_adapter' },
    });
    expect(deviceAvailability({ nfcReader: 'present', bluetooth: 'unauthorized' }).bluetooth).toMatchObject({
      usable: false,
      reason: 'unauthorized',
    });
  });

  it('an under-21 birth date is 19 years back, also on 29 February', () => {
    for (const now of [new Date('2026-11-28T11:00:00Z'), new Date('2028-02-29T12:00:00Z'), new Date('2026-01-01T00:00:00Z')]) {
      const born = underAgeBirthDate(now);
      expect(born).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(ageAt(born, now)).toBe(19);
    }
    expect(underAgeBirthDate(new Date('2028-02-29T12:00:00Z'))).toBe('2009-02-28');
    expect(needsNewPhone(DEFAULT_PHONE_SETTINGS, { ...DEFAULT_PHONE_SETTINGS, holder: 'under_21' })).toBe(true);
    expect(needsNewPhone(DEFAULT_PHONE_SETTINGS, { ...DEFAULT_PHONE_SETTINGS, nfcReader: 'unplugged', bluetooth: 'off' })).toBe(false);
  });

  it("apply to the kiosk's ports at once, without a new phone, and come back; a role not configured stays so", async () => {
    counter = await createVirtualCounter({ pki: await getTestPki(), backend: false, kioskBle: 'central' });
    const { nfc, bleCentral, blePeripheral } = counter.rig.devices;
    if (!nfc || !bleCentral || !blePeripheral) throw new Error('the virtual counter has every device');
    const devices = { nfc, bleCentral, blePeripheral };
    const phone = counter.rig.phone;
    const seen: string[] = [];
    devices.nfc.onAvailabilityChange?.((a) => seen.push(`nfc:${a.reason ?? 'usable'}`));
    await counter.reconfigurePhone({ nfcReader: 'unplugged', bluetooth: 'off' });
    expect(devices.nfc.availability()).toMatchObject({ usable: false, reason: 'no_reader' });
    expect(devices.bleCentral.availability()).toMatchObject({ usable: false, reason: 'powered_off' });
    expect(devices.blePeripheral.availability()).toMatchObject({ usable: false, reason: 'not_configured' });
    expect(counter.rig.phone).toBe(phone);
    expect(seen).toEqual(['nfc:no_reader']);
    await counter.reconfigurePhone({ nfcReader: 'present', bluetooth: 'on' });
    expect(devices.nfc.availability()).toEqual({ usable: true });
    expect(devices.bleCentral.availability()).toEqual({ usable: true });
    expect(devices.blePeripheral.availability()).toMatchObject({ usable: false, reason: 'not_configured' });
    expect(counter.settings).toMatchObject({ nfcReader: 'present', bluetooth: 'on' });
  });

  it('an under-21 holder is a new phone with a credential of its own; a bad change leaves everything as it was', async () => {
    counter = await createVirtualCounter({ pki: await getTestPki(), backend: false });
    const phone = counter.rig.phone;
    await counter.reconfigurePhone({ holder: 'under_21' });
    expect(counter.rig.phone).not.toBe(phone);
    expect(counter.settings.holder).toBe('under_21');
    await expect(counter.reconfigurePhone({ bluetooth: 'sideways' } as never)).rejects.toThrow();
    expect(counter.settings).toMatchObject({ holder: 'under_21', bluetooth: 'on' });
  });
});
