/**
 * UUID handling for the BLE characteristic and service identifiers of the relay protocol.
 * The spec says comparisons are case-insensitive (spec §2.5, §4.3, §4.4); we also treat the dashed and
 * undashed spellings of the same 128-bit value as equal, because BLE stacks print both.
 */
const UUID_128 = /^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32})$/;

export function isUuid(text: string): boolean {
  return UUID_128.test(text);
}

/** Canonical comparison key: 32 lower-case hex digits. */
export function uuidKey(uuid: string): string {
  return uuid.replaceAll('-', '').toLowerCase();
}

export function uuidEquals(a: string, b: string): boolean {
  return uuidKey(a) === uuidKey(b);
}
