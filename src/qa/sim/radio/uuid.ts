/**
 * UUID spellings on the virtual radio. The radio reports UUIDs the way noble and bleno print them (lower
 * case, no dashes: the "stack spelling") and compares them by their 128-bit value, so `180D`, `180d` and
 * `0000180d-0000-1000-8000-00805f9b34fb` are the same service. (Own copy: src/sim imports nothing from
 * the kiosk side.)
 */
import { RadioError } from './errors.js';

const HEX = /^[0-9a-f]+$/;
/** The Bluetooth Base UUID after the 32-bit prefix. */
const BASE_SUFFIX = '00001000800000805f9b34fb';

/** Lower case, no dashes; 16-, 32- and 128-bit forms kept as given. Throws on anything else. */
export function stackUuid(uuid: string): string {
  const s = uuid.replaceAll('-', '').toLowerCase();
  if (!HEX.test(s) || (s.length !== 4 && s.length !== 8 && s.length !== 32)) {
    throw new RadioError('invalid_argument', `not a UUID: ${JSON.stringify(uuid)}`);
  }
  return s;
}

/** Comparison key: the full 128-bit value as 32 lower-case hex digits. */
export function uuidKey(uuid: string): string {
  const s = stackUuid(uuid);
  if (s.length === 4) return `0000${s}${BASE_SUFFIX}`;
  if (s.length === 8) return `${s}${BASE_SUFFIX}`;
  return s;
}

export function sameUuid(a: string, b: string): boolean {
  return uuidKey(a) === uuidKey(b);
}
