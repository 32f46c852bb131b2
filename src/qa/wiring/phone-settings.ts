/**
 * What QA can set on the virtual phone at run time (the phone page, the demo, the tests), as one
 * validated record. `toPhoneBehaviour` turns it into the simulator's `PhoneBehaviour`; the credential
 * variant, the holder's age, the portrait format and the profile need a new phone (see virtual-counter.ts),
 * the rest does not. `nfcReader` and `bluetooth` are the kiosk's side of the counter (its device ports).
 */
import { z } from 'zod';
import { PHONE_PROFILE_NAMES } from '../sim/virtual-wallet/profiles.js';
import type { Availability } from '../../devices/ports.js';
import type { PhoneBehaviour } from '../sim/virtual-wallet/virtual-phone.js';

/** Bounds keep a typo from freezing a demo for hours or building an absurd tag. */
export const MAX_CONSENT_DELAY_MS = 120_000;

export const PhoneSettingsSchema = z.strictObject({
  profile: z.enum(PHONE_PROFILE_NAMES),
  consent: z.enum(['approve', 'decline']),
  consentDelayMs: z.number().int().min(0).max(MAX_CONSENT_DELAY_MS),
  credential: z.enum(['valid', 'expired', 'tampered']),
  /** The NFC field drops at this APDU (1-based) of each tap; null: never. */
  fieldDropAtApdu: z.number().int().min(1).max(1_000).nullable(),
  /** The phone drops Bluetooth after sending this many chunks of its answer; null: never. */
  bleDropAfterChunks: z.number().int().min(0).max(100_000).nullable(),
  portrait: z.enum(['jpeg', 'jpeg2000']),
  deviceAuth: z.enum(['signature', 'mac']),
  /** iPhone-like (mdoc central client mode): the phone expects another Ident and gives up. */
  wrongIdent: z.boolean(),
  /** The holder's age: `under_21` is a credential born 19 years ago (`age_over_21` false, `age_over_18` true). */
  holder: z.enum(['adult', 'under_21']),
  /** The kiosk's NFC reader as its availability port reports it: plugged in, unplugged (`no_reader`), PC/SC down (`service_down`). */
  nfcReader: z.enum(['present', 'unplugged', 'service_down']),
  /** The kiosk's Bluetooth as its ports report it: on, `powered_off`, `no_adapter`, `unauthorized` (virtual radio only). */
  bluetooth: z.enum(['on', 'off', 'no_adapter', 'unauthorized']),
});
export type PhoneSettings = z.infer<typeof PhoneSettingsSchema>;

/** A change: any subset of the settings. */
export const PhoneSettingsChangeSchema = PhoneSettingsSchema.partial();
export type PhoneSettingsChange = z.infer<typeof PhoneSettingsChangeSchema>;

export const DEFAULT_PHONE_SETTINGS: PhoneSettings = {
  profile: 'android',
  consent: 'approve',
  consentDelayMs: 0,
  credential: 'valid',
  fieldDropAtApdu: null,
  bleDropAfterChunks: null,
  portrait: 'jpeg',
  deviceAuth: 'signature',
  wrongIdent: false,
  holder: 'adult',
  nfcReader: 'present',
  bluetooth: 'on',
};

/** Settings that only a new phone can take (they are fixed when the credential is issued or the phone made). */
export function needsNewPhone(before: PhoneSettings, after: PhoneSettings): boolean {
  return (
    before.profile !== after.profile ||
    before.credential !== after.credential ||
    before.portrait !== after.portrait ||
    before.holder !== after.holder
  );
}

/** An under-21 holder's birth date: 19 years before `now` (UTC), so every age_over_NN issued from it agrees. */
export function underAgeBirthDate(now: Date): string {
  const year = now.getUTCFullYear() - 19;
  const monthDay = now.toISOString().slice(4, 10);
  return `${String(year).padStart(4, '0')}${monthDay === '-02-29' ? '-02-28' : monthDay}`;
}

/** What the kiosk's device ports report for the QA device switches, worded as the real adapters word it. */
export function deviceAvailability(settings: Pick<PhoneSettings, 'nfcReader' | 'bluetooth'>): {
  readonly nfc: Availability;
  readonly bluetooth: Availability;
} {
  const nfc: Availability =
    settings.nfcReader === 'unplugged'
      ? { usable: false, reason: 'no_reader', detail: 'waiting for a reader (unplugged on the QA phone page)' }
      : settings.nfcReader === 'service_down'
        ? { usable: false, reason: 'service_down', detail: 'the PC/SC service is not available (stopped on the QA phone page)' }
        : { usable: true };
  const bluetooth: Availability =
    settings.bluetooth === 'off'
      ? { usable: false, reason: 'powered_off', detail: 'the Bluetooth adapter is powered off (QA phone page)' }
      : settings.bluetooth === 'no_adapter'
        ? { usable: false, reason: 'no_adapter', detail: 'no Bluetooth LE adapter (removed on the QA phone page)' }
        : settings.bluetooth === 'unauthorized'
          ? { usable: false, reason: 'unauthorized', detail: 'no permission to use the Bluetooth adapter (QA phone page)' }
          : { usable: true };
  return { nfc, bluetooth };
}

export function toPhoneBehaviour(settings: PhoneSettings): PhoneBehaviour {
  return {
    consent: settings.consent,
    ...(settings.consentDelayMs > 0 ? { consentDelayMs: settings.consentDelayMs } : {}),
    credential: settings.credential,
    deviceAuth: settings.deviceAuth,
    portrait: settings.portrait,
    ...(settings.fieldDropAtApdu === null ? {} : { nfcFieldDropAtApdu: settings.fieldDropAtApdu }),
    ...(settings.bleDropAfterChunks === null ? {} : { bleDropAfterChunks: settings.bleDropAfterChunks }),
    ...(settings.wrongIdent ? { wrongIdent: true } : {}),
  };
}

/** The settings a `PhoneBehaviour` (e.g. from the relay CLI's flags) stands for; a list of field drops keeps its first. */
export function fromPhoneBehaviour(profile: PhoneSettings['profile'], behaviour: PhoneBehaviour): PhoneSettings {
  const drop = behaviour.nfcFieldDropAtApdu;
  const firstDrop = typeof drop === 'number' ? drop : drop?.[0];
  return PhoneSettingsSchema.parse({
    profile,
    consent: behaviour.consent ?? 'approve',
    consentDelayMs: behaviour.consentDelayMs ?? 0,
    credential: behaviour.credential ?? 'valid',
    fieldDropAtApdu: firstDrop ?? null,
    bleDropAfterChunks: behaviour.bleDropAfterChunks ?? null,
    portrait: behaviour.portrait ?? 'jpeg',
    deviceAuth: behaviour.deviceAuth ?? 'signature',
    wrongIdent: behaviour.wrongIdent ?? false,
    holder: 'adult',
    nfcReader: 'present',
    bluetooth: 'on',
  });
}
