/**
 * UUIDs of the BLE service and characteristics: "Comparisons are case-insensitive" (spec §2.5, §4.3, §4.4).
 * The kiosk also equates the dashed and undashed spellings of the same 128-bit value.
 */
import { describe, expect, it } from 'vitest';
import { isUuid, uuidEquals, uuidKey } from '../../src/common/protocol/uuid.js';

const STATE = '00000001-a123-48ce-896b-4c76973373e6';
const STATE_UPPER = STATE.toUpperCase();
const STATE_UNDASHED = STATE.replaceAll('-', '');
const STATE_UNDASHED_UPPER = STATE_UNDASHED.toUpperCase();
const C2S = '00000002-a123-48ce-896b-4c76973373e6';

describe('isUuid', () => {
  it.each([STATE, STATE_UPPER, STATE_UNDASHED, STATE_UNDASHED_UPPER, '00000001-A123-48ce-896B-4c76973373E6'])(
    'accepts the 128-bit spelling %s',
    (text) => {
      expect(isUuid(text)).toBe(true);
    },
  );

  it.each([
    ['', 'empty'],
    ['2a00', '16-bit short form'],
    ['0000000-1a123-48ce-896b-4c76973373e6', 'dash in the wrong place'],
    ['00000001-a123-48ce-896b-4c76973373e', 'one digit short'],
    ['00000001-a123-48ce-896b-4c76973373e6a', 'one digit too many'],
    ['0000000g-a123-48ce-896b-4c76973373e6', 'non-hex digit'],
    [`{${STATE}}`, 'braces'],
    [` ${STATE}`, 'leading space'],
    [`${STATE}\n`, 'trailing newline'],
    ['00000001a123-48ce-896b-4c76973373e6', 'partly dashed'],
  ])('rejects %j (%s)', (text) => {
    expect(isUuid(text)).toBe(false);
  });
});

describe('uuidEquals (case-insensitive, dashed or undashed)', () => {
  it.each([
    [STATE, STATE],
    [STATE, STATE_UPPER],
    [STATE_UPPER, STATE],
    [STATE, STATE_UNDASHED],
    [STATE_UNDASHED_UPPER, STATE],
    [STATE_UPPER, STATE_UNDASHED],
    ['00000001-A123-48ce-896B-4c76973373E6', STATE_UNDASHED_UPPER],
  ])('%s equals %s', (a, b) => {
    expect(uuidEquals(a, b)).toBe(true);
    expect(uuidEquals(b, a)).toBe(true);
  });

  it.each([
    [STATE, C2S],
    [STATE_UPPER, C2S.toUpperCase()],
    [STATE_UNDASHED, C2S.replaceAll('-', '')],
  ])('%s differs from %s', (a, b) => {
    expect(uuidEquals(a, b)).toBe(false);
  });

  it('uuidKey is 32 lower-case hex digits for every spelling', () => {
    for (const spelling of [STATE, STATE_UPPER, STATE_UNDASHED, STATE_UNDASHED_UPPER]) {
      expect(uuidKey(spelling)).toBe('00000001a12348ce896b4c76973373e6');
    }
  });
});
