/**
 * Setting the staff PIN outside the screen: `npm run host -- --set-pin` (typed without echo, or from
 * `MDL_KIOSK_STAFF_PIN` for provisioning scripts). Writes the same salted scrypt hash the screen's
 * "change PIN" writes, and clears the wrong-PIN counter and any lockout.
 */
import { Pin } from '../common/kiosk-api.js';
import { SettingsStore } from './settings-store.js';
import { hashPin, type ScryptParams } from './staff-pin.js';

export class PinFormatError extends Error {
  override readonly name = 'PinFormatError';
}

/** Stores the PIN's hash in the data directory; returns problems found in the settings file (if any). */
export async function provisionStaffPin(dataDir: string, pin: string, scrypt?: ScryptParams): Promise<readonly string[]> {
  if (!Pin.safeParse(pin).success) throw new PinFormatError('a PIN is 4 to 12 digits');
  const store = new SettingsStore(dataDir);
  const { problems } = await store.load();
  await store.saveStaff({ pinHash: await hashPin(pin, scrypt), failures: 0, lockouts: 0, lockedOutUntil: null });
  return problems;
}
