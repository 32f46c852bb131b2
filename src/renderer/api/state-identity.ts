/**
 * Keeps the outcome object of consecutive states identical while its content is unchanged. The host pushes
 * a new state for every unrelated change (session freshness every few seconds, a device's availability, a
 * camera report), and each arrives as new objects; the outcome screen memoises on the outcome's identity,
 * so without this it would present the outcome again, blank and decode the portrait again and re-announce
 * the verdict during the whole result.
 */
import type { ScreenState } from '../../common/kiosk-api.js';

/**
 * Deep equality of two JSON values (what a validated state is made of: plain objects, arrays, strings,
 * numbers, booleans, null). Iterative: an outcome's nesting comes from a peer and has no depth bound, so
 * recursion could overflow the stack.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  const pending: [unknown, unknown][] = [[a, b]];
  for (let pair = pending.pop(); pair !== undefined; pair = pending.pop()) {
    const [x, y] = pair;
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    const xArray = Array.isArray(x);
    if (xArray !== Array.isArray(y)) return false;
    if (xArray) {
      const xs = x as unknown[];
      const ys = y as unknown[];
      if (xs.length !== ys.length) return false;
      for (let i = 0; i < xs.length; i++) pending.push([xs[i], ys[i]]);
      continue;
    }
    const xo = x as Record<string, unknown>;
    const yo = y as Record<string, unknown>;
    const keys = Object.keys(xo);
    if (keys.length !== Object.keys(yo).length) return false;
    for (const key of keys) {
      if (!Object.hasOwn(yo, key)) return false;
      pending.push([xo[key], yo[key]]);
    }
  }
  return true;
}

/** `next`, with `previous`'s outcome object when both outcomes hold the same content. */
export function keepOutcomeIdentity(previous: ScreenState | null, next: ScreenState): ScreenState {
  const before = previous?.view.outcome;
  const after = next.view.outcome;
  if (before == null || after === null || before === after || !sameJson(before, after)) return next;
  return { ...next, view: { ...next.view, outcome: before } };
}
