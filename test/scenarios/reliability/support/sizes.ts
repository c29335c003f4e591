// Sizes of the fuzz and soak runs: small enough by default for CI on two cores,
// larger on demand (see docs/reliability.md), and a seed that reproduces a run.

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name}: expected a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

export const sizes = {
  /** Frames thrown at the drain socket by the fuzz test. */
  fuzzFrames: positive('FUZZ_FRAMES', 100_000),
  /** Connections opened at once by the fuzz test: idle, slow and half-sent. */
  idleConnections: positive('FUZZ_IDLE_CONNECTIONS', 2_000),
  /** start/drain/stop cycles of the built executable. */
  soakCycles: positive('SOAK_CYCLES', 60),
  /** Client connections and drains against one long-lived DrainServer. */
  soakServerCycles: positive('SOAK_SERVER_CYCLES', 3_000),
  /** Seed of the pseudo-random generator; printed so that a failure can be replayed. */
  seed: positive('FUZZ_SEED', Date.now() % 2 ** 31),
};
