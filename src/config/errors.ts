import { DrainguardError, type UsageErrorCode } from '../errors.ts';

/** A usage or configuration error: drainguard exits 2 before anything is started. */
export class ConfigError extends DrainguardError {
  override name = 'ConfigError';
  declare readonly code: UsageErrorCode;
  constructor(code: UsageErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
  }
}

/** Builds the message every configuration error follows: what, where, expected, given. */
export function invalid(code: UsageErrorCode, source: string, expected: string, given: string): ConfigError {
  return new ConfigError(code, `${source}: expected ${expected}, got ${JSON.stringify(given)}`);
}
