// Exponential backoff with jitter, bounded by attempts and a deadline. The
// waits are the caller's clock's (KubeClient's `clock`), so tests can check the
// schedule without waiting.

import { type Clock, systemClock } from '../clock.ts';

export interface RetryPolicy {
  /** First delay (ms); each next one doubles, up to maxDelayMs. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Attempts in all, the first one included. */
  readonly maxAttempts: number;
}

export const DEFAULT_RETRY: RetryPolicy = { baseDelayMs: 200, maxDelayMs: 5_000, maxAttempts: 5 };

/** The background loops' policy (the guard's renewals, the hold's search and watch): never give up, at most 10 s apart. */
export const KEEP_TRYING: RetryPolicy = { baseDelayMs: 500, maxDelayMs: 10_000, maxAttempts: Infinity };

/** The wall clock's sleep, for the callers that take no clock (the operator container's polls, a command's wait). */
export const sleep: Clock['sleep'] = (ms, signal) => systemClock.sleep(ms, signal);

/** The wait before attempt `attempt + 1` (attempt counts from 1): "equal jitter", half fixed and half random. */
export function backoff(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
