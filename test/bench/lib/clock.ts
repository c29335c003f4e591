// One clock for every process of a benchmark run: process.hrtime reads
// CLOCK_MONOTONIC, which on Linux is the same clock in every process, so a
// timestamp taken in drainguard's child can be subtracted from one taken in
// the benchmark itself. Date.now() would do too but only to the millisecond,
// and it jumps when the wall clock is adjusted.

/** Milliseconds on the shared monotonic clock, to the microsecond. */
export function nowMs(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
