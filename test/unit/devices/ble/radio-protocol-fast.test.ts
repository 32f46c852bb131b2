/**
 * The hand-checked `notification` from the radio process (protocol.ts, `parseChildMessage`) against the
 * schema: on any input the fast parse gives exactly the schema's verdict, with the same fields, and names
 * the same problem when it refuses. Inputs are built near the valid shape (a valid one with one field or an
 * extra key replaced; every field valid, missing, or of a wrong kind or range), so the edges are where the
 * generator spends its time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChildMessage, MAX_DATA_BYTES, parseChildMessage } from '../../../../src/devices/ble/radio-process/protocol.js';

const anyValue = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom(0, -0, 0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, Number.MAX_SAFE_INTEGER, -1),
  fc.string({ maxLength: 4 }),
  fc.constantFrom('', 'x'.repeat(64), 'x'.repeat(65), '00000003-a123-48ce-896b-4c76973373e6'),
  fc.constantFrom(undefined, null, true, [], {}, 'notification', 'disconnect'),
  fc.uint8Array({ maxLength: 8 }),
  fc.constantFrom(
    new Uint8Array(MAX_DATA_BYTES),
    new Uint8Array(MAX_DATA_BYTES + 1),
    Buffer.from([1, 2]),
    new Uint16Array(2),
    new DataView(new ArrayBuffer(2)),
  ),
);
/** A record with each field present (valid-looking or any value) or absent. */
const near = fc.record(
  {
    t: fc.oneof(fc.constant('notification'), anyValue),
    link: fc.oneof(fc.nat({ max: 1_000 }), anyValue),
    uuid: fc.oneof(fc.string({ minLength: 1, maxLength: 64 }), anyValue),
    data: fc.oneof(fc.uint8Array({ maxLength: 16 }), anyValue),
    reason: anyValue,
  },
  { requiredKeys: [] },
);

/** A valid notification with one field (or an extra key) replaced by any value: the edges one at a time. */
const oneOff = fc
  .tuple(
    fc.constantFrom('t', 'link', 'uuid', 'data', 'extra'),
    anyValue,
    fc.record({
      t: fc.constant('notification'),
      link: fc.nat({ max: 1_000 }),
      uuid: fc.string({ minLength: 1, maxLength: 64 }),
      data: fc.uint8Array({ maxLength: 16 }),
    }),
  )
  .map(([key, value, valid]) => ({ ...valid, [key]: value }));

describe('notifications from the radio process checked by hand', () => {
  it('the same verdict, fields and issues as ChildMessage', () => {
    fc.assert(
      fc.property(fc.oneof(oneOff, near, anyValue), (raw) => {
        const fast = parseChildMessage(raw);
        const schema = ChildMessage.safeParse(raw);
        expect(fast.success).toBe(schema.success);
        if (fast.success && schema.success) expect(fast.data).toStrictEqual(schema.data);
        if (!fast.success && !schema.success) expect(fast.error.issues).toEqual(schema.error.issues);
      }),
      { numRuns: 5_000 },
    );
  });

  it('takes the hand-checked path for a notification (the generator reaches it) and keeps the bytes as they came', () => {
    const data = Buffer.from([1, 2, 3]);
    const parsed = parseChildMessage({ t: 'notification', link: 3, uuid: 'abcd', data });
    expect(parsed).toStrictEqual({ success: true, data: { t: 'notification', link: 3, uuid: 'abcd', data } });
    expect(parsed.success && parsed.data.t === 'notification' && parsed.data.data).toBe(data);
  });

  it('leaves a notification with an extra key, even undefined, to the schema, which refuses it', () => {
    const raw = { t: 'notification', link: 3, uuid: 'abcd', data: new Uint8Array(1), extra: undefined };
    expect(parseChildMessage(raw).success).toBe(ChildMessage.safeParse(raw).success);
  });
});
