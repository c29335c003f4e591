// The time of the stop: what the drain, the stop and the release read the
// moment from, and what they wait with. Tests hand in a clock they move
// themselves (test/support/fake-clock.ts).

export interface Clock {
  /** Epoch ms. */
  now(): number;
  /** Calls `fn` once `ms` have passed (as setTimeout does, the wait keeps the process alive); returns the cancel. */
  after(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: Date.now,
  after(ms, fn) {
    const timer = setTimeout(fn, Math.max(0, ms));
    return () => clearTimeout(timer);
  },
};
