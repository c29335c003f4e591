// The retry backoff's rule, as src/kube/retry.ts `backoff` states it, checked on
// the waits a test saw: "equal jitter", each wait between half its ceiling and
// the ceiling, the ceiling doubling from the base up to the cap.

import * as assert from 'uvu/assert';

/** The waits between successive moments. */
export function gaps(moments: readonly number[]): number[] {
  return moments.slice(1).map((t, i) => t - moments[i]!);
}

/** Wait n (from 1) is within half of min(`maxMs`, `baseMs` × 2^(n-1)) and all of it. */
export function assertEqualJitter(waits: readonly number[], baseMs: number, maxMs: number, what: string): void {
  waits.forEach((wait, i) => {
    const ceiling = Math.min(maxMs, baseMs * 2 ** i);
    assert.ok(wait >= ceiling / 2 && wait <= ceiling, `${what}: wait ${i + 1} was ${wait} ms, not within ${ceiling / 2}..${ceiling}`);
  });
}
