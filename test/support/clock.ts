// One clock for every process of a test or benchmark: process.hrtime reads
// CLOCK_MONOTONIC, which on Linux is the same clock in every process, so a
// timestamp a fixture prints can be subtracted from one taken by the process
// that started it (Proc.exitedAt among them). Date.now() would do too but
// only to the millisecond, and it jumps when the wall clock is adjusted.

/** Milliseconds on the shared monotonic clock, to the microsecond. */
export function nowMs(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}
