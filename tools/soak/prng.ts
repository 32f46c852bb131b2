/**
 * The soak's seeded generator. Every run draws from its own stream, derived from the seed and the run's
 * number alone, so run K of seed S plans the same flow and fault whatever happened in runs 1…K−1: a
 * failure at run 3,217 is replayed with `--seed S --from 3217` without replaying the 3,216 before it.
 *
 * The generator is SplitMix32-style: a 32-bit state advanced by the golden-ratio increment 0x9E3779B9
 * and mixed with two xor-shift-multiply rounds (the finaliser constants of MurmurHash3's fmix32). It is
 * not cryptographic; it only has to be fast, deterministic and well spread.
 */

const GOLDEN = 0x9e3779b9;

/** MurmurHash3's 32-bit finaliser: every input bit affects every output bit. */
function mix32(value: number): number {
  let z = value >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** The stream of run `index` of `seed` (independent of every other run's). */
  static forRun(seed: number, index: number): Prng {
    return new Prng(mix32(mix32(seed >>> 0) ^ Math.imul(index >>> 0, GOLDEN)));
  }

  /** The next 32-bit value. */
  nextUint32(): number {
    this.state = (this.state + GOLDEN) >>> 0;
    return mix32(this.state);
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 0x1_0000_0000;
  }

  /** Uniform integer in [min, max] (both included). */
  int(min: number, max: number): number {
    if (!Number.isInteger(min) || !Number.isInteger(max) || max < min)
      throw new RangeError(`int(${min}, ${max}): need integers with min ≤ max`);
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element, uniformly. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick() from an empty list');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** One key, with probability proportional to its weight (weights ≥ 0, not all 0). */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    if (!(total > 0)) throw new RangeError('weighted() needs a positive total weight');
    let left = this.next() * total;
    for (const [key, weight] of entries) {
      left -= weight;
      if (left < 0) return key;
    }
    return (entries.at(-1) as [K, number])[0];
  }
}

/** A fresh seed when none is given (printed, so the run can be reproduced). */
export function randomSeed(): number {
  return (Date.now() ^ Math.floor(Math.random() * 0x1_0000_0000)) >>> 0;
}
