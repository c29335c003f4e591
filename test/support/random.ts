// A small seeded generator (mulberry32) for tests and benchmarks: the same
// seed gives the same run, so a failure can be replayed and every strategy of
// a benchmark gets the same workload.

/** Mixes any number of integers into one 32-bit seed. */
export function seedOf(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x01000193);
    h ^= h >>> 15;
  }
  return h >>> 0;
}

export function prng(seed: number) {
  let state = seed >>> 0;
  /** Uniform in [0, 1). */
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return {
    next,
    /** An integer in [0, n). */
    int,
    /** Uniform in [min, max). */
    between: (min: number, max: number): number => min + next() * (max - min),
    pick: <T>(items: readonly T[]): T => items[int(items.length)]!,
    bytes: (n: number): Buffer => {
      const b = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i++) b[i] = int(256);
      return b;
    },
  };
}

export type Prng = ReturnType<typeof prng>;
