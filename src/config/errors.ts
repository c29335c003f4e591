/** A usage or configuration error: drainguard exits 2 before anything is started. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Builds the message every configuration error follows: what, where, expected, given. */
export function invalid(source: string, expected: string, given: string): ConfigError {
  return new ConfigError(`${source}: expected ${expected}, got ${JSON.stringify(given)}`);
}
