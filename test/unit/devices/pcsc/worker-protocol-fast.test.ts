/**
 * The hand-checked `transmit` and `reply` (pcsc-worker-protocol.ts, `parseToWorker`/`parseFromWorker`)
 * against their schemas: on any input the fast parse accepts exactly what the schema accepts, with the same
 * fields, and names the same problem when it refuses. Inputs are built near the valid shapes (every field
 * valid, missing, or of a wrong kind or range), so the edges are where the generator spends its time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FromWorker, MAX_PCSC_BYTES, ToWorker, parseFromWorker, parseToWorker } from '../../../../src/devices/pcsc/pcsc-worker-protocol.js';

const anyValue = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom(0, 1, MAX_PCSC_BYTES, MAX_PCSC_BYTES + 1, -0, 0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53),
  fc.string({ maxLength: 4 }),
  fc.constantFrom(undefined, null, true, [], {}, 'transmit', 'reply'),
  fc.uint8Array({ maxLength: 8 }),
  fc.constantFrom(new Uint8Array(MAX_PCSC_BYTES), new Uint8Array(MAX_PCSC_BYTES + 1), Buffer.from([1, 2]), new Uint16Array(2)),
);
const id = fc.oneof(fc.nat({ max: 1_000 }), anyValue);
const bytes = fc.oneof(fc.uint8Array({ maxLength: 16 }), anyValue);
/** A record with each field present (valid-looking or any value) or absent. */
const near = (fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> =>
  fc.record(fields, { requiredKeys: [] });

const toWorker = fc.oneof(
  near({
    op: fc.oneof(fc.constant('transmit'), anyValue),
    reader: id,
    call: id,
    data: bytes,
    responseLength: fc.oneof(fc.nat({ max: MAX_PCSC_BYTES + 2 }), anyValue),
    protocol: fc.oneof(fc.integer(), anyValue),
    extra: anyValue,
  }),
  anyValue,
);
const wireError = fc.oneof(
  fc.record({ kind: fc.constantFrom('unavailable', 'binding', 'other', 'x'), message: fc.string({ maxLength: 8 }) }),
  anyValue,
);
const fromWorker = fc.oneof(
  near({
    ev: fc.oneof(fc.constant('reply'), anyValue),
    call: id,
    response: bytes,
    protocol: fc.oneof(fc.integer(), anyValue),
    error: wireError,
    extra: anyValue,
  }),
  anyValue,
);

describe('PC/SC worker messages checked by hand', () => {
  it('transmit: the same verdict and fields as ToWorker', () => {
    fc.assert(
      fc.property(toWorker, (raw) => {
        const fast = parseToWorker(raw);
        const schema = ToWorker.safeParse(raw);
        expect(fast.success).toBe(schema.success);
        if (fast.success && schema.success) expect(fast.data).toStrictEqual(schema.data);
        if (!fast.success && !schema.success) expect(fast.error.issues).toEqual(schema.error.issues);
      }),
      { numRuns: 5_000 },
    );
  });

  it('reply: the same verdict and fields as FromWorker', () => {
    fc.assert(
      fc.property(fromWorker, (raw) => {
        const fast = parseFromWorker(raw);
        const schema = FromWorker.safeParse(raw);
        expect(fast.success).toBe(schema.success);
        if (fast.success && schema.success) expect(fast.data).toStrictEqual(schema.data);
        if (!fast.success && !schema.success) expect(fast.error.issues).toEqual(schema.error.issues);
      }),
      { numRuns: 5_000 },
    );
  });

  it('takes the hand-checked path for the per-APDU shapes (the generator reaches it)', () => {
    const data = Uint8Array.of(0, 0xa4, 4, 0);
    expect(parseToWorker({ op: 'transmit', reader: 1, call: 2, data, responseLength: 258, protocol: 2 })).toStrictEqual({
      success: true,
      data: { op: 'transmit', reader: 1, call: 2, data, responseLength: 258, protocol: 2 },
    });
    expect(parseFromWorker({ ev: 'reply', call: 2, response: data })).toStrictEqual({
      success: true,
      data: { ev: 'reply', call: 2, response: data },
    });
  });
});
