import { ConfigError, type UsageErrorCode } from '../errors.ts';

/** Builds the message every configuration error follows: what, where, expected, given. */
export function invalid(code: UsageErrorCode, source: string, expected: string, given: string): ConfigError {
  return new ConfigError(code, `${source}: expected ${expected}, got ${JSON.stringify(given)}`);
}
