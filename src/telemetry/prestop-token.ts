// The token that guards the httpGet preStop route. The kubelet calls the pod
// IP, which anyone in the cluster can reach: only a request that carries the
// token may start a drain.

import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/errors.ts';

/** The request header that carries the token. */
export const TOKEN_HEADER = 'X-Drainguard-Token';

/** Short tokens can be guessed; 16 characters of a random string are enough. */
export const MIN_TOKEN_LENGTH = 16;

/**
 * Returns a check of a presented token against `expected` in constant time:
 * both are hashed first, so neither the content nor the length leaks through timing.
 */
export function tokenCheck(expected: string): (presented: string) => boolean {
  // Loaded here, not at the top: node:crypto adds several ms to every command's start, and only this route needs it.
  const { createHash, timingSafeEqual } = process.getBuiltinModule('node:crypto');
  const want = createHash('sha256').update(expected).digest();
  return (presented) => timingSafeEqual(createHash('sha256').update(presented).digest(), want);
}

/** The token from DRAINGUARD_PRESTOP_TOKEN or the file DRAINGUARD_PRESTOP_TOKEN_FILE names; undefined when neither is set. */
export function resolvePrestopToken(
  values: { prestopToken?: string; prestopTokenFile?: string },
  sources: { prestopToken?: string; prestopTokenFile?: string },
): string | undefined {
  const tokenSource = sources.prestopToken ?? 'DRAINGUARD_PRESTOP_TOKEN';
  const fileSource = sources.prestopTokenFile ?? 'DRAINGUARD_PRESTOP_TOKEN_FILE';
  if (values.prestopToken !== undefined && values.prestopTokenFile !== undefined) {
    throw new ConfigError(`${tokenSource} and ${fileSource} are both set; give the preStop token one way only`);
  }
  let token = values.prestopToken;
  let source = tokenSource;
  if (values.prestopTokenFile !== undefined) {
    source = `${fileSource} (${values.prestopTokenFile})`;
    try {
      // A Secret mounted as a file usually ends with a newline that is not part of the token.
      token = readFileSync(values.prestopTokenFile, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(`${fileSource}: cannot read the token file ${values.prestopTokenFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  if (token === undefined) return undefined;
  if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
    throw new ConfigError(`${source}: expected a token of at least ${MIN_TOKEN_LENGTH} characters without spaces (a random string), got one of ${token.length} characters`);
  }
  return token;
}
