// A small seeded generator (mulberry32): the same seed gives every strategy
// the same workload, so they are compared on equal terms.

export type Random = () => number;

/** Mixes any number of integers into one 32-bit seed. */
export function seedOf(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x01000193);
    h ^= h >>> 15;
  }
  return h >>> 0;
}

export function random(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Uniform in [min, max). */
export function between(rnd: Random, min: number, max: number): number {
  return min + rnd() * (max - min);
}
