// The token of the httpGet preStop route (telemetry/prestop-route.ts), given
// as a value or as a file (a mounted Secret).

import { readFileSync } from 'node:fs';
import { ConfigError } from '../errors.ts';

/** Short tokens can be guessed; 16 characters of a random string are enough. */
export const MIN_TOKEN_LENGTH = 16;

/** The token from DRAINGUARD_PRESTOP_TOKEN or the file DRAINGUARD_PRESTOP_TOKEN_FILE names; undefined when neither is set. */
export function resolvePrestopToken(
  values: { prestopToken?: string; prestopTokenFile?: string },
  sources: { prestopToken?: string; prestopTokenFile?: string },
): string | undefined {
  const tokenSource = sources.prestopToken ?? 'DRAINGUARD_PRESTOP_TOKEN';
  const fileSource = sources.prestopTokenFile ?? 'DRAINGUARD_PRESTOP_TOKEN_FILE';
  if (values.prestopToken !== undefined && values.prestopTokenFile !== undefined) {
    throw new ConfigError('DG_CONFIG_PRESTOP_TOKEN', `${tokenSource} and ${fileSource} are both set; give the preStop token one way only`);
  }
  let token = values.prestopToken;
  let source = tokenSource;
  if (values.prestopTokenFile !== undefined) {
    source = `${fileSource} (${values.prestopTokenFile})`;
    try {
      // A Secret mounted as a file usually ends with a newline that is not part of the token.
      token = readFileSync(values.prestopTokenFile, 'utf8').trim();
    } catch (err) {
      throw new ConfigError('DG_CONFIG_PRESTOP_TOKEN', `${fileSource}: cannot read the token file ${values.prestopTokenFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  if (token === undefined) return undefined;
  if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
    throw new ConfigError('DG_CONFIG_PRESTOP_TOKEN', `${source}: expected a token of at least ${MIN_TOKEN_LENGTH} characters without spaces (a random string), got one of ${token.length} characters`);
  }
  return token;
}
