// The one clock of drainguard: moments are read from it and waits timed by it
// (docs/architecture.md, "Who reads the clock", names the few that are not).
// The composition roots hand systemClock down; tests hand in one they move
// themselves (test/support/fake-clock.ts), so that a rule about seconds is
// checked in microseconds. It imports nothing: any area may take it.

export interface Clock {
  /** Epoch ms. */
  now(): number;
  /** Calls `fn` once `ms` have passed (as setTimeout does, the wait keeps the process alive); returns the cancel. */
  after(ms: number, fn: () => void): () => void;
  /** Resolves once `ms` have passed, or at once when `signal` aborts (never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: Date.now,
  after(ms, fn) {
    const timer = setTimeout(fn, Math.max(0, ms));
    return () => clearTimeout(timer);
  },
  sleep: (ms, signal) => sleepOn(systemClock, ms, signal),
};

/** `clock.sleep` from `clock.after`: what a clock needs to implement sleep by its own timers. */
export function sleepOn(clock: Pick<Clock, 'after'>, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      cancel();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const cancel = clock.after(ms, done);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Waits for `work`, at most `ms` on `clock`. */
export async function within(clock: Clock, work: Promise<unknown>, ms: number): Promise<void> {
  let cancel = (): void => {};
  await Promise.race([work, new Promise<void>((resolve) => (cancel = clock.after(ms, resolve)))]);
  cancel();
}

/**
 * A signal that aborts once `ms` have passed on `clock` (keeping the process alive until then, as `after` does);
 * `cancel` drops its timer.
 */
export function abortAfter(clock: Pick<Clock, 'after'>, ms: number): { signal: AbortSignal; cancel: () => void } {
  const abort = new AbortController();
  return { signal: abort.signal, cancel: clock.after(ms, () => abort.abort()) };
}
