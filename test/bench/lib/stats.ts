// Percentiles by nearest rank: p99 of 200 samples is the 198th smallest,
// a value that was actually measured.

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export const median = (values: readonly number[]): number => percentile(values, 50);

export function max(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : Math.max(...values);
}

/** Rounds for the report: three decimals below 10, one below 1000, none above. */
export function round(value: number): number {
  if (!Number.isFinite(value)) return value;
  const digits = Math.abs(value) < 10 ? 3 : Math.abs(value) < 1000 ? 1 : 0;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export const MiB = 1024 * 1024;
