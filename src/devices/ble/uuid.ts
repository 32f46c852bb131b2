/**
 * UUID spellings for noble. noble reports and expects 32 lower-case hex digits without dashes (4 digits
 * for 16-bit UUIDs); its JS layer does not normalise input and the hci filters are exact string matches,
 * so a dashed or upper-case UUID silently never matches (docs/ble-libraries.md §3).
 */
const HEX = /^[0-9a-f]+$/;
/** The Bluetooth Base UUID after the 32-bit prefix. */
const BASE_SUFFIX = '00001000800000805f9b34fb';

/** The spelling noble uses: lower case, no dashes, a Base-UUID 16-bit value as its 4 digits. */
export function nobleUuid(uuid: string): string {
  const s = uuid.replaceAll('-', '').toLowerCase();
  if (!HEX.test(s) || (s.length !== 4 && s.length !== 8 && s.length !== 32)) throw new Error(`not a UUID: ${JSON.stringify(uuid)}`);
  if (s.length === 32 && s.startsWith('0000') && s.endsWith(BASE_SUFFIX)) return s.slice(4, 8);
  return s;
}

/** Comparison key: the full 128-bit value (any case, dashed or not, short or long form). */
export function uuidKey(uuid: string): string {
  const s = uuid.replaceAll('-', '').toLowerCase();
  if (s.length === 4) return `0000${s}${BASE_SUFFIX}`;
  if (s.length === 8) return `${s}${BASE_SUFFIX}`;
  return s;
}

export function sameUuid(a: string, b: string): boolean {
  return uuidKey(a) === uuidKey(b);
}
