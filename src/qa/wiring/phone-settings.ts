/**
 * What QA can set on the virtual phone at run time (the phone page, the demo, the tests), as one
 * validated record. `toPhoneBehaviour` turns it into the simulator's `PhoneBehaviour`; the credential
 * variant, the portrait format and the profile need a new phone (see virtual-counter.ts), the rest does not.
 */
import { z } from 'zod';
import { PHONE_PROFILE_NAMES } from '../sim/virtual-wallet/profiles.js';
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
};

/** Settings that only a new phone can take (they are fixed when the credential is issued or the phone made). */
export function needsNewPhone(before: PhoneSettings, after: PhoneSettings): boolean {
  return before.profile !== after.profile || before.credential !== after.credential || before.portrait !== after.portrait;
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
  });
}
