// The statistics of every figure the tests and the benchmarks print, in one
// place so that a p99 means the same thing wherever it is read.
//
// Percentiles by nearest rank, no interpolation: the p-th percentile of n
// samples is the ceil(p/100 * n)-th smallest (at least the first), so every
// figure is a value that was actually measured; p100 is the maximum. The
// median is the 50th percentile: for an even n, the lower of the two middle
// samples.

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export const median = (values: readonly number[]): number => percentile(values, 50);

/** Rounds for a report: three decimals below 10, one below 1000, none above. */
export function round(value: number): number {
  if (!Number.isFinite(value)) return value;
  const digits = Math.abs(value) < 10 ? 3 : Math.abs(value) < 1000 ? 1 : 0;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export const MiB = 1024 * 1024;
