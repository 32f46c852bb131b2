/**
 * Bounds on backend JSON the spec does not shape (json-bounds.ts): an iterative check, so a hostile
 * object cannot overflow the stack while it is being checked, and the `complete` / result schemas refuse
 * what is too deep or too large before anything renders or prints it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonBoundsProblem, RESPONSE_BOUNDS } from '../../src/common/protocol/json-bounds.js';
import { Outcome, SessionResult } from '../../src/common/protocol/messages.js';

function nested(levels: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

const OUTCOME = {
  response: {
    'org.iso.18013.5.1.mDL': { age_over_21: true, driving_privileges: [{ vehicle_category_code: 'B', issue_date: '2020-01-01' }] },
  },
  doc_types: ['org.iso.18013.5.1.mDL'],
  issuer_authentication: 'Valid',
  device_authentication: 'Valid',
  errors: {},
  warnings: {},
};

describe('jsonBoundsProblem', () => {
  it('accepts a realistic DeviceResponse view', () => {
    expect(jsonBoundsProblem(OUTCOME.response)).toBeUndefined();
  });

  it('counts levels exactly: 32 nested containers pass, 33 do not', () => {
    expect(jsonBoundsProblem(nested(32))).toBeUndefined();
    expect(jsonBoundsProblem(nested(33))).toBe('nested deeper than 32 levels');
  });

  it('checks 100,000 levels without overflowing the stack (JSON.stringify of it throws)', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(jsonBoundsProblem(deep)).toBe('nested deeper than 32 levels');
  });

  it('refuses more values than the bound, in one array or spread out', () => {
    expect(jsonBoundsProblem(new Array<number>(RESPONSE_BOUNDS.maxNodes).fill(0))).toBe(`more than ${RESPONSE_BOUNDS.maxNodes} values`);
    const wide = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`k${i}`, new Array<number>(300).fill(1)]));
    expect(jsonBoundsProblem(wide)).toBe(`more than ${RESPONSE_BOUNDS.maxNodes} values`);
    expect(jsonBoundsProblem(new Array<number>(RESPONSE_BOUNDS.maxNodes - 2).fill(0))).toBeUndefined();
  });

  it('refuses an absurd key, and its message never quotes the key', () => {
    const key = 'K'.repeat(300);
    const problem = jsonBoundsProblem({ [key]: 1 });
    expect(problem).toBe('a key longer than 256 characters');
    expect(problem).not.toContain('KKKK');
  });

  it('agrees with a recursive reference on any JSON value (property)', () => {
    const depthOf = (v: unknown): number =>
      typeof v !== 'object' || v === null ? 0 : 1 + Math.max(0, ...(Array.isArray(v) ? v : Object.values(v)).map(depthOf));
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 40 }), (value) => {
        const small = { ...RESPONSE_BOUNDS, maxDepth: 6 };
        const problem = jsonBoundsProblem(value, small);
        expect(problem === 'nested deeper than 6 levels').toBe(depthOf(value) > 6);
      }),
    );
  });
});

describe('the outcome schemas apply the bounds', () => {
  it('a complete outcome nested too deep, too large or with an absurd key is refused', () => {
    expect(Outcome.safeParse(OUTCOME).success).toBe(true);
    expect(Outcome.safeParse({ ...OUTCOME, response: { d: { x: nested(40) } } }).success).toBe(false);
    expect(Outcome.safeParse({ ...OUTCOME, errors: { e: new Array<number>(200_000).fill(0) } }).success).toBe(false);
    expect(Outcome.safeParse({ ...OUTCOME, warnings: { ['w'.repeat(1_000)]: 1 } }).success).toBe(false);
  });

  it('a fetched result is bounded the same way', () => {
    expect(SessionResult.safeParse({ status: 'success', response: OUTCOME.response, errors: {} }).success).toBe(true);
    expect(SessionResult.safeParse({ status: 'success', response: { d: { x: nested(40) } }, errors: {} }).success).toBe(false);
  });
});
